"""A person's latency as a model: the maximum-likelihood fit and the profile file.

**The family.** The presets (``latency.PRESETS``) are log-normal: reaction times are
right-skewed. Measured human latencies also have a floor below which no move comes (the time
to see, decide and move at all), so the fit is a *shifted* log-normal, ``shift + exp(N(mu,
sigma^2))``, whose members with no shift are the presets' family. ``Latency.fit`` returns it as
a ``Latency.lognormal(mean_ms, std_ms, shift_ms=...)``, which the core draws from like any other
model; this module holds the numbers (:func:`fit_shifted_lognormal`) and knows nothing of
``Latency``, which imports it (one direction).

**The fit.** For a given shift ``g`` the log-normal's maximum-likelihood parameters are closed
form (the mean and the standard deviation of ``log(x - g)``), so the log-likelihood is profiled
over the shift alone: a grid on ``[0, min(x) - 0.5]`` (the samples are whole ms, so the fastest
one may have been half a ms faster), spaced geometrically towards the upper end where the profile
changes fastest, then a golden-section search between the best grid point's neighbours. Near
``min(x)`` the three-parameter log-normal's likelihood grows without bound; stopping half a ms
short keeps it finite, and the report says when the shift sits at either end of its range.
NumPy only.

**The profile file** (:func:`write_profile`, :func:`read_profile`; ``Latency.save`` and
``Latency.load``): JSON, versioned::

    {"format": "spit-env latency profile", "version": 1,
     "latency": {"kind": "lognormal", "mean_ms": ..., "std_ms": ..., "min_ms": 1, "name": "",
                 "shift_ms": ...},
     "label": "lognormal(455±128ms, shift 198ms)", "source": "...",
     "fit": {"n": ..., "shift_ms": ..., "mu": ..., ...} or null,
     "latencies_ms": [...] or null}

Only ``format``, ``version`` and ``latency`` are read back into the model; the rest says where it
came from (the samples let anyone fit them again).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["LatencyFit", "fit_shifted_lognormal", "write_profile", "read_profile",
           "MIN_SAMPLES", "PROFILE_FORMAT", "PROFILE_VERSION"]

#: The fewest latencies :func:`fit_latency` fits three parameters to.
MIN_SAMPLES = 10
PROFILE_FORMAT = "spit-env latency profile"
PROFILE_VERSION = 1
_GRID = 160  # shifts on the first, coarse pass
_CHUNK = 16  # shifts per array operation (memory: _CHUNK x n floats)


@dataclass(frozen=True)
class LatencyFit:
    """A maximum-likelihood fit of the shifted log-normal (module docstring).

    Attributes:
        latency: the fitted model (``Latency.lognormal``, parameters rounded to 0.1 ms).
        n: the number of latencies fitted.
        shift_ms: the fitted shift (no latency is below it), ms.
        mu, sigma: mean and standard deviation of ``log(latency - shift_ms)``.
        mean_ms, std_ms, median_ms: the fitted model's mean, standard deviation and median, ms.
        log_likelihood: the log-likelihood of the samples at the fit (densities per ms).
        ks_distance: the Kolmogorov-Smirnov distance between the samples and the fitted model
            (the largest gap between the two distribution functions, 0-1).
        shift_at_bound: "" if the shift is inside its range, "zero" at 0 (a plain log-normal,
            as the presets) or "fastest" at half a ms below the fastest sample.
        latencies_ms: (n,) float64, the samples, read-only.
    """

    latency: object  # a spit_env.latency.Latency (this module does not import it)
    n: int
    shift_ms: float
    mu: float
    sigma: float
    mean_ms: float
    std_ms: float
    median_ms: float
    log_likelihood: float
    ks_distance: float
    shift_at_bound: str
    latencies_ms: np.ndarray = field(repr=False, compare=False)

    def report(self) -> dict:
        """The fit's figures as a JSON-serialisable dict (the samples left out)."""
        return {"n": self.n, "shift_ms": self.shift_ms, "mu": self.mu, "sigma": self.sigma,
                "mean_ms": self.mean_ms, "std_ms": self.std_ms, "median_ms": self.median_ms,
                "log_likelihood": self.log_likelihood, "ks_distance": self.ks_distance,
                "shift_at_bound": self.shift_at_bound, "label": self.latency.label}

    def save(self, path, *, source: str = "") -> Path:
        """Write the fitted model, this report and the samples as a profile file."""
        return self.latency.save(path, fit=self, source=source)


def _samples(latencies_ms, max_ms: int) -> np.ndarray:
    try:
        x = np.array(latencies_ms, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("latencies_ms must be a sequence of numbers (ms), got "
                         f"{type(latencies_ms).__name__}") from None
    if x.ndim != 1:
        raise ValueError(f"latencies_ms must be one-dimensional, got shape {x.shape}")
    if x.size < MIN_SAMPLES:
        raise ValueError(f"latencies_ms: a fit needs at least {MIN_SAMPLES} latencies, got "
                         f"{x.size}")
    bad = ~np.isfinite(x) | (x < 1) | (x > max_ms)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(f"latencies_ms must be finite numbers in 1..{max_ms} ms; "
                         f"entry {k} is {latencies_ms[k]!r}")
    if np.ptp(x) == 0:
        raise ValueError(f"latencies_ms are all {x[0]:g} ms: a fit needs some spread")
    return x


def _profile(x: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """(G,) the log-likelihood at each shift, mu and sigma at their closed-form best."""
    n = x.size
    out = np.empty(shifts.size)
    for k in range(0, shifts.size, _CHUNK):
        logs = np.log(x[None, :] - shifts[k:k + _CHUNK, None])
        var = logs.var(axis=1)
        out[k:k + _CHUNK] = -logs.sum(axis=1) - 0.5 * n * np.log(2 * math.pi * var) - 0.5 * n
    return out


def _golden_max(f, lo: float, hi: float, iters: int = 48) -> float:
    """The argmax of a unimodal f on [lo, hi]."""
    ratio = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc >= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = f(d)
    return (a + b) / 2


def _normal_cdf(z: np.ndarray) -> np.ndarray:
    erf = np.frompyfunc(math.erf, 1, 1)
    return 0.5 * (1.0 + erf(z / math.sqrt(2)).astype(np.float64))


def fit_shifted_lognormal(latencies_ms, max_ms: int) -> dict:
    """Fit a shifted log-normal to measured latencies by maximum likelihood (module docstring).

    Args:
        latencies_ms: (n,) latencies in ms, each a finite number in 1..``max_ms``, n >=
            :data:`MIN_SAMPLES`, not all equal.
        max_ms: the longest latency allowed (``latency.MAX_LATENCY_MS``).

    Returns:
        :class:`LatencyFit`'s fields but ``latency``, as a dict (``Latency.fit`` adds the model).

    Raises:
        ValueError: too few samples, a sample that is not a finite number in range (naming its
            index), samples that are all equal, or not a one-dimensional sequence of numbers.
    """
    x = _samples(latencies_ms, max_ms)
    n, fastest = x.size, float(x.min())
    top = fastest - 0.5  # the highest shift: half a ms below the fastest (whole-ms) sample
    gaps = np.geomspace(0.5, fastest, _GRID)  # distance of the shift below the fastest sample
    shifts = np.clip(fastest - gaps, 0.0, top)
    ll = _profile(x, shifts)
    best = int(np.argmax(ll))
    # the neighbours of the best grid point bracket the maximum (shifts descend with the index)
    lo = shifts[min(best + 1, _GRID - 1)]
    hi = shifts[max(best - 1, 0)]
    shift = _golden_max(lambda g: float(_profile(x, np.array([g]))[0]), lo, hi) if hi > lo \
        else float(shifts[best])
    for edge in (0.0, top):  # the ends of the range, where the grid may have its maximum
        if _profile(x, np.array([edge]))[0] > _profile(x, np.array([shift]))[0]:
            shift = edge
    logs = np.log(x - shift)
    mu, sigma = float(logs.mean()), float(logs.std())
    log_likelihood = float(_profile(x, np.array([shift]))[0])
    scale = math.exp(mu + sigma * sigma / 2)
    mean, std = shift + scale, scale * math.sqrt(math.expm1(sigma * sigma))
    z = np.sort((logs - mu) / sigma)
    cdf = _normal_cdf(z)
    ranks = np.arange(1, n + 1) / n
    ks = float(max((ranks - cdf).max(), (cdf - ranks + 1.0 / n).max()))
    bound = "zero" if shift <= 0 else "fastest" if shift >= top else ""
    samples = x.copy()
    samples.setflags(write=False)
    return dict(n=n, shift_ms=shift, mu=mu, sigma=sigma, mean_ms=mean, std_ms=std,
                median_ms=shift + math.exp(mu), log_likelihood=log_likelihood, ks_distance=ks,
                shift_at_bound=bound, latencies_ms=samples)


def write_profile(path, latency: dict, label: str, *, fit: LatencyFit | None = None,
                  source: str = "") -> Path:
    """Write a model as a profile file (JSON, module docstring); folders are created.

    Args:
        path: the file (its name should end in ``.json``: ``Latency.parse`` reads such a path).
        latency: the model as ``Latency.to_dict`` gives it.
        label: the model's label (``Latency.label``), for a reader of the file.
        fit: the fit it came from: its report and samples are stored too.
        source: a line saying where the latencies came from.

    Returns:
        the path written.
    """
    data = {"format": PROFILE_FORMAT, "version": PROFILE_VERSION, "latency": latency,
            "label": label, "source": str(source),
            "fit": fit.report() if fit is not None else None,
            "latencies_ms": [float(v) for v in fit.latencies_ms] if fit is not None else None}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_profile(path) -> dict:
    """Read a profile file written by :func:`write_profile`.

    Returns:
        dict: ``latency`` (the model's dict, for ``Latency.from_dict``), ``fit`` (the report or
        None), ``latencies_ms`` (list or None), ``source`` (str).

    Raises:
        ValueError: no such file, not JSON, not a profile, or a version this package does not
            read, each naming the file.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no latency profile file at {str(path)!r}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{str(path)!r} is not a latency profile: {err}") from None
    if not isinstance(data, dict) or data.get("format") != PROFILE_FORMAT:
        raise ValueError(f"{str(path)!r} is not a latency profile (no \"format\": "
                         f"{PROFILE_FORMAT!r})")
    version = data.get("version")
    if version != PROFILE_VERSION:
        raise ValueError(f"{str(path)!r} is a latency profile of version {version!r}; this "
                         f"spit-env reads version {PROFILE_VERSION}")
    return {"latency": data.get("latency"), "fit": data.get("fit"),
            "latencies_ms": data.get("latencies_ms"), "source": data.get("source", "")}
