"""The planning bot (agents.planner): it plays legal moves through every runner, it never peeks
(not at hidden cards, not at the game's random streams), it keeps to its budget, and its thinking
costs the game nothing."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from helpers import mid_game

import agents
import spit_env
from agents import arena
from agents.planner import PlannerBot
from spit_env import core, rules
from spit_env.config import SpitConfig
from spit_env.policy import call_policy, make_policy, registered_policies

SMALL = dict(rollouts=4, horizon_ms=1500)


def _decide(planner, state, seat, seed):
    obs = core.observe(state)[:, seat]
    masks = core.legal_action_mask(state)[:, seat]
    table = core.public_table(state, np.arange(state.batch_size), seat)
    return planner(obs, masks, np.random.default_rng(seed), table=table)


def _arrays(state):
    return {f.name: getattr(state, f.name).copy() for f in fields(state)
            if isinstance(getattr(state, f.name), np.ndarray)}


# --- registration and play -----------------------------------------------------------------------
def test_planner_profiles_are_registered_with_their_budgets():
    assert {"planner", "planner-fast"} <= set(registered_policies())
    fast, default = agents.make("planner-fast"), agents.make("planner")
    assert fast.rollouts * fast.horizon_ms < default.rollouts * default.horizon_ms
    assert agents.make("planner", rollouts=3).rollouts == 3
    assert fast.reads_public_table and "PlannerBot(" in repr(fast)


@pytest.mark.parametrize("kwargs, match", [
    (dict(rollouts=0), "rollouts"), (dict(rollouts=2.5), "rollouts"), (dict(horizon_ms=0), "horizon_ms"),
    (dict(horizon_ms="3s"), "horizon_ms"), (dict(win_weight=-1), "win_weight"),
    (dict(confidence=float("nan")), "confidence"), (dict(rollout_policy="nobody"), "unknown policy"),
    (dict(rollout_policy="planner-fast"), "rollout_policy"),
    (dict(rollouts=True), "rollouts must be an integer in 1..4096"), (dict(racing=4097), "racing"),
    (dict(win_weight=False), "win_weight must be a finite number >= 0"),
    (dict(race_z=float("inf")), "race_z"),
])
def test_bad_budgets_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        agents.make("planner", **kwargs)


def test_budgets_take_numpy_numbers_as_python_ones():
    bot = PlannerBot(rollouts=np.int64(4096), horizon_ms=np.int32(1), win_weight=np.float32(0.5),
                     confidence=0, racing=np.uint8(2), race_z=np.int64(3))
    assert (bot.rollouts, bot.horizon_ms, bot.racing) == (4096, 1, 2)
    assert (bot.win_weight, bot.confidence, bot.race_z) == (0.5, 0.0, 3.0)
    assert all(type(v) is float for v in (bot.win_weight, bot.confidence, bot.race_z))


def test_the_planner_needs_the_public_table_of_the_same_rows():
    state = mid_game(batch=4)
    planner = PlannerBot(**SMALL)
    obs, masks = core.observe(state)[:, 0], core.legal_action_mask(state)[:, 0]
    with pytest.raises(ValueError, match="public_table"):
        planner(obs, masks, np.random.default_rng(0))
    with pytest.raises(ValueError, match="public_table"):
        call_policy(planner, obs, masks, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"one row per observation \(4\), got 2"):
        planner(obs, masks, np.random.default_rng(0), table=core.public_table(state, [0, 1], 0))


@pytest.mark.parametrize("config", [SpitConfig(), SpitConfig(auto_flip=False, wrap_ranks=False),
                                    SpitConfig(scoring="points", target_points=40,
                                               observe_opponent_move=False)])
def test_planner_plays_whole_games_in_the_tournament(config):
    config = config.replace(max_game_ms=20_000)
    seat0 = arena.Player("planner-small", "planner", None, SMALL)
    res = arena.run_games(seat0, "greedy@pro", np.arange(4), config=config, batch_size=4)
    assert (res["steps"] > 0).all()  # every game ran to its end (call_policy checked every move)


def test_planner_is_an_environment_opponent():
    env = gymnasium.make("Spit-v0", opponent="planner-fast", config=SpitConfig(max_game_ms=20_000))
    obs, _ = env.reset(seed=1)
    done = False
    while not done:
        mask = env.unwrapped.action_masks()
        obs, _, term, trunc, _ = env.step(int(np.flatnonzero(mask)[-1]))
        done = term or trunc
    # an opponent profile with a random learner seat: the games of one batch differ in which
    # seat has the profile's latency, and the planner plans each game at its own latencies
    venv = spit_env.SpitVecEnv(4, opponent="planner-fast@pro", config=SpitConfig(max_game_ms=20_000),
                               seed=3)
    venv.reset()
    seats = venv.learner_seats
    assert set(seats.tolist()) == {0, 1}
    for i in range(4):
        latency = venv.duel.row_config(i).latency
        assert (latency[1 - seats[i]].name, latency[seats[i]].name) == ("pro", "club")
    table = venv.public_table()
    assert all(core.row_config(table.state, i) == venv.duel.row_config(i) for i in range(4))
    rng = np.random.default_rng(0)
    for _ in range(40):
        masks = venv.action_masks()
        venv.step(np.where(masks, rng.random(masks.shape), -1).argmax(axis=1))


def test_planner_plays_the_learner_seat_from_the_environments_public_table():
    planner = PlannerBot(**SMALL)
    rng = np.random.default_rng(0)
    venv = spit_env.SpitVecEnv(6, opponent="greedy@pro", config=SpitConfig(max_game_ms=20_000), seed=5)
    obs = venv.reset()
    for _ in range(25):
        actions = call_policy(planner, obs, venv.action_masks(), rng, table=venv.public_table())
        obs, *_ = venv.step(actions)
    env = spit_env.SpitGymEnv(opponent="greedy")
    obs, _ = env.reset(seed=2)
    move = planner(obs[None], env.action_masks()[None], rng, table=env.public_table())
    assert env.action_masks()[move[0]]
    par = spit_env.parallel_env()
    obs, _ = par.reset(seed=3)
    for agent in par.agents:
        mask = obs[agent]["action_mask"][None].astype(bool)
        move = planner(obs[agent]["observation"][None], mask, rng, table=par.public_table(agent))
        assert mask[0, move[0]]
    with pytest.raises(ValueError, match="agent must be one of"):
        par.public_table("player_7")


# --- no peeking ----------------------------------------------------------------------------------
def _permuted(state, seed):
    """A copy of ``state`` with every row's hidden cards in another order."""
    other = core.copy_rows(state, np.arange(state.batch_size))
    core.replace_hidden(other, np.arange(other.batch_size), rng=np.random.default_rng(seed))
    assert (core.hidden_cards(other) != core.hidden_cards(state)).any(axis=1).mean() > 0.9
    return other


def _reseeded(state):
    """A copy of ``state`` with other random streams (keys and game ids), the table unchanged."""
    other = core.copy_rows(state, np.arange(state.batch_size))
    core.reseed_rows(other, np.arange(other.batch_size), np.arange(other.batch_size) * 7919 + 1)
    other.game_id += 500
    return other


@pytest.mark.parametrize("config", [SpitConfig(), SpitConfig(auto_flip=False, observe_opponent_move=False)])
def test_decisions_do_not_depend_on_hidden_cards_or_the_games_streams(config):
    planner = PlannerBot(rollouts=6, horizon_ms=2000)
    for steps in (10, 45):
        state = mid_game(config, steps=steps)
        for seat in (0, 1):
            want = _decide(planner, state, seat, seed=11)
            assert planner.last_stats["decisions"] > 0 and planner.last_stats["rollouts"] > 0
            np.testing.assert_array_equal(_decide(planner, _permuted(state, 3), seat, seed=11), want)
            np.testing.assert_array_equal(_decide(planner, _reseeded(state), seat, seed=11), want)


def test_the_no_peeking_checks_would_catch_a_planner_given_the_real_game():
    """The control of the test above: handed the game itself instead of its public table, the
    same planner's decisions do change with the hidden cards and with the stream key."""
    planner = PlannerBot(rollouts=6, horizon_ms=2000, confidence=0.0)
    state = mid_game(steps=45, batch=48)

    def leaky(st):
        obs, masks = core.observe(st)[:, 0], core.legal_action_mask(st)[:, 0]
        table = core.PublicTable(core.copy_rows(st, np.arange(st.batch_size)),
                                 np.zeros(st.batch_size, np.int64), np.arange(st.batch_size))
        return planner(obs, masks, np.random.default_rng(11), table=table)

    want = leaky(state)
    assert (leaky(_permuted(state, 3)) != want).any()


# --- budget and time -----------------------------------------------------------------------------
@pytest.mark.parametrize("rollouts, horizon_ms", [(1, 500), (3, 1200), (5, 4000)])
def test_the_planner_keeps_to_its_budget(rollouts, horizon_ms):
    planner = PlannerBot(rollouts=rollouts, horizon_ms=horizon_ms)
    state = mid_game(steps=25)
    masks = core.legal_action_mask(state)[:, 1]
    _decide(planner, state, 1, seed=0)
    stats = planner.last_stats
    planned = masks.sum(axis=1) >= 2
    assert stats["decisions"] == planned.sum() > 0
    assert stats["candidates"] == masks[planned].sum()
    assert stats["rollouts"] == rollouts * stats["candidates"]
    assert 0 < stats["max_step_start_ms"] < horizon_ms  # no rollout epoch starts past the horizon
    assert stats["rollout_steps"] >= stats["rollouts"]
    if rollouts == 1:
        assert stats["deviations"] == 0  # one rollout proves nothing: the default policy's move


def test_thinking_changes_nothing_in_the_game():
    """The planner's work happens between two epochs on copies: the game's state, clock and
    streams are untouched, so its move lands after its seat's latency like anyone's."""
    state = mid_game(steps=20)
    before = _arrays(state)
    masks = core.legal_action_mask(state)
    _decide(PlannerBot(**SMALL), state, 0, seed=4)
    for name, value in _arrays(state).items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)
    np.testing.assert_array_equal(core.legal_action_mask(state), masks)


def test_same_generator_same_decisions_and_no_plan_when_only_wait_is_legal():
    planner = make_policy("planner-fast")
    state = mid_game(steps=35)
    np.testing.assert_array_equal(_decide(planner, state, 0, 5), _decide(planner, state, 0, 5))
    busy = ~state.free[:, 0]
    assert busy.any()
    moves = _decide(planner, state, 0, 6)
    assert (moves[busy] == rules.WAIT).all()


def test_planner_is_a_behaviour_cloning_teacher():
    pytest.importorskip("sb3_contrib")
    from experiments.ppo.envs import make_training_env
    from experiments.ppo.warm_start import collect_teacher_data

    # a profile opponent with another latency and a random learner seat: the rows' seats play
    # at different latencies in one core state
    _, _, env = make_training_env(num_envs=8, groups=2, opponent="greedy@pro", seed=1,
                                  learner_seat="random", reward="game", episode="game", shaping=0.0,
                                  skip_forced_waits=True, truncation_reward=-1.0)
    data = collect_teacher_data(env, make_policy("planner-fast"), 150, {"mask_wait": False})
    assert len(data.observations) == len(data.actions) == data.played >= 150
    assert data.masks[np.arange(len(data.actions)), data.actions].all()
    env.close()


def test_planner_study_runs_at_toy_size(tmp_path):
    from experiments import planner_study

    out = planner_study.main(["--deals", "1", "--budgets", "planner-fast", "--opponents", "random,greedy",
                              "--curve-rollouts", "1,2", "--max-game-ms", "4000", "--batch", "2",
                              "--json", str(tmp_path / "p.json"), "--plot", str(tmp_path / "c.png"),
                              "--quiet"])
    assert [(r["player"], r["opponent"], r["games"]) for r in out["table"]] == \
        [("planner-fast", "random", 2), ("planner-fast", "greedy", 2)]
    assert [p["rollouts"] for p in out["curve"]] == [1, 2]
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "p.json").exists()
    # a resumed run keeps what the file holds and plays only what is missing
    again = planner_study.main(["--deals", "1", "--budgets", "planner-fast", "--opponents", "random,greedy",
                                "--curve-rollouts", "1,2", "--max-game-ms", "4000", "--batch", "2",
                                "--json", str(tmp_path / "p.json"), "--resume", "--quiet"])
    assert again["table"] == out["table"] and again["curve"] == out["curve"]
    for bad in (["--curve-rollouts", "0"], ["--resume"], ["--deals", "0"], ["--budgets", "nobody"]):
        with pytest.raises(SystemExit):
            planner_study.main(bad)


def test_planner_study_workers_play_a_trained_model():
    # its workers are spawned: forked after the arguments' check has loaded the model (torch's
    # thread pool running), they hung at their first forward pass
    import subprocess
    import sys

    pytest.importorskip("sb3_contrib")
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.planner_study", "--deals", "2", "--budgets", "planner-fast",
         "--opponents", "ppo", "--curve-rollouts", "", "--max-game-ms", "8000", "--batch", "2",
         "--workers", "2", "--quiet"],
        cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the table's line is a result: on stdout, under --quiet too; no progress anywhere
    assert "planner-fast vs ppo" in proc.stdout
    assert "planner study" not in proc.stdout + proc.stderr


def test_planner_plays_in_replays_and_against_a_human():
    from experiments.realtime.engine import RealtimeGame
    from experiments.replay import play_game
    from spit_env import replay

    record = play_game(["planner-fast", "greedy"], config=SpitConfig(max_game_ms=5000), seed=1)
    assert replay.check(record) == len(record["steps"]) + 1 and len(record["steps"]) > 5
    game = RealtimeGame("planner-fast@club", seed=1, tick_ms=25)
    events = game.advance(4000.0)
    assert any(e["type"] == "play" and e["player"] == 1 for e in events), "the planner plays"


# --- the search result (Plan) and the hooks ------------------------------------------------------
def _lowest_legal(obs, masks, rng):
    """A deterministic policy: the lowest legal action id."""
    return masks.argmax(axis=1).astype(np.int64)


def test_plan_holds_every_candidates_statistics():
    from agents.planner import Plan

    state = mid_game(steps=30)
    obs, masks = core.observe(state)[:, 0], core.legal_action_mask(state)[:, 0]
    table = core.public_table(state, np.arange(state.batch_size), 0)
    planner = PlannerBot(rollouts=5, horizon_ms=1500, confidence=0.5)
    plan = planner.plan(obs, masks, np.random.default_rng(3), table=table)
    assert isinstance(plan, Plan)
    b = state.batch_size
    np.testing.assert_array_equal(plan.actions, planner(obs, masks, np.random.default_rng(3), table=table))
    np.testing.assert_array_equal(plan.planned, masks.sum(axis=1) >= 2)
    assert plan.planned.sum() > 0 and (~plan.planned).sum() > 0
    for name, dtype, size in (("actions", np.int64, b), ("reference", np.int64, b), ("planned", bool, b),
                              ("value", np.float64, b)):
        assert getattr(plan, name).dtype == dtype and getattr(plan, name).shape == (size,), name
    # the candidates are the legal moves of the planned rows, row by row in action order
    cand_row, acts = np.nonzero(masks & plan.planned[:, None])
    np.testing.assert_array_equal(plan.cand_row, cand_row)
    np.testing.assert_array_equal(plan.cand_action, acts)
    for name in ("mean_diff", "se", "n_rollouts"):
        assert getattr(plan, name).shape == cand_row.shape, name
    assert (plan.n_rollouts == 5).all()
    # the reference: racer's own move on planned rows, the only move elsewhere; 0 against itself
    racer = make_policy("racer")
    is_ref = plan.cand_action == plan.reference[plan.cand_row]
    assert is_ref.sum() == plan.planned.sum()
    assert (plan.mean_diff[is_ref] == 0).all() and (plan.se[is_ref] == 0).all()
    assert (plan.se[~is_ref] > 0).any() and np.isfinite(plan.se).all()
    np.testing.assert_array_equal(plan.reference[~plan.planned], masks[~plan.planned].argmax(axis=1))
    assert masks[np.arange(b), plan.reference].all()
    # a move other than the reference is played only when its bound clears 0
    dev = np.flatnonzero(plan.actions != plan.reference)
    for r in dev:
        c = np.flatnonzero((plan.cand_row == r) & (plan.cand_action == plan.actions[r]))[0]
        assert plan.mean_diff[c] - 0.5 * plan.se[c] > 0
    assert planner.last_stats["deviations"] == dev.size
    assert np.isnan(plan.value[~plan.planned]).all() and np.isfinite(plan.value[plan.planned]).all()
    # with a single rollout nothing can be told apart: standard errors are infinite
    one = PlannerBot(rollouts=1, horizon_ms=800).plan(obs, masks, np.random.default_rng(3), table=table)
    assert np.isinf(one.se[one.cand_action != one.reference[one.cand_row]]).all()
    np.testing.assert_array_equal(one.actions, one.reference)
    assert racer is not None


def test_the_reference_hook_and_a_policy_of_observations_in_the_rollouts():
    state = mid_game(steps=30)
    obs, masks = core.observe(state)[:, 1], core.legal_action_mask(state)[:, 1]
    table = core.public_table(state, np.arange(state.batch_size), 1)
    calls = []

    def counting(observations, action_masks, rng):
        calls.append((observations.shape, action_masks.sum(axis=1).min()))
        return _lowest_legal(observations, action_masks, rng)

    planner = PlannerBot(rollouts=3, horizon_ms=1200, rollout_policy=counting, reference=_lowest_legal)
    plan = planner.plan(obs, masks, np.random.default_rng(0), table=table)
    np.testing.assert_array_equal(plan.reference, masks.argmax(axis=1))
    # the rollouts ask the policy once per simulated epoch, for the rows with a choice only,
    # with their observations
    assert 0 < len(calls) <= planner.last_stats["rollout_steps"]
    assert all(shape[1] == rules.OBS_DIM and least >= 2 for shape, least in calls)
    assert sum(shape[0] for shape, _ in calls) < planner.last_stats["rollout_steps"]
    with pytest.raises(ValueError, match="reference"):
        PlannerBot(reference="planner")
    with pytest.raises(ValueError, match="reference"):
        PlannerBot(reference="nobody")


def test_the_leaf_value_ends_the_rollouts_at_the_horizon():
    state = mid_game(steps=30)
    obs, masks = core.observe(state)[:, 0], core.legal_action_mask(state)[:, 0]
    table = core.public_table(state, np.arange(state.batch_size), 0)
    seen = []

    def leaf(observations):
        seen.append(observations)
        return np.full(len(observations), 0.375)

    plan = PlannerBot(rollouts=3, horizon_ms=1, leaf_value=leaf).plan(
        obs, masks, np.random.default_rng(0), table=table)
    assert seen and all(o.dtype == np.float32 and o.shape[1] == rules.OBS_DIM for o in seen)
    assert all(((o >= 0) & (o <= 1)).all() for o in seen)
    # a 1 ms horizon: (almost) every rollout stops there after its first epoch
    assert np.mean(plan.value[plan.planned] == 0.375) > 0.8
    default = PlannerBot(rollouts=3, horizon_ms=1).plan(obs, masks, np.random.default_rng(0), table=table)
    assert np.mean(default.value[default.planned] == 0.375) < 0.2
    with pytest.raises(ValueError, match="leaf_value"):
        PlannerBot(leaf_value=3.0)
    bad = PlannerBot(rollouts=2, horizon_ms=1, leaf_value=lambda o: np.zeros(len(o) + 1))
    with pytest.raises(ValueError, match="leaf_value"):
        bad.plan(obs, masks, np.random.default_rng(0), table=table)


def test_racing_drops_moves_that_cannot_beat_the_reference():
    state = mid_game(steps=30, batch=48)
    obs, masks = core.observe(state)[:, 0], core.legal_action_mask(state)[:, 0]
    table = core.public_table(state, np.arange(state.batch_size), 0)
    full = PlannerBot(rollouts=8, horizon_ms=1500)
    raced = PlannerBot(rollouts=8, horizon_ms=1500, racing=4, race_z=0.0)
    a = full.plan(obs, masks, np.random.default_rng(1), table=table)
    b = raced.plan(obs, masks, np.random.default_rng(1), table=table)
    assert (b.n_rollouts <= 8).all() and (b.n_rollouts >= 2).all() and (b.n_rollouts < 8).any()
    assert raced.last_stats["rollouts"] == b.n_rollouts.sum() < full.last_stats["rollouts"]
    is_ref = b.cand_action == b.reference[b.cand_row]
    other = np.zeros(state.batch_size, int)
    np.maximum.at(other, b.cand_row[~is_ref], b.n_rollouts[~is_ref])
    np.testing.assert_array_equal(b.n_rollouts[is_ref], other[b.cand_row[is_ref]])  # as long as a rival
    # the rollouts a candidate got are the same futures as without racing (common random numbers)
    kept = b.n_rollouts == 8
    np.testing.assert_allclose(b.mean_diff[kept], a.mean_diff[kept])
    np.testing.assert_array_equal(a.reference, b.reference)
    for kwargs in (dict(racing=0), dict(racing=2.5), dict(race_z=-1)):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            PlannerBot(**kwargs)


def test_a_trained_network_can_play_the_rollouts():
    pytest.importorskip("sb3_contrib")
    state = mid_game(steps=30, batch=6)
    obs, masks = core.observe(state)[:, 0], core.legal_action_mask(state)[:, 0]
    table = core.public_table(state, np.arange(state.batch_size), 0)
    planner = PlannerBot(rollouts=2, horizon_ms=600, rollout_policy=agents.make("network"))
    plan = planner.plan(obs, masks, np.random.default_rng(0), table=table)
    assert masks[np.arange(state.batch_size), plan.actions].all()
    assert planner.last_stats["rollout_steps"] > 0


@pytest.mark.parametrize("config", [SpitConfig(), SpitConfig(stall_timeout_ms=1500, auto_flip=False,
                                                             observe_opponent_move=False)])
def test_jumping_over_forced_waits_changes_no_rollout(config, monkeypatch):
    """The rollouts jump over a seat's forced WAITs (core.fast_forward); stepping through them
    one by one plays the same futures: the same values, moves and rollout lengths."""
    from spit_env import streams

    state = mid_game(config, batch=30, steps=30)
    seat = np.arange(30) % 2
    keys = streams.draw(state.key, streams.POLICY, seat, state.decisions[np.arange(30), seat])

    def plan(planner):
        every = np.arange(30)
        return planner.plan(core.observe(state, every, seat), core.legal_action_mask(state, every, seat),
                            streams.RowStreams(keys), table=core.public_table(state, every, seat))

    planner = PlannerBot(rollouts=4, horizon_ms=3000)
    jumped = plan(planner)
    steps, longest = planner.last_stats["rollout_steps"], planner.last_stats["max_simulated_ms"]
    monkeypatch.setattr(core, "fast_forward", lambda st, idx, seat, max_epochs=None: np.zeros(len(idx), np.int64))
    stepped = plan(planner)
    for name in ("actions", "mean_diff", "se", "value"):
        np.testing.assert_array_equal(getattr(jumped, name), getattr(stepped, name), err_msg=name)
    assert planner.last_stats["max_simulated_ms"] == longest
    assert planner.last_stats["rollout_steps"] > steps  # the jumps saved core steps
