"""Tests of the batched core (spit_env.core) on its own: invariants on long random runs, the
observation table, randomness as an input, the time model on hand-made deals, and bad input."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest
from helpers import random_joint_actions

from spit_env import core, rules, streams
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.testing import check_invariants

CONFIGS = {
    "default": SpitConfig(max_game_ms=120_000),
    "no_autoflip_nowrap": SpitConfig(auto_flip=False, wrap_ranks=False, max_game_ms=90_000),
    "points": SpitConfig(scoring="points", target_points=40, latency=("pro", "novice")),
    "ties": SpitConfig(latency=100, wait_ms=100, tie_break="coin", max_rounds=5, max_game_ms=60_000),
}


WAIT_BIAS = 0.2  # random play that also waits now and then


def _deal_with(front0: list[int], spit0: list[int], n0: int = 26):
    """A deal whose pack 0 starts with ``front0`` (stock positions 0..) and whose first spit cards
    are ``spit0``; the rest filled with the remaining cards in id order."""
    used = set(front0) | set(spit0)
    rest = [c for c in range(rules.N_CARDS) if c not in used]
    n_stock = min(n0, rules.STOCK_CARDS)
    stock0 = front0 + rest[: n_stock - len(front0)]
    rest = rest[n_stock - len(front0):]
    n_more = n0 - n_stock - len(spit0)
    pack0 = stock0 + spit0 + rest[:n_more]
    pack1 = rest[n_more:]
    return pack0, pack1


# --- invariants on long random runs -------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_invariants_hold_on_every_step_and_every_game_ends(name):
    config = CONFIGS[name]
    rng = np.random.default_rng(11)
    state = core.init(config, 24, seed=5)
    check_invariants(state)
    limit = config.max_game_ms // min(config.wait_ms, 100) + 50  # every step advances the clock
    for _ in range(limit):
        mask = core.legal_action_mask(state)
        acts = random_joint_actions(mask, rng, WAIT_BIAS)
        before = state.clock.copy()
        state, out = core.step(state, acts, events=True)
        check_invariants(state, out, prev_mask=mask, actions=acts)
        running = state.phase != rules.PHASE_OVER
        assert (state.clock[running] > before[running]).all(), "a step must advance the clock"
        if not running.any():
            break
    assert (state.phase == rules.PHASE_OVER).all(), f"games still running after {limit} steps"
    assert (state.terminated | state.truncated).all()


def test_finished_games_are_a_no_op():
    config = SpitConfig(max_game_ms=3_000)
    state = core.init(config, 8, seed=1)
    rng = np.random.default_rng(0)
    while not (state.phase == rules.PHASE_OVER).all():
        state, _ = core.step(state, random_joint_actions(core.legal_action_mask(state), rng, WAIT_BIAS))
    frozen = state.copy()
    state, out = core.step(state, np.full((8, 2), rules.play_action(0, 0)), events=True)
    assert not out.rewards.any() and not out.terminated.any() and not out.truncated.any()
    assert not out.illegal.any() and len(out.events) == 0
    for i in range(8):
        assert core.snapshot(state, i) == core.snapshot(frozen, i)
    mask = core.legal_action_mask(state)
    assert mask[:, :, 0].all() and not mask[:, :, 1:].any()


# --- the observation table ----------------------------------------------------------------------
def _expected_observation(snap: dict, seat: int, config: SpitConfig) -> dict[str, np.ndarray]:
    """Each field of seat ``seat``'s observation, derived from the public snapshot alone."""
    f = {}
    phase = rules.PHASE_NAMES.index(snap["phase"])
    f["phase"] = np.eye(3)[phase]
    f["one_pile_round"] = [float(snap["phase"] != "slap" and any(not c for c in snap["centre"]))]
    f["clock"] = [min(snap["clock_ms"] / config.max_game_ms, 1.0)]
    f["round"] = [snap["round"] / config.max_rounds]
    timeout = config.stall_timeout_ms
    f["stall_timer"] = [0.0 if timeout is None else
                        min((snap["clock_ms"] - snap["last_move_ms"]) / timeout, 1.0)]
    face_up = [c for player in snap["stocks"] for place in player for c, up in place if up]
    seen = face_up + snap["centre"][0] + snap["centre"][1]
    f["unseen_rank"] = [(4 - sum(rules.rank(c) == r for c in seen)) / 4 for r in range(1, 14)]
    for prefix, q in (("self_", seat), ("opp_", 1 - seat)):
        places = snap["stocks"][q]
        top_rank = np.zeros((rules.N_STOCKS, rules.N_RANKS))
        for s, place in enumerate(places):
            if place and place[-1][1]:
                top_rank[s, rules.rank(place[-1][0]) - 1] = 1
        f[prefix + "stock_top_rank"] = top_rank.reshape(-1)
        f[prefix + "stock_top_face_down"] = [float(bool(pl) and not pl[-1][1]) for pl in places]
        f[prefix + "stock_height"] = [len(pl) / 5 for pl in places]
        f[prefix + "spit_count"] = [len(snap["spit"][q]) / 52]
        f[prefix + "cards_held"] = [(sum(map(len, places)) + len(snap["spit"][q])) / 52]
        score = snap["scores"][q] / config.target_points if config.scoring == "points" else 0.0
        f[prefix + "score"] = [min(score, 1.0)]
        move = snap["in_flight"][q]
        f[prefix + "busy"] = [float(move is not None)]
        f[prefix + "time_to_land"] = [0.0 if move is None else
                                      min((move["lands_ms"] - snap["clock_ms"]) / 1000, 1.0)]
        onehot = np.zeros(rules.N_ACTIONS)
        if move is not None and (prefix == "self_" or config.observe_opponent_move):
            onehot[move["action"]] = 1
        f[prefix + "move_in_flight"] = onehot
        f[prefix + "idle"] = [min((snap["clock_ms"] - snap["moved_ms"][q]) / 3000, 1.0)]
    centre_rank = np.zeros((2, rules.N_RANKS))
    for c, pile in enumerate((seat, 1 - seat)):
        if snap["centre"][pile]:
            centre_rank[c, rules.rank(snap["centre"][pile][-1]) - 1] = 1
    f["centre_top_rank"] = centre_rank.reshape(-1)
    f["centre_size"] = [len(snap["centre"][seat]) / 52, len(snap["centre"][1 - seat]) / 52]
    f["centre_rank_count"] = [sum(rules.rank(c) == r for c in snap["centre"][pile]) / 4
                              for pile in (seat, 1 - seat) for r in range(1, 14)]
    return {k: np.asarray(v, np.float32) for k, v in f.items()}


@pytest.mark.parametrize("observe_opponent_move", [True, False])
def test_observation_fields_decode_to_the_snapshot(observe_opponent_move):
    config = SpitConfig(scoring="points", target_points=60, observe_opponent_move=observe_opponent_move,
                        auto_flip=False, max_game_ms=200_000,
                        stall_timeout_ms=1_000 if observe_opponent_move else None)
    rng = np.random.default_rng(3)
    state = core.init(config, 16, seed=2)
    assert {f.name for f in rules.OBSERVATION} == set(_expected_observation(
        core.snapshot(state, 0), 0, config))
    seen_busy_opp = 0
    for step_no in range(300):
        obs = core.observe(state)
        assert obs.shape == (16, 2, rules.OBS_DIM) and obs.dtype == np.float32
        assert obs.min() >= 0.0 and obs.max() <= 1.0
        if step_no % 7 == 0:
            for i in (0, 5, 15):
                snap = core.snapshot(state, i)
                for seat in (0, 1):
                    want = _expected_observation(snap, seat, config)
                    for field in rules.OBSERVATION:
                        np.testing.assert_array_equal(  # bit for bit: float32 of the float64
                            obs[i, seat, field.slice], want[field.name],
                            err_msg=f"field {field.name}, row {i}, seat {seat}, step {step_no}")
                    opp = obs[i, seat, rules.OBS["opp_move_in_flight"].slice]
                    if snap["in_flight"][1 - seat] is not None:
                        seen_busy_opp += 1
                        assert opp.sum() == (1.0 if observe_opponent_move else 0.0)
        state, _ = core.step(state, random_joint_actions(core.legal_action_mask(state), rng, WAIT_BIAS))
    assert seen_busy_opp > 0


@pytest.mark.parametrize("cached", [False, True])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_observation_is_bit_for_bit_the_decoded_snapshot(name, cached, monkeypatch):
    """Every row, both seats and one seat per row: the observation's bits are those of the float32
    of the exact values decoded from the snapshot (the builder's lookup tables and scatters must
    not change a bit), whether the whole batch is built from scratch or served by the cache."""
    monkeypatch.setattr(importlib.import_module("spit_env.core.observe"), "CACHED_BATCH",
                        1 if cached else 10**9)
    config = CONFIGS[name]
    rng = np.random.default_rng(8)
    b = 12
    state = core.init(config, b, seed=4)
    checked = 0
    for step_no in range(240):
        if step_no % 6 == 0:
            obs = core.observe(state)
            seats = rng.integers(0, 2, b)
            one = core.observe(state, np.arange(b), seats)
            for i in range(b):
                snap = core.snapshot(state, i)
                for seat in (0, 1):
                    fields = _expected_observation(snap, seat, config)
                    want = np.concatenate([fields[f.name] for f in rules.OBSERVATION])
                    np.testing.assert_array_equal(obs[i, seat].view(np.uint32), want.view(np.uint32),
                                                  err_msg=f"row {i}, seat {seat}, step {step_no}")
                np.testing.assert_array_equal(one[i].view(np.uint32), obs[i, seats[i]].view(np.uint32))
                checked += 1
        state, _ = core.step(state, random_joint_actions(core.legal_action_mask(state), rng, WAIT_BIAS))
        over = state.phase == rules.PHASE_OVER
        if over.any():
            core.reset(state, over, np.where(over, 100 + step_no * b + np.arange(b), 0))
    assert checked == 40 * b


def test_observation_is_egocentric():
    state = core.init(SpitConfig(), 4, seed=9)
    obs = core.observe(state)
    for field in rules.OBSERVATION:
        if field.name.startswith("self_"):
            other = rules.OBS["opp_" + field.name[5:]]
            if "move_in_flight" in field.name:
                continue
            np.testing.assert_array_equal(obs[:, 0, field.slice], obs[:, 1, other.slice])
    own = obs[:, :, rules.OBS["centre_top_rank"].slice].reshape(4, 2, 2, rules.N_RANKS)
    np.testing.assert_array_equal(own[:, 0, 0], own[:, 1, 1])


# --- randomness is an input ---------------------------------------------------------------------
def test_same_seed_same_games_whatever_the_batch_split():
    config = SpitConfig(max_game_ms=20_000)
    one = core.init(config, 64, seed=42)
    parts = [core.init(config, 16, seed=42, first_game=16 * k) for k in range(4)]
    rng = np.random.default_rng(0)
    for _ in range(60):
        mask = core.legal_action_mask(one)
        np.testing.assert_array_equal(mask, np.concatenate([core.legal_action_mask(p) for p in parts]))
        acts = random_joint_actions(mask, rng, WAIT_BIAS)
        one, out = core.step(one, acts, events=True)
        outs = [core.step(p, acts[16 * k:16 * (k + 1)], events=True)[1] for k, p in enumerate(parts)]
        np.testing.assert_array_equal(out.rewards, np.concatenate([o.rewards for o in outs]))
        for i in range(64):
            k, j = divmod(i, 16)
            assert core.snapshot(one, i) == core.snapshot(parts[k], j)
            assert out.events.for_row(i) == outs[k].events.for_row(j)


def test_different_seeds_and_game_ids_give_different_games():
    a = core.init(SpitConfig(), 8, seed=1)
    b = core.init(SpitConfig(), 8, seed=2)
    snaps_a = [json.dumps(core.snapshot(a, i)) for i in range(8)]
    snaps_b = [json.dumps(core.snapshot(b, i)) for i in range(8)]
    assert len(set(snaps_a)) == 8  # game ids differ within a seed
    assert not set(snaps_a) & set(snaps_b)


def test_deal_follows_the_deal_stream_and_layout():
    state = core.init(SpitConfig(), 3, seed=7, first_game=10)
    for i in range(3):
        key = int(streams.game_key(7, 10 + i))
        order = streams.shuffled(key, streams.DEAL, 0, range(52))
        snap = core.snapshot(state, i)
        for p, pack in enumerate((order[:26], order[26:])):
            places, spit = rules.layout(pack)
            assert [[c for c, _ in pl] for pl in snap["stocks"][p]] == places  # D3
            assert all(pl[-1][1] and not any(u for _, u in pl[:-1]) for pl in snap["stocks"][p])
            # the first spit card went onto the own centre pile (D4), unless a stall spat more
            turned = snap["centre"][p]
            assert turned == spit[: len(turned)] and snap["spit"][p] == spit[len(turned):]


def test_reset_restarts_only_the_chosen_rows():
    config = SpitConfig()
    state = core.init(config, 6, seed=3)
    rng = np.random.default_rng(1)
    for _ in range(10):
        state, _ = core.step(state, random_joint_actions(core.legal_action_mask(state), rng, WAIT_BIAS))
    before = [core.snapshot(state, i) for i in range(6)]
    rows = np.array([False, True, False, False, True, False])
    deal = _deal_with([], [], n0=10)
    core.reset(state, rows, np.array([0, 100, 0, 0, 4, 0]), deals=[None, None, None, None, deal, None])
    fresh = core.init(config, 1, seed=3, first_game=100)
    assert core.snapshot(state, 1) == core.snapshot(fresh, 0)
    dealt = core.init(config, 1, seed=3, first_game=4, deals=[deal])
    assert core.snapshot(state, 4) == core.snapshot(dealt, 0)
    assert core.snapshot(state, 4)["spit"][0] == []  # 10 cards: no spit cards, one pile (D4)
    for i in (0, 2, 3, 5):
        assert core.snapshot(state, i) == before[i]


def test_partial_steps_leave_other_rows_untouched():
    state = core.init(SpitConfig(), 5, seed=4)
    rows = np.array([True, False, True, False, False])
    before = [core.snapshot(state, i) for i in range(5)]
    acts = random_joint_actions(core.legal_action_mask(state), np.random.default_rng(2))
    state, out = core.step(state, acts, rows=rows, events=True)
    for i in (1, 3, 4):
        assert core.snapshot(state, i) == before[i]
        assert out.events.for_row(i) == [] and not out.rewards[i].any()
    for i in (0, 2):
        assert core.snapshot(state, i)["clock_ms"] > before[i]["clock_ms"]


def test_copy_is_independent():
    state = core.init(SpitConfig(), 2, seed=0)
    twin = state.copy()
    state, _ = core.step(state, np.zeros((2, 2), np.int64))
    assert core.snapshot(twin, 0)["clock_ms"] == 0
    assert core.snapshot(state, 0)["clock_ms"] == 100


# --- the time model on a hand-made deal ---------------------------------------------------------
def test_time_model_on_a_known_deal():
    """Fixed latencies make every time exact: WAIT lands after wait_ms, a PLAY after the latency
    (D7), the clock jumps to the earliest landing, and the played card lands on the pile."""
    # player 0: stock place 0 holds the Five of suit 0 (id 4); its first spit card is a Six (id 5)
    deal = _deal_with([4], [5])
    config = SpitConfig(latency=(Latency.fixed(300), Latency.fixed(250)), wait_ms=100)
    state = core.init(config, 1, seed=0, deals=[deal])
    snap = core.snapshot(state, 0)
    assert snap["centre"][0] == [5] and snap["stocks"][0][0] == [[4, True]]
    mask = core.legal_action_mask(state)
    assert mask[0, 0, rules.play_action(0, 0)]
    assert mask[0, 1, rules.play_action(0, 1)] == (rules.rank(snap["stocks"][1][0][0][0]) in (5, 7))

    state, out = core.step(state, np.array([[rules.play_action(0, 0), rules.WAIT]]), events=True)
    snap = core.snapshot(state, 0)
    assert snap["clock_ms"] == 100  # player 1's WAIT lands first
    assert snap["in_flight"] == [{"action": rules.play_action(0, 0), "card": 4, "lands_ms": 300}, None]
    assert snap["decisions"] == [1, 1] and len(out.events) == 0
    assert core.legal_action_mask(state)[0, 0].tolist() == [True] + [False] * 22  # busy: WAIT only

    state, _ = core.step(state, np.array([[rules.WAIT, rules.WAIT]]))  # player 1 waits again
    assert core.snapshot(state, 0)["clock_ms"] == 200
    state, out = core.step(state, np.array([[rules.WAIT, rules.WAIT]]), events=True)
    snap = core.snapshot(state, 0)
    assert snap["clock_ms"] == 300 and snap["centre"][0][-1] == 4 and snap["stocks"][0][0] == []
    assert out.events.for_row(0)[0] == {"type": "play", "player": 0, "clock_ms": 300,
                                         "action": rules.play_action(0, 0), "card": 4, "pile": 0,
                                         "value": 0}
    assert snap["decisions"] == [1, 3]


def test_illegal_moves_become_wait_and_are_reported():
    state = core.init(SpitConfig(wait_ms=100), 1, seed=0, deals=[_deal_with([4], [5])])
    mask = core.legal_action_mask(state)
    bad = int(np.flatnonzero(~mask[0, 1])[0])
    state, out = core.step(state, np.array([[rules.WAIT, bad]]), events=True)
    assert out.illegal.tolist() == [[False, True]]
    assert out.events.for_row(0) == [{"type": "illegal", "player": 1, "clock_ms": 0, "action": bad,
                                      "card": -1, "pile": -1, "value": 0}]
    assert core.snapshot(state, 0)["clock_ms"] == 100  # it waited


# --- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize("actions", [
    np.zeros((3, 2), np.int64),  # wrong batch
    np.zeros((2, 3), np.int64),  # wrong players
    np.zeros(2, np.int64),
    np.zeros((2, 2), np.float64),
    np.zeros((2, 2), bool),
    np.full((2, 2), 23),
    np.full((2, 2), -1),
    [["a", "b"], ["c", "d"]],
])
def test_bad_actions_raise_naming_actions_and_change_nothing(actions):
    state = core.init(SpitConfig(), 2, seed=0)
    before = [core.snapshot(state, i) for i in range(2)]
    with pytest.raises(ValueError, match="actions"):
        core.step(state, actions)
    assert [core.snapshot(state, i) for i in range(2)] == before


def test_illegal_action_raise_mode_changes_nothing():
    state = core.init(SpitConfig(illegal_action="raise"), 3, seed=0)
    mask = core.legal_action_mask(state)
    acts = np.zeros((3, 2), np.int64)
    acts[2, 1] = int(np.flatnonzero(~mask[2, 1])[0])
    before = [core.snapshot(state, i) for i in range(3)]
    with pytest.raises(ValueError, match=r"actions\[2, 1\]"):
        core.step(state, acts)
    assert [core.snapshot(state, i) for i in range(3)] == before
    state, out = core.step(state, np.zeros((3, 2), np.int64))  # still usable
    assert not out.illegal.any()


@pytest.mark.parametrize("deal", [
    ([0, 1], list(range(2, 51))),  # 51 cards
    (list(range(26)), list(range(25, 51))),  # duplicate 25, missing 51
    ([], list(range(52))),  # empty pack
    (list(range(26)), list(range(26, 51)) + [52]),  # out of range
    (list(range(52)),),  # not a pair
    "deal",
    ([0.0] + list(range(1, 26)), list(range(26, 52))),  # not integers
])
def test_bad_deals_raise(deal):
    with pytest.raises(ValueError, match="deal"):
        core.init(SpitConfig(), 1, seed=0, deals=[deal])
    state = core.init(SpitConfig(), 1, seed=0)
    before = core.snapshot(state, 0)
    with pytest.raises(ValueError, match="deal"):
        core.reset(state, np.array([True]), np.array([5]), deals=[deal])
    assert core.snapshot(state, 0) == before


def test_other_bad_input_raises():
    with pytest.raises(ValueError, match="batch_size"):
        core.init(SpitConfig(), 0)
    with pytest.raises(ValueError, match="config"):
        core.init("default", 2)
    with pytest.raises(ValueError, match="deals"):
        core.init(SpitConfig(), 2, deals=[None])
    state = core.init(SpitConfig(), 2)
    with pytest.raises(ValueError, match="rows"):
        core.step(state, np.zeros((2, 2), np.int64), rows=np.array([1, 0]))
    with pytest.raises(ValueError, match="rows"):
        core.reset(state, np.array([True]), np.array([1, 2]))
    with pytest.raises(ValueError, match="game_ids"):
        core.reset(state, np.array([True, False]), np.array([1.5, 2.0]))
    with pytest.raises(ValueError, match="row"):
        core.snapshot(state, 2)


def test_snapshot_is_plain_json():
    state = core.init(SpitConfig(), 2, seed=0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        state, _ = core.step(state, random_joint_actions(core.legal_action_mask(state), rng, WAIT_BIAS))
    snap = core.snapshot(state, 1)
    assert json.loads(json.dumps(snap)) == snap
    assert set(snap) == {"clock_ms", "last_move_ms", "moved_ms", "round", "phase", "stocks", "spit", "centre", "scores",
                         "in_flight", "decisions", "winner", "terminated", "truncated"}


def test_check_invariants_catches_a_lost_card():
    state = core.init(SpitConfig(), 3, seed=0)
    check_invariants(state)
    broken = state.copy()
    n = broken.centre_n[1, 0] - 1
    broken.centre[1, 0, n] = -1
    broken.centre_n[1, 0] = n
    broken.centre_top[1, 0] = broken.centre[1, 0, n - 1] if n > 0 else -1
    with pytest.raises(AssertionError, match="row 1"):
        check_invariants(broken)


def test_events_flag_does_not_change_the_games():
    config = SpitConfig(scoring="points", target_points=30, max_game_ms=60_000)
    quiet = core.init(config, 32, seed=8)
    loud = core.init(config, 32, seed=8)
    rng = np.random.default_rng(4)
    for _ in range(200):
        acts = random_joint_actions(core.legal_action_mask(quiet), rng, WAIT_BIAS)
        quiet, out_q = core.step(quiet, acts)
        loud, out_l = core.step(loud, acts, events=True)
        assert out_q.events is None and out_l.events is not None
        np.testing.assert_array_equal(out_q.rewards, out_l.rewards)
        np.testing.assert_array_equal(out_q.terminated, out_l.terminated)
    assert all(core.snapshot(quiet, i) == core.snapshot(loud, i) for i in range(32))


def test_event_log_groups_rows_in_order():
    state = core.init(SpitConfig(latency=100, wait_ms=100), 6, seed=1)
    rng = np.random.default_rng(0)
    for _ in range(30):
        state, out = core.step(state, random_joint_actions(core.legal_action_mask(state), rng),
                               events=True)
        log = out.events
        assert (np.diff(log.row) >= 0).all()
        for i in range(6):
            evs = out.events.for_row(i)
            assert [e["clock_ms"] for e in evs] == sorted(e["clock_ms"] for e in evs)
            assert all(set(e) == set(rules.EVENT_FIELDS) for e in evs)


def _card(rank: int, suit: int) -> int:
    return 13 * suit + rank - 1  # D2


def test_one_pile_round_and_a_win_by_emptying_the_stocks():
    """D3 (short pack), D4 (no spit cards: no own pile), D10 a, D12 / D14 (the player without
    spit cards empties first: it holds no card and wins), rewards and the end events."""
    pack0 = [_card(r, 0) for r in (2, 3, 4, 5, 6)]  # five single places, no spit cards
    pack1 = [c for c in range(52) if c not in pack0 and c != _card(1, 1)]
    pack1 = pack1[:15] + [_card(1, 1)] + pack1[15:]  # player 1's first spit card: an Ace
    config = SpitConfig(latency=100, wait_ms=50)
    state = core.init(config, 1, seed=0, deals=[(pack0, pack1)])
    snap = core.snapshot(state, 0)
    assert snap["centre"] == [[], [_card(1, 1)]] and snap["spit"][0] == []
    assert core.observe(state)[0, :, rules.OBS["one_pile_round"].start].tolist() == [1.0, 1.0]
    played, ends = [], []
    for _ in range(40):
        mask = core.legal_action_mask(state)
        assert not mask[0, 0, rules.play_action(0, 0)]  # no own pile to play on
        a0 = rules.WAIT
        if state.free[0, 0]:
            a0 = rules.play_action(len(played), 1)
            assert mask[0, 0, a0], "the next rank fits the opponent's pile"
            played.append(a0)
        state, out = core.step(state, np.array([[a0, rules.WAIT]]), events=True)
        ends += [e for e in out.events.for_row(0) if e["type"] in ("round_end", "game_end")]
        if out.terminated[0]:
            break
    assert out.terminated[0] and not out.truncated[0]
    assert out.rewards[0].tolist() == [1.0, -1.0]
    snap = core.snapshot(state, 0)
    assert snap["winner"] == 0 and snap["phase"] == "over" and snap["round"] == 1
    assert snap["centre"][1] == [_card(1, 1)] + pack0
    assert [(e["type"], e["player"], e["value"]) for e in ends] == [("round_end", 0, 0), ("game_end", 0, 0)]


def test_a_stalled_table_spits_after_the_delay():
    """D9: nobody can play at the start, so both spit again after spit_delay_ms."""
    # stock tops (D3 positions 0, 5, 9, 12, 14) of ranks 4-5 / 8-9, both first spit cards Aces:
    # no top is adjacent to an Ace (a Two or a King would be). Second spit cards: a Six and a Ten.
    tops0 = [_card(4, 0), _card(4, 1), _card(4, 2), _card(5, 0), _card(5, 1)]
    spit0 = [_card(1, 0), _card(6, 0)]
    tops1 = [_card(8, 0), _card(8, 1), _card(9, 0), _card(9, 1), _card(9, 2)]
    spit1 = [_card(1, 1), _card(10, 0)]
    fixed = set(tops0 + spit0 + tops1 + spit1)
    rest = [c for c in range(52) if c not in fixed]

    def build(tops, spits, filler):
        p = [None] * 15
        for pos, card in zip((0, 5, 9, 12, 14), tops, strict=True):
            p[pos] = card
        return [c if c is not None else filler.pop() for c in p] + spits + [filler.pop() for _ in range(9)]

    filler = list(rest)
    deal = (build(tops0, spit0, filler), build(tops1, spit1, filler))
    config = SpitConfig(spit_delay_ms=500)
    state = core.init(config, 1, seed=0, deals=[deal])
    snap = core.snapshot(state, 0)
    assert snap["centre"] == [spit0, spit1]  # the opening spit, then a second after the stall
    assert snap["clock_ms"] == 500
    mask = core.legal_action_mask(state)
    assert mask[0, 0, 1:11].any()  # a Five now fits the Six


def test_given_latency_replaces_the_draw_and_bad_values_change_nothing():
    """core.step(latency_ms=...): a deciding seat's move lands after the given ms (WAIT too); -1
    keeps the draw; a busy seat's entry is ignored; bad values raise before anything changes."""
    config = SpitConfig(wait_ms=100)
    state = core.init(config, 3, seed=4)
    drawn = state.copy()
    given = np.array([[250, -1], [-1, 7], [1, 1]])
    acts = np.zeros((3, 2), np.int64)  # WAIT everywhere: legal at the start of the play phase
    core.step(drawn, acts)
    before = core.snapshot(state, 0)
    for bad, msg in ((np.zeros((3, 2), np.int64), "-1 .draw. or whole ms"),
                     (np.full((3, 3), -1), r"\(3, 2\) integer"), (given.astype(float), "integer")):
        with pytest.raises(ValueError, match=f"latency_ms must.*{msg}"):
            core.step(state, acts, latency_ms=bad)
        assert core.snapshot(state, 0) == before
    clock0 = state.clock.copy()
    core.step(state, acts, latency_ms=given)
    assert state.decisions.tolist() == drawn.decisions.tolist()  # each decision counted once
    # the earliest landing in each row: row 0 seat 1's WAIT (100 ms) before seat 0's 250; row 1
    # seat 1 at 7 ms; row 2 both at 1 ms
    assert (state.clock - clock0).tolist() == [100, 7, 1]
    assert state.fl_land[0, 0] == clock0[0] + 250 and state.fl_action[0, 0] == rules.WAIT
    assert state.fl_land[1, 0] == clock0[1] + 100
    busy = state.fl_action >= 0
    lands = state.fl_land.copy()
    core.step(state, acts, latency_ms=np.full((3, 2), 5))  # busy seats keep their landing
    moved = state.fl_land[busy]
    assert ((moved == lands[busy]) | (state.fl_action[busy] < 0)).all()


def test_step_returns_only_the_event_types_asked_for():
    config = SpitConfig(max_game_ms=60_000)
    rng = np.random.default_rng(2)
    full, part = core.init(config, 16, seed=3), core.init(config, 16, seed=3)
    wanted = ("round_end", "play", "illegal")
    codes = [rules.EVENT_NAMES.index(n) for n in wanted]
    seen = set()
    for _ in range(400):
        acts = random_joint_actions(core.legal_action_mask(full), rng, WAIT_BIAS)
        acts[rng.random(acts.shape) < 0.02] = rules.SLAP_BASE  # some illegal moves
        _, a = core.step(full, acts, events=True)
        _, b = core.step(part, acts, events=wanted)
        keep = np.isin(a.events.type, codes)
        for name in ("row", "type", "player", "clock_ms", "action", "card", "pile", "value"):
            np.testing.assert_array_equal(getattr(b.events, name), getattr(a.events, name)[keep])
        seen.update(rules.EVENT_NAMES[t] for t in b.events.type)
        over = full.phase == rules.PHASE_OVER
        if over.any():
            core.reset(full, over, np.arange(16) + 100)
            core.reset(part, over, np.arange(16) + 100)
    assert seen == set(wanted)
    for bad in ("round_end", ["round_end", "nope"]):
        with pytest.raises(ValueError, match="event"):
            core.step(part, np.zeros((16, 2), np.int64), events=bad)
