"""Misuse of every view (issue 14). Each public method of the ParallelEnv, the AEC env, the
Gymnasium env and the SpitVecEnv either does what its ecosystem documents, or raises ValueError
naming the problem and leaves the environment exactly as it was: the same tables (every row's
snapshot) and the same future given the same inputs (``helpers.assert_refused``). The faults
found by trying the product as a new user are each a test here; ``test_envs_lifecycle.py`` drives
random sequences of the same calls (Hypothesis state machines)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from helpers import SHORT, TINY, assert_refused, build_deal, future, tables

import spit_env
from spit_env import Latency, SpitConfig, SpitGymEnv, SpitVecEnv, core, rules
from spit_env.policy import uniform_legal, uniform_legal_actions
from spit_env.testing import check_environments

RAISE = SHORT.replace(illegal_action="raise")
BAD_SEEDS = [-1, 1.5, "3", True, [1]]
BAD_OPTIONS = ["deal", 5, [("deal", None)], {"deal": "xy"},
               {"deal": [[0], list(range(1, 52)) + [0]]}, {"deal": [list(range(52)), []]}]
BAD_ACTIONS = [23, -1, 1.0, "1", None, True, np.array([1, 2]), np.float32(2.0)]


def _illegal(mask) -> int:
    return int(np.flatnonzero(~np.asarray(mask, bool))[0])


def _legal(mask, rng) -> int:
    return int(uniform_legal_actions(np.asarray(mask, bool), rng))


def _play_aec_to_the_end(aec, rng):
    for _ in aec.agent_iter(100_000):
        obs, _, term, trunc, _ = aec.last()
        aec.step(None if term or trunc else _legal(obs["action_mask"], rng))
    assert aec.agents == []


# --- the faults of the issue ----------------------------------------------------------------------
def test_aec_refuses_an_illegal_action_at_its_own_step_and_keeps_the_pending_one():
    aec, par = spit_env.env(RAISE), spit_env.parallel_env(RAISE)
    aec.reset(seed=0)
    par.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(25):
        m0 = aec.observe("player_0")["action_mask"]
        msg = assert_refused(aec, lambda e, m=m0: e.step(_illegal(m)), match="player_0's action")
        assert "not legal now" in msg and "actions[0" not in msg  # no core indices
        a0 = _legal(m0, rng)
        aec.step(a0)
        m1 = aec.observe("player_1")["action_mask"]
        # refused by player_1's own step; player_0's action stays pending through every retry
        assert_refused(aec, lambda e, m=m1: e.step(_illegal(m)), match="player_1's action")
        assert_refused(aec, lambda e, m=m1: e.step(_illegal(m)), match="player_1's action")
        assert_refused(aec, lambda e: e.step(23), match="player_1's action")
        a1 = _legal(m1, rng)
        aec.step(a1)
        par.step({"player_0": a0, "player_1": a1})
        assert aec.snapshot() == par.snapshot()
        if not par.agents:
            break


def test_aec_calls_before_reset_and_after_the_end_raise_value_error():
    aec = spit_env.env(TINY)
    for call in (lambda e: e.step(0), lambda e: e.step(None), lambda e: e.last(),
                 lambda e: e.observe("player_0"), lambda e: e.state(), lambda e: e.snapshot()):
        assert_refused(aec, call, match="reset")
    assert aec.render() is None
    aec.reset(seed=1)
    rng = np.random.default_rng(1)
    while not any(aec.terminations.values()) and not any(aec.truncations.values()):
        aec.step(_legal(aec.last()[0]["action_mask"], rng))
    # a done agent's only action is None (PettingZoo's own rule), refused with nothing changed
    assert_refused(aec, lambda e: e.step(0), match="None")
    _play_aec_to_the_end(aec, rng)
    for call in (lambda e: e.step(None), lambda e: e.step(0), lambda e: e.last()):
        assert_refused(aec, call, match="finished.*reset")
    assert_refused(aec, lambda e: e.observe("player_2"), match="agent must be one of")
    assert aec.observe("player_0")["action_mask"].dtype == np.int8  # the last one stays readable
    aec.reset(seed=1)
    assert aec.agents == ["player_0", "player_1"] and aec.last()[2:4] == (False, False)


def test_vec_set_options_deals_the_given_packs_at_the_next_reset_only():
    deal = build_deal({0: 4, 5: 9}, {15: 5}, size0=20)
    par = spit_env.parallel_env(SHORT)
    par.reset(seed=0, options={"deal": deal})
    dealt = par.snapshot()

    def table(snap):
        return snap["stocks"], snap["spit"], snap["centre"]

    def game(seed, game_id):
        return core.snapshot(core.init(SHORT, 1, seed, first_game=game_id), 0)

    venv = SpitVecEnv(3, opponent="random", config=SHORT, seed=2)
    venv.set_options({"deal": deal})  # one dict: every env
    venv.reset()
    assert [table(t) for t in tables(venv)] == [table(dealt)] * 3
    venv.set_options([None, {"deal": deal, "other": 1}, {}])  # per env; other keys ignored
    venv.reset()
    assert [table(t) for t in tables(venv)] == [table(game(2, 3)), table(dealt), table(game(2, 5))]
    venv.reset()  # the options were used once
    assert [table(t) for t in tables(venv)] == [table(game(2, g)) for g in (6, 7, 8)]
    venv.set_options([{"deal": deal}, None, None])
    for bad, match in (([{}], "list of 3"), ("deal", "options must be"),
                       ({"deal": [[1, 2]]}, r"options\['deal'\]"),
                       ([None, {"deal": "x"}, None], r"options\[1\]\['deal'\]"),
                       ([None, 5, None], r"options\[1\] must be None or a dict")):
        assert_refused(venv, lambda e, b=bad: e.set_options(b), match=match)
    venv.reset()  # the options set before the refused calls still hold
    assert table(venv.snapshot(0)) == table(dealt) and table(venv.snapshot(1)) != table(dealt)


GRID = [  # every flag of SpitConfig at each of its values at least once; "raise" with defaults
    ("raise_defaults", SpitConfig(illegal_action="raise"), None),
    ("raise_every_flag_changed", SpitConfig(
        illegal_action="raise", auto_flip=False, wrap_ranks=False, observe_opponent_move=False,
        stall_timeout_ms=None, win_on_empty_hand=True, scoring="points", target_points=10,
        tie_break="player_0", latency=(Latency.fixed(150), Latency.lognormal(300, 80, 120)),
        wait_ms=60, spit_delay_ms=0, max_rounds=3, max_game_ms=40_000), "greedy@pro"),
    ("wait_ties_to_player_1", SpitConfig(
        tie_break="player_1", latency=(100, Latency.normal(120, 30, 100)), wait_ms=100,
        stall_timeout_ms=400, win_on_empty_hand=True, max_rounds=2, max_game_ms=20_000), "racer"),
    ("raise_tiny_games", TINY.replace(illegal_action="raise", latency=("pro", "novice")), None),
]


@pytest.mark.parametrize("config,opponent", [g[1:] for g in GRID], ids=[g[0] for g in GRID])
def test_check_environments_passes_on_a_grid_of_configs_covering_every_flag(config, opponent):
    check_environments(config, opponent=opponent, num_cycles=300, vec_steps=60)


# --- the whole kind: every view's misuse ------------------------------------------------------------
def test_parallel_env_misuse_is_refused_and_changes_nothing():
    env = spit_env.parallel_env(RAISE)
    for call in (lambda e: e.step({"player_0": 0, "player_1": 0}), lambda e: e.state(),
                 lambda e: e.snapshot(), lambda e: e.action_masks(), lambda e: e.seed_and_game):
        assert_refused(env, call, match="reset")
    assert env.render() is None
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(5):
        obs, *_ = env.step({a: _legal(obs[a]["action_mask"], rng) for a in env.agents})
    for seed in BAD_SEEDS:
        assert_refused(env, lambda e, s=seed: e.reset(seed=s), match="seed")
    for options in BAD_OPTIONS:
        assert_refused(env, lambda e, o=options: e.reset(options=o), match="options")
    good = {"player_0": _legal(obs["player_0"]["action_mask"], rng),
            "player_1": _legal(obs["player_1"]["action_mask"], rng)}
    for actions, match in (([0, 0], "dict"), ({"player_0": 0}, "player_1"),
                           ({**good, "player_2": 0}, "player_2"), ({0: 0, 1: 0}, "dict"),
                           ({**good, "player_1": _illegal(obs["player_1"]["action_mask"])},
                            r"actions\['player_1'\] = \d+ .* not legal now")):
        assert_refused(env, lambda e, a=actions: e.step(a), match=match)
    for bad in BAD_ACTIONS:
        assert_refused(env, lambda e, b=bad: e.step({**good, "player_0": b}),
                       match=r"actions\['player_0'\]")
    for name in ("player_2", 0, ["player_0"], None):
        assert_refused(env, lambda e, n=name: e.observation_space(n), match="agent must be one of")
        assert_refused(env, lambda e, n=name: e.action_space(n), match="agent must be one of")
    tiny = spit_env.parallel_env(TINY)
    obs, _ = tiny.reset(seed=0)
    while tiny.agents:
        obs, *_ = tiny.step({a: _legal(obs[a]["action_mask"], rng) for a in tiny.agents})
    assert_refused(tiny, lambda e: e.step({}), match="finished")
    assert_refused(tiny, lambda e: e.step({"player_0": 0, "player_1": 0}), match="finished")


def test_gym_env_misuse_is_refused_and_changes_nothing():
    env = SpitGymEnv(opponent="random", config=RAISE)
    for call in (lambda e: e.step(0), lambda e: e.action_masks(), lambda e: e.snapshot()):
        assert_refused(env, call, match="reset")
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in range(5):
        env.step(_legal(env.action_masks(), rng))
    for seed in BAD_SEEDS:
        assert_refused(env, lambda e, s=seed: e.reset(seed=s), match="seed")
    for options in BAD_OPTIONS:
        assert_refused(env, lambda e, o=options: e.reset(options=o), match="options")
    for bad in BAD_ACTIONS:
        assert_refused(env, lambda e, b=bad: e.step(b), match="action")
    # an illegal action is refused before the opponent's policy draws from the env's generator
    msg = assert_refused(env, lambda e: e.step(_illegal(e.action_masks())), match="not legal now")
    assert msg.startswith("action = ")
    assert_refused(env, lambda e: e.set_opponent("no_such_bot"), match="unknown policy")
    assert_refused(env, lambda e: e.set_opponent("greedy@nowhere"), match="profile")
    tiny = SpitGymEnv(opponent="random", config=TINY)
    tiny.reset(seed=0)
    done = False
    while not done:
        _, _, term, trunc, _ = tiny.step(_legal(tiny.action_masks(), rng))
        done = term or trunc
    assert_refused(tiny, lambda e: e.step(0), match="ended")


def test_vec_env_misuse_is_refused_and_changes_nothing():
    venv = SpitVecEnv(3, opponent="random", config=RAISE, seed=5, render_mode="ansi")
    for call in (lambda e: e.step(np.zeros(3, np.int64)), lambda e: e.action_masks(),
                 lambda e: e.snapshot(0)):
        assert_refused(venv, call, match="reset")
    venv.reset()
    rng = np.random.default_rng(5)
    for _ in range(3):
        venv.step(uniform_legal_actions(venv.action_masks(), rng))
    masks = venv.action_masks()
    good = uniform_legal_actions(masks, rng)
    illegal = good.copy()
    illegal[2] = _illegal(masks[2])
    for actions, match in ((good[:2], r"\(3,\) integer"), (good.astype(float), "dtype float"),
                           ("abc", "integer"), (None, "integer"), (np.full(3, 23), r"actions\[0\] = 23"),
                           (illegal, r"actions\[2\] = \d+ .* not legal now")):
        assert_refused(venv, lambda e, a=actions: e.step(a), match=match)
        # step_async is the call that submits the actions: it refuses them, nothing stays pending
        assert_refused(venv, lambda e, a=actions: e.step_async(a), match=match)
    assert_refused(venv, lambda e: e.step_wait(), match="step_async")
    for seed in BAD_SEEDS:
        assert_refused(venv, lambda e, s=seed: e.seed(s), match="seed")
    for indices in (3, -1, [0, 5], "0", 1.0, [True], {0: 1}):
        assert_refused(venv, lambda e, i=indices: e.get_attr("num_envs", i), match="indices")
        assert_refused(venv, lambda e, i=indices: e.env_method("action_masks", indices=i),
                       match="indices")
        assert_refused(venv, lambda e, i=indices: e.env_is_wrapped(object, i), match="indices")
    for index in (3, -1, 1.0, "0", True):
        assert_refused(venv, lambda e, i=index: e.snapshot(i), match="index")
    for name, value, match in (("opponent", "no_such_bot", "unknown policy"),
                               ("skip_forced_waits", 17, "skip_forced_waits"),
                               ("num_envs", 5, "cannot set 'num_envs'"),
                               ("render_mode", "human", "cannot set"),
                               ("action_space", None, "cannot set"), ("step", None, "cannot set"),
                               ("config", SHORT, "cannot set"), ("_obs", None, "cannot set"),
                               (3, None, "attr_name")):
        assert_refused(venv, lambda e, n=name, v=value: e.set_attr(n, v), match=match)
    assert_refused(venv, lambda e: e.set_attr("skip_forced_waits", 1, indices=[0]),
                   match="all envs")
    assert_refused(venv, lambda e: e.set_attr("opponent", "no_such_bot", indices=[0]),
                   match="unknown policy")
    assert_refused(venv, lambda e: e.set_attr("opponent", "greedy", indices=[0, 5]),
                   match="indices")
    assert_refused(venv, lambda e: e.env_method("snapshot", 1), match="no arguments")
    assert_refused(venv, lambda e: e.env_method("set_opponent", "greedy@nowhere", indices=[1]),
                   match="profile")
    assert_refused(venv, lambda e: e.env_method("reset", indices=[1]), match="all envs")
    for args, kwargs in (((), {}), (("random", [0]), {}), ((), {"opponent": "random", "x": 1}),
                         (("random",), {"opponent": "greedy"})):
        assert_refused(venv, lambda e, a=args, k=kwargs: e.env_method("set_opponent", *a,
                                                                        indices=[1], **k),
                       match="takes one argument")
    assert_refused(venv, lambda e: e.env_method("num_envs"), match="not a method")
    assert_refused(venv, lambda e: e.render("human"), match="render mode")
    with pytest.raises(AttributeError):  # as SB3's own VecEnvs (has_attr relies on it)
        venv.get_attr("no_such_attribute")
    with pytest.raises(AttributeError):
        venv.env_method("no_such_method")
    assert not venv.has_attr("no_such_attribute")


def test_vec_env_keeps_no_stale_actions():
    venv = SpitVecEnv(2, opponent="random", config=SHORT, seed=0)
    assert_refused(venv, lambda e: e.step(np.zeros(2, np.int64)), match="reset")
    venv.reset()
    # the refused step before reset left nothing pending
    assert_refused(venv, lambda e: e.step_wait(), match="step_async")
    rng = np.random.default_rng(0)
    actions = uniform_legal_actions(venv.action_masks(), rng)
    twin = copy.deepcopy(venv)
    venv.step_async(actions)
    actions[:] = 99  # the caller's array changes after the call: the submitted actions hold
    kept = uniform_legal_actions(twin.action_masks(), np.random.default_rng(0))
    got, want = venv.step_wait(), twin.step(kept)
    assert all(np.array_equal(x, y) for x, y in zip(got[:3], want[:3], strict=True))
    venv.step_async(uniform_legal_actions(venv.action_masks(), rng))
    venv.reset()  # cancels the pending actions (SB3: reset cancels step_async's work)
    assert_refused(venv, lambda e: e.step_wait(), match="step_async")


def test_vec_env_sb3_contract():
    from stable_baselines3.common.monitor import Monitor

    venv = SpitVecEnv(3, opponent="random", config=SHORT, seed=7, render_mode="ansi")
    # seed: the next reset starts over from game 0 of the seed; [seed] per env
    assert venv.seed(11) == [11] * 3
    first = venv.reset()
    assert tables(venv) == [core.snapshot(core.init(SHORT, 1, 11, first_game=g), 0)
                            for g in range(3)]
    rng = np.random.default_rng(1)
    # step_async + step_wait is step
    twin = copy.deepcopy(venv)
    actions = uniform_legal_actions(venv.action_masks(), rng)
    venv.step_async(actions)
    got, want = venv.step_wait(), twin.step(actions)
    assert all(np.array_equal(x, y) for x, y in zip(got[:3], want[:3], strict=True))
    assert tables(venv) == tables(twin)
    venv.seed(11)
    assert np.array_equal(venv.reset(), first)
    # env_method: per-row methods row by row, others on the whole VecEnv
    masks = venv.action_masks()
    rows = venv.env_method("action_masks", indices=[2, 0])
    assert np.array_equal(rows[0], masks[2]) and np.array_equal(rows[1], masks[0])
    assert venv.env_method("snapshot", indices=1) == [venv.snapshot(1)]
    assert venv.env_method("render", indices=[0])[0].startswith("[env 0]")
    assert venv.env_method("set_opponent", "greedy") == [None] * 3 and venv.opponent == "greedy"
    # get_attr / set_attr: one object, its value per index; settable names and own attributes
    assert venv.get_attr("opponent", [0, 2]) == ["greedy", "greedy"]
    venv.set_attr("opponent", "random")
    venv.set_attr("skip_forced_waits", 2)
    venv.set_attr("curriculum_level", 3)
    venv.set_attr("curriculum_level", 4)  # an attribute of your own can be set again
    assert venv.get_attr("opponent") == ["random"] * 3
    # the opponent alone may differ per row
    venv.env_method("set_opponent", "greedy", indices=[1])
    assert venv.get_attr("opponent") == venv.opponent == ["random", "greedy", "random"]
    venv.set_attr("opponent", "random", indices=1)
    assert venv.opponent == "random" and venv.duel.row_opponent.tolist() == [0, 0, 0]
    assert venv.get_attr("skip_forced_waits", 1) == [2]
    assert venv.get_attr("curriculum_level") == [4] * 3
    assert venv.env_is_wrapped(Monitor) == [False] * 3
    assert venv.env_is_wrapped(Monitor, indices=[1]) == [False]
    # render: every row's table as text
    text = venv.render()
    assert all(f"[env {i}]" in text for i in range(3))
    # close releases nothing: the VecEnv goes on
    venv.close()
    obs, rewards, dones, infos = venv.step(uniform_legal_actions(venv.action_masks(), rng))
    assert obs.shape == (3, rules.OBS_DIM) and len(infos) == 3


def test_vec_env_human_render_prints_every_row(capsys):
    venv = SpitVecEnv(2, opponent="random", config=SHORT, seed=0, render_mode="human")
    venv.reset()
    assert venv.render() is None and venv.env_method("render") == [None, None]
    out = capsys.readouterr().out
    assert out.count("[env 0]") == 2 and out.count("[env 1]") == 2


def _flaky(fail_at: int, how: str):
    calls = {"n": 0}

    def policy(obs, masks, rng):
        calls["n"] += 1
        actions = uniform_legal(obs, masks, rng)
        if calls["n"] == fail_at:
            if how == "raise":
                raise RuntimeError("the bot crashed")
            actions = np.full(len(masks), 23, np.int64)
        return actions

    return policy


@pytest.mark.parametrize("how", ["raise", "illegal"])
@pytest.mark.parametrize("view", ["gym", "vec"])
def test_an_opponent_that_fails_mid_step_blocks_the_games_until_reset(view, how):
    rng = np.random.default_rng(0)
    if view == "gym":
        env = SpitGymEnv(opponent=_flaky(6, how), config=SHORT, learner_seat=0)
        env.reset(seed=0)

        def step(e):
            return e.step(_legal(e.action_masks(), rng))
    else:
        env = SpitVecEnv(2, opponent=_flaky(6, how), config=SHORT, seed=0, learner_seat=0)
        env.reset()

        def step(e):
            return e.step(uniform_legal_actions(e.action_masks(), rng))
    error = RuntimeError if how == "raise" else ValueError
    with pytest.raises(error, match="crashed" if how == "raise" else "illegal actions"):
        for _ in range(10):
            step(env)
    assert_refused(env, step, match="opponent policy failed.*call reset")
    env.reset(**({"seed": 0} if view == "gym" else {}))
    step(env)  # usable again


@pytest.mark.parametrize("view", ["parallel", "aec", "gym", "vec"])
def test_pickle_and_deepcopy_continue_the_same_game_at_every_stage(view):
    make = {"parallel": lambda: spit_env.parallel_env(TINY), "aec": lambda: spit_env.env(TINY),
            "gym": lambda: SpitGymEnv(opponent="random", config=TINY),
            "vec": lambda: SpitVecEnv(2, opponent="random", config=TINY, seed=0)}[view]
    env = make()
    rng = np.random.default_rng(2)
    stages = [copy.deepcopy(env)]  # before reset
    env.reset(**({} if view == "vec" else {"seed": 2}))
    over = False
    for _ in range(40):  # from the start into the game and, for the single games, to its end
        stages.append(copy.deepcopy(env))
        if view in ("parallel", "aec") and not env.agents or over:
            break
        if view == "parallel":
            env.step({a: _legal(env.action_masks()[a], rng) for a in env.agents})
        elif view == "aec":
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else _legal(obs["action_mask"], rng))
        elif view == "gym":
            _, _, term, trunc, _ = env.step(_legal(env.action_masks(), rng))
            over = term or trunc
        else:
            env.step(uniform_legal_actions(env.action_masks(), rng))
    stages.append(env)  # the end (or far into a VecEnv's run)
    for stage in stages:
        for twin in (pickle.loads(pickle.dumps(stage)), copy.deepcopy(stage)):
            assert tables(twin) == tables(stage)
            assert future(twin, steps=6) == future(stage, steps=6)
