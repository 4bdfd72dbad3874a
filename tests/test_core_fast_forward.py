"""``core.fast_forward``: jumping over the epochs in which one seat can only WAIT gives exactly
the state that stepping through them one by one (WAIT for both seats) gives, jumps as far as
that is true (or ``max_epochs``) and no further, and leaves other rows alone."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import random_joint_actions

from spit_env import SpitConfig, core, rules
from spit_env.testing import check_invariants

CONFIGS = {
    "default": SpitConfig(),
    "short_game_odd_wait": SpitConfig(wait_ms=70, max_game_ms=25_000, tie_break="player_0"),
    "no_timeout": SpitConfig(stall_timeout_ms=None, latency=("pro", "novice"), max_game_ms=60_000),
    "quick_timeout": SpitConfig(stall_timeout_ms=450, wait_ms=40, auto_flip=False, max_game_ms=60_000),
}


def _same_state(a: core.CoreState, b: core.CoreState) -> None:
    for name in core.CoreState._ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(core.legal_action_mask(a), core.legal_action_mask(b))
    np.testing.assert_array_equal(core.observe(a), core.observe(b))


def _forced(state: core.CoreState, seat: int) -> np.ndarray:
    """(B,) bool: ``seat`` is free with WAIT as its only move and the other seat is busy."""
    mask = core.legal_action_mask(state)[:, seat]
    return (~mask[:, 1:].any(axis=1) & (state.fl_action[:, seat] < 0)
            & (state.fl_action[:, 1 - seat] >= 0) & (state.phase == rules.PHASE_PLAY))


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_fast_forward_equals_stepping_through_the_forced_waits(name):
    config = CONFIGS[name]
    rng = np.random.default_rng(7)
    b = 48
    state = core.init(config, b, seed=3)
    jumps = 0
    for step_no in range(400):
        seat = step_no % 2
        cand = _forced(state, seat)
        pick = cand & (rng.random(b) < 0.8)  # some candidates stay out, and rows that are not
        idx = np.flatnonzero(pick | (rng.random(b) < 0.1))
        jumped, stepped = state.copy(), state.copy()
        k = core.fast_forward(jumped, idx, seat)
        assert k.shape == idx.shape and (k >= 0).all()
        assert (k[~cand[idx]] == 0).all(), "only a forced seat beside a busy one is skipped"
        for j in range(int(k.max(initial=0))):
            go = np.zeros(b, bool)
            go[idx[k > j]] = True
            stepped, out = core.step(stepped, np.zeros((b, 2), np.int64), rows=go, events=True)
            assert len(out.events) == 0 and not out.rewards.any()
            assert not (out.terminated | out.truncated).any()
        _same_state(jumped, stepped)
        check_invariants(jumped)
        # as far as possible: the seat's next WAIT lands with (or after) something else
        assert (core.fast_forward(jumped.copy(), idx, seat) == 0).all()
        jumps += int((k > 0).sum())
        # carry on from the jumped state half of the time
        state = jumped if step_no % 4 < 2 else state
        actions = random_joint_actions(core.legal_action_mask(state), rng, wait_bias=0.6)
        state, _ = core.step(state, actions)
        over = state.phase == rules.PHASE_OVER
        if over.any():
            core.reset(state, over, np.where(over, 1000 + step_no * b + np.arange(b), 0))
    assert jumps > 50, f"too few forced runs to test ({jumps})"


def test_fast_forward_seats_per_row_and_bad_arguments():
    state = core.init(SpitConfig(), 6, seed=1)
    assert core.fast_forward(state, np.zeros(0, np.int64), 0).shape == (0,)
    k = core.fast_forward(state, np.arange(6), np.array([0, 1, 0, 1, 0, 1]))
    assert k.shape == (6,) and not k.any()  # at the start nobody is busy
    with pytest.warns(DeprecationWarning, match="rows= is deprecated"):
        assert core.fast_forward(state, rows=np.ones(6, bool), seat=1).shape == (6,)
    with pytest.raises(ValueError, match="seat"):
        core.fast_forward(state, np.arange(6), 2)
    with pytest.raises(ValueError, match="idx"):
        core.fast_forward(state, np.array([0, 9]), 0)
    with pytest.raises(ValueError, match="idx"):
        core.fast_forward(state, np.array([1, 1]), 0)


def test_fast_forward_stops_at_max_epochs():
    config = SpitConfig(stall_timeout_ms=None, max_game_ms=60_000)
    rng = np.random.default_rng(4)
    state = core.init(config, 64, seed=8)
    checked = 0
    for step_no in range(300):
        seat = step_no % 2
        idx = np.flatnonzero(_forced(state, seat))
        if idx.size:
            free_run = core.fast_forward(state.copy(), idx, seat)
            cap = rng.integers(0, 4, idx.size)
            capped, stepped = state.copy(), state.copy()
            k = core.fast_forward(capped, idx, seat, max_epochs=cap)
            np.testing.assert_array_equal(k, np.minimum(free_run, cap))
            for j in range(int(k.max(initial=0))):
                go = np.zeros(state.batch_size, bool)
                go[idx[k > j]] = True
                core.step(stepped, np.zeros((state.batch_size, 2), np.int64), rows=go)
            _same_state(capped, stepped)
            checked += int((free_run > cap).sum())
        state, _ = core.step(state, random_joint_actions(core.legal_action_mask(state), rng, wait_bias=0.6))
        over = state.phase == rules.PHASE_OVER
        if over.any():
            core.reset(state, over, np.where(over, 5000 + step_no * 64 + np.arange(64), 0))
    assert checked > 20, f"too few capped runs ({checked})"
    with pytest.raises(ValueError, match="max_epochs"):
        core.fast_forward(state, np.arange(3), 0, max_epochs=-1)
    with pytest.raises(ValueError, match="max_epochs"):
        core.fast_forward(state, np.arange(3), 0, max_epochs=np.array([1, 2]))
