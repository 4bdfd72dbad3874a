"""Statistics of match results: Wilson score intervals and Bradley-Terry ratings."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["wilson_interval", "bradley_terry"]


def wilson_interval(successes, trials, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Args:
        successes: the count of successes (may be fractional, e.g. draws as halves), 0..trials.
        trials: the number of trials, >= 0 (0 gives the vacuous interval (0, 1)).
        confidence: in (0, 1).

    Returns:
        (low, high), the interval's bounds in [0, 1].

    Raises:
        ValueError: counts out of range or a bad confidence.
    """
    from scipy.stats import norm

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got successes={successes}, "
                         f"trials={trials}")
    if trials == 0:
        return 0.0, 1.0
    z = float(norm.ppf(0.5 + confidence / 2))
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    # at the ends the exact bound is 0 / 1; rounding would leave 1e-17 there
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == trials else min(1.0, centre + half)
    return lo, hi


def bradley_terry(names: Sequence[str], score: np.ndarray, games: np.ndarray,
                  ridge: float = 1e-3) -> dict[str, float]:
    """Bradley-Terry ratings on the Elo scale, mean 0.

    Args:
        names: the K players.
        score: (K, K) score of row i against column j (wins + draws / 2).
        games: (K, K) games between i and j (symmetric).
        ridge: the weight of a Gaussian prior on the strengths (keeps them finite).

    Returns:
        {name: rating}; P(i beats j) = 1 / (1 + 10 ** ((r_j - r_i) / 400)).

    Raises:
        ValueError: ``score`` or ``games`` not of shape (K, K).
    """
    from scipy.optimize import minimize

    k = len(names)
    score = np.asarray(score, float)
    games = np.asarray(games, float)
    if score.shape != (k, k) or games.shape != (k, k):
        raise ValueError(f"score and games must be ({k}, {k}) arrays")

    def nll(theta):
        diff = theta[:, None] - theta[None, :]
        logp = -np.logaddexp(0.0, -diff)  # log sigmoid(diff)
        value = -(score * logp).sum() + ridge * (theta ** 2).sum()
        p = 1.0 / (1.0 + np.exp(-diff))
        grad_m = score * (1 - p)  # d/d diff of score * log p
        grad = -(grad_m.sum(axis=1) - grad_m.sum(axis=0)) + 2 * ridge * theta
        return value, grad

    res = minimize(nll, np.zeros(k), jac=True, method="L-BFGS-B")
    theta = res.x - res.x.mean()
    scale = 400.0 / math.log(10.0)
    return {name: float(scale * t) for name, t in zip(names, theta, strict=True)}
