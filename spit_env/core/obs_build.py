"""The observation builder: the egocentric float32 vectors of ``rules.OBSERVATION``.

:func:`build_observation` computes the observations of any rows and seats straight from the state
arrays (docs/ENVIRONMENTS.md has the table), every value written once. :class:`ObsCache` keeps
what a whole batch's observation is mostly made of (the one-hot entries of the stock and centre
piles, the centre piles' sizes and rank counts) and :func:`update_observation` brings it up to
date with only what changed since, then writes the rest; both read the layout offsets and
lookup tables built here at import. ``observe.py`` chooses between them and keeps the cache in
the state.
"""

from __future__ import annotations

import numpy as np

from .. import rules
from ..config import SpitConfig
from .arguments import arange
from .state import CoreState
from .tables import (
    CODE_KIND,
    CODE_RANK,
    N_CODES,
    PILE_PAIRS,
    PLACE_FACE_DOWN,
    PLACE_FILLABLE,
    PLACE_UP,
    RANK,
    H,
    N,
    P,
    S,
)

__all__ = ["build_observation", "stall_timer", "ObsCache", "update_observation"]


def stall_timer(cfg: SpitConfig, clock: np.ndarray, last_move: np.ndarray) -> np.ndarray:
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
    assert [f.name for f in rules.OBSERVATION if f.stop <= start] == list(_ROW_FIELDS), (
        "the row fields must come first"
    )
    assert [f.name for f in rules.OBSERVATION if f.start >= start + 2 * width] == list(
        _CENTRE_FIELDS), "the centre fields must come last"
    return start, opps[0].start, width


#: the fields of a vector before its player blocks (the same for both seats of a row), and after
_ROW_FIELDS = ("phase", "one_pile_round", "clock", "round", "stall_timer", "unseen_rank")
_CENTRE_FIELDS = ("centre_top_rank", "centre_size", "centre_rank_count")


#: A player block is the run of ``self_*`` (or ``opp_*``) fields: W floats starting at _SELF0
#: (or _OPP0 = _SELF0 + W), the same layout for both. The row fields fill [0, _SELF0).
_SELF0, _OPP0, _W = _layout_blocks()
_EGO = np.array([[0, 1], [1, 0]], np.intp)  # [seat, egocentric pile c] -> absolute pile
_SELF_OPP = np.array([0, 1], np.intp)  # flat player index ^ this: the seat, then its opponent
#: by phase: the row fields (phase one-hot, then zeros for one_pile_round ... unseen_rank)
_ONE_HOT_ROW = np.eye(3, _SELF0, dtype=np.float32)


def _rel(name: str) -> int:
    """The offset of player field ``name`` within a (self_ or opp_) player block."""
    return rules.OBS["self_" + name].start - _SELF0


# Observation values as float32 lookup tables. A table entry is the float32 of the float64
# quotient, so a lookup gives exactly what dividing in float64 and storing as float32 gives.
_HEIGHT_F = (np.arange(H + 1) / H).astype(np.float32)  # stock_height, by cards in the place
_CARDS_F = (np.arange(N + 1) / N).astype(np.float32)  # spit_count, cards_held, centre_size
# By ``pidx // PILE_PAIRS = s * N_CODES + place code`` of stock place s (the legal-move cache,
# which encodes its face-up rank and whether its top is face down, tables.py): the offset within
# a player block of the place's one-hot face-up rank column (the place's first column when none),
# whether that column is set, and the stock_top_face_down value.
_PLACE_CODES = np.arange(S * N_CODES)
_CODE_OF = _PLACE_CODES % N_CODES
_FACE_UP = (CODE_KIND[_CODE_OF] == PLACE_UP) | (CODE_KIND[_CODE_OF] == PLACE_FILLABLE)
_PLACE_RANK = np.where(_FACE_UP, CODE_RANK[_CODE_OF], 0)  # 1-13 face-up rank, 0 none
_PLACE_ON = (_PLACE_RANK > 0).astype(np.float32)
_PLACE_FD = (CODE_KIND[_CODE_OF] == PLACE_FACE_DOWN).astype(np.float32)
# By the top card + 1 of a centre pile: the column of its one-hot rank, and whether it is set.
_PILE_COL = np.maximum(RANK.astype(np.intp) - 1, 0)
_PILE_ON = (RANK > 0).astype(np.float32)

# offsets, resolved once: _O_* in the whole vector, _B_* within a player block
_O_ONE_PILE, _O_CLOCK = rules.OBS["one_pile_round"].start, rules.OBS["clock"].start
_O_ROUND, _O_STALL = rules.OBS["round"].start, rules.OBS["stall_timer"].start
_O_CTR, _O_CSIZE = rules.OBS["centre_top_rank"].slice, rules.OBS["centre_size"].slice
_O_UNSEEN, _O_CRC = rules.OBS["unseen_rank"].slice, rules.OBS["centre_rank_count"].slice
_O_OPP_MOVE = rules.OBS["opp_move_in_flight"].slice
_B_FD = slice(_rel("stock_top_face_down"), _rel("stock_top_face_down") + S)
_B_HEIGHT = slice(_rel("stock_height"), _rel("stock_height") + S)
_B_SPIT, _B_HELD, _B_SCORE = _rel("spit_count"), _rel("cards_held"), _rel("score")
_B_BUSY, _B_TTL, _B_MOVE = _rel("busy"), _rel("time_to_land"), _rel("move_in_flight")
_B_IDLE = _rel("idle")
#: by ``pidx // PILE_PAIRS``: the offset within a player block of the place's rank column to write
_PLACE_AT = (_rel("stock_top_rank") + rules.N_RANKS * (_PLACE_CODES // N_CODES)
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
_R1 = rules.N_RANKS + 1  # ranks 1-13 and "none" (0)
_F_COPIES = np.float32(rules.RANK_COPIES)


def _unseen(pcode: np.ndarray, centre_ranks: np.ndarray) -> np.ndarray:
    """(n, 13) float32: the unseen_rank field of n rows (what the hidden cards' ranks are).

    ``pcode``: (n, P, S) ``pidx // PILE_PAIRS`` of their stock places (the face-up top ranks);
    ``centre_ranks``: (n, P, 13) the ranks in their centre piles. Every card not seen (face up
    on a stock or in a centre pile) is hidden, so the counts come from what is seen alone.
    """
    n = pcode.shape[0]
    at = (np.arange(n)[:, None] * _R1 + _PLACE_RANK.take(pcode.reshape(n, P * S))).reshape(-1)
    seen = np.bincount(at, minlength=n * _R1).reshape(n, _R1)[:, 1:]
    seen += centre_ranks[:, 0]
    seen += centre_ranks[:, 1]
    return (rules.RANK_COPIES - seen).astype(np.float32) / _F_COPIES


def _idle(moved: np.ndarray, clock: np.ndarray) -> np.ndarray:
    """The idle field of players whose ``moved`` (ms) is given, at their rows' ``clock`` (ms)."""
    return np.minimum((clock - moved) / rules.IDLE_SCALE_MS, 1.0)


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


def build_observation(st: CoreState, idx: np.ndarray | None,
                       sp: np.ndarray | None) -> np.ndarray:
    """The observations of rows ``idx`` (seats ``sp``) from scratch, as ``core.observe`` gives them.

    Shapes: ``idx`` None (every row) or (n,) row indices; ``sp`` None (both seats of each row,
    returns (n, P, D)) or (n,) seats (seat sp[j] of row idx[j], returns (n, D)).

    The output starts as zeros and every value is written once, straight into its place: no
    intermediate block is built and copied. Each player block (the ``self_*`` / ``opp_*``
    fields) is computed once per (row, player) it shows and written to each place it shows in:
    for both seats, player p's block to seat p's ``self_`` place and seat 1 - p's ``opp_``
    place; for one seat per row, the seat's block to ``self_`` and its opponent's to ``opp_``.
    One-hot fields are one scatter of their set entries, small integer fields table lookups.
    Row fields (phase ... unseen_rank) are computed once per row.
    """
    cfg = st.config
    both = sp is None
    n = st.batch_size if idx is None else idx.size
    D = rules.OBS_DIM
    if both:
        obs = np.zeros((n, P, D), np.float32)
        # FP (n, 2): flat player indices (b * P + player) of players 0 and 1 (None: every row's)
        FP = None if idx is None else (idx * P)[:, None] + _SELF_OPP
        # player p's block: seat p's self_ place, then seat 1 - p's opp_ place
        places = (obs[:, :, _SELF0:_OPP0], obs[:, ::-1, _OPP0:_OPP0 + _W])
        starts = _block_starts(n)  # (2, n, 2, 1) flat starts of those places
    else:
        obs = np.zeros((n, D), np.float32)
        FP = (idx * P + sp)[:, None] ^ _SELF_OPP  # the seat, then its opponent
        places = (obs[:, _SELF0:_SELF0 + 2 * _W].reshape(n, 2, _W),)
        starts = (arange(n)[:, None, None] * D + (_SELF0 + _W * _SELF_OPP)[:, None],)
    flat = obs.reshape(-1)
    clock = _take(st.clock, idx)
    pcode = _player_blocks(st, FP, clock, places, flat, starts)

    # the row fields (phase ... unseen_rank), computed once per row: (n, _SELF0) float32
    row = _ONE_HOT_ROW.take(_take(st.phase, idx), axis=0)
    cn = st.centre_n if idx is None else st.centre_n.take(idx, axis=0)  # (n, 2), absolute piles
    cr = st.centre_ranks if idx is None else st.centre_ranks.take(idx, axis=0)  # (n, 2, 13)
    row[:, _O_ONE_PILE] = (cn[:, 0] == 0) | (cn[:, 1] == 0)  # D4
    row[:, _O_CLOCK] = np.minimum(clock / cfg.max_game_ms, 1.0)
    row[:, _O_ROUND] = _take(st.rounds, idx) / cfg.max_rounds
    row[:, _O_STALL] = stall_timer(cfg, clock, _take(st.last_move, idx))  # D17
    row[:, _O_UNSEEN] = _unseen(pcode, cr)  # pcode holds both players of each row
    # the egocentric centre piles (own, opponent's) of each output vector
    if both:
        obs[:, :, :_SELF0] = row[:, None, :]
        ct = st.centre_top if idx is None else st.centre_top.take(idx, axis=0)
        cte, cne, cre = ct[:, _EGO], cn[:, _EGO], cr[:, _EGO]  # (n, seat, egocentric pile)
        at = arange(n * P).reshape(n, P, 1) * D  # flat start of each output vector
    else:
        obs[:, :_SELF0] = row
        # a seat's own pile has the seat's index: FP (the seat, its opponent) indexes them
        cte, cne = st.centre_top.reshape(-1).take(FP), st.centre_n.reshape(-1).take(FP)
        cre = st.centre_ranks.reshape(-1, rules.N_RANKS).take(FP, axis=0)
        at = arange(n)[:, None] * D
    cte = cte.astype(np.intp) + 1
    flat[(at + _O_CTR_AT + _PILE_COL.take(cte)).reshape(-1)] = _PILE_ON.take(cte.reshape(-1))
    obs[..., _O_CSIZE] = _CARDS_F.take(cne)
    obs[..., _O_CRC] = cre.reshape(cre.shape[:-2] + (2 * rules.N_RANKS,)) / _F_COPIES
    if not cfg.observe_opponent_move:
        obs[..., _O_OPP_MOVE] = 0.0
    return obs


_BLOCK_STARTS: dict = {}


def _block_starts(n: int) -> np.ndarray:
    """(2, n, 2, 1) intp: the flat start, in an (n, P, D) output, of player p's block in row j.

    ``[0, j, p]``: seat p's ``self_`` place; ``[1, j, p]``: seat 1 - p's ``opp_`` place.
    Cached per n (read-only), like ``arguments.arange``.
    """
    s = _BLOCK_STARTS.get(n)
    if s is None:
        if len(_BLOCK_STARTS) > 64:
            _BLOCK_STARTS.clear()
        seat = arange(n)[:, None] * P + np.arange(P)  # (n, 2): row j, seat p
        s = np.stack([seat * rules.OBS_DIM + _SELF0, seat[:, ::-1] * rules.OBS_DIM + _OPP0])
        s = _BLOCK_STARTS[n] = s[..., None].astype(np.intp)
        s.flags.writeable = False
    return s


def _player_blocks(st: CoreState, FP, clock: np.ndarray, places, flat: np.ndarray,
                   starts) -> np.ndarray:
    """Write the player blocks of players ``FP`` to each of their ``places`` (zeros on entry).

    ``FP``: (n, 2) flat player indices, or None for players 0 and 1 of every row; ``clock``: the
    (n,) clocks of those rows; ``places``: (n, 2, W) views of the output, one per place a block
    shows in, each being ``flat`` (a flat view of the output) with block (j, k) starting at the
    matching ``starts[i][j, k, 0]``. Returns their places' (n, 2, S) ``pidx // PILE_PAIRS``.
    """
    cfg = st.config
    pcode = _take(st.pidx, FP) // np.int32(PILE_PAIRS)  # (n, 2, S): s * N_CODES + code
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
    idle = _idle(_take(st.moved, FP), clock[:, None])
    for blk, start in zip(places, starts, strict=True):
        flat[(start + rank_at).reshape(-1)] = rank_on
        flat[start.reshape(-1) + move_at] = moving
        blk[:, :, _B_SCAL] = scal
        blk[:, :, _B_IDLE] = idle
    return pcode


# --- the cached observation ---------------------------------------------------------------------
# Most of a vector is one-hot (stock_top_rank, stock_top_face_down, centre_top_rank: 166 of its
# 282 entries) and changes only where a card moves, in about a quarter of the games per step. A
# cache keeps those entries as uint8 0 / 1 and updates the few that changed; the output is the
# cache cast to float32 (0 / 1 cast exactly) with every other entry written over it at each call.
# Those other entries lie in four runs per vector: the head (row fields) and in each player block
# the run stock_height ... idle, made from the state, and the tail (centre_size,
# centre_rank_count), which the cache keeps as float32 (it changes only with a centre pile).
#: a vector's head: the row fields phase ... unseen_rank
_O_HEAD = slice(0, _SELF0)
#: a vector's tail: centre_size, then centre_rank_count
_O_TAIL = slice(_O_CSIZE.start, rules.OBS_DIM)
assert _O_CRC.start == _O_CSIZE.stop and _O_CRC.stop == rules.OBS_DIM, "the vector's tail"
#: a block's run written from the state: stock_height, spit_count, cards_held, score, busy,
#: time_to_land, move_in_flight, idle
_B_RUN = slice(_B_HEIGHT.start, _B_IDLE + 1)
assert [_B_SPIT, _B_HELD, _B_SCORE, _B_BUSY, _B_TTL, _B_MOVE] == list(
    range(_B_HEIGHT.stop, _B_HEIGHT.stop + 6)) and _B_IDLE == _B_MOVE + rules.N_ACTIONS, (
    "stock_height ... time_to_land, move_in_flight, idle")
_R_SPIT, _R_HELD, _R_SCORE, _R_BUSY, _R_TTL, _R_MOVE, _R_IDLE = (
    b - _B_RUN.start for b in (_B_SPIT, _B_HELD, _B_SCORE, _B_BUSY, _B_TTL, _B_MOVE, _B_IDLE))
_SELF_RUN = slice(_SELF0 + _B_RUN.start, _SELF0 + _B_RUN.stop)
_OPP_RUN = slice(_OPP0 + _B_RUN.start, _OPP0 + _B_RUN.stop)
_OPP_RUN_TO_MOVE = slice(_OPP0 + _B_RUN.start, _OPP0 + _B_MOVE)  # a hidden one-hot: the rest
_OPP_IDLE = _OPP0 + _B_IDLE
#: by the action id + 1 of the move in flight (0: none): a run with busy and the
#: move_in_flight one-hot set, the rest 0
_MOVE_RUN = np.zeros((rules.N_ACTIONS + 1, _B_RUN.stop - _B_RUN.start), np.float32)
_MOVE_RUN[1:, _R_BUSY] = 1.0
_MOVE_RUN[1:, _R_MOVE:_R_IDLE] = np.eye(rules.N_ACTIONS, dtype=np.float32)
#: the one-hot entries the cache keeps (the rest of its vector is 0)
_CACHED = tuple(rules.OBS[place + f].slice for place in ("self_", "opp_")
                for f in ("stock_top_rank", "stock_top_face_down")) + (_O_CTR,)
# The quotients in float32 arithmetic equal the tables (float32 of the float64 quotient).
_F_H, _F_N = np.float32(H), np.float32(N)
assert np.array_equal(np.arange(H + 1, dtype=np.int8) / _F_H, _HEIGHT_F) and np.array_equal(
    np.arange(N + 1, dtype=np.int8) / _F_N, _CARDS_F), "float32 quotients"
#: rows per chunk of the output (512 x 2 x 282 float32 = 1.2 MB): the writes after the cast find
#: the chunk in the CPU's cache
_CHUNK = 512
#: offsets of player (or pile) f's entries in the vectors of seat f and seat f ^ 1: its block
#: (the self_ place, the opp_ place) and its centre_top_rank (egocentric pile 0, pile 1)
_AT_BLOCK = np.array([_SELF0, _OPP0], np.intp)
_AT_CTR = _O_CTR_AT.astype(np.intp)
#: by ``pidx // PILE_PAIRS``: the entries a place sets in a block (its rank column, its
#: stock_top_face_down) and their values
_PLACE_SET_AT = np.stack([_PLACE_AT, _B_FD.start + _PLACE_CODES // N_CODES], axis=1)
_PLACE_SET = np.stack([_PLACE_ON, _PLACE_FD], axis=1).astype(np.uint8)
_PILE_ON8 = _PILE_ON.astype(np.uint8)
_PLUS, _MINUS = np.int16(1), np.int16(-1)  # ObsCache.seen's dtype
#: a tail's length, and where its own and its opponent's pile's rank counts start
_T = _O_TAIL.stop - _O_TAIL.start
_T_OWN, _T_OPP = _O_CRC.start - _O_TAIL.start, _O_CRC.start - _O_TAIL.start + rules.N_RANKS
_PAIRS: dict = {}


def _pairs(n: int) -> np.ndarray:
    """(n * P, 2) intp: the flat starts of vectors (b, p) and (b, 1 - p) for f = b * P + p.

    Cached per n (read-only), like ``arguments.arange``.
    """
    r = _PAIRS.get(n)
    if r is None:
        if len(_PAIRS) > 64:
            _PAIRS.clear()
        f = np.arange(n * P, dtype=np.intp)
        r = _PAIRS[n] = np.stack([f, f ^ 1], axis=1) * rules.OBS_DIM
        r.flags.writeable = False
    return r


class ObsCache:
    """What the cached observation keeps of every game, each part updated where it changed.

    ``flags`` (B, P, D) uint8: stock_top_rank, stock_top_face_down and centre_top_rank of both
    seats' vectors, 0 elsewhere, for stock places and centre pile tops equal to the copies kept
    here (``pidx`` (B, P, S) int32, ``centre_top`` (B, P) int8). ``seen`` (B, 13) int16: the
    cards of each rank face up on a stock or in a centre pile (what unseen_rank is made of), and
    ``tail`` (B, P, 28) float32: each vector's centre_size and centre_rank_count, both for centre
    piles whose sizes and rank counts are the copies kept here (``centre_n`` (B, P) int8,
    ``centre_ranks`` (B, P, 13) int8). None of it depends on the config;
    :func:`update_observation` brings it up to date.
    """

    __slots__ = ("flags", "pidx", "centre_top", "centre_ranks", "centre_n", "seen", "tail")

    def __init__(self, st: CoreState, obs: np.ndarray):
        """From ``obs``, ``build_observation(st, None, None)``."""
        self.flags = np.zeros(obs.shape, np.uint8)
        for sl in _CACHED:
            self.flags[:, :, sl] = obs[:, :, sl]
        self.pidx, self.centre_top = st.pidx.copy(), st.centre_top.copy()
        self.centre_ranks, self.centre_n = st.centre_ranks.copy(), st.centre_n.copy()
        # the seen cards of each rank: 4 - unseen (the float32 quarters are exact)
        unseen = obs[:, 0, _O_UNSEEN] * _F_COPIES
        self.seen = (rules.RANK_COPIES - unseen.astype(np.int16)).astype(np.int16)
        self.tail = obs[:, :, _O_TAIL].copy()


def update_observation(st: CoreState, cache: ObsCache, out: np.ndarray) -> np.ndarray:
    """Write the observation of every game of ``st`` into ``out`` ((B, P, D) float32); returns it.

    The cache is first updated where a stock place's card or face, a centre pile's top or its
    cards changed. ``out`` is then, chunk by chunk of rows, the cache's one-hots cast to float32
    with the other entries written over it: each vector's head (phase ... unseen_rank, D4, D17)
    and the runs stock_height ... idle of its two player blocks from the state, its tail
    (centre_size, centre_rank_count) from the cache. The values are exactly those of
    :func:`build_observation`.
    """
    cfg = st.config
    B = st.batch_size
    pairs = _pairs(B)
    flat = cache.flags.reshape(-1)
    _changed_places(st, cache, flat, pairs)
    _changed_centre(st, cache, flat, pairs)
    head = _head(st, cfg, cache.seen)
    run = _run(st, cfg)
    tail = cache.tail
    opp_run = run[:, ::-1]
    hide = not cfg.observe_opponent_move  # the opponent's one-hot stays the cache's 0
    for a in range(0, B, _CHUNK):
        z = slice(a, a + _CHUNK)
        o = out[z]
        np.copyto(o, cache.flags[z])
        o[:, :, _O_HEAD] = head[z]
        o[:, :, _SELF_RUN] = run[z]
        if hide:
            o[:, :, _OPP_RUN_TO_MOVE] = opp_run[z, :, :_R_MOVE]
            o[:, :, _OPP_IDLE] = opp_run[z, :, _R_IDLE]
        else:
            o[:, :, _OPP_RUN] = opp_run[z]
        o[:, :, _O_TAIL] = tail[z]
    return out


def _head(st: CoreState, cfg: SpitConfig, seen: np.ndarray) -> np.ndarray:
    """(B, 1, 20) float32: the row fields phase ... unseen_rank of every game (D4, D17).

    ``seen``: (B, 13) the cards of each rank in sight (:class:`ObsCache`).
    """
    cn, clock = st.centre_n, st.clock
    head = _ONE_HOT_ROW.take(st.phase, axis=0)[:, None, :]
    head[:, 0, _O_ONE_PILE] = (cn[:, 0] == 0) | (cn[:, 1] == 0)  # D4
    head[:, 0, _O_CLOCK] = np.minimum(clock / cfg.max_game_ms, 1.0)
    head[:, 0, _O_ROUND] = st.rounds / cfg.max_rounds
    head[:, 0, _O_STALL] = stall_timer(cfg, clock, st.last_move)  # D17
    np.divide(rules.RANK_COPIES - seen, _F_COPIES, out=head[:, 0, _O_UNSEEN])
    return head


def _run(st: CoreState, cfg: SpitConfig) -> np.ndarray:
    """(B, P, 34) float32: player p's run stock_height ... move_in_flight, idle (D7)."""
    fa, h, spn = st.fl_action, st.height, st.spit_n
    run = _MOVE_RUN.take(fa.astype(np.intp) + 1, axis=0)
    np.divide(h, _F_H, out=run[:, :, :S])
    np.divide(spn, _F_N, out=run[:, :, _R_SPIT])
    np.divide(h[:, :, 0] + h[:, :, 1] + h[:, :, 2] + h[:, :, 3] + h[:, :, 4] + spn, _F_N,
              out=run[:, :, _R_HELD])
    if cfg.scoring == "points":
        run[:, :, _R_SCORE] = np.minimum(st.scores / cfg.target_points, 1.0)
    to_land = np.minimum((st.fl_land - st.clock[:, None]) / rules.TIME_SCALE_MS, 1.0)
    run[:, :, _R_TTL] = np.where(fa >= 0, to_land, 0.0)
    run[:, :, _R_IDLE] = _idle(st.moved, st.clock[:, None])
    return run


def _changed_places(st: CoreState, cache: ObsCache, flat: np.ndarray,
                    pairs: np.ndarray) -> None:
    """stock_top_rank and stock_top_face_down of the places whose code (card, face) changed."""
    f5 = np.flatnonzero(st.pidx != cache.pidx)
    if f5.size == 0:
        return
    pidx = st.pidx.reshape(-1).take(f5)
    old = cache.pidx.reshape(-1).take(f5) // np.int32(PILE_PAIRS)
    new = pidx // np.int32(PILE_PAIRS)
    cache.pidx.reshape(-1)[f5] = pidx
    # a face-up top leaves sight, another comes into it (a card played goes on a centre pile,
    # counted there)
    row = f5 // (P * S)
    seen = cache.seen.reshape(-1)
    for code, sign in ((old, _MINUS), (new, _PLUS)):  # ufunc.at is fast on its own dtype
        r = _PLACE_RANK.take(code)
        up = r > 0
        np.add.at(seen, (row * rules.N_RANKS + r - 1)[up], sign)
    # player f's block in its seat's self_ place and in the other seat's opp_ place: (m, 2)
    base = pairs.take(f5 // S, axis=0) + _AT_BLOCK
    flat[base + _PLACE_AT.take(old)[:, None]] = 0  # first: old and new may share a column
    flat[base[:, :, None] + _PLACE_SET_AT.take(new, axis=0)[:, None, :]] = (
        _PLACE_SET.take(new, axis=0)[:, None, :])


def _changed_centre(st: CoreState, cache: ObsCache, flat: np.ndarray,
                    pairs: np.ndarray) -> None:
    """The seen cards, the tail entries and centre_top_rank where a centre pile changed."""
    g = np.flatnonzero(st.centre_ranks != cache.centre_ranks)  # (b * P + pile) * 13 + rank - 1
    if g.size:
        now = st.centre_ranks.reshape(-1).take(g)
        delta = now.astype(np.int16) - cache.centre_ranks.reshape(-1).take(g)
        cache.centre_ranks.reshape(-1)[g] = now
        np.add.at(cache.seen.reshape(-1), g // (P * rules.N_RANKS) * rules.N_RANKS
                  + g % rules.N_RANKS, delta)
        # pile f = b * P + k: seat k's own (vector f), the other seat's opponent's (vector f ^ 1)
        f, r = g // rules.N_RANKS, g % rules.N_RANKS
        tail = cache.tail.reshape(-1)
        count = now / _F_COPIES
        tail[f * _T + (_T_OWN + r)] = count
        tail[(f ^ 1) * _T + (_T_OPP + r)] = count
    f = np.flatnonzero(st.centre_n != cache.centre_n)
    if f.size:
        n = st.centre_n.reshape(-1).take(f)
        cache.centre_n.reshape(-1)[f] = n
        size = n / _F_N
        tail = cache.tail.reshape(-1)
        tail[f * _T] = size
        tail[(f ^ 1) * _T + 1] = size
    f = np.flatnonzero(st.centre_top != cache.centre_top)
    if f.size == 0:
        return
    top = st.centre_top.reshape(-1).take(f)
    old = cache.centre_top.reshape(-1).take(f).astype(np.intp) + 1
    cache.centre_top.reshape(-1)[f] = top
    # absolute pile f = b * P + k is seat k's own pile (c = 0) and the other seat's c = 1
    at = pairs.take(f, axis=0) + _AT_CTR
    flat[at + _PILE_COL.take(old)[:, None]] = 0
    top = top.astype(np.intp) + 1
    flat[at + _PILE_COL.take(top)[:, None]] = _PILE_ON8.take(top)[:, None]
