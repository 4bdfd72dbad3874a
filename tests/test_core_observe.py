"""Partial views of the core: ``observe(state, rows, seat)`` and ``legal_action_mask(state, rows,
seat)`` equal the slices of the full arrays, on random runs (partial ``rows=`` steps and resets
included) and every config that changes the observation; bad ``rows`` / ``seat`` raise; the
SpitVecEnv, which observes only the seats it needs, gives the observations of the full view."""

from __future__ import annotations

import numpy as np
import pytest

from spit_env import SpitConfig, SpitVecEnv, core, rules
from spit_env.policy import uniform_legal_actions

CONFIGS = {
    "default": SpitConfig(max_game_ms=60_000),
    "points_hidden_no_autoflip": SpitConfig(scoring="points", target_points=40, observe_opponent_move=False,
                                            auto_flip=False, wrap_ranks=False, max_game_ms=60_000),
    "asymmetric_latency": SpitConfig(latency=("expert", "novice"), max_rounds=4, max_game_ms=40_000),
}


def _runs(config, batch=24, steps=150, seed=0):
    """Yield states of a random run with partial-row steps and resets at different times."""
    rng = np.random.default_rng(seed)
    state = core.init(config, batch, seed)
    next_id = batch
    for _ in range(steps):
        yield state, rng
        rows = rng.random(batch) < 0.6
        state, _ = core.step(state, uniform_legal_actions(core.legal_action_mask(state), rng), rows=rows)
        over = state.phase == rules.PHASE_OVER
        if over.any():
            ids = np.zeros(batch, np.int64)
            ids[over] = next_id + np.arange(int(over.sum()))
            next_id += int(over.sum())
            core.reset(state, over, ids)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_partial_observe_and_mask_equal_slices_of_the_full_arrays(name):
    checked = 0
    for state, rng in _runs(CONFIGS[name]):
        full_obs = core.observe(state)
        full_mask = core.legal_action_mask(state)
        b = state.batch_size
        rows = rng.random(b) < 0.4
        idx = rng.integers(0, b, size=int(rng.integers(0, 2 * b)))  # repeats and any order
        seats = rng.integers(0, 2, size=idx.size)
        np.testing.assert_array_equal(core.observe(state, rows), full_obs[rows])
        np.testing.assert_array_equal(core.observe(state, idx), full_obs[idx])
        np.testing.assert_array_equal(core.observe(state, idx, seats), full_obs[idx, seats])
        np.testing.assert_array_equal(core.observe(state, None, 1), full_obs[:, 1])
        np.testing.assert_array_equal(core.observe(state, rows, 0), full_obs[rows, 0])
        np.testing.assert_array_equal(core.legal_action_mask(state, rows), full_mask[rows])
        np.testing.assert_array_equal(core.legal_action_mask(state, idx, seats), full_mask[idx, seats])
        np.testing.assert_array_equal(core.legal_action_mask(state, None, 0), full_mask[:, 0])
        checked += 1
        assert core.observe(state, idx, seats).dtype == np.float32
        assert core.legal_action_mask(state, idx, seats).dtype == bool
    assert checked > 0


def test_full_observe_is_unchanged_by_a_partial_call():
    state = core.init(CONFIGS["default"], 6, 3)
    before = core.observe(state)
    core.observe(state, np.array([1, 4]), np.array([0, 1]))
    core.legal_action_mask(state, np.array([2]), 1)
    np.testing.assert_array_equal(core.observe(state), before)


def test_empty_selection_gives_empty_arrays():
    state = core.init(CONFIGS["default"], 4, 0)
    none = np.zeros(4, bool)
    assert core.observe(state, none).shape == (0, rules.N_PLAYERS, rules.OBS_DIM)
    assert core.observe(state, none, 0).shape == (0, rules.OBS_DIM)
    assert core.legal_action_mask(state, np.zeros(0, np.int64), np.zeros(0, np.int64)).shape == (0, rules.N_ACTIONS)


@pytest.mark.parametrize("rows, seat, field", [
    (np.ones(3, bool), None, "rows"),          # wrong length
    (np.array([0, 4]), None, "rows"),          # out of range
    (np.array([-1]), None, "rows"),
    (np.array([0.5]), None, "rows"),           # not integers
    (np.ones((4, 1), bool), None, "rows"),
    (None, 2, "seat"),
    (None, True, "seat"),
    (np.array([0, 1]), np.array([0]), "seat"),  # not one seat per row
    (np.array([0, 1]), np.array([0, 2]), "seat"),
    (np.array([0, 1]), np.array([0.0, 1.0]), "seat"),
])
def test_bad_rows_or_seat_raise(rows, seat, field):
    state = core.init(CONFIGS["default"], 4, 0)
    with pytest.raises(ValueError, match=field):
        core.observe(state, rows, seat)
    with pytest.raises(ValueError, match=field):
        core.legal_action_mask(state, rows, seat)


@pytest.mark.parametrize("opponent", ["greedy", "racer@expert"])
def test_vec_env_observations_and_masks_are_the_full_views_learner_rows(opponent):
    """The VecEnv observes only the seats it needs; what it returns must still be the learner's
    row of the full observation and mask of every core state (two states with a profile whose
    latency differs by seat)."""
    venv = SpitVecEnv(16, opponent=opponent, config=SpitConfig(max_game_ms=20_000), seed=5)
    obs = venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(60):
        duel = venv.duel
        full_obs, full_mask = duel.observe(), duel.masks()
        idx = np.arange(venv.num_envs)
        np.testing.assert_array_equal(obs, full_obs[idx, duel.seat])
        masks = venv.action_masks()
        np.testing.assert_array_equal(masks, full_mask[idx, duel.seat])
        obs, _, dones, infos = venv.step(uniform_legal_actions(masks, rng))
        for i in np.flatnonzero(dones):
            assert infos[i]["terminal_observation"].shape == (rules.OBS_DIM,)
