"""The Gymnasium environment: both ecosystem checkers with warnings as errors, one step = one
learner decision, opponents and profiles, rewards and episodes."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from helpers import SHORT, build_deal
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from spit_env import Latency, SpitConfig, SpitGymEnv, rules
from spit_env.policy import uniform_legal, uniform_legal_actions

BUSY = rules.OBS["self_busy"].start


@pytest.mark.filterwarnings("error")
def test_gymnasium_check_env():
    env = gymnasium.make("Spit-v0", opponent=uniform_legal, config=SHORT)
    assert isinstance(env.unwrapped, SpitGymEnv)
    gym_check_env(env.unwrapped)


@pytest.mark.filterwarnings("error")
def test_sb3_check_env():
    sb3_check_env(SpitGymEnv(opponent=uniform_legal, config=SHORT))


def _run(env, seed, rng, on_step=None):
    obs, info = env.reset(seed=seed)
    total = 0.0
    while True:
        mask = env.action_masks()
        assert mask.dtype == bool and mask.shape == (rules.N_ACTIONS,)
        action = int(uniform_legal_actions(mask, rng))
        obs, reward, term, trunc, info = env.step(action)
        total += reward
        if on_step is not None:
            on_step(obs, reward, term, trunc, info)
        if term or trunc:
            return total, term, trunc


def test_every_observation_is_a_learner_decision_until_the_end():
    env = SpitGymEnv(opponent="greedy", config=SHORT, learner_seat="random")

    def on_step(obs, reward, term, trunc, info):
        assert env.observation_space.contains(obs)
        if not (term or trunc):
            assert obs[BUSY] == 0.0, "the learner must be free at every observation"
            assert env.action_masks()[1:].any() or env.snapshot()["in_flight"][env.learner_seat] is None
        else:
            assert not (term and trunc)

    rng = np.random.default_rng(0)
    for seed in range(3):
        _run(env, seed, rng, on_step)


def test_profile_latency_replaces_the_opponent_seat_latency():
    for seat in (0, 1):
        env = SpitGymEnv(opponent="greedy@pro", learner_seat=seat)
        env.reset(seed=0)
        assert env.config.latency[1 - seat] == Latency.preset("pro")
        assert env.config.latency[seat] == Latency.preset("club")
    env = SpitGymEnv(opponent="random@250", learner_seat="random")
    seats = set()
    for _ in range(8):
        env.reset()
        seats.add(env.learner_seat)
        assert env.config.latency[1 - env.learner_seat] == Latency.fixed(250)
    assert seats == {0, 1}


def test_unknown_opponent_and_bad_options_raise_value_error():
    with pytest.raises(ValueError, match="greedy"):  # the message lists the known names
        SpitGymEnv(opponent="no_such_bot")
    with pytest.raises(ValueError, match="learner_seat"):
        SpitGymEnv(learner_seat=2)
    with pytest.raises(ValueError, match="reward"):
        SpitGymEnv(reward="cards")
    with pytest.raises(ValueError, match="episode"):
        SpitGymEnv(episode="match")
    with pytest.raises(ValueError, match="shaping"):
        SpitGymEnv(shaping=float("nan"))
    with pytest.raises(ValueError, match=r"render_mode .*\['ansi', 'human', 'rgb_array'\].*'rgb'"):
        SpitGymEnv(render_mode="rgb")
    env = SpitGymEnv()
    with pytest.raises(ValueError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(23)


def test_same_seed_same_episode_and_a_win_is_plus_one():
    def trajectory():
        env = SpitGymEnv(opponent="greedy", config=SHORT)
        out = []
        rng = np.random.default_rng(5)
        _run(env, 3, rng, lambda *r: out.append((r[0].tobytes(), r[1], r[2], r[3])))
        return out

    assert trajectory() == trajectory()
    # A constructed win: the learner (seat 0) holds one card that fits the only pile (D4, D14).
    deal = build_deal({0: 4}, {15: 5}, size0=1)
    env = SpitGymEnv(opponent=lambda o, m, r: np.zeros(len(m), np.int64), learner_seat=0)
    env.reset(seed=0, options={"deal": deal})
    obs, reward, term, trunc, info = env.step(rules.play_action(0, 1))
    assert (reward, term, trunc) == (1.0, True, False)
    assert [e["type"] for e in env.last_events()][-3:] == ["play", "round_end", "game_end"]


def test_shaping_and_round_rewards_follow_the_events():
    shaping = 0.01
    env = SpitGymEnv(opponent="greedy", config=SpitConfig(max_game_ms=120_000), learner_seat="random",
                     reward="round", shaping=shaping)
    rng = np.random.default_rng(2)
    rounds_seen = 0
    for seed in range(2):
        env.reset(seed=seed)
        while True:
            action = int(uniform_legal_actions(env.action_masks(), rng))
            obs, reward, term, trunc, info = env.step(action)
            me = info["learner_seat"]
            expected = 0.0
            for e in env.last_events():
                if e["type"] == "play":
                    expected += shaping if e["player"] == me else -shaping
                elif e["type"] == "round_end" and e["player"] >= 0:
                    expected += 1.0 if e["player"] == me else -1.0
                    rounds_seen += 1
                elif e["type"] == "round_end":
                    rounds_seen += 1
                    held = obs[rules.OBS["self_cards_held"].start], obs[rules.OBS["opp_cards_held"].start]
                    expected += float(np.sign(held[1] - held[0]))
                elif e["type"] == "game_end" and e["player"] >= 0:
                    expected += 1.0 if e["player"] == me else -1.0
            assert reward == pytest.approx(expected, abs=1e-5)
            if term or trunc:
                break
    assert rounds_seen > 0


def test_round_episodes_end_terminated_at_the_first_round_end():
    env = SpitGymEnv(opponent="greedy", episode="round")
    rng = np.random.default_rng(0)
    for seed in range(2):
        env.reset(seed=seed)
        while True:
            obs, reward, term, trunc, info = env.step(int(uniform_legal_actions(env.action_masks(), rng)))
            ends = [e for e in env.last_events() if e["type"] == "round_end"]
            if term or trunc:
                assert term and not trunc and ends
                break
            assert not ends


def test_render_ansi_shows_the_table_and_human_prints(capsys):
    env = SpitGymEnv(opponent="greedy", render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert "learner" in text and "phase play" in text
    human = SpitGymEnv(opponent="greedy", render_mode="human")
    human.reset(seed=0)
    assert "learner" in capsys.readouterr().out


def test_observe_opponent_move_off_hides_the_opponents_move_from_the_learner():
    flight = rules.OBS["opp_move_in_flight"].slice
    for flag in (True, False):
        env = SpitGymEnv(opponent="greedy", config=SpitConfig(observe_opponent_move=flag), learner_seat=0)
        env.reset(seed=1)
        shown = 0.0
        for _ in range(30):
            obs, _, term, trunc, _ = env.step(rules.WAIT)
            shown += obs[flight].sum()
            if term or trunc:
                break
        assert (shown > 0) == flag


def test_info_has_fixed_keys_and_the_mask_at_reset_and_every_step():
    env = gymnasium.make("Spit-v0", opponent="greedy", config=SHORT)
    types = {"action_mask": np.ndarray, "learner_seat": np.int64, "clock_ms": np.int64,
             "illegal": np.bool_}
    rng = np.random.default_rng(0)
    illegal_seen = False
    for seed in range(2):
        obs, info = env.reset(seed=seed)
        assert not info["illegal"]
        while True:
            assert {k: type(v) for k, v in info.items()} == types
            mask = info["action_mask"]
            assert mask.dtype == bool and mask.shape == (rules.N_ACTIONS,)
            np.testing.assert_array_equal(mask, env.unwrapped.action_masks())
            assert info["learner_seat"] == env.unwrapped.learner_seat
            assert info["clock_ms"] == env.unwrapped.snapshot()["clock_ms"]
            if rng.random() < 0.1 and not mask.all():  # now and then an illegal action
                action, expect = int(np.flatnonzero(~mask)[0]), True
            else:
                action, expect = int(uniform_legal_actions(mask[None], rng)[0]), False
            obs, _, term, trunc, info = env.step(action)
            assert info["illegal"] == expect
            illegal_seen |= expect
            if term or trunc:
                assert {k: type(v) for k, v in info.items()} == types
                break
    assert illegal_seen
