"""How the screen's gain predicts a win rate: a weighted line, and its figure.

The points are players with a published win rate against racer (docs/results/) and their gain
per decision on the screen; :func:`fit_line` fits win rate = intercept + slope x gain, weighted by
each win rate's precision, and :func:`plot_calibration` draws the points and the line
(matplotlib, the ``train`` extra, imported when drawing).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["fit_line", "plot_calibration", "wilson_sigma"]


def wilson_sigma(ci_low: float, ci_high: float) -> float:
    """The standard deviation a 95% interval stands for: its width over 2 x 1.96."""
    return (ci_high - ci_low) / (2 * 1.96)


def fit_line(x, y, sigma, *, xerr=None, through=None) -> dict:
    """Weighted least squares of ``y`` on ``x``, with the errors of both.

    Each point weighs ``1 / (sigma**2 + slope**2 * xerr**2)`` (the effective-variance method:
    an error in ``x`` moves the point along the line's slope), iterated from the fit on
    ``sigma`` alone until the slope settles.

    Args:
        x: (n,) the points' abscissae (the screen gains).
        y: (n,) their ordinates (the win rates).
        sigma: (n,) the standard deviation of each ``y`` (> 0).
        xerr: None, or (n,) the standard deviation of each ``x`` (>= 0).
        through: None (slope and intercept fitted), or a point ``(x0, y0)`` the line is held
            to (the slope alone fitted).

    Returns:
        ``slope``, ``intercept``, ``slope_se``, ``r2`` (weighted, of the fitted line against
        the weighted mean), ``pearson_r`` (unweighted), ``chi2`` and ``dof`` (the squared
        residuals in units of each point's standard deviation, summed; n minus the
        parameters), ``residuals`` (n,) and ``point_sd`` (n,) each point's standard deviation
        about the line.
    """
    x, y, s = (np.asarray(v, np.float64) for v in (x, y, sigma))
    ex = np.zeros_like(x) if xerr is None else np.asarray(xerr, np.float64)
    slope = 0.0
    for _ in range(50):
        w = 1.0 / (s ** 2 + slope ** 2 * ex ** 2)
        fit = _weighted_line(x, y, w, through)
        if abs(fit[0] - slope) <= 1e-9 * max(1.0, abs(slope)):
            break
        slope = fit[0]
    slope, intercept, slope_se, params = fit
    w = 1.0 / (s ** 2 + slope ** 2 * ex ** 2)
    resid = y - (slope * x + intercept)
    mean = (w * y).sum() / w.sum()
    r2 = 1.0 - (w * resid ** 2).sum() / (w * (y - mean) ** 2).sum()
    return dict(slope=float(slope), intercept=float(intercept), slope_se=float(slope_se),
                r2=float(r2), pearson_r=float(np.corrcoef(x, y)[0, 1]),
                chi2=float((w * resid ** 2).sum()), dof=int(x.size - params),
                residuals=resid.tolist(), point_sd=(1.0 / np.sqrt(w)).tolist())


def _weighted_line(x, y, w, through) -> tuple[float, float, float, int]:
    """(slope, intercept, slope's standard error, parameters) of the weighted fit."""
    if through is None:
        a = np.stack([x, np.ones_like(x)], axis=1)
        cov = np.linalg.inv(a.T @ (a * w[:, None]))
        slope, intercept = cov @ (a.T @ (w * y))
        return float(slope), float(intercept), float(np.sqrt(cov[0, 0])), 2
    x0, y0 = through
    dx, dy = x - x0, y - y0
    slope = float((w * dx * dy).sum() / (w * dx * dx).sum())
    return slope, y0 - slope * x0, float(1.0 / np.sqrt((w * dx * dx).sum())), 1


def plot_calibration(points: list[dict], fit: dict, path: str | Path | None = None):
    """The win rate against racer of each point over its screen gain, and the fitted line.

    Args:
        points: dicts with ``label``, ``gain``, ``gain_se``, ``win_rate``, ``ci_low``,
            ``ci_high``.
        fit: :func:`fit_line`'s result (``slope``, ``intercept``, ``r2``).
        path: where to write the PNG (None: not written).

    Returns:
        the matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    from agents.arena import save_figure

    x = np.array([p["gain"] for p in points])
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    for i, p in enumerate(points):
        ax.errorbar(p["gain"], p["win_rate"], xerr=1.96 * p["gain_se"],
                    yerr=[[p["win_rate"] - p["ci_low"]], [p["ci_high"] - p["win_rate"]]],
                    fmt="o", ms=4, capsize=2, color="tab:blue", alpha=0.8)
        ax.annotate(p["label"], (p["gain"], p["win_rate"]), textcoords="offset points",
                    xytext=(4, 4 if i % 2 else -9), fontsize=7)  # alternate: fewer overlaps
    xs = np.linspace(min(x.min(), 0.0), max(x.max(), 0.0), 50)
    ax.plot(xs, fit["intercept"] + fit["slope"] * xs, color="tab:red", lw=1,
            label=f"win rate = {fit['intercept']:.3f} + {fit['slope']:.1f} x gain "
                  f"(weighted R$^2$ {fit['r2']:.2f})")
    ax.axhline(0.5, color="grey", lw=0.5)
    ax.axvline(0.0, color="grey", lw=0.5)
    ax.set_xlabel("screen gain per decision over racer's move (planner units; 95% bars)")
    ax.set_ylabel("win rate against racer (95% Wilson)")
    ax.legend(loc="upper left", fontsize=8)
    return save_figure(fig, path)
