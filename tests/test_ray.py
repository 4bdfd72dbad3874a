"""Ray: RLlib training, the trained policy as a bot, the match library's jobs as Ray tasks, a head node.

Every Ray here runs on the loopback address and is stopped by the test that started it: a local
Ray started in-process (``experiments.cluster.connect.ray_session``), the scripts' own local Ray in
their subprocess, and one head node started with ``ray start --head`` on 127.0.0.1 and stopped
by its session's process ids (never ``ray stop``, which would stop every Ray on the machine).
Sizes are toy sizes: a few RLlib iterations of a few hundred steps, 20 deals.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from agents import arena
from spit_env.rules import ACTION_KIND, N_ACTIONS, OBS_DIM, SLAP_BASE, WAIT

ROOT = Path(__file__).resolve().parents[1]

# 2 iterations of 300 env steps, a tiny network, evaluation games capped at 60 s of game time
# (an almost untrained policy plays slowly).
TINY = ["--train-batch-size", "300", "--minibatch-size", "150", "--num-epochs", "1",
        "--hiddens", "32", "32", "--num-envs-per-runner", "2", "--eval-max-game-ms", "60000",
        "--no-progress-bar"]


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                RAY_USAGE_STATS_ENABLED="0")


def _run(module: str, *args: str, env: dict | None = None, timeout: float = 600):
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env or _env(),
                          capture_output=True, text=True, timeout=timeout)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _masks(rng, b: int) -> np.ndarray:
    """Random legal masks, some with WAIT illegal (the compulsory slap: only SLAP(0)/SLAP(1))."""
    masks = np.zeros((b, N_ACTIONS), bool)
    masks[:, WAIT] = True
    masks[np.arange(b), rng.integers(1, N_ACTIONS, b)] = True
    masks[: b // 3] = False
    masks[: b // 3, SLAP_BASE:] = True
    return masks


# --- the RLModules, without a Ray runtime ---------------------------------------------------------
@pytest.fixture(scope="module")
def spaces():
    import spit_env

    env = spit_env.parallel_env()
    return env.observation_space("player_0"), env.action_space("player_0")


def _module(spaces, **options):
    from agents.rllib_modules import MaskedPPOModule

    return MaskedPPOModule(observation_space=spaces[0], action_space=spaces[1],
                           model_config={"fcnet_hiddens": [16], "vf_share_layers": False, **options})


def _batch(obs, masks):
    import torch

    return {"obs": {"observation": torch.as_tensor(obs),
                    "action_mask": torch.as_tensor(masks.astype(np.int8))}}


@pytest.mark.parametrize("mask_wait", [True, False])
def test_masked_module_never_offers_an_illegal_move(spaces, mask_wait):
    import torch

    rng = np.random.default_rng(0)
    module = _module(spaces, mask_wait=mask_wait)
    obs = rng.random((30, OBS_DIM), dtype=np.float32)
    masks = _masks(rng, 30)
    allowed = masks.copy()
    if mask_wait:
        allowed[:, WAIT] &= ~masks[:, 1:].any(axis=1)
    with torch.no_grad():
        for forward in (module.forward_inference, module.forward_exploration, module.forward_train):
            logits = forward(_batch(obs, masks))["action_dist_inputs"].numpy()
            probs = torch.softmax(torch.as_tensor(logits), -1).numpy()
            assert probs[~allowed].max() < 1e-6, forward.__name__
            assert np.allclose(probs[allowed.any(1)].sum(1), 1, atol=1e-5)
        values = module.compute_values(_batch(obs, masks))
    assert values.shape == (30,)
    assert module.spit_options == {"mask_wait": mask_wait, "obs_mask": True, "auto_flip": True,
                                   "wrap_ranks": True}


@pytest.mark.parametrize("mask_wait", [True, False])
def test_a_module_of_the_box_space_reads_the_mask_from_real_observations(spaces, mask_wait):
    import torch

    from agents.rllib_modules import MaskedPPOModule
    from spit_env import SpitVecEnv

    venv = SpitVecEnv(num_envs=16, opponent="greedy", seed=3)
    module = MaskedPPOModule(observation_space=venv.observation_space, action_space=spaces[1],
                             model_config={"fcnet_hiddens": [16], "mask_wait": mask_wait})
    assert module.reads_mask and module.observation_space == venv.observation_space
    obs, rng = venv.reset(), np.random.default_rng(0)
    for _ in range(30):
        masks = venv.action_masks()
        allowed = masks.copy()
        if mask_wait:
            allowed[:, WAIT] &= ~masks[:, 1:].any(axis=1)
        with torch.no_grad():
            for forward in (module.forward_inference, module.forward_train):
                logits = forward({"obs": torch.as_tensor(obs)})["action_dist_inputs"].numpy()
                assert (logits[~allowed] < -1e30).all() and (logits[allowed] > -1e30).all()
        obs, *_ = venv.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
    with pytest.raises(ValueError, match="observations must be"):
        module.forward_inference(_batch(obs, masks))


def test_mask_input_option_changes_the_network_input(spaces):
    with_mask = _module(spaces, obs_mask=True)
    without = _module(spaces, obs_mask=False)
    first = [p for p in with_mask.parameters() if p.dim() == 2][0]
    first_without = [p for p in without.parameters() if p.dim() == 2][0]
    assert first.shape[1] == OBS_DIM + N_ACTIONS and first_without.shape[1] == OBS_DIM
    with pytest.raises(ValueError, match="obs_mask"):
        _module(spaces, obs_mask="yes")


def test_modules_refuse_a_space_that_is_not_spits(spaces):
    import gymnasium as gym

    from agents.rllib_modules import BotModule, MaskedPPOModule

    flat = gym.spaces.Box(0, 1, (OBS_DIM,), np.float32)
    with pytest.raises(ValueError, match="observation_space"):
        BotModule(observation_space=flat, action_space=spaces[1], model_config={})
    for space in (gym.spaces.Box(0, 1, (OBS_DIM - 1,), np.float32), gym.spaces.Discrete(3)):
        with pytest.raises(ValueError, match="observation_space"):
            MaskedPPOModule(observation_space=space, action_space=spaces[1], model_config={})


def test_bot_module_plays_the_registered_bot(spaces):
    from agents import make
    from agents.rllib_modules import BotModule

    module = BotModule(observation_space=spaces[0], action_space=spaces[1],
                       model_config={"bot": "greedy", "seed": 1})
    rng = np.random.default_rng(3)
    obs = rng.random((20, OBS_DIM), dtype=np.float32)
    masks = _masks(rng, 20)
    actions = module.forward_inference(_batch(obs, masks))["actions"]
    assert actions.shape == (20,) and masks[np.arange(20), actions].all()
    # greedy's choice class is deterministic: the module plays the bot's move classes
    ref = make("greedy")(obs, masks, np.random.default_rng(0))
    assert (ACTION_KIND[actions] == ACTION_KIND[ref]).all()
    with pytest.raises(NotImplementedError, match="policies_to_train"):
        module.forward_train(_batch(obs, masks))
    with pytest.raises(ValueError, match="unknown policy"):
        BotModule(observation_space=spaces[0], action_space=spaces[1], model_config={"bot": "x"})


def test_bot_module_draws_per_row_from_the_observation_alone(spaces):
    from agents.rllib_modules import BotModule

    module = BotModule(observation_space=spaces[0], action_space=spaces[1],
                       model_config={"bot": "random", "seed": 1})
    rng = np.random.default_rng(5)
    obs = rng.random((30, OBS_DIM), dtype=np.float32)
    masks = _masks(rng, 30)
    whole = module.forward_inference(_batch(obs, masks))["actions"]
    # each row plays the same move alone, in another batch, and after other calls
    for part in (slice(0, 1), slice(7, 19), slice(29, 30)):
        got = module.forward_inference(_batch(obs[part], masks[part]))["actions"]
        np.testing.assert_array_equal(got, whole[part])
    np.testing.assert_array_equal(module.forward_inference(_batch(obs, masks))["actions"], whole)
    other = BotModule(observation_space=spaces[0], action_space=spaces[1],
                      model_config={"bot": "random", "seed": 2})
    assert (other.forward_inference(_batch(obs, masks))["actions"] != whole).any(), \
        "the module's seed does not reach its draws"


def test_the_bot_mode_env_seats_the_learner_by_the_game_alone():
    from agents.rllib_modules import (
        BOT,
        LEARNER,
        SpitMultiAgentEnv,
        map_learner_vs_bot,
        map_self_play,
    )
    from spit_env import streams

    env = SpitMultiAgentEnv({"roles": True, "latency": "club"})
    seats = []
    for seed in range(60):
        obs, infos = env.reset(seed=seed)
        assert set(obs) == set(infos) == {LEARNER, BOT}
        seat = env.learner_seat()
        assert seat == int(streams.seat_draws(streams.game_key(seed, 0))[0])
        seats.append(seat)
    assert 15 < sum(seats) < 45, "the learner should play both seats about equally"
    # the next game of a seed: its own draw, whatever happened before
    env.reset(seed=3)
    for _ in range(3):
        obs, *_ = env.step({a: 0 for a in obs})
    env.reset()
    assert env.learner_seat() == int(streams.seat_draws(streams.game_key(3, 1))[0])
    # the agents' moves reach their seats: the learner's observation is its seat's
    obs, _ = env.reset(seed=11)
    seats, _ = SpitMultiAgentEnv({"latency": "club"}).reset(seed=11)  # the agents named by seat
    seat = env.learner_seat()
    for role, at in ((LEARNER, seat), (BOT, 1 - seat)):
        np.testing.assert_array_equal(obs[role]["observation"],
                                      seats[f"player_{at}"]["observation"])
    out = env.step({LEARNER: 0, BOT: 0})
    assert all(set(part) - {"__all__"} <= {LEARNER, BOT} for part in out)

    class Episode:
        id_ = "0" * 32

    assert [map_learner_vs_bot(a, Episode()) for a in (LEARNER, BOT)] == [LEARNER, BOT]
    # agents named by seat (a checkpoint of an older run) still map, one seat each
    pair = [map_learner_vs_bot(f"player_{s}", Episode()) for s in (0, 1)]
    assert sorted(pair) == [BOT, LEARNER]
    assert {map_self_play(f"player_{s}", Episode()) for s in (0, 1)} == {LEARNER}


def _runner_env_configs(config):
    """(The games' configs of the envs an env runner builds from ``config``, its module)."""
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    runner = (MultiAgentEnvRunner if config.is_multi_agent else SingleAgentEnvRunner)(
        config=config)
    try:
        if config.is_multi_agent:  # RLlib's vector of SpitMultiAgentEnv objects
            return [env.unwrapped.par_env.config for env in runner.env.envs], runner.module
        return [runner.env.unwrapped.config], runner.module
    finally:
        runner.stop()


@pytest.mark.parametrize(("mode", "vector_env"),
                         [("bot", True), ("bot", False), ("self-play", True)],
                         ids=["vector", "pettingzoo-bot", "self-play"])
def test_every_env_path_plays_the_runs_config(mode, vector_env):
    from experiments.rllib.args import Args
    from experiments.rllib.config import build_config
    from spit_env import SpitConfig

    # no field at its default that the envs would play differently
    game = SpitConfig(latency="pro", max_game_ms=12_345, illegal_action="raise",
                      wrap_ranks=False, max_rounds=7, stall_timeout_ms=None)
    args = Args(mode=mode, vector_env=vector_env, latency="pro", num_env_runners=0,
                num_envs_per_runner=2, hiddens=(8,))
    # (RLlib's own env check steps random moves, which illegal_action="raise" refuses)
    config = build_config(args, game).environment(disable_env_checking=True)
    configs, module = _runner_env_configs(config)
    # one vector env of both games, or one PettingZoo env object per game
    assert len(configs) == (1 if mode == "bot" and vector_env else 2)
    assert all(c == game for c in configs), configs
    learner = module if not hasattr(module, "keys") else module["learner"]
    assert learner.spit_options["wrap_ranks"] is False  # the module reads the rules it plays
    if mode == "bot" and not vector_env:
        assert module["bot"].model_config["latency"] == game.latency[0]


def test_the_bot_mode_refuses_seats_of_two_latencies():
    from experiments.rllib.args import Args
    from experiments.rllib.config import build_config
    from spit_env import SpitConfig

    with pytest.raises(ValueError, match="both seats need one latency"):
        build_config(Args(vector_env=False), SpitConfig(latency=("pro", "club")))


# --- training with RLlib, then the checkpoint as a bot --------------------------------------------
@pytest.fixture(scope="module")
def bot_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rllib_bot")
    proc = _run("experiments.train_rllib", "--iterations", "2", "--num-env-runners", "1",
                "--num-cpus", "2", "--checkpoint-every", "1", "--eval-games", "2",
                "--eval-opponents", "greedy", "--out", str(out),
                "--json", str(out / "copy" / "metrics.json"), *TINY)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "env steps/s" in proc.stdout and "vs   greedy" in proc.stdout
    # the local start is quiet and timed: no notices of the default API stack or of token
    # authentication (a Ray bound to 127.0.0.1), no dashboard
    # start-up logs on stderr, results on stdout
    assert re.search(r"Ray ready in [\d.]+ s \(2 CPUs\), the algorithm and its 1 env runner in",
                     proc.stderr), proc.stderr[-2000:]
    assert "Ray ready" not in proc.stdout
    assert "on the new API stack" not in proc.stderr and "token" not in proc.stderr.lower()
    assert "dashboard" not in proc.stderr.lower()
    return out


def test_training_writes_checkpoints_and_metrics(bot_run):
    metrics = json.loads((bot_run / "metrics.json").read_text())
    assert json.loads((bot_run / "copy" / "metrics.json").read_text()) == metrics
    its = metrics["iterations"]
    assert [r["iteration"] for r in its] == [1, 2]
    assert its[-1]["env_steps"] >= 600 and its[-1]["episodes"] >= 0
    # bot mode on the vector env of Spit-v0: every env step is one learner decision
    assert its[-1]["learner_steps"] == its[-1]["agent_steps"] == its[-1]["env_steps"]
    assert metrics["speed"]["env_steps_per_second"] > 0
    assert "one learner decision" in metrics["speed"]["note"]
    if its[-1]["episodes"]:
        assert -1 <= its[-1]["learner_return_mean"] <= 1
    assert metrics["ray"]["address"] == "local" and metrics["ray"]["cpus"] == 2
    final = metrics["final"]
    assert set(final["results"]) == {"greedy"}
    for r in final["results"].values():
        assert r["games"] == 4 and r["wins_a"] + r["wins_b"] + r["draws"] == 4
    modules = bot_run / "checkpoint" / "learner_group" / "learner" / "rl_module"
    assert {p.name for p in modules.iterdir() if p.is_dir()} == {"default_policy"}
    assert (bot_run / "checkpoints" / "iter_0001" / "rllib_checkpoint.json").is_file()


def test_trained_policy_plays_through_the_registry(bot_run):
    from agents import make
    from agents.rllib import RLlibPolicy
    from spit_env import SpitConfig

    policy = make("rllib", path=bot_run)  # the run folder: its checkpoint/
    assert isinstance(policy, RLlibPolicy) and policy.options["mask_wait"] is True
    from spit_env import SpitVecEnv

    # a module of the vector env reads the mask from the observation: real observations
    rng = np.random.default_rng(0)
    venv = SpitVecEnv(num_envs=12, opponent="random", seed=4)
    venv.reset()
    for _ in range(20):
        obs, *_ = venv.step(np.array([rng.choice(np.flatnonzero(m))
                                      for m in venv.action_masks()]))
    masks = venv.action_masks()
    # the final and an earlier checkpoint; sampling as well as the argmax
    for p in (policy, make("rllib", path=bot_run / "checkpoints" / "iter_0001",
                           deterministic=False)):
        actions = p(obs, masks, rng)
        assert actions.shape == (12,) and actions.dtype == np.int64
        assert masks[np.arange(12), actions].all(), "the policy chose a masked action"
        # mask_wait: never WAIT beside another legal move
        assert not (actions == WAIT)[masks[:, 1:].any(axis=1)].any()
    # the tournament takes the checkpoint by its path, in either seat
    me = arena.Player.parse(str(bot_run / "checkpoint"))
    assert me.policy == "rllib"
    res = arena.play_pairing(me, "random", 2, config=SpitConfig(max_game_ms=60_000), seed=1)
    assert res.games == 4 and res.wins_a + res.wins_b + res.draws == 4


def test_loader_names_what_is_wrong(bot_run, tmp_path):
    from agents import make

    with pytest.raises(ValueError, match="no RLlib checkpoint folder"):
        make("rllib", path=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="not an RLlib checkpoint"):
        make("rllib", path=tmp_path)
    with pytest.raises(ValueError, match=r"'nobody' is not in the checkpoint.*\['default_policy'\]"):
        make("rllib", path=bot_run, module_id="nobody")
    with pytest.raises(ValueError, match="exactly one of"):
        make("rllib")


#: Run in a new process: restore algorithm checkpoints with nothing registered
#: (``agents.rllib.restore_algorithm``), give the learner's logits and train one more iteration.
RESTORE_ALGORITHM = """
import json, os, sys
import numpy as np
import spit_env
import ray
from agents.rllib import restore_algorithm
import torch

ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
         logging_level="ERROR")
out = {}
for path in sys.argv[2:]:
    algo = restore_algorithm(path)
    module = algo.get_module("learner") or algo.get_module("default_policy")
    env = spit_env.SpitVecEnv(num_envs=6, opponent="greedy", seed=9)
    obs, masks = env.reset(), env.action_masks()
    batch = {"obs": torch.as_tensor(obs) if module.reads_mask else
             {"observation": torch.as_tensor(obs),
              "action_mask": torch.as_tensor(masks.astype(np.float32))}}
    with torch.no_grad():
        logits = module.forward_inference(batch)["action_dist_inputs"].numpy()
    result = algo.train()
    out[path] = {"logits": logits.tolist(), "options": module.spit_options,
                 "hiddens": module.model_config["fcnet_hiddens"],
                 "iteration": int(result["training_iteration"])}
    algo.stop()
ray.shutdown()
json.dump(out, open(sys.argv[1], "w"))
"""


def test_a_run_without_the_mask_input_evaluates_and_both_runs_restore_in_a_new_process(
        bot_run, tmp_path):
    from agents import make
    from spit_env import SpitVecEnv

    plain = tmp_path / "plain"  # and on the PettingZoo path, the bot as an RLlib module
    proc = _run("experiments.train_rllib", "--no-vector-env", "--iterations", "1",
                "--num-env-runners", "0", "--num-cpus", "1", "--eval-games", "2",
                "--eval-opponents", "random", "--checkpoint-every", "0", "--no-obs-mask",
                "--no-mask-wait", "--out", str(plain), *TINY)
    assert proc.returncode == 0, proc.stderr[-4000:]  # its final evaluation plays the module
    metrics = json.loads((plain / "metrics.json").read_text())
    assert metrics["final"]["results"]["random"]["games"] == 4
    last = metrics["iterations"][-1]  # the learner is one of the two agents of every env step
    assert last["learner_steps"] == last["env_steps"] and last["agent_steps"] == 2 * last[
        "env_steps"]
    modules = plain / "checkpoint" / "learner_group" / "learner" / "rl_module"
    assert {p.name for p in modules.iterdir() if p.is_dir()} == {"learner", "bot"}
    out = tmp_path / "restored.json"
    env = dict(_env(), RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")  # Ray stays on 127.0.0.1
    checkpoints = [str(bot_run / "checkpoint"), str(plain / "checkpoint")]
    proc = subprocess.run([sys.executable, "-c", RESTORE_ALGORITHM, str(out), *checkpoints],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    restored = json.loads(out.read_text())
    venv = SpitVecEnv(num_envs=6, opponent="greedy", seed=9)
    obs, masks = venv.reset(), venv.action_masks()
    for path, options in zip(checkpoints, ({"mask_wait": True, "obs_mask": True},
                                           {"mask_wait": False, "obs_mask": False}), strict=True):
        got = restored[path]
        assert {k: got["options"][k] for k in options} == options
        assert got["hiddens"] == [32, 32]
        assert got["iteration"] >= 2, "the restored algorithm did not train on"
        policy = make("rllib", path=path)
        np.testing.assert_allclose(np.array(got["logits"]), policy.logits(obs, masks), atol=1e-6)


def test_self_play_trains_one_shared_policy(tmp_path):
    proc = _run("experiments.train_rllib", "--mode", "self-play", "--iterations", "1",
                "--num-env-runners", "0", "--num-cpus", "1", "--eval-games", "0",
                "--checkpoint-every", "0", "--out", str(tmp_path), *TINY)
    assert proc.returncode == 0, proc.stderr[-4000:]
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    last = metrics["iterations"][-1]
    # both agents of every env step are the learner
    assert last["learner_steps"] == last["agent_steps"] == 2 * last["env_steps"] > 0
    assert metrics["final"] is None
    modules = tmp_path / "checkpoint" / "learner_group" / "learner" / "rl_module"
    assert {p.name for p in modules.iterdir() if p.is_dir()} == {"learner"}


#: Run in a new process: restore algorithm checkpoints, then compare every remote env runner's
#: module weights with the learner's (the largest difference per module).
RESTORE_RUNNERS = """
import json, sys
import numpy as np
import ray
from agents.rllib import restore_algorithm

ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
         logging_level="ERROR")
out = {}
for path in sys.argv[2:]:
    algo = restore_algorithm(path)
    learner = algo.learner_group.get_state(components="learner/rl_module",
                                           inference_only=True)["learner"]["rl_module"]
    runners = algo.env_runner_group.foreach_env_runner(
        lambda r: r.module.get_state(inference_only=True), local_env_runner=False)
    diffs = {}
    for i, state in enumerate(runners):
        for mid, weights in learner.items():
            if weights:  # the bot module has none
                theirs = state.get(mid, state)  # a single-agent runner's state is its module's
                diffs[f"{i}/{mid}"] = max(float(np.abs(np.asarray(w) - np.asarray(theirs[k])).max())
                                          for k, w in weights.items())
    out[path] = diffs
    algo.stop()
ray.shutdown()
json.dump(out, open(sys.argv[1], "w"))
"""


@pytest.fixture(scope="module")
def self_play_run(tmp_path_factory) -> Path:
    """A self-play run (multi-agent) of two remote env runners."""
    out = tmp_path_factory.mktemp("rllib_self_play")
    proc = _run("experiments.train_rllib", "--mode", "self-play", "--iterations", "2",
                "--num-env-runners", "2", "--num-cpus", "2", "--eval-games", "0",
                "--checkpoint-every", "0", "--out", str(out), *TINY)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def test_a_restored_run_samples_with_the_learners_weights(bot_run, self_play_run, tmp_path):
    out = tmp_path / "runners.json"
    env = dict(_env(), RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")  # Ray stays on 127.0.0.1
    runs = [str(self_play_run), str(bot_run)]  # multi-agent (2 runners), single-agent (1)
    proc = subprocess.run([sys.executable, "-c", RESTORE_RUNNERS, str(out), *runs],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    diffs = json.loads(out.read_text())
    assert sorted(diffs[runs[0]]) == ["0/learner", "1/learner"]
    assert sorted(diffs[runs[1]]) == ["0/default_policy"]
    for run in runs:
        assert all(d == 0 for d in diffs[run].values()), \
            f"an env runner holds other weights than the learner after the restore: {diffs}"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--iterations", "0"], "--iterations"),
        (["--opponent", "nobody"], "--opponent"),
        (["--minibatch-size", "9000"], "--minibatch-size"),
        (["--address", "not an address"], "--address"),
        (["--latency", "slow"], "--latency"),
    ],
)
def test_bad_argument_fails_naming_it(args, named, tmp_path):
    proc = _run("experiments.train_rllib", *args, "--out", str(tmp_path / "never"), timeout=120)
    assert proc.returncode != 0
    assert named in proc.stderr
    assert not (tmp_path / "never").exists()


# --- the tournament on Ray ---------------------------------------------------------------------
def test_the_ray_session_leaves_the_callers_random_state_as_it_found_it():
    import random

    from experiments.cluster.connect import ray_session

    random.seed(12)
    expected = [random.random() for _ in range(6)]
    random.seed(12)
    numpy_state = np.random.get_state()  # noqa: NPY002 - the legacy global state is the point
    got = [random.random()]
    with ray_session(None, num_cpus=1):
        got += [random.random() for _ in range(4)]
    got.append(random.random())
    assert got == expected, "Ray's start or shutdown moved the caller's global random state"
    after = np.random.get_state()  # noqa: NPY002
    assert after[0] == numpy_state[0] and np.array_equal(after[1], numpy_state[1]) \
        and after[2:] == numpy_state[2:]


def test_ray_tournament_equals_the_local_one():
    from experiments.cluster.connect import ray_session
    from experiments.cluster.tasks import run_jobs_on_ray

    players = ["random", "greedy@pro"]
    kw = dict(seed=4, chunk=7, batch_size=8, show_progress=False)  # 20 deals: chunks 7, 7, 6
    local = arena.round_robin(players, 20, **kw)
    seen = []
    with ray_session(None, num_cpus=2) as ray:
        def runner(jobs, play, report):
            return run_jobs_on_ray(jobs, play, lambda k, n: seen.append(n) or report(k, n))

        distributed = arena.round_robin(players, 20, runner=runner, **kw)
        assert ray.is_initialized()
    assert not ray.is_initialized(), "the session must stop the local Ray it started"
    assert distributed == local
    # 3 chunks x 2 seat orders, each task reported with its games
    assert sorted(seen) == sorted([7, 7, 6] * 2) and sum(seen) == 2 * 20
    # and the chunks change nothing: the same deals in one piece, in other batches, agree
    whole = arena.play_pairing("random", "greedy@pro", 20, seed=4, batch_size=3)
    assert asdict(whole) == local["pairings"][0]


# --- a head node with `ray start --head` on the loopback address -----------------------------------
def _session_processes(sid: int) -> list:
    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid:
                found.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


def _stop_session(sid: int) -> list:
    """Stop every process of the head's session (TERM, then KILL); return those left."""
    import psutil

    procs = _session_processes(sid)
    for proc in procs:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=20)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)
    return [p for p in _session_processes(sid) if p.is_running()]


def test_head_node_on_loopback_runs_the_tournament(tmp_path):
    port, client_port = _closed_port(), _closed_port()
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths live here
    env = dict(_env(), RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_AUTH_MODE="token",
               RAY_AUTH_TOKEN=secrets.token_hex(16))
    ray_cli = str(Path(sys.executable).with_name("ray"))
    head = subprocess.Popen(
        [ray_cli, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
         f"--ray-client-server-port={client_port}", "--num-cpus=2", "--include-dashboard=false",
         "--disable-usage-stats", f"--temp-dir={temp_dir}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    try:
        log, _ = head.communicate(timeout=180)  # returns once the head is up
        assert head.returncode == 0, log[-3000:]
        args = ["--players", "random,greedy", "--games", "3", "--chunk", "2", "--seed", "7",
                "--quiet"]
        proc = _run("experiments.tournament", *args, "--ray", f"127.0.0.1:{port}",
                    "--json", str(tmp_path / "ray.json"), env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        local = arena.round_robin(["random", "greedy"], 3, seed=7, chunk=2, batch_size=512,
                              show_progress=False)
        on_head = json.loads((tmp_path / "ray.json").read_text())
        assert on_head["pairings"] == json.loads(json.dumps(local["pairings"]))
    finally:
        left = _stop_session(head.pid)
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert not left, f"head node processes still running: {left}"


# --- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize("module", ["experiments.tournament", "experiments.train_rllib"])
def test_unreachable_address_fails_clearly(module, tmp_path):
    address = f"127.0.0.1:{_closed_port()}"
    args = (["--ray", address, "--players", "random,greedy", "--games", "2"]
            if module.endswith("tournament") else
            ["--address", address, "--connect-timeout", "5", "--out", str(tmp_path / "never")])
    proc = _run(module, *args, timeout=120)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert address in last and "cannot reach a Ray head" in last, proc.stderr[-2000:]
    assert ("--ray" if module.endswith("tournament") else "--address") in last
    assert not (tmp_path / "never").exists()


def test_bad_ray_address_is_an_argument_error():
    proc = _run("experiments.tournament", "--ray", "nowhere", "--games", "2", timeout=120)
    assert proc.returncode == 2 and "--ray" in proc.stderr and "HOST:PORT" in proc.stderr


_NO_RAY = ("import sys; sys.modules['ray'] = None\n"
           "from {module} import main\n"
           "sys.exit(main({argv!r}))\n")


@pytest.mark.parametrize(("module", "argv"), [
    ("experiments.tournament", ["--ray", "--players", "random,greedy", "--games", "2"]),
    ("experiments.train_rllib", ["--iterations", "1"]),
])
def test_without_ray_one_line_names_the_scale_extra(module, argv, tmp_path):
    code = _NO_RAY.format(module=module, argv=argv + (["--out", str(tmp_path / "x")]
                                                       if module.endswith("rllib") else []))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'scale' extra" in lines[0], proc.stderr[-2000:]


def test_without_ray_the_rllib_bot_says_so(monkeypatch, tmp_path):
    from agents import make
    from agents.rllib import RayMissingError

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(RayMissingError, match="'scale' extra"):
        make("rllib", path=tmp_path)
