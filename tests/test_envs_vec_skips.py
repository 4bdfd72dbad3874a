"""The learner-versus-opponent engine (``spit_env.envs.duel``, under SpitVecEnv) skips what needs no
decision: the opponent policy is asked only for decisions with a choice, forced WAITs while the
other seat's move is in flight are jumped over (``core.fast_forward``), and ``skip_forced_waits``
plays the learner's forced WAITs inside the same call. None of it may change the game: with an
opponent whose choices do not depend on how it is batched, every step equals a plain loop that
steps every decision epoch and asks the policy every time."""

from __future__ import annotations

import numpy as np
import pytest

from spit_env import SpitConfig, SpitVecEnv, core, rules
from spit_env.policy import uniform_legal_actions


class _Recorder:
    """A uniformly random policy that records the masks it is asked about."""

    def __init__(self):
        self.masks = []

    def __call__(self, observations, action_masks, rng):
        self.masks.append(action_masks.copy())
        return uniform_legal_actions(action_masks, rng)


def test_opponent_policy_is_asked_only_for_decisions_with_a_choice():
    policy = _Recorder()
    venv = SpitVecEnv(32, opponent=policy, config=SpitConfig(max_game_ms=40_000), seed=2)
    venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(150):
        venv.step(uniform_legal_actions(venv.action_masks(), rng))
    asked = np.concatenate(policy.masks)
    assert len(asked) > 500
    assert asked[:, 1:].any(axis=1).all(), "a WAIT-only decision went to the policy"


def _first_choice_policy(observations, action_masks, rng):
    """A deterministic opponent that never touches ``rng``: a legal move picked by a hash of the
    observation, so that its choices depend on the game only, not on how it is batched."""
    count = action_masks.sum(axis=1)
    pick = (observations.astype(np.float64) @ np.arange(1, rules.OBS_DIM + 1) * 7919).astype(np.int64) % count
    order = np.cumsum(action_masks, axis=1) - 1
    return np.argmax(action_masks & (order == pick[:, None]), axis=1).astype(np.int64)


def _plain_loop(config, b, seed, learner_actions, skip_forced_waits):
    """The VecEnv's game, stepped epoch by epoch on the core with every decision asked of the
    opponent policy (no fast-forward): yields (obs, rewards, dones) per learner step."""
    state = core.init(config, b, seed)
    learner, opponent = 0, 1
    next_game = b
    obs = core.observe(state, None, learner)
    for choose in learner_actions:
        actions = choose(obs, core.legal_action_mask(state, None, learner))
        rewards = np.zeros(b)
        dones = np.zeros(b, bool)
        pending = np.ones(b, bool)
        skips = np.full(b, skip_forced_waits)
        first = True
        while pending.any():
            joint = np.zeros((b, 2), np.int64)
            if first:
                joint[:, learner] = actions
            joint[:, opponent] = _first_choice_policy(
                core.observe(state, None, opponent), core.legal_action_mask(state, None, opponent), None)
            busy_opp = state.fl_action[:, opponent] >= 0
            joint[busy_opp, opponent] = rules.WAIT
            _, out = core.step(state, joint, rows=pending)
            rewards += np.where(pending, out.rewards[:, learner], 0.0)
            ended = pending & (out.terminated | out.truncated)
            dones |= ended
            pending &= ~ended
            free = pending & (state.fl_action[:, learner] < 0)
            mask = core.legal_action_mask(state, None, learner)
            forced = free & mask[:, 0] & ~mask[:, 1:].any(axis=1) & (skips > 0)
            skips[forced] -= 1
            pending &= ~(free & ~forced)
            first = False
        obs = core.observe(state, None, learner)
        if dones.any():
            ids = np.zeros(b, np.int64)
            ids[dones] = next_game + np.arange(int(dones.sum()))
            next_game += int(dones.sum())
            core.reset(state, dones, ids)
            obs[dones] = core.observe(state, np.flatnonzero(dones), learner)
        yield obs, rewards, dones


@pytest.mark.parametrize("skip", [0, 2])
def test_vec_env_plays_the_game_of_a_plain_epoch_by_epoch_loop(skip):
    """SpitVecEnv skips the opponent's (and, with skip_forced_waits, the learner's) forced WAITs
    with fast_forward and asks the opponent policy only for decisions with a choice; with an
    opponent whose choices do not depend on its batch, the games must be exactly those of the
    plain loop that steps every epoch and asks the policy every time."""
    config = SpitConfig(max_game_ms=40_000)
    b, seed = 24, 6
    rng = np.random.default_rng(3)
    draws = rng.random((250, b, rules.N_ACTIONS))  # the learner's random legal moves, drawn once
    choices = [lambda obs, mask, u=u: np.argmax(np.where(mask, u, -1), axis=1) for u in draws]
    venv = SpitVecEnv(b, opponent=_first_choice_policy, config=config, seed=seed, learner_seat=0,
                      skip_forced_waits=skip)
    obs = venv.reset()
    ended = 0
    for t, (want_obs, want_rew, want_done) in enumerate(_plain_loop(config, b, seed, choices, skip)):
        if t == 0:
            np.testing.assert_array_equal(obs, core.observe(core.init(config, b, seed), None, 0))
        obs, rew, done, _ = venv.step(choices[t](obs, venv.action_masks()))
        np.testing.assert_array_equal(obs, want_obs, err_msg=f"step {t}")
        np.testing.assert_array_equal(rew, want_rew.astype(np.float32), err_msg=f"step {t}")
        np.testing.assert_array_equal(done, want_done, err_msg=f"step {t}")
        ended += int(done.sum())
    assert ended >= 10, f"too few games ended ({ended})"
