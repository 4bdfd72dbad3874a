"""The latency model of each (game, seat) of a core state (D7).

Every seat of every game draws its move latencies from a model of its own: ``state.latency[b, p]``
indexes ``state.latency_models``, the distinct models of the batch, whose 65,536-entry quantile
tables are stacked into one table (:func:`stacked_table`). A decision's draw is then one lookup,
whatever model its seat has, and one batch can hold games of different profiles.

The models are set when a game starts (``init`` / ``reset``, argument ``latency``); the config's
``latency`` is the default. :func:`row_config` gives a game's config with its own models, which is
what rebuilds it (a replay, the reference game).
"""

from __future__ import annotations

import functools

import numpy as np

from ..checks import check_int
from ..config import SpitConfig
from ..latency import TABLE_SIZE, Latency
from .tables import P

#: log2 of TABLE_SIZE: model k's quantiles start at ``k << TABLE_BITS`` of the stacked table
TABLE_BITS = TABLE_SIZE.bit_length() - 1
assert 1 << TABLE_BITS == TABLE_SIZE


@functools.lru_cache(maxsize=64)
def stacked_table(models: tuple[Latency, ...]) -> np.ndarray:
    """(K * 65536,) int64: the quantile tables of ``models``, model k's from ``k * 65536``."""
    if not models:
        return np.zeros(0, np.int64)
    table = np.concatenate([m.table for m in models]).astype(np.int64)
    table.flags.writeable = False
    return table


def check_latency(latency, config: SpitConfig, batch: int, idx: np.ndarray) -> np.ndarray | None:
    """The ``latency`` argument of init / reset as models, read at rows ``idx`` only.

    Args:
        latency: None (every seat: the config's model), or a (B, P) array-like (nested
            sequences or an object array) whose entry [b, p] is seat p's model in game b: a
            Latency, a preset name, a whole number of ms (fixed), or None (the config's
            ``latency[p]``).
        config: the state's config.
        batch: B.
        idx: (n,) the rows whose entries are read.

    Returns:
        None, or an (n, P) object array of Latency (row j: row ``idx[j]``'s models).

    Raises:
        ValueError: another shape, or an entry that is no latency model (naming it).
    """
    if latency is None:
        return None
    try:
        arr = np.asarray(latency, dtype=object)
    except ValueError:
        arr = None
    if arr is None or arr.shape != (batch, P):
        shape = "ragged" if arr is None else arr.shape
        raise ValueError(
            f"latency must be None or a ({batch}, {P}) array-like of latency models, one per game "
            f"and seat (a Latency, a preset name, whole ms, or None for the config's), got shape "
            f"{shape}")
    out = np.empty((idx.size, P), object)
    for j, b in enumerate(idx.tolist()):
        for p in range(P):
            value = arr[b, p]
            if value is None:
                out[j, p] = config.latency[p]
            elif isinstance(value, Latency):
                out[j, p] = value
            else:
                try:
                    out[j, p] = Latency.parse(value)
                except ValueError as err:
                    raise ValueError(f"latency[{b}][{p}]: {err}") from None
    return out


def assign(st, idx: np.ndarray, models: np.ndarray | None) -> None:
    """Give the seats of rows ``idx`` their latency models (a game start).

    ``models``: None (the config's) or (n, P) Latency, as :func:`check_latency` returns. Models
    that no other row uses are dropped when new ones come in, so a batch whose rows change
    profiles over time keeps only the models it plays.
    """
    wanted = dict.fromkeys(st.config.latency if models is None else models.reshape(-1).tolist())
    index = {m: k for k, m in enumerate(st.latency_models)}
    if any(m not in index for m in wanted):
        others = np.ones(st.batch_size, bool)
        others[idx] = False
        used = np.unique(st.latency[others])
        remap = np.full(len(st.latency_models), -1, np.int32)
        remap[used] = np.arange(used.size, dtype=np.int32)
        st.latency[others] = remap[st.latency[others]]
        kept = tuple(st.latency_models[k] for k in used)
        st.latency_models = kept + tuple(m for m in wanted if m not in kept)
        st._lat_table = stacked_table(st.latency_models)
        index = {m: k for k, m in enumerate(st.latency_models)}
    if models is None:
        st.latency[idx] = [index[m] for m in st.config.latency]
    else:
        codes = [index[m] for m in models.reshape(-1).tolist()]
        st.latency[idx] = np.array(codes, np.int32).reshape(idx.size, P)


def row_latency(st, row: int) -> tuple[Latency, Latency]:
    """The latency models of seat 0 and seat 1 in row ``row`` (an int 0..B-1)."""
    a, b = st.latency[row].tolist()
    return st.latency_models[a], st.latency_models[b]


def row_config(st, row: int) -> SpitConfig:
    """The config of row ``row``'s game: ``state.config`` with the row's latency models.

    The config that plays this game again alone (``init(row_config(state, b), 1, ...)``, the
    reference game, a replay record); ``state.config`` itself when the row plays the config's.

    Raises:
        ValueError: ``row`` is not an integer 0..B-1.
    """
    i = check_int("row", row, 0, st.batch_size - 1)
    pair = row_latency(st, i)
    return st.config if pair == tuple(st.config.latency) else st.config.replace(latency=pair)
