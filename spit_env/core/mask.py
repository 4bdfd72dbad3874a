"""The legal moves: one uint32 word per seat (bit a = action a legal), from lookup tables.

Each stock place keeps its index into the bits table (``pidx``: its place code, ``tables.py``);
one lookup per place with the two centre-pile top ranks gives that place's PLAY / FILL / FLIP bits.
The same words serve the action mask, the legality check of ``step`` and the D9 stall check ("no
seat has a table move").
"""

from __future__ import annotations

import numpy as np

from .arguments import select
from .tables import GATE_AND, GATE_OR, KEEP, RANK32, RANK_VALUES, A, P

__all__ = ["legal_action_mask", "table_bits", "mask_bits"]


def table_bits(st, idx=None) -> np.ndarray:
    """The table bits of each seat: (B, P) uint32, or (n, P) for rows ``idx`` ((n,) ints).

    The PLAY / FILL / FLIP bits the cards allow each seat, whatever its phase or move in flight
    (D1, D4, D5, D6), plus the empty-place bit 31. The D9 stall check reads them.
    """
    if idx is None:
        ct, pidx = RANK32[st.centre_top + 1], st.pidx
    else:
        ct, pidx = RANK32[st.centre_top[idx] + 1], st.pidx[idx]
    own_opp = ct * RANK_VALUES + ct[:, ::-1]  # seat p: own pile p, opponent's pile 1 - p
    b = st._lut.bits.take(pidx + own_opp[:, :, None])
    x = b[:, :, 0] | b[:, :, 1] | b[:, :, 2] | b[:, :, 3] | b[:, :, 4]
    return x & KEEP.take(x >> np.uint32(31))


def mask_bits(st) -> np.ndarray:
    """(B, P) uint32: the legal-move bits (bit a = action a legal), cached until the next change."""
    if st._bits is None:
        if st._tbits is None:
            st._tbits = table_bits(st)
        gate = (st.fl_action < 0) + 2 * st.phase[:, None]
        st._bits = (st._tbits & GATE_AND.take(gate)) | GATE_OR.take(gate)
    return st._bits


def legal_action_mask(state, idx=None, seat=None, *, rows=None) -> np.ndarray:
    """The legal moves of each seat: (B, P, A) bool, a new array (docs/RULES.md, the mask table).

    A busy seat (move in flight, D7) and a finished game allow only WAIT; a free seat may WAIT,
    PLAY (D1, D4), FILL (D6), FLIP (D5, auto_flip off) in the play phase, and only SLAP (D11, the
    slap is compulsory) in the slap phase. So every mask has at least one legal action.
    Egocentric: pile c = 0 is the seat's own centre pile.

    ``idx`` / ``seat`` select part of it without building the rest (as ``observe``): idx (R,)
    int row indices -> (R, P, A); with seat (an int 0/1 or (R,) int, one seat per selected row)
    -> (R, A), equal to ``legal_action_mask(state)[idx, seat]``. ``rows`` is the deprecated name
    of ``idx`` (for one release; it also takes a (B,) bool mask).

    Raises:
        ValueError: bad ``idx`` or ``seat``.

    Warns:
        DeprecationWarning: ``rows`` given, or a bool mask given as ``idx``.
    """
    bits = mask_bits(state)
    if idx is None and seat is None and rows is None:
        shape = (state.batch_size, P)
    else:
        idx, sp = select(state, idx, seat, rows)
        bits = bits[idx] if sp is None else bits[idx, sp]
        shape = bits.shape
    u8 = bits.astype("<u4", copy=False).view(np.uint8).reshape(shape + (4,))
    return np.unpackbits(u8, axis=-1, count=A, bitorder="little").view(bool)
