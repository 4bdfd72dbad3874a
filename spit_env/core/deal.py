"""Game starts: a batch of fresh games (:func:`init`) and the re-start of some rows (:func:`reset`).

A game start deals by the DEAL stream (or a given deal), lays out by D3, spits (D4) and settles
(D9) at clock 0; each seat gets its latency model (D7; the config's, or one given per game and
seat, ``latencies.py``).
"""

from __future__ import annotations

import numpy as np

from .. import streams
from ..checks import check_int
from ..config import SpitConfig, check_config
from . import latencies
from .arguments import check_deals, check_rows
from .rounds import cancel, clear_centre, layout, round_start, settle
from .state import CoreState, empty_state
from .tables import ALL_CARDS, N, P, latency_keys

__all__ = ["init", "reset"]


def init(config: SpitConfig | None, batch_size: int, seed: int = 0, *, first_game: int = 0,
         deals=None, latency=None) -> CoreState:
    """B fresh games: row i plays game ``first_game + i`` of ``seed`` (Game start, D3, D4, D9).

    Args:
        config: the rules (None: ``SpitConfig()``).
        batch_size: B >= 1.
        seed: the seed of the random streams (any integer).
        first_game: the game id of row 0.
        deals: None, or a length-B sequence of None | (pack0, pack1): card-id lists that together
            hold each of the 52 cards once, each pack at least one card (uneven packs allowed);
            None deals by the DEAL stream.
        latency: None (every seat plays the config's ``latency``), or a (B, 2) array-like of
            latency models, entry [b, p] seat p's model in game b (D7): a Latency, a preset
            name, whole ms, or None for the config's ``latency[p]``. One batch may so mix
            players of different speeds; ``row_config(state, b)`` is game b's config.

    Returns:
        CoreState.

    Raises:
        ValueError: a bad config, size, seed, game id, deal or latency (naming it).
    """
    config = check_config(config)
    batch = check_int("batch_size", batch_size, 1)
    seed = check_int("seed", seed)
    first_game = check_int("first_game", first_game)
    deals = check_deals(deals, batch)
    every = np.arange(batch)
    models = latencies.check_latency(latency, config, batch, every)
    state = empty_state(config, batch, seed)
    start_games(state, every, every.astype(np.int64) + first_game, deals, models)
    return state


def reset(state: CoreState, rows, game_ids, deals=None, latency=None) -> CoreState:
    """Re-start some rows as fresh games (auto-reset). Updates ``state`` in place and returns it.

    Args:
        state: the games.
        rows: (B,) bool mask, the rows to re-start.
        game_ids: (B,) integer game ids (read where ``rows``).
        deals: None, or a length-B sequence of None | (pack0, pack1) (read where ``rows``).
        latency: None (the config's), or a (B, 2) array-like of latency models as for
            :func:`init` (read where ``rows``): the re-started games' seats' models.

    Raises:
        ValueError: bad rows, game ids, deals or latency (the state is then unchanged).
    """
    batch = state.batch_size
    rows = check_rows(rows, batch)
    ids = np.asarray(game_ids)
    if ids.shape != (batch,) or ids.dtype.kind not in "iu":
        raise ValueError(f"game_ids must be a ({batch},) integer array, got shape {ids.shape} "
                         f"dtype {ids.dtype}")
    deals = check_deals(deals, batch, rows)
    idx = rows.nonzero()[0]
    models = latencies.check_latency(latency, state.config, batch, idx)
    if idx.size:
        state._bits = state._tbits = None
        sub = None if deals is None else [deals[i] for i in idx]
        start_games(state, idx, ids[idx].astype(np.int64), sub, models)
    return state


def start_games(st: CoreState, idx: np.ndarray, ids: np.ndarray, deals, models) -> None:
    """Game start for rows ``idx``: deal, lay out (D3), spit (D4) and settle (D9) at clock 0.

    ``ids``: (n,) their game ids; ``deals``: None or n deals (None each: by the stream);
    ``models``: None or (n, P) Latency (``latencies.check_latency``).
    """
    key = streams.game_key(st.seed, ids)
    st.game_id[idx] = ids
    st.key[idx] = key
    st.lat_key[idx] = latency_keys(key)
    latencies.assign(st, idx, models)
    st.clock[idx] = 0
    st.rounds[idx] = 0
    st.scores[idx] = 0
    st.decisions[idx] = 0
    st.winner[idx] = -1
    st.terminated[idx] = False
    st.truncated[idx] = False
    cancel(st, idx)
    packs, counts = _packs(key, deals)
    clear_centre(st, idx)
    for p in range(P):
        layout(st, idx, p, packs[p], counts[p])
    round_start(st, idx, None)
    settle(st, idx, None, None)


def _packs(key: np.ndarray, deals) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The two packs of n games: ((n, 26 or 52) card ids per player, (n,) their lengths).

    By the DEAL draw (cards sorted by it, the first 26 to player 0), or a given deal.
    """
    n, half = key.size, N // P
    dkeys = streams.draw(key[:, None], streams.DEAL, 0, ALL_CARDS[None, :])
    order = np.argsort(dkeys, axis=1, kind="stable")
    packs = [order[:, :half], order[:, half:]]
    counts = [np.full(n, half), np.full(n, half)]
    if deals is not None and any(d is not None for d in deals):
        packs = [np.concatenate([pk, np.full((n, half), -1)], axis=1) for pk in packs]
        for j, d in enumerate(deals):
            if d is None:
                continue
            for p in range(P):
                packs[p][j] = -1
                packs[p][j, : len(d[p])] = d[p]
                counts[p][j] = len(d[p])
    return packs, counts
