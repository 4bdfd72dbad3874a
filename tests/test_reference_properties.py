"""Properties of the reference game over random seeds, configs and random moves (hypothesis):
52 cards on the table at every step, rewards zero-sum, every game ends, masks sane, and the same
seed replays the same game exactly."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spit_env import rules
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.policy import uniform_legal_actions
from spit_env.reference import ReferenceGame

configs = st.builds(
    SpitConfig,
    latency=st.sampled_from([("pro", "novice"), 200, (Latency.fixed(150), Latency.fixed(150))]),
    wait_ms=st.sampled_from([50, 150]),
    spit_delay_ms=st.sampled_from([0, 500]),
    tie_break=st.sampled_from(["coin", "player_0", "player_1"]),
    max_rounds=st.integers(1, 4),
    max_game_ms=st.sampled_from([5_000, 40_000]),
    scoring=st.sampled_from(["standard", "points"]),
    target_points=st.sampled_from([10, 100]),
    auto_flip=st.booleans(),
    wrap_ranks=st.booleans(),
    stall_timeout_ms=st.sampled_from([None, 300, 3_000]),
    win_on_empty_hand=st.booleans(),
)


def cards_on_table(snap) -> list[int]:
    cards = [c for p in (0, 1) for place in snap["stocks"][p] for c, _ in place]
    return cards + [c for s in snap["spit"] for c in s] + [c for pile in snap["centre"] for c in pile]


def play(config, seed, game_id, move_seed, illegal_rate):
    """Play a game with random (mostly legal) moves; return (snapshots, events, results)."""
    game = ReferenceGame(config, seed=seed, game_id=game_id)
    rng = np.random.default_rng(move_seed)
    snaps, events, results = [game.snapshot()], [game.start_events], []
    for _ in range(100_000):
        if game.done:
            break
        actions = []
        for p in (0, 1):
            mask = game.legal_action_mask(p)
            # WAIT is legal except for a free player in the slap phase, which must slap (D11)
            assert mask[rules.WAIT] != (game.phase == "slap" and game.free(p))
            assert any(mask)
            if rng.random() < illegal_rate:
                actions.append(int(rng.integers(rules.N_ACTIONS)))
            else:
                actions.append(int(uniform_legal_actions(np.asarray(mask, bool), rng)))
        clock = game.clock_ms
        out = game.step(*actions)
        assert game.clock_ms > clock  # every move takes at least 1 ms
        snaps.append(game.snapshot())
        events.append(out.events)
        results.append((out.rewards, out.terminated, out.truncated, out.illegal))
    return game, snaps, events, results


@settings(max_examples=25, deadline=None)
@given(config=configs, seed=st.integers(0, 2**32), game_id=st.integers(0, 1000),
       move_seed=st.integers(0, 2**32), illegal_rate=st.sampled_from([0.0, 0.2]))
def test_random_games_keep_the_invariants(config, seed, game_id, move_seed, illegal_rate):
    game, snaps, events, results = play(config, seed, game_id, move_seed, illegal_rate)
    assert game.done, "every game ends (D16 bounds it)"
    for snap in snaps:
        assert sorted(cards_on_table(snap)) == list(range(52))
    ended = 0
    for (r0, r1), terminated, truncated, _ in results:
        assert r0 + r1 == 0
        ended += terminated or truncated
        assert not (terminated and truncated)
    assert ended == 1 and (results[-1][1] or results[-1][2])
    assert snaps[-1]["phase"] == "over"
    if snaps[-1]["truncated"]:
        assert snaps[-1]["winner"] == -1 and results[-1][0] == (0.0, 0.0)
    elif snaps[-1]["winner"] >= 0:
        w = snaps[-1]["winner"]
        assert results[-1][0][w] == 1.0
    for step_events in events:
        for e in step_events:
            assert e["type"] in rules.EVENT_NAMES
    if illegal_rate == 0.0:
        assert not any(any(r[3]) for r in results)
    # Same seed, same moves: the same game, snapshot for snapshot, event for event.
    _, snaps2, events2, results2 = play(config, seed, game_id, move_seed, illegal_rate)
    assert (snaps2, events2, results2) == (snaps, events, results)
    # After the end every step is a no-op.
    out = game.step(0, 0)
    assert out.events == [] and out.rewards == (0.0, 0.0) and game.snapshot() == snaps[-1]


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), game_id=st.integers(0, 1000))
def test_default_deal_depends_on_seed_and_game_id_only(seed, game_id):
    a = ReferenceGame(SpitConfig(), seed=seed, game_id=game_id).snapshot()
    b = ReferenceGame(SpitConfig(), seed=seed, game_id=game_id).snapshot()
    c = ReferenceGame(SpitConfig(), seed=seed, game_id=game_id + 1).snapshot()
    assert a == b
    assert a["stocks"] != c["stocks"]
