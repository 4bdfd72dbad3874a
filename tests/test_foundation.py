"""Unit tests of the foundation: SpitConfig validation, latency models, the rules tables (D1, D2,
D3, actions, observation) and the random streams."""

from __future__ import annotations

import json

import numpy as np
import pytest

from spit_env import rules, streams
from spit_env.config import SpitConfig
from spit_env.latency import PRESETS, TABLE_SIZE, Latency


# --- SpitConfig -----------------------------------------------------------------------------------
def test_default_config_matches_the_rules_doc():
    c = SpitConfig()
    assert (c.wait_ms, c.spit_delay_ms, c.tie_break, c.max_rounds, c.max_game_ms) == (
        100, 500, "coin", 100, 1_800_000)
    assert (c.scoring, c.target_points, c.auto_flip, c.wrap_ranks, c.illegal_action) == (
        "standard", 100, True, True, "wait")
    assert c.latency == (Latency.preset("club"), Latency.preset("club"))
    json.dumps(c.to_dict())


@pytest.mark.parametrize("field, value", [
    ("wait_ms", 0), ("wait_ms", 60_001), ("wait_ms", 1.5), ("wait_ms", True),
    ("spit_delay_ms", -1), ("spit_delay_ms", "500"),
    ("tie_break", "random"), ("max_rounds", 0), ("max_rounds", 10_001),
    ("max_game_ms", 0), ("max_game_ms", 10**9 + 1), ("scoring", "golf"),
    ("target_points", 0), ("auto_flip", 1), ("wrap_ranks", "yes"),
    ("illegal_action", "ignore"), ("observe_opponent_move", None),
    ("latency", "slow"), ("latency", -5), ("latency", (1, 2, 3)), ("latency", 1.5),
])
def test_bad_config_field_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        SpitConfig(**{field: value})


def test_config_latency_forms_and_replace():
    c = SpitConfig(latency=("pro", 200))
    assert c.latency[0] == Latency.preset("pro") and c.latency[1] == Latency.fixed(200)
    assert SpitConfig(latency="novice").latency == (Latency.preset("novice"),) * 2
    assert c.replace(wait_ms=7).wait_ms == 7
    with pytest.raises(ValueError, match="unknown"):
        c.replace(speed=3)
    with pytest.raises(ValueError, match="max_rounds"):
        c.replace(max_rounds=-1)


# --- Latency ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: Latency.fixed(0), lambda: Latency.fixed(-3), lambda: Latency.fixed(2.5),
    lambda: Latency.normal(-1, 10), lambda: Latency.normal(100, -1),
    lambda: Latency.normal(100, 10, min_ms=0), lambda: Latency.lognormal(0, 10),
    lambda: Latency.lognormal(100, float("nan")), lambda: Latency.preset("elite"),
    lambda: Latency.parse(None), lambda: Latency.fixed(True),
])
def test_bad_latency_raises(make):
    with pytest.raises(ValueError):
        make()


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match="club"):
        Latency.preset("elite")


@pytest.mark.parametrize("model", [
    Latency.fixed(250), Latency.normal(300, 80, min_ms=120), Latency.lognormal(500, 100, 150),
    *[Latency.preset(n) for n in PRESETS],
])
def test_latency_table_is_monotone_and_floored(model):
    t = model.table
    assert t.shape == (TABLE_SIZE,) and t.dtype == np.int32
    assert np.all(np.diff(t) >= 0)
    assert t.min() >= model.min_ms >= 1
    assert abs(t.mean() - max(model.mean_ms, model.min_ms)) < 0.05 * model.mean_ms + 1
    assert model.from_index(0) == t[0] and model.from_index(TABLE_SIZE - 1) == t[-1]


def test_presets_are_ordered_and_fixed_is_exact():
    means = {n: Latency.preset(n).table.mean() for n in PRESETS}
    assert means["pro"] < means["club"] < means["novice"]
    assert set(Latency.fixed(77).table.tolist()) == {77}
    assert Latency.parse("120") == Latency.fixed(120) and Latency.parse("club").name == "club"


def test_sample_with_a_generator():
    m = Latency.normal(400, 50, min_ms=100)
    a = m.sample(np.random.default_rng(5), size=1000)
    b = m.sample(np.random.default_rng(5), size=1000)
    assert np.array_equal(a, b) and a.shape == (1000,) and a.min() >= 100
    assert isinstance(m.sample(np.random.default_rng(1)), int)
    with pytest.raises(ValueError, match="Generator"):
        m.sample(np.random.RandomState(0))


# --- rules tables ----------------------------------------------------------------------------------
def test_adjacency_with_and_without_wrap_D1():
    for wrap in (True, False):
        for r in range(1, 14):
            for q in range(1, 14):
                # wrap: a ring (A-K and A-2); no wrap: "Ace is high; 2 is low" (A-K, not A-2)
                ring = abs(r - q) == 1 or {r, q} == {1, 13}
                expect = ring if wrap else ring and {r, q} != {1, 2}
                assert rules.ADJACENT[wrap][r, q] == expect, (wrap, r, q)
        assert not rules.ADJACENT[wrap][0].any() and not rules.ADJACENT[wrap][:, 0].any()
    assert rules.adjacent(0, 12) and rules.adjacent(0, 12, wrap_ranks=False)  # A, K
    assert rules.adjacent(0, 1) and not rules.adjacent(0, 1, wrap_ranks=False)  # A, 2
    assert not rules.adjacent(0, 13)  # two Aces
    with pytest.raises(ValueError):
        rules.rank(52)


def test_card_rank_table_D2():
    assert rules.CARD_RANK[0] == 0
    assert [int(rules.CARD_RANK[c + 1]) for c in range(52)] == [rules.rank(c) for c in range(52)]


def test_layout_rows_D3():
    stocks, spit = rules.layout(list(range(20)))
    assert stocks == [[0], [1, 5], [2, 6, 9], [3, 7, 10, 12], [4, 8, 11, 13, 14]]
    assert spit == [15, 16, 17, 18, 19]
    assert rules.layout([10, 11, 12]) == ([[10], [11], [12], [], []], [])


def test_action_table_round_trips():
    seen = set()
    for s in range(5):
        for c in (0, 1):
            a = rules.play_action(s, c)
            assert (rules.ACTION_KIND[a], rules.ACTION_STOCK[a], rules.ACTION_PILE[a]) == (
                rules.KIND_PLAY, s, c)
            seen.add(a)
        for make, kind in ((rules.fill_action, rules.KIND_FILL), (rules.flip_action, rules.KIND_FLIP)):
            a = make(s)
            assert (rules.ACTION_KIND[a], rules.ACTION_STOCK[a]) == (kind, s)
            seen.add(a)
    for c in (0, 1):
        a = rules.slap_action(c)
        assert (rules.ACTION_KIND[a], rules.ACTION_PILE[a]) == (rules.KIND_SLAP, c)
        seen.add(a)
    seen.add(rules.WAIT)
    assert seen == set(range(rules.N_ACTIONS)) and len(set(rules.ACTION_NAMES)) == rules.N_ACTIONS


@pytest.mark.parametrize("bad", [-1, 23, 1.0, "3", True, np.bool_(False), None])
def test_check_action_rejects(bad):
    with pytest.raises(ValueError, match="action"):
        rules.check_action(bad)


def test_check_action_accepts_numpy_ints():
    assert rules.check_action(np.int64(22)) == 22 and rules.check_action(np.uint8(0)) == 0


def test_observation_table_is_contiguous():
    start = 0
    for f in rules.OBSERVATION:
        assert f.start == start and f.size > 0
        start = f.stop
    assert start == rules.OBS_DIM
    assert len(rules.OBS) == len(rules.OBSERVATION)
    assert rules.OBS["self_move_in_flight"].size == rules.N_ACTIONS
    md = rules.observation_table_markdown()
    assert md.count("\n") == len(rules.OBSERVATION) + 1


# --- streams ---------------------------------------------------------------------------------------
def test_streams_are_deterministic_and_separate():
    k = streams.game_key(3, 4)
    assert int(k) == int(streams.game_key(3, 4))
    assert int(k) != int(streams.game_key(3, 5)) and int(k) != int(streams.game_key(4, 4))
    keys = streams.game_key(3, np.arange(10))
    assert [int(x) for x in keys] == [int(streams.game_key(3, g)) for g in range(10)]
    d = streams.draw(k, streams.LATENCY, 0, np.arange(5))
    assert d.dtype == np.uint64 and np.array_equal(d, streams.draw(k, streams.LATENCY, 0, np.arange(5)))
    assert int(streams.draw(k, streams.LATENCY, 0, 0)) != int(streams.draw(k, streams.TIE, 0, 0))
    assert int(streams.draw(k, streams.LATENCY, 0, 0)) != int(streams.draw(k, streams.LATENCY, 1, 0))
    top = streams.top16(d)
    assert top.min() >= 0 and top.max() < TABLE_SIZE


def test_shuffled_is_a_permutation_sorted_by_the_draw():
    k = int(streams.game_key(1, 2))
    cards = list(range(52))
    out = streams.shuffled(k, streams.REDEAL, 3, cards)
    assert sorted(out) == cards and out != cards
    assert out == streams.shuffled(k, streams.REDEAL, 3, cards[::-1])  # input order is irrelevant
    draws = [int(streams.draw(k, streams.REDEAL, 3, c)) for c in out]
    assert draws == sorted(draws)
    assert streams.shuffled(k, streams.REDEAL, 3, []) == []


def test_negative_and_huge_seeds_hash():
    assert int(streams.game_key(-1, 0)) == int(streams.game_key(2**64 - 1, 0))
