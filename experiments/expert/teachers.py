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

__all__ = ["bot_teacher", "planner_teacher"]


def _choice_rows(masks: np.ndarray) -> np.ndarray:
    """(L,) int64 the rows with two or more legal moves (the only ones worth a label)."""
    return np.flatnonzero(np.asarray(masks).sum(axis=1) >= 2)


def bot_teacher(bot):
    """A ``teach`` whose bot plays and labels its own moves (one-hot targets, no plan value).

    Args:
        bot: a batched Policy (``spit_env.policy.make_policy("racer")``).
    """

    def teach(obs, masks, rng, table) -> Labels:
        play = np.asarray(call_policy(bot, obs, masks, rng, table=table), np.int64)
        rows = _choice_rows(masks)
        return Labels(play=play, rows=rows, targets=one_hot_targets(play[rows]),
                      teacher=play[rows], reference=play[rows],
                      plan_value=np.full(rows.size, np.nan, np.float32))

    return teach


def planner_teacher(planner, temperature: float, stats: dict | None = None):
    """A ``teach`` where the planner's reference policy (the network) plays and the planner labels.

    The move played is the planner's reference move (``Plan.reference``): the network's own,
    so the positions are the network's (DAgger), and the network is asked once per step.

    Args:
        planner: an ``agents.planner.PlannerBot`` whose ``reference`` is the learner.
        temperature: the soft targets' temperature (planner value units), > 0.
        stats: if given, ``rollouts`` and ``deviations`` are added up in it.
    """
    scale = plan_value_scale(planner.win_weight)

    def teach(obs, masks, rng, table) -> Labels:
        plan = planner.plan(obs, masks, rng, table=table)
        rows = np.flatnonzero(plan.planned)
        if stats is not None:
            for key in ("rollouts", "deviations"):
                stats[key] = stats.get(key, 0) + int(planner.last_stats[key])
        return Labels(play=plan.reference, rows=rows,
                      targets=planner_targets(plan, temperature), teacher=plan.actions[rows],
                      reference=plan.reference[rows],
                      plan_value=(plan.value[rows] * scale).astype(np.float32))

    return teach
