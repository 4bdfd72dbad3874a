"""The PettingZoo environments: the ecosystem's own checkers, and the published pitfalls each as a
test (agents leaving, dict keys, cached spaces, dtypes, seeding, global generators, races)."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from helpers import SHORT, build_deal, random_actions, rules_mask
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import spit_env
from spit_env import Latency, SpitConfig, rules

# PettingZoo's api_test warns about any Dict observation space / dict observation unless the
# environment's name is on its hard-coded list of PettingZoo's own classic games; these two
# messages are that list talking, not a fault. Every other warning fails the test.
CHECKER_NAME_LIST_WARNINGS = (
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or gymnasium.spaces.discrete",
)


def _play_out(env, rng, on_step=None, max_steps=100_000):
    obs, infos = env.reset()
    for _ in range(max_steps):
        if not env.agents:
            return
        actions = random_actions(env, obs, rng)
        before = list(env.agents)
        result = env.step(actions)
        obs = result[0]
        if on_step is not None:
            on_step(before, actions, *result)
    raise AssertionError("game did not end")


@pytest.mark.filterwarnings("error")
def test_parallel_api_test():
    parallel_api_test(spit_env.parallel_env(SHORT), num_cycles=2_000)


@pytest.mark.filterwarnings("error")
def test_parallel_seed_test():
    parallel_seed_test(lambda: spit_env.parallel_env(SHORT), num_cycles=300)


def test_aec_api_test_and_seed_test():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for message in CHECKER_NAME_LIST_WARNINGS:
            warnings.filterwarnings("ignore", message=message)
        api_test(spit_env.env(SHORT), num_cycles=2_000)
        seed_test(lambda: spit_env.env(SHORT), num_cycles=300)


def test_aec_game_matches_parallel_game():
    par, aec = spit_env.parallel_env(SHORT), spit_env.env(SHORT)
    obs, _ = par.reset(seed=5)
    aec.reset(seed=5)
    rng = np.random.default_rng(1)
    while par.agents:
        actions = random_actions(par, obs, rng)
        obs, rewards, terms, truncs, _ = par.step(actions)
        for agent in ["player_0", "player_1"]:
            assert aec.agent_selection == agent
            aec.step(actions[agent])
        for agent in rewards:
            np.testing.assert_array_equal(aec.observe(agent)["observation"], obs[agent]["observation"])
            assert aec.rewards[agent] == rewards[agent]
            assert aec.terminations[agent] == terms[agent]
            assert aec.truncations[agent] == truncs[agent]
    assert aec.snapshot() == par.snapshot()
    for agent in ["player_0", "player_1"]:
        assert aec.agent_selection == agent
        aec.step(None)
    assert aec.agents == []


def test_finished_agents_leave_and_dicts_keyed_by_agents_alive_before_the_step():
    env = spit_env.parallel_env(SHORT)
    seen_end = []

    def on_step(before, actions, obs, rewards, terms, truncs, infos):
        for d in (obs, rewards, terms, truncs, infos):
            assert set(d) == set(before)
        ended = any(terms.values()) or any(truncs.values())
        assert env.agents == ([] if ended else before)
        if ended:
            seen_end.append(True)
            assert all(terms.values()) or all(truncs.values()), "both agents end together"

    _play_out(env, np.random.default_rng(0), on_step)
    assert seen_end == [True]
    with pytest.raises(ValueError, match="reset"):
        env.step({})


def test_spaces_are_the_same_object_every_call():
    env = spit_env.parallel_env()
    for agent in env.possible_agents:
        assert env.observation_space(agent) is env.observation_space(agent)
        assert env.action_space(agent) is env.action_space(agent)
    aec = spit_env.env()
    for agent in aec.possible_agents:
        assert aec.observation_space(agent) is aec.observation_space(agent)
        assert aec.action_space(agent) is aec.action_space(agent)


def test_infos_hold_only_agent_keys_and_observations_match_their_space():
    env = spit_env.parallel_env(SHORT)
    space = env.observation_space("player_0")

    def check(obs, infos, agents):
        assert set(infos) == set(agents)
        for agent in agents:
            o = obs[agent]
            assert o["observation"].dtype == np.float32 and o["observation"].shape == (rules.OBS_DIM,)
            assert o["action_mask"].dtype == np.int8 and o["action_mask"].shape == (rules.N_ACTIONS,)
            assert space.contains(o)
            # fixed-shape infos: the same keys and types at reset and at every step
            assert {k: type(v) for k, v in infos[agent].items()} == {"clock_ms": np.int64, "illegal": np.bool_}
            assert infos[agent]["clock_ms"] == env.snapshot()["clock_ms"]

    obs, infos = env.reset(seed=3)
    check(obs, infos, env.agents)
    state_space = env.state_space
    assert state_space.contains(env.state())

    def on_step(before, actions, obs, rewards, terms, truncs, infos):
        check(obs, infos, before)
        assert state_space.contains(env.state())

    _play_out(env, np.random.default_rng(3), on_step)


def _trajectory(env, seed_first: bool, n_resets: int, actions_seed: int):
    out = []
    rng = np.random.default_rng(actions_seed)
    for i in range(n_resets):
        obs, _ = env.reset(seed=7) if (seed_first and i == 0) else env.reset()
        out.append(env.snapshot())
        while env.agents:
            obs, rewards, *_ = env.step(random_actions(env, obs, rng))
            out.append((env.snapshot(), rewards))
    return out


def test_reset_seed_then_reset_replays_identically_in_two_instances():
    a, b = spit_env.parallel_env(SHORT), spit_env.parallel_env(SHORT)
    ta = _trajectory(a, True, 2, 0)
    tb = _trajectory(b, True, 2, 0)
    assert ta == tb
    # The second game is a different game (the next game id), not a replay of the first.
    assert ta[0] != [s for s in ta if isinstance(s, dict)][1]


def test_global_generators_are_never_used():
    np.random.seed(123)  # noqa: NPY002 (the point: the global generator is untouched)
    random.seed(123)
    np_before, py_before = np.random.get_state()[1].copy(), random.getstate()  # noqa: NPY002 (the point: the global generator is untouched)
    env = spit_env.parallel_env(SHORT)
    _trajectory(env, True, 1, 0)
    env.reset()  # unseeded: continues the seed's game ids
    fresh = spit_env.parallel_env(SHORT)
    fresh.reset()  # unseeded first reset: a seed from the operating system, not the generators
    np.testing.assert_array_equal(np.random.get_state()[1], np_before)  # noqa: NPY002 (the point: the global generator is untouched)
    assert random.getstate() == py_before


@pytest.mark.parametrize("tie_break", ["coin", "player_0", "player_1"])
def test_two_simultaneous_plays_on_one_pile_exactly_one_lands_whatever_the_dict_order(tie_break):
    # Pile 0 (player_0's) shows a 5; player_0's place 0 shows a 4 and player_1's a 6: both may
    # play onto pile 0, and whichever lands first makes the other unplayable.
    deal = build_deal({0: 4, 15: 5}, {0: 6, 15: 13})
    config = SpitConfig(latency=Latency.fixed(300), tie_break=tie_break)
    results = []
    for order in (("player_0", "player_1"), ("player_1", "player_0")):
        env = spit_env.parallel_env(config)
        obs, _ = env.reset(seed=11, options={"deal": deal})
        p0, p1 = rules.play_action(0, 0), rules.play_action(0, 1)  # both target absolute pile 0
        assert obs["player_0"]["action_mask"][p0] and obs["player_1"]["action_mask"][p1]
        actions = {"player_0": p0, "player_1": p1}
        env.step({agent: actions[agent] for agent in order})
        events = [e for e in env.last_events() if e["type"] in ("play", "bounce")]
        assert sorted(e["type"] for e in events) == ["bounce", "play"]
        assert all(e["pile"] == 0 for e in events)
        results.append((events, env.snapshot()))
    assert results[0] == results[1]
    winner = results[0][0][0]["player"] if results[0][0][0]["type"] == "play" else results[0][0][1]["player"]
    if tie_break != "coin":
        assert winner == int(tie_break[-1])


def test_masks_equal_the_rules_at_reset_after_a_stall_and_at_round_end():
    config = SpitConfig(max_game_ms=120_000)
    env = spit_env.parallel_env(config)
    seen = {"reset": 0, "stall": 0, "round_end": 0, "other": 0}
    rng = np.random.default_rng(4)

    def compare(obs, agents):
        snap = env.snapshot()
        for seat, agent in enumerate(env.possible_agents):
            if agent in agents:
                np.testing.assert_array_equal(
                    obs[agent]["action_mask"].astype(bool), rules_mask(snap, seat, config), err_msg=agent
                )

    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        compare(obs, env.agents)
        seen["reset"] += 1
        while env.agents:
            before = list(env.agents)
            obs, _, _, _, _ = env.step(random_actions(env, obs, rng))
            types = {e["type"] for e in env.last_events()}
            compare(obs, before)
            # A spit after the round start is a stall (D9); round_end covers D10.
            if "round_end" in types:
                seen["round_end"] += 1
            elif "spit" in types:
                seen["stall"] += 1
            else:
                seen["other"] += 1
    assert min(seen.values()) > 0, seen


def test_a_win_is_terminated_on_the_step_of_the_last_card():
    # player_0 holds a single card (a 4) and no spit cards: one pile round (D4), the pile is
    # player_1's with a 5 on top. Playing the 4 empties player_0: it wins at once (D14).
    deal = build_deal({0: 4}, {15: 5}, size0=1)
    env = spit_env.parallel_env(SpitConfig(latency=Latency.fixed(300)))
    obs, _ = env.reset(seed=0, options={"deal": deal})
    play = rules.play_action(0, 1)  # egocentric: the opponent's pile, the only one
    assert obs["player_0"]["action_mask"][play]
    actions = {"player_0": play, "player_1": rules.WAIT}
    for _ in range(10):  # player_1's WAITs (100 ms) land before the play (300 ms)
        obs, rewards, terms, truncs, infos = env.step(actions)
        types = [e["type"] for e in env.last_events()]
        if "play" in types:
            break
        assert terms == truncs == {"player_0": False, "player_1": False}
        actions = {"player_0": rules.WAIT, "player_1": rules.WAIT}
    assert types[-3:] == ["play", "round_end", "game_end"]
    assert terms == {"player_0": True, "player_1": True}
    assert truncs == {"player_0": False, "player_1": False}
    assert rewards == {"player_0": 1.0, "player_1": -1.0}
    assert env.agents == []
    assert env.snapshot()["winner"] == 0


def test_a_time_limit_is_truncated_only_with_zero_rewards():
    env = spit_env.parallel_env(SpitConfig(max_game_ms=2_000))
    env.reset(seed=0)
    steps = 0
    while env.agents:
        _, rewards, terms, truncs, infos = env.step(dict.fromkeys(env.agents, rules.WAIT))
        steps += 1
    assert truncs == {"player_0": True, "player_1": True}
    assert terms == {"player_0": False, "player_1": False}
    assert rewards == {"player_0": 0.0, "player_1": 0.0}
    assert env.last_events()[-1]["type"] == "game_end"
    assert steps > 1


def test_rewards_sum_to_zero_and_never_terminated_and_truncated_together():
    env = spit_env.parallel_env(SpitConfig(max_game_ms=200_000))
    endings = []

    def on_step(before, actions, obs, rewards, terms, truncs, infos):
        assert sum(rewards.values()) == 0.0
        for agent in before:
            assert not (terms[agent] and truncs[agent])
        if any(terms.values()) or any(truncs.values()):
            endings.append((terms["player_0"], truncs["player_0"], rewards["player_0"]))
            if truncs["player_0"]:
                assert rewards["player_0"] == 0.0

    rng = np.random.default_rng(9)
    for seed in range(3):
        env.reset(seed=seed)
        _play_out(env, rng, on_step)
    assert len(endings) == 3


def test_observe_opponent_move_flag_hides_only_the_opponents_move():
    flight = rules.OBS["opp_move_in_flight"].slice
    own = rules.OBS["self_move_in_flight"].slice
    busy = rules.OBS["opp_busy"].start
    for flag in (True, False):
        env = spit_env.parallel_env(SpitConfig(observe_opponent_move=flag, latency=(100, 900)))
        obs, _ = env.reset(seed=2)
        # player_1 (900 ms) moves, player_0 (100 ms) waits: player_0 then sees player_1 busy.
        legal1 = np.flatnonzero(obs["player_1"]["action_mask"][1:]) + 1
        a1 = int(legal1[0]) if legal1.size else rules.WAIT
        obs, *_ = env.step({"player_0": rules.WAIT, "player_1": a1})
        o0, o1 = obs["player_0"]["observation"], obs["player_1"]["observation"]
        assert o0[busy] == 1.0
        assert o1[own][a1] == 1.0  # a player always sees its own move
        assert o0[flight].sum() == (1.0 if flag else 0.0)
        if flag:
            assert o0[flight][a1] == 1.0
        state = env.state()
        assert state[rules.OBS_DIM:][own][a1] == 1.0  # the global state shows it either way


def test_bad_inputs_raise_value_error_naming_them():
    with pytest.raises(ValueError, match="render_mode"):
        spit_env.parallel_env(render_mode="rgb_array_list")
    with pytest.raises(ValueError, match="render_mode"):
        spit_env.env(render_mode="video")
    env = spit_env.parallel_env()
    with pytest.raises(ValueError, match="reset"):
        env.step({"player_0": 0, "player_1": 0})
    good = build_deal({}, {})
    for bad in ([good[0]], [good[0][:-1], good[1]], [good[0] + [good[1][0]], good[1]], [good[0], good[1][:-1] + [99]], "xy"):
        with pytest.raises(ValueError, match="deal"):
            env.reset(seed=0, options={"deal": bad})
    env.reset(seed=0, options={"deal": good})
    assert sum(len(p) for p in env.snapshot()["stocks"][0]) == 15
    with pytest.raises(ValueError, match="player_1"):
        env.step({"player_0": 0})
    with pytest.raises(ValueError, match="player_0"):
        env.step({"player_0": 23, "player_1": 0})
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)


def test_illegal_action_is_reported_and_played_as_wait():
    env = spit_env.parallel_env()
    obs, _ = env.reset(seed=0)
    illegal = int(np.flatnonzero(obs["player_0"]["action_mask"] == 0)[0])
    _, _, _, _, infos = env.step({"player_0": illegal, "player_1": rules.WAIT})
    assert infos["player_0"]["illegal"] and not infos["player_1"]["illegal"]
    ev = [e for e in env.last_events() if e["type"] == "illegal"]
    assert ev and ev[0]["player"] == 0 and ev[0]["action"] == illegal
    raising = spit_env.parallel_env(SpitConfig(illegal_action="raise"))
    raising.reset(seed=0)
    before = raising.snapshot()
    with pytest.raises(ValueError):
        raising.step({"player_0": illegal, "player_1": rules.WAIT})
    assert raising.snapshot() == before


def test_a_pickled_env_continues_the_same_game():
    import pickle

    env = spit_env.parallel_env(SHORT)
    obs, _ = env.reset(seed=8)
    rng = np.random.default_rng(0)
    for _ in range(20):
        obs, *_ = env.step(random_actions(env, obs, rng))
    twin = pickle.loads(pickle.dumps(env))
    assert twin.snapshot() == env.snapshot()
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    obs_b = obs
    while env.agents:
        obs, rewards, *_ = env.step(random_actions(env, obs, rng_a))
        obs_b, rewards_b, *_ = twin.step(random_actions(twin, obs_b, rng_b))
        assert rewards == rewards_b and env.snapshot() == twin.snapshot()
    assert twin.agents == []
