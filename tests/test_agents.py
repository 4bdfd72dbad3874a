"""The heuristic bots: legal moves only, determinism given the generator, and the strategy each
one documents, on hand-built tables and on long runs of the batched core."""

from __future__ import annotations

import numpy as np
import pytest

import agents
from agents.heuristics import read_table
from spit_env import core, rules
from spit_env.config import SpitConfig
from spit_env.policy import make_policy, registered_policies
from spit_env.rules import (
    N_ACTIONS,
    OBS,
    OBS_DIM,
    PHASE_PLAY,
    PHASE_SLAP,
    WAIT,
    fill_action,
    flip_action,
    play_action,
    slap_action,
)

BOTS = list(agents.BOTS)


# --- hand-built tables ---------------------------------------------------------------------------
def table(my_tops=(), my_heights=None, opp_tops=(), centre=(5, 9), sizes=(1, 1), phase=PHASE_PLAY,
          opp_move=None, opp_time_ms=0):
    """One observation row. my_tops / opp_tops: {place: rank}; centre: pile ranks (0 empty)."""
    obs = np.zeros(OBS_DIM, np.float32)

    def put(name, values):
        obs[OBS[name].slice] = np.asarray(values, np.float32).reshape(-1)

    phase_onehot = np.zeros(3)
    phase_onehot[phase] = 1
    put("phase", phase_onehot)
    for who, tops in (("self", dict(my_tops)), ("opp", dict(opp_tops))):
        onehot = np.zeros((5, 13))
        for s, r in tops.items():
            onehot[s, r - 1] = 1
        put(f"{who}_stock_top_rank", onehot)
    heights = my_heights if my_heights is not None else [1 if s in dict(my_tops) else 0 for s in range(5)]
    put("self_stock_height", np.asarray(heights) / 5)
    centre_onehot = np.zeros((2, 13))
    for c, r in enumerate(centre):
        if r:
            centre_onehot[c, r - 1] = 1
    put("centre_top_rank", centre_onehot)
    put("centre_size", np.asarray(sizes) / 52)
    if opp_move is not None:
        onehot = np.zeros(N_ACTIONS)
        onehot[opp_move] = 1
        put("opp_move_in_flight", onehot)
        put("opp_busy", [1.0])
        put("opp_time_to_land", [min(opp_time_ms / 1000, 1.0)])
    return obs


def legal_mask(obs: np.ndarray, wrap: bool = True) -> np.ndarray:
    """The play-phase / slap-phase mask of a hand-built table (free player, auto_flip on)."""
    v = read_table(obs[None])
    mask = np.zeros(N_ACTIONS, bool)
    mask[WAIT] = True
    if v.phase[0] == PHASE_SLAP:
        mask[[slap_action(0), slap_action(1)]] = True
        return mask
    adj = rules.ADJACENT[wrap]
    for s in range(5):
        for c in range(2):
            mask[play_action(s, c)] = bool(adj[v.self_stock_top_rank[0, s], v.centre_top_rank[0, c]])
    if (v.self_stock_height[0] == 0).any():
        for s in range(5):
            mask[fill_action(s)] = v.self_stock_height[0, s] >= 2 and v.self_stock_top_rank[0, s] > 0
    return mask


def act(name, obs, mask=None, seed=0, **kwargs):
    mask = legal_mask(obs) if mask is None else mask
    return int(agents.make(name, **kwargs)(obs[None], mask[None], np.random.default_rng(seed))[0])


def test_registry_has_the_bots_and_make_is_make_policy():
    assert set(BOTS) <= set(registered_policies())
    for name in BOTS:
        assert callable(agents.make(name))
        assert type(make_policy(f"{name}@pro")) is type(agents.make(name))
    with pytest.raises(ValueError, match="unknown policy"):
        agents.make("no-such-bot")


@pytest.mark.parametrize("name", BOTS)
def test_bots_reject_bad_shapes(name):
    bot = agents.make(name)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="observations"):
        bot(np.zeros((2, OBS_DIM - 1), np.float32), np.ones((2, N_ACTIONS), bool), rng)
    with pytest.raises(ValueError, match="action_masks"):
        bot(np.zeros((2, OBS_DIM), np.float32), np.ones((3, N_ACTIONS), bool), rng)


def test_weights_are_validated():
    with pytest.raises(ValueError, match="chain_weight"):
        agents.make("chain", chain_weight=-1)
    with pytest.raises(ValueError, match="bounce_weight"):
        agents.make("racer", bounce_weight=float("nan"))
    with pytest.raises(ValueError, match="latency"):
        agents.make("racer", latency="slowpoke")


def test_greedy_plays_before_filling_and_never_idles():
    obs = table(my_tops={0: 4, 3: 1}, my_heights=[1, 0, 0, 3, 0], centre=(7, 2))
    mask = legal_mask(obs)
    assert mask[play_action(3, 1)] and mask[fill_action(3)]
    assert act("greedy", obs) == play_action(3, 1)
    no_play = table(my_tops={0: 4, 3: 11}, my_heights=[1, 0, 0, 3, 0], centre=(7, 2))
    assert act("greedy", no_play) == fill_action(3)
    nothing = table(my_tops={0: 4}, my_heights=[1, 1, 1, 1, 1], centre=(7, 2))
    assert act("greedy", nothing) == WAIT


@pytest.mark.parametrize("name", ["greedy", "chain", "racer"])
def test_flip_comes_before_fill_and_after_play(name):
    # auto_flip off: place 1's top is face down (FLIP legal), place 4 can fill the empty place 3
    obs = table(my_tops={0: 4, 4: 9}, my_heights=[1, 2, 1, 0, 3], centre=(7, 2))
    obs[OBS["self_stock_top_face_down"].slice] = [0, 1, 0, 0, 0]
    mask = np.zeros(N_ACTIONS, bool)
    mask[[WAIT, flip_action(1), fill_action(4)]] = True
    assert act(name, obs, mask) == flip_action(1)
    mask[play_action(4, 0)] = True  # pretend the 9 fits: a play beats the flip
    assert act(name, obs, mask) == play_action(4, 0)


@pytest.mark.parametrize("name", ["greedy", "chain", "racer"])
@pytest.mark.parametrize("sizes,expected", [((10, 3), 1), ((3, 10), 0), ((6, 6), 0)])
def test_slap_the_smaller_pile(name, sizes, expected):
    obs = table(phase=PHASE_SLAP, sizes=sizes)
    assert act(name, obs) == slap_action(expected)


@pytest.mark.parametrize("name", ["chain", "racer"])
def test_prefers_a_play_that_uncovers_a_card(name):
    # two 6s fit the own pile's 5; only place 2 has a face-down card under its top
    obs = table(my_tops={0: 6, 2: 6}, my_heights=[1, 0, 3, 0, 0], centre=(5, 12))
    for seed in range(10):
        assert act(name, obs, seed=seed) == play_action(2, 0)


@pytest.mark.parametrize("name", ["chain", "racer"])
def test_keeps_a_chain_going(name):
    # 4-on-5 leaves tops 4 / K: the 3 then follows the 4 and the Q the K (2 follow-ups);
    # Q-on-K leaves tops 5 / Q: only the 4 follows. Both uncover a card.
    obs = table(my_tops={0: 4, 1: 12, 2: 3}, my_heights=[2, 2, 2, 0, 0], centre=(5, 13))
    mask = legal_mask(obs)
    assert mask[play_action(0, 0)] and mask[play_action(1, 1)]
    for seed in range(10):
        assert act(name, obs, seed=seed) == play_action(0, 0)
    # greedy picks among its legal plays at random, so it does not always find the chain
    assert {act("greedy", obs, seed=seed) for seed in range(20)} == {play_action(0, 0), play_action(1, 1)}


def test_racer_avoids_a_pile_the_opponent_will_take_first():
    # our 6 fits both 5s; the opponent's 4 (its place 2) is in flight onto ITS own pile (our pile
    # 1) and lands in 100 ms: our card would bounce there, so the racer plays onto our own pile.
    opp_play = play_action(2, 0)  # in the opponent's egocentric ids: its own pile = our pile 1
    obs = table(my_tops={0: 6}, my_heights=[2, 0, 0, 0, 0], opp_tops={2: 4}, centre=(5, 5),
                opp_move=opp_play, opp_time_ms=100)
    for seed in range(10):
        assert act("racer", obs, seed=seed) == play_action(0, 0)
    # mirrored: the opponent aims at our own pile, so the racer goes for the other one
    obs = table(my_tops={0: 6}, my_heights=[2, 0, 0, 0, 0], opp_tops={2: 4}, centre=(5, 5),
                opp_move=play_action(2, 1), opp_time_ms=100)
    for seed in range(10):
        assert act("racer", obs, seed=seed) == play_action(0, 1)


def test_racer_waits_rather_than_make_a_doomed_play():
    # the only move is a play onto a pile the opponent's card reaches in 50 ms: WAIT instead
    obs = table(my_tops={0: 6}, my_heights=[1, 1, 1, 1, 1], opp_tops={2: 4}, centre=(5, 0),
                opp_move=play_action(2, 1), opp_time_ms=50)
    mask = legal_mask(obs)
    assert mask[play_action(0, 0)] and mask.sum() == 2
    assert act("racer", obs) == WAIT
    # ... but a slow opponent card (lands in 1 s, we land first) is raced
    obs = table(my_tops={0: 6}, my_heights=[1, 1, 1, 1, 1], opp_tops={2: 4}, centre=(5, 0),
                opp_move=play_action(2, 1), opp_time_ms=1000)
    assert act("racer", obs) == play_action(0, 0)
    # and greedy, which ignores the opponent, plays into the race regardless
    assert act("greedy", obs) == play_action(0, 0)


def test_racer_denies_follow_ups():
    # our 6 fits the 5 and the 7. After 6-on-5 the tops are 6 / 7 and the opponent's two 8s fit
    # the 7; after 6-on-7 they are 5 / 6 and its 8s fit nothing. The opponent is busy with a
    # move that lands in 900 ms, long after ours: no race, only denial.
    obs = table(my_tops={0: 6}, my_heights=[2, 0, 0, 0, 0], opp_tops={1: 8, 3: 8}, centre=(5, 7))
    opp_busy = obs.copy()
    opp_busy[OBS["opp_busy"].slice] = 1  # busy with a WAIT: no race now, pure denial
    opp_busy[OBS["opp_move_in_flight"].slice][WAIT] = 1
    opp_busy[OBS["opp_time_to_land"].slice] = 0.9
    for seed in range(10):
        assert act("racer", opp_busy, seed=seed) == play_action(0, 1)


@pytest.mark.parametrize("name", BOTS)
def test_random_tables_get_legal_moves(name):
    """Random observations with random masks (WAIT always legal): the answer is always legal."""
    rng = np.random.default_rng(7)
    b = 2000
    obs = np.zeros((b, OBS_DIM), np.float32)
    for field in rules.OBSERVATION:
        if field.name.endswith("top_rank"):
            k = field.size // 13
            ranks = rng.integers(0, 14, size=(b, k))
            onehot = np.zeros((b, k, 13), np.float32)
            rows, cols = np.nonzero(ranks)
            onehot[rows, cols, ranks[rows, cols] - 1] = 1
            obs[:, field.slice] = onehot.reshape(b, -1)
        elif field.name in ("phase", "self_move_in_flight", "opp_move_in_flight"):
            onehot = np.zeros((b, field.size), np.float32)
            onehot[np.arange(b), rng.integers(0, field.size, b)] = 1
            obs[:, field.slice] = onehot * (rng.random((b, 1)) < 0.7)
        else:
            obs[:, field.slice] = rng.random((b, field.size))
    masks = rng.random((b, N_ACTIONS)) < 0.3
    masks[:, WAIT] = True
    bot = agents.make(name)
    actions = bot(obs, masks, np.random.default_rng(1))
    assert actions.shape == (b,) and actions.dtype == np.int64
    assert masks[np.arange(b), actions].all()


# --- long runs of the core -----------------------------------------------------------------------
CONFIGS = {
    "default": SpitConfig(illegal_action="raise"),
    "no_auto_flip": SpitConfig(auto_flip=False, illegal_action="raise"),
    "points_no_wrap": SpitConfig(scoring="points", wrap_ranks=False, target_points=40,
                                 illegal_action="raise", latency=("pro", "novice")),
}


def run_core(config, seat_bots, batch=32, steps=1200, seed=3, policy_seed=5, check=True):
    """Step a batch with the given bots, re-starting finished rows; returns the actions taken,
    the phases seen and the kinds of moves made."""
    state = core.init(config, batch, seed)
    rngs = [np.random.default_rng([policy_seed, s]) for s in range(2)]
    next_game = batch
    phases, kinds, log = set(), set(), []
    for _ in range(steps):
        obs = core.observe(state)
        masks = core.legal_action_mask(state)
        actions = np.zeros((batch, 2), np.int64)
        for s in range(2):
            a = seat_bots[s](obs[:, s], masks[:, s], rngs[s])
            if check:
                assert masks[np.arange(batch), s, a].all(), f"{seat_bots[s]!r} made an illegal move"
            actions[:, s] = a
            kinds.update(rules.ACTION_KIND[a[masks[:, s].sum(axis=1) > 1]].tolist())
        phases.update(np.asarray(state.phase).tolist())
        log.append(actions)
        state, out = core.step(state, actions)
        assert not out.illegal.any()
        done = np.asarray(state.terminated) | np.asarray(state.truncated)
        if done.any():
            ids = np.arange(next_game, next_game + batch)
            state = core.reset(state, done, ids)
            next_game += batch
    return np.stack(log), phases, kinds


@pytest.mark.parametrize("config_name", list(CONFIGS))
@pytest.mark.parametrize("name", BOTS)
def test_bots_play_only_legal_moves_on_the_core(name, config_name):
    config = CONFIGS[config_name]
    other = agents.make(BOTS[(BOTS.index(name) + 1) % len(BOTS)])
    _, phases, kinds = run_core(config, (agents.make(name), other))
    # the run went through the slap phase and the bot acted in it and in play
    assert {PHASE_PLAY, PHASE_SLAP} <= phases
    assert rules.KIND_PLAY in kinds
    if name != "random":
        assert rules.KIND_SLAP in kinds
    if not config.auto_flip:
        assert rules.KIND_FLIP in kinds


@pytest.mark.parametrize("name", BOTS)
def test_bots_are_deterministic_given_the_generator(name):
    config = SpitConfig()
    first, _, _ = run_core(config, (agents.make(name), agents.make(name)), batch=16, steps=600)
    again, _, _ = run_core(config, (agents.make(name), agents.make(name)), batch=16, steps=600)
    np.testing.assert_array_equal(first, again)
    # and the generator is what they depend on: another policy seed changes some tie-break
    other, _, _ = run_core(config, (agents.make(name), agents.make(name)), batch=16, steps=600,
                           policy_seed=6)
    assert not np.array_equal(first, other)
