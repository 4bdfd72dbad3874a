"""The teachers' labels as training targets: soft policy targets and value targets.

A label is one decision with two or more legal moves in the learner's seat. Its policy target is
a distribution over the 23 actions, zero outside the legal moves:

* from the planner (:func:`planner_targets`): a softmax over the row's candidate moves of
  ``score / temperature``, the score being each move's ``mean_diff`` (its mean rollout value
  minus the reference move's on the same futures, ``agents.planner.Plan``; 0 for the reference
  move) or its lower bound ``mean_diff - confidence * se`` (the planner's own rule: the
  reference keeps the mass unless a move beats it beyond the noise). A low temperature puts the
  mass on the best score; a high one spreads it over the moves the rollouts cannot tell apart.
  The values are in card differences / 52 (plus the win weight for a game won), so one card is
  about 0.02: a temperature of 0.05 hardly separates moves a card apart.
* from a bot's move (:func:`one_hot_targets`): all the mass on the move it made.

Every legal move is a candidate of the planner (the masks the learner's network chooses among
keep WAIT: ``mask_wait`` off), so no teacher move falls outside the network's reach.
"""

from __future__ import annotations

import numpy as np

from spit_env.rules import N_ACTIONS

__all__ = ["SCORES", "softmax_targets", "planner_targets", "one_hot_targets", "plan_value_scale"]


def softmax_targets(n_rows: int, cand_row: np.ndarray, cand_action: np.ndarray,
                    scores: np.ndarray, temperature: float) -> np.ndarray:
    """A softmax over each row's candidates of ``scores / temperature``.

    Args:
        n_rows: R, the rows of the output.
        cand_row: (C,) int64 row 0..R-1 of each candidate.
        cand_action: (C,) int64 its action id 0-22 (distinct within a row).
        scores: (C,) float64 scores, finite or -inf (a candidate given no mass); each row
            with a candidate needs a finite one.
        temperature: > 0, in the units of ``scores``.

    Returns:
        (R, 23) float32, each row summing to 1 over its candidates (0 elsewhere); a row with no
        candidate is all 0.

    Raises:
        ValueError: a temperature that is not a finite number > 0, a NaN or +inf score, a row
            whose scores are all -inf.
    """
    if not (isinstance(temperature, (int, float)) and np.isfinite(temperature)
            and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    scores = np.asarray(scores, np.float64)
    if np.isnan(scores).any() or (scores == np.inf).any():
        raise ValueError("scores must be finite or -inf, got NaN or +inf")
    z = np.full((n_rows, N_ACTIONS), -np.inf)
    z[cand_row, cand_action] = scores / temperature
    top = z.max(axis=1, keepdims=True)
    has = np.isfinite(top[:, 0])
    if np.setdiff1d(cand_row, np.flatnonzero(has)).size:
        raise ValueError("scores: a row whose candidates all score -inf")
    e = np.where(np.isfinite(z), np.exp(z - np.where(has[:, None], top, 0.0)), 0.0)
    total = e.sum(axis=1, keepdims=True)
    return np.where(has[:, None], e / np.where(total > 0, total, 1.0), 0.0).astype(np.float32)


#: What the soft targets are a softmax of (:func:`planner_targets`).
SCORES = ("lower", "mean")


def planner_targets(plan, temperature: float, score: str = "lower",
                    confidence: float = 1.0, margin: float = 0.0) -> np.ndarray:
    """(P, 23) float32 soft targets of the planned rows of ``plan`` (P = plan.planned.sum()).

    Args:
        plan: an ``agents.planner.Plan``.
        temperature: the softmax temperature (planner value units), > 0.
        score: "mean": each move's ``mean_diff`` (its mean gain over the reference move);
            "lower": ``mean_diff - confidence * se`` for every other move than the reference
            (0): the planner's own rule of choice, so the mass leaves the reference move only
            where the rollouts show a gain, and a move with fewer than 2 rollouts gets none.
        confidence: the standard errors of "lower", >= 0.
        margin: subtracted from every other move's score than the reference's, >= 0: a move
            the rollouts cannot tell from the reference (the same value in every future, or a
            gain within the noise) leaves most of the mass on the reference, whose reading
            reaches past the rollouts' horizon.

    Raises:
        ValueError: an unknown ``score``, a bad temperature.
    """
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    idx = np.flatnonzero(plan.planned)
    index = np.full(plan.planned.size, -1)
    index[idx] = np.arange(idx.size)
    values = np.asarray(plan.mean_diff, np.float64)
    is_ref = plan.cand_action == plan.reference[plan.cand_row]
    if score == "lower":
        with np.errstate(invalid="ignore"):  # inf standard errors: no mass
            lower = values - confidence * np.asarray(plan.se, np.float64)
        values = np.where(np.isnan(lower), -np.inf, lower)
    values = np.where(is_ref, 0.0, values - margin)
    return softmax_targets(idx.size, index[plan.cand_row], plan.cand_action, values,
                           temperature)


def one_hot_targets(actions: np.ndarray) -> np.ndarray:
    """(n, 23) float32: all the mass on ``actions`` ((n,) int64 action ids)."""
    actions = np.asarray(actions, np.int64)
    out = np.zeros((actions.size, N_ACTIONS), np.float32)
    out[np.arange(actions.size), actions] = 1.0
    return out


def plan_value_scale(win_weight: float) -> float:
    """The factor that maps the planner's values into [-1, 1], the game outcome's range.

    The planner's values (card difference + ``win_weight`` * outcome) lie in [-1 - w, 1 + w].
    """
    return 1.0 / (1.0 + float(win_weight))
