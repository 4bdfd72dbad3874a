"""The check of the core's caches: each one recomputed from the arrays it is made of.

A :class:`~spit_env.core.state.CoreState` keeps caches in step with its arrays (``top``,
``centre_top``, ``pidx``, ``centre_ranks``, ``lat_key``, the stacked latency tables, the
legal-move bits of ``mask.py`` and the last observation of ``observe.py``); :func:`check_caches`
recomputes every one and compares. It sits above the modules that build the caches, so none of
them imports it.
"""

from __future__ import annotations

import numpy as np

from .. import rules
from . import mask
from .latencies import stacked_table
from .observe import check_observation_cache
from .state import CoreState
from .tables import RANK32, H, N, P, S, latency_keys, place_index

__all__ = ["check_caches", "centre_rank_counts"]


def check_caches(state: CoreState) -> None:
    """Check that the core's caches agree with the arrays they are computed from.

    The tops of the stock places (``top``) and of the centre piles (``centre_top``), each stock
    place's bits-table index (``pidx``), the rank counts of the centre piles
    (``centre_ranks``), the latency-stream hash (``lat_key``) of the key, the seats' latency
    model indices and their stacked quantile tables, the cached table bits and legal-move bits
    (when set) against the bits computed afresh, and the cached observation (when set), brought
    up to date, against one built from scratch. ``spit_env.testing``'s ``check_invariants`` runs
    it; it also covers the states of ``copy_rows``, ``replace_hidden``, ``reseed_rows`` and
    ``public_table``.

    Raises:
        AssertionError: naming the first row whose cache is stale.
    """
    st = state
    h = st.height.astype(np.intp)
    top = np.take_along_axis(st.stock, np.clip(h - 1, 0, H - 1)[..., None], axis=3)[..., 0]
    top = np.where(h > 0, top, -1)
    if (top != st.top).any():
        _fail(_first(top != st.top), "cached stock tops disagree with the stocks")
    n = st.centre_n.astype(np.intp)
    ctop = np.take_along_axis(st.centre, np.clip(n - 1, 0, N - 1)[..., None], axis=2)[..., 0]
    ctop = np.where(n > 0, ctop, -1)
    if (ctop != st.centre_top).any():
        _fail(_first(ctop != st.centre_top), "cached centre tops disagree with the centre piles")
    pidx = place_index(st.top, st.face_up, st.height, np.arange(S))
    if (pidx != st.pidx).any():
        _fail(_first(pidx != st.pidx), "cached place indices (pidx) disagree with the stocks")
    ranks = centre_rank_counts(st.centre)
    if (ranks != st.centre_ranks).any():
        _fail(_first(ranks != st.centre_ranks),
              "cached centre rank counts (centre_ranks) disagree with the centre piles")
    if (latency_keys(st.key) != st.lat_key).any():
        _fail(_first(latency_keys(st.key) != st.lat_key),
              "cached latency-stream hashes (lat_key) disagree with the key")
    bad = (st.latency < 0) | (st.latency >= len(st.latency_models))
    if bad.any():
        _fail(_first(bad), f"latency model indices outside 0..{len(st.latency_models) - 1}")
    if not np.array_equal(st._lat_table, stacked_table(st.latency_models)):
        raise AssertionError("the stacked latency tables disagree with latency_models")
    fresh = mask.table_bits(st)
    if st._tbits is not None and (st._tbits != fresh).any():
        _fail(_first(st._tbits != fresh), "cached table bits disagree with the table")
    if st._bits is not None:
        cached = st._bits
        st._bits = None
        again = mask.mask_bits(st)
        if (cached != again).any():
            _fail(_first(cached != again), "cached legal-move bits disagree with the state")
    check_observation_cache(st)


def centre_rank_counts(centre: np.ndarray) -> np.ndarray:
    """(n, P, 13) int8: the cards of each rank in (n, P, N) int8 centre piles (-1: no card)."""
    n = centre.shape[0]
    pile = np.arange(n * P).reshape(n, P, 1) * (rules.N_RANKS + 1)
    count = np.bincount((pile + RANK32.take(centre.astype(np.intp) + 1)).reshape(-1),
                        minlength=n * P * (rules.N_RANKS + 1))
    return count.reshape(n, P, rules.N_RANKS + 1)[:, :, 1:].astype(np.int8)


def _fail(row, msg: str):
    raise AssertionError(f"row {int(row)}: {msg}")


def _first(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))[0])
