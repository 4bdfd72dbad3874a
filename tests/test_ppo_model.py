"""The model format's pieces: the mask read from an observation, the policy's options, the file.

``agents.ppo.observed_masks`` must equal the core's mask on every observation of games of many
configs (the model's input and its play without a given mask rest on it); ``SpitPolicy`` and
``new_model`` refuse what they cannot honour; ``save_model`` refuses what only a version-bound
pickle could store, writing nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

from spit_env import Latency, SpitConfig, core

pytest.importorskip("sb3_contrib")

CONFIGS = [SpitConfig(), SpitConfig(auto_flip=False), SpitConfig(wrap_ranks=False),
           SpitConfig(auto_flip=False, wrap_ranks=False, observe_opponent_move=False),
           SpitConfig(latency=Latency.fixed(120), scoring="points", target_points=20)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"flip{c.auto_flip}-wrap{c.wrap_ranks}")
def test_the_mask_read_from_the_observation_is_the_cores(config):
    from agents.ppo import observed_masks

    rng = np.random.default_rng(0)
    state = core.init(config, 96, seed=3)
    seen = np.zeros(23, int)
    phases = set()

    def check():
        masks = core.legal_action_mask(state)  # (B, 2, 23)
        obs = core.observe(state)              # (B, 2, D)
        for seat in (0, 1):
            found = observed_masks(obs[:, seat], config.auto_flip, config.wrap_ranks)
            assert (found == masks[:, seat]).all(), seat
        seen[:] += masks.sum(axis=(0, 1))
        phases.update(obs[:, :, 0:3].argmax(-1).ravel().tolist())
        return masks

    for t in range(700):
        masks = check()
        state, out = core.step(state, (rng.random(masks.shape) * masks).argmax(-1))
        done = out.terminated | out.truncated
        if done.any():
            check()  # the finished games too (game over: WAIT only)
            core.reset(state, done, np.arange(96) + 96 * (t + 1))
    assert phases == {0, 1, 2}, "play, slap and game-over observations should all occur"
    kinds = {"play": seen[1:11].sum(), "fill": seen[11:16].sum(), "slap": seen[21:].sum()}
    assert min(kinds.values()) > 0, kinds
    assert (seen[16:21].sum() > 0) == (not config.auto_flip)  # FLIP only without auto_flip


def test_the_mask_reader_refuses_what_is_not_an_observation():
    from agents.ppo import observed_masks
    from spit_env.rules import OBS_DIM

    with pytest.raises(ValueError, match="shape"):
        observed_masks(np.zeros((3, OBS_DIM - 1), np.float32))
    with pytest.raises(ValueError, match="Spit environment's"):
        observed_masks(np.ones((3, OBS_DIM), np.float32))
    assert observed_masks(np.zeros((0, OBS_DIM), np.float32)).shape == (0, 23)


def test_policy_and_model_refuse_what_they_cannot_honour(tmp_path):
    from agents.ppo_model import new_model
    from spit_env import SpitVecEnv

    env = SpitVecEnv(num_envs=2, config=SpitConfig(wrap_ranks=False))
    with pytest.raises(ValueError, match="unknown"):
        new_model(env, options={"obs_masks": True})
    with pytest.raises(ValueError, match="features_extractor_class"):
        from sb3_contrib import MaskablePPO
        from stable_baselines3.common.torch_layers import FlattenExtractor

        from agents.ppo_model import SpitPolicy

        MaskablePPO(SpitPolicy, env, policy_kwargs={"features_extractor_class": FlattenExtractor})
    with pytest.raises(ValueError, match="mask_wait"):
        new_model(env, options={"mask_wait": "yes"})
    model = new_model(env, net_arch=(8,), n_steps=4, batch_size=8)
    # the rules the mask is read under follow the env's config
    assert model.policy.spit_options["wrap_ranks"] is False
    assert model.policy.spit_options["auto_flip"] is True


def test_save_model_refuses_a_version_bound_object_and_writes_nothing(tmp_path):
    from agents.ppo_model import new_model, save_model
    from spit_env import SpitVecEnv

    env = SpitVecEnv(num_envs=2)
    model = new_model(env, net_arch=(8,), n_steps=4, batch_size=8,
                      clip_range=lambda progress: 0.1 + 0.1 * progress)
    with pytest.raises(ValueError, match="clip_range"):
        save_model(model, tmp_path / "m.zip")
    assert not (tmp_path / "m.zip").exists()
    with pytest.raises(ValueError, match="half"):
        save_model(new_model(env, net_arch=(8,), n_steps=4, batch_size=8), tmp_path / "m.zip",
                   half=1)
    assert not (tmp_path / "m.zip").exists()
