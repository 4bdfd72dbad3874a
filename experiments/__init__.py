"""Runnable experiments of spit-env (each with ``--help`` and ``--json PATH``):

    python -m experiments.train_ppo     train MaskablePPO against bots
    python -m experiments.train_rllib   train RLlib PPO on Ray (the [scale] extra), local or a cluster
    python -m experiments.tournament    bot / model tournaments (--ray: as Ray tasks)
    python -m experiments.benchmark     throughput of the batched core, the reference and the envs
    python -m experiments.game_stats    how long games last and how they end (bots vs themselves)
    python -m experiments.replay        one game as a JSON record (--json) and an HTML page (--out)
    python -m experiments.play          you against a bot in the terminal (the [play] extra; no
                                        --json: the replay is saved at the end)

The PPO script's pieces are modules beside it: ``ppo_envs`` (the training VecEnv stack),
``ppo_schedule`` (curriculum, self-play pool, evaluations during training), ``ppo_eval``
(evaluation and reports) and ``ppo_warm_start`` (behaviour cloning).
"""
