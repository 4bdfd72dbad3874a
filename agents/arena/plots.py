"""Figures of match results: the win-rate matrix, the latency curve, and saving a figure.

matplotlib (the ``train`` extra) is imported when a figure is drawn.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from spit_env.progress import counted

__all__ = ["plot_winrate_matrix", "plot_latency_curve", "save_figure"]


def plot_winrate_matrix(result: dict, path: str | Path | None = None):
    """Heatmap of the win rate of each row player against each column player.

    Each cell is annotated with the rate and its 95% interval; ``result`` is a
    :func:`agents.arena.round_robin` result. Uses the current matplotlib backend (the tournament
    script selects Agg).

    Returns:
        the matplotlib Figure (also saved as a PNG at ``path`` if given).
    """
    import matplotlib.pyplot as plt

    labels = result["players"]
    rate, lo, hi = (np.asarray(result[k]) for k in ("win_rate", "ci_low", "ci_high"))
    k = len(labels)
    fig, ax = plt.subplots(figsize=(1.6 * k + 2, 1.3 * k + 1.5))
    im = ax.imshow(rate, vmin=0, vmax=1, cmap="RdBu")
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            dark = abs(rate[i, j] - 0.5) > 0.3
            ax.text(j, i, f"{rate[i, j]:.3f}\n[{lo[i, j]:.3f}, {hi[i, j]:.3f}]", ha="center",
                    va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(k), labels, rotation=30, ha="right")
    ax.set_yticks(range(k), labels)
    ax.set_xlabel("opponent")
    ax.set_ylabel("player")
    deals = counted(result["deals"], "duplicate deal")
    ax.set_title(f"win rate of row vs column, {deals} per pairing\n"
                 "(draws count 1/2; 95% Wilson interval)", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.046)
    return save_figure(fig, path)


def plot_latency_curve(curve: dict, path: str | Path | None = None):
    """Plot the latency study: win rate against the varied mean latency, with the 95% band.

    Args:
        curve: the dict of :func:`agents.arena.latency_curve`.
        path: where to save the PNG, if given.

    Returns:
        the matplotlib Figure (also saved as a PNG at ``path`` if given).
    """
    import matplotlib.pyplot as plt

    pts = curve["points"]
    x = np.array([p["mean_ms"] for p in pts])
    y = np.array([p["win_rate"] for p in pts])
    lo = np.array([p["ci_low"] for p in pts])
    hi = np.array([p["ci_high"] for p in pts])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.fill_between(x, lo, hi, alpha=0.3, label="95% Wilson interval")
    ax.plot(x, y, "o-", label=f"{curve['bot']} vs {curve['bot']}@{curve['reference']}")
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.axvline(curve["reference_mean_ms"], color="grey", lw=0.8, ls=":")
    ax.set_xlabel("mean latency of the varied player (ms)")
    ax.set_ylabel("win rate of the varied player")
    ax.set_ylim(0, 1)
    deals = counted(curve["deals"], "duplicate deal")
    ax.set_title(f"How much is speed worth? ({deals} per point)", fontsize=10)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def save_figure(fig, path: str | Path | None = None):
    """Lay out ``fig`` and, with a ``path``, write it there as PNG (120 dpi; makes the folders).

    Returns:
        ``fig``.
    """
    fig.tight_layout()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
    return fig
