"""Smoke test of the training script (cleanrl style: the script itself in a subprocess, toy sizes).

It trains for a couple of thousand steps after a tiny behaviour-cloning warm start, checks the
run folder, loads the model through ``agents.make("ppo", path=...)`` and plays it in a small
duplicate-deal match, resumes from a checkpoint (the step count goes on), trains a model without
the mask in its input and plays it, and checks that a bad argument fails with a clear message.
In-process tests check the model's input computed inside its policy and the warm start's fit.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import game_observations

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
    "--no-progress-bar", "--no-tensorboard", "--bc-samples", "300", "--bc-batch-size", "64",
]

# Runs that check the model, not the evaluations during training: the final evaluation only
# (the evaluations from step 0 and the bots' levels are checked by run_dir and the log test).
TINY_FINAL_EVAL = [*TINY, "--eval-freq", "0"]


# the timeout only stops a hang: a tiny run takes 20-110 s, on a loaded machine longer
def _run(*args: str, timeout: float = 400) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "experiments.train_ppo", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ppo_run")
    proc = _run("--total-timesteps", "2048", "--out", str(out), "--bc-steps", "5",
                "--critic-steps", "5", "--json", str(out / "copy" / "eval_copy.json"), *TINY)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_training_writes_the_run_folder(run_dir):
    for name in ("model.zip", "eval.json", "config.json", "learning_curve.png"):
        assert (run_dir / name).is_file(), name
    saved = sorted(int(p.stem.split("_")[1]) for p in (run_dir / "checkpoints").glob("ppo_*.zip"))
    assert saved, "no checkpoint written"
    # none in the last rollout (1,024 steps): model.zip is the final one, kept once
    assert max(saved) <= json.loads((run_dir / "eval.json").read_text())["final"]["timesteps"] - 1024
    result = json.loads((run_dir / "eval.json").read_text())
    assert json.loads((run_dir / "copy" / "eval_copy.json").read_text()) == result  # --json
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
    config = json.loads((run_dir / "config.json").read_text())
    assert config["opponent"] == "greedy"
    bc = config["behaviour_cloning"]
    assert bc["samples"] == bc["played"] >= 300 and bc["forbidden"] == 0  # every move kept
    critic = config["critic_warm_start"]
    assert critic["games_of"] == "racer" and 0 < critic["samples"] <= bc["samples"]
    # the best critic is kept (the untrained one if no round did better)
    assert critic["held_out_explained_variance"] >= critic["held_out_explained_variance_before"]
    assert config["mask_wait"] is False
    updates = result["updates"]
    assert len(updates) == 2 and all(np.isfinite(u["explained_variance"]) for u in updates)
    assert all(u["pull_kl"] is None for u in updates)  # --pull-coef 0: plain MaskablePPO
    assert config["obs_mask"] is True and config["racer_features"] is True


def test_trained_model_plays_through_the_registry(run_dir):
    from agents.arena import Player, play_pairing
    from spit_env import SpitConfig
    from spit_env.policy import make_policy
    from spit_env.rules import OBS_DIM

    policy = make_policy("ppo", path=run_dir / "model.zip")
    rng = np.random.default_rng(0)
    obs = game_observations(5)
    with pytest.raises(ValueError, match="Spit environment's"):  # random floats are no obs
        policy(rng.random((5, OBS_DIM), dtype=np.float32), np.ones((5, 23), bool), rng)
    masks = np.zeros((5, 23), bool)
    masks[:, 0] = True
    masks[np.arange(5), rng.integers(1, 23, 5)] = True
    actions = policy(obs, masks, rng)
    assert actions.shape == (5,) and actions.dtype == np.int64
    assert masks[np.arange(5), actions].all(), "the policy chose a masked action"
    assert policy.options["obs_mask"] is True and policy.options["racer_features"] is True
    assert policy.logits(obs).shape == (5, 23)  # the model reads its mask from the observation
    sampling = make_policy("ppo", path=run_dir / "model.zip", deterministic=False)
    assert masks[np.arange(5), sampling(obs, masks, rng)].all()

    me = Player("ppo", "ppo", None, {"path": run_dir / "model.zip"})
    res = play_pairing(me, "random", 3, config=SpitConfig(max_game_ms=60_000), seed=1)
    assert res.games == 6 and res.wins_a + res.wins_b + res.draws == 6


def test_resume_continues_counting(run_dir, tmp_path):
    checkpoints = sorted((run_dir / "checkpoints").glob("ppo_*_steps.zip"),
                         key=lambda p: int(p.stem.split("_")[1]))
    start = int(checkpoints[-1].stem.split("_")[1])
    # the network's input is the checkpoint's: a differing input flag is noted and ignored
    proc = _run("--total-timesteps", "1024", "--out", str(tmp_path), "--resume",
                str(checkpoints[-1]), "--no-racer-features", *TINY_FINAL_EVAL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "--racer-features on" in proc.stderr and "ignored" in proc.stderr
    assert json.loads((tmp_path / "config.json").read_text())["racer_features"] is True
    result = json.loads((tmp_path / "eval.json").read_text())
    assert result["config"]["resumed_from_timesteps"] == start
    assert result["config"]["behaviour_cloning"] is None, "a resumed run was warm-started again"
    assert result["final"]["timesteps"] >= start + 1024


def test_init_model_starts_from_the_file_with_a_fitted_critic_and_the_pull(run_dir, tmp_path):
    proc = _run("--total-timesteps", "1024", "--out", str(tmp_path), "--init-model",
                str(run_dir / "model.zip"), "--critic-steps", "20", "--pull-coef", "0.5",
                "--checkpoint-freq", "0", *TINY_FINAL_EVAL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "eval.json").read_text())
    config = result["config"]
    assert config["behaviour_cloning"] is None, "the file's actor was cloned over"
    assert config["critic_warm_start"]["games_of"] == "the model"
    assert config["resumed_from_timesteps"] == 0
    assert [u["pull_kl"] is not None for u in result["updates"]] == [True]
    proc = _run("--total-timesteps", "1024", "--out", str(tmp_path / "never"), "--init-model",
                str(run_dir / "model.zip"), *TINY_FINAL_EVAL, "--net-arch", "16",
                timeout=120)
    assert proc.returncode != 0 and "--net-arch" in proc.stderr and "--init-model" in proc.stderr
    assert not (tmp_path / "never" / "model.zip").exists()


def test_every_model_file_of_a_run_is_portable(run_dir):
    import zipfile

    import torch

    from agents.ppo_model import PORTABLE_MODULES, pickled_names

    files = [run_dir / "model.zip", *sorted((run_dir / "checkpoints").glob("*.zip"))]
    for path in files:
        for entry, names in pickled_names(path).items():
            assert names and all(n.startswith(PORTABLE_MODULES) for n in names), (path, entry)
        with zipfile.ZipFile(path) as z:
            for name in ("policy.pth", "policy.optimizer.pth", "pytorch_variables.pth"):
                import io

                torch.load(io.BytesIO(z.read(name)), weights_only=True)
            data = json.loads(z.read("data"))
            assert data["policy_kwargs"]["racer_features"] is True
            # the last rollout's observations are left out: a resumed run resets its games
            assert "_last_obs" not in data and "ep_info_buffer" not in data
    import agents.network as network

    # model.zip is what --resume continues from: it keeps Adam's state (a checkpoint taken in
    # the first rollout, before any update, has none to keep)
    model = network.load_model(files[0])
    assert model.policy.optimizer.state_dict()["state"], "the run's model lost Adam's state"


PROGRESS_LINE = re.compile(
    r"^training: [\d,]+/[\d,]+ steps \(\d+%\) \| [\d.,?]+ (steps/s|s per step)( without "
    r"evaluations \(\d\d:\d\d of them; [\d.,]+( s per step)? with\))? \| elapsed [\d:]+ "
    r"\| ETA [\d:?]+")


def test_log_file_gets_progress_lines_and_the_best_model_is_kept(tmp_path):
    # stderr is a pipe here, not a terminal: the progress shows as plain lines
    args = [a for a in TINY if a != "--no-progress-bar"]
    proc = _run("--total-timesteps", "4096", "--out", str(tmp_path), "--bc-steps", "0",
                "--progress-lines", "4", "--keep-best", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("training: ")]
    assert len(lines) >= 2, proc.stderr
    assert all(PROGRESS_LINE.match(ln) for ln in lines), lines
    assert "(100%)" in lines[-1] and "ETA 00:00" in lines[-1]
    assert any("last eval @" in ln for ln in lines), "the latest evaluation is not shown"
    assert "\r" not in proc.stdout + proc.stderr, "a progress bar wrote to the log"
    # every long step shows its progress: the evaluations (from step 0, with the bots' levels
    # in its batch) and the final one, each opponent's games done of its total
    logged = proc.stderr.splitlines()
    # (no warm start here: the levels are the strongest evaluation bot's, greedy's)
    for start, each in (("evaluation @0 (start) and greedy's levels (2 deals per pairing): "
                         "12/12 games (100%)", "| random 4/4, greedy 4/4, greedy vs random 4/4"),
                        ("final evaluation (4 deals per pairing): 16/16 games (100%)",
                         "| random 8/8, greedy 8/8")):
        assert any(ln.startswith(start) and each in ln for ln in logged), (start, logged)
    # the rate the last line shows is the summary's: one quantity, the steps over the time
    # outside evaluations of the progress itself; a rate that counted this run's evaluations
    # would differ
    rate = re.search(r"\| ([\d,.]+ steps/s) without", lines[-1])
    summary = re.search(r"\(([\d,.]+ steps/s) training", proc.stdout)
    assert rate and summary, (lines[-1], proc.stdout)
    assert rate.group(1) == summary.group(1)

    result = json.loads((tmp_path / "eval.json").read_text())
    history = result["history"]
    assert result["config"]["eval_during_seed"] != result["config"]["eval_seed"]
    assert history[-1]["timesteps"] >= 4096, "the last model was not evaluated"
    assert history[0]["timesteps"] == 0 and history[0]["start"], "no evaluation at step 0"
    best = max(history, key=lambda h: h["score"])
    kept = result["kept_model"]
    assert kept["kept"] == "best" and kept["score"] == best["score"]
    assert result["final"]["timesteps"] == kept["timesteps"]
    for h in history:
        rates = [h["results"][name]["win_rate"] for name in ("random", "greedy")]
        assert h["score"] == pytest.approx(np.mean(rates))
    # model.zip is the best model (one copy: no best_model.zip beside it); the last one is kept
    from agents.network import load_model

    assert not (tmp_path / "best_model.zip").exists()
    kept_model, last = (load_model(tmp_path / n) for n in ("model.zip", "last_model.zip"))
    assert kept_model.num_timesteps == kept["timesteps"] and last.num_timesteps >= 4096


def test_keep_best_needs_held_out_deals(tmp_path):
    proc = _run("--keep-best", "--eval-during-seed", "7", "--eval-seed", "7",
                "--out", str(tmp_path / "never"), timeout=60)
    assert proc.returncode == 2 and "--eval-during-seed" in proc.stderr


def test_progress_line_reports_the_training_rate_without_evaluations_and_the_last_one():
    import io

    from experiments.ppo.progress import training_progress

    clock = [0.0]
    out = io.StringIO()
    latest = [None]
    progress = training_progress(1_000_000, lines=4, latest_eval=lambda: latest[0], stream=out,
                                 clock=lambda: clock[0])
    with progress.paused():  # the evaluation at step 0
        clock[0] += 50.0
    latest[0] = (0, {"racer": 0.4712})
    clock[0] += 100.0
    progress.update(250_000)
    text = out.getvalue().splitlines()[-1]
    assert text.startswith("training: 250,000/1,000,000 steps (25%) | 2,500 steps/s without "
                           "evaluations (00:50 of them; 1,667 with)")
    # 750,000 steps at the wall rate since step 0 (the evaluation there is a one-off)
    assert "elapsed 02:30" in text and "ETA 05:00" in text
    assert text.endswith("| last eval @0: racer 0.47")
    with pytest.raises(ValueError, match="total_timesteps"):
        training_progress(0)


def test_model_without_mask_input_still_plays(tmp_path):
    from agents.arena import Player, play_pairing
    from spit_env import SpitConfig
    from spit_env.policy import make_policy
    from spit_env.rules import OBS_DIM

    proc = _run("--total-timesteps", "1024", "--out", str(tmp_path), "--no-obs-mask",
                "--no-racer-features", "--bc-steps", "0", *TINY_FINAL_EVAL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    policy = make_policy("ppo", path=tmp_path / "model.zip")
    assert not policy.options.get("obs_mask")
    assert policy.logits(game_observations(2)).shape == (2, 23)
    assert policy._actor[0].features_dim == OBS_DIM
    me = Player("ppo", "ppo", None, {"path": tmp_path / "model.zip"})
    res = play_pairing(me, "random", 2, config=SpitConfig(max_game_ms=60_000), seed=1)
    assert res.games == 4


def _training_env(num_envs, seed, opponent, **options):
    from experiments.ppo.envs import make_training_env

    kw = dict(num_envs=num_envs, groups=1, opponent=opponent, seed=seed, learner_seat="random",
              reward="round", episode="game", shaping=0.0, skip_forced_waits=True,
              truncation_reward=-1.0)
    return make_training_env(**{**kw, **options})


def _model(env, **options):
    from agents.ppo_model import new_model

    return new_model(env, net_arch=(16,), options=options, n_steps=8, batch_size=32, seed=0,
                     device="cpu")


def test_the_model_reads_the_plain_observation_and_computes_its_input():
    import torch
    from sb3_contrib.common.maskable.utils import get_action_masks

    from agents.network import mask_idle_wait
    from spit_env.policy import uniform_legal_actions
    from spit_env.rules import OBS_DIM

    _, _, env = _training_env(6, 3, "greedy")
    assert env.observation_space.shape == (OBS_DIM,)  # the env as it is: no wrapper adds inputs
    policy = _model(env, racer_features=False).policy
    assert policy.features_dim == OBS_DIM + 23
    obs = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(30):
        masks = get_action_masks(env)  # what MaskablePPO calls, through every wrapper: the env's
        assert obs.shape == (6, OBS_DIM) and obs.dtype == np.float32
        with torch.no_grad():
            inputs = policy.extract_features(torch.as_tensor(obs)).numpy()
            playing = policy.playing_masks(torch.as_tensor(obs), masks).numpy()
        assert (inputs[:, :OBS_DIM] == obs).all()
        assert (inputs[:, OBS_DIM:] == mask_idle_wait(masks)).all()  # the mask, after mask_wait
        assert (playing == mask_idle_wait(masks)).all()
        # --mask-wait (default): never WAIT beside another legal move, the mask given or not
        actions, _ = policy.predict(obs, action_masks=masks)
        assert playing[np.arange(6), actions].all()
        assert playing[np.arange(6), policy.predict(obs)[0]].all()
        obs, _, dones, infos = env.step(uniform_legal_actions(masks, rng))
        for i in np.flatnonzero(dones):
            assert infos[i]["terminal_observation"].shape == (OBS_DIM,)
    env.close()


def test_racer_features_are_the_racers_reading():
    import torch
    from sb3_contrib.common.maskable.utils import get_action_masks

    from agents.heuristics import RacerBot
    from agents.network import RACER_FEATURES, mask_idle_wait, racer_features
    from spit_env.rules import ACTION_KIND, KIND_PLAY, OBS_DIM, PLAY_BASE

    _, _, env = _training_env(32, 5, "racer")
    policy = _model(env).policy
    assert policy.features_dim == OBS_DIM + 23 + RACER_FEATURES
    racer = RacerBot()
    obs = env.reset()
    rng = np.random.default_rng(2)
    chosen_plays = 0
    for _ in range(150):
        masks = get_action_masks(env)
        with torch.no_grad():
            feats = policy.extract_features(torch.as_tensor(obs)).numpy()[:, OBS_DIM + 23:]
        assert (feats == racer_features(obs, mask_idle_wait(masks))).all()
        assert feats.min() >= -1 and feats.max() <= 1
        per_play = feats.reshape(-1, 10, 4)
        allowed = masks[:, PLAY_BASE:PLAY_BASE + 10]
        assert (per_play[~allowed] == 0).all(), "a feature of a play the mask forbids"
        actions = racer(obs, masks, rng)
        # the racer's chosen play is one of the best-scored legal plays by the features
        rows = np.flatnonzero(ACTION_KIND[actions] == KIND_PLAY)
        score = np.where(allowed, per_play[:, :, 2], -np.inf)
        assert (score[rows, actions[rows] - PLAY_BASE] == score[rows].max(axis=1)).all()
        chosen_plays += rows.size
        obs, _, _, _ = env.step(actions)
    assert chosen_plays > 100
    env.close()


def test_racer_features_refuse_bad_input():
    from agents.network import RACER_FEATURES, NetworkPolicy, racer_features

    obs = game_observations(4)
    masks = np.ones((4, 23), bool)
    assert racer_features(obs[:0], masks[:0]).shape == (0, RACER_FEATURES)
    for bad_obs, bad_masks, named in ((obs[0], masks[0], "observations"),
                                      (obs, masks[:, :22], "action_masks"),
                                      (obs, masks[:3], "action_masks"),
                                      (obs, masks * 0.5, "bool")):
        with pytest.raises(ValueError, match=named):
            racer_features(bad_obs, bad_masks)
    # a model with the features but not the mask in its input; its options are its policy's,
    # so the bare policy plays as the model does
    _, _, env = _training_env(4, 0, "greedy")
    model = _model(env, obs_mask=False)
    rng = np.random.default_rng(0)
    assert (NetworkPolicy(model)(obs, masks, rng) == NetworkPolicy(model.policy)(obs, masks, rng)).all()
    assert NetworkPolicy(model.policy).logits(obs[:0]).shape == (0, 23)
    assert NetworkPolicy(model).options["obs_mask"] is False
    env.close()


def test_model_without_racer_features_plays(tmp_path):
    from agents.arena import Player, play_pairing
    from agents.network import input_size
    from spit_env import SpitConfig
    from spit_env.policy import make_policy
    from spit_env.rules import OBS_DIM

    # the input of models trained before --racer-features became the default: D + 23
    proc = _run("--total-timesteps", "1024", "--out", str(tmp_path), "--no-racer-features",
                "--bc-steps", "3", *TINY_FINAL_EVAL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "config.json").read_text())["racer_features"] is False
    policy = make_policy("ppo", path=tmp_path / "model.zip")
    assert not policy.options["racer_features"] and policy.options["obs_mask"]
    assert input_size(policy.options) == OBS_DIM + 23
    assert policy.logits(game_observations(2)).shape == (2, 23)
    me = Player("ppo", "ppo", None, {"path": tmp_path / "model.zip"})
    res = play_pairing(me, "racer", 2, config=SpitConfig(max_game_ms=60_000), seed=1)
    assert res.games == 4


def test_behaviour_cloning_fits_the_teacher():
    import torch
    from sb3_contrib import MaskablePPO

    from experiments.ppo.warm_start import behaviour_clone, collect_teacher_data
    from spit_env.policy import make_policy

    torch.set_num_threads(1)
    from agents.network import input_options
    from agents.ppo_model import new_model

    _, _, env = _training_env(16, 1, "random")
    model = new_model(env, net_arch=(64,), n_steps=8, batch_size=64, seed=0, device="cpu")
    data = collect_teacher_data(env, make_policy("greedy"), 2000, input_options(model))
    obs, masks, actions = data.observations, data.masks, data.actions
    assert len(obs) == len(masks) == len(actions) == data.played >= 2000
    assert masks[np.arange(len(actions)), actions].all(), "a recorded move is not legal"
    assert not (masks[:, 0] & masks[:, 1:].any(axis=1)).any(), "WAIT beside a move (mask_wait)"
    plain = MaskablePPO("MlpPolicy", env, n_steps=8, batch_size=64, seed=0, device="cpu",
                        policy_kwargs=dict(net_arch=dict(pi=[64], vf=[64])))
    assert behaviour_clone(plain, obs, masks, actions, steps=2, batch_size=64,
                           learning_rate=1e-3, seed=0)["loss"] > 0  # any weightless extractor
    value_before = [p.detach().clone() for p in model.policy.mlp_extractor.value_net.parameters()]
    before = behaviour_clone(model, obs, masks, actions, steps=1, batch_size=256,
                             learning_rate=1e-3, seed=0)
    after = behaviour_clone(model, obs, masks, actions, steps=300, batch_size=256,
                            learning_rate=1e-3, seed=0)
    assert after["loss"] < before["loss"] and after["accuracy"] > before["accuracy"]
    for p, q in zip(value_before, model.policy.mlp_extractor.value_net.parameters(), strict=True):
        assert torch.equal(p, q), "the warm start changed the value network"
    env.close()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--num-envs", "0"], "--num-envs"),
        (["--opponent", "nobody"], "--opponent"),
        (["--batch-size", "10000", "--num-envs", "2", "--n-steps", "8"], "--batch-size"),
        (["--total-timesteps", "lots"], "--total-timesteps"),
        (["--bc-steps", "10", "--bc-teacher", "nobody"], "--bc-teacher"),
        (["--mask-wait"], "--no-mask-wait"),  # the warm start imitates racer's WAITs
        (["--critic-steps", "-1"], "--critic-steps"),
        (["--pull-coef", "-1"], "--pull-coef"),
        (["--init-model", "nowhere.zip"], "--init-model"),
        (["--league-weighting", "losses"], "--league-weighting"),  # needs a mix
        (["--league-weighting", "losses", "--opponent", "random:1,greedy:1", "--eval-freq", "0"],
         "--eval-freq"),
        (["--league-weighting", "losses", "--opponent", "random:1,greedy:1", "--total-timesteps",
          "1000", "--eval-freq", "1000"], "below --total-timesteps"),
    ],
)
def test_bad_argument_fails_naming_it(args, named, tmp_path):
    proc = _run(*args, "--out", str(tmp_path / "never"), timeout=60)
    assert proc.returncode != 0
    assert named in proc.stderr
    assert not (tmp_path / "never" / "model.zip").exists()


def test_an_argument_error_is_one_line_naming_the_program(tmp_path):
    proc = _run("--total-timesteps", "-5", "--out", str(tmp_path / "never"), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("python -m experiments.train_ppo: error: --total-timesteps must "
                                   "be > 0, got -5")


def test_truncation_reward_and_opponent_groups():
    from stable_baselines3.common.vec_env import VecEnvWrapper

    from experiments.ppo.envs import OpponentGroups, TruncationReward
    from spit_env import SpitConfig, SpitVecEnv
    from spit_env.policy import uniform_legal_actions

    short = SpitConfig(max_game_ms=3_000)  # every game is truncated
    venv = SpitVecEnv(5, opponent="greedy", config=short, seed=0)
    groups = OpponentGroups(TruncationReward(venv, -1.0), groups=2)
    assert groups.num_envs == 5 and groups.n_groups == 2 and groups.bounds.tolist() == [0, 3, 5]
    assert groups.env_is_wrapped(VecEnvWrapper) == [False] * 5  # SpitVecEnv wraps nothing
    groups.reset()
    groups.set_group_opponent(1, "random", "random")
    assert groups.get_attr("opponent") == ["greedy"] * 3 + ["random"] * 2
    assert groups.labels == ["?", "random"]
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(200):
        _, rewards, dones, infos = groups.step(uniform_legal_actions(groups.action_masks(), rng))
        for i in np.flatnonzero(dones):
            ended += 1
            assert rewards[i] == -1.0 and "TimeLimit.truncated" not in infos[i]
    assert ended > 0
    # a new profile latency cuts the running games (truncated, so SB3 bootstraps) and deals
    # fresh ones, in which the group's rows play at the profile's latency
    groups.set_group_opponent(0, "greedy@pro", "greedy@pro")
    _, rewards, dones, infos = groups.step(np.zeros(5, np.int64))
    assert dones.all()  # cut (bootstrapped), unless its game ended by itself in this step
    assert all(infos[i].get("TimeLimit.truncated") or rewards[i] == -1.0 for i in range(5))
    seats = venv.learner_seats
    assert all(venv.duel.row_config(i).latency[1 - seats[i]].name == "pro" for i in range(3))
    assert all(venv.duel.row_config(i).latency[1 - seats[i]].name == "club" for i in (3, 4))


def test_league_weighting_gives_more_rows_to_the_opponents_the_agent_loses_to():
    from experiments.ppo.schedule import OpponentSchedule, loss_weights

    w = loss_weights([0.9, 0.5, 0.3, 1.0])
    assert w[0] < w[1] < w[2] and w[3] > 0  # more weight the more it loses; nobody left out
    groups, _, _ = _training_env(20, 0, "random", groups=10)
    rates = {"random": 0.9, "greedy": 0.5, "racer": 0.3}
    asked = []

    def evaluate(model, specs, deals, desc=""):
        asked.append(list(specs))
        return {s: {"win_rate": rates[s]} for s in specs}

    class Model:
        num_timesteps = 0

    class Logger:
        def record(self, *args):
            pass

    members = [("random", 1.0), ("greedy", 1.0), ("racer", 1.0)]
    schedule = OpponentSchedule([members], groups, evaluate, ["random"], eval_freq=10,
                                eval_deals=5, total_timesteps=100, league_weighting="losses")
    model = Model()
    schedule.on_start(model)
    assert schedule.stage_log[-1]["rows"] == {"random": 8, "greedy": 6, "racer": 6}
    model.num_timesteps = 10
    schedule.on_step(model, Logger())
    assert asked == []  # evaluations come between rollouts, on the updated model
    schedule.on_rollout_start(model, Logger())
    assert asked == [["random", "greedy", "racer"]]  # the evaluation plays every member
    assert schedule.stage_log[-1]["rows"] == {"random": 2, "greedy": 6, "racer": 12}
    by_row = groups.get_attr("opponent")
    assert [by_row[int(b)] for b in groups.bounds[:-1]] == groups.labels
    fixed = OpponentSchedule([members], groups, evaluate, ["random"], eval_freq=10,
                             eval_deals=5, total_timesteps=100)
    fixed.on_start(Model())
    model.num_timesteps = 10
    fixed.on_rollout_start(model, Logger())
    assert fixed.stage_log[-1]["rows"] == {"random": 8, "greedy": 6, "racer": 6}


def test_smoke_preset_gives_way_to_every_flag_given():
    from experiments.cli import given_fields, tyro_cli
    from experiments.ppo.args import SMOKE, Args

    def parse(*argv):
        return tyro_cli(Args, list(argv), prog="train_ppo", description="",
                        presets={"smoke": SMOKE})

    smoke = parse("--smoke")
    assert all(getattr(smoke, k) == v for k, v in SMOKE.items())
    assert parse().total_timesteps == Args().total_timesteps  # no preset without the flag
    # a flag given wins wherever it stands, even at the field's own default value
    for argv in (["--total-timesteps", "1000000", "--smoke"],
                 ["--smoke", "--total-timesteps=1000000"]):
        args = parse(*argv)
        assert args.total_timesteps == 1_000_000 and args.num_envs == SMOKE["num_envs"]
    assert parse("--smoke", "--no-tensorboard").tensorboard is False
    assert given_fields(Args, ["--no-tensorboard", "--seed", "3", "--", "--bc-steps"]) == {
        "tensorboard", "seed"}


#: What a --smoke run's folder holds: the --out help's list (tb/ with --tensorboard, and
#: checkpoints/ since the preset takes one at step 2,048 of 4,096).
SMOKE_FOLDER = {"config.json", "model.zip", "eval.json", "learning_curve.png", "tb",
                "checkpoints"}


def test_smoke_runs_the_whole_pipeline_into_the_documented_folder(tmp_path):
    from experiments.cli import field_help
    from experiments.ppo.args import Args

    out = tmp_path / "smoke"
    proc = _run("--smoke", "--out", str(out), "--no-progress-bar")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {p.name for p in out.iterdir()} == SMOKE_FOLDER
    documented = field_help(Args)["out"]
    assert all(name in documented for name in SMOKE_FOLDER)
    assert not [p for p in out.rglob("*") if p.is_dir() and not any(p.iterdir())], "empty folder"
    assert [p.name for p in (out / "checkpoints").iterdir()] == ["ppo_2048_steps.zip"]
    result = json.loads((out / "eval.json").read_text())
    assert result["config"]["smoke"] is True and result["final"]["timesteps"] == 4096
    assert [h["timesteps"] for h in result["history"]] == [0, 2048]
    assert result["config"]["bc_steps"] == 100 and result["config"]["behaviour_cloning"]
    # no checkpoint taken (an explicit flag over the preset): no checkpoints/ folder
    quiet = tmp_path / "no_checkpoint"
    proc = _run("--smoke", "--checkpoint-freq", "1000000", "--no-tensorboard", "--eval-freq", "0",
                "--out", str(quiet), "--no-progress-bar")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {p.name for p in quiet.iterdir()} == SMOKE_FOLDER - {"tb", "checkpoints"}
