"""The value network's data: positions from players' games and where racer rollouts take them.

A **position** is one moment of a game (any decision epoch before the game's end, a seat's
move in flight or not, the slap phase included: the moments where a planner's rollout may
stop at its horizon) seen from one seat. :func:`collect_positions` plays each source player
against ``racer`` in both seats (:class:`agents.arena.Match`) and keeps each epoch of each game
with probability ``rate``, the seat drawn with it, both draws hashed from the game's key and
clock, so which positions are kept depends on the game ids and the seed alone.

Each position gets four **targets**, all in the planner's units (``agents.planner``: the card
difference over 52, opponent's cards held minus one's own, plus ``win_weight`` for a game won)
and from the observing seat:

* ``ahead``: the mean value of ``rollouts`` racer-versus-racer rollouts from the position that
  stop ``ahead_ms`` of simulated time later (or at the end of the round or the game, if that
  comes first), each from another arrangement of the hidden cards the seat cannot see and fresh
  random streams: what a planner's rollout that stopped here would have found had its horizon
  been ``ahead_ms`` further;
* ``round``: the mean value of ``rollouts`` such rollouts played on to the end of the round (or
  of the game, if it ends in the round): what the planner's rollout would have returned had its
  horizon not stopped it (the screen's truth values moves the same way, ``agents.screen.truth``);
* ``game``: the mean value of ``game_rollouts`` such rollouts played on to the game's end (the
  card difference then, plus the win bonus);
* ``outcome``: ``win_weight`` times the real game's result for the seat (+1 won, -1 lost, 0 a
  draw or truncation), the players of the source game playing on.

Every draw of position i (its rollouts' arrangements and streams) comes from its own key
(:func:`position_keys`), so a position's targets do not depend on the positions beside it, and
a run split into jobs (:class:`ValueJob`, e.g. as Ray tasks) gives the same arrays as one run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agents.arena import Match
from agents.screen.positions import stack_states
from spit_env import core, rules, streams
from spit_env.checks import check_int
from spit_env.config import SpitConfig

__all__ = ["ValueData", "ValueJob", "TARGETS", "collect_positions", "position_keys",
           "rollout_targets", "data_jobs", "play_value_jobs"]

#: the targets a position gets, in the planner's units (module docstring)
TARGETS = ("ahead", "round", "game", "outcome")
#: hash purposes of the sampling draws and of the rollouts' keys (no game stream uses them)
_SAMPLE, _ROLLOUT = 111, 112
_DETERMINIZE, _STREAM, _GAME = 0, 1, 2
_U53 = 2.0 ** -53


@dataclass(eq=False)
class ValueData:
    """N positions with their observations, origins and targets.

    Attributes:
        obs: (N, D) float32 the observing seat's observation (``core.observe``).
        seat: (N,) int64 the observing seat.
        game_id: (N,) int64 the source game's id (held-out sets are split by it).
        source: (N,) int64 index into ``sources`` of the source player of the game.
        clock_ms: (N,) int64 the game's clock at the position, simulated ms.
        targets: {"ahead" | "round" | "game" | "outcome": (N,) float32} (module docstring).
        round_se: (N,) float32 the standard error of the ``round`` target's mean.
        sources: the source players' names.
        ahead_ms: the ``ahead`` target's look-ahead, simulated ms.
    """

    obs: np.ndarray
    seat: np.ndarray
    game_id: np.ndarray
    source: np.ndarray
    clock_ms: np.ndarray
    targets: dict[str, np.ndarray]
    round_se: np.ndarray
    sources: tuple[str, ...] = field(default_factory=tuple)
    ahead_ms: int = 2000

    def __len__(self) -> int:
        return int(self.seat.size)

    def take(self, idx) -> ValueData:
        """The positions ``idx`` ((n,) integer indices or a (N,) bool mask), in that order."""
        return ValueData(self.obs[idx], self.seat[idx], self.game_id[idx], self.source[idx],
                         self.clock_ms[idx], {k: v[idx] for k, v in self.targets.items()},
                         self.round_se[idx], self.sources, self.ahead_ms)

    @classmethod
    def concat(cls, parts: Sequence[ValueData]) -> ValueData:
        """The positions of ``parts``, ordered by game id, then clock.

        The order is the same whatever the parts (jobs) the positions were collected in.

        Raises:
            ValueError: no part, or parts of other sources.
        """
        if not parts:
            raise ValueError("ValueData.concat needs at least one part")
        if any((p.sources, p.ahead_ms) != (parts[0].sources, parts[0].ahead_ms) for p in parts):
            raise ValueError("ValueData.concat: the parts must have the same sources and "
                             "ahead_ms")
        cat = np.concatenate
        out = cls(cat([p.obs for p in parts]), cat([p.seat for p in parts]),
                  cat([p.game_id for p in parts]), cat([p.source for p in parts]),
                  cat([p.clock_ms for p in parts]),
                  {k: cat([p.targets[k] for p in parts]) for k in TARGETS},
                  cat([p.round_se for p in parts]), parts[0].sources, parts[0].ahead_ms)
        return out.take(np.lexsort((out.clock_ms, out.game_id)))

    def save(self, path: Path) -> None:
        """Write the positions to ``path`` (.npz, uncompressed)."""
        np.savez(path, obs=self.obs, seat=self.seat, game_id=self.game_id, source=self.source,
                 clock_ms=self.clock_ms, round_se=self.round_se,
                 sources=np.array(self.sources, dtype=str), ahead_ms=self.ahead_ms,
                 **{f"target_{k}": v for k, v in self.targets.items()})

    @classmethod
    def load(cls, path: Path) -> ValueData:
        """The positions :meth:`save` wrote.

        Raises:
            ValueError: a file without the fields, or of another observation width.
        """
        with np.load(path) as f:
            missing = {"obs", "seat", "game_id", "source", "clock_ms", "round_se", "sources",
                       "ahead_ms",
                       *(f"target_{k}" for k in TARGETS)} - set(f.files)
            if missing:
                raise ValueError(f"{path}: not a value data file (missing {sorted(missing)})")
            if f["obs"].shape[1:] != (rules.OBS_DIM,):
                raise ValueError(f"{path}: observations of width {f['obs'].shape[1]}, this "
                                 f"package's are {rules.OBS_DIM}: collect the data again")
            return cls(f["obs"], f["seat"], f["game_id"], f["source"], f["clock_ms"],
                       {k: f[f"target_{k}"] for k in TARGETS}, f["round_se"],
                       tuple(str(s) for s in f["sources"]), int(f["ahead_ms"]))


def _unit_draws(state: core.CoreState, idx: np.ndarray, purpose: int) -> np.ndarray:
    """(n,) float64 in [0, 1): a draw per row, hashed from its game's key and clock."""
    h = streams.draw(state.key[idx], purpose, 0, state.clock[idx].astype(np.int64))
    return (h >> np.uint64(11)).astype(np.float64) * _U53


class _Sampler:
    """A Match trace keeping each running game's epoch with probability ``rate``."""

    def __init__(self, rate: float):
        self.rate = rate
        self.states: list[core.CoreState] = []
        self.seats: list[np.ndarray] = []

    def __call__(self, state: core.CoreState, game_ids: np.ndarray) -> None:
        idx = np.flatnonzero((game_ids >= 0) & (state.phase != rules.PHASE_OVER)
                              & ~(state.terminated | state.truncated))
        if idx.size == 0:
            return
        keep = idx[_unit_draws(state, idx, _SAMPLE) < self.rate]
        if keep.size:
            self.states.append(core.copy_rows(state, keep))
            seat = (streams.draw(state.key[keep], _SAMPLE, 1,
                                 state.clock[keep].astype(np.int64)) & np.uint64(1))
            self.seats.append(seat.astype(np.int64))


def collect_positions(sources: Sequence[str], game_ids: np.ndarray, *, rate: float,
                      seed: int = 0, config: SpitConfig | None = None,
                      opponent: str = "racer", batch_size: int = 128,
                      progress: Callable[[int], None] | None = None):
    """Play ``game_ids`` for every source (both seats against ``opponent``), sample positions.

    Source k plays game id ``g`` in seat ``g % 2`` (its opponent in the other), so every
    source plays other deals in both seats; game ids are made distinct across sources by
    ``k * GAMES_PER_SOURCE`` (:data:`GAMES_PER_SOURCE`), so a held-out split by game id is one
    across sources too.

    Args:
        sources: player names or profiles (``"racer"``, ``"planner-fast"``, ...).
        game_ids: (G,) distinct ints in [0, GAMES_PER_SOURCE): the games each source plays.
        rate: the probability of keeping an epoch, in (0, 1].
        seed: the game seed.
        config: the games' config (default: the rules and club latency).
        opponent: the sources' opponent.
        batch_size: games stepped at once.
        progress: called with the number of games just finished.

    Returns:
        ``(state, seat, game_id, source, outcome)``: a CoreState of the N positions, (N,) int64
        the observing seat, its game id (offset by source), the source index, and (N,) int64
        that seat's result in the real game (+1 / -1 / 0); None if no position was kept.
    """
    config = config or SpitConfig()
    game_ids = np.asarray(game_ids, np.int64)
    if game_ids.size and (game_ids.min() < 0 or game_ids.max() >= GAMES_PER_SOURCE):
        raise ValueError(f"game_ids must lie in [0, {GAMES_PER_SOURCE}), got "
                         f"{game_ids.min()}..{game_ids.max()}")
    parts = []
    for k, name in enumerate(sources):
        for s in (0, 1):
            ids = game_ids[game_ids % 2 == s] + k * GAMES_PER_SOURCE
            if ids.size == 0:
                continue
            pair = (name, opponent) if s == 0 else (opponent, name)
            sampler = _Sampler(rate)
            results = Match(*pair, ids, config=config, seed=seed,
                            batch_size=min(batch_size, ids.size)).run(trace=sampler,
                                                                      progress=progress)
            if not sampler.states:
                continue
            st = stack_states(sampler.states)
            seat = np.concatenate(sampler.seats)
            winner = dict(zip(results["game_id"].tolist(), results["winner"].tolist(),
                              strict=True))
            w = np.array([winner[int(g)] for g in st.game_id], np.int64)
            outcome = np.where(w < 0, 0, np.where(w == seat, 1, -1))
            parts.append((st, seat, st.game_id.astype(np.int64), np.full(seat.size, k),
                          outcome))
    if not parts:
        return None
    state = stack_states([p[0] for p in parts])
    seat, gid, src, outcome = (np.concatenate([p[j] for p in parts]) for j in range(1, 5))
    order = np.lexsort((state.clock, gid))  # by game, then time: the same for any job split
    return (core.copy_rows(state, order), seat[order], gid[order], src[order].astype(np.int64),
            outcome[order])


#: game ids per source: source k's games are k * GAMES_PER_SOURCE + its game ids
GAMES_PER_SOURCE = 10_000_000


def position_keys(state: core.CoreState, seat: np.ndarray) -> np.ndarray:
    """(N,) uint64 each position's key: a hash of its game's key, clock and seat."""
    return streams.draw(state.key, _ROLLOUT, seat, state.clock.astype(np.int64))


def _determinized(state: core.CoreState, seat: np.ndarray, keys: np.ndarray, copies: int,
                  part: int) -> core.CoreState:
    """``copies`` copies of every position, its hidden cards re-arranged and streams fresh."""
    n = seat.size
    table = core.public_table(state, np.arange(n), seat)
    sims = core.copy_rows(table.state, np.arange(n), copies)
    every = np.arange(sims.batch_size)
    k = np.arange(copies, dtype=np.uint64)
    core.replace_hidden(sims, every, rng=streams.RowStreams(
        streams.draw(keys[:, None], _ROLLOUT, k + part * 4096, _DETERMINIZE).reshape(-1)))
    core.reseed_rows(sims, every, streams.draw(keys[:, None], _ROLLOUT, k + part * 4096,
                                               _STREAM).reshape(-1))
    return sims


def rollout_targets(state: core.CoreState, seat: np.ndarray, *, rollouts: int,
                    game_rollouts: int, ahead_ms: int = 2000, win_weight: float = 2.0,
                    chunk: int = 1024) -> dict[str, np.ndarray]:
    """The ``ahead``, ``round`` and ``game`` targets of positions (module docstring).

    Args:
        state: CoreState of the N positions.
        seat: (N,) int64 the observing seats.
        rollouts: racer rollouts per position of the ``ahead`` and of the ``round`` target,
            1-4096 (other arrangements and streams for each target).
        game_rollouts: racer rollouts to the game's end per position, 0-4096 (0: the game
            target is NaN).
        ahead_ms: the ``ahead`` target's look-ahead, simulated ms, 1-600,000.
        win_weight: the value of a game won, on top of the card difference.
        chunk: positions rolled out at once.

    Returns:
        {"ahead", "round", "round_se", "game"}: (N,) float32 each (``round_se`` NaN with one
        rollout).
    """
    from agents.planner import PlannerBot

    check_int("rollouts", rollouts, 1, 4096)
    check_int("game_rollouts", game_rollouts, 0, 4096)
    check_int("ahead_ms", ahead_ms, 1, 600_000)
    engine = PlannerBot(rollouts=1, horizon_ms=600_000, win_weight=win_weight)
    n = seat.size
    keys = position_keys(state, seat)
    out = {k: np.full(n, np.nan, np.float32) for k in ("ahead", "round", "round_se", "game")}
    runs = [("ahead", rollouts, dict(horizon_ms=ahead_ms)), ("round", rollouts, {}),
            ("game", game_rollouts, dict(horizon_ms=int(state.config.max_game_ms),
                                         whole_game=True))]
    for a in range(0, n, chunk):
        idx = np.arange(a, min(a + chunk, n))
        part = core.copy_rows(state, idx)
        for kind, (name, count, how) in enumerate(runs):
            if count == 0:
                continue
            sims = _determinized(part, seat[idx], keys[idx], count, kind)
            v = engine.rollout(sims, np.repeat(seat[idx], count), **how).reshape(idx.size, count)
            out[name][idx] = v.mean(axis=1)
            if name == "round" and count > 1:
                out["round_se"][idx] = v.std(axis=1, ddof=1) / np.sqrt(count)
    return out


@dataclass(frozen=True)
class ValueJob:
    """A chunk of the games of a collection: ``count`` game ids from ``first``."""

    first: int
    count: int

    @property
    def game_ids(self) -> np.ndarray:
        """(count,) int64 the job's game ids."""
        return np.arange(self.first, self.first + self.count, dtype=np.int64)


def data_jobs(games: int, per_job: int) -> list[ValueJob]:
    """``games`` game ids (0 to games - 1) in jobs of ``per_job`` (the last may be smaller)."""
    check_int("games", games, 1)
    check_int("per_job", per_job, 1)
    return [ValueJob(a, min(per_job, games - a)) for a in range(0, games, per_job)]


def play_value_jobs(jobs: Sequence[ValueJob], *, sources: Sequence[str], rate: float,
                    rollouts: int, game_rollouts: int, ahead_ms: int = 2000, seed: int = 0,
                    config: SpitConfig | None = None, win_weight: float = 2.0,
                    batch_size: int = 128) -> list[ValueData]:
    """Each job's positions with their targets (a runner's ``play``: picklable with partial).

    Returns:
        one ValueData per job, in order.
    """
    out = []
    for job in jobs:
        got = collect_positions(sources, job.game_ids, rate=rate, seed=seed, config=config,
                                batch_size=batch_size)
        if got is None:
            out.append(_empty(sources, ahead_ms))
            continue
        state, seat, gid, src, outcome = got
        t = rollout_targets(state, seat, rollouts=rollouts, game_rollouts=game_rollouts,
                            ahead_ms=ahead_ms, win_weight=win_weight)
        obs = core.observe(state, np.arange(seat.size), seat)
        targets = {"ahead": t["ahead"], "round": t["round"], "game": t["game"],
                   "outcome": (win_weight * outcome).astype(np.float32)}
        out.append(ValueData(obs, seat, gid, src, state.clock.astype(np.int64), targets,
                             t["round_se"], tuple(sources), ahead_ms))
    return out


def _empty(sources: Sequence[str], ahead_ms: int) -> ValueData:
    """ValueData of no position."""
    i, f = np.zeros(0, np.int64), np.zeros(0, np.float32)
    return ValueData(np.zeros((0, rules.OBS_DIM), np.float32), i, i.copy(), i.copy(), i.copy(),
                     {k: f.copy() for k in TARGETS}, f.copy(), tuple(sources), ahead_ms)
