"""spit-env: an RL environment for the real-time card game Spit.

Fast and vectorised, with simulated reaction time. Rules: docs/RULES.md; environments:
docs/ENVIRONMENTS.md.

Entry points:

* ``spit_env.parallel_env(config=None, render_mode=None)``: PettingZoo ParallelEnv, one game;
  ``spit_env.env(...)``: the AEC version. No auto-reset.
* ``gymnasium.make("Spit-v0", opponent="greedy", ...)`` (registered on import) or
  ``spit_env.SpitGymEnv``: one learner against an opponent policy. No auto-reset.
* ``gymnasium.make_vec("Spit-v0", num_envs=N, vectorization_mode="vector_entry_point")`` or
  ``spit_env.SpitVectorEnv``: a Gymnasium VectorEnv over N games of the batched core, the masks in
  ``infos["action_mask"]``, next-step auto-reset (``spit_env.envs.vector``).
* ``spit_env.SpitVecEnv(num_envs, opponent="greedy", ...)``: a stable-baselines3 VecEnv over B
  games of the batched core, same-step auto-reset (imported lazily: it needs stable-baselines3).
* ``spit_env.policy``: the Policy protocol, the policy registry (bots are plug-ins declared in the
  entry-point group ``spit_env.policies``) and "name@latency" profiles.
* ``spit_env.read_observation(obs)``: a batch of observations decoded into named fields, to
  write a bot against (``spit_env.observation``, which also reads the legal moves from an
  observation: ``observed_masks``).
* ``spit_env.testing.check_environments(config)``: every API checker on a config, for CI.
"""

from __future__ import annotations

import gymnasium

from .config import SpitConfig
from .envs.gym import SpitGymEnv
from .envs.parallel import SpitAECEnv, SpitParallelEnv, env, parallel_env
from .envs.vector import SpitVectorEnv
from .latency import Latency
from .observation import ObservationView, read_observation
from .policy import Policy, make_policy, parse_profile, register_policy, registered_policies
from .render import render_text

__all__ = [
    "SpitConfig",
    "Latency",
    "parallel_env",
    "env",
    "SpitParallelEnv",
    "SpitAECEnv",
    "SpitGymEnv",
    "SpitVecEnv",
    "SpitVectorEnv",
    "Policy",
    "make_policy",
    "register_policy",
    "registered_policies",
    "parse_profile",
    "render_text",
    "read_observation",
    "ObservationView",
    "GYM_ID",
]

#: The Gymnasium id of :class:`SpitGymEnv` (keyword arguments of ``gymnasium.make`` go to it).
GYM_ID = "Spit-v0"

if GYM_ID not in gymnasium.registry:
    gymnasium.register(id=GYM_ID, entry_point="spit_env.envs.gym:SpitGymEnv",
                       vector_entry_point="spit_env.envs.vector:SpitVectorEnv")


def __getattr__(name: str):
    # SpitVecEnv subclasses stable-baselines3's VecEnv; SB3 is an optional dependency ([train]),
    # so it is imported only when asked for.
    if name == "SpitVecEnv":
        from .envs.vec import SpitVecEnv

        return SpitVecEnv
    raise AttributeError(f"module 'spit_env' has no attribute {name!r}")
