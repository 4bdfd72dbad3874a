"""The pieces of ``experiments.train_ppo``.

``args`` (the script's arguments, also read by ``experiments.sb3_ceiling``), ``envs`` (the
training VecEnv stack), ``schedule`` (curriculum, self-play pool, evaluations during training),
``evaluation`` (evaluation, learning curve, table), ``warm_start`` (the actor's and the critic's
warm start), ``pull`` (the KL pull toward a fixed policy in PPO's loss) and ``progress``
(progress lines).
"""
