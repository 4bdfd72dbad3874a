"""What a planning bot needs (agents/planner.py): copies of games, hidden cards, fresh streams.

Rollouts run on copies of rows (:func:`copy_rows`), with the cards no player can see arranged
anew (:func:`hidden_cards`, :func:`replace_hidden`) and fresh random streams
(:func:`reseed_rows`); :func:`public_table` is the start of all of it, a seat's view of its games
as a core state that holds no hidden card and no game stream. Every function keeps the 52 cards in
place and every cache valid (``caches.check_caches``). New per-row arrays of CoreState are carried
along without being named here (every ndarray field is a per-row array, batch axis first).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .. import rules, streams
from ..checks import check_int
from .arguments import arange, select
from .state import CoreState
from .tables import H, N, P, S, latency_keys, place_index

__all__ = ["copy_rows", "hidden_cards", "replace_hidden", "reseed_rows", "PublicTable",
           "public_table"]

#: hidden slots per player: the S * H stock levels, then the N spit positions in turn order
_SLOTS = S * H + N


def _row_arrays(state: CoreState) -> list[str]:
    return [f.name for f in fields(state) if isinstance(getattr(state, f.name), np.ndarray)]


def copy_rows(state: CoreState, idx=None, repeats: int = 1, *, rows=None) -> CoreState:
    """A new batch of copies of some rows of ``state`` (``state`` itself is not changed).

    Row ``j * repeats + k`` of the result (k < ``repeats``) is a copy of row ``idx[j]``, every
    array and cache included (random-stream keys too: see :func:`reseed_rows` for fresh ones).
    ``copy_rows(state, [b], n)`` makes n copies of row b.

    Args:
        state: the batch to copy from.
        idx: (R,) int row indices, any order, repeats allowed; None: every row.
        repeats: copies of each selected row, >= 1.
        rows: deprecated name of ``idx`` (for one release; it also takes a (B,) bool mask).

    Returns:
        CoreState with R * repeats rows (R >= 1), same config and seed.

    Raises:
        ValueError: bad ``idx`` (or none selected) or ``repeats``.

    Warns:
        DeprecationWarning: ``rows`` given, or a bool mask given as ``idx``.
    """
    idx, _ = select(state, idx, None, rows)
    n = check_int("repeats", repeats, 1)
    if idx.size == 0:
        raise ValueError("idx must select at least one row")
    if n > 1:
        idx = np.repeat(idx, n)
    kw = {f.name: getattr(state, f.name) for f in fields(state)}
    for name in _row_arrays(state):
        kw[name] = kw[name][idx]
    out = CoreState(**kw)  # (latency_models, a tuple, is shared)
    # the cached mask bits of a row depend only on that row
    if state._tbits is not None:
        out._tbits = state._tbits[idx]
    if state._bits is not None:
        out._bits = state._bits[idx]
    return out


def _hidden_slots(st: CoreState, idx: np.ndarray):
    """The hidden slots of rows ``idx`` ((n,) ints), in slot order.

    Returns (vals (n, P * _SLOTS) int8 the cards, hidden (n, P * _SLOTS) bool). Per player: stock
    places 0-4, each bottom -> top (a level is hidden below the top, and the top too while face
    down), then the spit cards in the order they will be turned (the next one first).
    """
    n = idx.size
    h = st.height[idx].astype(np.int16)
    lvl = np.arange(H, dtype=np.int16)
    stock_hidden = lvl < (h - st.face_up[idx])[..., None]  # (n, P, S, H)
    sn = st.spit_n[idx].astype(np.intp)[..., None]  # (n, P, 1)
    i = np.arange(N)
    spit_hidden = i < sn  # (n, P, N), turn order
    spit_vals = np.take_along_axis(st.spit[idx], np.maximum(sn - 1 - i, 0), axis=2)
    vals = np.concatenate(
        [st.stock[idx].reshape(n, P, S * H), np.where(spit_hidden, spit_vals, -1)], axis=2
    ).reshape(n, -1)
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


def hidden_cards(state: CoreState, idx=None, *, rows=None) -> np.ndarray:
    """The cards neither player can see, per row, in slot order.

    Slot order: for player 0 then player 1, the stock places 0-4 each bottom -> top (every card
    under a top, and a top still face down, D5), then the spit cards in the order they will be
    turned (the next one first). Which places are hidden, and how many cards each holds, is
    public (heights, face-up flags, spit counts); the cards are not. Centre piles, face-up tops
    and the cards of moves in flight are seen by both players.

    Args:
        state: the batch.
        idx: None (every row) or (R,) int row indices.
        rows: deprecated name of ``idx`` (for one release; it also takes a (B,) bool mask).

    Returns:
        (R, N) int8 card ids 0-51 packed from index 0, then -1.

    Raises:
        ValueError: bad ``idx``.

    Warns:
        DeprecationWarning: ``rows`` given, or a bool mask given as ``idx``.
    """
    idx, _ = select(state, idx, None, rows)
    return _pack(*_hidden_slots(state, idx))


def replace_hidden(state: CoreState, idx=None, cards=None, *,
                   rng: np.random.Generator | None = None, rows=None) -> CoreState:
    """Put another arrangement of each row's hidden cards in its hidden slots (in place).

    The arrangement is consistent with the public table: the same cards (the ones no player can
    see) go back into the same hidden slots (same heights, spit counts, face-up cards and centre
    piles), so the 52 cards stay in place and the legal moves do not change. Either ``cards``
    gives the arrangement, or ``rng`` draws one uniformly at random (all orders equally likely).

    Args:
        state: the batch, updated in place.
        idx: (R,) distinct int row indices; None: every row.
        cards: (R, K) integers, row j = the hidden cards of row ``idx[j]`` in the slot order of
            :func:`hidden_cards`, then -1 (K <= 52; an array like :func:`hidden_cards` returns).
            Each row must be a permutation of that row's hidden cards.
        rng: a numpy Generator (instead of ``cards``); draws one ``rng.random((R, 52))``.
        rows: deprecated name of ``idx`` (for one release; it also takes a (B,) bool mask).

    Returns:
        ``state``.

    Raises:
        ValueError: not exactly one of ``cards`` / ``rng``, bad or repeated ``idx``, or
            ``cards`` of the wrong shape or not a permutation of a row's hidden cards (naming
            the row); nothing is changed then.

    Warns:
        DeprecationWarning: ``rows`` given, or a bool mask given as ``idx``.
    """
    st = state
    idx, _ = select(st, idx, None, rows)
    if (cards is None) == (rng is None):
        raise ValueError("replace_hidden needs exactly one of cards (an arrangement) or rng "
                         "(to draw one)")
    if idx.size > 1 and not (idx[1:] > idx[:-1]).all() and np.unique(idx).size != idx.size:
        raise ValueError("idx must not repeat a row")
    n = idx.size
    vals, hidden = _hidden_slots(st, idx)
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
                             f"cards of row {int(idx[j])} (then -1), got {arr[j].tolist()}")
        new = new.astype(np.int8)
    else:
        keys = rng.random((n, N))
        keys[~valid] = 2.0  # padding stays behind the hidden cards
        new = np.take_along_axis(packed, np.argsort(keys, axis=1), axis=1)
    vals = vals.copy()
    vals[hidden] = new[valid]  # both in row-major slot order
    vals = vals.reshape(n, P, _SLOTS)
    stock = vals[:, :, : S * H].reshape(n, P, S, H)
    sn = st.spit_n[idx].astype(np.intp)[..., None]
    a = np.arange(N)
    turned = np.take_along_axis(vals[:, :, S * H:], np.maximum(sn - 1 - a, 0), axis=2)
    st.stock[idx] = stock
    st.spit[idx] = np.where(a < sn, turned, -1)
    h = st.height[idx]
    top = np.take_along_axis(stock, np.maximum(h - 1, 0)[..., None].astype(np.intp), axis=3)
    top = np.where(h > 0, top[..., 0], -1).astype(np.int8)
    st.top[idx] = top
    st.pidx[idx] = place_index(top, st.face_up[idx], h, np.arange(S))
    st._bits = st._tbits = None
    return st


def reseed_rows(state: CoreState, idx=None, keys=None, *, rows=None) -> CoreState:
    """Give rows new random-stream keys (in place).

    Their future latency draws (D7), tie coins (D8) and re-deal shuffles (D13) come from the new
    streams. A planner's rollouts must draw from fresh streams: copies keeping the game's own key
    would foresee its future draws.

    Args:
        state: the batch, updated in place.
        idx: (R,) int row indices; None: every row.
        keys: (R,) integers (taken modulo 2**64), e.g. ``rng.integers(0, 2**63, R)``; required.
        rows: deprecated name of ``idx`` (for one release; it also takes a (B,) bool mask).

    Returns:
        ``state``.

    Raises:
        ValueError: bad ``idx`` or ``keys`` missing or of the wrong shape or dtype.

    Warns:
        DeprecationWarning: ``rows`` given, or a bool mask given as ``idx``.
    """
    st = state
    idx, _ = select(st, idx, None, rows)
    k = np.asarray(keys)
    if k.shape != idx.shape or k.dtype.kind not in "iu":
        raise ValueError(f"keys must be a ({idx.size},) integer array, got shape {k.shape} "
                         f"dtype {k.dtype}")
    k = streams._u64(k)
    st.key[idx] = k
    st.lat_key[idx] = latency_keys(k)
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
            and landing time are always seen). Each row keeps its game's latency models
            (``row_config(table.state, j)`` is row j's config).
        seat: (R,) int64, the seat whose view row j is.
        idx: (R,) int64, the rows of the source state (integer row indices).
    """

    state: CoreState
    seat: np.ndarray
    idx: np.ndarray

    @property
    def batch_size(self) -> int:
        """R, the number of games."""
        return self.state.batch_size


def public_table(state: CoreState, idx=None, seat=None, *, rows=None) -> PublicTable:
    """The public table of some rows, each seen from one seat (see :class:`PublicTable`).

    Args:
        state: the games (not changed).
        idx: None (every row) or (R,) int row indices.
        seat: 0 / 1, or (R,) integers (one seat per selected row); None means seat 0.
        rows: deprecated name of ``idx`` (for one release; it also takes a (B,) bool mask).

    Returns:
        PublicTable of R rows (R >= 1).

    Raises:
        ValueError: bad ``idx`` or ``seat``, or no row selected.

    Warns:
        DeprecationWarning: ``rows`` given, or a bool mask given as ``idx``.
    """
    idx, sp = select(state, idx, 0 if seat is None else seat, rows)
    pub = copy_rows(state, idx)
    pub.seed = 0
    pub.game_id[:] = 0
    every = arange(idx.size)
    reseed_rows(pub, every, np.zeros(idx.size, np.int64))
    packed = _pack(*_hidden_slots(pub, every))
    ascending = np.sort(np.where(packed < 0, N, packed), axis=1)
    replace_hidden(pub, every, np.where(ascending == N, -1, ascending))
    if not state.config.observe_opponent_move:
        opp = 1 - sp
        moving = pub.fl_action[every, opp] >= 0
        pub.fl_action[every[moving], opp[moving]] = rules.WAIT
        pub.fl_card[every[moving], opp[moving]] = -1
        pub._bits = pub._tbits = None
    return PublicTable(pub, sp.astype(np.int64), idx.astype(np.int64))
