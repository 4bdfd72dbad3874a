"""Runnable experiments of spit-env, each with ``--help``.

::

    python -m experiments.train_ppo       train MaskablePPO against bots
    python -m experiments.expert_iteration  expert iteration: the planner labels the network's
                                          own games, the network learns them, round by round
    python -m experiments.train_rllib     train RLlib PPO on Ray (the [scale] extra), local or a
                                          cluster
    python -m experiments.train_value     a value network for the planner's rollout leaves
                                          (--ray: its data as Ray tasks)
    python -m experiments.tournament      bot / model tournaments (--ray: as Ray tasks)
    python -m experiments.planner_study   the planner's strength by budget
    python -m experiments.search_curve    search players' win rates against their CPU per
                                          decision
    python -m experiments.screen          score players on the truth set in seconds (--build:
                                          a truth set, --ray: as Ray tasks; --calibrate)
    python -m experiments.benchmark       throughput of the batched core, the reference and the envs
    python -m experiments.game_stats      how long games last and how they end (bots vs
                                          themselves)
    python -m experiments.replay          one game as a JSON record (--json) and an HTML page
                                          (--out)
    python -m experiments.play            you against a bot in the terminal (the [play] extra) or
                                          in the browser (--web, the [web] extra)
    python -m experiments.sb3_ceiling     SB3's own speed on an environment that costs nothing
    python -m experiments.ship_model      write a trained model into the package
    python -m experiments.shipped_results the shipped model against every bot
    python -m experiments.run_notebook    run notebooks, showing the cells' progress

No script imports another. The trainers (``train_ppo``, ``expert_iteration``, ``train_rllib``,
``train_value``)
parse a dataclass of arguments with tyro (``experiments.cli.tyro_cli``); the tools parse with
argparse (``experiments.cli.ArgumentParser``), but for ``ship_model`` and ``shipped_results``,
whose few flags are a dataclass on tyro too.
The scripts' library pieces live in sub-folders: ``cli/`` (the command lines' help, the one
``ArgumentError`` and the flag checks the trainers share), ``ppo/`` (train_ppo's arguments and
their checks, its run phase by phase, PPO's default hyperparameters, environments, schedule,
evaluation, warm start and progress), ``expert/`` (expert iteration's arguments, positions,
teachers, targets, network and rounds), ``value/`` (the value network's arguments, data, fit
and run), ``rllib/`` (RLlib PPO's arguments, algorithm config,
metrics and run), ``realtime/`` (the real-time game's engine, its keys, the terminal's and the
browser's apps) and ``cluster/`` (Ray connection and tasks); the games between policies are the
match library's (``agents.arena``).
"""
