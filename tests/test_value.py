"""The value network (agents.value), its data and trainer (experiments.value, train_value) and
the planner's use of it: the file read back as written, refused in one line when it is of
another kind or another observation, targets that hold by construction, a split of the data
into jobs (or Ray tasks) that changes nothing, a fit that finds a known function, and the
trainer's run folder and errors.

Everything is tiny (a few games, a few rollouts): what is tested does not depend on the size.
"""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from agents.planner import PlannerBot
from agents.value import (
    ValueFileError,
    ValueNetwork,
    card_difference,
    load_value,
    observation_layout,
    shipped_value_path,
)
from experiments.train_value import main
from experiments.value.data import (
    TARGETS,
    ValueData,
    collect_positions,
    data_jobs,
    play_value_jobs,
    rollout_targets,
)
from experiments.value.fit import fit_value, split_by_game
from spit_env import core, rules

TINY = dict(sources=("racer", "greedy"), rate=0.05, rollouts=3, game_rollouts=1, seed=4)
TINY_ARGS = ["--sources", "racer,greedy", "--games", "4", "--rate", "0.05", "--rollouts", "2",
             "--steps", "20", "--batch-size", "16", "--hidden", "8", "--max-game-ms", "60000",
             "--games-per-job", "2", "--holdout", "0.5", "--no-screen", "--quiet"]


def _net(rng, hidden=(5,), residual=False) -> ValueNetwork:
    sizes = [rules.OBS_DIM, *hidden, 1]
    weights = [rng.standard_normal((a, b)).astype(np.float32) * 0.1
               for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
    biases = [rng.standard_normal(b).astype(np.float32) for b in sizes[1:]]
    mean = rng.standard_normal(rules.OBS_DIM).astype(np.float32)
    scale = rng.random(rules.OBS_DIM).astype(np.float32)
    return ValueNetwork(weights, biases, mean, scale, {"target": "ahead", "residual": residual})


@pytest.fixture(scope="module")
def tiny():
    return ValueData.concat(play_value_jobs(data_jobs(4, 4), **TINY))


# --- the network and its file ----------------------------------------------------------------------
def test_the_forward_pass_is_the_perceptron_and_residual_adds_the_card_difference():
    rng = np.random.default_rng(0)
    net = _net(rng, hidden=(6, 4))
    obs = rng.random((7, rules.OBS_DIM)).astype(np.float32)
    h = (obs.astype(np.float64) - net.mean) * net.scale
    for w, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
        h = np.maximum(h @ w + b, 0)
    want = (h @ net.weights[-1] + net.biases[-1])[:, 0]
    assert np.allclose(net(obs), want, atol=1e-4)
    res = ValueNetwork(net.weights, net.biases, net.mean, net.scale, {"residual": True})
    assert np.allclose(res(obs) - net(obs), card_difference(obs), atol=1e-6)
    assert np.allclose(card_difference(obs), obs[:, rules.OBS["opp_cards_held"].start]
                       - obs[:, rules.OBS["self_cards_held"].start], atol=1e-7)


def test_the_file_is_read_back_as_written_and_written_the_same(tmp_path):
    net = _net(np.random.default_rng(1), hidden=(3, 2), residual=True)
    a, b = net.save(tmp_path / "a.npz"), net.save(tmp_path / "b.npz")
    assert a.read_bytes() == b.read_bytes()
    back = load_value(a)
    obs = np.random.default_rng(2).random((5, rules.OBS_DIM)).astype(np.float32)
    assert np.array_equal(back(obs), net(obs)) and back.residual and back.hidden == (3, 2)
    assert back.meta["observation"] == observation_layout() and back.meta["path"] == str(a)


def _rewrite(src, dst, change):
    """A copy of the value file ``src`` at ``dst`` with ``change(meta)`` applied to its meta."""
    with np.load(src) as f:
        arrays = {k: f[k] for k in f.files}
    meta = json.loads(str(arrays.pop("meta")))
    change(meta)
    np.savez(dst, meta=np.array(json.dumps(meta)), **arrays)
    return dst


@pytest.mark.parametrize("change, words", [
    (lambda m: m.update(observation=m["observation"][:-1]), ["width", str(rules.OBS_DIM),
                                                               "train_value"]),
    (lambda m: m["observation"].__setitem__(0, ["phase", 2]), ["width", "'phase'"]),
    (lambda m: m.update(version=99), ["version 99"]),
    (lambda m: m.update(format="something else"), ["not a value network"]),
])
def test_a_file_of_another_kind_or_observation_is_refused_in_one_line(tmp_path, change, words):
    good = _net(np.random.default_rng(3)).save(tmp_path / "good.npz")
    bad = _rewrite(good, tmp_path / "bad.npz", change)
    with pytest.raises(ValueFileError) as err:
        load_value(bad)
    message = str(err.value)
    assert "\n" not in message and str(bad) in message
    for w in words:
        assert w in message


def test_a_missing_or_foreign_file_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no value network file"):
        load_value(tmp_path / "none.npz")
    (tmp_path / "x.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueFileError, match="not a value network file"):
        load_value(tmp_path / "x.npz")
    np.savez(tmp_path / "y.npz", a=np.zeros(3))
    with pytest.raises(ValueFileError, match="no meta"):
        load_value(tmp_path / "y.npz")
    with pytest.raises(ValueError, match=f"width {rules.OBS_DIM}"):
        ValueNetwork([np.zeros((10, 1), np.float32)], [np.zeros(1, np.float32)],
                     np.zeros(10), np.ones(10))
    with pytest.raises(ValueError, match="shape"):
        _net(np.random.default_rng(0))(np.zeros((3, 7), np.float32))


def test_the_shipped_value_network_loads_by_name_and_plays():
    assert shipped_value_path().is_file(), "agents/models/value.npz is package data"
    net = load_value("value")
    assert net.meta["observation"] == observation_layout()
    planner = PlannerBot(rollouts=2, horizon_ms=500, leaf_value="value")
    assert isinstance(planner.leaf_value, ValueNetwork)
    with pytest.raises(ValueError, match="leaf_value"):
        PlannerBot(leaf_value=3)
    with pytest.raises(FileNotFoundError):
        PlannerBot(leaf_value="no/such/value.npz")


def test_the_leaf_value_values_only_the_rollouts_the_horizon_stops():
    """A leaf value of +-100 shows in a rollout's value only where the horizon stopped it."""
    st = core.init(None, 16, seed=5)
    seat = np.arange(16) % 2
    far = PlannerBot(rollouts=1, horizon_ms=600_000)
    plain = far.rollout(core.copy_rows(st), seat)
    assert np.all(np.abs(plain) <= 3), "no horizon: card difference and win bonus only"
    stopped = PlannerBot(rollouts=1, horizon_ms=300, leaf_value=lambda o: np.full(len(o), 100.0))
    v = stopped.rollout(core.copy_rows(st), seat)
    assert np.all(v == 100.0), "300 ms into the first round every rollout is stopped by it"


# --- the data --------------------------------------------------------------------------------------
def test_positions_and_targets_hold_what_they_say(tiny):
    n = len(tiny)
    assert n > 20 and tiny.obs.shape == (n, rules.OBS_DIM) and set(tiny.targets) == set(TARGETS)
    assert set(np.unique(tiny.source)) == {0, 1} and tiny.sources == ("racer", "greedy")
    assert set(np.unique(tiny.targets["outcome"])) <= {-2.0, 0.0, 2.0}
    for k in ("ahead", "round", "game"):
        assert np.isfinite(tiny.targets[k]).all()
    assert np.isfinite(tiny.round_se).all() and (tiny.round_se >= 0).all()
    # a game's positions share its outcome, each seat its own sign
    for g in np.unique(tiny.game_id):
        rows = tiny.game_id == g
        signed = tiny.targets["outcome"][rows] * np.where(tiny.seat[rows] == 0, 1, -1)
        assert np.unique(signed).size == 1
    # ordered by game, then time
    assert np.all(np.diff(tiny.game_id) >= 0)


def test_jobs_split_any_way_give_the_same_data(tiny):
    other = ValueData.concat(play_value_jobs(data_jobs(4, 1), **TINY))
    for name in ("obs", "seat", "game_id", "source", "clock_ms", "round_se"):
        assert np.array_equal(getattr(other, name), getattr(tiny, name), equal_nan=True), name
    for k in TARGETS:
        assert np.array_equal(other.targets[k], tiny.targets[k], equal_nan=True), k


def test_the_data_file_is_read_back_and_another_width_refused(tiny, tmp_path):
    tiny.save(tmp_path / "d.npz")
    back = ValueData.load(tmp_path / "d.npz")
    assert np.array_equal(back.obs, tiny.obs) and back.ahead_ms == tiny.ahead_ms
    assert all(np.array_equal(back.targets[k], tiny.targets[k], equal_nan=True) for k in TARGETS)
    with np.load(tmp_path / "d.npz") as f:
        arrays = {k: f[k] for k in f.files}
    arrays["obs"] = arrays["obs"][:, :-1]
    np.savez(tmp_path / "e.npz", **arrays)
    with pytest.raises(ValueError, match=f"width {rules.OBS_DIM - 1}"):
        ValueData.load(tmp_path / "e.npz")


def test_a_target_one_ms_ahead_is_the_card_difference_of_the_next_epoch():
    got = collect_positions(["racer"], np.arange(2), rate=0.05, seed=1)
    state, seat = got[0], got[1]
    t = rollout_targets(state, seat, rollouts=2, game_rollouts=0, ahead_ms=1)
    assert np.isnan(t["game"]).all()
    now = card_difference(core.observe(state, np.arange(seat.size), seat))
    # one epoch later a card may have landed: a few cards at most, and mostly none
    change = np.abs(t["ahead"] - now)
    assert np.all(change < 0.2) and np.mean(change < 1e-6) > 0.5


def test_the_data_on_ray_is_the_local_data(tiny):
    pytest.importorskip("ray")
    from functools import partial

    from experiments.cluster.connect import ray_session
    from experiments.cluster.tasks import run_jobs_on_ray

    with ray_session(None, num_cpus=2):
        parts = run_jobs_on_ray(data_jobs(4, 2), partial(play_value_jobs, **TINY))
    on_ray = ValueData.concat(parts)
    assert np.array_equal(on_ray.obs, tiny.obs)
    assert all(np.array_equal(on_ray.targets[k], tiny.targets[k], equal_nan=True)
               for k in TARGETS)


# --- the fit ---------------------------------------------------------------------------------------
def test_the_fit_finds_a_known_function_on_held_out_games():
    rng = np.random.default_rng(0)
    # 282 noise features: fewer positions than ~10,000 and a 32x32 network learns the noise
    n = 10_000
    obs = rng.random((n, rules.OBS_DIM)).astype(np.float32)
    y = obs[:, 5] - 0.5 * obs[:, 7] + 0.5 * np.sin(3 * obs[:, 9]) + card_difference(obs)
    y = y.astype(np.float32)
    i = np.zeros(n, np.int64)
    data = ValueData(obs, i, np.arange(n) // 10, i, i, {k: y for k in TARGETS}, y, ("x",))
    train, held = split_by_game(data, 0.2, seed=0)
    assert not set(data.game_id[train]) & set(data.game_id[held]), "whole games held out"
    for residual in (True, False):
        net, losses = fit_value(data.take(train), "ahead", residual=residual, hidden=(32, 32),
                                steps=1500, seed=0)
        err = net(obs[held]) - y[held]
        assert 1 - err.var() / y[held].var() > 0.85 and losses[-1] < losses[0]
        assert net.residual is residual and net.meta["target"] == "ahead"


# --- the trainer -----------------------------------------------------------------------------------
def test_a_tiny_run_fills_the_documented_folder(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["--out", str(out), *TINY_ARGS]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["calibration.png", "config.json", "data.npz", "report.json", "value.npz"]
    report = json.loads((out / "report.json").read_text())
    assert report["holdout"]["games"] >= 1 and "ahead" in report["holdout"]["explained"]
    net = load_value(out / "value.npz")
    assert net.meta["target"] == "ahead" and net.residual
    printed = capsys.readouterr().out
    assert "held out:" in printed and all(f"wrote {out / n}" in printed for n in names)
    # a fit on that data again: the same network, array for array (only the command differs)
    again = tmp_path / "again"
    assert main(["--out", str(again), "--data", str(out / "data.npz"), *TINY_ARGS]) == 0
    refit = load_value(again / "value.npz")
    for name in ("weights", "biases"):
        assert all(np.array_equal(a, b) for a, b in zip(getattr(refit, name), getattr(net, name), strict=True))
    assert np.array_equal(refit.mean, net.mean) and np.array_equal(refit.scale, net.scale)
    assert "--data" in refit.meta["command"] and "--data" not in net.meta["command"]
    drop = {"command", "path"}
    assert {k: v for k, v in refit.meta.items() if k not in drop} == \
        {k: v for k, v in net.meta.items() if k not in drop}
    with zipfile.ZipFile(out / "value.npz") as zf:
        assert "meta.npy" in zf.namelist()


@pytest.mark.parametrize("argv, words", [
    (["--rate", "0"], ["--rate", "(0, 1]"]),
    (["--rollouts", "0"], ["--rollouts", "1..4096"]),
    (["--ahead-ms", "0"], ["--ahead-ms"]),
    (["--hidden", "0"], ["--hidden", "positive layer sizes"]),
    (["--sources", "gredy"], ["--sources", "greedy"]),
    (["--latency", "warp"], ["--latency"]),
    (["--data", "no/such.npz"], ["--data", "no file"]),
    (["--holdout", "0.9"], ["--holdout"]),
    (["--target", "game", "--game-rollouts", "0"], ["--game-rollouts"]),
    (["--address", "auto"], ["--address", "--ray"]),
])
def test_bad_input_is_refused_before_any_work(tmp_path, capsys, argv, words):
    out = tmp_path / "run"
    assert main(["--out", str(out), *TINY_ARGS, *argv]) == 2
    message = capsys.readouterr().err
    assert message.startswith("python -m experiments.train_value: error: ")
    assert message.count("\n") == 1
    for w in words:
        assert w in message
    assert not out.exists()


def test_a_finished_run_is_not_overwritten(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "value.npz").write_bytes(b"x")
    assert main(["--out", str(out), *TINY_ARGS]) == 2
    assert "already holds" in capsys.readouterr().err
