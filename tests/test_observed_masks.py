"""The legal moves read from an observation (``spit_env.observation.observed_masks``) are the
core's mask (``spit_env.core.legal_action_mask``) at every step of seeded games, for both seats:
on every config of the differential test, and on configs that change one field of ``SpitConfig``
at a time, so that a rule flag that changes legality without the observation showing it cannot
hide outside ``RULE_OPTIONS``; each option listed there is needed; bad input is refused."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
from helpers import random_joint_actions
from test_differential import CONFIGS, MIXED_LATENCY

from spit_env import Latency, SpitConfig, core, rules
from spit_env.config import ILLEGAL_ACTIONS, SCORINGS, TIE_BREAKS
from spit_env.observation import RULE_OPTIONS, observed_masks, rule_options

#: the values each field of SpitConfig that is not a bool is tried at, one field at a time (a
#: bool field is toggled): every field must be here or a bool (test_every_field_is_varied)
VARIANTS = {
    "latency": [Latency.fixed(1), ("pro", "novice"), (Latency.normal(150, 40, 100), 900)],
    "wait_ms": [1, 2_000],
    "spit_delay_ms": [0, 5_000],
    "tie_break": list(TIE_BREAKS),
    "max_rounds": [1, 2],
    "max_game_ms": [1, 2_000],
    "scoring": list(SCORINGS),
    "target_points": [1, 30],
    "illegal_action": list(ILLEGAL_ACTIONS),
    "stall_timeout_ms": [None, 1, 200],
}


def _variants():
    """(id, changes) for every field of SpitConfig, each non-default value on its own."""
    default = SpitConfig()
    for f in fields(SpitConfig):
        now = getattr(default, f.name)
        values = [not now] if isinstance(now, bool) else VARIANTS.get(f.name, [])
        for value in values:
            if value == now:
                continue
            changes = {f.name: value}
            if f.name == "target_points":  # it plays a part in the points variant only
                changes["scoring"] = "points"
            yield f"{f.name}={value!r}", changes


def _check_games(config, seed, batch=48, steps=250, deal_share=0.0, illegal_rate=0.0,
                 pool=None, options=None) -> dict:
    """Play seeded random games of ``config`` and compare, at every step and for both seats, the
    mask read from the observation under ``options`` (default: the config's rule options) with
    the core's. Returns what was seen: {"phase": set, "moves": (23,) counts}."""
    options = rule_options(config) if options is None else options
    rng = np.random.default_rng(seed)

    def deals():
        out = []
        for _ in range(batch):
            if rng.random() < deal_share:
                perm = rng.permutation(rules.N_CARDS).tolist()
                k = int(rng.integers(1, rules.N_CARDS))
                out.append((perm[:k], perm[k:]))
            else:
                out.append(None)
        return out

    def latencies():
        if pool is None:
            return None
        return [tuple(pool[k] for k in rng.integers(len(pool), size=2)) for _ in range(batch)]

    state = core.init(config, batch, seed, deals=deals(), latency=latencies())
    seen = {"phase": set(), "moves": np.zeros(rules.N_ACTIONS, int)}

    def check(step):
        masks = core.legal_action_mask(state)  # (B, 2, 23)
        obs = core.observe(state)              # (B, 2, D)
        for seat in (0, 1):
            found = observed_masks(obs[:, seat], **options)
            bad = np.flatnonzero((found != masks[:, seat]).any(axis=1))
            assert not bad.size, (
                f"{config}, seed {seed}, step {step}, seat {seat}, row {bad[0]}: read from the "
                f"observation {np.flatnonzero(found[bad[0]]).tolist()}, core "
                f"{np.flatnonzero(masks[bad[0], seat]).tolist()}")
        seen["phase"].update(state.phase.tolist())
        seen["moves"] += masks.sum(axis=(0, 1))
        return masks

    for t in range(steps):
        masks = check(t)
        acts = random_joint_actions(masks, rng, wait_bias=float(rng.choice([0.0, 0.3, 0.8])))
        if illegal_rate:
            wild = rng.random(acts.shape) < illegal_rate
            acts[wild] = rng.integers(0, rules.N_ACTIONS, size=int(wild.sum()))
        state, out = core.step(state, acts)
        done = out.terminated | out.truncated
        if done.any():
            check(t)  # the finished games too (game over: WAIT only)
            core.reset(state, done, np.arange(batch) + batch * (t + 1), deals(),
                       latency=latencies())
    return seen


@pytest.mark.parametrize("name,config,deal_share,illegal_rate", CONFIGS,
                         ids=[c[0] for c in CONFIGS])
def test_the_mask_read_from_the_observation_is_the_cores_on_every_differential_config(
        name, config, deal_share, illegal_rate):
    seen = _check_games(config, seed=11, deal_share=deal_share, illegal_rate=illegal_rate,
                        pool=MIXED_LATENCY.get(name))
    assert seen["moves"][rules.PLAY_BASE:rules.FILL_BASE].sum() > 0, "no play was ever legal"


@pytest.mark.parametrize("changes", [c for _, c in _variants()], ids=[i for i, _ in _variants()])
@pytest.mark.parametrize("base", [{}, {"auto_flip": False, "wrap_ranks": False}],
                         ids=["default", "no_autoflip_nowrap"])
def test_no_config_field_outside_the_rule_options_changes_legality_unseen(base, changes):
    # a field that changes legality in a way the observation does not show makes the two
    # masks differ here: it belongs in RULE_OPTIONS (and observed_masks must read it)
    config = SpitConfig(**{**base, **changes})
    rate = 0.05 if config.illegal_action == "wait" else 0.0
    _check_games(config, seed=5, batch=32, steps=200, deal_share=0.2, illegal_rate=rate)


def test_every_field_is_varied():
    default = SpitConfig()
    for f in fields(SpitConfig):
        assert isinstance(getattr(default, f.name), bool) or f.name in VARIANTS, (
            f"SpitConfig.{f.name}: list the values to try it at in VARIANTS")
    assert set(VARIANTS) <= {f.name for f in fields(SpitConfig)}


@pytest.mark.parametrize("name", list(RULE_OPTIONS))
def test_each_rule_option_is_needed(name):
    # under the default value of one option, games played with the other value show a mask
    # the observation alone does not give
    config = SpitConfig(**{name: not RULE_OPTIONS[name]})
    with pytest.raises(AssertionError, match="read from the observation"):
        _check_games(config, seed=3, options=dict(RULE_OPTIONS))


@pytest.mark.parametrize("config", [SpitConfig(), SpitConfig(auto_flip=False)],
                         ids=["default", "no_autoflip"])
def test_the_games_reach_every_kind_of_move_and_phase(config):
    seen = _check_games(config, seed=3, batch=96, steps=700)
    moves = seen["moves"]
    assert seen["phase"] == {rules.PHASE_PLAY, rules.PHASE_SLAP, rules.PHASE_OVER}
    kinds = {"play": moves[rules.PLAY_BASE:rules.FILL_BASE].sum(),
             "fill": moves[rules.FILL_BASE:rules.FLIP_BASE].sum(),
             "slap": moves[rules.SLAP_BASE:].sum()}
    assert min(kinds.values()) > 0, kinds
    assert (moves[rules.FLIP_BASE:rules.SLAP_BASE].sum() > 0) == (not config.auto_flip)


def test_rule_options_come_from_the_config():
    defaults = SpitConfig()
    assert RULE_OPTIONS == {name: getattr(defaults, name) for name in RULE_OPTIONS}
    assert rule_options() == RULE_OPTIONS and rule_options() is not RULE_OPTIONS
    assert rule_options(SpitConfig(auto_flip=False, wait_ms=5)) == {**RULE_OPTIONS,
                                                                     "auto_flip": False}
    with pytest.raises(ValueError, match="config"):
        rule_options({"auto_flip": False})


def test_the_mask_reader_refuses_what_is_not_an_observation():
    with pytest.raises(ValueError, match="shape"):
        observed_masks(np.zeros((3, rules.OBS_DIM - 1), np.float32))
    with pytest.raises(ValueError, match="Spit environment's"):
        observed_masks(np.ones((3, rules.OBS_DIM), np.float32))
    assert observed_masks(np.zeros((0, rules.OBS_DIM), np.float32)).shape == (0, 23)
