"""Work on a few games at a time: layouts, spits, round and game ends, slaps, re-deals, stalls.

Each function works on the rows ``idx`` ((n,) integer row indices) that need it, with fancy
indexing on flat indices, so a game that needs none of this costs nothing. ``out`` is the step's
StepOutput (rewards and end flags are written into it) and ``ev`` its event collector (None: no
events).

Flat indices: ``f2 = b * P + p`` indexes ``arr.reshape(-1)`` of a (B, P) array (a seat, or a
centre pile by its absolute index).
"""

from __future__ import annotations

import numpy as np

from .. import rules, streams
from .events import Events
from .mask import table_bits
from .state import CoreState, StepOutput, blank_output
from .tables import (
    ALL_CARDS,
    HEIGHTS,
    NO_LAND,
    OVER,
    PLAY,
    RANK32,
    SLAP,
    TABLE_BITS,
    N,
    P,
    S,
    place_index,
)


def cancel(st: CoreState, idx) -> None:
    """Cancel the moves in flight of rows ``idx`` (both seats become free)."""
    st.fl_action[idx] = -1
    st.fl_card[idx] = -1
    st.fl_land[idx] = NO_LAND


def clear_centre(st: CoreState, idx) -> None:
    """Empty the centre piles of rows ``idx``."""
    st.centre[idx] = -1
    st.centre_n[idx] = 0
    st.centre_top[idx] = -1
    st.centre_ranks[idx] = 0


def layout(st: CoreState, idx: np.ndarray, p: int, pack: np.ndarray, count: np.ndarray) -> None:
    """D3: lay out pack[j, :count[j]] (index 0 dealt first) as player p's stocks and spit cards."""
    st.stock[idx, p] = -1
    st.spit[idx, p] = -1
    k = np.minimum(count, rules.STOCK_CARDS)
    rr, pos = np.nonzero(np.arange(rules.STOCK_CARDS)[None, :] < k[:, None])
    st.stock[idx[rr], p, rules.DEAL_PLACE[pos], rules.DEAL_LEVEL[pos]] = pack[rr, pos]
    h = HEIGHTS[k]
    st.height[idx, p] = h
    st.face_up[idx, p] = h > 0
    below = np.maximum(h - 1, 0)[:, :, None].astype(np.intp)
    tops = np.take_along_axis(st.stock[idx, p], below, 2)[:, :, 0]
    st.top[idx, p] = np.where(h > 0, tops, -1)
    st.pidx[idx, p] = place_index(st.top[idx, p], h > 0, h, np.arange(S))
    ns = count - k
    st.spit_n[idx, p] = ns
    rr, j = np.nonzero(np.arange(N)[None, :] < ns[:, None])
    # the next spit card (pack index 15) sits at index spit_n - 1
    st.spit[idx[rr], p, ns[rr] - 1 - j] = pack[rr, rules.STOCK_CARDS + j]


def spit(st: CoreState, idx: np.ndarray, ev: Events | None, why) -> None:
    """The spit (D4) in rows ``idx``.

    Each player of those rows with spit cards turns its next one onto its own centre pile; a card
    has moved (D17), and for each player's ``moved`` too. ``why``: rules.SPIT_*, one value or (n,)
    per row (the event value).
    """
    st.last_move[idx] = st.clock[idx]
    st.moved[idx] = st.clock[idx, None]
    sn, cn = st.spit_n.reshape(-1), st.centre_n.reshape(-1)
    spits, centre, ctop = st.spit.reshape(-1), st.centre.reshape(-1), st.centre_top.reshape(-1)
    for p in range(P):
        f2 = idx * P + p
        has = sn[f2] > 0
        f2 = f2[has]
        if f2.size == 0:
            continue
        n = sn[f2] - 1
        card = spits[f2 * N + n]
        spits[f2 * N + n] = -1
        sn[f2] = n
        ch = cn[f2]
        centre[f2 * N + ch] = card
        cn[f2] = ch + 1
        ctop[f2] = card
        st.centre_ranks.reshape(-1)[f2 * rules.N_RANKS + RANK32[card + 1] - 1] += 1
        if ev is not None:
            idx_p = f2 // P
            ev.add(idx_p, rules.EV_SPIT, p, st.clock[idx_p], -1, card, p,
                   why if np.isscalar(why) else why[has])


def round_start(st: CoreState, idx: np.ndarray, ev: Events | None) -> None:
    """After a layout: spit (D4) and play. The caller runs the stall check."""
    cancel(st, idx)
    st.phase[idx] = PLAY
    spit(st, idx, ev, rules.SPIT_ROUND_START)


def stock_count(st: CoreState, idx) -> np.ndarray:
    """(n, P) int32: the stock cards each player of rows ``idx`` holds."""
    return st.height[idx].sum(axis=2, dtype=np.int32)


def finish(st: CoreState, idx: np.ndarray, winner: np.ndarray, truncated: bool,
           out: StepOutput, ev: Events | None) -> None:
    """Game end of rows ``idx``: phase over, flags, rewards, ``game_end`` event (D14-D16)."""
    st.phase[idx] = OVER
    st.winner[idx] = winner
    if truncated:
        st.truncated[idx] = True
        out.truncated[idx] = True
    else:
        st.terminated[idx] = True
        out.terminated[idx] = True
    won = winner >= 0
    idx_won, w = idx[won], winner[won].astype(np.intp)
    out.rewards[idx_won, w] = 1.0
    out.rewards[idx_won, 1 - w] = -1.0
    if ev is not None:
        ev.add(idx, rules.EV_GAME_END, winner, st.clock[idx], -1, -1, -1,
               rules.GAME_END_TRUNCATED if truncated else rules.GAME_END_TERMINATED)


def round_end(st: CoreState, idx: np.ndarray, first: np.ndarray, cause: int, out: StepOutput,
              ev: Events | None) -> np.ndarray:
    """Round end (docs/RULES.md) for rows ``idx``.

    ``first``: (n,) the player that emptied its stocks / counts as first (D12), -1 for a
    two-pile stall-out. Returns the rows that started a new round at once (one-pile rounds, D12 +
    D13) and need the stall check.
    """
    cancel(st, idx)
    st.rounds[idx] += 1
    if ev is not None:
        ev.add(idx, rules.EV_ROUND_END, first, st.clock[idx], -1, -1, -1, cause)
    held = stock_count(st, idx) + st.spit_n[idx]
    nocard = held == 0
    cfg = st.config
    if cfg.scoring == "points":
        st.scores[idx] += held  # D15: one point per card held, before the slap
        sc = st.scores[idx]
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
        ar = np.arange(idx.size)
        ended = (first >= 0) & nocard[ar, f] & (st.centre_n[idx, f] == 0)
        winner = np.where(ended, first, -1)
    if ended.any():
        finish(st, idx[ended], winner[ended], False, out, ev)
    keep = ~ended
    trunc = keep & (st.rounds[idx] >= cfg.max_rounds)  # D16
    if trunc.any():
        finish(st, idx[trunc], np.full(int(trunc.sum()), -1), True, out, ev)
    keep &= ~trunc
    two = (st.centre_n[idx] > 0).all(axis=1)
    st.phase[idx[keep & two]] = SLAP  # D11
    one = keep & ~two
    if not one.any():
        return idx[:0]
    # D12: the first player takes nothing, the other takes the (only) centre pile.
    taking = idx[one]
    taker = (1 - first[one]).astype(np.int64)
    redeal(st, taking, np.stack([taker, taker], axis=1))
    round_start(st, taking, ev)
    # A player that took nothing with no spit cards left has laid out no card: its places are
    # empty from the start, so the round ends at once (D10 a) and it wins (D12, D14).
    bare = stock_count(st, taking) == 0
    z = bare.any(axis=1)
    if z.any():
        round_end(st, taking[z], bare[z].argmax(axis=1), rules.ROUND_END_EMPTIED, out, ev)
        taking = taking[~z]
    return taking


def redeal(st: CoreState, idx: np.ndarray, take: np.ndarray) -> None:
    """D13: the re-deal of rows ``idx``.

    Each player's new pack = the pile it took (``take[j, pile]`` = the taker of that pile) + its
    spit + its stock cards, sorted by the REDEAL draw (rounds, card), ties by card id; then laid
    out by D3. Clears the centre.
    """
    n = idx.size
    holder = np.full((n, N), -1, np.int64)
    # (entries beyond a pile's count are -1, so ">= 0" finds exactly the cards held)
    c = st.centre[idx]
    rr, qq, jj = np.nonzero(c >= 0)
    holder[rr, c[rr, qq, jj]] = take[rr, qq]
    for arr in (st.spit[idx].reshape(n, P, -1), st.stock[idx].reshape(n, P, -1)):
        rr, pp, jj = np.nonzero(arr >= 0)
        holder[rr, arr[rr, pp, jj]] = pp
    assert (holder >= 0).all(), "re-deal lost a card"
    keys = streams.draw(st.key[idx][:, None], streams.REDEAL,
                        st.rounds[idx].astype(np.int64)[:, None], ALL_CARDS[None, :])
    order = np.argsort(keys, axis=1, kind="stable")  # ties by card id
    ar = np.arange(n)[:, None]
    rank = np.empty((n, N), np.int64)
    rank[ar, order] = ALL_CARDS
    # cards grouped by holder, each group in draw order: player 0's pack, then player 1's
    packs = np.argsort(holder * N + rank, axis=1)
    n0 = (holder == 0).sum(axis=1)
    clear_centre(st, idx)
    layout(st, idx, 0, packs, n0)
    pack1 = np.take_along_axis(packs, np.minimum(n0[:, None] + ALL_CARDS, N - 1), axis=1)
    layout(st, idx, 1, pack1, N - n0)


def slap(st: CoreState, idx: np.ndarray, pl: np.ndarray, pile: np.ndarray, action: np.ndarray,
         ev: Events | None) -> np.ndarray:
    """D11: the first slap to land in rows ``idx``, then the re-deal and the next round.

    Player ``pl[j]`` takes the slapped (absolute) pile ``pile[j]``, the other player the other
    pile; then the re-deal (D13) and the next round start. Returns ``idx`` (rows to settle).
    """
    if ev is not None:
        ev.add(idx, rules.EV_SLAP, pl, st.clock[idx], action, -1, pile)
    cancel(st, idx)
    take = np.empty((idx.size, P), np.int64)
    ar = np.arange(idx.size)
    take[ar, pile] = pl
    take[ar, 1 - pile] = 1 - pl
    redeal(st, idx, take)
    round_start(st, idx, ev)
    return idx


def settle(st: CoreState, idx: np.ndarray, out: StepOutput | None, ev: Events | None,
           tbits: np.ndarray | None = None) -> None:
    """The D9 / D17 stall check on rows ``idx`` (play phase), repeated until no row is stalled.

    A stalled row's moves in flight are cancelled, then it spits after ``spit_delay_ms`` or its
    round ends (D10 b). ``tbits``: optional (B, P) table bits (``mask.table_bits``) of every row,
    valid now; used for the first check and kept valid for the rows this changes.
    """
    timeout = st.config.stall_timeout_ms
    cand = idx[st.phase[idx] == PLAY]
    fresh = tbits is not None
    while cand.size:
        if fresh:
            x = tbits[cand]
            fresh = False
        else:
            x = table_bits(st, cand)
            if tbits is not None:
                tbits[cand] = x
        no_moves = ((x[:, 0] | x[:, 1]) & np.uint32(TABLE_BITS)) == 0
        if timeout is None:
            hit = no_moves
        else:  # D17 (never right after a card moved: the timeout is at least 1 ms)
            hit = no_moves | (st.clock[cand] >= st.last_move[cand] + timeout)
        stalled = cand[hit]
        if stalled.size == 0:
            return
        why = np.where(no_moves[hit], rules.SPIT_STALL, rules.SPIT_TIMEOUT)
        cancel(st, stalled)
        any_spit = (st.spit_n[stalled] > 0).any(axis=1)
        spitting = stalled[any_spit]
        if spitting.size:
            st.clock[spitting] += st.config.spit_delay_ms
            spit(st, spitting, ev, why[any_spit])
        out_of_cards = stalled[~any_spit]
        if out_of_cards.size:
            if out is None:  # game start: nothing reports this (a pathological deal)
                out = blank_output(st.batch_size)
            restarted = round_end(st, out_of_cards, _stall_out_first(st, out_of_cards),
                                  rules.ROUND_END_STALL_OUT, out, ev)
            spitting = np.concatenate([spitting, restarted])
        cand = spitting


def _stall_out_first(st: CoreState, idx: np.ndarray) -> np.ndarray:
    """(n,) who counts as first in a stall-out without spit cards (D10 b, D12); -1: two piles.

    With one pile the player with fewer stock cards; equal: the player without spit cards (whose
    centre pile is empty).
    """
    n = stock_count(st, idx)
    pileless = np.where(st.centre_n[idx, 0] == 0, 0, 1)
    first = np.where(n[:, 0] < n[:, 1], 0, np.where(n[:, 1] < n[:, 0], 1, pileless))
    two = (st.centre_n[idx] > 0).all(axis=1)
    return np.where(two, -1, first)
