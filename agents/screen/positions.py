"""The screen's positions: decisions taken from players' games, kept as core-state rows.

A position is one seat's decision with two or more legal moves in a game played by the match
library (``agents.arena.Match``): the game's core state at that moment (every array, hidden cards
included: the screen's players get only the public table built from it), the seat, and that
seat's observation and legal mask. :func:`collect_positions` plays each source player against
``racer`` in both seats and samples the source's decisions uniformly; :class:`Positions` holds
the result as one core state of N rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from functools import partial

import numpy as np

from agents.arena import Match
from spit_env import core, streams
from spit_env.checks import check_int
from spit_env.config import SpitConfig
from spit_env.progress import counted

__all__ = ["Positions", "collect_positions", "state_arrays", "stack_states", "policy_keys"]

#: the hash purpose of the sampling draws: none of a game's own streams (spit_env.streams) uses it
_SAMPLE = 101
#: decisions sampled before the cut to the wanted count, over the count wanted
_OVERSAMPLE = 3.0


@dataclass(eq=False)
class Positions:
    """N decisions: their games' core state, the deciding seat and what that seat saw.

    Attributes:
        state: CoreState of N rows, row i the game at position i (the default rules and club
            latency unless the config says otherwise).
        seat: (N,) int64 the deciding seat.
        obs: (N, D) float32 the seat's observation (``core.observe``).
        masks: (N, 23) bool its legal moves, two or more in every row.
        source: (N,) int64 index into ``sources`` of the player whose decision it is.
        sources: the source players' names.
    """

    state: core.CoreState
    seat: np.ndarray
    obs: np.ndarray
    masks: np.ndarray
    source: np.ndarray
    sources: tuple[str, ...]

    @property
    def size(self) -> int:
        """N, the number of positions."""
        return int(self.seat.size)

    def take(self, idx: np.ndarray) -> Positions:
        """The positions ``idx`` ((n,) integer indices, n >= 1), in that order."""
        idx = np.asarray(idx, np.int64)
        return Positions(core.copy_rows(self.state, idx), self.seat[idx], self.obs[idx],
                         self.masks[idx], self.source[idx], self.sources)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array of the positions by name: the state's fields as ``state.NAME``."""
        out = {f"state.{name}": a for name, a in state_arrays(self.state).items()}
        out.update(seat=self.seat, obs=self.obs, masks=self.masks, source=self.source)
        return out

    @classmethod
    def from_arrays(cls, arrays: dict, config: SpitConfig, sources) -> Positions:
        """The positions of :meth:`arrays`' output, their state rebuilt under ``config``.

        Raises:
            ValueError: state fields missing or of other shapes or dtypes than the core's.
            AssertionError: a state whose caches disagree with its arrays (``check_caches``).
        """
        stored = {k.removeprefix("state."): v for k, v in arrays.items()
                  if k.startswith("state.")}
        n = int(np.asarray(arrays["seat"]).size)
        base = core.init(config, max(n, 1), seed=0)
        wanted = state_arrays(base)
        if set(stored) != set(wanted):
            raise ValueError(f"state fields {sorted(set(stored) ^ set(wanted))} differ from "
                             "the core's")
        for name, arr in stored.items():
            if arr.shape[1:] != wanted[name].shape[1:] or arr.shape[0] != n \
                    or arr.dtype != wanted[name].dtype:
                raise ValueError(f"state.{name} has shape {arr.shape} dtype {arr.dtype}, the "
                                 f"core's ({n}, ...) {wanted[name].dtype}")
        state = replace(base, **stored)
        core.check_caches(state)
        return cls(state, np.asarray(arrays["seat"]).astype(np.int64),
                   np.asarray(arrays["obs"], np.float32), np.asarray(arrays["masks"], bool),
                   np.asarray(arrays["source"]).astype(np.int64), tuple(sources))

    def __reduce__(self):
        # the arrays and the config: a core state's pickle would carry its lookup tables
        return (_rebuild, (self.arrays(), self.state.config.to_dict(), self.sources))

    def table(self, idx: np.ndarray | None = None) -> core.PublicTable:
        """The public table of positions ``idx`` (all: None), each from its deciding seat."""
        idx = np.arange(self.size) if idx is None else np.asarray(idx, np.int64)
        return core.public_table(self.state, idx, self.seat[idx])


def _rebuild(arrays: dict, config: dict, sources) -> Positions:
    return Positions.from_arrays(arrays, SpitConfig.from_dict(config), sources)


def policy_keys(state: core.CoreState, seat: np.ndarray) -> np.ndarray:
    """(N,) uint64 the key of each position's policy stream: the game's, at that decision.

    ``draw(game key, POLICY, seat, decision index)``, the key an environment hands a policy
    at that decision (``spit_env.streams``), so every player draws from the position's own
    stream whatever other positions it is asked with.
    """
    idx = np.arange(state.batch_size)
    return streams.draw(state.key, streams.POLICY, seat,
                        state.decisions[idx, seat].astype(np.int64))


def state_arrays(state: core.CoreState) -> dict[str, np.ndarray]:
    """Every per-row array of ``state`` by field name (batch axis first)."""
    return {f.name: getattr(state, f.name) for f in fields(state)
            if isinstance(getattr(state, f.name), np.ndarray)}


def stack_states(states: Sequence[core.CoreState]) -> core.CoreState:
    """One CoreState of the rows of ``states`` in order (same config and latency models).

    Raises:
        ValueError: no state, or states of other configs or latency models.
    """
    if not states:
        raise ValueError("stack_states needs at least one state")
    first = states[0]
    for st in states[1:]:
        if st.config != first.config or st.latency_models != first.latency_models:
            raise ValueError("stack_states: the states must share one config and latency models")
    arrays = {name: np.concatenate([state_arrays(st)[name] for st in states])
              for name in state_arrays(first)}
    return replace(first, **arrays)


def _sample_draws(state: core.CoreState, idx: np.ndarray, seat: int) -> np.ndarray:
    """(n,) float64 in [0, 1): the sampling draw of each decision, a hash of the game's key."""
    h = streams.draw(state.key[idx], _SAMPLE, seat, state.decisions[idx, seat].astype(np.int64))
    return (h >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


class _Recorder:
    """A Match trace that keeps seat ``seat``'s decisions whose sampling draw is below ``p``."""

    def __init__(self, seat: int, p: float):
        self.seat, self.p = seat, p
        self.states: list[core.CoreState] = []
        self.draws: list[np.ndarray] = []

    def __call__(self, state: core.CoreState, game_ids: np.ndarray) -> None:
        idx = np.flatnonzero((game_ids >= 0) & state.free[:, self.seat]
                              & ~(state.terminated | state.truncated))
        if idx.size == 0:
            return
        masks = core.legal_action_mask(state, idx, np.full(idx.size, self.seat))
        idx = idx[masks.sum(axis=1) >= 2]
        if idx.size == 0:
            return
        u = _sample_draws(state, idx, self.seat)
        keep = u < self.p
        if keep.any():
            self.states.append(core.copy_rows(state, idx[keep]))
            self.draws.append(u[keep])


def _sample(match: Callable[[], Match], seat: int, p: float, progress):
    """Play the games of ``match()``; the sampled decisions of ``seat`` with distinct observations.

    Returns:
        ``(state, u)``: the decisions' states and draws; of decisions with the same observation
        the one of the lowest draw is kept, so a larger ``p`` keeps the same ones and more.
    """
    rec = _Recorder(seat, p)
    match().run(trace=rec, progress=progress)
    if not rec.states:
        return None, np.zeros(0)
    st = stack_states(rec.states)
    u = np.concatenate(rec.draws)
    by_draw = np.argsort(u, kind="stable")
    obs = core.observe(st, by_draw, np.full(u.size, seat))
    _, first = np.unique(obs, axis=0, return_index=True)
    keep = np.sort(by_draw[first])
    return core.copy_rows(st, keep), u[keep]


def collect_positions(sources: Sequence[str], per_source: int, *, games: int, seed: int = 0,
                      config: SpitConfig | None = None, opponent: str = "racer",
                      decisions_per_game: float = 200.0, batch_size: int = 128,
                      progress: Callable[[int], None] | None = None) -> Positions:
    """Sample ``per_source`` decisions of each source player from its games against ``opponent``.

    Source k plays ``games`` games in seat 0 and ``games`` in seat 1 (game ids ``2 k games``
    onwards of ``seed``, other deals for every source and seat). Every decision of the source's
    seat with two or more legal moves gets a draw in [0, 1) hashed from its game's key, seat and
    decision index; the ``per_source`` decisions with the lowest draws are kept (half from each
    seat, the rest of an odd count from seat 0): a uniform sample of the source's decisions,
    which depends on the seed alone. Of decisions with the same observation one is kept (the
    one of the lowest draw within a source's seat; across them, the first source's), so every
    position is a distinct observation and a source may end with a few fewer than
    ``per_source``.

    Args:
        sources: players (registered names or profiles) whose decisions are sampled.
        per_source: positions per source, >= 2.
        games: games per source and seat, >= 1.
        seed: the game seed.
        config: the games' config (default ``SpitConfig()``: the rules, club latency).
        opponent: the source's opponent.
        decisions_per_game: the expected decisions with a choice per seat and game, for the
            sampling rate (a low guess costs memory; a high one replays the games with a higher
            rate, which keeps the same decisions).
        batch_size: games stepped at once.
        progress: called with the number of games just finished.

    Returns:
        Positions in source order, then seat, game id and decision order.

    Raises:
        ValueError: bad counts, an unknown player, or fewer decisions in the games than wanted.
    """
    check_int("per_source", per_source, 2)
    check_int("games", games, 1)
    config = config or SpitConfig()
    parts, seats, source = [], [], []
    for k, name in enumerate(sources):
        for s in (0, 1):
            want = per_source // 2 + (per_source % 2 if s == 0 else 0)
            pair = (name, opponent) if s == 0 else (opponent, name)
            match = partial(Match, *pair, np.arange((2 * k + s) * games, (2 * k + s + 1) * games),
                            config=config, seed=seed, batch_size=batch_size)
            p = min(1.0, _OVERSAMPLE * want / (games * decisions_per_game))
            while True:
                st, u = _sample(match, s, p, progress)
                if u.size >= want or p == 1.0:
                    break
                p = min(1.0, 4 * p)  # the same lowest draws, from more of them
            if u.size < want:
                raise ValueError(f"{name!r} in seat {s}: {counted(u.size, 'distinct decision')} "
                                 f"in {counted(games, 'game')}, {want:,} wanted: play more games")
            keep = np.sort(np.argsort(u, kind="stable")[:want])
            parts.append(core.copy_rows(st, keep))
            seats.append(np.full(want, s, np.int64))
            source.append(np.full(want, k, np.int64))
    state = stack_states(parts)
    seat, src = np.concatenate(seats), np.concatenate(source)
    idx = np.arange(state.batch_size)
    obs = core.observe(state, idx, seat)
    _, first_seen = np.unique(obs, axis=0, return_index=True)  # across sources and seats too
    order = np.sort(first_seen)
    order = order[np.lexsort((state.decisions[order, seat[order]], state.game_id[order],
                              seat[order], src[order]))]
    state, seat, src, obs = core.copy_rows(state, order), seat[order], src[order], obs[order]
    masks = core.legal_action_mask(state, np.arange(order.size), seat)
    return Positions(state, seat, obs, masks, src, tuple(sources))
