"""The learner's own positions, labelled by a teacher: games in the learner's seat of a SpitVecEnv.

The learner (the current network, or the round-0 bot) plays the learner's seat of ``num_envs``
games at once against a mix of opponents (each member its share of the rows, ``self`` the
learner itself); at every decision of the learner with two or more legal moves the teacher labels
the position (:class:`Positions`): the policy target, the teacher's move, the reference move (the
learner's own), the planner's value where there is one. The games whose positions were labelled
are then played to their end (no more labels), so every label gets the game's outcome from the
learner's seat as a value target too.

Randomness: game g of ``seed`` is dealt and played from its own streams (``SpitVecEnv``: the
deal, latencies, the learner's seat, the opponent's draws), and the learner's and the teacher's
draws come from ``SpitVecEnv.learner_rng`` (the game's stream for the learner's seat and its
decision index), so a label depends on (seed, game id) and the networks alone, not on the other
rows of the batch.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from spit_env.envs.vec import SpitVecEnv
from spit_env.progress import Progress
from spit_env.rules import N_ACTIONS, OBS_DIM

__all__ = ["Positions", "Labels", "split_idx", "split_rows", "make_env", "collect"]

#: Forced WAITs the env plays for the learner within one step (``SpitVecEnv.skip_forced_waits``):
#: they carry no choice, hence no label.
_SKIP_FORCED_WAITS = 2
#: Steps the finishing phase may take at most (a game ends long before: D16 truncates it).
_MAX_FINISH_STEPS = 200_000


@dataclass
class Positions:
    """N labelled decisions of the learner (every array's first dimension is N).

    Attributes:
        obs: (N, D) float32 the learner's observations (``rules.OBSERVATION``).
        masks: (N, 23) bool its legal moves (two or more each; WAIT included where legal).
        targets: (N, 23) float32 the policy target, a distribution over the legal moves.
        teacher: (N,) int64 the teacher's move (the planner's choice, or the bot's move).
        reference: (N,) int64 the learner's own move (the planner's reference move).
        plan_value: (N,) float32 the planner's value of the reference move from the learner's
            seat, scaled into [-1, 1] (``targets.plan_value_scale``); NaN for a bot's label.
        outcome: (N,) float32 the game's result from the learner's seat: 1 won, -1 lost, 0 a
            draw or a truncated game; NaN for a game not played to its end.
        gain: (N, 23) float32 the planner's mean gain of each legal move over the reference move
            (``Plan.mean_diff``, planner value units); NaN elsewhere and for a bot's label.
        gain_se: (N, 23) float32 its standard error (``Plan.se``), NaN likewise.
    """

    obs: np.ndarray
    masks: np.ndarray
    targets: np.ndarray
    teacher: np.ndarray
    reference: np.ndarray
    plan_value: np.ndarray
    outcome: np.ndarray
    gain: np.ndarray
    gain_se: np.ndarray

    def __len__(self) -> int:
        return int(self.teacher.size)

    @classmethod
    def empty(cls) -> Positions:
        """No position."""
        return cls(np.zeros((0, OBS_DIM), np.float32), np.zeros((0, N_ACTIONS), bool),
                   np.zeros((0, N_ACTIONS), np.float32), np.zeros(0, np.int64),
                   np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, np.float32),
                   np.zeros((0, N_ACTIONS), np.float32), np.zeros((0, N_ACTIONS), np.float32))

    @classmethod
    def concat(cls, parts) -> Positions:
        """The positions of ``parts`` one after the other."""
        parts = [p for p in parts if len(p)] or [cls.empty()]
        return cls(**{f.name: np.concatenate([getattr(p, f.name) for p in parts])
                      for f in fields(cls)})

    def take(self, idx: np.ndarray) -> Positions:
        """The positions ``idx`` ((n,) int64 or (N,) bool)."""
        return Positions(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    def save(self, path: Path) -> None:
        """Write the arrays to ``path`` (an .npz file)."""
        np.savez_compressed(path, **{f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def load(cls, path: Path) -> Positions:
        """The positions :meth:`save` wrote to ``path``."""
        with np.load(path) as z:
            return cls(**{f.name: z[f.name] for f in fields(cls)})


@dataclass
class Labels:
    """What a teacher returns for one env step of B rows (:func:`collect`'s ``teach``).

    Attributes:
        play: (B,) int64 the learner's move in every row (what the env steps with).
        idx: (L,) int64 the rows labelled (two or more legal moves), as row indices.
        targets: (L, 23) float32 their policy targets.
        teacher: (L,) int64 the teacher's moves.
        reference: (L,) int64 the learner's own moves.
        plan_value: (L,) float32 scaled planner values, NaN for none.
        gain: (L, 23) float32 the planner's mean gains over the reference move, NaN for none.
        gain_se: (L, 23) float32 their standard errors, NaN for none.
    """

    play: np.ndarray
    idx: np.ndarray
    targets: np.ndarray
    teacher: np.ndarray
    reference: np.ndarray
    plan_value: np.ndarray
    gain: np.ndarray
    gain_se: np.ndarray


def split_idx(num_envs: int, weights) -> list[np.ndarray]:
    """Contiguous row groups of ``num_envs`` rows, one per weight, in proportion to the weights.

    Largest remainders: the sizes add up to ``num_envs`` and differ from the exact shares by
    less than one row.

    Args:
        num_envs: B >= 1.
        weights: (M,) floats >= 0 with a positive sum.

    Returns:
        M arrays of row indices (int64), together 0..B-1 once each; some may be empty.
    """
    w = np.asarray(weights, np.float64)
    exact = w / w.sum() * num_envs
    size = np.floor(exact).astype(np.int64)
    short = num_envs - int(size.sum())
    size[np.argsort(-(exact - size), kind="stable")[:short]] += 1
    bounds = np.concatenate([[0], np.cumsum(size)])
    return [np.arange(a, b, dtype=np.int64) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def split_rows(num_envs: int, weights) -> list[np.ndarray]:
    """Deprecated name of :func:`split_idx` (for one release): the same groups, with a warning.

    Warns:
        DeprecationWarning: always.
    """
    warnings.warn("split_rows is deprecated: use split_idx (the groups are integer row indices)",
                  DeprecationWarning, stacklevel=2)
    return split_idx(num_envs, weights)


def make_env(num_envs: int, seed: int, opponents, learner, config=None) -> SpitVecEnv:
    """The SpitVecEnv of a collection: the opponents' row groups (:func:`split_idx`).

    Args:
        num_envs: games at once.
        seed: the games' seed.
        opponents: ``[(name, weight), ...]``; the name ``"self"`` is ``learner``.
        learner: the learner's policy (for ``"self"``).
        config: the games' SpitConfig (default ``SpitConfig()``).
    """
    groups = split_idx(num_envs, [w for _, w in opponents])
    env = SpitVecEnv(num_envs, opponent="random", config=config, seed=seed, reward="game",
                     skip_forced_waits=_SKIP_FORCED_WAITS)
    for (name, _), idx in zip(opponents, groups, strict=True):
        if idx.size:
            env.set_opponent(learner if name == "self" else name, idx.tolist())
    return env


def collect(env: SpitVecEnv, learner: Callable, teach: Callable, labels: int, *,
            finish: bool = True, desc: str = "labels",
            show_progress: bool = True) -> tuple[Positions, dict]:
    """Play the learner in ``env`` until ``labels`` positions are labelled, then finish the games.

    Args:
        env: a fresh env (:func:`make_env`); it is reset here.
        learner: the learner's policy ``(obs, masks, rng) -> (B,) int64``, which plays the
            finishing phase.
        teach: ``(obs (B, D), masks (B, 23), rng, table) -> Labels`` at every step of the
            labelling phase; its ``play`` moves are the learner's.
        labels: label at least this many positions (a step labels all its rows with a choice).
        finish: play the labelled games to their end for their outcomes (False: the outcome of
            a game unfinished when the labels are in is NaN).
        desc: the progress line's text.
        show_progress: write progress (``spit_env.progress``).

    Returns:
        (the positions, in step order then row order; stats: ``labels``, ``label_seconds``,
        ``finish_seconds``, ``games``).
    """
    import time

    b = env.num_envs
    obs = env.reset()
    parts: list[Labels] = []
    seen: list[tuple[np.ndarray, np.ndarray]] = []  # (obs, masks) of each part's rows
    open_labels: list[list[tuple[int, int]]] = [[] for _ in range(b)]  # (part, index) per row
    outcomes: list[np.ndarray] = []
    games = 0
    n = 0

    def step(actions):
        nonlocal obs, games
        obs, rewards, dones, _ = env.step(actions)
        for i in np.flatnonzero(dones):
            if open_labels[i]:
                games += 1
            for part, j in open_labels[i]:
                outcomes[part][j] = np.sign(rewards[i])
            open_labels[i] = []

    t0 = time.perf_counter()
    with Progress(labels, desc, unit="labels", enabled=show_progress) as progress:
        while n < labels:
            masks = env.action_masks()
            lab = teach(obs, masks, env.learner_rng(), env.public_table())
            k = len(parts)
            parts.append(lab)
            seen.append((obs[lab.idx], masks[lab.idx]))
            outcomes.append(np.full(lab.idx.size, np.nan, np.float32))
            for j, i in enumerate(lab.idx):
                open_labels[i].append((k, j))
            n += int(lab.idx.size)
            progress(int(lab.idx.size))
            step(lab.play)
    label_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    left = sum(1 for r in open_labels if r) if finish else 0
    with Progress(left, "finishing the labelled games", unit="games",
                  enabled=show_progress) as progress:
        for _ in range(_MAX_FINISH_STEPS):
            if not finish or not any(open_labels):
                break
            before = games
            step(learner(obs, env.action_masks(), env.learner_rng()))
            progress(games - before)
        else:  # pragma: no cover - D16 truncates every game long before
            raise RuntimeError("the labelled games did not end")
    positions = Positions.concat([
        Positions(obs=o, masks=m, targets=lab.targets, teacher=lab.teacher,
                  reference=lab.reference, plan_value=lab.plan_value, outcome=out,
                  gain=lab.gain, gain_se=lab.gain_se)
        for lab, out, (o, m) in zip(parts, outcomes, seen, strict=True)])
    return positions, {"labels": len(positions), "label_seconds": label_seconds,
                       "finish_seconds": time.perf_counter() - t1, "games": games}

