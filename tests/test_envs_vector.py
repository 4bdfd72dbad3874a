"""The native Gymnasium vector env of Spit-v0 (``spit_env.envs.vector``).

``gymnasium.make_vec("Spit-v0", ..., vectorization_mode="vector_entry_point")`` builds one
VectorEnv over the batched core; it follows Gymnasium's vector API (batched spaces, fixed-shape
dict infos with presence arrays, next-step auto-reset declared in metadata, Gymnasium's own
vector wrappers) and each row plays the game Spit-v0 plays.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers.vector import DictInfoToList, RecordEpisodeStatistics

import spit_env
from spit_env.envs.vector import SpitVectorEnv
from spit_env.rules import N_ACTIONS, OBS_DIM

#: The infos of every reset and step (docs/ENVIRONMENTS.md "Infos, masks and events").
KEYS = ["action_mask", "learner_seat", "clock_ms", "illegal"]


def first_legal(observations, action_masks, rng):
    """A deterministic Policy: the first legal move other than WAIT, else WAIT."""
    m = np.asarray(action_masks, bool)
    return np.where(m[:, 1:].any(1), 1 + m[:, 1:].argmax(1), 0).astype(np.int64)


def random_legal(masks, rng):
    return np.array([rng.choice(np.flatnonzero(row)) for row in masks], np.int64)


def make(n=4, **kwargs):
    return gymnasium.make_vec(spit_env.GYM_ID, num_envs=n,
                              vectorization_mode="vector_entry_point", **kwargs)


def test_make_vec_builds_one_vector_env_over_the_core():
    env = make(5, opponent="random")
    assert isinstance(env, SpitVectorEnv) and isinstance(env, gymnasium.vector.VectorEnv)
    assert env.num_envs == 5 and env.duel.batch_size == 5
    assert env.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert env.single_observation_space == gymnasium.spaces.Box(0, 1, (OBS_DIM,), np.float32)
    assert env.single_action_space == gymnasium.spaces.Discrete(N_ACTIONS)
    assert env.observation_space == batch_space(env.single_observation_space, 5)
    assert env.action_space == batch_space(env.single_action_space, 5)
    assert env.spec.id == spit_env.GYM_ID and env.spec.kwargs["num_envs"] == 5
    # with no mode given, Gymnasium picks the registered vector entry point too
    assert isinstance(gymnasium.make_vec(spit_env.GYM_ID, num_envs=2), SpitVectorEnv)


def test_a_run_follows_the_vector_api_with_masks_in_infos_and_next_step_autoreset():
    env = make(6, opponent="greedy")
    rng = np.random.default_rng(1)
    obs, infos = env.reset(seed=11)
    ended = np.zeros(6, bool)
    finished = 0
    for _ in range(4000):
        assert obs in env.observation_space
        assert sorted(infos) == sorted(KEYS + ["_" + k for k in KEYS])
        assert infos["action_mask"].shape == (6, N_ACTIONS) and infos["action_mask"].dtype == bool
        for key, dtype in (("learner_seat", np.int64), ("clock_ms", np.int64), ("illegal", bool)):
            assert infos[key].shape == (6,) and infos[key].dtype == dtype, key
        assert all(infos["_" + k].all() and infos["_" + k].shape == (6,) for k in KEYS)
        assert not infos["illegal"].any()
        np.testing.assert_array_equal(infos["action_mask"], env.action_masks())
        assert set(infos["learner_seat"].tolist()) <= {0, 1}
        assert infos["action_mask"].any(1).all()
        actions = random_legal(infos["action_mask"], rng)
        assert actions in env.action_space
        obs, rew, term, trunc, infos = env.step(actions)
        assert rew.shape == (6,) and term.dtype == bool and trunc.dtype == bool
        assert not (term & trunc).any()
        # next step: the rows that ended last step restart, reward 0, a fresh game
        assert (rew[ended] == 0).all() and not (term | trunc)[ended].any()
        assert (obs[ended][:, 4] == 0).all() and (infos["clock_ms"][ended] == 0).all()
        assert set(np.abs(rew[term]).tolist()) <= {0.0, 1.0}
        finished += int((term | trunc).sum())
        ended = term | trunc
        if finished >= 12:
            break
    assert finished >= 12


def test_the_action_of_a_row_being_restarted_is_ignored():
    def run(filler):
        env = make(3, opponent=first_legal, learner_seat=0)
        obs, infos = env.reset(seed=2)
        out, ended = [], np.zeros(3, bool)
        for _ in range(3000):
            a = first_legal(obs, infos["action_mask"], None)
            a[ended] = filler  # what a row restarting gets does not matter, even illegal
            obs, rew, term, trunc, infos = env.step(a)
            out.append((obs.copy(), rew.copy(), term.copy(), trunc.copy()))
            ended = term | trunc
            if len(out) > 50 and ended.any() and sum(o[2].sum() + o[3].sum() for o in out) > 4:
                break
        return out

    a, b = run(0), run(N_ACTIONS - 1)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):
            np.testing.assert_array_equal(u, v)


def test_each_row_plays_the_game_spit_v0_plays():
    n, seed = 3, 7
    venv = make(n, opponent=first_legal, learner_seat=0)
    obs, infos = venv.reset(seed=seed)
    rows = {i: [(obs[i].copy(), 0.0, False, False)] for i in range(n)}
    done = np.zeros(n, bool)
    restarted = {}
    while len(restarted) < n:
        a = first_legal(obs, infos["action_mask"], None)
        obs, rew, term, trunc, infos = venv.step(a)
        for i in range(n):
            if done[i] and i not in restarted:
                restarted[i] = obs[i].copy()
            elif not done[i]:
                rows[i].append((obs[i].copy(), float(rew[i]), bool(term[i]), bool(trunc[i])))
        done |= term | trunc
    single = gymnasium.make(spit_env.GYM_ID, opponent=first_legal, learner_seat=0).unwrapped
    games = []
    for g in range(n + n):
        o, info = single.reset(seed=seed) if g == 0 else single.reset()
        steps = [(o, 0.0, False, False)]
        while not (steps[-1][2] or steps[-1][3]):
            o, r, te, tr, info = single.step(int(first_legal(o[None], single.action_masks()[None],
                                                             None)[0]))
            steps.append((o, r, te, tr))
        games.append(steps)
    for i in range(n):  # row i's first game is game i of the seed
        assert len(rows[i]) == len(games[i])
        for (o1, *r1), (o2, *r2) in zip(rows[i], games[i], strict=True):
            np.testing.assert_array_equal(o1, o2)
            assert r1 == r2
    # the restarts take the next game ids, in order of ending (row order within a step)
    assert all(any(np.array_equal(restarted[i], games[g][0][0]) for g in range(n, 2 * n))
               for i in range(n))


def test_seeded_resets_repeat_and_unseeded_ones_go_on():
    def trajectory(env, seed):
        rng = np.random.default_rng(0)
        obs, infos = env.reset(seed=seed)
        out = [obs]
        for _ in range(40):
            obs, *_, infos = env.step(random_legal(infos["action_mask"], rng))
            out.append(obs)
        return np.stack(out)

    env = make(4, opponent="greedy")
    first = trajectory(env, 5)
    np.testing.assert_array_equal(first, trajectory(env, 5))
    np.testing.assert_array_equal(first, trajectory(make(4, opponent="greedy"), 5))
    assert not np.array_equal(first, trajectory(env, 6))
    env.reset(seed=5)
    obs, _ = env.reset()  # games 4..7 of seed 5
    wide, _ = make(8, opponent="greedy").reset(seed=5)
    np.testing.assert_array_equal(obs, wide[4:])


def test_gymnasiums_vector_wrappers_take_it():
    env = RecordEpisodeStatistics(make(4, opponent="random"))
    rng = np.random.default_rng(3)
    _, infos = env.reset(seed=0)
    episodes = 0
    for _ in range(3000):
        _, _, term, trunc, infos = env.step(random_legal(infos["action_mask"], rng))
        if "episode" in infos:
            episodes += int(infos["_episode"].sum())
            assert (infos["episode"]["l"][infos["_episode"]] > 0).all()
        if episodes >= 3:
            break
    assert episodes >= 3
    listed = DictInfoToList(make(2))
    _, infos = listed.reset(seed=0)
    assert len(infos) == 2 and infos[0]["action_mask"].shape == (N_ACTIONS,)


def test_an_illegal_action_is_played_as_wait_and_reported():
    env, twin = make(4, opponent="greedy"), make(4, opponent="greedy")
    obs, infos = env.reset(seed=8)
    twin.reset(seed=8)
    a = first_legal(obs, infos["action_mask"], None)
    a[0] = np.flatnonzero(~infos["action_mask"][0])[-1]
    got = env.step(a)
    a[0] = 0  # WAIT
    waited = twin.step(a)
    assert got[4]["illegal"].tolist() == [True, False, False, False]
    assert not waited[4]["illegal"].any()
    for x, y in zip(got[:4], waited[:4], strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(got[4]["clock_ms"], waited[4]["clock_ms"])


def test_render_gives_each_rows_table():
    env = make(2, render_mode="ansi")
    assert env.render() is None
    env.reset(seed=0)
    frames = env.render()
    assert isinstance(frames, tuple) and len(frames) == 2 and "centre" in frames[0]


@pytest.mark.parametrize("num_envs", [0, -3, 2.5, "4", None, True])
def test_num_envs_must_be_an_integer_at_least_one(num_envs):
    with pytest.raises(ValueError, match="num_envs must be an integer >= 1"):
        make(num_envs)


def test_bad_vectorization_arguments_are_refused():
    with pytest.raises(ValueError, match="vectorization mode"):
        gymnasium.make_vec(spit_env.GYM_ID, num_envs=2, vectorization_mode="batched")
    with pytest.raises(gymnasium.error.Error, match="vector_kwargs"):
        make(2, vector_kwargs={"copy": False})
    with pytest.raises(gymnasium.error.Error, match="wrappers"):
        make(2, wrappers=[gymnasium.wrappers.ClipReward])
    with pytest.raises(ValueError, match="max_episode_steps"):
        make(2, max_episode_steps=100)
    with pytest.raises(ValueError, match="unknown policy"):
        make(2, opponent="nobody")
    with pytest.raises(ValueError, match="render_mode"):
        make(2, render_mode="bogus")


def test_misuse_is_refused_and_changes_nothing():
    env = make(3, opponent="greedy", config=spit_env.SpitConfig(illegal_action="raise"))
    with pytest.raises(ValueError, match="before reset"):
        env.step(np.zeros(3, np.int64))
    obs, infos = env.reset(seed=4)
    for bad, what in ((np.zeros(2, np.int64), "actions must be"),
                      (np.zeros(3), "actions must be"),
                      (np.full(3, N_ACTIONS), "action ids 0-22"),
                      (np.where(infos["action_mask"], -1, np.arange(N_ACTIONS)).max(1),
                       "actions\\[0\\]")):
        with pytest.raises(ValueError, match=what):
            env.step(bad)
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)
    with pytest.raises(ValueError, match="deal"):
        env.reset(options={"deal": [[1, 2], [3]]})
    # nothing was changed: the same step as in an env that saw none of it
    fresh = make(3, opponent="greedy", config=spit_env.SpitConfig(illegal_action="raise"))
    _, fresh_infos = fresh.reset(seed=4)
    a = first_legal(obs, infos["action_mask"], None)
    for x, y in zip(env.step(a)[:4], fresh.step(a)[:4], strict=True):
        np.testing.assert_array_equal(x, y)
