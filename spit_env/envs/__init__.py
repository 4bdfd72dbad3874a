"""The environments: views of the batched core for PettingZoo, Gymnasium and stable-baselines3.

``duel`` is the learner-versus-opponent engine that the single-agent views share, and ``view``
their shared plumbing over it; the views are siblings over it (and over the core): ``parallel``
(PettingZoo ParallelEnv and AEC env), ``gym`` (Gymnasium ``Spit-v0``), ``vector`` (its native
Gymnasium vector env) and ``vec`` (the SB3 VecEnv, imported lazily: it needs stable-baselines3,
the ``[train]`` extra).
"""

from __future__ import annotations

from .gym import SpitGymEnv
from .parallel import AGENTS, SpitAECEnv, SpitParallelEnv, env, parallel_env
from .vector import SpitVectorEnv

__all__ = ["SpitParallelEnv", "SpitAECEnv", "parallel_env", "env", "AGENTS", "SpitGymEnv",
           "SpitVectorEnv", "SpitVecEnv"]


def __getattr__(name: str):
    if name == "SpitVecEnv":
        from .vec import SpitVecEnv

        return SpitVecEnv
    raise AttributeError(f"module 'spit_env.envs' has no attribute {name!r}")
