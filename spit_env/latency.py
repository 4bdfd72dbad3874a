"""Reaction-latency models (D7): how long a player's move takes from decision to landing.

Every model is stored as a quantile table of 65,536 integer milliseconds: entry i is the
model's quantile at (i + 0.5) / 65536, floored at the model's ``min_ms`` (at least 1 ms, so that
a player's decisions happen at strictly increasing times). A draw is a table lookup with a
16-bit uniform index, so the batched core (index from a counter-based hash, see ``streams.py``),
the reference game and :meth:`Latency.sample` (index from a ``numpy.random.Generator``) all
produce identical integers for identical indices, without floating-point drift between them.

Presets, from human reaction and card-movement times:

* ``expert``: mean 350 ms, sd 60 ms. A practised player's choice reaction (~200-250 ms simple
  reaction time, Jain et al. 2015, plus a little for the choice, Hick 1952) and a short,
  well-rehearsed reach to the pile (~100 ms, Fitts 1954).
* ``club``: mean 500 ms, sd 100 ms. A typical adult's two-to-five-way choice reaction time of
  350-450 ms (Hick-Hyman law; Welford 1980) plus ~100-150 ms of movement.
* ``novice``: mean 750 ms, sd 180 ms. Visual search over ten stock tops and two piles before
  the choice (Treisman & Gelade 1980 serial search slopes of ~40 ms/item) and slower movement.

All presets are log-normal (reaction times are right-skewed; Ratcliff 1993) with ``min_ms`` 150.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from .checks import check_number, did_you_mean, is_int

TABLE_SIZE = 1 << 16

PRESETS: dict[str, tuple[float, float]] = {
    "expert": (350.0, 60.0),
    "club": (500.0, 100.0),
    "novice": (750.0, 180.0),
}
PRESET_MIN_MS = 150
#: The longest latency a model may give, in ms (one hour: far beyond any player, and a game's
#: clock plus a latency stays within int32 for every ``max_game_ms``). Models are checked
#: against it and their quantile tables clipped to it.
MAX_LATENCY_MS = 3_600_000


def _whole_ms(name: str, value, minimum: int) -> int:
    """``value`` as whole ms >= ``minimum`` (an integer, or a float without a fraction)."""
    ms = check_number(name, value, minimum, MAX_LATENCY_MS)
    if ms != int(ms):
        raise ValueError(f"{name} must be a whole number of milliseconds, got {value!r}")
    return int(ms)


_Z = None


def _standard_normal_quantiles() -> np.ndarray:
    global _Z
    if _Z is None:
        inv = NormalDist().inv_cdf
        _Z = np.array([inv((i + 0.5) / TABLE_SIZE) for i in range(TABLE_SIZE)])
    return _Z


@dataclass(frozen=True)
class Latency:
    """A latency model.

    Build one with :meth:`fixed`, :meth:`normal`, :meth:`lognormal` or :meth:`preset`; all times are
    integer milliseconds.

    Attributes:
        kind: "fixed", "normal" or "lognormal".
        mean_ms: the mean of the model before flooring at ``min_ms``.
        std_ms: its standard deviation (0 for fixed).
        min_ms: the floor, >= 1.
        name: a preset name, or "" for a custom model.
    """

    kind: str
    mean_ms: float
    std_ms: float = 0.0
    min_ms: int = 1
    name: str = ""
    _table: np.ndarray = field(default=None, repr=False, compare=False, hash=False)

    # --- constructors ---------------------------------------------------------------------------
    @classmethod
    def fixed(cls, ms: int) -> Latency:
        """Every move takes exactly ``ms`` milliseconds (an integer >= 1).

        Raises:
            ValueError: ``ms`` is not a whole number in 1..MAX_LATENCY_MS.
        """
        ms = _whole_ms("latency ms", ms, 1)
        return cls("fixed", float(ms), 0.0, ms)

    @classmethod
    def normal(cls, mean_ms: float, std_ms: float, min_ms: int = 1) -> Latency:
        """Normal(mean_ms, std_ms), rounded to whole ms and floored at ``min_ms``.

        Raises:
            ValueError: a negative or non-finite value, one above MAX_LATENCY_MS, or ``min_ms`` < 1.
        """
        return cls._distribution("normal", mean_ms, std_ms, min_ms)

    @classmethod
    def lognormal(cls, mean_ms: float, std_ms: float, min_ms: int = 1) -> Latency:
        """Log-normal with the given mean and standard deviation.

        Both are those of the distribution itself, not of its logarithm; draws are rounded to
        whole ms and floored at ``min_ms``.

        Raises:
            ValueError: a negative or non-finite value, one above MAX_LATENCY_MS, or ``min_ms`` < 1.
        """
        return cls._distribution("lognormal", mean_ms, std_ms, min_ms)

    @classmethod
    def _distribution(cls, kind: str, mean_ms, std_ms, min_ms) -> Latency:
        return cls(kind, check_number("mean_ms", mean_ms, 1, MAX_LATENCY_MS),
                   check_number("std_ms", std_ms, 0, MAX_LATENCY_MS),
                   _whole_ms("min_ms", min_ms, 1))

    @classmethod
    def preset(cls, name: str) -> Latency:
        """A named human profile: "expert", "club" or "novice" (see the module docstring).

        Raises:
            ValueError: an unknown name.
        """
        if name not in PRESETS:
            raise ValueError(f"latency preset must be one of {sorted(PRESETS)}, got {name!r}"
                             f"{did_you_mean(name, PRESETS)}")
        mean, std = PRESETS[name]
        return cls("lognormal", mean, std, PRESET_MIN_MS, name)

    @classmethod
    def parse(cls, spec) -> Latency:
        """A Latency from a Latency, a preset name, or a whole number of ms (fixed).

        Raises:
            ValueError: anything else.
        """
        if isinstance(spec, Latency):
            return spec
        if isinstance(spec, str):
            if spec.isdigit():
                return cls.fixed(int(spec))
            return cls.preset(spec)
        if is_int(spec):
            return cls.fixed(int(spec))
        raise ValueError(
            f"latency must be a Latency, a preset name {sorted(PRESETS)} or a whole number of ms, "
            f"got {spec!r}"
        )

    # --- sampling -------------------------------------------------------------------------------
    @property
    def table(self) -> np.ndarray:
        """(65536,) int32 quantile table in ms, ascending: entry i is the (i + 0.5)/65536 one."""
        if self._table is None:
            if self.kind == "fixed":
                values = np.full(TABLE_SIZE, self.mean_ms)
            elif self.kind == "normal":
                values = self.mean_ms + self.std_ms * _standard_normal_quantiles()
            else:
                sigma2 = math.log1p((self.std_ms / self.mean_ms) ** 2)
                mu = math.log(self.mean_ms) - sigma2 / 2
                values = np.exp(mu + math.sqrt(sigma2) * _standard_normal_quantiles())
            table = np.clip(np.rint(values), self.min_ms, MAX_LATENCY_MS).astype(np.int32)
            table.setflags(write=False)
            object.__setattr__(self, "_table", table)
        return self._table

    def from_index(self, index):
        """Latency in ms for 16-bit uniform indices 0-65535 (int or array of ints)."""
        return self.table[index]

    def sample(self, rng: np.random.Generator, size: int | None = None):
        """Draw latencies in ms: an int, or an (size,) int32 array.

        Raises:
            ValueError: ``rng`` is not a numpy.random.Generator.
        """
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        index = rng.integers(0, TABLE_SIZE, size=size)
        out = self.table[index]
        return int(out) if size is None else out

    @property
    def label(self) -> str:
        """A short readable name, e.g. "club" or "normal(400±80ms)"."""
        if self.name:
            return self.name
        if self.kind == "fixed":
            return f"{int(self.mean_ms)}ms"
        return f"{self.kind}({self.mean_ms:g}±{self.std_ms:g}ms)"
