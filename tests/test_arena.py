"""The match library (agents.arena): duplicate deals really replay the same deal with the seats
swapped, the statistics are right (interval coverage, Bradley-Terry recovery), the loop can be
driven step by step, and a player's profile reaches its bot."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents import arena
from spit_env import core
from spit_env.config import SpitConfig
from spit_env.latency import Latency


class Recorder:
    """A run_games trace keeping, per game id, its snapshots in order (deduplicated)."""

    def __init__(self, every_step: bool):
        self.every_step = every_step
        self.snaps: dict[int, list[dict]] = {}
        self.latency: dict[int, tuple] = {}

    def __call__(self, state, game_ids):
        for row, gid in enumerate(game_ids.tolist()):
            if gid < 0:
                continue
            first = gid not in self.snaps
            if first or self.every_step:
                snap = core.snapshot(state, row)
                seen = self.snaps.setdefault(gid, [])
                if not seen or seen[-1] != snap:
                    seen.append(snap)
                self.latency.setdefault(gid, state.config.latency)


def test_seat_swap_replays_the_same_deal_with_the_players_swapped():
    ids = [3, 8, 9, 20, 21]
    ab, ba = Recorder(False), Recorder(False)
    res_ab = arena.run_games("greedy@pro", "chain", ids, seed=5, batch_size=2, trace=ab)
    res_ba = arena.run_games("chain", "greedy@pro", ids, seed=5, batch_size=2, trace=ba)
    assert sorted(ab.snaps) == sorted(ba.snaps) == ids
    for gid in ids:
        start_ab, start_ba = ab.snaps[gid][0], ba.snaps[gid][0]
        assert start_ab["clock_ms"] == 0 and start_ab["round"] == 0
        assert start_ab == start_ba  # same deal, same first spits
        # the profile's latency follows the player to its seat
        assert ab.latency[gid] == (Latency.preset("pro"), Latency.preset("club"))
        assert ba.latency[gid] == (Latency.preset("club"), Latency.preset("pro"))
    # different games ids are different deals
    assert ab.snaps[3][0]["stocks"] != ab.snaps[8][0]["stocks"]
    for res in (res_ab, res_ba):
        assert res["game_id"].tolist() == ids
        assert set(res["winner"].tolist()) <= {-1, 0, 1}


def test_seat_swap_replays_every_random_stream():
    """Two players with the same policy under different labels: swapping their seats must replay
    each game exactly, re-deals included (the policies' generators belong to the seats)."""
    ids = list(range(6))
    a, b = arena.Player("a", "greedy"), arena.Player("b", "greedy")
    ab, ba = Recorder(True), Recorder(True)
    res_ab = arena.run_games(a, b, ids, seed=2, batch_size=3, trace=ab)
    res_ba = arena.run_games(b, a, ids, seed=2, batch_size=3, trace=ba)
    assert ab.snaps == ba.snaps
    np.testing.assert_array_equal(res_ab["winner"], res_ba["winner"])
    assert max(s["round"] for snaps in ab.snaps.values() for s in snaps) >= 2, "no re-deal seen"
    # and the deal is not all there is: another policy seed changes the games
    other = Recorder(True)
    arena.run_games(a, b, ids, seed=2, batch_size=3, trace=other, policy_seed=99)
    assert other.snaps != ab.snaps
    assert all(other.snaps[g][0] == ab.snaps[g][0] for g in ids)


def test_run_games_finishes_every_game_whatever_the_batch():
    ids = np.arange(10, 17)
    for batch in (1, 4, 50):
        res = arena.run_games("random", "greedy", ids, seed=1, batch_size=batch)
        assert res["game_id"].tolist() == ids.tolist()
        assert (res["steps"] > 0).all()


def test_run_games_rejects_bad_input():
    with pytest.raises(ValueError, match="batch_size"):
        arena.run_games("random", "greedy", [0], batch_size=0)
    with pytest.raises(ValueError, match="game_ids"):
        arena.run_games("random", "greedy", [1, 1])
    with pytest.raises(ValueError, match="unknown policy"):
        arena.run_games("random", "nobody", [0])
    with pytest.raises(ValueError, match="profile"):
        arena.run_games("random@slow", "greedy", [0])
    with pytest.raises(ValueError, match="deals"):
        arena.play_pairing("random", "greedy", 0)


def test_pairing_counts_and_greedy_beats_random():
    res = arena.play_pairing("greedy", "random", 20, seed=4)
    assert res.games == 40
    assert res.wins_a + res.wins_b + res.draws == 40
    assert res.ci_low <= res.win_rate <= res.ci_high
    assert res.win_rate > 0.7


@pytest.mark.parametrize("p,n", [(0.3, 200), (0.05, 300), (0.5, 40)])
def test_wilson_interval_covers_a_known_probability(p, n):
    rng = np.random.default_rng(12345)
    reps = 4000
    hits = rng.binomial(n, p, size=reps)
    covered = np.mean([lo <= p <= hi for lo, hi in (arena.wilson_interval(k, n) for k in hits)])
    assert abs(covered - 0.95) < 0.02, covered
    # a 50% interval is much narrower and covers about half the time
    half = np.mean([lo <= p <= hi for lo, hi in (arena.wilson_interval(k, n, 0.5) for k in hits)])
    assert 0.4 < half < 0.65, half


def test_wilson_interval_edges():
    assert arena.wilson_interval(0, 0) == (0.0, 1.0)
    lo, hi = arena.wilson_interval(0, 50)
    assert lo == 0.0 and 0 < hi < 0.1
    lo, hi = arena.wilson_interval(50, 50)
    assert hi == 1.0 and 0.9 < lo < 1
    lo, hi = arena.wilson_interval(10.5, 21)  # draws as halves
    assert lo < 0.5 < hi
    with pytest.raises(ValueError, match="successes"):
        arena.wilson_interval(5, 4)
    with pytest.raises(ValueError, match="confidence"):
        arena.wilson_interval(1, 4, 1.5)


def test_bradley_terry_recovers_known_ratings():
    true = np.array([0.0, 100.0, 300.0])
    rng = np.random.default_rng(3)
    k, n = 3, 4000
    score = np.zeros((k, k))
    games = np.zeros((k, k))
    for i in range(k):
        for j in range(i + 1, k):
            p = 1 / (1 + 10 ** ((true[j] - true[i]) / 400))
            wins = rng.binomial(n, p)
            score[i, j], score[j, i] = wins, n - wins
            games[i, j] = games[j, i] = n
    fit = arena.bradley_terry(["a", "b", "c"], score, games)
    got = np.array([fit["a"], fit["b"], fit["c"]])
    assert abs(got.mean()) < 1e-6
    np.testing.assert_allclose(got - got[0], true - true[0], atol=25)


def test_round_robin_result_is_consistent():
    res = arena.round_robin(["random", "greedy", "chain"], 4, seed=0, show_progress=False)
    assert res["players"] == ["random", "greedy", "chain"]
    rate, lo, hi = (np.array(res[k]) for k in ("win_rate", "ci_low", "ci_high"))
    np.testing.assert_allclose(rate + rate.T, 1.0)
    assert (lo <= rate + 1e-12).all() and (rate <= hi + 1e-12).all()
    assert len(res["pairings"]) == 3
    assert set(res["ratings"]) == {"random", "greedy", "chain"}
    json.dumps(res)  # serialisable
    with pytest.raises(ValueError, match="distinct"):
        arena.round_robin(["greedy", "greedy"], 1, show_progress=False)


def test_latency_curve_points():
    curve = arena.latency_curve("greedy", [300, 700], 3, seed=0, show_progress=False)
    assert [p["mean_ms"] for p in curve["points"]] == [300.0, 700.0]
    for p in curve["points"]:
        assert p["games"] == 6 and p["ci_low"] <= p["win_rate"] <= p["ci_high"]
    assert curve["reference"] == "club"


def test_a_model_path_is_the_ppo_policy_loaded_from_it():
    player = arena.Player.parse("runs/a/model.zip@pro")
    assert (player.policy, player.kwargs["path"]) == ("ppo", "runs/a/model.zip")
    assert player.latency is not None and player.latency.name == "pro"
    assert arena.Player.parse("greedy").kwargs == {}


def test_a_match_stepped_by_hand_plays_the_games_of_run_games():
    ids = [4, 7, 8]
    ref = arena.run_games("chain", "racer@pro", ids, seed=2, batch_size=2)
    match = arena.Match("chain", "racer@pro", ids, seed=2, batch_size=2)
    assert match.row_game_ids().tolist() == [4, 7]
    while not match.over:
        match.step(match.moves())
    assert match.finished == 3 and match.row_game_ids().tolist() == [-1, -1]
    for key, value in ref.items():
        np.testing.assert_array_equal(match.results[key], value)


def test_a_match_leaves_a_seat_without_player_to_its_caller():
    from spit_env.policy import uniform_legal_actions

    config = SpitConfig(max_game_ms=20_000)
    match = arena.Match(None, "greedy", [0], config=config, seed=1, batch_size=1)
    assert match.policies[0] is None and match.players[1].label == "greedy"
    with pytest.raises(ValueError, match="both seats"):
        match.run()
    rng = np.random.default_rng(0)
    while not match.over:
        actions = match.moves()
        assert (actions[:, 0] == 0).all()  # the caller's seat is not played for it
        actions[:, 0] = uniform_legal_actions(core.legal_action_mask(match.state)[:, 0], rng)
        match.step(actions)
    assert match.finished == 1 and match.results["steps"][0] > 0


def test_a_match_plays_fixed_deals_whatever_the_game_id():
    deal = (list(range(0, 52, 2)), list(range(1, 52, 2)))
    starts = Recorder(False)
    arena.Match("greedy", "random", [5, 9], deals=[deal, deal], batch_size=1).run(trace=starts)
    assert sorted(starts.snaps) == [5, 9]
    assert starts.snaps[5][0]["stocks"] == starts.snaps[9][0]["stocks"]  # one deal, two games
    dealt = Recorder(False)
    arena.Match("greedy", "random", [5, 9], batch_size=1).run(trace=dealt)
    assert dealt.snaps[5][0]["stocks"] != dealt.snaps[9][0]["stocks"]
    with pytest.raises(ValueError, match="one deal per game id"):
        arena.Match("greedy", "random", [5, 9], deals=[deal])


def test_player_error_names_what_cannot_play():
    assert arena.player_error("racer@pro") is None
    assert "unknown policy" in arena.player_error("nobody")
    assert "profile" in arena.player_error("racer@slowpoke")
    assert "runs/ppo_greedy/model.zip" in arena.player_error("ppo@slowpoke")
