"""The screen (agents.screen, experiments/screen.py): a truth set built and read back, scores that
hold by construction, a Ray build equal to a local one byte for byte, and clear errors.

Builds are tiny (two sources, a few positions, 8 rollouts per move): what they test does not
depend on the size. The shipped set is read as users read it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from agents import screen
from agents.screen.calibration import fit_line
from experiments.screen import PUBLISHED
from spit_env import core, rules

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(per_source=4, games=1, rollouts=8, seed=3, sources=("racer", "greedy"))
TINY_ARGS = ["--per-source", "4", "--games", "1", "--rollouts", "8", "--seed", "3",
             "--sources", "racer,greedy", "--quiet"]


@pytest.fixture(scope="module")
def tiny():
    truth, stats = screen.build_truth(**TINY, positions_per_job=3)
    return truth


def _run(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "experiments.screen", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


class _Lookup:
    """A batched policy that plays, at each position, the move given for its observation."""

    def __init__(self, truth, moves):
        self.moves = {o.tobytes(): int(m) for o, m in zip(truth.positions.obs, moves,
                                                            strict=True)}

    def __call__(self, observations, action_masks, rng):
        return np.array([self.moves[o.tobytes()] for o in observations], np.int64)


# --- the truth set ----------------------------------------------------------------------------------
def test_a_tiny_build_holds_what_it_says(tiny):
    pos = tiny.positions
    assert tiny.size == pos.size == 8 and tiny.meta["counts"] == {"racer": 4, "greedy": 4}
    assert (pos.masks.sum(axis=1) >= 2).all()
    every = np.arange(pos.size)
    assert np.array_equal(core.observe(pos.state, every, pos.seat), pos.obs)
    legal = np.isfinite(tiny.diff)
    assert np.array_equal(legal, pos.masks) and np.array_equal(np.isfinite(tiny.se), pos.masks)
    assert (tiny.diff[every, tiny.racer_move] == 0).all() and (tiny.se[every, tiny.racer_move] == 0).all()
    others = legal.copy()
    others[every, tiny.racer_move] = False
    assert (tiny.se[others] > 0).all()  # rollouts that vary: no two moves share every outcome
    assert tiny.meta["max_simulated_ms"] < screen.truth.HORIZON_MS  # every rollout ended itself
    assert len(set(tiny.policy_key.tolist())) == tiny.size
    # the rollouts' keys are not the players' streams
    assert not set(tiny.truth_key.tolist()) & set(tiny.policy_key.tolist())


def test_values_do_not_depend_on_the_positions_valued_together(tiny):
    def jobs(size):
        return [screen.TruthJob(a, tiny.positions.take(np.arange(a, min(a + size, 8))),
                                tiny.truth_key[a:a + size], tiny.racer_move[a:a + size])
                for a in range(0, 8, size)]

    alone = screen.value_jobs(jobs(1), rollouts=8)
    together = screen.value_jobs(jobs(8), rollouts=8)
    for name in ("diff", "se", "value"):
        one = np.concatenate([o[name] for o in alone])
        assert np.array_equal(one, together[0][name], equal_nan=True), name
        assert np.array_equal(one, getattr(tiny, name), equal_nan=True), name


def test_the_file_is_read_back_as_written_and_written_the_same(tiny, tmp_path):
    a = screen.save_truth(tiny, tmp_path / "a.npz")
    back = screen.load_truth(a)
    b = screen.save_truth(back, tmp_path / "b.npz")
    assert a.read_bytes() == b.read_bytes()
    assert back.meta == json.loads(json.dumps(tiny.meta))
    for name in ("policy_key", "truth_key", "racer_move", "diff", "se", "value"):
        assert np.array_equal(getattr(back, name), getattr(tiny, name), equal_nan=True), name
    assert np.array_equal(back.positions.obs, tiny.positions.obs)


def test_a_second_build_writes_the_same_bytes(tiny, tmp_path):
    again, _ = screen.build_truth(**TINY, positions_per_job=8)
    assert (screen.save_truth(again, tmp_path / "b.npz").read_bytes()
            == screen.save_truth(tiny, tmp_path / "a.npz").read_bytes())


def test_a_build_on_ray_writes_the_same_bytes_as_a_local_one(tiny, tmp_path):
    pytest.importorskip("ray")
    from experiments.cluster.connect import ray_session
    from experiments.cluster.tasks import run_jobs_on_ray

    with ray_session(None, num_cpus=2) as ray:
        on_ray, _ = screen.build_truth(**TINY, positions_per_job=2, runner=run_jobs_on_ray)
        assert ray.is_initialized()
    assert not ray.is_initialized(), "the session must stop the local Ray it started"
    assert (screen.save_truth(on_ray, tmp_path / "ray.npz").read_bytes()
            == screen.save_truth(tiny, tmp_path / "local.npz").read_bytes())


# --- the score ---------------------------------------------------------------------------------------
def test_racer_scores_zero_gain_and_no_departure(tiny):
    s = screen.score("racer", tiny)
    assert s.gain == 0 and s.departures == 0 and s.departure_rate == 0
    assert s.regret == pytest.approx(s.available) and s.available > 0


def test_racer_scores_zero_on_the_shipped_set():
    truth = screen.load_truth()  # the shipped file, as current as the core and racer
    s = screen.score("racer", truth)
    assert s.decisions == truth.size >= 1000
    assert s.gain == 0 and s.departures == 0


def test_the_best_move_captures_all_of_the_gain(tiny):
    best = np.nanargmax(tiny.diff, axis=1)
    best = np.where(tiny.best_gain > 0, best, tiny.racer_move)
    s = screen.score(_Lookup(tiny, best), tiny)
    assert s.share == pytest.approx(1.0) and s.regret == pytest.approx(0.0, abs=1e-9)
    assert s.precision == 1.0 and s.departures == int((tiny.best_gain > 0).sum()) > 0
    worst = np.nanargmin(tiny.diff, axis=1)
    w = screen.score(_Lookup(tiny, worst), tiny)
    assert w.gain < 0 and w.precision == 0.0
    d, se = screen.paired_difference(s, w)
    assert d == pytest.approx(s.gain - w.gain) and se > 0


def test_planners_and_budgets_play_on_the_public_table(tiny):
    s = screen.score("planner:rollouts=4:horizon_ms=1000", tiny, chunk=3)
    assert s.label == "planner:rollouts=4:horizon_ms=1000" and s.decisions == 8
    assert s.cpu_s > 0 and np.isfinite(s.gains).all()
    again = screen.score("planner:rollouts=4:horizon_ms=1000", tiny, chunk=8)
    assert np.array_equal(again.moves, s.moves)  # each position's own stream


def test_player_specs():
    p = screen.parse_player("planner@club:rollouts=8:horizon_ms=2000:racing=2")
    assert p.policy == "planner" and p.latency is not None
    assert p.kwargs == {"rollouts": 8, "horizon_ms": 2000, "racing": 2}
    with pytest.raises(ValueError, match="NAME:key=value"):
        screen.parse_player("planner:rollouts")
    assert "rollouts" in screen.player_problem("planner:rollouts=0")
    assert "unknown policy" in screen.player_problem("nobody")
    assert screen.player_problem("greedy") is None


def test_fit_line_recovers_a_line():
    x = np.array([-0.02, -0.01, 0.01, 0.02, 0.03])
    y = 0.5 + 3.0 * x
    fit = fit_line(x, y, np.full(5, 0.01), through=(0.0, 0.5))
    assert fit["slope"] == pytest.approx(3.0) and fit["r2"] == pytest.approx(1.0)
    free = fit_line(x, y + 0.01, np.full(5, 0.01))
    assert free["intercept"] == pytest.approx(0.51) and free["dof"] == 3
    # an error in x widens each point by the slope times it
    both = fit_line(x, y + np.array([0.01, -0.01, 0.0, 0.01, -0.01]), np.full(5, 0.01),
                    xerr=np.full(5, 0.01 / 3.0), through=(0.0, 0.5))
    assert both["point_sd"] == pytest.approx([np.hypot(0.01, both["slope"] * 0.01 / 3.0)] * 5)


# --- errors -----------------------------------------------------------------------------------------
def test_a_file_of_another_version_or_kind_is_refused_in_one_line(tiny, tmp_path):
    old = screen.save_truth(replace(tiny, meta={**tiny.meta, "version": "0"}), tmp_path / "v0.npz")
    with pytest.raises(screen.TruthFileError, match="version '0', this screen reads version '1'"):
        screen.load_truth(old)
    text = tmp_path / "text.npz"
    text.write_text("not a truth set")
    with pytest.raises(screen.TruthFileError, match="not a truth set file"):
        screen.load_truth(text)
    other = tmp_path / "other.npz"
    np.savez(other, x=np.zeros(3))
    with pytest.raises(screen.TruthFileError, match="not a truth set file"):
        screen.load_truth(other)
    changed = tiny.positions.obs.copy()
    changed[0, 0] += 1
    stale = replace(tiny, positions=replace(tiny.positions, obs=changed))
    with pytest.raises(screen.TruthFileError, match="differ from this core's"):
        screen.load_truth(screen.save_truth(stale, tmp_path / "stale.npz"))
    res = _run("--truth", str(old), "--players", "racer", "--quiet")
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 1 and len(lines) == 1 and "--truth" in lines[0] and "version" in lines[0]


@pytest.mark.parametrize(("args", "named"), [
    (["--players", "racer,nobody"], "unknown policy 'nobody'"),
    (["--players", "planner:rollouts=0"], "rollouts"),
    (["--build"], "--build needs --out"),
    (["--build", "--out", "x.npz", "--rollouts", "1"], "--rollouts"),
    (["--ray"], "--build"),
    (["--build", "--out", "x.npz", "--address", "nowhere"], "--address"),
])
def test_bad_arguments_get_a_one_line_error(args, named):
    res = _run(*args)
    assert res.returncode == 2 and named in res.stderr.strip().splitlines()[-1], res.stderr


# --- the script ----------------------------------------------------------------------------------
def test_the_script_builds_and_scores(tmp_path):
    out = tmp_path / "truth.npz"
    res = _run("--build", "--out", str(out), *TINY_ARGS)
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"wrote {out}" in res.stdout and "8 positions" in res.stdout
    truth = screen.load_truth(out)
    assert truth.meta["command"] == ("python -m experiments.screen --build --per-source 4 "
                                     "--games 1 --rollouts 8 --seed 3 --sources racer,greedy")
    assert truth.meta["commit"]
    res = _run("--truth", str(out), "--players", "racer,greedy,planner-fast", "--json",
               str(tmp_path / "s.json"))
    assert res.returncode == 0, res.stderr[-3000:]
    assert "planner-fast" in res.stdout and f"wrote {tmp_path / 's.json'}" in res.stdout
    assert "screen" in res.stderr  # progress goes to stderr
    saved = json.loads((tmp_path / "s.json").read_text())
    assert [s["label"] for s in saved["scores"]] == ["racer", "greedy", "planner-fast"]
    assert saved["scores"][0]["gain"] == 0 and saved["truth"]["positions"] == 8
    assert rules.N_ACTIONS == truth.diff.shape[1]
    res = _run("--calibrate", "--truth", str(out), "--quiet", "--json", str(tmp_path / "c.json"),
               "--plot", str(tmp_path / "c.png"))
    assert res.returncode == 0, res.stderr[-3000:]
    cal = json.loads((tmp_path / "c.json").read_text())
    assert len(cal["points"]) == len(PUBLISHED) and cal["fit"]["dof"] == len(PUBLISHED) - 1
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
