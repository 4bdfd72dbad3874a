"""A person's latency as a model (spit_env/latency_fit.py): the shifted log-normal of the presets'
family, its maximum-likelihood fit, the profile file, and the file's path as a profile's latency
through every public entry point ("racer@me.json")."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agents
import spit_env  # noqa: F401  (registers Spit-v0)
from agents import arena
from spit_env import Latency, SpitConfig, core
from spit_env.envs.vec import SpitVecEnv
from spit_env.latency_fit import MIN_SAMPLES, PROFILE_VERSION, read_profile

SHIFTED = Latency.lognormal(450, 120, 1, shift_ms=200)


def _cdf(model: Latency, grid: np.ndarray) -> np.ndarray:
    """The distribution function of the model as the core draws it (its quantile table)."""
    return np.searchsorted(model.table, grid, side="right") / model.table.size


# --- the family ----------------------------------------------------------------------------------
def test_a_shifted_lognormal_has_its_mean_std_and_lower_end():
    table = SHIFTED.table
    assert table.min() >= 200 and abs(table.mean() - 450) < 0.5 and abs(table.std() - 120) < 0.5
    mu, sigma = SHIFTED.log_parameters()
    assert math.isclose(200 + math.exp(mu + sigma**2 / 2), 450)
    # the presets are the family's members without a shift: unchanged by it
    club = Latency.preset("club")
    assert club.shift_ms == 0 and Latency.lognormal(500, 100, 150).table.tolist() == club.table.tolist()
    assert SHIFTED.label == "lognormal(450±120ms, shift 200ms)"
    # the density integrates to one and sits above the shift only
    x = np.arange(0, 3000, 0.5)
    density = SHIFTED.pdf(x)
    assert density[x <= 200].max() == 0 and abs(density.sum() * 0.5 - 1) < 1e-3
    with pytest.raises(ValueError, match="shift_ms must be below mean_ms"):
        Latency.lognormal(300, 50, shift_ms=300)
    with pytest.raises(ValueError, match="shift_ms must be a finite number"):
        Latency.lognormal(300, 50, shift_ms=-1)
    with pytest.raises(ValueError, match="no density"):
        Latency.fixed(300).pdf(300)


def test_a_shifted_model_survives_the_config_and_its_dict():
    config = SpitConfig(latency=(Latency.preset("club"), SHIFTED))
    data = json.loads(json.dumps(config.to_dict()))
    assert data["latency"][1]["shift_ms"] == 200 and "shift_ms" not in data["latency"][0]
    assert SpitConfig.from_dict(data) == config
    data["latency"][0]["shift_ms"] = 50  # club by name, with a shift the preset does not have
    with pytest.raises(ValueError, match=r"latency\[0\].*does not describe"):
        SpitConfig.from_dict(data)


# --- the fit -------------------------------------------------------------------------------------
@settings(max_examples=30, deadline=None, derandomize=True)
@given(shift=st.floats(0, 300), scale=st.floats(100, 600), sigma=st.floats(0.25, 0.8),
       n=st.sampled_from([200, 2_000, 20_000]), seed=st.integers(0, 2**32 - 1))
def test_the_fit_recovers_a_known_latency_closer_with_more_samples(shift, scale, sigma, n, seed):
    mean = shift + scale * math.exp(sigma**2 / 2)
    std = scale * math.exp(sigma**2 / 2) * math.sqrt(math.expm1(sigma**2))
    true = Latency.lognormal(mean, std, 1, shift_ms=shift)
    fit = Latency.fit(true.sample(np.random.default_rng(seed), n))
    root = math.sqrt(n)
    # each error shrinks as 1/sqrt(n): the constants are a few times the errors' spread
    assert abs(fit.mean_ms - mean) <= 5 * std / root
    assert abs(fit.std_ms - std) <= 8 * std / root
    assert abs(fit.shift_ms - shift) <= 12 * scale / root
    grid = np.linspace(shift, mean + 6 * std, 1000)
    assert np.abs(_cdf(fit.latency, grid) - _cdf(true, grid)).max() <= 2 / root
    assert fit.ks_distance <= 2 / root and fit.n == n


def test_the_fit_is_the_maximum_of_the_likelihood():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for model, n in ((SHIFTED, 300), (Latency.lognormal(700, 300, shift_ms=250), 3000)):
        x = model.sample(rng, n).astype(float)
        fit = Latency.fit(x)
        logpdf = scipy_stats.lognorm.logpdf
        here = logpdf(x, fit.sigma, fit.shift_ms, math.exp(fit.mu)).sum()
        assert math.isclose(here, fit.log_likelihood, rel_tol=1e-9)
        for ds, dg in ((0.02, 0), (-0.02, 0), (0, 2.0), (0, -2.0)):  # any move lowers it
            assert logpdf(x, fit.sigma + ds, fit.shift_ms + dg, math.exp(fit.mu)).sum() < here
        # scipy's own three-parameter fit finds no higher point
        s, loc, scale = scipy_stats.lognorm.fit(x)
        assert logpdf(x, s, loc, scale).sum() <= here + 1e-6
    # the median and the mean are those of the fitted model
    assert math.isclose(fit.latency.mean_ms, round(fit.mean_ms, 1))
    assert abs(np.median(fit.latency.table) - fit.median_ms) <= 1


def test_data_without_skew_fit_the_presets_family_without_a_shift():
    x = np.random.default_rng(4).normal(500, 40, 2000).round()  # symmetric: no shift helps
    fit = Latency.fit(x)
    assert fit.shift_at_bound in ("zero", "") and abs(fit.mean_ms - x.mean()) < 3


@pytest.mark.parametrize("samples, message", [
    ([400] * (MIN_SAMPLES - 1), f"at least {MIN_SAMPLES} latencies, got {MIN_SAMPLES - 1}"),
    ([400] * 20, "all 400 ms: a fit needs some spread"),
    ([400] * 19 + [float("nan")], "entry 19 is nan"),
    ([400] * 19 + [0.5], "entry 19 is 0.5"),
    ([400] * 19 + [-3], "entry 19 is -3"),
    ([[400, 500]] * 20, "one-dimensional"),
    (["fast"] * 20, "a sequence of numbers"),
])
def test_bad_samples_are_refused_with_a_reason(samples, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Latency.fit(samples)


# --- the profile file ----------------------------------------------------------------------------
def test_a_fit_saved_as_a_profile_loads_as_the_same_model(tmp_path):
    samples = SHIFTED.sample(np.random.default_rng(5), 400)
    fit = Latency.fit(samples)
    path = fit.save(tmp_path / "me.json", source="a test")
    assert Latency.load(path) == fit.latency
    assert Latency.parse(str(path)) == fit.latency
    saved = read_profile(path)
    assert saved["fit"]["n"] == 400 and saved["latencies_ms"] == [float(v) for v in samples]
    assert saved["source"] == "a test"
    # the samples in the file fit again to the same model
    assert Latency.fit(saved["latencies_ms"]).latency == fit.latency
    # any model saves, the presets too
    Latency.preset("novice").save(tmp_path / "novice.json")
    assert Latency.load(tmp_path / "novice.json") == Latency.preset("novice")


def test_a_bad_profile_file_is_refused_naming_it(tmp_path):
    missing = tmp_path / "none.json"
    with pytest.raises(ValueError, match="no latency profile file at .*none.json"):
        Latency.parse(str(missing))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json' is not a latency profile"):
        Latency.load(bad)
    bad.write_text(json.dumps({"latency": SHIFTED.to_dict()}))
    with pytest.raises(ValueError, match="not a latency profile"):
        Latency.load(bad)
    SHIFTED.save(bad)
    data = json.loads(bad.read_text())
    data["version"] = PROFILE_VERSION + 1
    bad.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=f"version {PROFILE_VERSION + 1}; this spit-env reads version {PROFILE_VERSION}"):
        Latency.load(bad)
    data["version"] = PROFILE_VERSION
    data["latency"]["mean_ms"] = -5
    bad.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="latency: mean_ms must be"):
        Latency.load(bad)


# --- a profile file in every entry point ---------------------------------------------------------
@pytest.fixture
def me(tmp_path):
    fit = Latency.fit(Latency.lognormal(380, 90, shift_ms=170).sample(np.random.default_rng(6), 300))
    return fit.latency, str(fit.save(tmp_path / "profiles" / "me.json"))


def test_a_profile_file_seats_a_bot_at_that_latency_everywhere(me):
    latency, path = me
    assert callable(agents.make(f"racer@{path}"))
    env = gymnasium.make("Spit-v0", opponent=f"racer@{path}", learner_seat=0)
    env.reset(seed=0)
    assert env.unwrapped.config.latency[1] == latency
    assert env.unwrapped.duel.policy.latency == latency, "the racer believes the person's latency"
    venv = SpitVecEnv(2, opponent=f"greedy@{path}", learner_seat=1, seed=0)
    venv.reset()
    assert venv.config.latency[0] == latency
    player = arena.Player.parse(f"greedy@{path}")
    assert player.latency == latency and arena.player_error(f"greedy@{path}") is None
    # the core draws the seat's moves from the profile's table
    match = arena.Match(f"greedy@{path}", "greedy", [0], seed=1, batch_size=1)
    assert core.row_config(match.state, 0).latency[0] == latency
    lags = []
    for _ in range(300):
        before = core.snapshot(match.state, 0)
        if match.over:
            break
        match.step()
        fl = core.snapshot(match.state, 0)["in_flight"][0]
        if before["in_flight"][0] is None and fl is not None and fl["action"] != 0:
            lags.append(fl["lands_ms"] - before["clock_ms"])
    assert lags and set(lags) <= set(latency.table.tolist())
    assert "no latency profile file" in arena.player_error("greedy@nowhere/me.json")


def test_the_tournament_takes_a_profile_file(me):
    _, path = me
    res = subprocess.run([sys.executable, "-m", "experiments.tournament", "--players",
                          f"racer@{path},greedy", "--games", "4"],
                         capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    assert f"racer@{path}" in res.stdout
    res = subprocess.run([sys.executable, "-m", "experiments.tournament", "--players",
                          "racer@nowhere.json,greedy", "--games", "4"],
                         capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert res.returncode == 2 and "no latency profile file at 'nowhere.json'" in res.stderr
