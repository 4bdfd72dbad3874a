"""The model format's pieces: the policy's options, the file.

``SpitPolicy`` and ``new_model`` refuse what they cannot honour and take the rule options the mask
is read under from the env's config (the mask read from an observation itself:
``test_observed_masks.py``); ``save_model`` refuses what only a version-bound pickle could store,
writing nothing.
"""

from __future__ import annotations

import pytest

from spit_env import SpitConfig

pytest.importorskip("sb3_contrib")


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
