"""The checks of the core's arguments: row masks and indices, seats, deals, actions, latencies.

Bad input gets a ValueError naming the argument and what is allowed, before anything changes.
Names: ``rows`` is a (B,) bool mask of games (``step``, ``reset``), ``idx`` (R,) integer row
indices (the partial views and the planning functions, through :func:`select`, which also takes
their deprecated ``rows=`` for one release).
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import rules
from ..checks import is_int
from .tables import P


def check_rows(rows, batch: int, name: str = "rows") -> np.ndarray:
    """``rows`` if it is a (B,) bool mask; else ValueError naming ``name``."""
    arr = np.asarray(rows)
    if arr.shape != (batch,) or arr.dtype != np.bool_:
        raise ValueError(
            f"{name} must be a ({batch},) bool array, got shape {arr.shape} dtype {arr.dtype}"
        )
    return arr


def check_deals(deals, batch: int, rows: np.ndarray | None = None):
    """``deals`` (None, or a length-B sequence of None | (pack0, pack1)) with each deal checked.

    Only the deals of ``rows`` ((B,) bool, None: every row) are read; the others become None.
    """
    if deals is None:
        return None
    if isinstance(deals, (str, bytes)) or not hasattr(deals, "__len__") or len(deals) != batch:
        raise ValueError(
            f"deals must be None or a length-{batch} sequence of None | (pack0, pack1)"
        )
    return [None if d is None or (rows is not None and not rows[i])
            else rules.check_deal(d, f"deals[{i}]") for i, d in enumerate(deals)]


def check_latency_ms(latency_ms, batch: int) -> np.ndarray:
    """``step``'s ``latency_ms``: (B, P) integers, -1 (draw) or whole ms 1..10^9, as int64."""
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


def check_actions(actions, batch: int) -> np.ndarray:
    """``step``'s ``actions``: (B, P) integer action ids 0-22."""
    A = rules.N_ACTIONS
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


def select(st, idx, seat, rows=None) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows and seats a partial view or a planning function works on, normalised once.

    Args:
        st: the state.
        idx: None (every row) or (R,) integer row indices in 0..B-1 (any order, repeats
            allowed).
        seat: None, 0 / 1, or an (R,) integer array (one seat per selected row).
        rows: the deprecated keyword of ``idx`` (for one release): a (B,) bool mask or (R,)
            integer row indices. A (B,) bool mask given as ``idx`` is taken for one release too.

    Returns:
        ((R,) intp row indices, None or (R,) intp seats).

    Raises:
        ValueError: naming ``idx`` (``rows`` when given so) or ``seat`` and what is allowed.

    Warns:
        DeprecationWarning: ``rows`` given, or a bool mask given as ``idx``.
    """
    B = st.batch_size
    name = "idx"
    if rows is not None:
        if idx is not None:
            raise ValueError("give idx (integer row indices) or rows (its deprecated name), "
                             "not both")
        idx, name = rows, "rows"
        _deprecated("rows= is deprecated: pass idx, (R,) integer row indices "
                    "(np.flatnonzero(mask) for a bool mask)")
    if idx is None:
        idx = arange(B)
    else:
        arr = np.asarray(idx)
        if arr.dtype == np.bool_:
            if arr.shape != (B,):
                raise ValueError(f"{name} must be 1-D integer row indices in 0..{B - 1}, got a "
                                 f"bool array of shape {arr.shape}")
            if name == "idx":
                _deprecated("a bool mask as idx is deprecated: pass its integer row indices "
                            "(np.flatnonzero(mask))")
            idx = arr.nonzero()[0]
        elif arr.dtype.kind in "iu" and arr.ndim == 1:
            if arr.size and (arr.min() < 0 or arr.max() >= B):
                raise ValueError(
                    f"{name} must be row indices 0..{B - 1}, got values {arr.min()}..{arr.max()}"
                )
            idx = arr.astype(np.intp, copy=False)
        else:
            raise ValueError(f"{name} must be 1-D integer row indices in 0..{B - 1}, got shape "
                             f"{arr.shape} dtype {arr.dtype}")
    if seat is None:
        return idx, None
    if is_int(seat):
        if not 0 <= seat < P:
            raise ValueError(f"seat must be 0 or 1, got {seat!r}")
        return idx, np.full(idx.size, int(seat), np.intp)
    sp = np.asarray(seat)
    if sp.shape != idx.shape or sp.dtype.kind not in "iu":
        raise ValueError(
            f"seat must be 0, 1 or a ({idx.size},) integer array (one seat per selected row), "
            f"got shape {sp.shape} dtype {sp.dtype}"
        )
    if sp.size and (sp.min() < 0 or sp.max() >= P):
        raise ValueError(f"seat must hold 0 or 1, got values {sp.min()}..{sp.max()}")
    return idx, sp.astype(np.intp, copy=False)


def _deprecated(message: str) -> None:
    # stacklevel 4: this function, select, the core function, its caller
    warnings.warn(message, DeprecationWarning, stacklevel=4)


_ARANGE: dict = {}


def arange(n: int) -> np.ndarray:
    """``np.arange(n)`` as a read-only intp array, cached per n (a few dozen sizes at most)."""
    r = _ARANGE.get(n)
    if r is None:
        if len(_ARANGE) > 64:
            _ARANGE.clear()
        r = _ARANGE[n] = np.arange(n, dtype=np.intp)
        r.flags.writeable = False
    return r
