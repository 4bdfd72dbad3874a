"""The core's planning functions: copies of rows, hidden cards replaced by another arrangement,
fresh random streams and the public table. Each keeps the 52 cards and every cache valid
(check_invariants), changes only what it says, and leaks nothing hidden into the public table."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from spit_env import core, rules
from spit_env.config import SpitConfig
from spit_env.testing import check_caches, check_invariants

CONFIGS = {
    "default": SpitConfig(max_game_ms=120_000),
    "no_autoflip": SpitConfig(auto_flip=False, max_game_ms=120_000),
    "hidden_moves": SpitConfig(observe_opponent_move=False, latency=("pro", "novice")),
}


def _random_actions(rng, mask):
    keys = np.where(mask, rng.random(mask.shape), -1.0)
    return keys.argmax(axis=2)


def _played(config, batch=12, steps=40, seed=3):
    """A batch of games in mixed stages (rows stopped after different numbers of steps)."""
    rng = np.random.default_rng(seed)
    state = core.init(config, batch, seed=seed)
    for k in range(steps):
        rows = np.arange(batch) >= (k * batch) // steps  # row i stops early for small i
        state, _ = core.step(state, _random_actions(rng, core.legal_action_mask(state)), rows=rows)
    return state


def _array_fields(state):
    return [f.name for f in fields(state) if isinstance(getattr(state, f.name), np.ndarray)]


def _public(snap: dict) -> dict:
    """A snapshot with every hidden card blanked: face-down stock cards and spit cards."""
    out = dict(snap)
    out["stocks"] = [[[[c if up else None, up] for c, up in place] for place in player]
                     for player in snap["stocks"]]
    out["spit"] = [len(s) for s in snap["spit"]]
    return out


def _hidden_from_snapshot(snap: dict) -> list[int]:
    """The hidden cards of a game in the documented slot order, read from its snapshot."""
    cards = []
    for p in range(rules.N_PLAYERS):
        for place in snap["stocks"][p]:
            cards += [c for c, up in place if not up]
        cards += snap["spit"][p]  # the snapshot lists spit cards next first
    return cards


# --- copy_rows -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_copies_are_the_same_games_and_step_like_them(name):
    config = CONFIGS[name]
    state = _played(config)
    b, n = 7, 5
    copies = core.copy_rows(state, [b], n)
    assert copies.batch_size == n
    check_invariants(copies)
    for k in range(n):
        assert core.snapshot(copies, k) == core.snapshot(state, b)
    for f in _array_fields(state):
        np.testing.assert_array_equal(getattr(copies, f), np.repeat(getattr(state, f)[[b]], n, axis=0),
                                      err_msg=f)
    # same keys, same actions: the copies replay the original row; the original is untouched
    before = core.snapshot(state, b)
    rng = np.random.default_rng(0)
    lone = core.copy_rows(state, [b])
    for _ in range(30):
        acts = _random_actions(rng, core.legal_action_mask(lone))
        lone, _ = core.step(lone, acts)
        copies, out = core.step(copies, np.repeat(acts, n, axis=0))
        check_invariants(copies, out)
        for k in range(n):
            assert core.snapshot(copies, k) == core.snapshot(lone, 0)
    assert core.snapshot(state, b) == before


def test_copy_rows_takes_rows_in_order_with_repeats():
    state = _played(CONFIGS["default"])
    picked = core.copy_rows(state, np.array([3, 0, 3]), repeats=2)
    assert [core.snapshot(picked, i) for i in range(6)] == \
        [core.snapshot(state, r) for r in (3, 3, 0, 0, 3, 3)]
    every = core.copy_rows(state)
    assert [core.snapshot(every, i) for i in range(state.batch_size)] == \
        [core.snapshot(state, r) for r in range(state.batch_size)]
    np.testing.assert_array_equal(core.legal_action_mask(every), core.legal_action_mask(state))


def test_rows_is_a_deprecated_name_of_idx_in_the_planning_functions():
    """For one release ``rows=`` (a bool mask, as before, or row indices) and a bool mask given as
    ``idx`` select the rows ``idx`` does, with a DeprecationWarning."""
    state = _played(CONFIGS["default"])
    mask = np.zeros(state.batch_size, bool)
    mask[[1, 4]] = True
    idx = np.flatnonzero(mask)
    want = [core.snapshot(state, r) for r in idx]
    def deprecated():
        return pytest.warns(DeprecationWarning, match="rows= is deprecated")

    for old in (mask, idx):
        with deprecated():
            copies = core.copy_rows(state, rows=old)
        assert [core.snapshot(copies, i) for i in range(2)] == want
        with deprecated():
            np.testing.assert_array_equal(core.hidden_cards(state, rows=old),
                                          core.hidden_cards(state, idx))
        with deprecated():
            table = core.public_table(state, rows=old, seat=1)
        np.testing.assert_array_equal(table.idx, idx)
    with pytest.warns(DeprecationWarning, match="a bool mask as idx is deprecated"):
        masked = core.copy_rows(state, mask)
    assert [core.snapshot(masked, i) for i in range(2)] == want
    a, b = core.copy_rows(state, idx), core.copy_rows(state, idx)
    with deprecated():
        core.replace_hidden(a, rows=np.ones(2, bool), rng=np.random.default_rng(3))
    core.replace_hidden(b, np.arange(2), rng=np.random.default_rng(3))
    with deprecated():
        core.reseed_rows(a, rows=np.array([False, True]), keys=np.array([77]))
    core.reseed_rows(b, [1], np.array([77]))
    assert [core.snapshot(a, i) for i in range(2)] == [core.snapshot(b, i) for i in range(2)]
    np.testing.assert_array_equal(a.key, b.key)


@pytest.mark.parametrize("idx, repeats, match", [
    (np.zeros(0, np.int64), 1, "at least one row"),
    ([99], 1, "row indices"),
    (np.ones(3, bool), 1, "bool array"),
    ([0], 0, "repeats"),
    ([0], 1.5, "repeats"),
])
def test_copy_rows_rejects_bad_input(idx, repeats, match):
    state = core.init(SpitConfig(), 4)
    with pytest.raises(ValueError, match=match):
        core.copy_rows(state, idx, repeats)


# --- hidden cards --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_hidden_cards_are_exactly_the_unseen_ones_in_slot_order(name):
    state = _played(CONFIGS[name])
    hidden = core.hidden_cards(state)
    assert hidden.shape == (state.batch_size, rules.N_CARDS) and hidden.dtype == np.int8
    for i in range(state.batch_size):
        want = _hidden_from_snapshot(core.snapshot(state, i))
        assert hidden[i, : len(want)].tolist() == want
        assert (hidden[i, len(want):] == -1).all()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_given_arrangement_changes_only_hidden_cards(name):
    state = _played(CONFIGS[name])
    rng = np.random.default_rng(5)
    idx = np.array([2, 9, 5])
    hidden = core.hidden_cards(state, idx)
    new = hidden.copy()
    for j in range(idx.size):
        k = int((hidden[j] >= 0).sum())
        new[j, :k] = rng.permutation(hidden[j, :k])
    before = [core.snapshot(state, i) for i in range(state.batch_size)]
    mask = core.legal_action_mask(state)
    core.replace_hidden(state, idx, new)
    check_invariants(state)
    np.testing.assert_array_equal(core.hidden_cards(state, idx), new)
    np.testing.assert_array_equal(core.legal_action_mask(state), mask)
    np.testing.assert_array_equal(core.observe(state), core.observe(core.copy_rows(state, np.arange(12))))
    for i in range(state.batch_size):
        snap = core.snapshot(state, i)
        assert _public(snap) == _public(before[i])
        if i not in idx:
            assert snap == before[i]
    assert any(core.snapshot(state, int(r)) != before[int(r)] for r in idx)


def test_face_down_tops_are_hidden_and_their_cache_follows():
    config = CONFIGS["no_autoflip"]
    state = _played(config, steps=60)
    down = (state.height > 0) & ~state.face_up
    assert down.any(), "the run must leave a face-down top (auto_flip off)"
    r = int(np.flatnonzero(down.any(axis=(1, 2)))[0])
    hidden = core.hidden_cards(state, [r])
    k = int((hidden >= 0).sum())
    reversed_ = hidden.copy()
    reversed_[0, :k] = hidden[0, :k][::-1]
    core.replace_hidden(state, [r], reversed_)
    check_invariants(state)  # the cached tops and place indices follow the new cards


def test_a_drawn_arrangement_is_uniform_and_reproducible():
    state = _played(CONFIGS["default"])
    idx = np.full(1, 4)
    hidden = core.hidden_cards(state, idx)[0]
    k = int((hidden >= 0).sum())
    counts = np.zeros(rules.N_CARDS, int)
    draws = 2000
    copies = core.copy_rows(state, idx, draws)
    core.replace_hidden(copies, np.arange(draws), rng=np.random.default_rng(1))
    check_invariants(copies)
    first = core.hidden_cards(copies)[:, 0]
    np.add.at(counts, first, 1)
    assert set(np.flatnonzero(counts)) <= set(hidden[:k].tolist())
    # each of the k hidden cards lands in the first hidden slot about draws / k times
    expected = draws / k
    assert np.abs(counts[hidden[:k]] - expected).max() < 5 * np.sqrt(expected)
    again = core.copy_rows(state, idx, draws)
    core.replace_hidden(again, np.arange(draws), rng=np.random.default_rng(1))
    np.testing.assert_array_equal(core.hidden_cards(again), core.hidden_cards(copies))


def test_replace_hidden_rejects_bad_arrangements_and_changes_nothing():
    state = _played(CONFIGS["default"])
    before = [core.snapshot(state, i) for i in range(state.batch_size)]
    hidden = core.hidden_cards(state, [0, 1])
    wrong = hidden.copy()
    wrong[1, 0] = hidden[0, 0] if hidden[0, 0] not in hidden[1] else wrong[1, 0]
    visible = int(state.centre[1, 0, 0])
    swapped = hidden.copy()
    swapped[1, 0] = visible  # a centre card is not hidden
    cases = [
        ((state, [0, 1], swapped), {}, r"cards\[1\] must be a permutation"),
        ((state, [0, 1], hidden[:, :3]), {}, r"cards\[0\] must be a permutation"),
        ((state, [0, 1], hidden[:1]), {}, "one row per selected row"),
        ((state, [0, 1], hidden.astype(float)), {}, "integer array"),
        ((state, [0, 0], np.concatenate([hidden[:1], hidden[:1]])), {}, "repeat"),
        ((state, [0, 1]), {}, "exactly one of"),
        ((state, [0, 1], hidden), {"rng": np.random.default_rng(0)}, "exactly one of"),
    ]
    for args, kw, match in cases:
        with pytest.raises(ValueError, match=match):
            core.replace_hidden(*args, **kw)
    assert [core.snapshot(state, i) for i in range(state.batch_size)] == before


# --- fresh streams -------------------------------------------------------------------------------
def test_reseeded_rows_draw_from_other_streams():
    state = _played(CONFIGS["default"])
    same = core.copy_rows(state, [3], 2)
    core.reseed_rows(same, [1], np.array([12345]))
    check_invariants(same)
    assert same.key[0] != same.key[1]
    # the same moves from the same table land at other times: the latency draws differ
    lands = []
    rng = np.random.default_rng(0)
    for _ in range(20):
        acts = _random_actions(rng, core.legal_action_mask(same))
        acts[1] = acts[0]
        same, _ = core.step(same, acts)
        lands.append(same.clock.copy())
    assert (np.array(lands)[:, 0] != np.array(lands)[:, 1]).any()
    with pytest.raises(ValueError, match="keys must be"):
        core.reseed_rows(same, [0, 1], np.array([1]))


# --- the public table ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_public_table_shows_everything_public_and_nothing_hidden(name):
    config = CONFIGS[name]
    state = _played(config)
    idx = np.arange(state.batch_size)
    seats = idx % 2
    table = core.public_table(state, idx, seats)
    pub = table.state
    check_invariants(pub)
    np.testing.assert_array_equal(table.seat, seats)
    np.testing.assert_array_equal(table.idx, idx)
    assert pub.seed == 0 and not pub.game_id.any() and not pub.key.any()
    np.testing.assert_array_equal(core.observe(pub, idx, seats), core.observe(state, idx, seats))
    np.testing.assert_array_equal(core.legal_action_mask(pub, idx, seats),
                                  core.legal_action_mask(state, idx, seats))
    hidden = core.hidden_cards(pub)
    for i in idx:
        snap, mine = core.snapshot(state, i), core.snapshot(pub, i)
        want = _public(snap)
        got = _public(mine)
        for k in ("winner", "decisions", "terminated", "truncated"):
            assert got[k] == want[k]
        moving = snap["in_flight"][1 - seats[i]]
        if moving is not None and not config.observe_opponent_move:
            assert mine["in_flight"][1 - seats[i]] == {"action": rules.WAIT, "card": -1,
                                                        "lands_ms": moving["lands_ms"]}
            want["in_flight"] = got["in_flight"]
        assert got == want
        k = int((hidden[i] >= 0).sum())
        assert hidden[i, :k].tolist() == sorted(hidden[i, :k].tolist())  # the placeholder order


def test_the_public_table_does_not_depend_on_hidden_cards_or_streams():
    state = _played(CONFIGS["hidden_moves"], steps=50)
    other = core.copy_rows(state, np.arange(state.batch_size))
    core.replace_hidden(other, np.arange(other.batch_size), rng=np.random.default_rng(9))
    core.reseed_rows(other, np.arange(other.batch_size), np.arange(other.batch_size) + 77)
    other.game_id += 1000
    assert (core.hidden_cards(other) != core.hidden_cards(state)).any()
    a, b = core.public_table(state, seat=1), core.public_table(other, seat=1)
    for f in _array_fields(a.state):
        np.testing.assert_array_equal(getattr(a.state, f), getattr(b.state, f), err_msg=f)


def test_planning_on_a_public_table_keeps_the_invariants():
    """The planner's recipe: public table -> copies -> another arrangement -> fresh streams ->
    a run to the end; every step keeps the invariants."""
    state = _played(CONFIGS["default"], batch=6)
    table = core.public_table(state, seat=np.zeros(6, np.int64))
    sims = core.copy_rows(table.state, np.arange(6), 8)
    rng = np.random.default_rng(4)
    core.replace_hidden(sims, np.arange(sims.batch_size), rng=rng)
    core.reseed_rows(sims, np.arange(sims.batch_size), rng.integers(0, 2**63, sims.batch_size))
    check_invariants(sims)
    for _ in range(3000):
        mask = core.legal_action_mask(sims)
        acts = _random_actions(rng, mask)
        sims, out = core.step(sims, acts)
        check_invariants(sims, out, prev_mask=mask, actions=acts)
        if (sims.phase == rules.PHASE_OVER).all():
            break
    assert (sims.phase == rules.PHASE_OVER).all()


def test_check_caches_catches_a_stale_cache():
    state = _played(CONFIGS["default"])
    check_caches(state)
    bad = core.copy_rows(state, np.arange(4))
    bad.lat_key[2, 1] ^= np.uint64(1)
    with pytest.raises(AssertionError, match="row 2: cached latency"):
        check_caches(bad)
    bad = core.copy_rows(state, np.arange(4))
    bad.pidx[1, 0, 0] += 1
    with pytest.raises(AssertionError, match="row 1: cached place"):
        check_caches(bad)
