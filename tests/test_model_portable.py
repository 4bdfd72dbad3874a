"""The shipped model is a standard SB3 model that loads on every version the package admits.

``MaskablePPO.load``, ``model.predict(obs, action_masks=...)`` and sb3-contrib's
``evaluate_policy`` work on a plain ``SpitVecEnv`` and on ``Spit-v0``, with nothing but the
package installed, and the file holds nothing version-bound (the pickles name classes only, the
weights load with ``weights_only=True``). CI runs this file twice: in the test environment
(today's versions) and in a second one holding the lowest versions ``pyproject.toml`` admits of
NumPy, Gymnasium, PettingZoo, SB3 and sb3-contrib (``.ci/floors.txt``).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")


def _shipped():
    from agents.network import shipped_model_path

    return shipped_model_path()


def test_the_shipped_file_holds_no_version_bound_pickle():
    import torch

    from agents.ppo_model import PORTABLE_MODULES, pickled_names

    names = pickled_names(_shipped())
    assert set(names) == {"policy_class", "observation_space", "action_space"}
    for entry, found in names.items():
        assert found and all(n.startswith(PORTABLE_MODULES) for n in found), (entry, found)
        assert not any("numpy" in n for n in found), (entry, found)
    with zipfile.ZipFile(_shipped()) as z:
        data = json.loads(z.read("data"))
        for name in ("policy.pth", "policy.optimizer.pth", "pytorch_variables.pth"):
            torch.load(io.BytesIO(z.read(name)), weights_only=True)
    # the options that shape the network are plain JSON in the file, those the policy plays by
    from sb3_contrib import MaskablePPO

    from spit_env import rules

    kwargs = data["policy_kwargs"]
    policy = MaskablePPO.load(_shipped(), device="cpu").policy
    arch = kwargs["net_arch"]
    assert set(arch) == {"pi", "vf"} and all(isinstance(n, int) for n in arch["pi"] + arch["vf"])
    assert {k: kwargs[k] for k in policy.spit_options} == policy.spit_options
    assert all(isinstance(v, bool) for v in policy.spit_options.values())
    fields = {f.name for f in rules.OBSERVATION}
    assert kwargs.get("obs_fields") is None or set(kwargs["obs_fields"]) <= fields


def test_a_fresh_process_loads_it_with_sb3_alone():
    from sb3_contrib import MaskablePPO

    code = ("from sb3_contrib import MaskablePPO\n"
            "from importlib import resources\n"
            "m = MaskablePPO.load(str(resources.files('agents') / 'models' / 'network.zip'))\n"
            "print(type(m.policy).__name__, ''.join(str(m.observation_space.shape).split()))\n")
    proc = subprocess.run([sys.executable, "-W", "error::DeprecationWarning:numpy", "-c", code],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    here = MaskablePPO.load(_shipped(), device="cpu").observation_space.shape
    assert proc.stdout.split() == ["SpitPolicy", "".join(str(here).split())]


def test_predict_and_evaluate_policy_on_a_plain_vecenv_and_on_spit_v0():
    import gymnasium
    import torch
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.evaluation import evaluate_policy

    import agents
    import spit_env

    torch.set_num_threads(1)
    model = MaskablePPO.load(_shipped(), device="cpu")
    policy = agents.make("network")
    venv = spit_env.SpitVecEnv(num_envs=8, opponent="greedy", seed=0,
                               config=spit_env.SpitConfig(max_game_ms=120_000))
    obs = venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(60):  # predict plays the moves the package's policy plays
        masks = venv.action_masks()
        actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
        assert (actions == policy(obs, masks, rng)).all()
        assert masks[np.arange(8), actions].all()
        obs, _, _, _ = venv.step(actions)
    one, _ = model.predict(obs[0], action_masks=venv.action_masks()[0], deterministic=True)
    assert np.ndim(one) == 0 and venv.action_masks()[0][one]

    illegal = []

    def legal_only(local, _globals):
        i = local["i"]
        illegal.append(not local["action_masks"][i][local["actions"][i]])

    for env in (venv, gymnasium.make("Spit-v0", opponent="greedy",
                                     config=spit_env.SpitConfig(max_game_ms=120_000))):
        rewards, lengths = evaluate_policy(model, env, n_eval_episodes=4, callback=legal_only,
                                           return_episode_rewards=True)
        assert len(rewards) == len(lengths) == 4 and min(lengths) > 10
        assert all(-1 <= r <= 1 for r in rewards)
    assert illegal and not any(illegal)


def test_the_floors_ci_installs_are_the_lower_bounds_pyproject_declares():
    import re
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")
    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + project["optional-dependencies"]["train"]
    lower = {}
    for spec in declared:
        found = re.match(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)", spec)
        if found:
            lower[found[1].lower()] = found[2]
    pins = {}
    for line in (root / ".ci" / "floors.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    assert set(pins) == {"numpy", "gymnasium", "pettingzoo", "stable-baselines3", "sb3-contrib"}
    for name, version in pins.items():
        # a pin is the declared floor, written out to the patch level (1.26 -> 1.26.0)
        floor = lower[name].split(".") + ["0"] * 3
        assert version.split(".") == floor[: len(version.split("."))], (name, version, lower[name])
