"""Each game and seat of a core batch has its own latency model (``init`` / ``reset`` with
``latency=``): games of one batch play as they would alone under their own config, the models are
carried by copies and public tables, and bad input changes nothing."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import random_joint_actions

from spit_env import core, rules
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.testing import check_invariants

CONFIG = SpitConfig(max_game_ms=30_000)
POOL = [Latency.preset("pro"), Latency.preset("novice"), Latency.fixed(120), None, "club", 333]


def _mixed(rng: np.random.Generator, batch: int) -> list[tuple]:
    return [(POOL[rng.integers(len(POOL))], POOL[rng.integers(len(POOL))]) for _ in range(batch)]


def test_each_game_plays_as_alone_under_its_own_config():
    rng = np.random.default_rng(3)
    batch = 12
    latency = _mixed(rng, batch)
    state = core.init(CONFIG, batch, seed=9, latency=latency)
    check_invariants(state)
    alone = [core.init(core.row_config(state, b), 1, seed=9, first_game=b) for b in range(batch)]
    for b, (l0, l1) in enumerate(latency):
        want = tuple(CONFIG.latency[p] if m is None else Latency.parse(m)
                     for p, m in enumerate((l0, l1)))
        assert core.row_config(state, b).latency == want
    for step in range(300):
        acts = random_joint_actions(core.legal_action_mask(state), rng, 0.2)
        state, out = core.step(state, acts, events=True)
        check_invariants(state, out)
        for b in range(batch):
            alone[b], one = core.step(alone[b], acts[b:b + 1], events=True)
            assert core.snapshot(state, b) == core.snapshot(alone[b], 0), (b, step)
            assert out.events.for_row(b) == one.events.for_row(0)
        over = state.phase == rules.PHASE_OVER
        if over.any():  # re-start with other models; the others keep theirs
            latency = _mixed(rng, batch)
            ids = 100 + step * batch + np.arange(batch)
            core.reset(state, over, ids, latency=latency)
            for b in np.flatnonzero(over):
                alone[b] = core.init(core.row_config(state, b), 1, seed=9, first_game=int(ids[b]))
            check_invariants(state)


def test_the_config_is_the_default_and_a_row_without_models_of_its_own_says_so():
    state = core.init(CONFIG, 3, latency=[("pro", None), (None, None), CONFIG.latency])
    assert core.row_config(state, 1) is CONFIG and core.row_config(state, 2) is CONFIG
    assert core.row_config(state, 0).latency == (Latency.preset("pro"), CONFIG.latency[1])
    plain = core.init(CONFIG, 3)
    assert plain.latency_models == (CONFIG.latency[0],)  # both club: one model
    assert (plain.latency == 0).all()
    core.reset(plain, np.array([True, False, False]), np.arange(3), latency=[(250, 250)] * 3)
    assert core.row_config(plain, 0).latency == (Latency.fixed(250), Latency.fixed(250))
    assert core.row_config(plain, 1) is CONFIG
    core.reset(plain, np.array([True, False, False]), np.arange(3))  # None: the config's again
    assert core.row_config(plain, 0) is CONFIG


def test_models_no_game_plays_are_dropped_when_new_ones_come():
    state = core.init(CONFIG, 4, latency=[("pro", "novice")] * 4)
    every = np.ones(4, bool)
    for ms in range(200, 400, 50):
        core.reset(state, every, np.arange(4), latency=[(ms, "novice")] * 4)
        assert set(state.latency_models) == {Latency.fixed(ms), Latency.preset("novice")}
        check_invariants(state)
    some = np.array([True, True, False, False])
    core.reset(state, some, np.arange(4), latency=[("pro", 100)] * 4)
    assert len(state.latency_models) == 4  # rows 2, 3 still play the last two
    check_invariants(state)


def test_copies_and_public_tables_keep_each_game_s_models():
    rng = np.random.default_rng(0)
    latency = _mixed(rng, 6)
    state = core.init(CONFIG, 6, seed=2, latency=latency)
    copies = core.copy_rows(state, [4, 1], 3)
    table = core.public_table(state, [5, 0, 3], [1, 0, 1])
    for j, b in enumerate([4, 4, 4, 1, 1, 1]):
        assert core.row_config(copies, j) == core.row_config(state, b)
    for j, b in enumerate([5, 0, 3]):
        assert core.row_config(table.state, j) == core.row_config(state, b)
    check_invariants(copies)
    check_invariants(table.state)


@pytest.mark.parametrize("latency, match", [
    ([("club", "club")] * 3, r"latency must be None or a \(4, 2\)"),
    ([("club",)] * 4, r"latency must be None or a \(4, 2\)"),
    ([("club", "club"), ("club", "club", "club")] * 2, "latency must be None"),
    ([("club", "club")] * 3 + [("club", "fast")], r"latency\[3\]\[1\]: .*preset"),
    ([("club", -5)] + [("club", "club")] * 3, r"latency\[0\]\[1\]"),
    ([("club", 2.5)] + [("club", "club")] * 3, r"latency\[0\]\[1\]"),
])
def test_bad_latency_is_refused_naming_it_and_changes_nothing(latency, match):
    with pytest.raises(ValueError, match=match):
        core.init(CONFIG, 4, latency=latency)
    state = core.init(CONFIG, 4, latency=[("pro", "novice")] * 4)
    before = state.copy()
    with pytest.raises(ValueError, match=match):
        core.reset(state, np.ones(4, bool), np.arange(10, 14), latency=latency)
    for name in core.CoreState._ARRAYS:
        assert np.array_equal(getattr(state, name), getattr(before, name)), name
    assert state.latency_models == before.latency_models


def test_reset_reads_the_latency_of_the_rows_it_restarts_only():
    state = core.init(CONFIG, 3)
    latency = np.array([["pro", "pro"], ["not a model", 0], ["novice", "novice"]], object)
    core.reset(state, np.array([True, False, True]), np.arange(3), latency=latency)
    assert core.row_config(state, 0).latency[0].name == "pro"
    assert core.row_config(state, 2).latency[1].name == "novice"
    assert core.row_config(state, 1) is CONFIG


def test_row_config_names_a_bad_row():
    state = core.init(CONFIG, 2)
    for row in (2, -1, 0.5):
        with pytest.raises(ValueError, match="row must be an integer in 0..1"):
            core.row_config(state, row)
