"""A decision epoch of every game (:func:`step`); forced WAITs skipped (:func:`fast_forward`).

docs/RULES.md, "The time model, exactly". The decisions of a step and the first landing are done
on whole columns (every row that steps). Whatever happens to a few rows only (a second landing at
the same millisecond, the D9 stall check after the table changed, spits, round ends, slaps,
re-deals) runs on the rows that need it (``rounds.py``), so a row that needs no such work costs
nothing beyond the width of the arrays. No Python loop runs over games in a step; the loops that
exist run over the two players or until no row is stalled.

Short names: ``idx`` the (n,) row indices a function works on, ``at`` the same rows as an index
for reading and writing their entries (a slice when every row steps, so no copy is made);
``f`` / ``f2`` a flat seat index ``b * P + p`` into ``arr.reshape(-1)`` of a (B, P) array, ``f5``
a flat stock-place index ``(b * P + p) * S + s``; ``ev`` the step's event collector (None: no
events), ``out`` its StepOutput.
"""

from __future__ import annotations

import numpy as np

from .. import rules
from .arguments import arange, check_actions, check_latency_ms, check_rows, select
from .events import Events, event_collector
from .latencies import TABLE_BITS as LATENCY_TABLE_BITS
from .mask import mask_bits, table_bits
from .rounds import finish, round_end, settle, slap
from .state import CoreState, StepOutput, blank_output
from .tables import (
    CARRIES,
    GOLDEN,
    KIND,
    NO_LAND,
    OVER,
    PILE,
    PLAY,
    RANK32,
    RANK_VALUES,
    S48,
    SLAP,
    SLAP_BITS,
    STOCK,
    STOCK0,
    TABLE_BITS,
    TIE_SALT,
    U64,
    H,
    P,
    S,
    mix64,
    place_index,
)

__all__ = ["step", "fast_forward"]


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
        rows: optional (B,) bool mask, only those rows advance (the others are untouched).
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
    B = st.batch_size
    acts = check_actions(actions, B).astype(np.intp, copy=False)
    given = None if latency_ms is None else check_latency_ms(latency_ms, B)
    ev = event_collector(events)
    active = st.phase != OVER
    if rows is not None:
        active &= check_rows(rows, B)
    bits = mask_bits(st)
    illegal = active[:, None] & ~((bits >> acts.astype(np.uint32)) & np.uint32(1)).astype(bool)
    any_illegal = bool(illegal.any())
    if any_illegal and st.config.illegal_action == "raise":
        _refuse(acts, bits, illegal)
    prev_tbits = st._tbits  # valid for every row now (set by mask_bits above)
    st._bits = st._tbits = None
    out = blank_output(B)
    out.illegal = illegal
    effective = _effective_actions(st, acts, illegal, ev) if any_illegal else acts

    every = bool(active.all())
    idx = arange(B) if every else active.nonzero()[0]
    if idx.size == 0:
        return st, _finish_output(out, ev)
    at = slice(None) if every else idx
    _decide(st, active[:, None] & (st.fl_action < 0), effective, given)  # time model 1-3
    touched = _land_due(st, idx, at, out, ev)  # time model 4-6
    tbits = _table_bits_after(st, prev_tbits, idx, every)  # for the stall check, then the mask
    stalled = _stall_candidates(st, idx, at, touched)
    if stalled.size:
        settle(st, stalled, out, ev, tbits)  # D9, D17
    st._tbits = tbits
    late = idx[(st.phase[at] != OVER) & (st.clock[at] >= st.config.max_game_ms)]  # D16
    if late.size:
        finish(st, late, np.full(late.size, -1), True, out, ev)
    return st, _finish_output(out, ev)


def _refuse(acts: np.ndarray, bits: np.ndarray, illegal: np.ndarray) -> None:
    """ValueError naming the first illegal action (``illegal_action="raise"``) and the legal ids."""
    r, p = np.argwhere(illegal)[0]
    allowed = [a for a in range(rules.N_ACTIONS) if (int(bits[r, p]) >> a) & 1]
    raise ValueError(
        f"actions[{r}, {p}] = {int(acts[r, p])} ({rules.ACTION_NAMES[int(acts[r, p])]}) is "
        f"not legal now; legal action ids: {allowed}")


def _effective_actions(st: CoreState, acts: np.ndarray, illegal: np.ndarray,
                       ev: Events | None) -> np.ndarray:
    """The actions played under ``illegal_action="wait"``: an illegal one becomes WAIT.

    D11: the slap is compulsory; a free player's illegal action in the slap phase becomes a slap
    of the smaller centre pile (its own when both are equal). Each illegal action is an
    ``illegal`` event.
    """
    eff = np.where(illegal, rules.WAIT, acts)
    forced_slap = illegal & (st.phase == SLAP)[:, None] & (st.fl_action < 0)
    if forced_slap.any():
        smaller_is_opp = st.centre_n[:, ::-1] < st.centre_n
        eff = np.where(forced_slap, rules.SLAP_BASE + smaller_is_opp, eff)
    if ev is not None:
        rr, pp = np.nonzero(illegal)
        ev.add(rr, rules.EV_ILLEGAL, pp, st.clock[rr], acts[rr, pp])
    return eff


def _table_bits_after(st: CoreState, prev: np.ndarray | None, idx: np.ndarray,
                      every: bool) -> np.ndarray:
    """(B, P) table bits of every row after the landings of the rows ``idx`` that stepped.

    A part of the rows (an env stepping only the games whose learner is busy) costs about its
    share: ``prev``, the bits from before the step, stays valid for the rows that did not step.
    """
    if every or prev is None:
        return table_bits(st)
    prev[idx] = table_bits(st, idx)
    return prev


def _stall_candidates(st: CoreState, idx: np.ndarray, at, touched: np.ndarray) -> np.ndarray:
    """The rows that need the stall check (D9, D17).

    The ``touched`` ones and, with the D17 timeout on, those where no card moved for the timeout.
    """
    timeout = st.config.stall_timeout_ms
    if timeout is not None:
        waited = (st.clock[at] >= st.last_move[at] + timeout) & (st.phase[at] == PLAY)
        touched[idx[waited]] = True
    return touched.nonzero()[0]


def _finish_output(out: StepOutput, ev: Events | None) -> StepOutput:
    if ev is not None:
        out.events = ev.log()
    return out


# --- decisions and landings ----------------------------------------------------------------------
def _decide(st: CoreState, deciding: np.ndarray, acts: np.ndarray, given=None) -> None:
    """Time model 2-3: the decisions of the ``deciding`` seats ((B, P) bool).

    Their landing time (WAIT: wait_ms, else the seat's LATENCY draw for (player, decision index)
    from its own model, D7, or the ``given`` latency where it is >= 1), carried card, decision
    count.
    """
    # Only the deciding seats are computed, on flat (B * P) indices: a step of a few rows of a
    # large batch (an env running on the games whose learner is busy) costs only their share.
    f = np.flatnonzero(deciding)
    if f.size == 0:
        return
    a = acts.reshape(-1).take(f)
    with np.errstate(over="ignore"):
        hsh = mix64(
            st.lat_key.reshape(-1).take(f) + st.decisions.reshape(-1).take(f).astype(U64) * GOLDEN
        )
    # the top 16 bits (streams.top16) index the seat's model's quantiles in the stacked tables
    model = st.latency.reshape(-1).take(f).astype(np.intp) << LATENCY_TABLE_BITS
    lat = st._lat_table.take((hsh >> S48).astype(np.intp) + model)
    lat = np.where(a == rules.WAIT, st.config.wait_ms, lat)
    if given is not None:
        ms = given.reshape(-1).take(f)
        lat = np.where(ms > 0, ms, lat)
    card = st.top.reshape(-1).take(f * S + STOCK0.take(a))
    st.fl_land.reshape(-1)[f] = lat + st.clock.take(f >> 1)
    st.fl_action.reshape(-1)[f] = a
    st.fl_card.reshape(-1)[f] = np.where(CARRIES.take(a), card, -1)
    st.decisions.reshape(-1)[f] += 1


def _tie_first(st: CoreState, idx: np.ndarray, t: np.ndarray) -> np.ndarray:
    """D8: who lands first when both moves land at ms ``t`` ((n,)), in rows ``idx``."""
    tb = st.config.tie_break
    if tb == "player_0":
        return np.zeros(idx.size, np.intp)
    if tb == "player_1":
        return np.ones(idx.size, np.intp)
    # streams.draw(key, TIE, t, 0), inlined on uint64 arrays
    h = mix64(mix64(st.key[idx] ^ TIE_SALT) ^ t.astype(np.int64).view(U64))
    return (mix64(h) & U64(1)).astype(np.intp)


def _land_due(st: CoreState, idx: np.ndarray, at, out: StepOutput,
              ev: Events | None) -> np.ndarray:
    """Jump each row to its earliest landing and land the moves due then, in D8 order.

    Then the round ends (D10 a) and slaps (D11) those landings made. Returns (B,) bool: the rows
    whose table changed or whose round restarted (they need the stall check).
    """
    land = st.fl_land[at]
    l0, l1 = land[:, 0], land[:, 1]
    t = np.minimum(l0, l1)
    st.clock[at] = t
    lands0 = l0 == t
    both = lands0 & (l1 == t)
    first = (~lands0).astype(np.intp)
    if both.any():
        first[both] = _tie_first(st, idx[both], t[both])
    touched = np.zeros(st.batch_size, bool)
    ended, emptied, slapped = _land(st, idx, first, touched, ev)
    second = both & ~ended  # the other move due at the same ms, unless the first ended the round
    if second.any():
        _, emptied2, slapped2 = _land(st, idx[second], 1 - first[second], touched, ev)
        emptied = tuple(np.concatenate(x) for x in zip(emptied, emptied2, strict=True))
        slapped = tuple(np.concatenate(x) for x in zip(slapped, slapped2, strict=True))
    if emptied[0].size:
        touched[emptied[0]] = False
        touched[round_end(st, *emptied, rules.ROUND_END_EMPTIED, out, ev)] = True
    if slapped[0].size:
        touched[slap(st, *slapped, ev)] = True
    return touched


def _land(st: CoreState, idx: np.ndarray, pl: np.ndarray, touched: np.ndarray,
          ev: Events | None):
    """Land the move in flight of player ``pl[j]`` in row ``idx[j]`` (time model, "Each landing").

    Marks the rows whose table changed in ``touched``.

    Returns:
        (ended (n,) bool: the landing emptied the stocks or slapped, so the other move due now is
        cancelled; emptied = (row indices, players), D10 a; slapped = (row indices, players,
        absolute piles, actions), D11).
    """
    f2 = idx * P + pl
    fa, fc = st.fl_action.reshape(-1), st.fl_card.reshape(-1)
    a = fa[f2].astype(np.intp)
    card = fc[f2]
    fa[f2] = -1
    fc[f2] = -1
    st.fl_land.reshape(-1)[f2] = NO_LAND
    kind = KIND.take(a)
    ended = np.zeros(idx.size, bool)
    emptied = (idx[:0], pl[:0])
    slapped = (idx[:0], pl[:0], pl[:0], a[:0])
    j = (kind == rules.KIND_PLAY).nonzero()[0]
    if j.size:
        k = _land_plays(st, idx[j], pl[j], a[j], card[j], touched, ev)
        ended[j[k]] = True
        emptied = (idx[j[k]], pl[j[k]])
    j = (kind == rules.KIND_FILL).nonzero()[0]
    if j.size:
        _land_fills(st, idx[j], pl[j], a[j], card[j], touched, ev)
    j = (kind == rules.KIND_FLIP).nonzero()[0]
    if j.size:
        _land_flips(st, idx[j], pl[j], a[j], touched, ev)
    j = (kind == rules.KIND_SLAP).nonzero()[0]
    if j.size:
        ended[j] = True
        slapped = (idx[j], pl[j], pl[j] ^ PILE.take(a[j]), a[j])
    return ended, emptied, slapped


def _land_plays(st: CoreState, idx, pl, a, card, touched, ev) -> np.ndarray:
    """PLAYs landing: onto the pile if the card still fits (D7, D1), else a bounce.

    Returns the positions j whose play emptied the player's last stock place (D10 a).
    """
    pile = pl ^ PILE.take(a)
    fp = idx * P + pile
    ct = st.centre_top.reshape(-1)[fp]
    ok = st._lut.adj_flat.take(RANK32[card + 1] * RANK_VALUES + RANK32[ct + 1])
    if ev is not None:
        ev.add(idx, np.where(ok, rules.EV_PLAY, rules.EV_BOUNCE), pl, st.clock[idx], a, card, pile)
    k = ok.nonzero()[0]
    if k.size == 0:
        return k
    idx_k, fpk, ck = idx[k], fp[k], card[k]
    cn = st.centre_n.reshape(-1)
    n = cn[fpk]
    st.centre.reshape(-1)[fpk * rules.N_CARDS + n] = ck
    cn[fpk] = n + 1
    st.centre_top.reshape(-1)[fpk] = ck
    st.centre_ranks.reshape(-1)[fpk * rules.N_RANKS + RANK32[ck + 1] - 1] += 1
    f2k = idx_k * P + pl[k]
    h = _pop_stock(st, f2k * S + STOCK.take(a[k]))
    touched[idx_k] = True
    now = st.clock[idx_k]
    st.last_move[idx_k] = now  # D17
    st.moved.reshape(-1)[f2k] = now
    gone = (h == 0).nonzero()[0]
    if gone.size == 0:
        return gone
    # D10 a: all five places empty?
    return k[gone[~st.height.reshape(-1, S)[f2k[gone]].any(axis=1)]]


def _land_fills(st: CoreState, idx, pl, a, card, touched, ev) -> None:
    """FILLs landing: the card moves to the leftmost empty place, face up (D6)."""
    f2 = idx * P + pl
    dest = np.argmax(st.height.reshape(-1, S)[f2] == 0, axis=1)
    _pop_stock(st, f2 * S + STOCK.take(a))
    fd = f2 * S + dest
    st.stock.reshape(-1)[fd * H] = card
    st.height.reshape(-1)[fd] = 1
    st.top.reshape(-1)[fd] = card
    st.face_up.reshape(-1)[fd] = True
    st.pidx.reshape(-1)[fd] = place_index(card, True, 1, dest)
    touched[idx] = True
    now = st.clock[idx]
    st.last_move[idx] = now  # D17
    st.moved.reshape(-1)[f2] = now
    if ev is not None:
        ev.add(idx, rules.EV_FILL, pl, st.clock[idx], a, card, -1, dest)


def _land_flips(st: CoreState, idx, pl, a, touched, ev) -> None:
    """FLIPs landing: the place's top turns face up (D5)."""
    s = STOCK.take(a)
    f5 = (idx * P + pl) * S + s
    st.face_up.reshape(-1)[f5] = True
    top = st.top.reshape(-1)[f5]
    st.pidx.reshape(-1)[f5] = place_index(top, True, st.height.reshape(-1)[f5], s)
    touched[idx] = True
    now = st.clock[idx]
    st.last_move[idx] = now  # D17
    st.moved[idx, pl] = now
    if ev is not None:
        ev.add(idx, rules.EV_FLIP, pl, st.clock[idx], a, top, -1, s)


def _pop_stock(st: CoreState, f5: np.ndarray) -> np.ndarray:
    """Remove the top card of the places at flat (B * P * S) indices ``f5``; their new heights.

    With auto_flip the new top turns face up (D5).
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
    st.pidx.reshape(-1)[f5] = place_index(top, fu, h, f5 % S)
    return h


# --- forced WAITs --------------------------------------------------------------------------------
def fast_forward(state: CoreState, idx=None, seat=None, max_epochs=None, *,
                 rows=None) -> np.ndarray:
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
        idx: (R,) increasing int row indices (each row once); None: every row.
        seat: 0 / 1, or an (R,) integer array (one seat per selected row); required.
        max_epochs: None, or an int / (R,) integer array >= 0: skip at most that many epochs
            per row.
        rows: deprecated name of ``idx`` (for one release; it also takes a (B,) bool mask).

    Returns:
        (R,) int64 epochs skipped per selected row (0 where nothing could be skipped).

    Raises:
        ValueError: bad ``idx`` (or a row given twice), ``seat`` or ``max_epochs``.

    Warns:
        DeprecationWarning: ``rows`` given, or a bool mask given as ``idx``.
    """
    st = state
    if seat is None:
        raise ValueError("seat must be 0, 1 or an integer array (one seat per selected row)")
    idx, sp = select(st, idx, seat, rows)
    if idx.size > 1 and (idx[1:] <= idx[:-1]).any():
        raise ValueError("idx must be increasing row indices (each row once)")
    if max_epochs is not None:
        cap = np.asarray(max_epochs)
        if cap.dtype.kind not in "iu" or cap.shape not in ((), idx.shape) or (cap < 0).any():
            raise ValueError(f"max_epochs must be None or integers >= 0, one or one per row "
                             f"({idx.size}), got {max_epochs!r}")
    if idx.size == 0:
        return np.zeros(0, np.int64)
    cfg = st.config
    f, fo = idx * P + sp, idx * P + (1 - sp)
    free = st.fl_action.reshape(-1).take(f) < 0
    forced = (mask_bits(st).reshape(-1).take(f) & np.uint32(TABLE_BITS | SLAP_BITS)) == 0
    other = st.fl_land.reshape(-1).take(fo)  # NO_LAND when free
    clock = st.clock.take(idx)
    limit = np.minimum(other, cfg.max_game_ms)
    if cfg.stall_timeout_ms is not None:
        limit = np.minimum(limit, st.last_move.take(idx) + cfg.stall_timeout_ms)
    ok = free & forced & (other < NO_LAND) & (st.phase.take(idx) == PLAY)
    k = np.where(ok, (limit - clock - 1) // cfg.wait_ms, 0)
    k = np.maximum(k, 0)
    if max_epochs is not None:
        k = np.minimum(k, cap)
    go = k.nonzero()[0]
    if go.size:
        st.clock[idx[go]] = clock[go] + k[go] * cfg.wait_ms
        st.decisions.reshape(-1)[f[go]] += k[go].astype(np.int32)
    return k
