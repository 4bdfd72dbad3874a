"""The training environment of ``experiments.train_ppo``: the VecEnv stack MaskablePPO learns on.

From the inside out (:func:`make_training_env` builds it)::

    SpitVecEnv            one per row group, each with its own opponent (spit_env.vec_env)
    TruncationReward      per group: a truncated game scores ``reward`` for the learner
    OpponentGroups        the groups side by side as one VecEnv of num_envs rows
    EnvTimer              the seconds spent inside the environment
    ModelInput            the model's input contract (agents.ppo.model_input): masks, obs + mask
    VecMonitor            episode rewards and lengths for SB3's logs

A weighted mix of opponents (and the self-play pool) is a split of the row groups among them, so
every opponent plays in batch on its own rows; with a single opponent there is one group.
"""

from __future__ import annotations

import time

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecMonitor

from agents.ppo import input_size, model_input, playing_masks
from spit_env.policy import parse_profile
from spit_env.vec_env import SpitVecEnv

__all__ = [
    "FORCED_WAIT_SKIPS",
    "OpponentGroups",
    "TruncationReward",
    "EnvTimer",
    "ModelInput",
    "make_training_env",
    "group_seed",
    "split_groups",
]

#: Forced WAITs (WAIT the only legal move, ~60% of a greedy player's decisions) played for the
#: learner per step with --skip-forced-waits: 2 remove about half of them, shortening episodes by
#: ~40% at no extra environment time per game; more rounds make the environment the bottleneck.
FORCED_WAIT_SKIPS = 2


def group_seed(seed: int, g: int) -> int:
    """The game seed of row group ``g`` (group 0 plays ``seed`` itself)."""
    if g == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), g]).generate_state(1, np.uint32)[0])


def split_groups(weights, groups: int) -> list[int]:
    """How many of ``groups`` equal row groups each weight gets.

    Largest remainder; every positive weight gets at least one group when there are enough.
    """
    w = np.asarray(weights, dtype=np.float64)
    share = w / w.sum() * groups
    n = np.floor(share).astype(int)
    for k in np.argsort(-(share - n), kind="stable")[: groups - n.sum()]:
        n[k] += 1
    for k in np.flatnonzero((w > 0) & (n == 0)):
        donor = int(np.argmax(n))
        if n[donor] > 1:
            n[donor] -= 1
            n[k] += 1
    return n.tolist()


def _profile_latency(opponent):
    return parse_profile(opponent)[1] if isinstance(opponent, str) else None


class OpponentGroups(VecEnv):
    """Row groups side by side: one VecEnv whose rows are those of ``envs``, in order.

    Each group keeps its own opponent (:meth:`set_group_opponent`); the groups are stepped one
    after the other and their results concatenated. ``get_attr``, ``set_attr`` and
    ``env_method`` go to the group of each index (``action_masks`` is concatenated).

    Args:
        envs: the groups (SpitVecEnvs, possibly wrapped), each with ``set_opponent``,
            ``action_masks`` and ``seed``.
    """

    def __init__(self, envs: list[VecEnv]):
        self.groups = list(envs)
        self.bounds = np.cumsum([0] + [env.num_envs for env in self.groups])
        self.labels = ["?"] * len(self.groups)
        self._latency = [None] * len(self.groups)
        self._started = False
        self._restart: set[int] = set()
        self._actions = None
        first = self.groups[0]
        super().__init__(int(self.bounds[-1]), first.observation_space, first.action_space)

    def _slices(self) -> list[slice]:
        return [slice(int(a), int(b)) for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True)]

    def set_group_opponent(self, g: int, opponent, label: str) -> None:
        """Group ``g`` plays ``opponent`` (a profile or a Policy) from the next step on.

        A new profile latency applies to fresh games only (``SpitVecEnv.set_opponent``), so
        when it changes, the group's running games are cut (truncated, so SB3 bootstraps them)
        after the next step and fresh ones dealt.
        """
        new = _profile_latency(opponent)
        self.groups[g].set_opponent(opponent)
        self.labels[g] = label
        if new != self._latency[g] and self._started:
            self._restart.add(g)
        self._latency[g] = new

    def seed(self, seed=None):
        """Seed group g with ``group_seed(seed, g)`` for the next reset (None: OS seeds)."""
        for g, env in enumerate(self.groups):
            env.seed(None if seed is None else group_seed(seed, g))
        return [seed] * self.num_envs

    def reset(self):
        """Reset every group; (num_envs, D) float32."""
        obs = np.concatenate([env.reset() for env in self.groups])
        self._started = True
        self._restart.clear()
        return obs

    def step_async(self, actions) -> None:
        """Store the (num_envs,) actions for :meth:`step_wait`."""
        self._actions = np.asarray(actions)

    def step_wait(self):
        """Step every group with its rows' actions; concatenated (obs, rewards, dones, infos)."""
        parts = []
        for g, (env, sl) in enumerate(zip(self.groups, self._slices(), strict=True)):
            env.step_async(self._actions[sl])
            part = env.step_wait()
            if g in self._restart:
                part = self._cut(env, *part)
            parts.append(part)
        self._restart.clear()
        obs = np.concatenate([p[0] for p in parts])
        rewards = np.concatenate([p[1] for p in parts])
        dones = np.concatenate([p[2] for p in parts])
        infos = [info for p in parts for info in p[3]]
        return obs, rewards, dones, infos

    @staticmethod
    def _cut(env, obs, rewards, dones, infos):
        # End every running game of the group as truncated (SB3 bootstraps from the terminal
        # observation) and deal fresh games under the new latency.
        for i in np.flatnonzero(~dones):
            infos[i]["terminal_observation"] = obs[i].copy()
            infos[i]["TimeLimit.truncated"] = True
        return env.reset(), rewards, np.ones_like(dones), infos

    def action_masks(self) -> np.ndarray:
        """(num_envs, 23) bool: the learner's legal moves in each row."""
        return np.concatenate([env.action_masks() for env in self.groups])

    def public_tables(self) -> list:
        """The learners' public tables over all groups, as (row positions, PublicTable) parts
        (``SpitVecEnv.public_tables``), for a planning teacher (``spit_env.policy.call_policy``)."""
        return [(pos + lo, table) for env, lo in zip(self.groups, self.bounds[:-1], strict=True)
                for pos, table in env.public_tables()]

    def close(self) -> None:
        """Close every group."""
        for env in self.groups:
            env.close()

    def _by_group(self, indices):
        """(group, its local indices) pairs for the global ``indices``, in group order."""
        idx = np.asarray(list(self._get_indices(indices)), np.int64)
        g = np.searchsorted(self.bounds, idx, side="right") - 1
        return [(k, (idx[g == k] - self.bounds[k]).tolist()) for k in np.unique(g)]

    def get_attr(self, attr_name, indices=None):
        """The attribute of each index's row, asked of its group."""
        return [v for k, local in self._by_group(indices)
                for v in self.groups[k].get_attr(attr_name, local)]

    def set_attr(self, attr_name, value, indices=None) -> None:
        """Set the attribute in the groups of ``indices``."""
        for k, local in self._by_group(indices):
            self.groups[k].set_attr(attr_name, value, local)

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        """Call the method in each index's group (``action_masks``: this VecEnv's rows)."""
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in self._get_indices(indices)]
        return [v for k, local in self._by_group(indices)
                for v in self.groups[k].env_method(method_name, *method_args, indices=local,
                                                   **method_kwargs)]

    def env_is_wrapped(self, wrapper_class, indices=None):
        """Whether each index's group is wrapped with ``wrapper_class``."""
        return [v for k, local in self._by_group(indices)
                for v in self.groups[k].env_is_wrapped(wrapper_class, local)]


class TruncationReward(VecEnvWrapper):
    """A truncated game (D16) ends with ``reward`` for the learner instead of the draw's 0.

    The ``TimeLimit.truncated`` flag is taken out of its info: the reward is a final outcome,
    so SB3 must not bootstrap from the cut-off state.
    """

    def __init__(self, venv: VecEnv, reward: float):
        super().__init__(venv)
        self.reward = float(reward)

    def reset(self):
        """Reset the wrapped VecEnv."""
        return self.venv.reset()

    def step_wait(self):
        """Step, adding ``reward`` to the rows whose game was truncated."""
        obs, rewards, dones, infos = self.venv.step_wait()
        rewards = np.asarray(rewards, np.float32).copy()
        for i in np.flatnonzero(dones):
            if infos[i].pop("TimeLimit.truncated", False):
                rewards[i] += self.reward
        return obs, rewards, dones, infos


class EnvTimer(VecEnvWrapper):
    """Times every call into the wrapped VecEnv: ``seconds`` in reset, step and action masks."""

    def __init__(self, venv: VecEnv):
        super().__init__(venv)
        self.seconds = 0.0

    def reset(self):
        """Reset, timed."""
        t = time.perf_counter()
        obs = self.venv.reset()
        self.seconds += time.perf_counter() - t
        return obs

    def step_wait(self):
        """Step, timed."""
        t = time.perf_counter()
        out = self.venv.step_wait()
        self.seconds += time.perf_counter() - t
        return out

    def action_masks(self) -> np.ndarray:
        """The wrapped VecEnv's action masks, timed."""
        t = time.perf_counter()
        masks = self.venv.action_masks()
        self.seconds += time.perf_counter() - t
        return masks

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        """``action_masks`` timed like :meth:`action_masks`; other methods passed on."""
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in self._get_indices(indices)]
        return self.venv.env_method(method_name, *method_args, indices=indices, **method_kwargs)


class ModelInput(VecEnvWrapper):
    """The environment as the model sees it (``agents.ppo.model_input``, one contract).

    ``action_masks()`` are the learner's legal moves with WAIT taken out beside any other move
    (``mask_wait``); with ``obs_mask`` each observation is followed by those masks as 0/1
    floats, (D + 23,), and a terminal observation by an all-zero mask. The masks are computed
    once per step.
    """

    def __init__(self, venv: VecEnv, mask_wait: bool, obs_mask: bool):
        self.options = {"mask_wait": bool(mask_wait), "obs_mask": bool(obs_mask)}
        dim = input_size(self.options)
        super().__init__(venv, observation_space=spaces.Box(0.0, 1.0, (dim,), np.float32))
        self._masks = None

    def _view(self, obs: np.ndarray) -> np.ndarray:
        inputs, self._masks = model_input(obs, self.venv.action_masks(), self.options)
        return inputs

    def reset(self):
        """Reset; the model's input of the new observations."""
        return self._view(self.venv.reset())

    def step_wait(self):
        """Step; the model's inputs, terminal observations included."""
        obs, rewards, dones, infos = self.venv.step_wait()
        if self.options["obs_mask"]:
            for info in infos:
                if "terminal_observation" in info:
                    term = info["terminal_observation"][None, :]
                    none = np.zeros((1, self.venv.action_space.n), bool)
                    info["terminal_observation"] = model_input(term, none, self.options)[0][0]
        return self._view(obs), rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        """(num_envs, 23) bool: the masks the model plays with now (after ``mask_wait``)."""
        if self._masks is None:
            self._masks = playing_masks(self.venv.action_masks(), self.options)
        return self._masks.copy()

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        """``action_masks`` per row (what MaskablePPO calls); other methods passed on."""
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in self._get_indices(indices)]
        return self.venv.env_method(method_name, *method_args, indices=indices, **method_kwargs)


def make_training_env(*, num_envs: int, groups: int, opponent, seed: int, learner_seat,
                      reward: str, episode: str, shaping: float, skip_forced_waits: bool,
                      truncation_reward: float, mask_wait: bool, obs_mask: bool):
    """The training VecEnv stack (module docstring).

    Args:
        num_envs: rows in all, split into ``groups`` groups of near-equal size.
        opponent: every group's first opponent (a schedule then sets each group's own).
        seed: the games' seed (group g plays ``group_seed(seed, g)``).
        learner_seat, reward, episode, shaping: SpitVecEnv options.
        skip_forced_waits: play up to :data:`FORCED_WAIT_SKIPS` forced WAITs per step.
        truncation_reward: the learner's reward for a truncated game.
        mask_wait, obs_mask: the model's input options (``agents.ppo``).

    Returns:
        (OpponentGroups, EnvTimer, the outermost VecMonitor to train on).
    """
    sizes = [len(a) for a in np.array_split(np.arange(num_envs), groups)]
    skips = FORCED_WAIT_SKIPS if skip_forced_waits else 0
    envs = [TruncationReward(SpitVecEnv(n, opponent=opponent, seed=group_seed(seed, g),
                                        learner_seat=learner_seat, reward=reward,
                                        shaping=shaping, episode=episode,
                                        skip_forced_waits=skips), truncation_reward)
            for g, n in enumerate(sizes)]
    grouped = OpponentGroups(envs)
    timer = EnvTimer(grouped)
    return grouped, timer, VecMonitor(ModelInput(timer, mask_wait, obs_mask))
