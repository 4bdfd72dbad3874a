"""The batched NumPy core: B games of Spit stepped together as a state of arrays.

Every user-facing API (PettingZoo, Gymnasium, SB3 VecEnv) is a view of this module. It follows
docs/RULES.md (decisions D1-D17 and "The time model, exactly") to the millisecond and to the random
draw, and is tested step for step against the scalar reference game (``reference.py``).

Functions (each takes a :class:`CoreState`; ``reset`` and ``step`` update it in place)::

    state = init(config, batch_size, seed=0, *, first_game=0, deals=None)
    state = reset(state, rows, game_ids, deals=None)
    state, out = step(state, actions, *, rows=None, events=False)  # events: bool or names
    legal_action_mask(state, rows=None, seat=None) -> (B, 2, 23) bool (or a part of it)
    observe(state, rows=None, seat=None) -> (B, 2, D) float32, layout rules.OBSERVATION, egocentric
    snapshot(state, row)     -> dict (the snapshot format of the reference game)
    fast_forward(state, rows, seat, max_epochs=None) -> (R,) epochs of forced WAITs skipped

For planning (rollouts on copies of games, never seeing a hidden card or a game's own stream)::

    copy_rows(state, rows, repeats=1) -> CoreState   (n copies of row b: copy_rows(state, [b], n))
    hidden_cards(state, rows=None) -> (R, N) int8
    replace_hidden(state, rows, cards=None, *, rng=None) -> state
    reseed_rows(state, rows, keys) -> state
    public_table(state, rows=None, seat=None) -> PublicTable

Dimension letters (rules.py): B games, P players (2), S stock places (5), H stock height (5),
A actions (23), D observation length, N cards (52).

How the work is organised: the decisions of a step and the first landing are done on whole
columns (every row that steps). Everything that happens to a few rows only (a second landing at
the same millisecond, the D9 stall check after the table changed, spits, round ends, slaps,
re-deals) runs on the subset of rows that need it (``np.nonzero`` then fancy indexing on flat
indices), so a row that needs no such work costs nothing beyond the width of the arrays. No Python
loop runs over games; the loops that exist run over the two players or until no row is stalled.

Legal moves are computed as one uint32 word per seat (bit a = action a legal) from lookup tables:
each stock place keeps an index (``pidx``) that encodes its face-up top rank, whether it can be
moved by FILL and whether it awaits a FLIP; one table lookup per place with the two centre-pile
top ranks gives that place's PLAY / FILL / FLIP bits. The same words serve the action mask, the
legality check of ``step`` and the D9 stall check ("no seat has a table move").

Legend of the short names inside the functions (the arrays are CoreState's):

================  ================================================================================
``R``             (n,) intp row (game) indices a function works on; ``Rj``, ``Rk``, ``Rs``, ``Ro``
                  ... are subsets of them (``j``, ``k`` index into the arrays of the larger set)
``p``, ``pl``     a player / seat 0-1 (absolute, not egocentric); ``pile`` an absolute pile 0-1
``f``, ``f2``     flat seat index ``b * P + p`` into ``arr.reshape(-1)`` of a (B, P) array;
                  ``fp`` the same for a (B, P) centre array (``b * P + pile``)
``f5``            flat stock-place index ``(b * P + p) * S + s`` into a (B, P, S) array
``pidx``          a place's index into the legal-move bits table (``_place_index``)
``bits``          (B, P) uint32 legal-move words (bit a: action a legal), ``_mask_bits``
``tbits``         (B, P) uint32 table bits: PLAY / FILL / FLIP allowed by the cards alone, whatever
                  the phase or move in flight (``_table_bits``); the D9 stall check reads them
``fl_*``          the move in flight of each seat (action, carried card, landing ms), D7
``t``             landing time in ms; ``l0``, ``l1`` the two seats' landing times
``cn``, ``ct``    centre-pile card counts and top cards
``FP``, ``FC``    the observation builder's flat player / egocentric centre-pile indices
``ev``, ``out``   the step's event collector (None: no events) and its StepOutput
``_lut``          a state's lookup tables (``_Tables`` of its config)
================  ================================================================================
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import numpy as np

from . import rules, streams
from .checks import check_int, is_int
from .config import SpitConfig, check_config

__all__ = [
    "CoreState",
    "StepOutput",
    "EventLog",
    "init",
    "reset",
    "step",
    "legal_action_mask",
    "observe",
    "snapshot",
    "copy_rows",
    "hidden_cards",
    "replace_hidden",
    "reseed_rows",
    "PublicTable",
    "public_table",
    "fast_forward",
]

P, S, H = rules.N_PLAYERS, rules.N_STOCKS, rules.MAX_STOCK_HEIGHT
A, N = rules.N_ACTIONS, rules.N_CARDS
PLAY, SLAP, OVER = rules.PHASE_PLAY, rules.PHASE_SLAP, rules.PHASE_OVER

#: landing time of "no move in flight": later than any clock (max_game_ms <= 10**9)
NO_LAND = np.int64(1 << 62)

_RANK = rules.CARD_RANK  # index card + 1 (-1 -> 0)
_KIND = rules.ACTION_KIND
_STOCK = rules.ACTION_STOCK
_PILE = rules.ACTION_PILE
_CARRIES = (_KIND == rules.KIND_PLAY) | (_KIND == rules.KIND_FILL)  # PLAY / FILL carry a card
_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_ALL_CARDS = np.arange(N, dtype=np.int64)
_LAT_SALT = _U64((streams.LATENCY * 0x9E3779B97F4A7C15) & ((1 << 64) - 1))  # as in streams.draw
_TIE_SALT = _U64((streams.TIE * 0x9E3779B97F4A7C15) & ((1 << 64) - 1))
_S30, _S27, _S31, _S48 = _U64(30), _U64(27), _U64(31), _U64(48)
_M1, _M2 = _U64(0xBF58476D1CE4E5B9), _U64(0x94D049BB133111EB)


def _mix64(x: np.ndarray) -> np.ndarray:
    """streams.mix64 for uint64 arrays, without the errstate context.

    streams.mix64 for uint64 arrays (not scalars), without the errstate context: wrapping arithmetic
    on arrays never warns.
    """
    x = x ^ (x >> _S30)
    x *= _M1
    x ^= x >> _S27
    x *= _M2
    x ^= x >> _S31
    return x


def _heights_for(n: int) -> list[int]:
    heights = [0] * S
    for i in range(min(n, rules.STOCK_CARDS)):
        heights[rules.DEAL_PLACE[i]] += 1
    return heights


#: (16, S) int8: the stock heights a D3 layout of n <= 15 cards makes.
_HEIGHTS = np.array([_heights_for(n) for n in range(rules.STOCK_CARDS + 1)], dtype=np.int8)


# Legal moves as bits of a uint32 per seat: bit a = action id a is legal (docs/RULES.md, the
# action-mask table); bit 31 marks "this seat has an empty stock place" (D6) while the bits are
# assembled, before FILL is gated on it.
_BIT = [1 << a for a in range(A)]
_WAIT_BIT = _BIT[rules.WAIT]
_PLAY_BITS = sum(_BIT[rules.PLAY_BASE:rules.FILL_BASE])
_FILL_BITS = sum(_BIT[rules.FILL_BASE:rules.FLIP_BASE])
_FLIP_BITS = sum(_BIT[rules.FLIP_BASE:rules.SLAP_BASE])
_SLAP_BITS = sum(_BIT[rules.SLAP_BASE:])
_TABLE_BITS = _PLAY_BITS | _FILL_BITS | _FLIP_BITS  # the moves that count against a stall (D9)
_EMPTY_BIT = 1 << 31
# place codes: 0 empty, else 1 + face-up rank (0 if face down) + 14 fillable + 28 flippable
_N_CODES = 43
#: (2,) uint32, indexed by the empty bit: FILL is legal only if some place is empty (D6)
_KEEP = np.array([0xFFFFFFFF & ~_FILL_BITS, 0xFFFFFFFF], np.uint32)
#: (6,) uint32 gates indexed by free + 2 * phase: which bits a seat may use (busy / over: WAIT)
_GATE_AND = np.array([0, _TABLE_BITS, 0, 0, 0, 0], np.uint32)
_GATE_OR = np.array(
    [_WAIT_BIT, _WAIT_BIT, _WAIT_BIT, _SLAP_BITS, _WAIT_BIT, _WAIT_BIT],  # D11: no WAIT
    np.uint32,
)
_RANK32 = _RANK.astype(np.int32)


def _bits_table(auto_flip: bool, wrap: bool) -> np.ndarray:
    """The legal-move bits table of a config: (S * 43 * 14 * 14,) uint32.

    (S * 43 * 14 * 14,) uint32: the legal-move bits of stock place s with place code ``code`` when
    the seat's own / the opponent's centre pile has top rank own / opp (0: no pile), at index ``((s
    * 43 + code) * 14 + own) * 14 + opp`` (D1, D4, D5, D6).
    """
    adj = rules.ADJACENT[wrap].astype(np.int64)
    out = np.zeros((S, _N_CODES, 14, 14), np.int64)
    for s in range(S):
        out[s, 0] = _EMPTY_BIT
        for code in range(1, _N_CODES):
            r, kind = (code - 1) % 14, (code - 1) // 14
            out[s, code] = adj[r][:, None] << (1 + 2 * s) | adj[r][None, :] << (2 + 2 * s)
            if kind == 1:
                out[s, code] |= _BIT[rules.FILL_BASE + s]
            if kind == 2 and not auto_flip:
                out[s, code] |= _BIT[rules.FLIP_BASE + s]
    return out.reshape(-1).astype(np.uint32)


def _place_code(top: int, fu: bool, h: int) -> int:
    """The place code of a stock place (0-42).

    The place code: 0 empty, else 1 + face-up rank (0 if face down) + 14 if FILL could move its top
    (face up over at least one card, D6) + 28 if it awaits a FLIP (face down, D5).
    """
    if h == 0:
        return 0
    return 1 + (int(_RANK[top + 1]) if fu else 0) + 14 * (fu and h >= 2) + 28 * (not fu)


#: (53 * 2 * 6,) int32: 196 * place code, at index ((top + 1) * 2 + face_up) * 6 + height
_PCODE196 = np.array([196 * _place_code(top, fu, h) for top in range(-1, N) for fu in (False, True)
                      for h in range(H + 1)], np.int32)


def _place_index(top, fu, h, s) -> np.ndarray:
    """The base index into the bits table of some stock places.

    The base index into the bits table of places with top card ``top``, face-up flag ``fu``, height
    ``h`` and place number ``s`` (arrays that broadcast): (s * 43 + code) * 196.
    """
    code = (
        (np.asarray(top, np.intp) + 1) * 12 + np.asarray(fu, np.intp) * 6 + np.asarray(h, np.intp)
    )
    return _PCODE196.take(code) + np.asarray(s, np.int32) * (_N_CODES * 196)


class _Tables:
    """The lookup tables of one config.

    The lookup tables of one config: latency quantiles of both seats, legal-move bits, rank
    adjacency (D1, D7).
    """

    def __init__(self, config: SpitConfig):
        self.latency = np.concatenate([m.table for m in config.latency]).astype(np.int64)
        self.bits = _bits_table(config.auto_flip, config.wrap_ranks)
        self.adj_flat = rules.ADJACENT[config.wrap_ranks].reshape(-1)


@functools.lru_cache(maxsize=32)
def _tables(config: SpitConfig) -> _Tables:
    """The lookup tables of ``config``, built once per distinct config.

    The tables of ``config``, built once per distinct config (SpitConfig is frozen and hashable, so
    equal configs share them). A state keeps its own (``CoreState._lut``), so the hot path never
    hashes a config.
    """
    return _Tables(config)


# --- the state -----------------------------------------------------------------------------------
@dataclass(eq=False)
class CoreState:
    """The state of B games (batch axis first).

    Cards are ids 0-51 (D2), -1 marks "no card"; entries beyond a pile's count are always -1. Times
    are integer ms. Read the arrays freely but change them only through the core's functions:
    ``top``, ``pidx``, ``centre_top`` and ``lat_key`` are caches that the core keeps in step with
    the rest, and the legal-move bits are cached between ``legal_action_mask`` and ``step``.

    Attributes:
        config: the SpitConfig of every game of the batch.
        seed: the seed of the random streams (``streams.game_key(seed, game_id)``).
        game_id: (B,) int64 game id of each row.
        key: (B,) uint64 random-stream key of each row.
        clock: (B,) int64 clock in ms.
        last_move: (B,) int64 ms at which a card last moved: the last play, fill or flip that
            landed, spit or round start (D17).
        phase: (B,) int8, rules.PHASE_* (play, slap, over).
        rounds: (B,) int16 completed rounds.
        stock: (B, P, S, H) int8 stock cards, bottom -> top.
        height: (B, P, S) int8 cards in each stock place.
        face_up: (B, P, S) bool, whether the top of a place is face up (only a top can be).
        top: (B, P, S) int8 top card of each place (-1 if empty); a cache of ``stock``.
        pidx: (B, P, S) int32 each place's index into the legal-move bits table; a cache of
            (top, face_up, height).
        spit: (B, P, N) int8 spit cards; the next to be turned is at index ``spit_n - 1``.
        spit_n: (B, P) int8 spit cards held.
        centre: (B, P, N) int8 centre piles (absolute index = the seat whose pile it is), bottom ->
            top.
        centre_n: (B, P) int8 cards in each centre pile; centre_top (B, P) int8 its top (-1 empty).
        scores: (B, P) int32 points (points variant, D15; 0 in standard scoring).
        fl_action: (B, P) int8 egocentric action id of the move in flight, -1 when free (D7).
        fl_card: (B, P) int8 card carried by a PLAY / FILL in flight, else -1.
        fl_land: (B, P) int64 landing time of the move in flight (NO_LAND when free).
        decisions: (B, P) int32 decisions made so far (indexes the LATENCY draws).
        winner: (B,) int8, -1 while running, for a draw or on truncation.
        terminated, truncated: (B,) bool, persistent once the game is over.
    """

    config: SpitConfig
    seed: int
    game_id: np.ndarray
    key: np.ndarray
    clock: np.ndarray
    last_move: np.ndarray
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
    scores: np.ndarray
    fl_action: np.ndarray
    fl_card: np.ndarray
    fl_land: np.ndarray
    decisions: np.ndarray
    winner: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    lat_key: np.ndarray  # (B, P) uint64: the LATENCY draw's hash of (key, player), cached

    _ARRAYS = (
        "game_id", "key", "clock", "last_move", "phase", "rounds", "stock", "height", "face_up",
        "top", "pidx", "spit", "spit_n", "centre", "centre_n", "centre_top", "scores", "fl_action",
        "fl_card", "fl_land", "decisions", "winner", "terminated", "truncated", "lat_key",
    )

    def __post_init__(self):
        self._lut = _tables(self.config)  # the config's lookup tables
        self._bits = None  # cache of the legal-move bits, dropped by every change
        self._tbits = None  # cache of the table bits (_table_bits), left valid by step

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


@dataclass
class EventLog:
    """Events of one step of B games (docs/RULES.md "Events").

    Events of one step of B games (docs/RULES.md "Events"), as (N,) int64 arrays grouped by row, in
    occurrence order within a row. ``type`` indexes rules.EVENT_NAMES.
    """

    row: np.ndarray
    type: np.ndarray
    player: np.ndarray
    clock_ms: np.ndarray
    action: np.ndarray
    card: np.ndarray
    pile: np.ndarray
    value: np.ndarray

    def __len__(self) -> int:
        return int(self.row.shape[0])

    def for_row(self, row: int) -> list[dict]:
        """The events of one row as dicts, like the reference game's."""
        lo, hi = np.searchsorted(self.row, [row, row + 1])
        out = []
        for i in range(lo, hi):
            ev = {"type": rules.EVENT_NAMES[int(self.type[i])]}
            for name in rules.EVENT_FIELDS[1:]:
                ev[name] = int(getattr(self, name)[i])
            out.append(ev)
        return out


@dataclass
class StepOutput:
    """What :func:`step` returns next to the state.

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


class _Events:
    """Collects event columns during one step; rows get grouped at the end (stable by row).

    ``keep``: None (every event) or a (len(EVENT_NAMES),) bool array, the event types kept.
    """

    def __init__(self, keep=None):
        self.parts = []
        self.keep = keep

    def add(self, rows, type_, player, clock, action=-1, card=-1, pile=-1, value=0):
        n = len(rows)
        if n == 0:
            return
        if self.keep is not None:
            if not isinstance(type_, np.ndarray):
                if not self.keep[type_]:
                    return
            else:
                k = self.keep[type_]
                if not k.all():
                    n = int(k.sum())
                    if n == 0:
                        return
                    rows, type_, player, clock, action, card, pile, value = (
                        c[k] if isinstance(c, np.ndarray) else c
                        for c in (rows, type_, player, clock, action, card, pile, value))
        # arrays are taken as they are now; a scalar (most columns of most events) is kept as
        # one int and widened to n rows only in log(), which is cheaper than broadcasting here
        cols = [rows, type_, player, clock, action, card, pile, value]
        self.parts.append((n, [np.asarray(c, np.int64) if isinstance(c, np.ndarray) else c
                               for c in cols]))

    def log(self) -> EventLog:
        if not self.parts:
            e = np.zeros(0, np.int64)
            return EventLog(e, e, e, e, e, e, e, e)
        cols = [np.concatenate([c[i] if isinstance(c[i], np.ndarray) else np.full(n, c[i], np.int64)
                                for n, c in self.parts]) for i in range(8)]
        order = np.argsort(cols[0], kind="stable")
        return EventLog(*[c[order] for c in cols])


# --- validation ----------------------------------------------------------------------------------
def _check_rows(rows, batch: int, name: str = "rows") -> np.ndarray:
    arr = np.asarray(rows)
    if arr.shape != (batch,) or arr.dtype != np.bool_:
        raise ValueError(
            f"{name} must be a ({batch},) bool array, got shape {arr.shape} dtype {arr.dtype}"
        )
    return arr


def _check_deals(deals, batch: int):
    if deals is None:
        return None
    if isinstance(deals, (str, bytes)) or not hasattr(deals, "__len__") or len(deals) != batch:
        raise ValueError(
            f"deals must be None or a length-{batch} sequence of None | (pack0, pack1)"
        )
    return [None if d is None else rules.check_deal(d, f"deals[{i}]") for i, d in enumerate(deals)]


def _check_latency(latency_ms, batch: int) -> np.ndarray:
    arr = np.asarray(latency_ms)
    if arr.shape != (batch, P) or arr.dtype.kind not in "iu":
        raise ValueError(
            f"latency_ms must be a ({batch}, {P}) integer array, got shape {arr.shape} "
            f"dtype {arr.dtype}"
        )
    bad = (arr != -1) & ((arr < 1) | (arr > 1_000_000_000))
    if bad.any():
        raise ValueError(f"latency_ms must hold -1 (draw) or whole ms 1..10^9, got {arr[bad][0]}")
    return arr.astype(np.int64, copy=False)


def _check_actions(actions, batch: int) -> np.ndarray:
    arr = np.asarray(actions)
    if arr.shape != (batch, P):
        raise ValueError(f"actions must have shape ({batch}, {P}), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"actions must be integer action ids 0-{A - 1}, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= A):
        raise ValueError(
            f"actions must be action ids 0-{A - 1}, got values {arr.min()}..{arr.max()}"
        )
    return arr


# --- construction --------------------------------------------------------------------------------
def _empty_state(config: SpitConfig, batch: int, seed: int) -> CoreState:
    z = np.zeros
    return CoreState(
        config=config,
        seed=seed,
        game_id=z(batch, np.int64),
        key=z(batch, _U64),
        clock=z(batch, np.int64),
        last_move=z(batch, np.int64),
        phase=z(batch, np.int8),
        rounds=z(batch, np.int16),
        stock=np.full((batch, P, S, H), -1, np.int8),
        height=z((batch, P, S), np.int8),
        face_up=z((batch, P, S), bool),
        top=np.full((batch, P, S), -1, np.int8),
        pidx=_place_index(-1, False, 0, np.arange(S))[None, None, :].repeat(batch, 0).repeat(P, 1),
        spit=np.full((batch, P, N), -1, np.int8),
        spit_n=z((batch, P), np.int8),
        centre=np.full((batch, P, N), -1, np.int8),
        centre_n=z((batch, P), np.int8),
        centre_top=np.full((batch, P), -1, np.int8),
        scores=z((batch, P), np.int32),
        fl_action=np.full((batch, P), -1, np.int8),
        fl_card=np.full((batch, P), -1, np.int8),
        fl_land=np.full((batch, P), NO_LAND, np.int64),
        decisions=z((batch, P), np.int32),
        winner=np.full(batch, -1, np.int8),
        terminated=z(batch, bool),
        truncated=z(batch, bool),
        lat_key=z((batch, P), _U64),
    )


def init(config: SpitConfig | None, batch_size: int, seed: int = 0, *, first_game: int = 0,
         deals=None) -> CoreState:
    """B fresh games: row i plays game ``first_game + i`` of ``seed`` (Game start, D3, D4, D9).

    Args:
        config: the rules (None: ``SpitConfig()``).
        batch_size: B >= 1.
        seed: the seed of the random streams (any integer).
        first_game: the game id of row 0.
        deals: None, or a length-B sequence of None | (pack0, pack1): card-id lists that together
            hold each of the 52 cards once, each pack at least one card (uneven packs allowed);
            None deals by the DEAL stream.

    Returns:
        CoreState. Raises ValueError for a bad config, size, seed, game id or deal.
    """
    config = check_config(config)
    batch = check_int("batch_size", batch_size, 1)
    seed = check_int("seed", seed)
    first_game = check_int("first_game", first_game)
    deals = _check_deals(deals, batch)
    state = _empty_state(config, batch, seed)
    ids = np.arange(batch, dtype=np.int64) + first_game
    _start_games(state, np.arange(batch), ids, deals)
    return state


def reset(state: CoreState, rows, game_ids, deals=None) -> CoreState:
    """Re-start some rows as fresh games (auto-reset). Updates ``state`` in place and returns it.

    Args:
        state: the games.
        rows: (B,) bool, the rows to re-start.
        game_ids: (B,) integer game ids (read where ``rows``).
        deals: None, or a length-B sequence of None | (pack0, pack1) (read where ``rows``).

    Raises:
        ValueError: bad rows, game ids or deals (the state is then unchanged).
    """
    batch = state.batch_size
    rows = _check_rows(rows, batch)
    ids = np.asarray(game_ids)
    if ids.shape != (batch,) or ids.dtype.kind not in "iu":
        raise ValueError(f"game_ids must be a ({batch},) integer array, got shape {ids.shape} "
                         f"dtype {ids.dtype}")
    if deals is not None:
        if isinstance(deals, (str, bytes)) or not hasattr(deals, "__len__") or len(deals) != batch:
            raise ValueError(f"deals must be None or a length-{batch} sequence")
        deals = [None if (d is None or not rows[i]) else rules.check_deal(d, f"deals[{i}]")
                 for i, d in enumerate(deals)]
    idx = rows.nonzero()[0]
    if idx.size:
        state._bits = state._tbits = None
        sub = None if deals is None else [deals[i] for i in idx]
        _start_games(state, idx, ids[idx].astype(np.int64), sub)
    return state


def _start_games(st: CoreState, R: np.ndarray, ids: np.ndarray, deals) -> None:
    """Game start for rows R: deal, lay out (D3), spit (D4) and settle (D9) at clock 0."""
    key = streams.game_key(st.seed, ids)
    st.game_id[R] = ids
    st.key[R] = key
    st.lat_key[R] = streams.mix64(
        streams.mix64(key ^ _LAT_SALT)[:, None] ^ np.arange(P, dtype=_U64)
    )
    st.clock[R] = 0
    st.rounds[R] = 0
    st.scores[R] = 0
    st.decisions[R] = 0
    st.winner[R] = -1
    st.terminated[R] = False
    st.truncated[R] = False
    _cancel(st, R)
    n = R.size
    dkeys = streams.draw(key[:, None], streams.DEAL, 0, _ALL_CARDS[None, :])
    order = np.argsort(dkeys, axis=1, kind="stable")
    packs = [order[:, :26], order[:, 26:]]
    counts = [np.full(n, 26), np.full(n, 26)]
    if deals is not None and any(d is not None for d in deals):
        packs = [np.concatenate([pk, np.full((n, 26), -1)], axis=1) for pk in packs]
        for j, d in enumerate(deals):
            if d is None:
                continue
            for p in range(P):
                packs[p][j] = -1
                packs[p][j, : len(d[p])] = d[p]
                counts[p][j] = len(d[p])
    _clear_centre(st, R)
    for p in range(P):
        _layout(st, R, p, packs[p], counts[p])
    _round_start(st, R, None)
    _settle(st, R, None, None)


# --- small state updates (rows R: int index arrays) ---------------------------------------------
def _cancel(st: CoreState, R) -> None:
    st.fl_action[R] = -1
    st.fl_card[R] = -1
    st.fl_land[R] = NO_LAND


def _clear_centre(st: CoreState, R) -> None:
    st.centre[R] = -1
    st.centre_n[R] = 0
    st.centre_top[R] = -1


def _layout(st: CoreState, R: np.ndarray, p: int, pack: np.ndarray, count: np.ndarray) -> None:
    """D3: lay out pack[j, :count[j]] (index 0 dealt first) as player p's stocks and spit cards."""
    st.stock[R, p] = -1
    st.spit[R, p] = -1
    k = np.minimum(count, rules.STOCK_CARDS)
    rr, pos = np.nonzero(np.arange(rules.STOCK_CARDS)[None, :] < k[:, None])
    st.stock[R[rr], p, rules.DEAL_PLACE[pos], rules.DEAL_LEVEL[pos]] = pack[rr, pos]
    h = _HEIGHTS[k]
    st.height[R, p] = h
    st.face_up[R, p] = h > 0
    below = np.maximum(h - 1, 0)[:, :, None].astype(np.intp)
    tops = np.take_along_axis(st.stock[R, p], below, 2)[:, :, 0]
    st.top[R, p] = np.where(h > 0, tops, -1)
    st.pidx[R, p] = _place_index(st.top[R, p], h > 0, h, np.arange(S))
    ns = count - k
    st.spit_n[R, p] = ns
    rr, j = np.nonzero(np.arange(N)[None, :] < ns[:, None])
    # the next spit card (pack index 15) sits at index spit_n - 1
    st.spit[R[rr], p, ns[rr] - 1 - j] = pack[rr, rules.STOCK_CARDS + j]


def _spit(st: CoreState, R: np.ndarray, ev: _Events | None, why) -> None:
    """The spit (D4) in rows R.

    Each player of rows R with spit cards turns its next one onto its own centre pile (D4); a card
    has moved (D17). ``why``: rules.SPIT_*, one value or (R,) per row (the event value).
    """
    st.last_move[R] = st.clock[R]
    sn, cn = st.spit_n.reshape(-1), st.centre_n.reshape(-1)
    spit, centre, ctop = st.spit.reshape(-1), st.centre.reshape(-1), st.centre_top.reshape(-1)
    for p in range(P):
        f2 = R * P + p
        has = sn[f2] > 0
        f2 = f2[has]
        if f2.size == 0:
            continue
        n = sn[f2] - 1
        card = spit[f2 * N + n]
        spit[f2 * N + n] = -1
        sn[f2] = n
        ch = cn[f2]
        centre[f2 * N + ch] = card
        cn[f2] = ch + 1
        ctop[f2] = card
        if ev is not None:
            Rp = f2 // P
            ev.add(Rp, rules.EV_SPIT, p, st.clock[Rp], -1, card, p,
                   why if np.isscalar(why) else why[has])


def _round_start(st: CoreState, R: np.ndarray, ev: _Events | None) -> None:
    """After a layout: spit (D4) and play. The caller runs the stall check."""
    _cancel(st, R)
    st.phase[R] = PLAY
    _spit(st, R, ev, rules.SPIT_ROUND_START)


def _stock_count(st: CoreState, R) -> np.ndarray:
    return st.height[R].sum(axis=2, dtype=np.int32)  # (R, P)


def _finish(st: CoreState, R: np.ndarray, winner: np.ndarray, truncated: bool, out, ev) -> None:
    """Game end: phase over, flags, rewards, ``game_end`` event."""
    st.phase[R] = OVER
    st.winner[R] = winner
    if truncated:
        st.truncated[R] = True
        out.truncated[R] = True
    else:
        st.terminated[R] = True
        out.terminated[R] = True
    won = winner >= 0
    Rw, w = R[won], winner[won].astype(np.intp)
    out.rewards[Rw, w] = 1.0
    out.rewards[Rw, 1 - w] = -1.0
    if ev is not None:
        ev.add(R, rules.EV_GAME_END, winner, st.clock[R], -1, -1, -1,
               rules.GAME_END_TRUNCATED if truncated else rules.GAME_END_TERMINATED)


def _round_end(st: CoreState, R: np.ndarray, first: np.ndarray, cause: int, out, ev) -> np.ndarray:
    """Round end (docs/RULES.md) for rows R.

    Round end (docs/RULES.md) for rows R; ``first``: the player that emptied its stocks / counts as
    first (D12), -1 for a two-pile stall-out. Returns the rows that started a new round at once
    (one-pile rounds, D12 + D13) and need the stall check.
    """
    _cancel(st, R)
    st.rounds[R] += 1
    if ev is not None:
        ev.add(R, rules.EV_ROUND_END, first, st.clock[R], -1, -1, -1, cause)
    held = _stock_count(st, R) + st.spit_n[R]
    nocard = held == 0
    cfg = st.config
    if cfg.scoring == "points":
        st.scores[R] += held  # D15: one point per card held, before the slap
        sc = st.scores[R]
        ended = nocard.any(axis=1) | (sc >= cfg.target_points).any(axis=1)
        winner = np.where(sc[:, 0] < sc[:, 1], 0, np.where(sc[:, 1] < sc[:, 0], 1, -1))
    elif cfg.win_on_empty_hand:
        ended = nocard.any(axis=1)  # D14 house rule: a player holding no card wins
        winner = np.where(
            nocard[:, 0] & ~nocard[:, 1], 0, np.where(nocard[:, 1] & ~nocard[:, 0], 1, -1)
        )
    else:
        # D12, D14: in a one-pile round the player without spit cards (no centre pile) that emptied
        # its stocks first wins.
        f = np.maximum(first, 0).astype(np.intp)
        ar = np.arange(R.size)
        ended = (first >= 0) & nocard[ar, f] & (st.centre_n[R, f] == 0)
        winner = np.where(ended, first, -1)
    if ended.any():
        _finish(st, R[ended], winner[ended], False, out, ev)
    keep = ~ended
    trunc = keep & (st.rounds[R] >= cfg.max_rounds)  # D16
    if trunc.any():
        _finish(st, R[trunc], np.full(int(trunc.sum()), -1), True, out, ev)
    keep &= ~trunc
    two = (st.centre_n[R] > 0).all(axis=1)
    st.phase[R[keep & two]] = SLAP  # D11
    one = keep & ~two
    if not one.any():
        return R[:0]
    # D12: the first player takes nothing, the other takes the (only) centre pile.
    R1 = R[one]
    taker = (1 - first[one]).astype(np.int64)
    _redeal(st, R1, np.stack([taker, taker], axis=1))
    _round_start(st, R1, ev)
    # A player that took nothing with no spit cards left has laid out no card: its places are
    # empty from the start, so the round ends at once (D10 a) and it wins (D12, D14).
    bare = _stock_count(st, R1) == 0
    z = bare.any(axis=1)
    if z.any():
        _round_end(st, R1[z], bare[z].argmax(axis=1), rules.ROUND_END_EMPTIED, out, ev)
        R1 = R1[~z]
    return R1


def _redeal(st: CoreState, R: np.ndarray, take: np.ndarray) -> None:
    """D13: the re-deal of rows R.

    D13: each player's new pack = the pile it took (``take[j, pile]`` = the taker of that pile) +
    its spit + its stock cards, sorted by the REDEAL draw (rounds, card), ties by card id; then laid
    out by D3. Clears the centre.
    """
    n = R.size
    owner = np.full((n, N), -1, np.int64)
    # (entries beyond a pile's count are -1, so ">= 0" finds exactly the cards held)
    c = st.centre[R]
    rr, qq, jj = np.nonzero(c >= 0)
    owner[rr, c[rr, qq, jj]] = take[rr, qq]
    for arr in (st.spit[R].reshape(n, P, -1), st.stock[R].reshape(n, P, -1)):
        rr, pp, jj = np.nonzero(arr >= 0)
        owner[rr, arr[rr, pp, jj]] = pp
    assert (owner >= 0).all(), "re-deal lost a card"
    keys = streams.draw(st.key[R][:, None], streams.REDEAL, st.rounds[R].astype(np.int64)[:, None],
                        _ALL_CARDS[None, :])
    order = np.argsort(keys, axis=1, kind="stable")  # ties by card id
    ar = np.arange(n)[:, None]
    rank = np.empty((n, N), np.int64)
    rank[ar, order] = _ALL_CARDS
    # cards grouped by owner, each group in draw order: player 0's pack, then player 1's
    packs = np.argsort(owner * N + rank, axis=1)
    n0 = (owner == 0).sum(axis=1)
    _clear_centre(st, R)
    _layout(st, R, 0, packs, n0)
    pack1 = np.take_along_axis(packs, np.minimum(n0[:, None] + _ALL_CARDS, N - 1), axis=1)
    _layout(st, R, 1, pack1, N - n0)


def _settle(st: CoreState, R: np.ndarray, out, ev, tbits=None) -> None:
    """The D9 / D17 stall check on rows R, repeated until no row is stalled.

    The D9 stall check on rows R (play phase), repeated until no row is stalled: cancel the moves in
    flight, then spit after ``spit_delay_ms`` or end the round (D10 b).

    ``tbits``: optional (B, P) table bits (``_table_bits``) of every row, valid now; used for the
    first check and kept valid for the rows this changes.
    """
    timeout = st.config.stall_timeout_ms
    cand = R[st.phase[R] == PLAY]
    fresh = tbits is not None
    while cand.size:
        if fresh:
            x = tbits[cand]
            fresh = False
        else:
            x = _table_bits(st, cand)
            if tbits is not None:
                tbits[cand] = x
        no_moves = ((x[:, 0] | x[:, 1]) & np.uint32(_TABLE_BITS)) == 0
        if timeout is None:
            hit = no_moves
        else:  # D17 (never right after a card moved: the timeout is at least 1 ms)
            hit = no_moves | (st.clock[cand] >= st.last_move[cand] + timeout)
        stalled = cand[hit]
        if stalled.size == 0:
            return
        why = np.where(no_moves[hit], rules.SPIT_STALL, rules.SPIT_TIMEOUT)
        _cancel(st, stalled)
        has = st.spit_n[stalled] > 0
        any_spit = has.any(axis=1)
        Rs = stalled[any_spit]
        if Rs.size:
            st.clock[Rs] += st.config.spit_delay_ms
            _spit(st, Rs, ev, why[any_spit])
        Ro = stalled[~any_spit]
        if Ro.size:
            # D10 b, D12: with one pile the player with fewer stock cards counts as first; equal:
            # the player without spit cards (whose centre pile is empty).
            n = _stock_count(st, Ro)
            pileless = np.where(st.centre_n[Ro, 0] == 0, 0, 1)
            first = np.where(n[:, 0] < n[:, 1], 0, np.where(n[:, 1] < n[:, 0], 1, pileless))
            two = (st.centre_n[Ro] > 0).all(axis=1)
            first = np.where(two, -1, first)
            if out is None:  # game start: nothing reports this (a pathological deal)
                out = _blank_out(st.batch_size)
            Rn = _round_end(st, Ro, first, rules.ROUND_END_STALL_OUT, out, ev)
            Rs = np.concatenate([Rs, Rn])
        cand = Rs


def _blank_out(batch: int) -> StepOutput:
    return StepOutput(
        np.zeros((batch, P), np.float32),
        np.zeros(batch, bool),
        np.zeros(batch, bool),
        np.zeros((batch, P), bool),
    )


# --- the mask ------------------------------------------------------------------------------------
def _table_bits(st: CoreState, R=None) -> np.ndarray:
    """The table bits of each seat: (B, P) or (R, P) uint32.

    (B, P) or (R, P) uint32: the PLAY / FILL / FLIP bits the table allows each seat, whatever its
    phase or move in flight (D1, D4, D5, D6), plus the empty-place bit 31.
    """
    t = st._lut
    if R is None:
        ct, pidx = _RANK32[st.centre_top + 1], st.pidx
    else:
        ct, pidx = _RANK32[st.centre_top[R] + 1], st.pidx[R]
    own_opp = ct * 14 + ct[:, ::-1]  # seat p: own pile p, opponent's pile 1 - p
    b = t.bits.take(pidx + own_opp[:, :, None])
    x = b[:, :, 0] | b[:, :, 1] | b[:, :, 2] | b[:, :, 3] | b[:, :, 4]
    return x & _KEEP.take(x >> np.uint32(31))


def _mask_bits(st: CoreState) -> np.ndarray:
    """(B, P) uint32: the legal-move bits (bit a = action a legal), cached until the next change."""
    if st._bits is None:
        if st._tbits is None:
            st._tbits = _table_bits(st)
        tbits = st._tbits
        gate = (st.fl_action < 0) + 2 * st.phase[:, None]
        st._bits = (tbits & _GATE_AND.take(gate)) | _GATE_OR.take(gate)
    return st._bits


def legal_action_mask(state: CoreState, rows=None, seat=None) -> np.ndarray:
    """The legal moves of each seat: (B, P, A) bool, a new array (docs/RULES.md, the mask table).

    A busy seat (move in flight, D7) and a finished game allow only WAIT; a free seat may WAIT,
    PLAY (D1, D4), FILL (D6), FLIP (D5, auto_flip off) in the play phase, and only SLAP (D11, the
    slap is compulsory) in the slap phase. So every mask has at least one legal action.
    Egocentric: pile c = 0 is the seat's own centre pile.

    ``rows`` / ``seat`` select part of it without building the rest (as :func:`observe`):
    rows (B,) bool or (R,) int row indices -> (R, P, A); with seat (an int 0/1 or (R,) int, one
    seat per selected row) -> (R, A), equal to ``legal_action_mask(state)[rows_idx, seat]``.

    Raises:
        ValueError: bad ``rows`` or ``seat``.
    """
    bits = _mask_bits(state)
    if rows is None and seat is None:
        shape = (state.batch_size, P)
    else:
        R, sp = _select(state, rows, seat)
        bits = bits[R] if sp is None else bits[R, sp]
        shape = bits.shape
    u8 = bits.astype("<u4", copy=False).view(np.uint8).reshape(shape + (4,))
    return np.unpackbits(u8, axis=-1, count=A, bitorder="little").view(bool)


def _select(st: CoreState, rows, seat) -> tuple[np.ndarray, np.ndarray | None]:
    """Validate the ``rows`` / ``seat`` arguments of the partial views.

    Validate the ``rows`` / ``seat`` arguments of :func:`observe` and :func:`legal_action_mask`:
    (R,) intp row indices and None or (R,) intp seats.
    """
    B = st.batch_size
    if rows is None:
        R = _arange(B)
    else:
        arr = np.asarray(rows)
        if arr.dtype == np.bool_:
            if arr.shape != (B,):
                raise ValueError(
                    f"rows must be a ({B},) bool array or integer row indices, got bool shape "
                    f"{arr.shape}"
                )
            R = arr.nonzero()[0]
        elif arr.dtype.kind in "iu" and arr.ndim == 1:
            if arr.size and (arr.min() < 0 or arr.max() >= B):
                raise ValueError(
                    f"rows must be row indices 0..{B - 1}, got values {arr.min()}..{arr.max()}"
                )
            R = arr.astype(np.intp, copy=False)
        else:
            raise ValueError(
                f"rows must be a ({B},) bool array or 1-D integer row indices, got shape "
                f"{arr.shape} dtype {arr.dtype}"
            )
    if seat is None:
        return R, None
    if is_int(seat):
        if not 0 <= seat < P:
            raise ValueError(f"seat must be 0 or 1, got {seat!r}")
        return R, np.full(R.size, int(seat), np.intp)
    sp = np.asarray(seat)
    if sp.shape != R.shape or sp.dtype.kind not in "iu":
        raise ValueError(
            f"seat must be 0, 1 or a ({R.size},) integer array (one seat per selected row), "
            f"got shape {sp.shape} dtype {sp.dtype}"
        )
    if sp.size and (sp.min() < 0 or sp.max() >= P):
        raise ValueError(f"seat must hold 0 or 1, got values {sp.min()}..{sp.max()}")
    return R, sp.astype(np.intp, copy=False)


_ARANGE: dict = {}


def _arange(n: int) -> np.ndarray:
    r = _ARANGE.get(n)
    if r is None:
        if len(_ARANGE) > 64:
            _ARANGE.clear()
        r = _ARANGE[n] = np.arange(n, dtype=np.intp)
        r.flags.writeable = False
    return r


# --- the step ------------------------------------------------------------------------------------
def step(state: CoreState, actions, *, rows=None, events: bool = False, latency_ms=None):
    """Advance every game (or the ``rows`` subset) by one decision epoch.

    docs/RULES.md, "The time model, exactly": decisions of the free seats (D7, latency draws),
    landings in time order (D8 ties), the stall check (D9), round ends (D10, D12, D14, D15),
    slaps (D11), re-deals (D13) and truncation (D16). Finished games are a no-op with zero
    rewards.

    Args:
        state: updated in place.
        actions: (B, P) integer egocentric action ids 0-22; a busy seat's action must be WAIT
            (anything else is illegal). Illegal actions become WAIT with an ``illegal`` event
            (``illegal_action="wait"``) or raise (``"raise"``).
        rows: optional (B,) bool, only those rows advance (the others are untouched).
        events: also return the step's events (EventLog): True for all of them, or a
            collection of event type names (``rules.EVENT_NAMES``) to return only those
            (cheaper when few are needed, e.g. ``("round_end",)``).
        latency_ms: optional (B, P) integer ms: where >= 1, the time from decision to landing of
            the move the seat decides this step (WAIT included), instead of its latency draw or
            ``wait_ms`` (D7); -1 keeps the draw. For latencies the core cannot draw, such as a
            human's real reaction; the decision still counts (the draw it replaces is skipped).

    Returns:
        (state, StepOutput).

    Raises:
        ValueError: ``actions`` of the wrong shape / dtype / range, bad ``rows``, ``events`` or
            ``latency_ms``, or an illegal action under ``illegal_action="raise"``; the state is
            then unchanged.
    """
    st = state
    cfg = st.config
    B = st.batch_size
    acts = _check_actions(actions, B).astype(np.intp, copy=False)
    override = None if latency_ms is None else _check_latency(latency_ms, B)
    ev = _event_collector(events)
    active = st.phase != OVER
    if rows is not None:
        active &= _check_rows(rows, B)
    bits = _mask_bits(st)
    legal = ((bits >> acts.astype(np.uint32)) & np.uint32(1)).astype(bool)
    act2 = active[:, None]
    illegal = act2 & ~legal
    any_illegal = illegal.any()
    if any_illegal and cfg.illegal_action == "raise":
        r, p = np.argwhere(illegal)[0]
        allowed = [a for a in range(A) if (int(bits[r, p]) >> a) & 1]
        raise ValueError(
            f"actions[{r}, {p}] = {int(acts[r, p])} ({rules.ACTION_NAMES[int(acts[r, p])]}) is "
            f"not legal now; legal action ids: {allowed}")
    prev_tbits = st._tbits  # valid for every row now (set by _mask_bits above)
    st._bits = st._tbits = None
    out = _blank_out(B)
    out.illegal = illegal
    eff = acts
    if any_illegal:
        eff = np.where(illegal, rules.WAIT, acts)
        # D11: the slap is compulsory; a free player's illegal action in the slap phase becomes a
        # slap of the smaller centre pile (its own when both are equal).
        sub = illegal & (st.phase == SLAP)[:, None] & (st.fl_action < 0)
        if sub.any():
            smaller_is_opp = st.centre_n[:, ::-1] < st.centre_n
            eff = np.where(sub, rules.SLAP_BASE + smaller_is_opp, eff)
        if ev is not None:
            rr, pp = np.nonzero(illegal)
            ev.add(rr, rules.EV_ILLEGAL, pp, st.clock[rr], acts[rr, pp])

    # Decisions (time model 1-3): every free seat of an active row.
    all_rows = bool(active.all())
    R = np.arange(B) if all_rows else active.nonzero()[0]
    if R.size == 0:
        return st, _finish_out(out, ev)
    # A part of the rows (an env stepping only the games whose learner is busy) costs about its
    # share: the per-row work runs on R only, the other rows keep their cached table bits.
    sparse = not all_rows and prev_tbits is not None
    _decide(st, act2 & (st.fl_action < 0), eff, override)

    # Resolution: jump to the earliest landing; land the moves due then, in D8 order.
    if all_rows:
        l0, l1 = st.fl_land[:, 0], st.fl_land[:, 1]
        t = np.minimum(l0, l1)
        st.clock[:] = t
    else:
        lr = st.fl_land[R]
        l0, l1 = lr[:, 0], lr[:, 1]
        t = np.minimum(l0, l1)
        st.clock[R] = t
    lands0 = l0 == t
    both = lands0 & (l1 == t)
    first = (~lands0).astype(np.intp)
    if both.any():
        first[both] = _tie_first(st, R[both], t[both])
    touched = np.zeros(B, bool)  # rows whose table changed or whose round restarted: stall check
    ended, emptied, slapped = _land(st, R, first, touched, ev)
    sel = both & ~ended
    if sel.any():
        _, emptied2, slapped2 = _land(st, R[sel], 1 - first[sel], touched, ev)
        emptied = tuple(np.concatenate(x) for x in zip(emptied, emptied2, strict=True))
        slapped = tuple(np.concatenate(x) for x in zip(slapped, slapped2, strict=True))
    if emptied[0].size:
        touched[emptied[0]] = False
        touched[_round_end(st, emptied[0], emptied[1], rules.ROUND_END_EMPTIED, out, ev)] = True
    if slapped[0].size:
        touched[_slap(st, *slapped, ev)] = True
    # the table bits of every row: the stall check of the touched rows, then the next mask
    if sparse:
        tbits = prev_tbits
        tbits[R] = _table_bits(st, R)
    else:
        tbits = _table_bits(st)
    timeout = cfg.stall_timeout_ms
    if timeout is not None:  # D17: rows where no card moved for the timeout need the check too
        touched[
            R[(st.clock.take(R) >= st.last_move.take(R) + timeout) & (st.phase.take(R) == PLAY)]
        ] = True
    cand = touched.nonzero()[0]
    if cand.size:
        _settle(st, cand, out, ev, tbits)
    st._tbits = tbits

    # D16: truncation by time, after the step.
    if all_rows:
        late = ((st.phase != OVER) & (st.clock >= cfg.max_game_ms)).nonzero()[0]
    else:
        late = R[(st.phase[R] != OVER) & (st.clock[R] >= cfg.max_game_ms)]
    if late.size:
        _finish(st, late, np.full(late.size, -1), True, out, ev)
    return st, _finish_out(out, ev)


def fast_forward(state: CoreState, rows, seat, max_epochs=None) -> np.ndarray:
    """Skip the decision epochs in which ``seat`` can only WAIT and nothing else happens.

    A seat whose only legal move is WAIT (a free seat in the play phase with no table move, D9)
    decides WAIT at each of its decision epochs, and each WAIT lands ``wait_ms`` later and
    changes nothing on the table. While the other seat's move is in flight, those epochs follow
    each other until the other move lands, the D17 stall timeout comes or the game reaches
    ``max_game_ms`` (D16). This function jumps over them: in each selected row where ``seat`` is
    free with WAIT as its only move and the other seat is busy, it plays the k forced WAITs of
    ``seat`` that land strictly before all three (clock + k * wait_ms, k more decisions), leaving
    the seat free at its next decision epoch, again with WAIT as its only move. The state is
    exactly the one that k calls of :func:`step` with WAIT for both seats would give (no
    events, no rewards); other rows are untouched.

    Args:
        state: updated in place.
        rows: (R,) increasing integer row indices or a (B,) bool array.
        seat: 0 / 1, or an (R,) integer array (one seat per selected row).
        max_epochs: None, or an int / (R,) integer array >= 0: skip at most that many epochs
            per row.

    Returns:
        (R,) int64 epochs skipped per selected row (0 where nothing could be skipped).

    Raises:
        ValueError: bad ``rows`` (or a row given twice), ``seat`` or ``max_epochs``.
    """
    st = state
    if seat is None:
        raise ValueError("seat must be 0, 1 or an integer array (one seat per selected row)")
    R, sp = _select(st, rows, seat)
    if R.size > 1 and (R[1:] <= R[:-1]).any():
        raise ValueError("rows must be increasing row indices (each row once) or a bool array")
    if max_epochs is not None:
        cap = np.asarray(max_epochs)
        if cap.dtype.kind not in "iu" or cap.shape not in ((), R.shape) or (cap < 0).any():
            raise ValueError(f"max_epochs must be None or integers >= 0, one or one per row "
                             f"({R.size}), got {max_epochs!r}")
    if R.size == 0:
        return np.zeros(0, np.int64)
    cfg = st.config
    f, fo = R * P + sp, R * P + (1 - sp)
    free = st.fl_action.reshape(-1).take(f) < 0
    forced = (_mask_bits(st).reshape(-1).take(f) & np.uint32(_TABLE_BITS | _SLAP_BITS)) == 0
    other = st.fl_land.reshape(-1).take(fo)  # NO_LAND when free
    clock = st.clock.take(R)
    limit = np.minimum(other, cfg.max_game_ms)
    if cfg.stall_timeout_ms is not None:
        limit = np.minimum(limit, st.last_move.take(R) + cfg.stall_timeout_ms)
    ok = free & forced & (other < NO_LAND) & (st.phase.take(R) == PLAY)
    k = np.where(ok, (limit - clock - 1) // cfg.wait_ms, 0)
    k = np.maximum(k, 0)
    if max_epochs is not None:
        k = np.minimum(k, cap)
    go = k.nonzero()[0]
    if go.size:
        st.clock[R[go]] = clock[go] + k[go] * cfg.wait_ms
        st.decisions.reshape(-1)[f[go]] += k[go].astype(np.int32)
    return k


def _event_collector(events) -> _Events | None:
    """The step's event collector for its ``events`` argument (None: no events)."""
    if events is None or isinstance(events, (bool, np.bool_, int, np.integer)):
        return _Events() if events else None
    if isinstance(events, (str, bytes)) or not hasattr(events, "__iter__"):
        raise ValueError(f"events must be True, False or a collection of event names "
                         f"{rules.EVENT_NAMES}, got {events!r}")
    keep = np.zeros(len(rules.EVENT_NAMES), bool)
    for name in events:
        if name not in rules.EVENT_NAMES:
            raise ValueError(f"events: unknown event name {name!r}; allowed: {rules.EVENT_NAMES}")
        keep[rules.EVENT_NAMES.index(name)] = True
    return _Events(keep)


def _finish_out(out: StepOutput, ev) -> StepOutput:
    if ev is not None:
        out.events = ev.log()
    return out


_STOCK0 = np.maximum(_STOCK, 0).astype(np.intp)


def _decide(st: CoreState, dec: np.ndarray, acts: np.ndarray, override=None) -> None:
    """Time model 2-3: the decisions of the deciding seats.

    For the deciding seats ``dec`` (B, P): landing time (WAIT: wait_ms, else a LATENCY draw for
    (player, decision index), D7, or the ``override`` latency where it is given), carried card,
    decision count.
    """
    # Only the deciding seats are computed, on flat (B * P) indices: a step of a few rows of a
    # large batch (an env running on the games whose learner is busy) costs only their share.
    f = np.flatnonzero(dec)
    if f.size == 0:
        return
    cfg = st.config
    t = st._lut
    a = acts.reshape(-1).take(f)
    with np.errstate(over="ignore"):
        hsh = _mix64(
            st.lat_key.reshape(-1).take(f) + st.decisions.reshape(-1).take(f).astype(_U64) * _GOLDEN
        )
    # top 16 bits (streams.top16); seat p's latency table starts at p * 65536 (p = f % 2)
    lat = t.latency.take((hsh >> _S48).astype(np.intp) + ((f & 1) << 16))
    lat = np.where(a == rules.WAIT, cfg.wait_ms, lat)
    if override is not None:
        given = override.reshape(-1).take(f)
        lat = np.where(given > 0, given, lat)
    land = lat + st.clock.take(f >> 1)
    card = st.top.reshape(-1).take(f * S + _STOCK0.take(a))
    card = np.where(_CARRIES.take(a), card, -1)
    st.fl_land.reshape(-1)[f] = land
    st.fl_action.reshape(-1)[f] = a
    st.fl_card.reshape(-1)[f] = card
    st.decisions.reshape(-1)[f] += 1


def _tie_first(st: CoreState, R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """D8: who lands first when both moves land at ms t."""
    tb = st.config.tie_break
    if tb == "player_0":
        return np.zeros(R.size, np.intp)
    if tb == "player_1":
        return np.ones(R.size, np.intp)
    # streams.draw(key, TIE, t, 0), inlined on uint64 arrays
    h = _mix64(_mix64(st.key[R] ^ _TIE_SALT) ^ t.astype(np.int64).view(_U64))
    return (_mix64(h) & _U64(1)).astype(np.intp)


def _land(st: CoreState, R: np.ndarray, pl: np.ndarray, touched: np.ndarray, ev):
    """Land the move in flight of player pl[j] in row R[j] (time model, "Each landing").

    Marks the rows whose table changed in ``touched``.

    Returns (ended (R,) bool: the landing ended the round or slapped, so the other move due now is
    cancelled; emptied = (rows, player), D10 a; slapped = (rows, player, abs pile, action), D11).
    """
    f2 = R * P + pl
    fa, fc = st.fl_action.reshape(-1), st.fl_card.reshape(-1)
    a = fa[f2].astype(np.intp)
    card = fc[f2]
    fa[f2] = -1
    fc[f2] = -1
    st.fl_land.reshape(-1)[f2] = NO_LAND
    kind = _KIND.take(a)
    ended = np.zeros(R.size, bool)
    emptied = (R[:0], pl[:0])
    slap = (R[:0], pl[:0], pl[:0], a[:0])

    j = (kind == rules.KIND_PLAY).nonzero()[0]
    if j.size:
        Rj, pj, aj, cj = R[j], pl[j], a[j], card[j]
        pile = pj ^ _PILE.take(aj)
        fp = Rj * P + pile
        ct = st.centre_top.reshape(-1)[fp]
        ok = st._lut.adj_flat.take(_RANK32[cj + 1] * 14 + _RANK32[ct + 1])  # D7, D1
        if ev is not None:
            ev.add(Rj, np.where(ok, rules.EV_PLAY, rules.EV_BOUNCE), pj, st.clock[Rj], aj, cj, pile)
        k = ok.nonzero()[0]
        if k.size:
            Rk, pk, ck, fpk = Rj[k], pj[k], cj[k], fp[k]
            cn = st.centre_n.reshape(-1)
            n = cn[fpk]
            st.centre.reshape(-1)[fpk * N + n] = ck
            cn[fpk] = n + 1
            st.centre_top.reshape(-1)[fpk] = ck
            f2k = Rk * P + pk
            h = _pop_stock(st, f2k * S + _STOCK.take(aj[k]))
            touched[Rk] = True
            st.last_move[Rk] = st.clock[Rk]  # D17
            gone = (h == 0).nonzero()[0]
            if gone.size:  # D10 a: all five places empty?
                g = gone[~st.height.reshape(-1, S)[f2k[gone]].any(axis=1)]
                if g.size:
                    emptied = (Rk[g], pk[g])
                    ended[j[k[g]]] = True

    j = (kind == rules.KIND_FILL).nonzero()[0]
    if j.size:
        Rj, pj, aj, cj = R[j], pl[j], a[j], card[j]
        f2j = Rj * P + pj
        dest = np.argmax(st.height.reshape(-1, S)[f2j] == 0, axis=1)  # D6: leftmost empty place
        _pop_stock(st, f2j * S + _STOCK.take(aj))
        fd = f2j * S + dest
        st.stock.reshape(-1)[fd * H] = cj
        st.height.reshape(-1)[fd] = 1
        st.top.reshape(-1)[fd] = cj
        st.face_up.reshape(-1)[fd] = True
        st.pidx.reshape(-1)[fd] = _place_index(cj, True, 1, dest)
        touched[Rj] = True
        st.last_move[Rj] = st.clock[Rj]  # D17
        if ev is not None:
            ev.add(Rj, rules.EV_FILL, pj, st.clock[Rj], aj, cj, -1, dest)

    j = (kind == rules.KIND_FLIP).nonzero()[0]
    if j.size:
        Rj, pj, aj = R[j], pl[j], a[j]
        s = _STOCK.take(aj)
        f5 = (Rj * P + pj) * S + s
        st.face_up.reshape(-1)[f5] = True
        top = st.top.reshape(-1)[f5]
        st.pidx.reshape(-1)[f5] = _place_index(top, True, st.height.reshape(-1)[f5], s)
        touched[Rj] = True
        st.last_move[Rj] = st.clock[Rj]  # D17
        if ev is not None:
            ev.add(Rj, rules.EV_FLIP, pj, st.clock[Rj], aj, top, -1, s)

    j = (kind == rules.KIND_SLAP).nonzero()[0]
    if j.size:
        ended[j] = True
        slap = (R[j], pl[j], pl[j] ^ _PILE.take(a[j]), a[j])
    return ended, emptied, slap


def _pop_stock(st: CoreState, f5: np.ndarray) -> np.ndarray:
    """Remove the top card of some stock places; returns their new heights.

    Remove the top card of the places at flat (B * P * S) indices f5; with auto_flip the new top
    turns face up (D5). Returns the new heights.
    """
    hf = st.height.reshape(-1)
    h = hf[f5] - 1
    hf[f5] = h
    sf = st.stock.reshape(-1)
    base = f5 * H
    sf[base + h] = -1
    top = np.where(h > 0, sf[base + np.maximum(h - 1, 0)], -1)
    st.top.reshape(-1)[f5] = top
    fu = (h > 0) & st.config.auto_flip
    st.face_up.reshape(-1)[f5] = fu
    st.pidx.reshape(-1)[f5] = _place_index(top, fu, h, f5 % S)
    return h


def _slap(st: CoreState, R, pl, pile, action, ev) -> np.ndarray:
    """D11: the slap that lands first, then the re-deal and the next round.

    D11: the first slap to land takes the slapped pile, the other player the other pile; then the
    re-deal (D13) and the next round start.
    """
    if ev is not None:
        ev.add(R, rules.EV_SLAP, pl, st.clock[R], action, -1, pile)
    _cancel(st, R)
    take = np.empty((R.size, P), np.int64)
    ar = np.arange(R.size)
    take[ar, pile] = pl
    take[ar, 1 - pile] = 1 - pl
    _redeal(st, R, take)
    _round_start(st, R, ev)
    return R


# --- views ---------------------------------------------------------------------------------------
def observe(state: CoreState, rows=None, seat=None) -> np.ndarray:
    """Egocentric observations, layout rules.OBSERVATION: (B, P, D) float32, every entry in [0, 1].

    Row [b, p] is seat p's view: ``self_*`` fields are p's, ``opp_*`` the opponent's, centre pile
    c = 0 is p's own. The opponent's move in flight is shown only with
    ``config.observe_opponent_move`` (its busy flag and time to landing always are).

    Args:
        state: the games.
        rows: None (every row), a (B,) bool array or (R,) integer row indices: only those rows
            are computed, (R, P, D) in that order.
        seat: None (both seats), or 0 / 1 / an (R,) integer array (one seat per selected row):
            (R, D), seat ``seat[j]``'s view of row ``rows[j]``. Either way the values are exactly
            those of ``observe(state)[rows][, seat]``; a part costs about its share of the work.

    Returns:
        A new float32 array: (B, P, D), (R, P, D) or (R, D) as above.

    Raises:
        ValueError: bad ``rows`` or ``seat``.
    """
    if rows is None and seat is None:
        return _build_observation(state, None, None)
    R, sp = _select(state, rows, seat)
    return _build_observation(state, R, sp)


def _stall_timer(cfg: SpitConfig, clock: np.ndarray, last_move: np.ndarray) -> np.ndarray:
    """The ``stall_timer`` observation field (D17).

    The ``stall_timer`` observation: ms since a card last moved / stall_timeout_ms, clipped to 1
    (D17); 0 with the timeout off.
    """
    if cfg.stall_timeout_ms is None:
        return np.zeros(clock.shape)
    return np.minimum((clock - last_move) / cfg.stall_timeout_ms, 1.0)


def _layout_blocks() -> tuple[int, int, int]:
    """(start of the self_ block, start of the opp_ block, W) of the observation layout.

    Checks the layout the builder relies on: the row fields come first, then the ``self_*``
    fields, then the ``opp_*`` fields in the same order (a player block of W floats each).
    """
    selfs = [f for f in rules.OBSERVATION if f.name.startswith("self_")]
    opps = [f for f in rules.OBSERVATION if f.name.startswith("opp_")]
    start, width = selfs[0].start, selfs[-1].stop - selfs[0].start
    assert sum(f.size for f in selfs) == width, "self_ fields must be contiguous"
    for f in opps:
        g = rules.OBS["self_" + f.name[4:]]
        assert f.start - opps[0].start == g.start - start and f.size == g.size, (
            "opp_ layout != self_"
        )
    assert opps[0].start == start + width, "the opp_ block must follow the self_ block"
    assert [f.name for f in rules.OBSERVATION[:5]] == [
        "phase", "one_pile_round", "clock", "round", "stall_timer"] and start == 7, (
        "the row fields must come first"
    )
    return start, opps[0].start, width


#: A player block is the run of ``self_*`` (or ``opp_*``) fields: W floats starting at _SELF0
#: (or _OPP0 = _SELF0 + W), the same layout for both. The row fields fill [0, _SELF0).
_SELF0, _OPP0, _W = _layout_blocks()
_EGO = np.array([[0, 1], [1, 0]], np.intp)  # [seat, egocentric pile c] -> absolute pile
_SELF_OPP = np.array([0, 1], np.intp)  # flat player index ^ this: the seat, then its opponent
#: by phase: the row fields (phase one-hot, then zeros for one_pile_round ... stall_timer)
_ONE_HOT_ROW = np.eye(3, _SELF0, dtype=np.float32)


def _rel(name: str) -> int:
    """The offset of player field ``name`` within a (self_ or opp_) player block."""
    return rules.OBS["self_" + name].start - _SELF0


# Observation values as float32 lookup tables. A table entry is the float32 of the float64
# quotient, so a lookup gives exactly what dividing in float64 and storing as float32 gives.
_HEIGHT_F = (np.arange(H + 1) / H).astype(np.float32)  # stock_height, by cards in the place
_CARDS_F = (np.arange(N + 1) / N).astype(np.float32)  # spit_count, cards_held, centre_size
# By ``pidx // 196 = s * 43 + place code`` of stock place s (the legal-move cache, which encodes
# its face-up rank and whether its top is face down): the offset within a player block of the
# place's one-hot face-up rank column (the place's first column when none), whether that column
# is set, and the stock_top_face_down value.
_PLACE_CODES = np.arange(S * _N_CODES)
_PLACE_RANK = np.where(
    (_PLACE_CODES % _N_CODES >= 1) & (_PLACE_CODES % _N_CODES <= 28),
    (_PLACE_CODES % _N_CODES - 1) % 14, 0)  # 1-13 face-up rank, 0 none (empty or face down)
_PLACE_ON = (_PLACE_RANK > 0).astype(np.float32)
_PLACE_FD = (_PLACE_CODES % _N_CODES >= 29).astype(np.float32)
# By the top card + 1 of a centre pile: the column of its one-hot rank, and whether it is set.
_PILE_COL = np.maximum(_RANK.astype(np.intp) - 1, 0)
_PILE_ON = (_RANK > 0).astype(np.float32)

# offsets, resolved once: _O_* in the whole vector, _B_* within a player block
_O_ONE_PILE, _O_CLOCK = rules.OBS["one_pile_round"].start, rules.OBS["clock"].start
_O_ROUND, _O_STALL = rules.OBS["round"].start, rules.OBS["stall_timer"].start
_O_CTR, _O_CSIZE = rules.OBS["centre_top_rank"].slice, rules.OBS["centre_size"].slice
_O_OPP_MOVE = rules.OBS["opp_move_in_flight"].slice
_B_FD = slice(_rel("stock_top_face_down"), _rel("stock_top_face_down") + S)
_B_HEIGHT = slice(_rel("stock_height"), _rel("stock_height") + S)
_B_SPIT, _B_HELD, _B_SCORE = _rel("spit_count"), _rel("cards_held"), _rel("score")
_B_BUSY, _B_TTL, _B_MOVE = _rel("busy"), _rel("time_to_land"), _rel("move_in_flight")
#: by ``pidx // 196``: the offset within a player block of the place's rank column to write
_PLACE_AT = (_rel("stock_top_rank") + rules.N_RANKS * (_PLACE_CODES // _N_CODES)
             + np.maximum(_PLACE_RANK - 1, 0)).astype(np.intp)
#: the block's run of scalar fields (stock_top_face_down ... time_to_land), contiguous
_B_SCAL = slice(_B_FD.start, _B_TTL + 1)
assert _B_SCAL.stop - _B_SCAL.start == 3 * S and _B_MOVE == _B_SCAL.stop, "block layout"
# offsets within that run
_C_FD = slice(_B_FD.start - _B_SCAL.start, _B_FD.stop - _B_SCAL.start)
_C_HEIGHT = slice(_B_HEIGHT.start - _B_SCAL.start, _B_HEIGHT.stop - _B_SCAL.start)
_C_SPIT, _C_HELD, _C_SCORE, _C_BUSY, _C_TTL = (
    b - _B_SCAL.start for b in (_B_SPIT, _B_HELD, _B_SCORE, _B_BUSY, _B_TTL))
#: (2,) the offset of each egocentric centre pile's 13 rank columns in the whole vector
_O_CTR_AT = _O_CTR.start + rules.N_RANKS * np.arange(2)


def _take(arr: np.ndarray, index: np.ndarray | None) -> np.ndarray:
    """``arr`` at flat indices of its batch axes (None: ``arr`` itself).

    A (B,) array is indexed by rows; a (B, P, ...) array by flat player (or pile) indices
    ``b * P + p``, giving ``index.shape + arr.shape[2:]``.
    """
    if index is None:
        return arr
    if arr.ndim > 1:
        arr = arr.reshape((-1,) + arr.shape[2:])
    return arr.take(index, axis=0)


def _build_observation(st: CoreState, R: np.ndarray | None, sp: np.ndarray | None) -> np.ndarray:
    """The observation builder behind :func:`observe` (the only one).

    Shapes: ``R`` None (every row) or (n,) row indices; ``sp`` None (both seats of each row,
    returns (n, P, D)) or (n,) seats (seat sp[j] of row R[j], returns (n, D)).

    The output starts as zeros and every value is written once, straight into its place: no
    intermediate block is built and copied. Each player block (the ``self_*`` / ``opp_*``
    fields) is computed once per (row, player) it shows and written to each place it shows in:
    for both seats, player p's block to seat p's ``self_`` place and seat 1 - p's ``opp_``
    place; for one seat per row, the seat's block to ``self_`` and its opponent's to ``opp_``.
    One-hot fields are one scatter of their set entries, small integer fields table lookups.
    Row fields (phase, clock, round, stall timer) are computed once per row.
    """
    cfg = st.config
    both = sp is None
    n = st.batch_size if R is None else R.size
    D = rules.OBS_DIM
    if both:
        obs = np.zeros((n, P, D), np.float32)
        # FP (n, 2): flat player indices (b * P + player) of players 0 and 1 (None: every row's)
        FP = None if R is None else (R * P)[:, None] + _SELF_OPP
        # player p's block: seat p's self_ place, then seat 1 - p's opp_ place
        places = (obs[:, :, _SELF0:_OPP0], obs[:, ::-1, _OPP0:_OPP0 + _W])
        starts = _block_starts(n)  # (2, n, 2, 1) flat starts of those places
    else:
        obs = np.zeros((n, D), np.float32)
        FP = (R * P + sp)[:, None] ^ _SELF_OPP  # the seat, then its opponent
        places = (obs[:, _SELF0:_SELF0 + 2 * _W].reshape(n, 2, _W),)
        starts = (_arange(n)[:, None, None] * D + (_SELF0 + _W * _SELF_OPP)[:, None],)
    flat = obs.reshape(-1)
    clock = _take(st.clock, R)
    _player_blocks(st, FP, clock, places, flat, starts)

    # the row fields (phase ... stall_timer), computed once per row: (n, 7) float32
    row = _ONE_HOT_ROW.take(_take(st.phase, R), axis=0)
    cn = st.centre_n if R is None else st.centre_n.take(R, axis=0)  # (n, 2), absolute piles
    row[:, _O_ONE_PILE] = (cn[:, 0] == 0) | (cn[:, 1] == 0)  # D4
    row[:, _O_CLOCK] = np.minimum(clock / cfg.max_game_ms, 1.0)
    row[:, _O_ROUND] = _take(st.rounds, R) / cfg.max_rounds
    row[:, _O_STALL] = _stall_timer(cfg, clock, _take(st.last_move, R))  # D17
    # the egocentric centre piles (own, opponent's) of each output vector
    if both:
        obs[:, :, :_SELF0] = row[:, None, :]
        ct = st.centre_top if R is None else st.centre_top.take(R, axis=0)
        cte, cne = ct[:, _EGO], cn[:, _EGO]  # (n, seat, egocentric pile)
        at = _arange(n * P).reshape(n, P, 1) * D  # flat start of each output vector
    else:
        obs[:, :_SELF0] = row
        # a seat's own pile has the seat's index: FP (the seat, its opponent) indexes them
        cte, cne = st.centre_top.reshape(-1).take(FP), st.centre_n.reshape(-1).take(FP)
        at = _arange(n)[:, None] * D
    cte = cte.astype(np.intp) + 1
    flat[(at + _O_CTR_AT + _PILE_COL.take(cte)).reshape(-1)] = _PILE_ON.take(cte.reshape(-1))
    obs[..., _O_CSIZE] = _CARDS_F.take(cne)
    if not cfg.observe_opponent_move:
        obs[..., _O_OPP_MOVE] = 0.0
    return obs


_BLOCK_STARTS: dict = {}


def _block_starts(n: int) -> np.ndarray:
    """(2, n, 2, 1) intp: the flat start, in an (n, P, D) output, of player p's block in row j.

    ``[0, j, p]``: seat p's ``self_`` place; ``[1, j, p]``: seat 1 - p's ``opp_`` place.
    Cached per n (read-only), like :func:`_arange`.
    """
    s = _BLOCK_STARTS.get(n)
    if s is None:
        if len(_BLOCK_STARTS) > 64:
            _BLOCK_STARTS.clear()
        seat = _arange(n)[:, None] * P + np.arange(P)  # (n, 2): row j, seat p
        s = np.stack([seat * rules.OBS_DIM + _SELF0, seat[:, ::-1] * rules.OBS_DIM + _OPP0])
        s = _BLOCK_STARTS[n] = s[..., None].astype(np.intp)
        s.flags.writeable = False
    return s


def _player_blocks(st: CoreState, FP, clock: np.ndarray, places, flat: np.ndarray,
                   starts) -> None:
    """Write the player blocks of players ``FP`` to each of their ``places`` (zeros on entry).

    ``FP``: (n, 2) flat player indices, or None for players 0 and 1 of every row; ``clock``: the
    (n,) clocks of those rows; ``places``: (n, 2, W) views of the output, one per place a block
    shows in, each being ``flat`` (a flat view of the output) with block (j, k) starting at the
    matching ``starts[i][j, k, 0]``.
    """
    cfg = st.config
    pcode = _take(st.pidx, FP) // np.int32(196)  # (n, 2, S): s * 43 + place code
    h = _take(st.height, FP)
    # the scalar fields, side by side as they lie in a block: (n, 2, 15) float32
    scal = np.empty(h.shape[:2] + (_B_SCAL.stop - _B_SCAL.start,), np.float32)
    scal[:, :, _C_FD] = _PLACE_FD.take(pcode)
    scal[:, :, _C_HEIGHT] = _HEIGHT_F.take(h)
    spn = _take(st.spit_n, FP)
    scal[:, :, _C_SPIT] = _CARDS_F.take(spn)
    held = h[:, :, 0] + h[:, :, 1] + h[:, :, 2] + h[:, :, 3] + h[:, :, 4] + spn  # <= 52
    scal[:, :, _C_HELD] = _CARDS_F.take(held)
    if cfg.scoring == "points":
        scal[:, :, _C_SCORE] = np.minimum(
            _take(st.scores, FP) / cfg.target_points, 1.0)
    else:
        scal[:, :, _C_SCORE] = 0.0
    rank_at = _PLACE_AT.take(pcode)  # (n, 2, S)
    rank_on = _PLACE_ON.take(pcode.reshape(-1))
    fa = _take(st.fl_action, FP)
    busy = fa >= 0
    scal[:, :, _C_BUSY] = busy
    to_land = (_take(st.fl_land, FP) - clock[:, None]) / rules.TIME_SCALE_MS
    scal[:, :, _C_TTL] = np.where(busy, np.minimum(to_land, 1.0), 0.0)
    move_at = (_B_MOVE + np.maximum(fa, 0)).reshape(-1)
    moving = busy.reshape(-1).astype(np.float32)
    for blk, start in zip(places, starts, strict=True):
        flat[(start + rank_at).reshape(-1)] = rank_on
        flat[start.reshape(-1) + move_at] = moving
        blk[:, :, _B_SCAL] = scal


def snapshot(state: CoreState, row: int) -> dict:
    """The whole public table of one game as plain Python (the reference game's format).

    Raises:
        ValueError: ``row`` is not an integer 0..B-1.
    """
    st = state
    i = check_int("row", row, 0)
    if i >= st.batch_size:
        raise ValueError(f"row must be in 0..{st.batch_size - 1}, got {i}")
    stock, height, up = st.stock[i].tolist(), st.height[i].tolist(), st.face_up[i].tolist()
    stocks = [[[[c, bool(u and k == h - 1)] for k, c in enumerate(stock[p][s][:h])]
               for s, (h, u) in enumerate(zip(height[p], up[p], strict=True))] for p in range(P)]
    fa, fc, fl = st.fl_action[i].tolist(), st.fl_card[i].tolist(), st.fl_land[i].tolist()
    in_flight = [None if fa[p] < 0 else {"action": fa[p], "card": fc[p], "lands_ms": fl[p]}
                 for p in range(P)]
    spit_n, centre_n = st.spit_n[i].tolist(), st.centre_n[i].tolist()
    return {
        "clock_ms": int(st.clock[i]),
        "last_move_ms": int(st.last_move[i]),
        "round": int(st.rounds[i]),
        "phase": rules.PHASE_NAMES[int(st.phase[i])],
        "stocks": stocks,
        "spit": [st.spit[i, p, : spit_n[p]][::-1].tolist() for p in range(P)],
        "centre": [st.centre[i, q, : centre_n[q]].tolist() for q in range(P)],
        "scores": st.scores[i].tolist(),
        "in_flight": in_flight,
        "decisions": st.decisions[i].tolist(),
        "winner": int(st.winner[i]),
        "terminated": bool(st.terminated[i]),
        "truncated": bool(st.truncated[i]),
    }


# --- planning: copies of rows, hidden cards, fresh random streams, the public table --------------
# What a planning bot needs (agents/planner.py). Every function keeps the 52 cards in place and
# every cache (top, pidx, centre_top, lat_key, the mask bits) valid (testing.check_invariants).
# New per-row arrays of CoreState are carried along without being named here (every ndarray
# field is a per-row array, batch axis first).

#: hidden slots per player: the S * H stock levels, then the N spit positions in turn order
_SLOTS = S * H + N


def _row_arrays(state: CoreState) -> list[str]:
    return [f.name for f in fields(state) if isinstance(getattr(state, f.name), np.ndarray)]


def copy_rows(state: CoreState, rows, repeats: int = 1) -> CoreState:
    """A new batch of copies of some rows of ``state`` (``state`` itself is not changed).

    Row ``j * repeats + k`` of the result (k < ``repeats``) is a copy of row ``rows[j]``, every
    array and cache included (random-stream keys too: see :func:`reseed_rows` for fresh ones).
    ``copy_rows(state, [b], n)`` makes n copies of row b.

    Args:
        state: the batch to copy from.
        rows: (R,) integer row indices (repeats allowed) or a (B,) bool array.
        repeats: copies of each selected row, >= 1.

    Returns:
        CoreState with R * repeats rows (R >= 1), same config and seed.

    Raises:
        ValueError: bad ``rows`` (or none selected) or ``repeats``.
    """
    R, _ = _select(state, rows, None)
    n = check_int("repeats", repeats, 1)
    if R.size == 0:
        raise ValueError("rows must select at least one row")
    if n > 1:
        R = np.repeat(R, n)
    kw = {f.name: getattr(state, f.name) for f in fields(state)}
    for name in _row_arrays(state):
        kw[name] = kw[name][R]
    out = CoreState(**kw)
    # the cached mask bits of a row depend only on that row
    if state._tbits is not None:
        out._tbits = state._tbits[R]
    if state._bits is not None:
        out._bits = state._bits[R]
    return out


def _hidden_slots(st: CoreState, R: np.ndarray):
    """The hidden slots of rows R, in slot order.

    Returns (vals (R, P * _SLOTS) int8 the cards, hidden (R, P * _SLOTS) bool). Per player: stock
    places 0-4, each bottom -> top (a level is hidden below the top, and the top too while face
    down), then the spit cards in the order they will be turned (the next one first).
    """
    n = R.size
    h = st.height[R].astype(np.int16)
    lvl = np.arange(H, dtype=np.int16)
    stock_hidden = lvl < (h - st.face_up[R])[..., None]  # (n, P, S, H)
    sn = st.spit_n[R].astype(np.intp)[..., None]  # (n, P, 1)
    i = np.arange(N)
    spit_hidden = i < sn  # (n, P, N), turn order
    spit_vals = np.take_along_axis(st.spit[R], np.maximum(sn - 1 - i, 0), axis=2)
    vals = np.concatenate([st.stock[R].reshape(n, P, S * H), np.where(spit_hidden, spit_vals, -1)],
                          axis=2).reshape(n, -1)
    hidden = np.concatenate([stock_hidden.reshape(n, P, S * H), spit_hidden], axis=2)
    return vals, hidden.reshape(n, -1)


def _pack(vals: np.ndarray, hidden: np.ndarray) -> np.ndarray:
    """(R, N) int8: the hidden values of each row in slot order, then -1."""
    n = vals.shape[0]
    pos = np.cumsum(hidden, axis=1) - 1  # a hidden slot's place among its row's hidden cards
    out = np.full(n * N, -1, np.int8)
    rr, ss = hidden.nonzero()
    out[rr * N + pos[rr, ss]] = vals[rr, ss]
    return out.reshape(n, N)


def hidden_cards(state: CoreState, rows=None) -> np.ndarray:
    """The cards neither player can see, per row, in slot order.

    Slot order: for player 0 then player 1, the stock places 0-4 each bottom -> top (every card
    under a top, and a top still face down, D5), then the spit cards in the order they will be
    turned (the next one first). Which places are hidden, and how many cards each holds, is
    public (heights, face-up flags, spit counts); the cards are not. Centre piles, face-up tops
    and the cards of moves in flight are seen by both players.

    Args:
        state: the batch.
        rows: None (every row), (R,) integer row indices or a (B,) bool array.

    Returns:
        (R, N) int8 card ids 0-51 packed from index 0, then -1.

    Raises:
        ValueError: bad ``rows``.
    """
    R, _ = _select(state, rows, None)
    return _pack(*_hidden_slots(state, R))


def replace_hidden(state: CoreState, rows, cards=None, *,
                   rng: np.random.Generator | None = None) -> CoreState:
    """Put another arrangement of each row's hidden cards in its hidden slots (in place).

    The arrangement is consistent with the public table: the same cards (the ones no player can
    see) go back into the same hidden slots (same heights, spit counts, face-up cards and centre
    piles), so the 52 cards stay in place and the legal moves do not change. Either ``cards``
    gives the arrangement, or ``rng`` draws one uniformly at random (all orders equally likely).

    Args:
        state: the batch, updated in place.
        rows: (R,) distinct integer row indices or a (B,) bool array.
        cards: (R, K) integers, row j = the hidden cards of row ``rows[j]`` in the slot order of
            :func:`hidden_cards`, then -1 (K <= 52; an array like :func:`hidden_cards` returns).
            Each row must be a permutation of that row's hidden cards.
        rng: a numpy Generator (instead of ``cards``); draws one ``rng.random((R, 52))``.

    Returns:
        ``state``.

    Raises:
        ValueError: not exactly one of ``cards`` / ``rng``, bad or repeated ``rows``, or
            ``cards`` of the wrong shape or not a permutation of a row's hidden cards (naming
            the row); nothing is changed then.
    """
    st = state
    R, _ = _select(st, rows, None)
    if (cards is None) == (rng is None):
        raise ValueError("replace_hidden needs exactly one of cards (an arrangement) or rng "
                         "(to draw one)")
    if np.unique(R).size != R.size:
        raise ValueError("rows must not repeat a row")
    n = R.size
    vals, hidden = _hidden_slots(st, R)
    packed = _pack(vals, hidden)
    count = hidden.sum(axis=1)
    valid = np.arange(N)[None, :] < count[:, None]
    if cards is not None:
        arr = np.asarray(cards)
        if arr.ndim != 2 or arr.shape[0] != n or arr.shape[1] > N or arr.dtype.kind not in "iu":
            raise ValueError(f"cards must be an ({n}, K <= {N}) integer array (one row per "
                             f"selected row), got shape {arr.shape} dtype {arr.dtype}")
        new = np.full((n, N), -1, np.int64)
        new[:, : arr.shape[1]] = arr
        want = np.sort(np.where(valid, packed, N), axis=1)
        got = np.sort(np.where(valid, new, N), axis=1)
        bad = (want != got).any(axis=1) | ((new != -1) & ~valid).any(axis=1)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ValueError(f"cards[{j}] must be a permutation of the {int(count[j])} hidden "
                             f"cards of row {int(R[j])} (then -1), got {arr[j].tolist()}")
        new = new.astype(np.int8)
    else:
        keys = rng.random((n, N))
        keys[~valid] = 2.0  # padding stays behind the hidden cards
        new = np.take_along_axis(packed, np.argsort(keys, axis=1), axis=1)
    vals = vals.copy()
    vals[hidden] = new[valid]  # both in row-major slot order
    vals = vals.reshape(n, P, _SLOTS)
    stock = vals[:, :, : S * H].reshape(n, P, S, H)
    sn = st.spit_n[R].astype(np.intp)[..., None]
    a = np.arange(N)
    turned = np.take_along_axis(vals[:, :, S * H:], np.maximum(sn - 1 - a, 0), axis=2)
    st.stock[R] = stock
    st.spit[R] = np.where(a < sn, turned, -1)
    h = st.height[R]
    top = np.take_along_axis(stock, np.maximum(h - 1, 0)[..., None].astype(np.intp), axis=3)
    top = np.where(h > 0, top[..., 0], -1).astype(np.int8)
    st.top[R] = top
    st.pidx[R] = _place_index(top, st.face_up[R], h, np.arange(S))
    st._bits = st._tbits = None
    return st


def reseed_rows(state: CoreState, rows, keys) -> CoreState:
    """Give rows new random-stream keys (in place).

    Their future latency draws (D7), tie coins (D8) and re-deal shuffles (D13) come from the new
    streams. A planner's rollouts must draw from fresh streams: copies keeping the game's own key
    would foresee its future draws.

    Args:
        state: the batch, updated in place.
        rows: (R,) integer row indices or a (B,) bool array.
        keys: (R,) integers (taken modulo 2**64), e.g. ``rng.integers(0, 2**63, R)``.

    Returns:
        ``state``.

    Raises:
        ValueError: bad ``rows`` or ``keys`` of the wrong shape or dtype.
    """
    st = state
    R, _ = _select(st, rows, None)
    k = np.asarray(keys)
    if k.shape != R.shape or k.dtype.kind not in "iu":
        raise ValueError(f"keys must be a ({R.size},) integer array, got shape {k.shape} "
                         f"dtype {k.dtype}")
    k = streams._u64(k)
    st.key[R] = k
    st.lat_key[R] = streams.mix64(streams.mix64(k ^ _LAT_SALT)[:, None] ^ np.arange(P, dtype=_U64))
    return st


@dataclass(eq=False)
class PublicTable:
    """The public table of R games, each as one seat sees it, as a core state to plan on.

    Everything both players have seen: the snapshot without face-down stock cards and spit
    cards. Made by :func:`public_table`. A policy that declares ``reads_public_table = True`` is
    given one by the runners (``spit_env.policy.call_policy``); it never holds a hidden card's
    identity or a game's random stream.

    Attributes:
        state: CoreState of R rows, a copy of the games in which (1) every hidden card
            (:func:`hidden_cards`) is replaced by a placeholder arrangement: the hidden cards in
            ascending id order in slot order (any arrangement is a valid guess;
            :func:`replace_hidden` draws others); (2) the random-stream keys, game ids and seed
            are 0 (:func:`reseed_rows` gives fresh ones); (3) the opponent's move in flight is a
            WAIT landing at the same time, unless ``config.observe_opponent_move`` (its busy flag
            and landing time are always seen).
        seat: (R,) int64, the seat whose view row j is.
        rows: (R,) int64, the rows of the source state.
    """

    state: CoreState
    seat: np.ndarray
    rows: np.ndarray

    @property
    def batch_size(self) -> int:
        """R, the number of games."""
        return self.state.batch_size


def public_table(state: CoreState, rows=None, seat=None) -> PublicTable:
    """The public table of some rows, each seen from one seat (see :class:`PublicTable`).

    Args:
        state: the games (not changed).
        rows: None (every row), (R,) integer row indices or a (B,) bool array.
        seat: 0 / 1, or (R,) integers (one seat per selected row); None means seat 0.

    Returns:
        PublicTable of R rows (R >= 1).

    Raises:
        ValueError: bad ``rows`` or ``seat``, or no row selected.
    """
    R, sp = _select(state, rows, 0 if seat is None else seat)
    pub = copy_rows(state, R)
    pub.seed = 0
    pub.game_id[:] = 0
    every = _arange(R.size)
    reseed_rows(pub, every, np.zeros(R.size, np.int64))
    packed = _pack(*_hidden_slots(pub, every))
    ascending = np.sort(np.where(packed < 0, N, packed), axis=1)
    replace_hidden(pub, every, np.where(ascending == N, -1, ascending))
    if not state.config.observe_opponent_move:
        opp = 1 - sp
        moving = pub.fl_action[every, opp] >= 0
        pub.fl_action[every[moving], opp[moving]] = rules.WAIT
        pub.fl_card[every[moving], opp[moving]] = -1
        pub._bits = pub._tbits = None
    return PublicTable(pub, sp.astype(np.int64), R.astype(np.int64))
