"""Partial views of the core: ``observe(state, idx, seat)`` and ``legal_action_mask(state, idx,
seat)`` equal the slices of the full arrays, on random runs (partial ``rows=`` steps and resets
included) and every config that changes the observation; bad ``idx`` / ``seat`` raise; the
deprecated ``rows=`` (a bool mask or indices) still works, with a DeprecationWarning; the
SpitVecEnv, which observes only the seats it needs, gives the observations of the full view."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from spit_env import SpitConfig, SpitVecEnv, core, rules
from spit_env.policy import uniform_legal_actions

OBSERVE = importlib.import_module("spit_env.core.observe")  # the module behind core.observe

CONFIGS = {
    "default": SpitConfig(max_game_ms=60_000),
    "points_hidden_no_autoflip": SpitConfig(scoring="points", target_points=40, observe_opponent_move=False,
                                            auto_flip=False, wrap_ranks=False, max_game_ms=60_000),
    "asymmetric_latency": SpitConfig(latency=("pro", "novice"), max_rounds=4, max_game_ms=40_000),
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
        some = np.flatnonzero(rng.random(b) < 0.4)  # increasing
        idx = rng.integers(0, b, size=int(rng.integers(0, 2 * b)))  # repeats and any order
        seats = rng.integers(0, 2, size=idx.size)
        np.testing.assert_array_equal(core.observe(state, some), full_obs[some])
        np.testing.assert_array_equal(core.observe(state, idx), full_obs[idx])
        np.testing.assert_array_equal(core.observe(state, idx, seats), full_obs[idx, seats])
        np.testing.assert_array_equal(core.observe(state, None, 1), full_obs[:, 1])
        np.testing.assert_array_equal(core.observe(state, some, 0), full_obs[some, 0])
        np.testing.assert_array_equal(core.legal_action_mask(state, some), full_mask[some])
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
    none = np.zeros(0, np.int64)
    assert core.observe(state, none).shape == (0, rules.N_PLAYERS, rules.OBS_DIM)
    assert core.observe(state, none, 0).shape == (0, rules.OBS_DIM)
    assert core.legal_action_mask(state, np.zeros(0, np.int64), np.zeros(0, np.int64)).shape == (0, rules.N_ACTIONS)


@pytest.mark.parametrize("idx, seat, field", [
    (np.ones(3, bool), None, "idx"),           # a bool array, not of the batch's length
    (np.array([0, 4]), None, "idx"),           # out of range
    (np.array([-1]), None, "idx"),
    (np.array([0.5]), None, "idx"),            # not integers
    (np.ones((4, 1), bool), None, "idx"),
    (np.zeros((2, 1), np.int64), None, "idx"),  # not 1-D
    (None, 2, "seat"),
    (None, True, "seat"),
    (np.array([0, 1]), np.array([0]), "seat"),  # not one seat per row
    (np.array([0, 1]), np.array([0, 2]), "seat"),
    (np.array([0, 1]), np.array([0.0, 1.0]), "seat"),
])
def test_bad_idx_or_seat_raise(idx, seat, field):
    state = core.init(CONFIGS["default"], 4, 0)
    with pytest.raises(ValueError, match=field):
        core.observe(state, idx, seat)
    with pytest.raises(ValueError, match=field):
        core.legal_action_mask(state, idx, seat)


def test_rows_is_a_deprecated_name_of_idx_for_one_release():
    """``rows=`` (a bool mask or row indices, as before) and a bool mask given as ``idx`` give
    what ``idx`` gives, with a DeprecationWarning; a bad one is named as given; both is an error."""
    state = next(s for k, (s, _) in enumerate(_runs(CONFIGS["default"], batch=6)) if k == 20)
    mask = np.array([True, False, True, True, False, True])
    idx = np.flatnonzero(mask)
    full_obs, full_mask = core.observe(state), core.legal_action_mask(state)
    for old in (mask, idx):
        with pytest.warns(DeprecationWarning, match="rows= is deprecated"):
            np.testing.assert_array_equal(core.observe(state, rows=old, seat=1), full_obs[idx, 1])
        with pytest.warns(DeprecationWarning, match="rows= is deprecated"):
            np.testing.assert_array_equal(core.legal_action_mask(state, rows=old), full_mask[idx])
    with pytest.warns(DeprecationWarning, match="a bool mask as idx is deprecated"):
        np.testing.assert_array_equal(core.observe(state, mask), full_obs[idx])
    with pytest.warns(DeprecationWarning, match="a bool mask as idx is deprecated"):
        np.testing.assert_array_equal(core.legal_action_mask(state, mask, 0), full_mask[idx, 0])
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="rows must be row"):
        core.observe(state, rows=np.array([9]))
    with pytest.raises(ValueError, match="not both"):
        core.observe(state, idx, rows=idx)


@pytest.mark.parametrize("opponent", ["greedy", "racer@pro"])
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


# --- the cached observation of a whole batch ------------------------------------------------------
@pytest.fixture
def cache_every_batch(monkeypatch):
    """Serve every whole-batch ``observe`` from the cache, whatever the batch size."""
    monkeypatch.setattr(OBSERVE, "CACHED_BATCH", 1)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_cached_observe_is_the_observation_built_from_scratch(name, cache_every_batch):
    """Along random runs that change the state by every core function (steps of some rows,
    resets, forced WAITs jumped over, hidden cards and streams replaced), the cached whole-batch
    observation equals the one built from scratch, bit for bit, whether it is asked for at every
    step or after several; check_caches says the same."""
    config = CONFIGS[name]
    rng = np.random.default_rng(7)
    checked = 0
    for k, (state, _) in enumerate(_runs(config, batch=20, steps=160, seed=2)):
        b = state.batch_size
        if k % 23 == 5:
            core.replace_hidden(state, np.flatnonzero(rng.random(b) < 0.5), rng=rng)
        if k % 17 == 3:
            some = np.flatnonzero(rng.random(b) < 0.5)
            core.reseed_rows(state, some, rng.integers(0, 2**63, some.size, dtype=np.uint64))
        if k % 5 == 1:
            free = np.flatnonzero((state.fl_action < 0).any(axis=1))
            seats = np.argmax(state.fl_action < 0, axis=1)[free]
            core.fast_forward(state, free, seats)
        if k % 3 == 2:
            continue  # several changes between two calls
        obs = core.observe(state)
        scratch = core.observe(state, np.arange(b))  # a part: always built from scratch
        np.testing.assert_array_equal(obs.view(np.uint32), scratch.view(np.uint32), err_msg=f"step {k}")
        core.check_caches(state)
        checked += 1
    assert checked > 100


def test_cached_observation_arrays_are_new_and_copies_have_their_own_cache(cache_every_batch):
    state = core.init(CONFIGS["default"], 8, 1)
    rng = np.random.default_rng(0)
    first = core.observe(state)
    kept = first.copy()
    first[:] = 0.5  # the caller's array: writing to it changes nothing in the state
    twin = state.copy()
    for _ in range(5):
        state, _ = core.step(state, uniform_legal_actions(core.legal_action_mask(state), rng))
    second = core.observe(state)
    assert second is not first and not np.shares_memory(second, first)
    np.testing.assert_array_equal(core.observe(twin), kept)  # the copy's cache is its own
    np.testing.assert_array_equal(second, core.observe(state, np.arange(8)))
    copies = core.copy_rows(state, [3], 4)
    np.testing.assert_array_equal(core.observe(copies), np.repeat(second[[3]], 4, axis=0))


def test_a_stale_observation_cache_is_caught(cache_every_batch):
    state = core.init(CONFIGS["default"], 4, 1)
    core.observe(state)
    state._obs.flags[2, 1, rules.OBS["centre_top_rank"].start] ^= 1  # as if a change was missed
    with pytest.raises(AssertionError, match="row 2"):
        core.check_caches(state)


def test_large_batches_use_the_cache_and_small_ones_do_not():
    """The default threshold: a batch of CACHED_BATCH games keeps a cache, one game fewer does not;
    both give the observation built from scratch."""
    n = OBSERVE.CACHED_BATCH
    rng = np.random.default_rng(1)
    for batch, cached in ((n, True), (n - 1, False)):
        state = core.init(CONFIGS["default"], batch, 3)
        for _ in range(12):
            np.testing.assert_array_equal(core.observe(state), core.observe(state, np.arange(batch)))
            state, _ = core.step(state, uniform_legal_actions(core.legal_action_mask(state), rng))
        assert (state._obs is not None) == cached


# --- no peeking -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("cached", [False, True])
def test_observations_do_not_depend_on_hidden_cards(name, cached, monkeypatch):
    """Another arrangement of every row's hidden cards (face-down stock cards and both players'
    spit cards, shuffled across both players' slots) leaves every observation unchanged, bit for
    bit, the whole batch and one seat per row alike, while the hidden cards (and so the rank of
    the next spit card or of a face-down top) did change: no field may read a hidden card, only
    what the seat sees."""
    monkeypatch.setattr(OBSERVE, "CACHED_BATCH", 1 if cached else 10**9)
    rng = np.random.default_rng(11)
    changed = 0
    for k, (state, _) in enumerate(_runs(CONFIGS[name], batch=16, steps=120, seed=4)):
        if k % 10 != 9:
            continue
        b = state.batch_size
        seats = rng.integers(0, 2, b)
        before, one = core.observe(state), core.observe(state, np.arange(b), seats)
        hidden = core.hidden_cards(state)
        core.replace_hidden(state, np.arange(b), rng=rng)
        ranks = np.where(hidden >= 0, hidden % rules.N_RANKS, -1)
        now = core.hidden_cards(state)
        changed += int((np.where(now >= 0, now % rules.N_RANKS, -1) != ranks).any(axis=1).sum())
        np.testing.assert_array_equal(core.observe(state).view(np.uint32), before.view(np.uint32))
        np.testing.assert_array_equal(core.observe(state, np.arange(b), seats).view(np.uint32),
                                      one.view(np.uint32))
    assert changed > 50  # the arrangements moved hidden ranks between slots in most rows
