"""Expert iteration (``python -m experiments.expert_iteration``, ``experiments/expert/``).

A tiny run end to end (round 0 and one planner round, in seconds), its resumption, each bad
input, the soft targets' maths, that no teacher move is dropped, and that a run is a function of
its seed.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import agents
from agents.network import NetworkPolicy, load_model
from agents.planner import Plan, PlannerBot
from experiments.expert.network import OPTIONS, new_network, value_targets
from experiments.expert.positions import Positions, collect, make_env, split_idx, split_rows
from experiments.expert.targets import one_hot_targets, planner_targets, softmax_targets
from experiments.expert.teachers import bot_teacher, planner_teacher
from experiments.expert_iteration import main
from spit_env import SpitVecEnv
from spit_env.config import SpitConfig
from spit_env.policy import make_policy
from spit_env.rules import N_ACTIONS, WAIT

#: The smallest run that goes through every step: short games (truncated after 20 s of game
#: time), a handful of labels, two rollouts, four evaluation deals.
TINY = ["--num-envs", "8", "--labels", "24", "--bc-labels", "48", "--fit-steps", "5",
        "--bc-fit-steps", "5", "--fit-batch-size", "8", "--rollouts", "2", "--horizon-ms", "400",
        "--eval-deals", "2", "--net-arch", "16", "--max-game-ms", "20000", "--quiet",
        "--opponents", "racer:1,self:1"]


def _rows(out):
    with (out / "rounds.csv").open() as fh:
        return list(csv.DictReader(fh))


def test_smoke_run_fills_the_documented_folder_and_a_flag_given_wins(tmp_path):
    from experiments.cli import field_help
    from experiments.expert.args import SMOKE, Args

    out = tmp_path / "smoke"
    # --eval-deals given: it wins over the preset's 10
    assert main(["--smoke", "--eval-deals", "4", "--out", str(out), "--quiet"]) == 0
    entries = {"config.json", "state.json", "rounds.csv", "rounds.json", "curve.png",
               "model.zip", "round_0", "round_1"}
    assert {p.name for p in out.iterdir()} == entries
    documented = field_help(Args)["out"]
    assert all(name in documented for name in entries - {"round_0", "round_1"})
    assert "round_K/" in documented
    assert not [p for p in out.rglob("*") if p.is_dir() and not any(p.iterdir())], "empty folder"
    config = json.loads((out / "config.json").read_text())
    assert config["eval_deals"] == 4 and config["labels"] == SMOKE["labels"]
    assert [r["round"] for r in _rows(out)] == ["0", "1"]


def test_tiny_run_end_to_end(tmp_path):
    out = tmp_path / "run"
    assert main(["--rounds", "1", "--out", str(out), *TINY]) == 0
    rows = _rows(out)
    assert [r["round"] for r in rows] == ["0", "1"]
    assert [r["teacher"] for r in rows] == ["racer", "planner"]
    for r in rows:
        assert int(r["labels"]) >= 24
        assert 0 <= float(r["win_rate_racer"]) <= 1
        assert float(r["ci_low_racer"]) <= float(r["win_rate_racer"]) <= float(r["ci_high_racer"])
        assert 0 <= float(r["agreement"]) <= 1
    assert int(rows[1]["rollouts"]) > 0
    assert json.loads((out / "state.json").read_text()) == {"finished_round": 1}
    assert (out / "curve.png").stat().st_size > 0
    # the package's model format: the network plays every legal move, WAIT included
    model = load_model(out / "model.zip")
    assert {k: model.policy.spit_options[k] for k in OPTIONS} == OPTIONS
    # saved with the project's PPO hyperparameters, for train_ppo --resume to go on with
    from experiments.ppo.args import Args
    from experiments.ppo.hyperparameters import PPO_DEFAULTS

    assert (model.n_steps, model.batch_size, model.gamma, model.ent_coef) == (
        PPO_DEFAULTS.n_steps, PPO_DEFAULTS.batch_size, PPO_DEFAULTS.gamma, PPO_DEFAULTS.ent_coef)
    assert (Args().n_steps, Args().batch_size, Args().gamma) == (model.n_steps, model.batch_size,
                                                                 model.gamma)
    policy = agents.make("network", path=str(out / "model.zip"))
    env = SpitVecEnv(num_envs=4, opponent="racer", seed=3)
    obs = env.reset()
    moves = policy(obs, env.action_masks(), env.learner_rng())
    assert env.action_masks()[np.arange(4), moves].all()
    # a run of this pipeline is a source of the shipped model's published results
    from experiments.shipped_results import main as shipped_results

    results = tmp_path / "shipped"
    assert shipped_results(["--run", str(out), "--command", "expert_iteration ...", "--deals", "1",
                            "--out", str(results), "--no-progress-bar"]) == 0
    published = json.loads(results.with_suffix(".json").read_text())
    rounds = json.loads((out / "rounds.json").read_text())
    assert published["training"]["pipeline"] == "expert_iteration"
    assert published["training"]["rounds"] == rounds
    assert published["model"]["net_arch"] == [16]
    assert published["model"]["labels"] == sum(r["labels"] for r in rounds)
    assert published["model"]["train_minutes"] == round(sum(r["seconds"] for r in rounds) / 60, 1)
    assert all(r["games"] == 2 for r in published["results"].values())
    page = results.with_suffix(".md").read_text()
    for r in rounds:
        assert f"| {r['round']} | {r['teacher']} | {r['labels']:,} |" in page


def test_resume_continues_the_same_run(tmp_path):
    """A run stopped part-way through a round resumes from its last finished round, replays the
    round it was in from its start, and ends as the same run played in one go."""
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    assert main(["--rounds", "2", "--out", str(whole), *TINY]) == 0
    assert main(["--rounds", "1", "--out", str(parts), *TINY]) == 0
    # stopped during round 1: its folder half written, state.json still at round 0
    (parts / "state.json").write_text(json.dumps({"finished_round": 0}))
    (parts / "round_1" / "model.zip").write_bytes(b"half")
    assert main(["--rounds", "2", "--out", str(parts), "--resume", "--quiet"]) == 0
    a, b = _rows(whole), _rows(parts)
    assert [r["round"] for r in b] == ["0", "1", "2"]
    same = ["labels", "games", "rollouts", "agreement", "policy_loss", "win_rate_racer"]
    assert [[r[k] for k in same] for r in a] == [[r[k] for k in same] for r in b]
    assert (whole / "model.zip").read_bytes() == (parts / "model.zip").read_bytes()


@pytest.mark.parametrize("argv, words", [
    (["--opponents", "racr:1,self:1"], ["--opponents", "'racr'", "did you mean 'racer'"]),
    (["--opponents", "racer:-1"], ["--opponents", ">= 0"]),
    (["--bc-teacher", "greedyy"], ["--bc-teacher", "did you mean 'greedy'"]),
    (["--rollout-policy", "rcer"], ["--rollout-policy", "network"]),
    (["--eval-opponents", "racer,chian"], ["--eval-opponents", "did you mean 'chain'"]),
    (["--temperature", "0"], ["--temperature", "> 0"]),
    (["--temperature", "-0.5"], ["--temperature", "> 0"]),
    (["--rounds", "0"], ["--rounds", ">= 1"]),
    (["--labels", "7"], ["--labels", "--num-envs"]),
    (["--bc-labels", "3"], ["--bc-labels", "--num-envs"]),
    (["--fit-batch-size", "100"], ["--fit-batch-size", "at most"]),
    (["--rollouts", "0"], ["--rollouts", "1..4096"]),
    (["--horizon-ms", "0"], ["--horizon-ms", "1..600000"]),
    (["--holdout", "0.9"], ["--holdout", "[0, 0.5]"]),
    (["--eval-seed", "0"], ["--eval-seed", "differ"]),
    (["--net-arch", "16,x"], ["--net-arch"]),
    (["--eval-latency", "warp"], ["--eval-latency"]),
    (["--resume"], ["--resume", "no run"]),
])
def test_bad_input_is_refused_before_any_work(tmp_path, capsys, argv, words):
    out = tmp_path / "run"
    assert main(["--out", str(out), *TINY, *argv]) == 2
    message = capsys.readouterr().err
    assert message.startswith("python -m experiments.expert_iteration: error: ")
    for w in words:
        assert w in message
    assert not out.exists()  # nothing started


def test_a_finished_run_is_not_overwritten(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "state.json").write_text(json.dumps({"finished_round": 0}))
    assert main(["--out", str(out), *TINY]) == 2
    assert "--resume" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["state.json"]


def test_help(capsys):
    with pytest.raises(SystemExit) as err:
        main(["--help"])
    assert err.value.code == 0
    text = capsys.readouterr().out
    for name in ("--net-arch", "--opponents", "--eval-opponents", "--resume", "--no-aggregate"):
        assert name in text


def test_a_value_the_flag_type_refuses_exits_with_status_2(tmp_path):
    with pytest.raises(SystemExit) as err:  # tyro's own parse error
        main(["--out", str(tmp_path / "run"), "--rounds", "two"])
    assert err.value.code == 2
    assert not (tmp_path / "run").exists()


def test_the_documented_command_parses_as_before():
    """Comma-separated --net-arch, a weighted --opponents mix, comma-separated --eval-opponents."""
    from experiments.cli import tyro_cli
    from experiments.expert.args import Args

    args = tyro_cli(Args, ["--rounds", "2", "--rollouts", "64", "--confidence", "2", "--labels",
                           "48000", "--fit-steps", "3000", "--net-arch", "128,128", "--out",
                           "runs/xit128", "--opponents", "racer:2,greedy:1,self:1",
                           "--eval-opponents", "racer,greedy", "--no-aggregate"],
                    prog="x", description="")
    assert (args.rounds, args.rollouts, args.confidence, args.labels, args.fit_steps) == (
        2, 64, 2.0, 48000, 3000)
    assert args.arch == [128, 128] and args.net_arch == "128,128"
    assert args.opponent_mix == [("racer", 2.0), ("greedy", 1.0), ("self", 1.0)]
    assert args.eval_list == ["racer", "greedy"] and args.aggregate is False
    assert str(args.out) == "runs/xit128"


def test_the_choices_are_the_pipelines_own():
    import typing

    from experiments.expert.args import Args
    from experiments.expert.network import VALUE_TARGETS
    from experiments.expert.targets import SCORES

    hints = typing.get_type_hints(Args)
    assert set(typing.get_args(hints["target_score"])) == set(SCORES)
    assert set(typing.get_args(hints["value_target"])) == set(VALUE_TARGETS)


def test_a_run_folder_of_the_earlier_command_line_resumes(tmp_path):
    """A config.json written by the argparse command line (the same keys, every value as it
    parsed them) is resumed with its own settings."""
    from experiments.expert.args import Args, check, config_of

    out = tmp_path / "run"
    out.mkdir()
    saved = {"seed": 3, "num_envs": 8, "labels": 24, "bc_teacher": "racer", "bc_labels": 48,
             "opponents": "racer:1,self:1", "rollouts": 2, "horizon_ms": 400,
             "rollout_policy": "racer", "confidence": 2.0, "win_weight": 2.0,
             "temperature": 0.01, "target_score": "lower", "target_margin": 0.01,
             "value_target": "outcome", "aggregate": True, "fit_steps": 5, "bc_fit_steps": 5,
             "fit_batch_size": 8, "learning_rate": 0.0005, "value_coef": 0.5, "holdout": 0.1,
             "net_arch": "16", "eval_deals": 2, "eval_opponents": "racer", "eval_seed": 2024,
             "eval_latency": "club", "max_game_ms": 20000, "eval_batch": 512}
    (out / "config.json").write_text(json.dumps(saved))
    (out / "state.json").write_text(json.dumps({"finished_round": 0}))
    args = check(Args(out=out, resume=True, rounds=4, seed=0, confidence=9.0, torch_threads=2))
    assert list(config_of(args).items()) == list(saved.items())  # its own settings, in order
    assert (args.rounds, args.torch_threads, args.out) == (4, 2, out)  # the resumable flags


# --- targets -------------------------------------------------------------------------------------
def test_softmax_targets_maths():
    rows = np.array([0, 0, 0, 1, 1])
    acts = np.array([0, 3, 7, 5, 9])
    diff = np.array([0.0, 0.1, -0.1, 0.0, 0.2])
    t = softmax_targets(3, rows, acts, diff, 0.1)
    e = np.exp([0.0, 1.0, -1.0])
    np.testing.assert_allclose(t[0, [0, 3, 7]], e / e.sum(), rtol=1e-6)
    np.testing.assert_allclose(t[1, [5, 9]], np.exp([0, 2]) / np.exp([0, 2]).sum(), rtol=1e-6)
    assert t[2].sum() == 0  # no candidate
    off = np.ones((3, N_ACTIONS), bool)
    off[0, [0, 3, 7]] = off[1, [5, 9]] = False
    assert (t[off] == 0).all()
    np.testing.assert_allclose(t[:2].sum(axis=1), 1, rtol=1e-6)
    # a low temperature: the best mean; a high one: near uniform
    cold = softmax_targets(1, rows[:3], acts[:3], diff[:3], 1e-4)
    assert cold[0, 3] == pytest.approx(1.0)
    hot = softmax_targets(1, rows[:3], acts[:3], diff[:3], 1e4)
    np.testing.assert_allclose(hot[0, [0, 3, 7]], 1 / 3, rtol=1e-3)
    # large differences do not overflow
    big = softmax_targets(1, np.array([0, 0]), np.array([1, 2]), np.array([0.0, 500.0]), 0.01)
    assert np.isfinite(big).all() and big[0, 2] == pytest.approx(1.0)
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="temperature"):
            softmax_targets(1, rows[:3], acts[:3], diff[:3], bad)


def test_planner_targets_follow_the_planned_rows():
    i = np.array
    plan = Plan(actions=i([4, 0, 9]), reference=i([0, 0, 5]), planned=i([True, False, True]),
                cand_row=i([0, 0, 2, 2]), cand_action=i([0, 4, 5, 9]),
                mean_diff=i([0.0, 0.05, 0.0, -0.05]), se=i([0.0, 0.01, 0.0, 0.01]),
                n_rollouts=i([4, 4, 4, 4]), value=i([0.3, np.nan, -0.2]))
    t = planner_targets(plan, 0.05, "mean")
    assert t.shape == (2, N_ACTIONS)
    e = np.exp([0.0, 1.0])
    np.testing.assert_allclose(t[0, [0, 4]], e / e.sum(), rtol=1e-6)
    np.testing.assert_allclose(t[1, [5, 9]], e[::-1] / e.sum(), rtol=1e-6)
    # "lower": the gain less confidence standard errors, the reference at 0
    low = planner_targets(plan, 0.05, "lower", confidence=2.0)
    e = np.exp([0.0, (0.05 - 2 * 0.01) / 0.05])
    np.testing.assert_allclose(low[0, [0, 4]], e / e.sum(), rtol=1e-6)
    e = np.exp([0.0, (-0.05 - 2 * 0.01) / 0.05])
    np.testing.assert_allclose(low[1, [5, 9]], e / e.sum(), rtol=1e-6)
    # a margin: a move as good as the reference on every future leaves it e^(margin/T) times
    # the mass of the reference
    tied = planner_targets(plan, 0.05, "mean", margin=0.05)
    e = np.exp([0.0, 0.0])
    np.testing.assert_allclose(tied[0, [0, 4]], e / e.sum(), rtol=1e-6)
    plan.se = i([0.0, np.inf, 0.0, 0.01])  # a move without a standard error gets no mass
    assert planner_targets(plan, 0.05, "lower")[0, 4] == 0
    with pytest.raises(ValueError, match="score"):
        planner_targets(plan, 0.05, "best")
    assert one_hot_targets(i([2, WAIT]))[1, WAIT] == 1


def test_value_targets():
    p = Positions.empty()
    p.plan_value = np.array([0.5, np.nan, 0.2], np.float32)
    p.outcome = np.array([1.0, -1.0, np.nan], np.float32)
    np.testing.assert_allclose(value_targets(p, "outcome"), [1, -1, np.nan])
    np.testing.assert_allclose(value_targets(p, "plan"), [0.5, -1, 0.2])
    np.testing.assert_allclose(value_targets(p, "mean"), [0.75, -1, 0.2])


def test_split_idx():
    groups = split_idx(10, [2, 1, 1, 0])
    assert [g.size for g in groups] == [5, 3, 2, 0] or [g.size for g in groups] == [5, 2, 3, 0]
    assert np.array_equal(np.concatenate(groups), np.arange(10))
    assert all(g.dtype == np.int64 for g in groups)
    with pytest.warns(DeprecationWarning, match="split_rows is deprecated"):
        old = split_rows(10, [2, 1, 1, 0])
    assert all(np.array_equal(a, b) for a, b in zip(old, groups, strict=True))


# --- labels ---------------------------------------------------------------------------------------
def _short_games():
    return SpitConfig(max_game_ms=20_000)


def test_no_teacher_move_is_dropped():
    """Every decision with a choice is labelled, WAITs on purpose included, all playable."""
    racer = make_policy("racer")
    seen = {"choices": 0}

    def counting(obs, masks, rng, table):
        seen["choices"] += int((masks.sum(axis=1) >= 2).sum())
        return bot_teacher(racer)(obs, masks, rng, table)

    env = make_env(16, 7, [("racer", 1), ("self", 1)], racer, _short_games())
    pos, info = collect(env, racer, counting, 400, show_progress=False)
    assert len(pos) == seen["choices"] == info["labels"]
    assert (pos.masks.sum(axis=1) >= 2).all()
    assert pos.masks[np.arange(len(pos)), pos.teacher].all()
    assert (pos.teacher == WAIT).any()  # racer WAITs on purpose, and the label is kept
    assert not np.isnan(pos.outcome).any()  # every labelled game was played to its end
    # the network's playing masks allow every teacher move (mask_wait off)
    model = new_network([16], seed=0, learning_rate=1e-3)
    import torch

    allowed = model.policy.playing_masks(torch.as_tensor(pos.obs),
                                         torch.as_tensor(pos.masks)).numpy()
    assert allowed[np.arange(len(pos)), pos.teacher].all()


def test_planner_labels_are_the_networks_positions():
    model = new_network([16], seed=1, learning_rate=1e-3)
    net = NetworkPolicy(model)
    planner = PlannerBot(rollouts=2, horizon_ms=300, reference=net)
    stats = {}
    env = make_env(8, 11, [("racer", 1)], net, _short_games())
    pos, _ = collect(env, net, planner_teacher(planner, 0.05, stats=stats), 30, show_progress=False)
    assert (pos.targets[~pos.masks] == 0).all()
    np.testing.assert_allclose(pos.targets.sum(axis=1), 1, rtol=1e-5)
    assert pos.masks[np.arange(len(pos)), pos.teacher].all()
    # the reference move is the network's own argmax: the positions are the network's
    np.testing.assert_array_equal(pos.reference, net(pos.obs, pos.masks, None))
    assert np.all(np.abs(pos.plan_value[~np.isnan(pos.plan_value)]) <= 1)
    # the planner's gains are kept for every legal move, 0 for the reference move
    assert (np.isnan(pos.gain) == ~pos.masks).all()
    np.testing.assert_array_equal(pos.gain[np.arange(len(pos)), pos.reference], 0)
    assert stats["rollouts"] > 0


def test_labels_depend_on_the_seed_alone():
    racer = make_policy("racer")

    def run(seed):
        env = make_env(8, seed, [("racer", 1), ("greedy", 1)], racer, _short_games())
        return collect(env, racer, bot_teacher(racer), 100, show_progress=False)[0]

    a, b, c = run(5), run(5), run(6)
    for name in ("obs", "masks", "teacher", "outcome"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert len(a) != len(c) or not np.array_equal(a.obs, c.obs)


def test_without_finishing_the_open_games_have_no_outcome():
    racer = make_policy("racer")
    env = make_env(8, 2, [("racer", 1)], racer, SpitConfig())
    pos, info = collect(env, racer, bot_teacher(racer), 40, finish=False, show_progress=False)
    assert np.isnan(pos.outcome).all()  # no 30-min game ends within 40 decisions of 8 rows
    assert info["games"] == 0
