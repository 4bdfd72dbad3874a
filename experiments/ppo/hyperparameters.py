"""MaskablePPO's hyperparameters at the project's defaults, for every trainer that saves a model.

A model file of the package's format (``agents.ppo_model``) holds its PPO hyperparameters, the
ones ``python -m experiments.train_ppo --resume`` goes on with. ``experiments.train_ppo`` trains
with :data:`PPO_DEFAULTS` unless its flags say otherwise (its ``Args`` take their defaults from
here), and ``experiments.expert`` saves its networks with them, so a network of expert iteration
trains on under PPO as a model of ``train_ppo`` would.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["PPOHyperparameters", "PPO_DEFAULTS"]


@dataclass(frozen=True)
class PPOHyperparameters:
    """MaskablePPO's keyword arguments that a model keeps (each as ``MaskablePPO`` reads it)."""

    learning_rate: float = 3e-4
    n_steps: int = 32
    batch_size: int = 1024
    n_epochs: int = 4
    gamma: float = 0.999
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.01

    def kwargs(self) -> dict:
        """The hyperparameters as MaskablePPO's keyword arguments."""
        return asdict(self)


#: The project's defaults.
PPO_DEFAULTS = PPOHyperparameters()
