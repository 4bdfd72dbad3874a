"""Reaction-latency models (D7): how long a player's move takes from decision to landing.

Every model is stored as a quantile table of 65,536 integer milliseconds: entry i is the
model's quantile at (i + 0.5) / 65536, floored at the model's ``min_ms`` (at least 1 ms, so that
a player's decisions happen at strictly increasing times). A draw is a table lookup with a
16-bit uniform index, so the batched core (index from a counter-based hash, see ``streams.py``),
the reference game and :meth:`Latency.sample` (index from a ``numpy.random.Generator``) all
produce identical integers for identical indices, without floating-point drift between them.

Presets, from human reaction and card-movement times:

* ``pro``: mean 350 ms, sd 60 ms. A practised player's choice reaction (~200-250 ms simple
  reaction time, Jain et al. 2015, plus a little for the choice, Hick 1952) and a short,
  well-rehearsed reach to the pile (~100 ms, Fitts 1954).
* ``club``: mean 500 ms, sd 100 ms. A typical adult's two-to-five-way choice reaction time of
  350-450 ms (Hick-Hyman law; Welford 1980) plus ~100-150 ms of movement.
* ``novice``: mean 750 ms, sd 180 ms. Visual search over ten stock tops and two piles before
  the choice (Treisman & Gelade 1980 serial search slopes of ~40 ms/item) and slower movement.

All presets are log-normal (reaction times are right-skewed; Ratcliff 1993) with ``min_ms`` 150.

**A person's latency.** :meth:`Latency.fit` fits the presets' family to measured latencies (a
person's reaction plus motor time, as the real-time game records them) by maximum likelihood:
a log-normal shifted by ``shift_ms`` (the time no move is faster than), of which the presets are
the members with no shift. :meth:`Latency.save` writes a model as a profile file (JSON) and
:meth:`Latency.load` reads one; :meth:`Latency.parse` takes a profile file's path wherever a
latency is written, so ``"racer@path/to/me.json"`` is the racer at that person's speed in every
entry point (``spit_env.latency_fit`` holds the fit and the file format).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist

import numpy as np

from .checks import check_number, did_you_mean, is_int
from .latency_fit import LatencyFit, fit_shifted_lognormal, read_profile, write_profile

#: The file name ending of a latency profile (:meth:`Latency.parse` reads such a path as a file).
PROFILE_SUFFIX = ".json"


TABLE_SIZE = 1 << 16

PRESETS: dict[str, tuple[float, float]] = {
    "pro": (350.0, 60.0),
    "club": (500.0, 100.0),
    "novice": (750.0, 180.0),
}
#: Old preset names, still read (with a FutureWarning, which Python shows by default: the name is
#: typed by users, on command lines too): "expert" is also a player's name
#: (``agents.make("expert")``), so "expert@expert" read two ways.
DEPRECATED_PRESETS: dict[str, str] = {"expert": "pro"}
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

    Build one with :meth:`fixed`, :meth:`normal`, :meth:`lognormal` or :meth:`preset`, fit one to
    measured latencies with :meth:`fit`, read one from a profile file with :meth:`load`; all
    times are integer milliseconds.

    Attributes:
        kind: "fixed", "normal" or "lognormal".
        mean_ms: the mean of the model before flooring at ``min_ms``.
        std_ms: its standard deviation (0 for fixed).
        min_ms: the floor, >= 1.
        name: a preset name, or "" for a custom model.
        shift_ms: for "lognormal", the lower end of the distribution: the model is
            ``shift_ms`` + a log-normal (0 for the presets; 0 for the other kinds).
    """

    kind: str
    mean_ms: float
    std_ms: float = 0.0
    min_ms: int = 1
    name: str = ""
    shift_ms: float = 0.0
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
    def lognormal(cls, mean_ms: float, std_ms: float, min_ms: int = 1, *,
                  shift_ms: float = 0.0) -> Latency:
        """Log-normal with the given mean and standard deviation, optionally shifted.

        Both are those of the distribution itself, not of its logarithm; draws are rounded to
        whole ms and floored at ``min_ms``. With ``shift_ms`` > 0 the model is ``shift_ms`` plus a
        log-normal (no draw is below ``shift_ms``), ``mean_ms`` and ``std_ms`` still those of the
        whole: the family :meth:`fit` fits.

        Raises:
            ValueError: a negative or non-finite value, one above MAX_LATENCY_MS, ``min_ms`` < 1,
                or ``shift_ms`` not below ``mean_ms``.
        """
        model = cls._distribution("lognormal", mean_ms, std_ms, min_ms)
        shift = check_number("shift_ms", shift_ms, 0, MAX_LATENCY_MS)
        if shift == 0:
            return model
        if shift >= model.mean_ms:
            raise ValueError(
                f"shift_ms must be below mean_ms ({model.mean_ms:g}), got {shift_ms!r}")
        return cls("lognormal", model.mean_ms, model.std_ms, model.min_ms, shift_ms=float(shift))

    @classmethod
    def _distribution(cls, kind: str, mean_ms, std_ms, min_ms) -> Latency:
        return cls(kind, check_number("mean_ms", mean_ms, 1, MAX_LATENCY_MS),
                   check_number("std_ms", std_ms, 0, MAX_LATENCY_MS),
                   _whole_ms("min_ms", min_ms, 1))

    @classmethod
    def preset(cls, name: str) -> Latency:
        """A named human profile: "pro", "club" or "novice" (see the module docstring).

        "expert", the old name of "pro", is read as "pro" with a FutureWarning.

        Raises:
            ValueError: an unknown name.
        """
        if name in DEPRECATED_PRESETS:
            warnings.warn(f"the latency preset {name!r} is now {DEPRECATED_PRESETS[name]!r} "
                          f"({name!r} is also a player's name)", FutureWarning, stacklevel=2)
            name = DEPRECATED_PRESETS[name]
        if name not in PRESETS:
            raise ValueError(f"latency preset must be one of {sorted(PRESETS)}, got {name!r}"
                             f"{did_you_mean(name, PRESETS)}")
        mean, std = PRESETS[name]
        return cls("lognormal", mean, std, PRESET_MIN_MS, name)

    @classmethod
    def parse(cls, spec) -> Latency:
        """A Latency from a Latency, a preset name, a whole number of ms (fixed) or a profile file.

        A string ending in ``.json`` is the path of a profile file (:meth:`load`), so a profile
        "racer@me.json" seats the racer at the latency saved in ``me.json``.

        Raises:
            ValueError: anything else, or a profile file that is missing or not a profile.
        """
        if isinstance(spec, Latency):
            return spec
        if isinstance(spec, str):
            if spec.isdigit():
                return cls.fixed(int(spec))
            if spec.lower().endswith(PROFILE_SUFFIX):
                return cls.load(spec)
            return cls.preset(spec)
        if is_int(spec):
            return cls.fixed(int(spec))
        raise ValueError(
            f"latency must be a Latency, a preset name {sorted(PRESETS)}, a whole number of ms or "
            f"the path of a profile file (.json), got {spec!r}"
        )

    # --- a person's latency: fit, profile files ---------------------------------------------------
    @classmethod
    def fit(cls, latencies_ms) -> LatencyFit:
        """Fit the presets' family (a shifted log-normal) to measured latencies.

        By maximum likelihood: ``spit_env.latency_fit.fit_shifted_lognormal``.

        Args:
            latencies_ms: (n,) measured latencies in ms (decision to landing: a person's reaction
                plus motor time), each in 1..MAX_LATENCY_MS, n >= ``latency_fit.MIN_SAMPLES``.

        Returns:
            a ``LatencyFit``: ``.latency`` the fitted Latency, and the fit's report (n, the
            parameters, log-likelihood, Kolmogorov-Smirnov distance).

        Raises:
            ValueError: too few samples, samples that are not finite numbers in range, or samples
                that are all equal.
        """
        fit = fit_shifted_lognormal(latencies_ms, MAX_LATENCY_MS)
        model = cls.lognormal(round(fit["mean_ms"], 1), round(fit["std_ms"], 1), 1,
                              shift_ms=round(fit["shift_ms"], 1))
        return LatencyFit(latency=model, **fit)

    def save(self, path, *, fit: LatencyFit | None = None, source: str = "") -> Path:
        """Write this model as a profile file (JSON, versioned; ``latency_fit.write_profile``).

        Args:
            path: the file to write (folders created); its name should end in ``.json``, the
                ending :meth:`parse` reads as a file.
            fit: the fit it came from, stored beside it (its report and samples).
            source: a line saying where the latencies came from.

        Returns:
            the path written.
        """
        return write_profile(path, self.to_dict(), self.label, fit=fit, source=source)

    @classmethod
    def load(cls, path) -> Latency:
        """The model of a profile file written by :meth:`save` (``latency_fit.read_profile``).

        Raises:
            ValueError: no such file, not JSON, not a profile, an unknown version or a bad model,
                naming the file.
        """
        return cls.from_dict(read_profile(path)["latency"], f"{path}: latency")

    def to_dict(self) -> dict:
        """A JSON-serialisable description, which :meth:`from_dict` reads back.

        Keys: kind, mean_ms, std_ms, min_ms, name, and shift_ms when there is a shift.
        """
        out = {"kind": self.kind, "mean_ms": self.mean_ms, "std_ms": self.std_ms,
               "min_ms": self.min_ms, "name": self.name}
        if self.shift_ms:
            out["shift_ms"] = self.shift_ms
        return out

    @classmethod
    def from_dict(cls, data, name: str = "latency") -> Latency:
        """The Latency a :meth:`to_dict` description describes.

        Args:
            data: the description (a preset's is read by its name).
            name: what to call it in errors ("latency[0]").

        Raises:
            ValueError: not a dict, a missing key, an unknown kind or values that do not describe
                the model they build, naming ``name``.
        """
        if not isinstance(data, dict):
            raise ValueError(
                f"{name} must be a dict with kind, mean_ms, std_ms, min_ms, name; got {data!r}"
            )
        try:
            if data.get("name"):
                model = cls.preset(data["name"])
            elif data.get("kind") == "fixed":
                model = cls.fixed(data["mean_ms"])
            elif data.get("kind") == "normal":
                model = cls.normal(data["mean_ms"], data["std_ms"], data["min_ms"])
            elif data.get("kind") == "lognormal":
                model = cls.lognormal(data["mean_ms"], data["std_ms"], data["min_ms"],
                                      shift_ms=data.get("shift_ms", 0.0))
            else:
                raise ValueError(
                    f"kind must be 'fixed', 'normal' or 'lognormal', got {data.get('kind')!r}"
                )
        except KeyError as err:
            raise ValueError(f"{name} is missing {err.args[0]!r}") from None
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from None
        keys = ("kind", "mean_ms", "std_ms", "min_ms", "shift_ms")
        described = {k: data[k] for k in keys if k in data}
        built = {k: getattr(model, k) for k in keys}
        if any(built[k] != v for k, v in described.items()):
            shown = {k: v for k, v in built.items() if k != "shift_ms" or v}
            raise ValueError(f"{name}: {data!r} does not describe the model {model.label!r} "
                             f"({shown})")
        return model

    def pdf(self, ms) -> np.ndarray:
        """The model's probability density at ``ms`` (per ms), before rounding and the floor.

        Args:
            ms: times in ms (a number or an array of any shape).

        Returns:
            float64 array of ``ms``'s shape (0 where the model gives no time).

        Raises:
            ValueError: a fixed model (a single time has no density).
        """
        x = np.asarray(ms, dtype=np.float64)
        if self.kind == "fixed":
            raise ValueError("a fixed latency has no density: every move takes "
                             f"{self.mean_ms:g} ms")
        if self.kind == "normal":
            if self.std_ms == 0:
                raise ValueError("a normal latency with std_ms 0 has no density")
            z = (x - self.mean_ms) / self.std_ms
            return np.exp(-0.5 * z * z) / (self.std_ms * math.sqrt(2 * math.pi))
        mu, sigma = self.log_parameters()
        if sigma == 0:
            raise ValueError("a log-normal latency with std_ms 0 has no density")
        d = x - self.shift_ms
        out = np.zeros_like(d)
        pos = d > 0
        z = (np.log(d[pos]) - mu) / sigma
        out[pos] = np.exp(-0.5 * z * z) / (d[pos] * sigma * math.sqrt(2 * math.pi))
        return out

    def log_parameters(self) -> tuple[float, float]:
        """(mu, sigma): the mean and standard deviation of log(latency - shift_ms).

        For a log-normal model only.

        Raises:
            ValueError: a model of another kind.
        """
        if self.kind != "lognormal":
            raise ValueError(f"log_parameters are for a log-normal model, not {self.kind!r}")
        scale = self.mean_ms - self.shift_ms
        sigma2 = math.log1p((self.std_ms / scale) ** 2)
        return math.log(scale) - sigma2 / 2, math.sqrt(sigma2)

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
                mu, sigma = self.log_parameters()
                values = self.shift_ms + np.exp(mu + sigma * _standard_normal_quantiles())
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
        """A short readable name.

        E.g. "club", "normal(400±80ms)" or "lognormal(455±128ms, shift 198ms)".
        """
        if self.name:
            return self.name
        if self.kind == "fixed":
            return f"{int(self.mean_ms)}ms"
        if self.shift_ms:
            return f"{self.kind}({self.mean_ms:g}±{self.std_ms:g}ms, shift {self.shift_ms:g}ms)"
        return f"{self.kind}({self.mean_ms:g}±{self.std_ms:g}ms)"
