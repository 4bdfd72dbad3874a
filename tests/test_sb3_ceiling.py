"""experiments.sb3_ceiling: the replaying VecEnv gives back the recorded steps in order, with the
masks of the current step, and MaskablePPO trains on it (a tiny run)."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.sb3_ceiling import ReplayVecEnv, main


def _bank(t=3, b=4, k=5):
    rng = np.random.default_rng(0)
    obs = rng.random((t, b, k)).astype(np.float32)
    masks = rng.random((t, b, 23)) < 0.5
    masks[:, :, 0] = True
    rewards = rng.random((t, b)).astype(np.float32)
    dones = rng.random((t, b)) < 0.3
    return obs, masks, rewards, dones


def test_replay_returns_the_recorded_steps_in_a_loop():
    obs, masks, rewards, dones = _bank()
    env = ReplayVecEnv(obs, masks, rewards, dones)
    np.testing.assert_array_equal(env.reset(), obs[0])
    np.testing.assert_array_equal(np.stack(env.env_method("action_masks")), masks[0])
    for t in (1, 2, 0, 1):
        env.step_async(np.zeros(4, np.int64))
        o, r, d, infos = env.step_wait()
        np.testing.assert_array_equal(o, obs[t])
        np.testing.assert_array_equal(r, rewards[t])
        np.testing.assert_array_equal(d, dones[t])
        np.testing.assert_array_equal(env.action_masks(), masks[t])
        assert infos == [{} for _ in range(4)]
    with pytest.raises(AttributeError, match="no method"):
        env.env_method("render")


def test_maskable_ppo_trains_on_the_replay():
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    env = VecMonitor(ReplayVecEnv(*_bank()))
    model = MaskablePPO("MlpPolicy", env, n_steps=8, batch_size=16, n_epochs=1, device="cpu", seed=0)
    model.learn(total_timesteps=64)
    assert model.num_timesteps == 64


@pytest.mark.parametrize("argv", [["--total-timesteps", "0"], ["--bank-steps", "1"]])
def test_bad_arguments_exit_with_a_message(argv, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    assert "must be" in capsys.readouterr().err
