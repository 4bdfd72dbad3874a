"""The teachers' labels as training targets: soft policy targets and value targets.

A label is one decision with two or more legal moves in the learner's seat. Its policy target is
a distribution over the 23 actions, zero outside the legal moves:

* from the planner (:func:`planner_targets`): a softmax over the row's candidate moves of
  ``mean_diff / temperature``, ``mean_diff`` being each move's mean rollout value minus the
  reference move's on the same futures (``agents.planner.Plan``; 0 for the reference move). A
  low temperature puts the mass on the best mean; a high one spreads it over the moves the
  rollouts cannot tell apart.
* from a bot's move (:func:`one_hot_targets`): all the mass on the move it made.

Every legal move is a candidate of the planner (the masks the learner's network chooses among
keep WAIT: ``mask_wait`` off), so no teacher move falls outside the network's reach.
"""

from __future__ import annotations

import numpy as np

from spit_env.rules import N_ACTIONS

__all__ = ["softmax_targets", "planner_targets", "one_hot_targets", "plan_value_scale"]


def softmax_targets(n_rows: int, cand_row: np.ndarray, cand_action: np.ndarray,
                    scores: np.ndarray, temperature: float) -> np.ndarray:
    """A softmax over each row's candidates of ``scores / temperature``.

    Args:
        n_rows: R, the rows of the output.
        cand_row: (C,) int64 row 0..R-1 of each candidate.
        cand_action: (C,) int64 its action id 0-22 (distinct within a row).
        scores: (C,) float64 finite scores (the planner's mean differences).
        temperature: > 0, in the units of ``scores``.

    Returns:
        (R, 23) float32, each row summing to 1 over its candidates (0 elsewhere); a row with no
        candidate is all 0.

    Raises:
        ValueError: a temperature that is not a finite number > 0, scores that are not finite.
    """
    if not (isinstance(temperature, (int, float)) and np.isfinite(temperature)
            and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    scores = np.asarray(scores, np.float64)
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite")
    z = np.full((n_rows, N_ACTIONS), -np.inf)
    z[cand_row, cand_action] = scores / temperature
    top = z.max(axis=1, keepdims=True)
    has = np.isfinite(top[:, 0])
    e = np.where(np.isfinite(z), np.exp(z - np.where(has[:, None], top, 0.0)), 0.0)
    total = e.sum(axis=1, keepdims=True)
    return np.where(has[:, None], e / np.where(total > 0, total, 1.0), 0.0).astype(np.float32)


def planner_targets(plan, temperature: float) -> np.ndarray:
    """(P, 23) float32 soft targets of the planned rows of ``plan`` (P = plan.planned.sum()).

    Args:
        plan: an ``agents.planner.Plan``.
        temperature: the softmax temperature over ``plan.mean_diff`` (planner value units), > 0.
    """
    rows = np.flatnonzero(plan.planned)
    index = np.full(plan.planned.size, -1)
    index[rows] = np.arange(rows.size)
    return softmax_targets(rows.size, index[plan.cand_row], plan.cand_action, plan.mean_diff,
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
