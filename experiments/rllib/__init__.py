"""RLlib PPO on Ray (``python -m experiments.train_rllib``), one module per piece.

* ``args``: the command line (the tyro dataclass :class:`~experiments.rllib.args.Args`) and its
  checks;
* ``config``: the algorithm's ``PPOConfig`` for each ``--mode`` (the games' config reaching
  every env path) and the algorithm;
* ``metrics``: the run's metrics.json records and its summary;
* ``run``: the run, phase by phase: set-up, the Ray session, the algorithm, the learning loop
  with its checkpoints, the final evaluation and the run folder.

Importing the package imports neither Ray nor torch; the phases import them when they run.
"""

from experiments.rllib.args import Args
from experiments.rllib.run import train

__all__ = ["Args", "train"]
