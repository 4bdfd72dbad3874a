"""The search's levers and its cost (agents.planner, agents.expert, experiments.search_curve):
pruning by a prior drops exactly the moves it names and never the reference, a decision left
with one move is not searched, the totals count what the search did, a rollout without a
forced first move plays the policy's, and the curve script measures a search's cost per
decision in its games, resumes, and refuses what it cannot measure.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import mid_game

import agents
from agents.expert import network_prior
from agents.planner import PlannerBot
from experiments.search_curve import main as curve_main
from spit_env import core, rules


def _decisions(batch=48, steps=40, seed=3):
    """Games of racer against racer stopped mid-way; the seat-0 decisions with a choice."""
    state = mid_game(batch=batch, steps=steps, seed=seed)
    masks = core.legal_action_mask(state)[:, 0]
    idx = np.flatnonzero(masks.sum(axis=1) >= 2)
    state = core.copy_rows(state, idx)
    every = np.arange(idx.size)
    return (core.observe(state, every, np.zeros(idx.size, np.int64)), masks[idx],
            core.public_table(state, every, 0))


class _Prior:
    """A prior giving each legal move a fixed weight by its action id; it records its calls."""

    def __init__(self, favourite: int):
        self.favourite, self.calls = favourite, 0

    def __call__(self, obs, masks):
        self.calls += 1
        p = np.where(masks, 0.01, 0.0)
        p[:, self.favourite] = np.where(masks[:, self.favourite], 1.0, 0.0)
        return p / p.sum(axis=1, keepdims=True)


def test_pruning_drops_the_moves_below_the_threshold_but_never_the_reference():
    obs, masks, table = _decisions()
    prior = _Prior(rules.WAIT)
    pruned = PlannerBot(rollouts=3, horizon_ms=800, prior=prior, prune=0.2)
    plan = pruned.plan(obs, masks, np.random.default_rng(0), table=table)
    assert prior.calls == 1
    ref = plan.reference
    p = prior(obs, masks)
    for row, action in zip(plan.cand_row, plan.cand_action, strict=True):
        assert action == ref[row] or p[row, action] >= 0.2, "a pruned move got rollouts"
    searched = np.unique(plan.cand_row)
    # a row whose moves above the threshold are the reference alone plays it, unsearched
    alone = ((p >= 0.2) | (np.arange(rules.N_ACTIONS) == ref[:, None])) & masks
    assert set(searched) == set(np.flatnonzero(alone.sum(axis=1) >= 2))
    assert np.array_equal(plan.actions[~np.isin(np.arange(len(obs)), searched)],
                          ref[~np.isin(np.arange(len(obs)), searched)])
    assert pruned.last_stats["decisions"] == len(obs), "the decisions counted are the planned"
    full = PlannerBot(rollouts=3, horizon_ms=800)
    full.plan(obs, masks, np.random.default_rng(0), table=table)
    assert pruned.totals["rollouts"] < full.totals["rollouts"]


def test_pruning_at_zero_is_the_plain_search():
    obs, masks, table = _decisions()
    a = PlannerBot(rollouts=3, horizon_ms=800).plan(obs, masks, np.random.default_rng(1),
                                                     table=table)
    b = PlannerBot(rollouts=3, horizon_ms=800, prior=_Prior(0), prune=0).plan(
        obs, masks, np.random.default_rng(1), table=table)
    assert np.array_equal(a.actions, b.actions) and np.array_equal(a.mean_diff, b.mean_diff)


@pytest.mark.parametrize("kwargs, match", [
    (dict(prune=0.1), "prune needs a prior"),
    (dict(prune=1.5, prior=lambda o, m: m), "prune must be a finite number in 0..1"),
    (dict(prior=3), "prior must be None or a callable"),
])
def test_bad_pruning_is_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PlannerBot(**kwargs)


def test_a_prior_of_the_wrong_shape_is_named():
    obs, masks, table = _decisions()
    bot = PlannerBot(rollouts=2, horizon_ms=500, prior=lambda o, m: m[:, :3], prune=0.1)
    with pytest.raises(ValueError, match="prior must return"):
        bot.plan(obs, masks, np.random.default_rng(0), table=table)


def test_the_network_prior_is_a_distribution_over_the_legal_moves():
    obs, masks, _ = _decisions()
    expert = agents.make("expert", rollouts=2, horizon_ms=500, prune=0.1)
    p = network_prior(expert.network, obs, masks)
    assert np.allclose(p.sum(axis=1), 1) and np.all(p[~masks] == 0)
    best = np.argmax(p, axis=1)
    assert np.array_equal(best, expert.network(obs, masks, np.random.default_rng(0)))
    assert expert.prune == 0.1 and callable(expert.prior)


def test_totals_add_up_over_calls():
    obs, masks, table = _decisions()
    bot = PlannerBot(rollouts=2, horizon_ms=500)
    for seed in (0, 1):
        bot.plan(obs, masks, np.random.default_rng(seed), table=table)
    t = bot.totals
    assert t["calls"] == 2 and t["decisions"] == 2 * len(obs) and t["cpu_s"] > 0
    assert t["rollouts"] == 2 * 2 * masks.sum()  # every legal move, two rollouts, two calls


def test_a_rollout_without_a_forced_first_move_plays_the_policy_from_the_start():
    obs, masks, table = _decisions(batch=16)
    n = len(obs)
    bot = PlannerBot(rollouts=1, horizon_ms=1500)
    racer = agents.make("racer")
    seat = np.zeros(n, np.int64)
    st = core.copy_rows(table.state)
    core.reseed_rows(st, np.arange(n), np.arange(n) + 7)
    # racer's own first move, forced, plays the same rollout as no forced move at all
    keys = core.copy_rows(st)
    first = bot._seated_moves(racer, keys, np.arange(n), seat, masks, _policy_keys(keys, seat))
    a = bot.rollout(core.copy_rows(st), seat, first)
    b = bot.rollout(core.copy_rows(st), seat)
    assert np.array_equal(a, b)


def _policy_keys(state, seat):
    from spit_env import streams

    idx = np.arange(state.batch_size)
    return streams.draw(state.key[idx], streams.POLICY, seat,
                        state.decisions[idx, seat].astype(np.int64))


# --- the curve script ------------------------------------------------------------------------------
def test_the_curve_measures_a_search_in_its_games_and_resumes(tmp_path, capsys):
    path = tmp_path / "curve.json"
    argv = ["--players", "planner:rollouts=2:horizon_ms=500", "--opponents", "random",
            "--deals", "2", "--batch", "4", "--json", str(path), "--plot",
            str(tmp_path / "c.png")]
    out = curve_main(argv)
    (point,) = out["points"]
    assert point["games"] == 4 and point["decisions"] > 0 and point["cpu_s"] > 0
    assert point["cpu_ms_per_decision"] == pytest.approx(1000 * point["cpu_s"]
                                                         / point["decisions"], rel=0.01)
    assert 0 <= point["ci_low"] <= point["win_rate"] <= point["ci_high"] <= 1
    assert json.loads(path.read_text())["points"] == [point]
    assert (tmp_path / "c.png").stat().st_size > 0
    again = curve_main([*argv, "--resume"])
    assert again["points"] == [point], "a point of the same settings is kept, not played again"
    assert f"wrote {path}" in capsys.readouterr().out


def test_a_search_opponent_is_measured_in_the_same_games(tmp_path):
    out = curve_main(["--players", "planner:rollouts=2:horizon_ms=500", "--opponents",
                      "planner-fast:rollouts=1:horizon_ms=300,greedy", "--deals", "2", "--batch",
                      "4"])
    search, bot = out["points"]
    assert search["opponent_decisions"] > 0 and search["opponent_cpu_ms_per_decision"] > 0
    assert "opponent_cpu_s" not in bot


@pytest.mark.parametrize("argv, words", [
    (["--players", "greedy"], ["not a search player"]),
    (["--players", "plannr"], ["unknown policy", "planner"]),
    (["--players", "planner:rollouts=0"], ["rollouts"]),
    (["--deals", "0"], ["--deals"]),
    (["--resume"], ["--resume needs --json"]),
])
def test_bad_arguments_are_named(argv, words, capsys):
    with pytest.raises(SystemExit) as err:
        curve_main(argv)
    assert err.value.code == 2
    message = capsys.readouterr().err
    for w in words:
        assert w in message
