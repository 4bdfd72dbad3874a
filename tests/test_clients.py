"""The environments through each RL library as its users would call it (the ``[clients]`` extra):
TorchRL, Tianshou, skrl, SuperSuit, SB3's make_vec_env, and video recording with Gymnasium's
RecordVideo and SB3's VecVideoRecorder. Each run checks that only legal actions were played (the
fixed-shape ``illegal`` info, and the actions against the masks) and that a game finished."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
import torch

import spit_env
from spit_env import SpitConfig, rules
from spit_env.render_rgb import FRAME_SHAPE

# short games (a time limit of 10 s of game time, D16) so that every run sees games end
CONFIG = SpitConfig(max_game_ms=10_000)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def _legal(actions: np.ndarray, masks: np.ndarray) -> bool:
    """Every action id in ``actions`` ((n,)) is True in its row of ``masks`` ((n, 23))."""
    return bool(masks.astype(bool)[np.arange(len(actions)), actions].all())


# --- TorchRL --------------------------------------------------------------------------------------
@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "aec"])
def test_torchrl_pettingzoo_wrapper_rolls_out_legal_moves_to_the_end(parallel):
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    torch.manual_seed(0)
    pz = spit_env.parallel_env(CONFIG) if parallel else spit_env.env(CONFIG)
    env = PettingZooWrapper(pz, use_mask=True, seed=0)
    check_env_specs(env)
    td = env.rollout(5_000, break_when_any_done=True)
    assert td["next", "done"][-1].all() and not td["next", "done"][:-1].any()
    groups = list(env.group_map)
    for group in groups:
        action = td[group, "action"].reshape(-1).numpy()
        mask = td[group, "action_mask"].reshape(-1, rules.N_ACTIONS).numpy()
        if not parallel:  # the AEC env: only the acting agent's action counts
            acting = td[group, "mask"].reshape(-1).numpy()
            action, mask = action[acting], mask[acting]
        assert _legal(action, mask)
        assert not td["next", group, "info", "illegal"].any()
    rewards = torch.cat([td["next", g, "reward"][-1].reshape(-1) for g in groups])
    assert rewards.sum() == 0 and set(rewards.abs().tolist()) <= {0.0, 1.0}


def test_torchrl_gymenv_sees_the_mask_in_info():
    from torchrl.data import Binary, Unbounded
    from torchrl.envs import ActionMask, TransformedEnv
    from torchrl.envs.gym_like import default_info_dict_reader
    from torchrl.envs.libs.gym import GymEnv

    torch.manual_seed(0)
    base = GymEnv("Spit-v0", opponent="greedy", config=CONFIG)
    base.set_info_dict_reader(default_info_dict_reader(
        ["action_mask", "illegal"],
        spec={"action_mask": Binary(rules.N_ACTIONS, dtype=torch.bool),
              "illegal": Unbounded((), dtype=torch.bool)}))
    env = TransformedEnv(base, ActionMask())
    td = env.rollout(5_000, break_when_any_done=True)
    assert td["next", "done"][-1].all()
    actions = td["action"].argmax(-1).numpy()  # one-hot actions
    assert _legal(actions, td["action_mask"].numpy()) and not td["next", "illegal"].any()


def test_torchrl_masked_ppo_iterations_on_the_parallel_env():
    from tensordict.nn import TensorDictModule
    from torchrl.collectors import Collector
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.modules import MLP, MaskedCategorical, ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss

    torch.manual_seed(0)
    env = PettingZooWrapper(spit_env.parallel_env(CONFIG), use_mask=True, seed=0)
    g = "player"  # both agents in one group (same spaces): shared parameters, MAPPO style
    obs_key = (g, "observation", "observation")
    net = TensorDictModule(MLP(in_features=rules.OBS_DIM, out_features=rules.N_ACTIONS,
                               num_cells=[32]), in_keys=[obs_key], out_keys=[(g, "logits")])
    actor = ProbabilisticActor(net, in_keys={"logits": (g, "logits"), "mask": (g, "action_mask")},
                               out_keys=[env.action_key], distribution_class=MaskedCategorical,
                               return_log_prob=True, log_prob_key=(g, "sample_log_prob"))
    critic = ValueOperator(MLP(in_features=rules.OBS_DIM, out_features=1, num_cells=[32]),
                           in_keys=[obs_key], out_keys=[(g, "state_value")])
    loss = ClipPPOLoss(actor, critic)
    loss.set_keys(reward=(g, "reward"), action=env.action_key, value=(g, "state_value"),
                  sample_log_prob=(g, "sample_log_prob"), done=(g, "done"),
                  terminated=(g, "terminated"))
    loss.make_value_estimator(gamma=0.99, lmbda=0.95)
    optim = torch.optim.Adam(loss.parameters(), 3e-4)
    ends = 0
    for batch in Collector(env, actor, frames_per_batch=128, total_frames=3 * 128):
        action = batch[g, "action"].reshape(-1).numpy()
        assert _legal(action, batch[g, "action_mask"].reshape(-1, rules.N_ACTIONS).numpy())
        assert not batch["next", g, "info", "illegal"].any()
        ends += int(batch["next", "done"].sum())
        with torch.no_grad():
            loss.value_estimator(batch, params=loss.critic_network_params,
                                 target_params=loss.target_critic_network_params)
        out = loss(batch)
        total = out["loss_objective"] + out["loss_critic"] + out["loss_entropy"]
        assert torch.isfinite(total)
        optim.zero_grad()
        total.backward()
        optim.step()
    assert ends >= 1


# --- Tianshou -------------------------------------------------------------------------------------
def test_tianshou_collector_with_masked_random_agents_over_the_aec_env():
    from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
    from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv, PettingZooEnv

    np.random.seed(0)  # noqa: NPY002 - Tianshou's random agents draw from NumPy's global generator
    env = PettingZooEnv(spit_env.env(CONFIG))
    algos = [MARLRandomDiscreteMaskedOffPolicyAlgorithm(env.action_space) for _ in env.agents]
    agents = MultiAgentOffPolicyAlgorithm(algorithms=algos, env=env)
    venv = DummyVectorEnv([lambda: PettingZooEnv(spit_env.env(CONFIG)) for _ in range(2)])
    buffer = VectorReplayBuffer(20_000, 2)
    result = Collector(agents, venv, buffer).collect(n_episode=2, reset_before_collect=True)
    assert result.n_collected_episodes == 2
    data = buffer.sample(0)[0]
    assert _legal(data.act, data.obs.mask) and not data.info.illegal.any()
    assert data.done.sum() >= 2


class MaskInObs(gymnasium.Wrapper):
    """Spit-v0 with Tianshou's mask convention: observation {"obs": (D,), "mask": (23,) bool}."""

    def __init__(self, env):
        super().__init__(env)
        self.observation_space = gymnasium.spaces.Dict(
            {"obs": env.observation_space, "mask": gymnasium.spaces.MultiBinary(rules.N_ACTIONS)})

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return {"obs": obs, "mask": info["action_mask"]}, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return {"obs": obs, "mask": info["action_mask"]}, reward, terminated, truncated, info


def test_tianshou_masked_dqn_on_spit_v0():
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.utils.net.common import Net
    from tianshou.utils.torch_utils import policy_within_training_step

    torch.manual_seed(0)
    np.random.seed(0)  # noqa: NPY002 - Tianshou's epsilon-greedy draws from NumPy's global generator

    def make():
        return MaskInObs(gymnasium.make("Spit-v0", opponent="random", config=CONFIG))

    venv = DummyVectorEnv([make, make])
    venv.seed(0)
    net = Net(state_shape=rules.OBS_DIM, action_shape=rules.N_ACTIONS, hidden_sizes=[32])
    policy = DiscreteQLearningPolicy(model=net, action_space=venv.action_space[0],
                                     eps_training=0.3)
    algo = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), target_update_freq=20)
    buffer = VectorReplayBuffer(5_000, 2)
    collector = Collector(algo, venv, buffer, exploration_noise=True)
    collector.reset()
    for _ in range(2):
        with policy_within_training_step(algo.policy):
            collector.collect(n_step=128)
            stats = algo.update(buffer=buffer, sample_size=32)
        assert np.isfinite(stats.loss)
    data = buffer.sample(0)[0]
    assert _legal(data.act, data.obs.mask) and not data.info.illegal.any()
    assert data.done.sum() >= 1


# --- skrl -----------------------------------------------------------------------------------------
def test_skrl_wrap_env_short_rollouts():
    from skrl.envs.wrappers.torch import wrap_env

    torch.manual_seed(0)
    env = wrap_env(gymnasium.make("Spit-v0", opponent="random", config=CONFIG))
    assert env.num_envs == 1 and env.observation_space.shape == (rules.OBS_DIM,)
    obs, info = env.reset()
    for _ in range(5_000):  # skrl's agents take no mask: the user's loop reads info["action_mask"]
        mask = torch.as_tensor(info["action_mask"])
        action = torch.multinomial(mask.float(), 1).reshape(1, 1)
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs.shape == (1, rules.OBS_DIM) and not info["illegal"]
        if terminated.any() or truncated.any():
            break
    assert terminated.any() or truncated.any()
    # the PettingZoo route flattens the Dict observation (keys sorted): mask then observation
    penv = wrap_env(spit_env.parallel_env(CONFIG), wrapper="pettingzoo")
    obs, infos = penv.reset()
    assert {a: o.shape for a, o in obs.items()} == dict.fromkeys(
        penv.possible_agents, (1, rules.OBS_DIM + rules.N_ACTIONS))
    for _ in range(5_000):
        actions = {}
        for agent, o in obs.items():
            mask = o[0, :rules.N_ACTIONS] > 0.5
            actions[agent] = torch.multinomial(mask.float(), 1).reshape(1, 1)
        obs, rewards, terminated, truncated, infos = penv.step(actions)
        assert not any(infos[a]["illegal"] for a in infos)
        if any(t.any() for t in terminated.values()) or any(t.any() for t in truncated.values()):
            break
    assert any(t.any() for t in terminated.values()) or any(t.any() for t in truncated.values())


# --- SuperSuit ------------------------------------------------------------------------------------
@pytest.mark.parametrize("base_class", ["stable_baselines3", "gymnasium"])
def test_supersuit_vector_route(base_class):
    import supersuit as ss

    venv = ss.pettingzoo_env_to_vec_env_v1(spit_env.parallel_env(CONFIG))
    venv = ss.concat_vec_envs_v1(venv, 2, num_cpus=0, base_class=base_class)
    sb3 = base_class == "stable_baselines3"
    # SuperSuit's SB3 wrapper cannot seed a ConcatVecEnv (its seed() is missing): no seed there
    obs = venv.reset() if sb3 else venv.reset(seed=0)[0]
    shapes = {k: v.shape for k, v in obs.items()}
    assert shapes == {"observation": (4, rules.OBS_DIM), "action_mask": (4, rules.N_ACTIONS)}
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(2_000):
        u = np.where(obs["action_mask"].astype(bool), rng.random(obs["action_mask"].shape), -1.0)
        if sb3:
            obs, rewards, dones, infos = venv.step(u.argmax(axis=1))
        else:
            obs, rewards, terms, truncs, infos = venv.step(u.argmax(axis=1))
            dones = terms | truncs
        assert {k: v.shape for k, v in obs.items()} == shapes
        assert obs["observation"].dtype == np.float32
        assert not any(info["illegal"] for info in infos)
        # The two agents of one game end together (rows 2k and 2k + 1).
        np.testing.assert_array_equal(dones[0::2], dones[1::2])
        np.testing.assert_array_equal(rewards[0::2], -rewards[1::2])
        for i in np.flatnonzero(dones):
            if sb3:
                assert "terminal_observation" in infos[i]
            # Auto-reset: the new game's first observation: round 0, phase play, both hands free.
            o = obs["observation"][i]
            assert o[rules.OBS["round"].start] == 0.0 and o[rules.OBS["phase"].start] == 1.0
            assert o[rules.OBS["self_busy"].start] == o[rules.OBS["opp_busy"].start] == 0.0
        ends += int(dones[0])
    assert ends >= 2
    venv.close()


# --- SB3 and videos -------------------------------------------------------------------------------
def test_sb3_make_vec_env_at_its_defaults_trains_maskable_ppo():
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env("Spit-v0", n_envs=2, seed=0, env_kwargs={"config": CONFIG})
    assert venv.render_mode == "rgb_array"  # what make_vec_env asks for
    model = MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(128)
    obs = venv.reset()
    ends = 0
    for _ in range(2_000):
        masks = get_action_masks(venv)
        actions, _ = model.predict(obs, action_masks=masks)
        assert _legal(actions, masks)
        obs, _, dones, infos = venv.step(actions)
        assert not any(info["illegal"] for info in infos)
        ends += int(dones.sum())
        if ends >= 2:
            break
    assert ends >= 2


def _video(path) -> tuple[int, np.ndarray, np.ndarray]:
    """(number of frames, first frame, last frame) of the video at ``path``."""
    import imageio.v2 as imageio

    with imageio.get_reader(str(path)) as reader:
        n = reader.count_frames()
        return n, reader.get_data(0), reader.get_data(n - 1)


def test_record_video_and_vec_video_recorder_write_a_game(tmp_path):
    from gymnasium.wrappers import RecordVideo
    from stable_baselines3.common.vec_env import VecVideoRecorder

    env = RecordVideo(gymnasium.make("Spit-v0", config=CONFIG, render_mode="rgb_array"),
                      str(tmp_path / "gym"), episode_trigger=lambda e: e == 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, info = env.reset(seed=0)
        steps = 0
        while True:
            _, _, term, trunc, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
            steps += 1
            if term or trunc:
                break
        env.close()
    (video,) = (tmp_path / "gym").glob("*.mp4")
    n, first, last = _video(video)
    assert n == steps + 1 and first.shape == FRAME_SHAPE and not np.array_equal(first, last)

    venv = spit_env.SpitVecEnv(2, config=CONFIG, render_mode="rgb_array")
    rec = VecVideoRecorder(venv, str(tmp_path / "vec"), record_video_trigger=lambda s: s == 0,
                           video_length=10)
    rec.reset()
    rng = np.random.default_rng(0)
    for _ in range(12):
        masks = venv.action_masks()
        rec.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
    rec.close()
    (video,) = (tmp_path / "vec").glob("*.mp4")
    n, first, _ = _video(video)
    # two rows tiled one above the other (SB3's tile_images)
    assert n == 11 and first.shape == (2 * FRAME_SHAPE[0], FRAME_SHAPE[1], 3)
