"""What the games look like: the observation vectors (:func:`observe`) and snapshots.

``observe`` gives the egocentric float32 vectors of ``rules.OBSERVATION`` (docs/ENVIRONMENTS.md
has the table). A large batch is served from a cache in the state that keeps the one-hot entries
of the stock and centre piles, most of every vector, and rewrites only those a move changed
(``obs_build.update_observation``); a part of a batch (``idx`` / ``seat``) and a small batch are
built from scratch (``obs_build.build_observation``). Both give the same values, bit for bit
(:func:`check_observation_cache` holds the cache to it; ``caches.check_caches`` runs it).
``snapshot`` gives one game's public table as plain Python, the reference game's format.
"""

from __future__ import annotations

import numpy as np

from .. import rules
from ..checks import check_int
from .arguments import select
from .obs_build import ObsCache, build_observation, update_observation
from .state import CoreState
from .tables import P

__all__ = ["observe", "snapshot", "check_observation_cache"]

#: batches of at least this many games are served from the cache (below it, the call's fixed
#: cost outweighs what the cache saves)
CACHED_BATCH = 512


def observe(state: CoreState, idx=None, seat=None, *, rows=None) -> np.ndarray:
    """Egocentric observations, layout rules.OBSERVATION: (B, P, D) float32, every entry in [0, 1].

    Row [b, p] is seat p's view: ``self_*`` fields are p's, ``opp_*`` the opponent's, centre pile
    c = 0 is p's own. The opponent's move in flight is shown only with
    ``config.observe_opponent_move`` (its busy flag and time to landing always are).

    The whole batch (no ``idx``, no ``seat``) of B >= 512 games comes from a cache kept in the
    state (about 0.9 KB per game: the one-hot entries as (B, P, D) uint8, and what the rest is
    made of), that each call brings up to date with what changed since the one before.

    Args:
        state: the games.
        idx: None (every row) or (R,) int row indices (any order, repeats allowed): only those
            rows are computed, (R, P, D) in that order.
        seat: None (both seats), or 0 / 1 / an (R,) integer array (one seat per selected row):
            (R, D), seat ``seat[j]``'s view of row ``idx[j]``. Either way the values are exactly
            those of ``observe(state)[idx][, seat]``; a part costs about its share of the work.
        rows: deprecated name of ``idx`` (for one release; it also takes a (B,) bool mask).

    Returns:
        A new float32 array: (B, P, D), (R, P, D) or (R, D) as above.

    Raises:
        ValueError: bad ``idx`` or ``seat``.

    Warns:
        DeprecationWarning: ``rows`` given, or a bool mask given as ``idx``.
    """
    if idx is None and seat is None and rows is None:
        if state.batch_size < CACHED_BATCH:
            return build_observation(state, None, None)
        return _cached(state)
    idx, sp = select(state, idx, seat, rows)
    return build_observation(state, idx, sp)


def _cached(st: CoreState) -> np.ndarray:
    """Every game's observation from the state's cache, brought up to date: a new array."""
    cache = st._obs
    if cache is None or cache.flags.shape[0] != st.batch_size:
        obs = build_observation(st, None, None)
        st._obs = ObsCache(st, obs)
        return obs
    return update_observation(st, cache, np.empty((st.batch_size, P, rules.OBS_DIM), np.float32))


def check_observation_cache(st: CoreState) -> None:
    """Check that the state's observation cache, brought up to date, gives a build from scratch.

    Raises:
        AssertionError: naming the first row whose cached observation differs.
    """
    if st._obs is None:
        return
    cached, fresh = _cached(st), build_observation(st, None, None)
    bad = (cached != fresh).reshape(st.batch_size, -1).any(axis=1)
    if bad.any():
        raise AssertionError(f"row {int(np.flatnonzero(bad)[0])}: the cached observation "
                             "disagrees with the state")


def snapshot(state: CoreState, row: int) -> dict:
    """The whole public table of one game as plain Python (the reference game's format).

    Raises:
        ValueError: ``row`` is not an integer 0..B-1.
    """
    st = state
    i = check_int("row", row, 0, st.batch_size - 1)
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
        "moved_ms": st.moved[i].tolist(),
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


