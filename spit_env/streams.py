"""Counter-based random streams: every draw a pure hash, computed in batch.

A game's every random draw is a hash of (game key, purpose, a, b), computed on uint64 arrays.

Why a hash and not a ``numpy.random.Generator`` per game: B games can then draw in one array
operation, the reference game (one game, plain Python) can be fed exactly the same draws, and a
game's draws depend only on its seed and game id, never on how many games share a batch.

Draws of one game (``key`` from :func:`game_key`):

=================  ======================  =============================================
purpose            a, b                    use
=================  ======================  =============================================
``DEAL``           0, card id              initial deal: cards sorted by this key
``REDEAL``         round, card id          D13 shuffle: each pack sorted by this key
``LATENCY``        player, decision index  the latency of a move: top 16 bits index the
                                           model's quantile table (see ``latency.py``)
``TIE``            clock_ms, 0             D8 coin: lowest bit 1 means player 1 lands first
=================  ======================  =============================================

Seeds of the environments (:func:`next_game`): game ``g`` of seed ``s`` is the stream key
``game_key(s, g)``; ``reset(seed=s)`` plays game 0 of ``s``, a later ``reset()`` the next game
id, and a first ``reset()`` without a seed draws one from the operating system (:func:`os_seed`),
never from the global NumPy or Python generators.
"""

from __future__ import annotations

import numpy as np

from .checks import check_int

DEAL, REDEAL, LATENCY, TIE = 1, 2, 3, 4

_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_M1 = _U64(0xBF58476D1CE4E5B9)
_M2 = _U64(0x94D049BB133111EB)
_MASK64 = (1 << 64) - 1


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array (wrapping arithmetic). Returns a new array."""
    x = np.asarray(x, dtype=_U64)
    with np.errstate(over="ignore"):
        x = x ^ (x >> _U64(30))
        x = x * _M1
        x = x ^ (x >> _U64(27))
        x = x * _M2
        x = x ^ (x >> _U64(31))
    return x


def _u64(values) -> np.ndarray:
    """Integers (any sign, Python or NumPy) as uint64 arrays, taken modulo 2**64."""
    arr = np.asarray(values)
    if arr.dtype == _U64:
        return arr
    if arr.dtype == object or arr.dtype.kind not in "iu":
        arr = np.asarray(np.vectorize(lambda v: int(v) & _MASK64, otypes=[object])(arr), dtype=_U64)
        return arr
    return arr.astype(np.int64).view(_U64) if arr.dtype.kind == "i" else arr.astype(_U64)


def game_key(seed, game_id) -> np.ndarray:
    """The uint64 key of game ``game_id`` under ``seed``; broadcasts.

    Game g of seed s is the same game whatever batch it is played in.
    """
    with np.errstate(over="ignore"):
        return mix64(mix64(_u64(seed) + _GOLDEN) ^ (_u64(game_id) * _GOLDEN + _U64(1)))


def draw(key, purpose: int, a, b) -> np.ndarray:
    """The uint64 draw of ``(key, purpose, a, b)``; all arguments broadcast."""
    with np.errstate(over="ignore"):
        h = mix64(_u64(key) ^ (_U64(purpose) * _GOLDEN))
        h = mix64(h ^ _u64(a))
        return mix64(h + _u64(b) * _GOLDEN)


def top16(h: np.ndarray) -> np.ndarray:
    """The top 16 bits of uint64 draws as int64 0-65535 (an index into a latency table)."""
    return (np.asarray(h, dtype=_U64) >> _U64(48)).astype(np.int64)


def shuffled(key: int, purpose: int, a: int, cards) -> list[int]:
    """Scalar helper: ``cards`` in shuffled order (ascending draw, then card id)."""
    cards = [int(c) for c in cards]
    if not cards:
        return []
    keys = draw(np.uint64(key), purpose, a, np.asarray(cards, dtype=np.int64))
    return [c for _, c in sorted(zip(keys.tolist(), cards, strict=True))]


# --- seeds of the environments --------------------------------------------------------------------
def os_seed() -> int:
    """A fresh 63-bit seed from the operating system's entropy (not the global generators)."""
    return int(np.random.SeedSequence().entropy % (1 << 63))


def check_seed(seed) -> int:
    """``seed`` as an int, if it is an integer >= 0.

    Raises:
        ValueError: "seed must be None or an integer >= 0" (None is a caller's own case).
    """
    try:
        return check_int("seed", seed, 0)
    except ValueError:
        raise ValueError(f"seed must be None or an integer >= 0, got {seed!r}") from None


def next_game(seed, current_seed, current_game_id) -> tuple[int, int]:
    """Which game a ``reset(seed)`` plays, as (seed, game id).

    Game 0 of ``seed`` when one is given (of a fresh OS seed on the very first unseeded reset),
    otherwise the next game id of the current seed.

    Raises:
        ValueError: a seed that is not None or an integer >= 0.
    """
    if seed is not None:
        return check_seed(seed), 0
    if current_seed is None:
        return os_seed(), 0
    return current_seed, current_game_id + 1
