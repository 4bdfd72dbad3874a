"""Every game's randomness depends on (seed, game id) alone: the same moves and outcome of game
(s, g) after any history (steps, abandoned games, refused errors, snapshots, copies) and in any
row of a VecEnv beside any other rows; the per-row streams of spit_env.streams.RowStreams."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spit_env import SpitConfig, SpitGymEnv, SpitVecEnv, streams

CONFIG = SpitConfig(max_game_ms=20_000, illegal_action="raise")
OPPONENTS = ("greedy", "random", "chain@club")


def _learner(seed: int, game: int):
    """The learner of game (seed, game): a uniform legal move from a generator of its own."""
    rng = np.random.default_rng([seed, game])
    return lambda mask: int(np.flatnonzero(mask)[int(rng.integers(mask.sum()))])


def _play_gym(env, seed: int, game: int, info) -> list:
    """Play the running game of ``env`` to its end; its trajectory."""
    learner = _learner(seed, game)
    out = [("seat", int(info["learner_seat"]))]
    for _ in range(5_000):
        obs, reward, term, trunc, info = env.step(learner(info["action_mask"]))
        out.append((obs.tobytes(), reward, term, trunc))
        if term or trunc:
            return out + [("end", env.snapshot()["winner"], env.snapshot()["clock_ms"])]
    raise AssertionError("the game did not end")


def _reference(opponent: str, seed: int, game: int) -> list:
    env = SpitGymEnv(opponent=opponent, config=CONFIG)
    _, info = env.reset(seed=seed)
    for _ in range(game):
        _, info = env.reset()
    return _play_gym(env, seed, game, info)


# a history: per abandoned game, a list of operations
OPS = st.lists(st.sampled_from(["step", "illegal", "snapshot", "copy", "masks"]), max_size=12)


def _run(env, info, ops, rng):
    """Apply a history's operations to the running game of ``env``; (env, info) after them."""
    for op in ops:
        mask = info["action_mask"]
        if op == "step":
            _, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            if term or trunc:
                break
        elif op == "illegal" and not mask.all():
            with pytest.raises(ValueError):
                env.step(int(np.flatnonzero(~mask)[0]))
        elif op == "snapshot":
            env.snapshot()
        elif op == "copy":
            env = copy.deepcopy(env)
        else:
            env.action_masks()
    return env, info


@settings(max_examples=12, deadline=None)
@given(opponent=st.sampled_from(OPPONENTS), seed=st.integers(0, 2**32), game=st.integers(0, 3),
       before=st.lists(OPS, max_size=3), data=st.data(), steps_seed=st.integers(0, 2**16))
def test_a_gym_game_plays_the_same_after_any_history(opponent, seed, game, before, data,
                                                     steps_seed):
    env = SpitGymEnv(opponent=opponent, config=CONFIG)
    rng = np.random.default_rng(steps_seed)
    _, info = env.reset(seed=seed + 1)  # games of another seed, played partly, abandoned
    for ops in before:
        env, info = _run(env, info, ops, rng)
        _, info = env.reset()
    _, info = env.reset(seed=seed)  # then games 0 .. game - 1 of the seed, the same
    for _ in range(game):
        env, info = _run(env, info, data.draw(OPS), rng)
        _, info = env.reset()
    assert _play_gym(env, seed, game, info) == _reference(opponent, seed, game)


@settings(max_examples=6, deadline=None)
@given(opponent=st.sampled_from(OPPONENTS), seed=st.integers(0, 2**32),
       num_envs=st.integers(1, 5), others_seed=st.integers(0, 2**16), data=st.data())
def test_a_vec_env_row_plays_the_game_of_its_id_whatever_the_other_rows(
        opponent, seed, num_envs, others_seed, data):
    game = data.draw(st.integers(0, num_envs - 1))
    venv = SpitVecEnv(num_envs, opponent=opponent, config=CONFIG, seed=seed)
    obs = venv.reset()
    learner, others = _learner(seed, game), np.random.default_rng(others_seed)
    out = [("seat", int(venv.learner_seats[game]))]
    for _ in range(5_000):
        masks = venv.action_masks()
        actions = np.array([int(others.choice(np.flatnonzero(m))) for m in masks])
        actions[game] = learner(masks[game])
        obs, rewards, dones, infos = venv.step(actions)
        if dones[game]:
            last = infos[game]["terminal_observation"]
            term = not infos[game].get("TimeLimit.truncated", False)
            out.append((last.tobytes(), float(rewards[game]), term, not term))
            break
        out.append((obs[game].tobytes(), float(rewards[game]), False, False))
    ref = _reference(opponent, seed, game)
    assert out == ref[:-1]


def test_row_streams_draw_per_row_and_fall_back_to_a_shared_generator():
    keys = streams.draw(streams.game_key(7, np.arange(4)), streams.POLICY, 0, 0)
    both = streams.RowStreams(keys)
    alone = streams.RowStreams(keys[2:3])
    a, b = both.random((4, 23)), alone.random((1, 23))
    np.testing.assert_array_equal(a[2], b[0])  # row 2's draws do not depend on rows 0, 1, 3
    assert ((a >= 0) & (a < 1)).all() and np.unique(a).size == a.size
    ints = both.integers(0, 5, size=4)
    assert ints.dtype == np.int64 and ((ints >= 0) & (ints < 5)).all()
    # the n-th draw of row 2 is the same with or without the other rows
    np.testing.assert_array_equal(streams.RowStreams(keys).integers(3, size=(4, 2))[2],
                                  streams.RowStreams(keys[2:]).integers(3, size=(2, 2))[0])
    assert np.isfinite(both.gumbel(size=(4, 23))).all()
    # another shape: a Generator seeded with the keys, the same for the same keys
    np.testing.assert_array_equal(streams.RowStreams(keys).random(7),
                                  streams.RowStreams(keys).random(7))
    assert streams.RowStreams(keys).permutation(5).shape == (5,)
    with pytest.raises(ValueError, match="high"):
        both.integers(3, 3, size=4)


# --- the match library: a game is the same in any batch, job, chunk or runner ---------------------
PLAYERS = ("greedy", "random", "racer@pro", "chain@250")
GAME_CONFIG = SpitConfig(max_game_ms=20_000)  # short games: many of them end truncated
FIELDS = ("winner", "truncated", "steps", "decisions", "rounds", "clock_ms")


def _game(results: dict, game: int) -> tuple:
    i = int(np.flatnonzero(results["game_id"] == game)[0])
    return tuple(results[f][i].item() for f in FIELDS)


@settings(max_examples=8, deadline=None)
@given(a=st.sampled_from(PLAYERS), b=st.sampled_from(PLAYERS), seed=st.integers(0, 2**32),
       game=st.integers(0, 7), batch=st.integers(2, 9), chunk=st.integers(1, 5),
       others=st.lists(st.tuples(st.sampled_from(PLAYERS), st.sampled_from(PLAYERS)),
                       max_size=3))
def test_an_arena_game_plays_the_same_in_any_batch_job_and_chunk(a, b, seed, game, batch, chunk,
                                                                 others):
    from agents import arena

    alone = arena.run_games(a, b, [game], config=GAME_CONFIG, seed=seed, batch_size=1)
    want = _game(alone, game)
    # among other games of the pairing, in a batch of another size
    ids = np.arange(8)
    assert _game(arena.run_games(a, b, ids, config=GAME_CONFIG, seed=seed, batch_size=batch),
                 game) == want
    # in the jobs of a pairing cut into chunks, all in one batch beside other pairings' jobs,
    # the jobs in another order
    mine = arena.pairing_jobs(a, b, 8, chunk=chunk)
    jobs = mine + [job for x, y in others for job in arena.pairing_jobs(x, y, 3, chunk=2)]
    outputs = arena.play_jobs(jobs[::-1], config=GAME_CONFIG, seed=seed, batch_size=batch)[::-1]
    got = [_game(out, game) for job, out in zip(mine, outputs, strict=False)
           if not job.swapped and game in job.game_ids]
    assert got == [want]


def test_a_pairing_is_the_same_in_one_piece_in_chunks_and_beside_others():
    from dataclasses import asdict

    from agents import arena

    kw = dict(config=GAME_CONFIG, seed=7)
    alone = asdict(arena.play_pairing("racer@pro", "greedy", 10, batch_size=256, **kw))
    assert asdict(arena.play_pairing("racer@pro", "greedy", 10, batch_size=4, chunk=4,
                                     **kw)) == alone
    together = arena.play_pairings([("random", "chain"), ("racer@pro", "greedy"),
                                    ("greedy", "racer@pro")], 10, batch_size=8, **kw)
    assert asdict(together[1]) == alone
    swapped = together[2]  # the same games seen from the other side
    assert (swapped.wins_a, swapped.wins_b) == (alone["wins_b"], alone["wins_a"])


@pytest.mark.parametrize("fresh", [False, True])
def test_a_trained_models_logits_are_the_same_bits_in_any_batch(fresh):
    from agents.network import NetworkPolicy, shipped_model_path
    from agents.ppo_model import new_model
    from spit_env import core
    from spit_env.rules import OBS_DIM

    state = core.init(SpitConfig(), 600, 3)
    rng = np.random.default_rng(0)
    for _ in range(30):
        masks = core.legal_action_mask(state)
        core.step(state, np.argmax(np.where(masks, rng.random(masks.shape), -1), axis=2))
    obs = core.observe(state).reshape(-1, OBS_DIM)
    policy = (NetworkPolicy(new_model(SpitVecEnv(2), net_arch=(256, 256), seed=1)) if fresh
              else NetworkPolicy.load(shipped_model_path()))
    one = np.concatenate([policy.logits(obs[i:i + 1]) for i in range(40)])
    for n in (1, 2, 3, 5, 8, 13, 64, 600, 1200):
        for start in rng.integers(0, 40, 3):
            part = policy.logits(obs[start:start + n])
            rows = np.arange(start, min(start + n, 40))
            np.testing.assert_array_equal(part[:rows.size], one[rows])


def test_a_ppo_game_plays_the_same_alone_and_in_a_batch():
    from agents import arena

    ids = np.arange(6)
    batch = arena.run_games("ppo", "greedy", ids, config=GAME_CONFIG, seed=3, batch_size=6)
    for game in (0, 4):
        alone = arena.run_games("ppo", "greedy", [game], config=GAME_CONFIG, seed=3)
        assert _game(alone, game) == _game(batch, game)


# --- the learner's seat played by a policy: the environments' learner_rng -------------------------
@settings(max_examples=6, deadline=None)
@given(opponent=st.sampled_from(OPPONENTS), seed=st.integers(0, 2**32),
       num_envs=st.integers(1, 5), data=st.data())
def test_a_policy_drawing_from_learner_rng_plays_its_game_whatever_the_rows(opponent, seed,
                                                                            num_envs, data):
    from agents import make

    game = data.draw(st.integers(0, num_envs - 1))
    teacher = make("random")
    venv = SpitVecEnv(num_envs, opponent=opponent, config=CONFIG, seed=seed,
                      learner_seat="random")
    obs = venv.reset()
    row = []
    for _ in range(5_000):
        actions = teacher(obs, venv.action_masks(), venv.learner_rng())
        row.append(int(actions[game]))
        obs, _, dones, _ = venv.step(actions)
        if dones[game]:
            break
    env = SpitGymEnv(opponent=opponent, config=CONFIG, learner_seat="random")
    obs1, info = env.reset(seed=seed)
    for _ in range(game):
        obs1, info = env.reset()
    alone = []
    for _ in range(5_000):
        action = int(teacher(obs1[None], info["action_mask"][None], env.learner_rng())[0])
        alone.append(action)
        obs1, _, term, trunc, info = env.step(action)
        if term or trunc:
            break
    assert row == alone


def test_the_warm_start_records_a_game_whatever_the_other_rows():
    pytest.importorskip("sb3_contrib")
    from agents import make
    from experiments.ppo.envs import make_training_env
    from experiments.ppo.warm_start import collect_teacher_data

    def record(num_envs: int) -> list:
        _, _, env = make_training_env(num_envs=num_envs, groups=1, opponent="greedy", seed=5,
                                      learner_seat="random", reward="round", episode="game",
                                      shaping=0.0, skip_forced_waits=True, truncation_reward=0.0)
        venv = env.unwrapped
        inner, seen = make("random"), []

        def teacher(obs, masks, rng):
            actions = inner(obs, masks, rng)
            if venv.duel.state.game_id[0] == 0:  # row 0's first game: game 0 of the seed
                seen.append((obs[0].tobytes(), int(actions[0])))
            return actions

        collect_teacher_data(env, teacher, 1_500, {"mask_wait": False})
        return seen

    one, three = record(1), record(3)
    assert len(one) > 20 and one == three


# --- the planner draws per game ------------------------------------------------------------------
def _planner_table(batch: int = 10):
    """Mid-game states of racer against racer and each row's policy stream, as a match keys it."""
    from agents import make
    from spit_env import core

    state = core.init(SpitConfig(max_game_ms=30_000), batch, seed=4)
    racer, rng = make("racer"), np.random.default_rng(4)
    for k in range(24):
        obs, masks = core.observe(state), core.legal_action_mask(state)
        acts = np.stack([racer(obs[:, s], masks[:, s], rng) for s in range(2)], axis=1)
        state, _ = core.step(state, acts, rows=np.arange(batch) >= (k * batch) // 24)
    seat = np.arange(batch) % 2
    keys = streams.draw(state.key, streams.POLICY, seat, state.decisions[np.arange(batch), seat])
    return state, seat, keys


@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_a_planners_decision_in_a_game_does_not_depend_on_the_other_rows(data):
    """A planner handed per-row streams (the match library's and the environments' rng) plans
    each game from that game's key alone: the same moves and the same rollout statistics for a
    row whatever other rows share the batch, in whatever order, and whatever the batch size."""
    from agents.planner import PlannerBot
    from spit_env import core

    state, seat, keys = _planner_table()
    planner = PlannerBot(rollouts=3, horizon_ms=1500, confidence=0.0)

    def plan(idx):
        idx = np.asarray(idx)
        obs = core.observe(state, idx, seat[idx])
        masks = core.legal_action_mask(state, idx, seat[idx])
        return planner.plan(obs, masks, streams.RowStreams(keys[idx]),
                            table=core.public_table(state, idx, seat[idx]))

    full = plan(np.arange(state.batch_size))
    assert full.planned.sum() >= 4
    idx = data.draw(st.lists(st.integers(0, state.batch_size - 1), min_size=1, max_size=6,
                             unique=True))
    part = plan(idx)
    np.testing.assert_array_equal(part.actions, full.actions[idx])
    np.testing.assert_array_equal(part.value, full.value[idx])
    for j, row in enumerate(idx):  # every candidate's statistics, row by row
        mine, theirs = part.cand_row == j, full.cand_row == row
        np.testing.assert_array_equal(part.cand_action[mine], full.cand_action[theirs])
        np.testing.assert_array_equal(part.mean_diff[mine], full.mean_diff[theirs])


def test_a_planners_games_play_the_same_in_any_batch():
    """End to end through the match library: game g against greedy is the same game (moves,
    length, outcome) alone in a batch of one or among other games in a larger batch."""
    from agents.arena import Player, run_games

    planner = Player("planner-small", "planner", None, dict(rollouts=2, horizon_ms=800))
    config = SpitConfig(max_game_ms=8_000)
    together = run_games(planner, "greedy", np.arange(6), config=config, batch_size=4)
    for g in (1, 4):
        alone = run_games(planner, "greedy", [g], config=config, batch_size=1)
        for field in ("winner", "steps", "decisions", "clock_ms"):
            assert alone[field][0] == together[field][g], (g, field)
