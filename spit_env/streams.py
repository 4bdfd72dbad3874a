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
``SEAT``           0, 0                    the learner's seat when the environments draw it
                                           (``learner_seat="random"``): lowest bit
``POLICY``         seat, decision index    the key of a policy's draws at that decision
                                           (:class:`RowStreams`; the decision index is the
                                           seat's ``decisions`` count in the core state)
``PLAN``           rollout k, part         a planner's draws for a row it plans, from the
                                           row's own key (``agents.planner``): part 0 the
                                           determinization of rollout k, 1 its game
                                           stream, 2 the reference move
=================  ======================  =============================================

A policy's draws (:class:`RowStreams`): the environments hand every policy an rng whose draws
of shape (B, ...) take row i's values from row i's own stream, keyed by (seed, game id, seat,
decision index); so a game's moves depend on that game only, not on the other games deciding in
the same call, the batch size or what the process did before.

Seeds of the environments (:func:`next_game`): game ``g`` of seed ``s`` is the stream key
``game_key(s, g)``; ``reset(seed=s)`` plays game 0 of ``s``, a later ``reset()`` the next game
id, and a first ``reset()`` without a seed draws one from the operating system (:func:`os_seed`),
never from the global NumPy or Python generators.
"""

from __future__ import annotations

import numpy as np

from .checks import check_int

DEAL, REDEAL, LATENCY, TIE, SEAT, POLICY, PLAN = 1, 2, 3, 4, 5, 6, 7

_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_M1 = _U64(0xBF58476D1CE4E5B9)
_M2 = _U64(0x94D049BB133111EB)
_MASK64 = (1 << 64) - 1
_POLICY_SALT = _U64((POLICY * 0x9E3779B97F4A7C15) & _MASK64)  # as draw() salts POLICY
_STEPS: dict = {}


def _golden_steps(n: int) -> np.ndarray:
    """(n,) uint64 ``arange(n) * golden`` (wrapping), cached read-only per n."""
    steps = _STEPS.get(n)
    if steps is None:
        if len(_STEPS) > 64:
            _STEPS.clear()
        with np.errstate(over="ignore"):
            steps = np.arange(n, dtype=_U64) * _GOLDEN
        steps.flags.writeable = False
        _STEPS[n] = steps
    return steps


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


def _mix_in_place(x: np.ndarray) -> np.ndarray:
    """:func:`mix64` of a uint64 array (at least 1-d), in place; returns ``x``.

    For the per-row draws of :class:`RowStreams` (no temporary arrays beyond the shifts);
    wrapping arithmetic on arrays never warns (only NumPy scalars do).
    """
    x ^= x >> _U64(30)
    x *= _M1
    x ^= x >> _U64(27)
    x *= _M2
    x ^= x >> _U64(31)
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


def seat_draws(keys) -> np.ndarray:
    """(n,) int64 0 or 1: the learner seats of the games of ``keys`` ((n,) :func:`game_key`)."""
    return (draw(np.asarray(keys).reshape(-1), SEAT, 0, 0) & _U64(1)).astype(np.int64)


class RowStreams:
    """An rng for a batched policy call: draws of shape (B, ...) are per row (module docstring).

    Row i's values come from its own counter-based stream ``draw(keys[i], POLICY, call, j)``
    (``call``: the how-many-th draw of this object, ``j``: the element within the row), so they
    depend on row i's key alone. ``random``, ``integers`` and ``gumbel`` with a size whose first
    dimension is B are drawn so. Any other draw (another shape, or another Generator method) comes
    from one ``numpy.random.Generator`` seeded with all B keys: reproducible, but shared by the B
    rows, so with B > 1 those draws depend on which games decide together.

    Args:
        keys: (B,) uint64 keys, one per row (e.g. ``draw(game_key, POLICY, seat, decision)``).
    """

    def __init__(self, keys):
        self.keys = _u64(np.asarray(keys)).reshape(-1)
        self._calls = 0
        self._generator = None
        self._salted = None  # mix64(keys ^ POLICY * golden), the first round of every draw

    def _bits(self, size, rows=None) -> np.ndarray | None:
        """(size) uint64 per-row draws, or None if ``size`` does not lead with B.

        ``rows``: None, or a (B,) bool mask: only those rows' draws, (R, ...) (one call all the
        same, so the later draws do not change).
        """
        if size is None:
            return None
        shape = (int(size),) if np.ndim(size) == 0 else tuple(int(n) for n in size)
        if not shape or shape[0] != self.keys.size:
            return None
        self._calls += 1
        n = int(np.prod(shape[1:], dtype=np.int64))
        if rows is not None and not rows.any():
            return np.zeros((0,) + shape[1:], _U64)
        # draw(keys[:, None], POLICY, calls, arange(n)), its rounds computed once per row
        if self._salted is None:
            self._salted = mix64(self.keys ^ _POLICY_SALT)
        salted = self._salted if rows is None else self._salted[rows]
        shape = (salted.size,) + shape[1:]
        with np.errstate(over="ignore"):
            h = _mix_in_place(salted ^ _U64(self._calls))
            x = h[:, None] + _golden_steps(n)
            return _mix_in_place(x).reshape(shape)

    @property
    def shared(self) -> np.random.Generator:
        """The Generator of the draws that are not per row (seeded with all B keys)."""
        if self._generator is None:
            self._generator = np.random.default_rng([int(k) for k in self.keys])
        return self._generator

    def random(self, size=None, dtype=np.float64):
        """Uniform floats in [0, 1), as ``Generator.random``."""
        bits = self._bits(size)
        if bits is None:
            return self.shared.random(size, dtype)
        bits >>= _U64(11)
        out = bits.astype(np.float64)
        out *= 2.0 ** -53
        return out.astype(dtype, copy=False)

    def random_where(self, rows, size, dtype=np.float64):
        """``random(size)[rows]``, computed for the rows ``rows`` ((B,) bool) only.

        The draw counts as one call, as ``random(size)`` does, so the draws after it are the
        same either way; a bot that needs only some rows' values (its tie-breaks where a row
        has two or more options) pays for those rows alone.
        """
        rows = np.asarray(rows, bool)
        bits = self._bits(size, rows)
        if bits is None:
            return self.shared.random(size, dtype)[rows]
        bits >>= _U64(11)
        out = bits.astype(np.float64)
        out *= 2.0 ** -53
        return out.astype(dtype, copy=False)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """Integers in [low, high) (``endpoint``: [low, high]), as ``Generator.integers``."""
        bits = self._bits(size)
        if bits is None:
            return self.shared.integers(low, high, size, dtype, endpoint)
        if high is None:
            low, high = 0, low
        span = int(high) - int(low) + (1 if endpoint else 0)
        if span <= 0:
            raise ValueError(f"high must be greater than low, got low={low}, high={high}")
        # the modulo's bias is below span / 2**64: nothing a policy could notice
        return (bits % _U64(span)).astype(np.int64).astype(dtype) + dtype(low)

    def gumbel(self, loc=0.0, scale=1.0, size=None):
        """Gumbel draws, as ``Generator.gumbel``."""
        bits = self._bits(size)
        if bits is None:
            return self.shared.gumbel(loc, scale, size)
        u = ((bits >> _U64(11)).astype(np.float64) + 0.5) * 2.0 ** -53  # in (0, 1)
        return loc - scale * np.log(-np.log(u))

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.shared, name)


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
