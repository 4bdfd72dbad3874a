"""The core's constants and lookup tables, built once at import.

Sizes and phases (from ``rules.py``), the legal-move bits of a seat (one uint32 word, bit a =
action a legal), the place codes that the mask and the observation both read, and the random
streams of ``streams.py`` inlined on uint64 arrays.

Place codes. Each stock place is summarised by one code, 0 to ``N_CODES - 1``:

=====================================  ===========================================================
code                                   the place
=====================================  ===========================================================
0                                      empty
1 + rank                               its top face up, alone in the place (rank 1-13)
1 + rank + ``FILLABLE``                its top face up over at least one card: FILL may move it
                                       (D6)
1 + ``FACE_DOWN``                      its top face down: it awaits a FLIP (D5); no rank is shown
=====================================  ===========================================================

``RANK_VALUES`` = 14 counts the rank values 0-13 (0: none), ``FILLABLE`` = 14 and ``FACE_DOWN``
= 28 are the offsets of the second and third run of codes, so ``(code - 1) % RANK_VALUES`` is
the shown rank and ``(code - 1) // RANK_VALUES`` the kind (``CODE_RANK``, ``CODE_KIND``).

A place keeps its index into the legal-move bits table of its config, ``pidx = (s * N_CODES +
code) * PILE_PAIRS`` for place s (``place_index``); the table's ``PILE_PAIRS`` = 14 x 14 entries
from there are the pairs (own, opponent's) centre-pile top rank. So ``pidx // PILE_PAIRS`` is
``s * N_CODES + code``, which the observation decodes (``obs_build.py``).
"""

from __future__ import annotations

import functools

import numpy as np

from .. import rules, streams
from ..config import SpitConfig

P, S, H = rules.N_PLAYERS, rules.N_STOCKS, rules.MAX_STOCK_HEIGHT
A, N = rules.N_ACTIONS, rules.N_CARDS
PLAY, SLAP, OVER = rules.PHASE_PLAY, rules.PHASE_SLAP, rules.PHASE_OVER

#: landing time of "no move in flight": later than any clock (max_game_ms <= 10**9)
NO_LAND = np.int64(1 << 62)

RANK = rules.CARD_RANK  # index card + 1 (-1 -> 0)
RANK32 = RANK.astype(np.int32)
KIND = rules.ACTION_KIND
STOCK = rules.ACTION_STOCK
STOCK0 = np.maximum(STOCK, 0).astype(np.intp)  # the stock place of an action, 0 for none
PILE = rules.ACTION_PILE
CARRIES = (KIND == rules.KIND_PLAY) | (KIND == rules.KIND_FILL)  # PLAY / FILL carry a card
ALL_CARDS = np.arange(N, dtype=np.int64)


def _heights_for(n: int) -> list[int]:
    heights = [0] * S
    for i in range(min(n, rules.STOCK_CARDS)):
        heights[rules.DEAL_PLACE[i]] += 1
    return heights


#: (16, S) int8: the stock heights a D3 layout of n <= 15 cards makes.
HEIGHTS = np.array([_heights_for(n) for n in range(rules.STOCK_CARDS + 1)], dtype=np.int8)

# --- place codes (module docstring) --------------------------------------------------------------
RANK_VALUES = rules.N_RANKS + 1  # a shown rank 1-13, or 0 for none
PILE_PAIRS = RANK_VALUES * RANK_VALUES  # (own, opponent's) centre-pile top ranks
FILLABLE = RANK_VALUES  # code offset of a face-up top over at least one card (D6)
FACE_DOWN = 2 * RANK_VALUES  # code offset of a face-down top (D5)
N_CODES = 1 + 3 * RANK_VALUES
#: the kinds of ``CODE_KIND``: empty, face up alone, face up over a card, face down
PLACE_EMPTY, PLACE_UP, PLACE_FILLABLE, PLACE_FACE_DOWN = -1, 0, 1, 2
_CODES = np.arange(N_CODES)
#: (N_CODES,) the shown rank (0-13) and the kind of each place code
CODE_RANK = np.where(_CODES > 0, (_CODES - 1) % RANK_VALUES, 0)
CODE_KIND = np.where(_CODES > 0, (_CODES - 1) // RANK_VALUES, PLACE_EMPTY)


def place_code(top: int, face_up: bool, height: int) -> int:
    """The place code (module docstring) of a place with this top card, flag and height."""
    if height == 0:
        return 0
    if not face_up:
        return 1 + FACE_DOWN
    return 1 + int(RANK[top + 1]) + FILLABLE * (height >= 2)


_HEIGHT_STEPS = H + 1  # heights 0-5
_FLAG_STEPS = 2 * _HEIGHT_STEPS  # (face-up flag, height) pairs per top card
#: (53 * 2 * 6,) int32: PILE_PAIRS x the place code, at ((top + 1) * 2 + face_up) * 6 + height
_CODE_OFFSET = np.array([PILE_PAIRS * place_code(top, fu, h) for top in range(-1, N)
                         for fu in (False, True) for h in range(H + 1)], np.int32)


def place_index(top, face_up, height, s) -> np.ndarray:
    """The index into the bits table of stock places (arrays that broadcast).

    ``(s * N_CODES + code) * PILE_PAIRS`` of places with top card ``top`` (-1 none), face-up
    flag ``face_up``, height ``height`` and place number ``s``; int32.
    """
    at = (np.asarray(top, np.intp) + 1) * _FLAG_STEPS + np.asarray(face_up, np.intp) * _HEIGHT_STEPS
    return _CODE_OFFSET.take(at + np.asarray(height, np.intp)) + np.asarray(s, np.int32) * (
        N_CODES * PILE_PAIRS)


# --- legal-move bits -----------------------------------------------------------------------------
# Legal moves as bits of a uint32 per seat: bit a = action id a is legal (docs/RULES.md, the
# action-mask table); bit 31 marks "this seat has an empty stock place" (D6) while the bits are
# assembled, before FILL is gated on it.
_BIT = [1 << a for a in range(A)]
WAIT_BIT = _BIT[rules.WAIT]
PLAY_BITS = sum(_BIT[rules.PLAY_BASE:rules.FILL_BASE])
FILL_BITS = sum(_BIT[rules.FILL_BASE:rules.FLIP_BASE])
FLIP_BITS = sum(_BIT[rules.FLIP_BASE:rules.SLAP_BASE])
SLAP_BITS = sum(_BIT[rules.SLAP_BASE:])
TABLE_BITS = PLAY_BITS | FILL_BITS | FLIP_BITS  # the moves that count against a stall (D9)
EMPTY_BIT = 1 << 31
#: (2,) uint32, indexed by the empty bit: FILL is legal only if some place is empty (D6)
KEEP = np.array([0xFFFFFFFF & ~FILL_BITS, 0xFFFFFFFF], np.uint32)
#: (6,) uint32 gates indexed by free + 2 * phase: which bits a seat may use (busy / over: WAIT)
GATE_AND = np.array([0, TABLE_BITS, 0, 0, 0, 0], np.uint32)
GATE_OR = np.array(
    [WAIT_BIT, WAIT_BIT, WAIT_BIT, SLAP_BITS, WAIT_BIT, WAIT_BIT],  # D11: no WAIT
    np.uint32,
)


def _bits_table(auto_flip: bool, wrap: bool) -> np.ndarray:
    """The legal-move bits table of a config: (S * N_CODES * PILE_PAIRS,) uint32.

    At ``place_index(...) + own * RANK_VALUES + opp``: the legal-move bits of that stock place
    when the seat's own / the opponent's centre pile has top rank own / opp (0: no pile), D1, D4,
    D5, D6.
    """
    adj = rules.ADJACENT[wrap].astype(np.int64)
    out = np.zeros((S, N_CODES, RANK_VALUES, RANK_VALUES), np.int64)
    for s in range(S):
        out[s, 0] = EMPTY_BIT
        for code in range(1, N_CODES):
            r, kind = CODE_RANK[code], CODE_KIND[code]
            out[s, code] = adj[r][:, None] << (1 + 2 * s) | adj[r][None, :] << (2 + 2 * s)
            if kind == PLACE_FILLABLE:
                out[s, code] |= _BIT[rules.FILL_BASE + s]
            if kind == PLACE_FACE_DOWN and not auto_flip:
                out[s, code] |= _BIT[rules.FLIP_BASE + s]
    return out.reshape(-1).astype(np.uint32)


class RuleTables:
    """The lookup tables of a config's rules: legal-move bits and rank adjacency (D1, D5, D6)."""

    def __init__(self, auto_flip: bool, wrap_ranks: bool):
        self.bits = _bits_table(auto_flip, wrap_ranks)
        #: (RANK_VALUES * RANK_VALUES,) bool: rank a may go onto rank b at a * RANK_VALUES + b
        self.adj_flat = rules.ADJACENT[wrap_ranks].reshape(-1)


@functools.lru_cache(maxsize=8)
def _rule_tables(auto_flip: bool, wrap_ranks: bool) -> RuleTables:
    return RuleTables(auto_flip, wrap_ranks)


def rule_tables(config: SpitConfig) -> RuleTables:
    """The tables of ``config``'s rules, built once per (auto_flip, wrap_ranks).

    A state keeps its own (``CoreState._lut``), so the hot path never looks them up.
    """
    return _rule_tables(config.auto_flip, config.wrap_ranks)


# --- the random streams (streams.py), inlined on uint64 arrays -----------------------------------
U64 = np.uint64
GOLDEN = U64(0x9E3779B97F4A7C15)
TIE_SALT = U64((streams.TIE * 0x9E3779B97F4A7C15) & ((1 << 64) - 1))  # as in streams.draw
_LAT_SALT = U64((streams.LATENCY * 0x9E3779B97F4A7C15) & ((1 << 64) - 1))
S48 = U64(48)
_S30, _S27, _S31 = U64(30), U64(27), U64(31)
_M1, _M2 = U64(0xBF58476D1CE4E5B9), U64(0x94D049BB133111EB)


def mix64(x: np.ndarray) -> np.ndarray:
    """streams.mix64 for uint64 arrays (not scalars), without the errstate context.

    Wrapping arithmetic on arrays never warns.
    """
    x = x ^ (x >> _S30)
    x *= _M1
    x ^= x >> _S27
    x *= _M2
    x ^= x >> _S31
    return x


def latency_keys(key: np.ndarray) -> np.ndarray:
    """(n, P) uint64: the LATENCY draw's hash of (key, player) for (n,) stream keys.

    ``CoreState.lat_key`` caches it; a decision's draw is then one more hash (``step.py``).
    """
    return streams.mix64(streams.mix64(key ^ _LAT_SALT)[:, None] ^ np.arange(P, dtype=U64))
