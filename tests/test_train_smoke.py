"""Smoke test of the training script (cleanrl style: the script itself in a subprocess, toy sizes).

It trains for a couple of thousand steps, checks the run folder, loads the model through
``agents.make("ppo", path=...)`` and plays it in a small duplicate-deal match, resumes from a
checkpoint (the step count goes on), and checks that a bad argument fails with a clear message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("sb3_contrib")
pytest.importorskip("tyro")

# Toy sizes; evaluation games are capped at 60 s of simulated time because an almost untrained
# argmax policy may WAIT for ever (such games end as truncated draws).
TINY = [
    "--num-envs", "8", "--n-steps", "128", "--batch-size", "256", "--n-epochs", "1",
    "--net-arch", "32", "32", "--eval-games", "4", "--eval-games-during", "2",
    "--eval-freq", "1024", "--eval-opponents", "random", "greedy",
    "--eval-max-game-ms", "60000", "--checkpoint-freq", "1024", "--torch-threads", "1",
    "--no-progress-bar", "--no-tensorboard",
]


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "experiments.train_ppo", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ppo_run")
    proc = _run("--total-timesteps", "2048", "--out", str(out), *TINY)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_training_writes_the_run_folder(run_dir):
    for name in ("model.zip", "eval.json", "config.json", "learning_curve.png"):
        assert (run_dir / name).is_file(), name
    assert sorted((run_dir / "checkpoints").glob("ppo_*_steps.zip")), "no checkpoint written"
    result = json.loads((run_dir / "eval.json").read_text())
    final = result["final"]
    assert final["timesteps"] >= 2048
    assert set(final["results"]) == {"random", "greedy"}
    for r in final["results"].values():
        assert r["games"] == 2 * 4
        assert r["wins_a"] + r["wins_b"] + r["draws"] == r["games"]
        assert 0 <= r["ci_low"] <= r["win_rate"] <= r["ci_high"] <= 1
    assert result["history"], "no evaluation during training"
    speed = result["speed"]
    assert speed["timesteps"] >= 2048 and 0 < speed["env_share_of_training"] < 1
    assert json.loads((run_dir / "config.json").read_text())["opponent"] == "greedy"


def test_trained_model_plays_through_the_registry(run_dir):
    import agents.ppo  # noqa: F401  (registers "ppo")
    from experiments.tournament import Player, play_pairing
    from spit_env import SpitConfig
    from spit_env.policy import make_policy
    from spit_env.rules import OBS_DIM

    policy = make_policy("ppo", path=run_dir / "model.zip")
    rng = np.random.default_rng(0)
    obs = rng.random((5, OBS_DIM), dtype=np.float32)
    masks = np.zeros((5, 23), bool)
    masks[:, 0] = True
    masks[np.arange(5), rng.integers(1, 23, 5)] = True
    actions = policy(obs, masks, rng)
    assert actions.shape == (5,) and actions.dtype == np.int64
    assert masks[np.arange(5), actions].all(), "the policy chose a masked action"
    sampling = make_policy("ppo", path=run_dir / "model.zip", deterministic=False)
    assert masks[np.arange(5), sampling(obs, masks, rng)].all()

    me = Player("ppo", "ppo", None, {"path": run_dir / "model.zip"})
    res = play_pairing(me, "random", 3, config=SpitConfig(max_game_ms=60_000), seed=1)
    assert res.games == 6 and res.wins_a + res.wins_b + res.draws == 6


def test_resume_continues_counting(run_dir, tmp_path):
    checkpoints = sorted((run_dir / "checkpoints").glob("ppo_*_steps.zip"),
                         key=lambda p: int(p.stem.split("_")[1]))
    start = int(checkpoints[-1].stem.split("_")[1])
    proc = _run("--total-timesteps", "1024", "--out", str(tmp_path), "--resume",
                str(checkpoints[-1]), *TINY)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "eval.json").read_text())
    assert result["config"]["resumed_from_timesteps"] == start
    assert result["final"]["timesteps"] >= start + 1024


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--num-envs", "0"], "--num-envs"),
        (["--opponent", "nobody"], "--opponent"),
        (["--batch-size", "10000", "--num-envs", "2", "--n-steps", "8"], "--batch-size"),
        (["--total-timesteps", "lots"], "--total-timesteps"),
    ],
)
def test_bad_argument_fails_naming_it(args, named, tmp_path):
    proc = _run(*args, "--out", str(tmp_path / "never"), timeout=60)
    assert proc.returncode != 0
    assert named in proc.stderr
    assert not (tmp_path / "never" / "model.zip").exists()
