"""docs/ENVIRONMENTS.md agrees with the code, the policy registry and profiles, the text render,
and the public check_environments entry point."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import SHORT

import spit_env
from spit_env import Latency, SpitConfig, policy, rules
from spit_env.policy import (
    apply_profile,
    call_policy,
    make_policy,
    parse_profile,
    register_policy,
    registered_policies,
    uniform_legal,
)
from spit_env.render import card_name, render_text
from spit_env.testing import check_environments

# spit_env.parallel_env is also the name of the constructor function, hence import_module.
parallel_env = importlib.import_module("spit_env.envs.parallel")
gym_env = importlib.import_module("spit_env.envs.gym")
vec_env = importlib.import_module("spit_env.envs.vec")

DOC = (Path(__file__).resolve().parents[1] / "docs" / "ENVIRONMENTS.md").read_text()


def test_doc_holds_exactly_the_generated_observation_table():
    table = rules.observation_table_markdown()
    assert table in DOC
    doc_rows = [line for line in DOC.splitlines() if re.match(r"^\| \d+(-\d+)? \| `", line)]
    assert doc_rows == table.splitlines()[2:]


def test_doc_action_table_matches_the_action_ids():
    assert f"Discrete({rules.N_ACTIONS})" in DOC
    assert rules.play_action(0, 0) == 1 and rules.play_action(4, 1) == 10
    for text, ids in (("1 + 2s + c (1-10)", (1, 10)), ("11 + s (11-15)", (11, 15)),
                      ("16 + s (16-20)", (16, 20)), ("21 + c (21-22)", (21, 22))):
        assert text in DOC
        lo, hi = ids
        kinds = {rules.ACTION_KIND[a] for a in range(lo, hi + 1)}
        assert len(kinds) == 1
    assert f"({rules.OBS_DIM},)" in DOC and f"({2 * rules.OBS_DIM},)" in DOC


def test_each_module_docstring_states_its_auto_reset_mode():
    assert "Auto-reset: none" in parallel_env.__doc__
    assert "Auto-reset: none" in gym_env.__doc__
    assert "Auto-reset: same step" in vec_env.__doc__
    for mode in ("none: call `reset()`", "same step"):
        assert mode in DOC


def test_policy_registry_and_profiles():
    assert {"random", "greedy"} <= set(registered_policies())  # entry points, not yet imported
    name, latency = parse_profile("greedy@pro")
    assert (name, latency) == ("greedy", Latency.preset("pro"))
    assert parse_profile("greedy@250") == ("greedy", Latency.fixed(250))
    assert parse_profile("greedy") == ("greedy", None)
    for bad in ("", "@pro", "greedy@", "a@b@c", "greedy@slow", 3):
        with pytest.raises(ValueError, match="profile"):
            parse_profile(bad)
    with pytest.raises(ValueError, match="known policies"):
        make_policy("no_such_bot")
    assert make_policy(uniform_legal) is uniform_legal
    with pytest.raises(ValueError, match="keyword"):
        make_policy(uniform_legal, depth=2)
    with pytest.raises(ValueError):
        make_policy(42)
    policy, config = apply_profile("greedy@novice", SpitConfig(), 1)
    assert config.latency == (Latency.preset("club"), Latency.preset("novice"))
    masks = np.zeros((3, rules.N_ACTIONS), bool)
    masks[:, 0] = True
    out = call_policy(policy, np.zeros((3, rules.OBS_DIM), np.float32), masks, np.random.default_rng(0))
    assert out.dtype == np.int64 and out.tolist() == [0, 0, 0]


def test_register_policy_refuses_clashes_and_bad_names():
    def factory():
        return uniform_legal

    register_policy("test_envs_uniform", factory)
    register_policy("test_envs_uniform", factory)  # the same factory again is fine
    with pytest.raises(ValueError, match="already registered"):
        register_policy("test_envs_uniform", lambda: uniform_legal)
    assert make_policy("test_envs_uniform@300") is uniform_legal
    for bad in ("", "a@b", " x"):
        with pytest.raises(ValueError, match="name"):
            register_policy(bad, factory)


def test_call_policy_rejects_illegal_or_misshapen_answers():
    masks = np.zeros((2, rules.N_ACTIONS), bool)
    masks[:, 0] = True
    obs = np.zeros((2, rules.OBS_DIM), np.float32)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="illegal"):
        call_policy(lambda o, m, r: np.array([0, 5]), obs, masks, rng)
    with pytest.raises(ValueError, match="integer"):
        call_policy(lambda o, m, r: np.zeros(3, np.int64), obs, masks, rng)


def test_render_is_a_pure_function_of_the_snapshot():
    env = spit_env.parallel_env(render_mode="ansi")
    env.reset(seed=0)
    snap = env.snapshot()
    json.dumps(snap)  # JSON-serialisable
    text = env.render()
    assert text == render_text(json.loads(json.dumps(snap)))
    for p in range(2):
        tops = [card_name(place[-1][0]) for place in snap["stocks"][p] if place]
        for top in tops:
            assert top in text
    assert "##" not in text  # a fresh deal shows every non-empty place's top face up (D3)
    hidden = json.loads(json.dumps(snap))
    hidden["stocks"][0][4][-1][1] = False
    assert "##(5)" in render_text(hidden)
    assert card_name(0) == "Ac" and card_name(51) == "Ks" and card_name(-1) == "--"
    with pytest.raises(ValueError, match="card"):
        card_name(52)
    with pytest.raises(ValueError, match="missing"):
        render_text({"phase": "play"})


def test_render_shows_moves_in_flight_with_landing_time():
    env = spit_env.parallel_env(SpitConfig(latency=(100, 900)), render_mode="ansi")
    obs, _ = env.reset(seed=2)
    legal = np.flatnonzero(obs["player_1"]["action_mask"][1:]) + 1
    a1 = int(legal[0]) if legal.size else 0
    env.step({"player_0": 0, "player_1": a1})
    lands = env.snapshot()["in_flight"][1]["lands_ms"]
    assert f"{rules.ACTION_NAMES[a1]}" in env.render() and f"lands at {lands:,} ms" in env.render()


# check_environments passing on valid configs: tests/test_envs_misuse.py runs it over a grid of
# configs that covers every flag.


def test_check_environments_catches_a_broken_adapter(monkeypatch):
    # A VecEnv whose masks lie must fail the check: the check is able to fail.
    monkeypatch.setattr(vec_env.SpitVecEnv, "action_masks",
                        lambda self: np.ones((self.num_envs, rules.N_ACTIONS), bool))
    with pytest.raises(AssertionError):
        check_environments(SHORT, num_cycles=300, vec_steps=20)


# --- the plug-in registry (entry points) ---------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]


def test_every_bot_is_declared_as_an_entry_point_and_installed():
    import agents

    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    ours = declared[policy.ENTRY_POINT_GROUP]
    assert set(agents.BOTS) | {"network", "ppo"} <= set(ours)
    installed = {ep.name: ep.value for ep in importlib.metadata.entry_points(
        group=policy.ENTRY_POINT_GROUP)}
    stale = {k: v for k, v in ours.items() if installed.get(k) != v}
    assert not stale, f"installed entry points are stale, run `pip install -e .` again: {stale}"


def test_spit_env_finds_bots_without_importing_agents_first():
    code = ("import sys; from spit_env.policy import make_policy; "
            "assert 'agents' not in sys.modules; print(type(make_policy('greedy@pro')).__name__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "GreedyBot"
    for path in (ROOT / "spit_env").glob("*.py"):
        assert not re.search(r"^\s*(import|from)\s+agents\b", path.read_text(), re.M), path.name


@pytest.fixture
def fake_entry_points(monkeypatch):
    """Installed entry points plus fake ones: fake(name, value) adds one to the group."""
    real = importlib.metadata.entry_points
    extra = []

    def entry_points(**selection):
        found = list(real(**selection))
        if selection.get("group") == policy.ENTRY_POINT_GROUP:
            found += extra
        return found

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)

    def fake(name, value):
        extra.append(importlib.metadata.EntryPoint(name=name, value=value,
                                                   group=policy.ENTRY_POINT_GROUP))

    return fake


def test_a_missing_or_shadowed_plugin_says_so(fake_entry_points):
    fake_entry_points("ghost", "no_such_package_xyz.bots:Ghost")
    assert "ghost" in registered_policies()  # listed without importing anything
    with pytest.raises(policy.PolicyPluginError, match="no_such_package_xyz.*is not installed"):
        make_policy("ghost")
    # a top-level module that exists but is not the plug-in's: another package shadows it
    fake_entry_points("shadowed", "json.spit_bots:Bot")
    with pytest.raises(policy.PolicyPluginError, match=r"'json' is found at .*shadows the plug-in"):
        make_policy("shadowed@pro")
    fake_entry_points("constant", "math:pi")
    with pytest.raises(policy.PolicyPluginError, match="not callable"):
        make_policy("constant")
    fake_entry_points("twice", "agents.heuristics:GreedyBot")
    fake_entry_points("twice", "agents.heuristics:RacerBot")
    with pytest.raises(policy.PolicyPluginError, match="more than one entry point"):
        make_policy("twice")
    with pytest.raises(ValueError, match="entry point"):
        register_policy("ghost", lambda: uniform_legal)
    with pytest.raises(ValueError, match=f"unknown policy.*{policy.ENTRY_POINT_GROUP}"):
        make_policy("nobody_at_all")


def test_a_policy_whose_extra_is_not_installed_is_named_apart_from_the_known(
        fake_entry_points, monkeypatch):
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    rllib = declared[policy.ENTRY_POINT_GROUP]["rllib"]
    assert rllib.endswith(" [scale]")  # it needs Ray (installed as declared: the test above)
    fake_entry_points("needs-ray", rllib)
    fake_entry_points("needs-pytest", "agents.heuristics:GreedyBot [test]")
    monkeypatch.setitem(sys.modules, "ray", None)  # Ray hidden: `import ray` fails
    assert policy.missing_extras("needs-ray") == ["spit-env[scale]"]
    assert policy.missing_extras("needs-pytest") == []  # the test tools are installed here
    assert policy.missing_extras("greedy") == policy.missing_extras("nobody") == []
    # registered_policies keeps every name; the available ones and the error leave it out
    assert {"needs-ray", "needs-pytest"} <= set(registered_policies())
    available = policy.available_policies()
    assert "needs-pytest" in available and "needs-ray" not in available
    assert set(available) < set(registered_policies())
    with pytest.raises(ValueError) as err:
        make_policy("nobody_at_all")
    message = str(err.value)
    known, _, note = message.partition("; not installed here: ")
    assert "'needs-ray'" not in known and "'greedy'" in known and "'needs-pytest'" in known
    assert "'needs-ray' (needs spit-env[scale])" in note
    # the scripts' checks say the same: the name is known, its extra is missing
    from experiments.cli.checks import ArgumentError, check_players

    assert [p for p, _ in check_players("--players", ["needs-pytest@pro"])] == ["needs-pytest"]
    with pytest.raises(ArgumentError, match=r"'needs-ray' needs spit-env\[scale\], not installed"):
        check_players("--players", ["needs-ray@pro"])
