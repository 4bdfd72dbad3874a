"""The training environment of ``experiments.train_ppo``: the VecEnv stack MaskablePPO learns on.

From the inside out (:func:`make_training_env` builds it)::

    SpitVecEnv            num_envs games; each row may play its own opponent (spit_env.envs.vec)
    TruncationReward      a truncated game scores ``reward`` for the learner
    OpponentGroups        the rows split into groups, each group with its opponent
    EnvTimer              the seconds spent inside the environment
    VecMonitor            episode rewards and lengths for SB3's logs

The model reads the environment's own observations and masks: its input options (the playing
mask, the mask and the racer features in its input) live in its policy
(``agents.ppo_model.SpitPolicy``), as in every other place the model plays.

A weighted mix of opponents (and the self-play pool) is a split of the row groups among them, so
every opponent plays in batch on its own rows, and the core steps all rows at once whatever the
mix; with a single opponent there is one group.
"""

from __future__ import annotations

import time

import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecMonitor

from spit_env.envs.vec import SpitVecEnv
from spit_env.policy import parse_profile

__all__ = [
    "FORCED_WAIT_SKIPS",
    "OpponentGroups",
    "TruncationReward",
    "EnvTimer",
    "make_training_env",
    "split_groups",
]

#: Forced WAITs (WAIT the only legal move, ~60% of a greedy player's decisions) played for the
#: learner per step with --skip-forced-waits: 2 remove about half of them, shortening episodes by
#: ~40% at no extra environment time per game; more rounds make the environment the bottleneck.
FORCED_WAIT_SKIPS = 2


def split_groups(weights, groups: int) -> list[int]:
    """How many of ``groups`` near-equal row groups each weight gets (largest remainder).

    The groups' sizes differ by at most one row; every positive weight gets at least one group
    when there are enough.

    Args:
        weights: the mix's weights, >= 0 with a positive sum.
        groups: the number of row groups.

    Returns:
        one count per weight, summing to ``groups``.
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


class OpponentGroups(VecEnvWrapper):
    """Row groups of one training VecEnv, each group with its own opponent.

    The rows are split into ``groups`` near-equal slices; :meth:`set_group_opponent` gives a
    slice its opponent (``SpitVecEnv.set_opponent`` with its indices). All groups live in the
    one SpitVecEnv below: the core steps every row at once and each opponent is asked once per
    decision epoch for its rows, so a mix or a self-play pool costs little more than one
    opponent.

    Args:
        venv: the SpitVecEnv (possibly wrapped) whose ``set_opponent`` accepts ``indices``.
        groups: the number of row groups, 1..num_envs.

    Attributes:
        bounds: (groups + 1,) the first row of each group, then num_envs.
        labels: each group's opponent as the run's logs call it.
    """

    def __init__(self, venv: VecEnv, groups: int):
        super().__init__(venv)
        sizes = [len(a) for a in np.array_split(np.arange(venv.num_envs), groups)]
        self.bounds = np.cumsum([0] + sizes)
        self.n_groups = len(sizes)
        self.labels = ["?"] * self.n_groups
        self._latency = [None] * self.n_groups
        self._started = False
        self._restart = False

    def set_group_opponent(self, g: int, opponent, label: str) -> None:
        """Group ``g`` plays ``opponent`` (a profile or a Policy) from the next step on.

        A new profile latency applies to fresh games only (``SpitVecEnv.set_opponent``), so
        when it changes, the running games are cut (truncated, so SB3 bootstraps them) after
        the next step and fresh ones dealt: all rows, since they share one VecEnv.
        """
        new = _profile_latency(opponent)
        idx = list(range(int(self.bounds[g]), int(self.bounds[g + 1])))
        self.venv.env_method("set_opponent", opponent, indices=idx)
        self.labels[g] = label
        if new != self._latency[g] and self._started:
            self._restart = True
        self._latency[g] = new

    def reset(self):
        """Reset every row; (num_envs, D) float32."""
        obs = self.venv.reset()
        self._started = True
        self._restart = False
        return obs

    def step_wait(self):
        """Step every row (obs, rewards, dones, infos); a latency change cuts the games."""
        obs, rewards, dones, infos = self.venv.step_wait()
        if self._restart:
            self._restart = False
            # End every running game as truncated (SB3 bootstraps from the terminal
            # observation) and deal fresh games under the new latencies.
            for i in np.flatnonzero(~dones):
                infos[i]["terminal_observation"] = obs[i].copy()
                infos[i]["TimeLimit.truncated"] = True
            obs, dones = self.venv.reset(), np.ones_like(dones)
        return obs, rewards, dones, infos


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


def make_training_env(*, num_envs: int, groups: int, opponent, seed: int, learner_seat,
                      reward: str, episode: str, shaping: float, skip_forced_waits: bool,
                      truncation_reward: float):
    """The training VecEnv stack (module docstring).

    Args:
        num_envs: rows in all.
        groups: the number of row groups, of near-equal size (:class:`OpponentGroups`).
        opponent: every group's first opponent (a schedule then sets each group's own).
        seed: the games' seed (row i first plays game i of it).
        learner_seat: 0, 1 or "random" (SpitVecEnv).
        reward: "game" or "round" (SpitVecEnv).
        episode: "game" or "round" (SpitVecEnv).
        shaping: the reward per card shed minus the opponent's (SpitVecEnv; 0 off).
        skip_forced_waits: play up to :data:`FORCED_WAIT_SKIPS` forced WAITs per step.
        truncation_reward: the learner's reward for a truncated game (D16).

    Returns:
        ``(OpponentGroups, EnvTimer, the outermost VecMonitor to train on)``.
    """
    skips = FORCED_WAIT_SKIPS if skip_forced_waits else 0
    venv = SpitVecEnv(num_envs, opponent=opponent, seed=seed, learner_seat=learner_seat,
                      reward=reward, shaping=shaping, episode=episode, skip_forced_waits=skips)
    grouped = OpponentGroups(TruncationReward(venv, truncation_reward), groups)
    timer = EnvTimer(grouped)
    return grouped, timer, VecMonitor(timer)
