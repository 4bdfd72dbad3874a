"""The teachers of expert iteration, as :func:`experiments.expert.positions.collect`'s ``teach``.

* :func:`bot_teacher` (round 0, the behaviour-cloned start): a bot plays the learner's seat and
  labels its own moves (all the mass on the move it made), WAITs on purpose included.
* :func:`planner_teacher` (every later round): the network plays; the planner
  (``agents.planner.PlannerBot`` with the network as its reference move) labels each position
  with soft targets over its candidates (``experiments.expert.targets.planner_targets``), its
  chosen move and its value of the network's move.
"""

from __future__ import annotations

import numpy as np

from experiments.expert.positions import Labels
from experiments.expert.targets import one_hot_targets, plan_value_scale, planner_targets
from spit_env.policy import call_policy
from spit_env.rules import N_ACTIONS

__all__ = ["bot_teacher", "planner_teacher"]


def _choice_idx(masks: np.ndarray) -> np.ndarray:
    """(L,) int64 row indices: the rows with two or more legal moves (only they get a label)."""
    return np.flatnonzero(np.asarray(masks).sum(axis=1) >= 2)


def bot_teacher(bot):
    """A ``teach`` whose bot plays and labels its own moves (one-hot targets, no plan value).

    Args:
        bot: a batched Policy (``spit_env.policy.make_policy("racer")``).
    """

    def teach(obs, masks, rng, table) -> Labels:
        play = np.asarray(call_policy(bot, obs, masks, rng, table=table), np.int64)
        idx = _choice_idx(masks)
        none = np.full((idx.size, N_ACTIONS), np.nan, np.float32)
        return Labels(play=play, idx=idx, targets=one_hot_targets(play[idx]),
                      teacher=play[idx], reference=play[idx],
                      plan_value=np.full(idx.size, np.nan, np.float32), gain=none,
                      gain_se=none.copy())

    return teach


def planner_teacher(planner, temperature: float, score: str = "lower", margin: float = 0.0,
                    stats: dict | None = None):
    """A ``teach`` where the planner's reference policy (the network) plays and the planner labels.

    The move played is the planner's reference move (``Plan.reference``): the network's own,
    so the positions are the network's (DAgger), and the network is asked once per step.

    Args:
        planner: an ``agents.planner.PlannerBot`` whose ``reference`` is the learner.
        temperature: the soft targets' temperature (planner value units), > 0.
        score: what the targets are a softmax of (``targets.planner_targets``: "lower" or
            "mean"); "lower" takes the planner's own ``confidence``.
        margin: the reference move's head start in the targets (``targets.planner_targets``).
        stats: if given, ``rollouts`` and ``deviations`` are added up in it.
    """
    scale = plan_value_scale(planner.win_weight)

    def teach(obs, masks, rng, table) -> Labels:
        plan = planner.plan(obs, masks, rng, table=table)
        idx = np.flatnonzero(plan.planned)
        if stats is not None:
            for key in ("rollouts", "deviations"):
                stats[key] = stats.get(key, 0) + int(planner.last_stats[key])
        index = np.full(plan.planned.size, -1)
        index[idx] = np.arange(idx.size)
        gain = np.full((idx.size, N_ACTIONS), np.nan, np.float32)
        gain_se = gain.copy()
        gain[index[plan.cand_row], plan.cand_action] = plan.mean_diff
        gain_se[index[plan.cand_row], plan.cand_action] = plan.se
        targets = planner_targets(plan, temperature, score, planner.confidence, margin)
        return Labels(play=plan.reference, idx=idx, gain=gain, gain_se=gain_se,
                      targets=targets, teacher=plan.actions[idx],
                      reference=plan.reference[idx],
                      plan_value=(plan.value[idx] * scale).astype(np.float32))

    return teach
