"""MaskablePPO on Spit: the library of ``experiments.train_ppo``, and PPO's defaults.

``args`` (the script's arguments, also read by ``experiments.sb3_ceiling``), ``checks`` (their
checks), ``run`` (the run, phase by phase), ``hyperparameters`` (MaskablePPO's defaults, which
expert iteration's networks are saved with too), ``envs`` (the training VecEnv stack),
``schedule`` (curriculum, self-play pool, evaluations during training), ``evaluation``
(evaluation, learning curve, table), ``warm_start`` (the actor's and the critic's warm start),
``pull`` (the KL pull toward a fixed policy in PPO's loss) and ``progress`` (progress lines).
"""
