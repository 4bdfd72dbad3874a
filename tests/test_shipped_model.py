"""The policy network shipped with the package: ``agents.make("network")`` (and ``"ppo"``, its
older name) without a path plays it, the environments and the tournament take it by either name,
a wheel carries it, its published figures are of this very file, and ``experiments.ship_model``
writes such a file from a run's model."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from helpers import game_observations

pytest.importorskip("sb3_contrib")

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results" / "ppo_shipped.json"


@pytest.mark.parametrize("name", ["network", "ppo"])
def test_the_player_without_a_path_plays_the_shipped_network(name):
    import agents
    from agents.network import NetworkPolicy, PPOPolicy, shipped_model_path
    from spit_env.rules import N_ACTIONS

    path = shipped_model_path()
    assert path == ROOT / "agents" / "models" / "network.zip"
    assert path.stat().st_size < 400_000, "the shipped model should stay a small file"
    policy = agents.make(name)
    assert isinstance(policy, NetworkPolicy) and policy.deterministic and PPOPolicy is NetworkPolicy
    rng = np.random.default_rng(0)
    masks = rng.random((64, N_ACTIONS)) < 0.3
    masks[:, 0] = True
    actions = policy(game_observations(64), masks, rng)
    assert masks[np.arange(64), actions].all()
    with pytest.raises(ValueError, match="not both"):
        agents.make(name, path=path, model=object())


def test_network_and_its_older_name_play_the_same_moves():
    import agents
    from agents.arena import run_games
    from spit_env import SpitConfig, SpitVecEnv

    config = SpitConfig(max_game_ms=60_000)
    network, ppo = agents.make("network"), agents.make("ppo")
    env = SpitVecEnv(num_envs=16, opponent="racer", seed=4, config=config)
    obs, rng = env.reset(), np.random.default_rng(0)
    for _ in range(150):  # the same games: the network's moves, both asked at every step
        masks = env.action_masks()
        moves = network(obs, masks, rng)
        assert (ppo(obs, masks, rng) == moves).all()
        obs, _, _, _ = env.step(moves)
    env.close()
    one, two = (run_games(name, "racer", range(6), config=config, seed=5, batch_size=3)
                for name in ("network", "ppo"))
    for key, values in one.items():
        np.testing.assert_array_equal(values, two[key], err_msg=key)


def test_ppo_policy_runs_on_its_own_threads_and_restores_torch_s():
    import torch

    import agents

    rng = np.random.default_rng(0)
    from spit_env.rules import N_ACTIONS

    obs = game_observations(8)
    masks = np.ones((8, N_ACTIONS), bool)
    before = torch.get_num_threads()
    seen = []
    policy = agents.make("network", threads=1)
    forward = policy._actor.forward

    def spy(x):
        seen.append(torch.get_num_threads())
        return forward(x)

    policy._actor.forward = spy
    torch.set_num_threads(2)
    try:
        policy(obs, masks, rng)
        assert seen == [1] and torch.get_num_threads() == 2
        policy.threads = None  # torch's own setting
        policy(obs, masks, rng)
        assert seen == [1, 2]
    finally:
        torch.set_num_threads(before)
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="threads"):
            agents.make("network", threads=bad)


def test_environments_and_tournament_take_the_network_by_either_name():
    from agents.arena import Player, play_pairing
    from spit_env import SpitConfig, SpitVecEnv
    from spit_env.policy import uniform_legal_actions

    env = SpitVecEnv(num_envs=4, opponent="network@pro", seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(20):
        env.step(uniform_legal_actions(env.action_masks(), rng))
    env.close()
    assert Player.parse("ppo").policy == "ppo" and Player.parse("network").policy == "network"
    for name in ("network", "ppo"):
        res = play_pairing(name, "random", 2, config=SpitConfig(max_game_ms=120_000), seed=3)
        assert res.games == 4 and res.wins_a + res.wins_b + res.draws == 4


def test_published_figures_are_of_the_shipped_file():
    from agents.network import shipped_model_path

    published = json.loads(RESULTS.read_text())
    digest = hashlib.sha256(shipped_model_path().read_bytes()).hexdigest()
    assert published["model"]["sha256"] == digest, "docs/results/ppo_shipped.json is stale"
    assert set(published["results"]) >= {"random", "greedy", "chain", "racer"}
    for r in published["results"].values():
        assert r["games"] == 2 * published["deals"]



@pytest.mark.parametrize("files", [{}, {"config.json": "{}"}, {"config.json": "{}", "rounds.json": "[]"}])
def test_shipped_results_refuses_a_folder_that_is_not_a_finished_run(tmp_path, capsys, files):
    from experiments.shipped_results import main

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "results"
    assert main(["--run", str(tmp_path), "--command", "x", "--deals", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--run" in err and "eval.json" in err and "state.json" in err
    assert not out.with_suffix(".json").exists()

def test_a_wheel_carries_the_shipped_model(tmp_path):
    pytest.importorskip("setuptools")
    pytest.importorskip("wheel")
    src = tmp_path / "src"  # build from a copy: the build leaves build/ in its source tree
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for package in ("spit_env", "agents", "experiments"):
        shutil.copytree(ROOT / package, src / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(tmp_path / "dist")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("spit_env-*.whl")
    with zipfile.ZipFile(wheel) as z:
        shipped = z.read("agents/models/network.zip")
    assert shipped == (ROOT / "agents" / "models" / "network.zip").read_bytes()


def test_ship_model_writes_a_small_file_that_plays_the_same(tmp_path):
    import torch

    from agents.network import NetworkPolicy, load_model
    from agents.ppo_model import PORTABLE_MODULES, new_model, pickled_names
    from experiments.ppo.envs import make_training_env
    from experiments.ship_model import main

    torch.set_num_threads(1)
    _, _, env = make_training_env(
        num_envs=4, groups=1, opponent="greedy", seed=0, learner_seat="random", reward="round",
        episode="game", shaping=0.0, skip_forced_waits=True, truncation_reward=0.0)
    model = new_model(env, net_arch=(64, 64), options={"racer_features": False}, n_steps=8,
                      batch_size=32, seed=0, device="cpu")
    model.learn(64)  # a rollout: _last_obs and Adam's moments now exist
    model.save(tmp_path / "model.zip")  # SB3's own save: pickled NumPy objects in it
    env.close()
    assert any("numpy" in n for names in pickled_names(tmp_path / "model.zip").values()
               for n in names)

    assert main([str(tmp_path / "model.zip"), "--out", str(tmp_path / "small.zip")]) == 0
    assert (tmp_path / "small.zip").stat().st_size < 0.5 * (tmp_path / "model.zip").stat().st_size
    for names in pickled_names(tmp_path / "small.zip").values():
        assert all(n.startswith(PORTABLE_MODULES) for n in names), names
    small = load_model(tmp_path / "small.zip")
    assert small.policy.spit_options == model.policy.spit_options
    assert small.policy.spit_options["obs_mask"] and not small.policy.spit_options[
        "racer_features"]
    assert not small.policy.optimizer.state_dict()["state"], "Adam's moments were shipped"
    for k, v in model.policy.state_dict().items():  # float16 rounding only
        torch.testing.assert_close(small.policy.state_dict()[k], v, rtol=1e-3, atol=1e-3)
    rng = np.random.default_rng(1)
    obs = game_observations(256, seed=1)
    masks = rng.random((256, 23)) < 0.4
    masks[:, 0] = True
    same = NetworkPolicy(model)(obs, masks, rng) == NetworkPolicy(small)(obs, masks, rng)
    assert same.mean() > 0.95
    assert main([str(tmp_path / "missing.zip"), "--out", str(tmp_path / "x.zip")]) == 2


def _legacy_model(tmp_path, options):
    """A model file as train_ppo wrote them before the model computed its own input: SB3's
    MlpPolicy on model_input's (D + 23 + 40,) floats, the options in ``spit_options``."""
    from sb3_contrib import MaskablePPO

    from agents.network import input_size
    from experiments.sb3_ceiling import ReplayVecEnv

    k = input_size(options)
    rng = np.random.default_rng(0)
    env = ReplayVecEnv(rng.random((4, 2, k), dtype=np.float32), np.ones((4, 2, 23), bool),
                       np.zeros((4, 2), np.float32), np.zeros((4, 2), bool))
    model = MaskablePPO("MlpPolicy", env, n_steps=8, batch_size=16, seed=0, device="cpu",
                        policy_kwargs=dict(net_arch=dict(pi=[32, 32], vf=[32, 32])))
    model.learn(16)
    model.spit_options = dict(options)
    model.save(tmp_path / "legacy.zip")
    return model


@pytest.mark.parametrize("options", [
    {"mask_wait": True, "obs_mask": True, "racer_features": True},
    {"mask_wait": False, "obs_mask": True, "racer_features": False},
    {"mask_wait": True, "obs_mask": False, "racer_features": False},
])
def test_ship_model_converts_the_older_format_to_the_same_moves(tmp_path, options):
    import torch
    from sb3_contrib import MaskablePPO

    from agents.network import LegacyModelError, NetworkPolicy, load_model, model_input
    from experiments.ship_model import main
    from spit_env import SpitVecEnv

    torch.set_num_threads(1)
    legacy = _legacy_model(tmp_path, options)
    with pytest.raises(LegacyModelError, match="ship_model"):
        load_model(tmp_path / "legacy.zip")
    with pytest.raises(LegacyModelError, match="ship_model"):
        NetworkPolicy(legacy)
    assert main([str(tmp_path / "legacy.zip"), "--out", str(tmp_path / "new.zip"),
                 "--no-half"]) == 0
    new = MaskablePPO.load(tmp_path / "new.zip", device="cpu")
    assert new.policy.spit_options == {**options, "auto_flip": True, "wrap_ranks": True}
    assert new.num_timesteps == legacy.num_timesteps
    for k, v in legacy.policy.state_dict().items():
        assert torch.equal(new.policy.state_dict()[k], v), k
    # the older route (model_input outside, the legacy network) against the new model, on games
    venv = SpitVecEnv(num_envs=64, opponent="greedy", seed=2)
    obs = venv.reset()
    for _ in range(80):
        masks = venv.action_masks()
        inputs, playing = model_input(obs, masks, options)
        with torch.no_grad():
            old = legacy.policy.get_distribution(torch.as_tensor(inputs), playing)
            now = new.policy.get_distribution(torch.as_tensor(obs), masks)
        np.testing.assert_allclose(now.distribution.logits.numpy(),
                                   old.distribution.logits.numpy(), atol=1e-6)
        actions, _ = new.predict(obs, action_masks=masks, deterministic=True)
        assert (actions == np.where(playing, old.distribution.logits.numpy(), -np.inf)
                .argmax(1)).all()
        obs, _, _, _ = venv.step(actions)
