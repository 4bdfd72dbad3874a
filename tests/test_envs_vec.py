"""SpitVecEnv: SB3 VecEnv semantics over the batched core (auto-reset, game ids, masks after a
reset, options), and a MaskablePPO smoke run through VecMonitor."""

from __future__ import annotations

import random

import numpy as np
import pytest
from helpers import SHORT
from sb3_contrib.common.maskable.utils import get_action_masks

from spit_env import Latency, SpitConfig, SpitVecEnv, core, rules
from spit_env.policy import uniform_legal, uniform_legal_actions

BUSY = rules.OBS["self_busy"].start


def _first_view(config, seed, game_id, seat):
    state = core.init(config, 1, seed, first_game=game_id)
    return core.observe(state)[0, seat], core.legal_action_mask(state)[0, seat]


def test_rows_start_as_games_of_the_seed_and_auto_resets_take_the_next_ids():
    config = SpitConfig(max_game_ms=10_000)
    n = 3
    venv = SpitVecEnv(n, opponent="greedy", config=config, seed=4, learner_seat=0)
    obs = venv.reset()
    for i in range(n):
        np.testing.assert_array_equal(obs[i], _first_view(config, 4, i, 0)[0])
    rng = np.random.default_rng(0)
    next_id = n
    restarts = 0
    while restarts < 4:
        obs, rewards, dones, infos = venv.step(uniform_legal_actions(venv.action_masks(), rng))
        masks = get_action_masks(venv)
        assert masks.shape == (n, rules.N_ACTIONS) and masks.dtype == bool
        for i in np.flatnonzero(dones):  # row order within a step
            expected_obs, expected_mask = _first_view(config, 4, next_id, 0)
            np.testing.assert_array_equal(obs[i], expected_obs)
            np.testing.assert_array_equal(masks[i], expected_mask)
            assert infos[i]["terminal_observation"].shape == (rules.OBS_DIM,)
            next_id += 1
            restarts += 1


def test_truncation_flag_only_on_truncation_and_terminal_observation_always():
    venv = SpitVecEnv(4, opponent="greedy", config=SpitConfig(max_game_ms=3_000), seed=0)
    venv.reset()
    rng = np.random.default_rng(1)
    ends = 0
    for _ in range(200):
        obs, rewards, dones, infos = venv.step(uniform_legal_actions(venv.action_masks(), rng))
        for i, info in enumerate(infos):
            if dones[i]:
                ends += 1
                assert "terminal_observation" in info
                assert info.get("TimeLimit.truncated") is True  # 3 s games always hit the limit
                assert rewards[i] == 0.0
            else:
                assert "TimeLimit.truncated" not in info and "terminal_observation" not in info
    assert ends > 0
    won = SpitVecEnv(4, opponent=uniform_legal, config=SpitConfig(max_game_ms=400_000), seed=0,
                     episode="round")
    won.reset()
    saw_termination = False
    for _ in range(2_000):
        _, _, dones, infos = won.step(uniform_legal_actions(won.action_masks(), rng))
        for i in np.flatnonzero(dones):
            assert "TimeLimit.truncated" not in infos[i]
            saw_termination = True
        if saw_termination:
            break
    assert saw_termination


def test_learner_is_free_in_every_row_after_every_step():
    venv = SpitVecEnv(8, opponent="greedy", config=SHORT, seed=1)
    obs = venv.reset()
    rng = np.random.default_rng(2)
    for _ in range(300):
        assert (obs[:, BUSY] == 0.0).all()
        masks = venv.action_masks()
        slap = obs[:, rules.OBS["phase"].start + rules.PHASE_SLAP] == 1.0
        assert (masks[:, rules.WAIT] == ~slap).all()  # a free learner must slap in the slap phase
        assert masks[slap][:, rules.SLAP_BASE:].all()
        obs, *_ = venv.step(uniform_legal_actions(masks, rng))
        assert obs.dtype == np.float32 and obs.shape == (8, rules.OBS_DIM)
        assert ((obs >= 0) & (obs <= 1)).all()


def test_same_seed_same_run_and_seed_restarts_from_game_zero():
    def run(venv, steps=150):
        out = [venv.reset()]
        rng = np.random.default_rng(3)
        for _ in range(steps):
            obs, rewards, dones, _ = venv.step(uniform_legal_actions(venv.action_masks(), rng))
            out += [obs, rewards, dones]
        return out

    a = SpitVecEnv(4, opponent="greedy", config=SHORT, seed=9)
    b = SpitVecEnv(4, opponent="greedy", config=SHORT, seed=9)
    ra, rb = run(a), run(b)
    for x, y in zip(ra, rb, strict=True):
        np.testing.assert_array_equal(x, y)
    assert a.seed(9) == [9] * 4
    for x, y in zip(run(a), ra, strict=True):
        np.testing.assert_array_equal(x, y)


def test_global_generators_are_never_used():
    np.random.seed(5)  # noqa: NPY002 (the point: the global generator is untouched)
    random.seed(5)
    np_before, py_before = np.random.get_state()[1].copy(), random.getstate()  # noqa: NPY002 (the point: the global generator is untouched)
    venv = SpitVecEnv(4, opponent="random", config=SHORT, seed=0)
    venv.reset()
    venv.seed()  # a seed from the operating system, not from the global generator
    venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(50):
        venv.step(uniform_legal_actions(venv.action_masks(), rng))
    np.testing.assert_array_equal(np.random.get_state()[1], np_before)  # noqa: NPY002 (the point: the global generator is untouched)
    assert random.getstate() == py_before


def test_set_opponent_swaps_the_policy_called_in_batch():
    calls = []

    def recording(obs, masks, rng):
        calls.append((obs.shape, obs.dtype, masks.shape, masks.dtype))
        return uniform_legal(obs, masks, rng)

    venv = SpitVecEnv(6, opponent="greedy", config=SHORT, seed=0)
    venv.reset()
    venv.set_opponent(recording)
    rng = np.random.default_rng(0)
    for _ in range(20):
        venv.step(uniform_legal_actions(venv.action_masks(), rng))
    assert calls
    assert all(c[1] == np.dtype(np.float32) and c[3] == np.dtype(bool) and c[0][0] == c[2][0] <= 6 for c in calls)
    assert len(calls) < 20 * 6, "one batched call per epoch, not one per row"


def test_asymmetric_profile_with_random_seats_gives_each_row_its_seats_latency():
    # The learner's seat moves between games, and the profile's 700 ms follows the opponent.
    config = SpitConfig(latency=200)
    venv = SpitVecEnv(16, opponent="greedy@700", config=config, seed=0, learner_seat="random")
    venv.reset()
    seats = venv.learner_seats
    assert set(seats.tolist()) == {0, 1}
    starts = [venv.snapshot(i)["clock_ms"] for i in range(16)]
    venv.step(np.full(16, rules.WAIT))
    checked = set()
    for i in range(16):
        snap = venv.snapshot(i)
        move = snap["in_flight"][1 - seats[i]]
        if move is not None and move["action"] != rules.WAIT:
            assert move["lands_ms"] - starts[i] == 700
            checked.add(int(seats[i]))
    assert checked == {0, 1}


def test_vec_plumbing_methods():
    venv = SpitVecEnv(3, opponent="greedy", config=SHORT, render_mode="ansi")
    venv.reset()
    assert venv.get_attr("render_mode") == ["ansi"] * 3
    assert venv.env_is_wrapped(object) == [False] * 3
    assert len(venv.env_method("action_masks", indices=[0, 2])) == 2
    assert isinstance(venv.env_method("snapshot", indices=1)[0], dict)
    assert "[env 2]" in venv.render()
    assert venv.has_attr("action_masks")
    venv.set_attr("opponent", "random")
    assert venv.opponent == "random"
    with pytest.raises(ValueError, match="all envs"):
        venv.set_attr("skip_forced_waits", 1, indices=[0])
    with pytest.raises(ValueError, match="actions"):
        venv.step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="num_envs"):
        SpitVecEnv(0)
    with pytest.raises(ValueError, match="num_envs"):
        SpitVecEnv(2.5)
    with pytest.raises(ValueError, match="render_mode"):
        SpitVecEnv(2, render_mode="rgb_array_list")


def test_maskable_ppo_learns_a_few_steps_through_vec_monitor():
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    venv = VecMonitor(SpitVecEnv(4, opponent="greedy", config=SpitConfig(max_game_ms=5_000), seed=0))
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256
    assert len(model.ep_info_buffer) > 0  # VecMonitor saw whole episodes (auto-reset works)


def _forced_share(skip: int) -> tuple[float, int]:
    from spit_env import SpitVecEnv

    venv = SpitVecEnv(16, opponent="greedy", seed=3, skip_forced_waits=skip)
    venv.reset()
    forced = episodes = 0
    for _ in range(300):
        masks = venv.action_masks()
        forced += int((masks[:, 0] & (masks.sum(axis=1) == 1)).sum())
        actions = np.where(masks[:, 1:].any(axis=1), masks[:, 1:].argmax(axis=1) + 1, 0)
        _, _, dones, infos = venv.step(actions)
        episodes += int(dones.sum())
        for i in np.flatnonzero(dones):
            assert "terminal_observation" in infos[i]
    return forced / (300 * 16), episodes


def test_skip_forced_waits_hands_the_learner_fewer_forced_decisions():
    plain, _ = _forced_share(0)
    skipping, episodes = _forced_share(2)
    assert plain > 0.2, "the check needs forced WAITs to exist"
    assert skipping < plain
    assert episodes > 0


@pytest.mark.parametrize("bad", [-1, 17, 1.5, True])
def test_skip_forced_waits_is_validated(bad):
    from spit_env import SpitVecEnv

    with pytest.raises(ValueError, match="skip_forced_waits"):
        SpitVecEnv(2, skip_forced_waits=bad)


def _first_legal(obs, masks, rng):
    return np.argmax(masks, axis=1).astype(np.int64)


def _last_legal(obs, masks, rng):
    return (masks.shape[1] - 1 - np.argmax(masks[:, ::-1], axis=1)).astype(np.int64)


@pytest.mark.parametrize("latency", [None, "pro"])
def test_rows_with_their_own_opponents_play_as_in_envs_of_one_opponent(latency):
    # Deterministic opponents and learner: each row of the mixed VecEnv must play the game it
    # would play in a VecEnv where every row has that row's opponent (until the first episode
    # ends, after which the auto-reset game ids depend on which rows ended).
    from spit_env.policy import register_policy

    register_policy("test-first-legal", lambda: _first_legal, overwrite=True)
    register_policy("test-last-legal", lambda: _last_legal, overwrite=True)
    low = "test-first-legal" if latency is None else f"test-first-legal@{latency}"
    high = "test-last-legal"
    b, mine = 8, [1, 4, 5]
    mixed = SpitVecEnv(b, opponent=high, seed=5, learner_seat=0)
    mixed.set_opponent(low, indices=mine)
    alone = {low: SpitVecEnv(b, opponent=low, seed=5, learner_seat=0),
             high: SpitVecEnv(b, opponent=high, seed=5, learner_seat=0)}
    assert mixed.get_attr("opponent") == [low if i in mine else high for i in range(b)]
    obs = mixed.reset()
    ref = {k: env.reset() for k, env in alone.items()}
    of_row = np.array([low if i in mine else high for i in range(b)])
    steps = 0
    while True:
        for k in alone:
            assert np.array_equal(obs[of_row == k], ref[k][of_row == k])
        actions = _first_legal(None, mixed.action_masks(), None)
        obs, _, dones, _ = mixed.step(actions)
        outs = {k: env.step(actions) for k, env in alone.items()}
        ref = {k: out[0] for k, out in outs.items()}
        steps += 1
        if dones.any() or any(out[2].any() for out in outs.values()):
            break
    assert steps > 20
    if latency is not None:  # the profile's latency is the opponent seat's in those rows
        assert all(mixed.duel.row_config(i).latency[1].name == latency for i in mine)
        assert mixed.duel.row_config(0).latency[1].name == "club"


def test_rows_may_change_opponent_while_games_run():
    # A profile set for some rows mid-game: the running games keep their config, the rows'
    # next games (auto-reset) are dealt under the profile's latency; the invariants hold.
    from spit_env.testing import check_invariants

    venv = SpitVecEnv(6, opponent="greedy", config=SHORT, seed=2, learner_seat=1)
    venv.reset()
    venv.set_opponent("random@250", indices=[0, 3])
    assert venv.duel.row_config(0).latency[0].name == "club"  # the running game's
    rng = np.random.default_rng(0)
    restarted = np.zeros(6, bool)
    for _ in range(400):
        _, _, dones, _ = venv.step(uniform_legal_actions(venv.action_masks(), rng))
        restarted |= dones
        if restarted[[0, 3]].all():
            break
    assert restarted[[0, 3]].all()
    assert all(venv.duel.row_config(i).latency[0].mean_ms == 250 for i in (0, 3))
    assert all(venv.duel.row_config(i).latency[0].name == "club" for i in (1, 2, 4, 5))
    check_invariants(venv.duel.state)


def test_profiles_set_one_after_another_leave_no_latency_model_behind():
    # Each new profile latency is one more model in the one core state; models that no game
    # plays any more are dropped when a new one comes in, and ``config`` is the config of the
    # games dealt from now on.
    venv = SpitVecEnv(4, opponent="greedy", config=SHORT, seed=1, learner_seat=0)
    venv.reset()
    rng = np.random.default_rng(0)
    for ms in range(300, 420, 20):
        venv.set_opponent(f"racer@{ms}")
        assert venv.config.latency[1].mean_ms == ms
        restarted = np.zeros(4, bool)
        while not restarted.all():
            _, _, dones, _ = venv.step(uniform_legal_actions(venv.action_masks(), rng))
            restarted |= dones
        assert all(venv.duel.row_config(i).latency[1].mean_ms == ms for i in range(4))
        assert all(venv.duel.row_config(i).latency[0].name == "club" for i in range(4))
        # the learners' club, this profile's, and at most the one before
        assert len(venv.duel.state.latency_models) <= 3


@pytest.mark.parametrize("profile", ["greedy@3600001", "greedy@99999999999"])
def test_a_latency_beyond_an_hour_is_refused(profile):
    venv = SpitVecEnv(2, opponent="greedy", config=SHORT, seed=0)
    venv.reset()
    with pytest.raises(ValueError, match="latency"):
        venv.set_opponent(profile, indices=[0])
    assert venv.opponent == "greedy"
    with pytest.raises(ValueError, match="mean_ms"):
        SpitConfig(latency=(Latency.normal(5e9, 10), Latency.preset("club")))


def test_the_engine_names_its_own_arguments():
    # each view checks its own argument names; the engine says batch_size and idx
    from spit_env.envs.duel import Duel

    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        Duel(None, 0, "greedy", "random", "game", 0.0, "game")
    duel = Duel(None, 3, "greedy", "random", "game", 0.0, "game")
    for idx in ([3], [-1], [0.5], np.array([True, False, True])):
        with pytest.raises(ValueError, match="idx must be None or integer row indices in 0..2"):
            duel.set_opponent("random", idx)
    assert duel.opponent == "greedy"
    duel.set_opponent("random@250", np.array([2]))
    assert duel.opponent == ["greedy", "greedy", "random@250"]
