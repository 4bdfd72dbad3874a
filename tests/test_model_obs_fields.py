"""A model reads the observation fields it was made with, by name: a model file saved when the
observation had 241 floats, before files recorded their fields (``tests/data/model_obs241.zip``,
a 128x128 PPO model) reads exactly those, in their order, and plays as it did; a new
model records its fields (all, or some left out for a training run) and keeps them through save
and load; bad field names are refused before any work."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import game_observations

pytest.importorskip("sb3_contrib")

TRACKED = ("unseen_rank", "self_idle", "opp_idle", "centre_rank_count")
OBS241_MODEL = Path(__file__).resolve().parent / "data" / "model_obs241.zip"


def _legacy_columns() -> np.ndarray:
    """The entries of today's observation that the 241-float observation had: all but the
    tracked fields, cut out by their index ranges (independent of the name lookup)."""
    from spit_env import rules

    cut = np.concatenate([np.arange(rules.OBS[n].start, rules.OBS[n].stop) for n in TRACKED])
    return np.delete(np.arange(rules.OBS_DIM), cut)


def test_a_model_saved_before_obs_fields_reads_the_observation_of_its_time():
    import torch
    from sb3_contrib import MaskablePPO

    from agents.network import NetworkPolicy, model_input
    from agents.ppo_model import LEGACY_OBS_FIELDS, TRACKED_OBS_FIELDS
    from spit_env import rules
    from spit_env.observation import observed_masks, rule_options

    assert TRACKED_OBS_FIELDS == TRACKED
    # the legacy fields are the 241-float observation's, in table order, and nothing else
    assert sum(rules.OBS[n].size for n in LEGACY_OBS_FIELDS) == 241
    assert [n for n in rules.OBS if n in LEGACY_OBS_FIELDS] == list(LEGACY_OBS_FIELDS)
    assert not set(LEGACY_OBS_FIELDS) & set(TRACKED)
    model = MaskablePPO.load(OBS241_MODEL, device="cpu")
    assert model.observation_space.shape == (241,)  # the file as it was saved
    assert model.policy.obs_fields == LEGACY_OBS_FIELDS
    assert model.policy.observation_space.shape == (rules.OBS_DIM,)  # it takes today's
    obs = game_observations(64, seed=3)
    features = model.policy.features_extractor
    options = features.options
    masks = observed_masks(obs, **{k: options[k] for k in rule_options()})
    full, _ = model_input(obs, masks, options)
    old = obs[:, _legacy_columns()]
    assert old.shape == (64, 241)
    want = np.concatenate([old, full[:, rules.OBS_DIM:]], axis=1)
    with torch.no_grad():
        got = features(torch.as_tensor(obs)).numpy()
    np.testing.assert_array_equal(got, want)
    # the package's policy plays it on today's observation
    rng = np.random.default_rng(0)
    moves = NetworkPolicy(model)(obs, masks, rng)
    assert masks[np.arange(64), moves].all()


def test_a_new_model_records_the_fields_it_reads(tmp_path):
    import torch
    from sb3_contrib import MaskablePPO

    from agents.network import NetworkPolicy, input_size
    from agents.ppo_model import new_model, observation_fields, save_model
    from spit_env import SpitVecEnv, rules

    torch.set_num_threads(1)
    env = SpitVecEnv(num_envs=4, opponent="greedy", seed=1)
    full = new_model(env, net_arch=(8,), n_steps=8, batch_size=16, seed=0, device="cpu")
    assert full.policy.obs_fields == tuple(f.name for f in rules.OBSERVATION)
    some = new_model(env, net_arch=(8,), obs_fields=observation_fields(leave_out=TRACKED),
                     n_steps=8, batch_size=16, seed=0, device="cpu")
    extra = input_size(some.policy.spit_options) - rules.OBS_DIM
    assert full.policy.features_dim == rules.OBS_DIM + extra
    assert some.policy.features_dim == 241 + extra
    some.learn(32)
    save_model(some, tmp_path / "m.zip")
    back = MaskablePPO.load(tmp_path / "m.zip", device="cpu")
    assert back.policy.obs_fields == some.policy.obs_fields
    obs = env.reset()
    masks = env.action_masks()
    a, _ = some.predict(obs, action_masks=masks, deterministic=True)
    b, _ = back.predict(obs, action_masks=masks, deterministic=True)
    assert (a == b).all()
    assert (NetworkPolicy(back)(obs, masks, np.random.default_rng(0)) == a).all()
    # a field the model does not read changes nothing it does
    changed = obs.copy()
    for name in TRACKED:
        changed[:, rules.OBS[name].slice] = 1.0 - changed[:, rules.OBS[name].slice]
    c, _ = back.predict(changed, action_masks=masks, deterministic=True)
    assert (c == a).all()
    env.close()


@pytest.mark.parametrize("bad", [["nope"], ["phase", "phase"], [], "phase", [3]])
def test_bad_obs_fields_are_refused(bad):
    from agents.ppo_model import new_model
    from spit_env import SpitVecEnv

    env = SpitVecEnv(num_envs=2, opponent="greedy", seed=0)
    with pytest.raises(ValueError, match="obs_fields"):
        new_model(env, obs_fields=bad, n_steps=8, batch_size=8, device="cpu")
    env.close()


def test_training_refuses_unknown_fields_to_leave_out():
    from experiments.cli.checks import ArgumentError
    from experiments.ppo.args import Args
    from experiments.ppo.checks import validate
    from spit_env import rules

    validate(Args(obs_leave_out=TRACKED))
    with pytest.raises(ArgumentError, match="--obs-leave-out.*unknown: \\['nope'\\]"):
        validate(Args(obs_leave_out=("unseen_rank", "nope")))
    with pytest.raises(ArgumentError, match="--obs-leave-out"):
        validate(Args(obs_leave_out=tuple(f.name for f in rules.OBSERVATION)))
