"""The state of B games (:class:`CoreState`) and what a step returns (:class:`StepOutput`).

:class:`CoreState` holds every game as rows of arrays (batch axis first) plus caches the core
keeps in step with them (``caches.check_caches`` recomputes each one from the arrays it is made
of); :func:`empty_state` is the canvas ``init`` deals on, :func:`blank_output` a step's output
before anything happens.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .. import rules
from ..config import SpitConfig
from .events import EventLog
from .latencies import stacked_table
from .tables import NO_LAND, U64, P, S, place_index, rule_tables

__all__ = ["CoreState", "StepOutput"]


@dataclass(eq=False)
class CoreState:
    """The state of B games (batch axis first).

    Cards are ids 0-51 (D2), -1 marks "no card"; entries beyond a pile's count are always -1. Times
    are integer ms. Read the arrays freely but change them only through the core's functions:
    ``top``, ``pidx``, ``centre_top``, ``centre_ranks`` and ``lat_key`` are caches that the core
    keeps in step with the rest, the legal-move bits are cached between ``legal_action_mask`` and
    ``step``, and ``observe`` keeps the last observation of the batch to update
    (``core.check_caches`` checks them all).

    Attributes:
        config: the SpitConfig of every game of the batch; its ``latency`` is the default of
            ``latency`` below (set per game at the start, ``init`` / ``reset``).
        seed: the seed of the random streams (``streams.game_key(seed, game_id)``).
        latency_models: tuple of the distinct Latency models the games' seats play with (D7).
        latency: (B, P) int32 index into ``latency_models`` of each seat's model; a game's config
            with its own models is ``core.row_config(state, b)``.
        game_id: (B,) int64 game id of each row.
        key: (B,) uint64 random-stream key of each row.
        clock: (B,) int64 clock in ms.
        last_move: (B,) int64 ms at which a card last moved: the last play, fill or flip that
            landed, spit or round start (D17).
        moved: (B, P) int64 ms at which the player last moved a card (a play, fill or flip of
            its own landed) or, if later, of the last spit or round start; ``last_move`` is the
            later of the two.
        phase: (B,) int8, rules.PHASE_* (play, slap, over).
        rounds: (B,) int16 completed rounds.
        stock: (B, P, S, H) int8 stock cards, bottom -> top.
        height: (B, P, S) int8 cards in each stock place.
        face_up: (B, P, S) bool, whether the top of a place is face up (only a top can be).
        top: (B, P, S) int8 top card of each place (-1 if empty); a cache of ``stock``.
        pidx: (B, P, S) int32 each place's index into the legal-move bits table; a cache of
            (top, face_up, height) (``tables.place_index``).
        spit: (B, P, N) int8 spit cards; the next to be turned is at index ``spit_n - 1``.
        spit_n: (B, P) int8 spit cards held.
        centre: (B, P, N) int8 centre piles (absolute index = the seat whose pile it is), bottom ->
            top.
        centre_n: (B, P) int8 cards in each centre pile; centre_top (B, P) int8 its top (-1 empty).
        centre_ranks: (B, P, 13) int8 cards of each rank (rank r at r - 1) in each centre pile;
            a cache of ``centre``.
        scores: (B, P) int32 points (points variant, D15; 0 in standard scoring).
        fl_action: (B, P) int8 egocentric action id of the move in flight, -1 when free (D7).
        fl_card: (B, P) int8 card carried by a PLAY / FILL in flight, else -1.
        fl_land: (B, P) int64 landing time of the move in flight (NO_LAND when free).
        decisions: (B, P) int32 decisions made so far (indexes the LATENCY draws).
        winner: (B,) int8, -1 while running, for a draw or on truncation.
        terminated, truncated: (B,) bool, persistent once the game is over.
        lat_key: (B, P) uint64 the LATENCY draw's hash of (key, player); a cache of ``key``.
    """

    config: SpitConfig
    seed: int
    latency_models: tuple
    latency: np.ndarray
    game_id: np.ndarray
    key: np.ndarray
    clock: np.ndarray
    last_move: np.ndarray
    moved: np.ndarray
    phase: np.ndarray
    rounds: np.ndarray
    stock: np.ndarray
    height: np.ndarray
    face_up: np.ndarray
    top: np.ndarray
    pidx: np.ndarray
    spit: np.ndarray
    spit_n: np.ndarray
    centre: np.ndarray
    centre_n: np.ndarray
    centre_top: np.ndarray
    centre_ranks: np.ndarray
    scores: np.ndarray
    fl_action: np.ndarray
    fl_card: np.ndarray
    fl_land: np.ndarray
    decisions: np.ndarray
    winner: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    lat_key: np.ndarray

    _ARRAYS = (
        "latency", "game_id", "key", "clock", "last_move", "moved", "phase", "rounds", "stock",
        "height", "face_up", "top", "pidx", "spit", "spit_n", "centre", "centre_n", "centre_top",
        "centre_ranks", "scores", "fl_action", "fl_card", "fl_land", "decisions", "winner",
        "terminated", "truncated", "lat_key",
    )

    def __post_init__(self):
        self._lut = rule_tables(self.config)  # the rules' lookup tables
        self._lat_table = stacked_table(self.latency_models)  # their quantile tables, stacked
        self._bits = None  # cache of the legal-move bits, dropped by every change
        self._tbits = None  # cache of the table bits (mask.table_bits), left valid by step
        self._obs = None  # the last observation of the batch (obs_build.ObsCache), see observe

    @property
    def batch_size(self) -> int:
        """B, the number of games."""
        return int(self.clock.shape[0])

    @property
    def free(self) -> np.ndarray:
        """(B, P) bool: the player has no move in flight (D7)."""
        return self.fl_action < 0

    def copy(self) -> CoreState:
        """A deep copy (every array copied)."""
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in self._ARRAYS:
            kw[name] = kw[name].copy()
        return CoreState(**kw)

    def nbytes_per_game(self) -> int:
        """Bytes of state arrays per game."""
        return sum(getattr(self, n).nbytes for n in self._ARRAYS) // max(self.batch_size, 1)


def empty_state(config: SpitConfig, batch: int, seed: int) -> CoreState:
    """B rows of no game (every place empty, no model yet): the canvas of ``init``."""
    z = np.zeros
    return CoreState(
        config=config,
        seed=seed,
        latency_models=(),
        latency=z((batch, P), np.int32),
        game_id=z(batch, np.int64),
        key=z(batch, U64),
        clock=z(batch, np.int64),
        last_move=z(batch, np.int64),
        moved=z((batch, P), np.int64),
        phase=z(batch, np.int8),
        rounds=z(batch, np.int16),
        stock=np.full((batch, P, S, rules.MAX_STOCK_HEIGHT), -1, np.int8),
        height=z((batch, P, S), np.int8),
        face_up=z((batch, P, S), bool),
        top=np.full((batch, P, S), -1, np.int8),
        pidx=place_index(-1, False, 0, np.arange(S))[None, None, :].repeat(batch, 0).repeat(P, 1),
        spit=np.full((batch, P, rules.N_CARDS), -1, np.int8),
        spit_n=z((batch, P), np.int8),
        centre=np.full((batch, P, rules.N_CARDS), -1, np.int8),
        centre_n=z((batch, P), np.int8),
        centre_top=np.full((batch, P), -1, np.int8),
        centre_ranks=z((batch, P, rules.N_RANKS), np.int8),
        scores=z((batch, P), np.int32),
        fl_action=np.full((batch, P), -1, np.int8),
        fl_card=np.full((batch, P), -1, np.int8),
        fl_land=np.full((batch, P), NO_LAND, np.int64),
        decisions=z((batch, P), np.int32),
        winner=np.full(batch, -1, np.int8),
        terminated=z(batch, bool),
        truncated=z(batch, bool),
        lat_key=z((batch, P), U64),
    )


@dataclass
class StepOutput:
    """What ``step`` returns next to the state.

    Attributes:
        rewards: (B, P) float32, +1 winner / -1 loser on the step a game ends, else 0.
        terminated, truncated: (B,) bool, True only on the step the game ends (D14-D16).
        illegal: (B, P) bool, the submitted action was outside the legal mask.
        events: EventLog, or None unless ``step(..., events=True)``.
    """

    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    illegal: np.ndarray
    events: EventLog | None = None


def blank_output(batch: int) -> StepOutput:
    """A StepOutput of B rows where nothing happened (zero rewards, no flag)."""
    return StepOutput(
        np.zeros((batch, P), np.float32),
        np.zeros(batch, bool),
        np.zeros(batch, bool),
        np.zeros((batch, P), bool),
    )
