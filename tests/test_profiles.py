"""One profile route (spit_env.policy.apply_profile): a bot that models its own latency believes
the latency its seat plays at, through every entry point (the environments, the VecEnv's per-row
opponents, the match library, the replay, the real-time game, the planner's rollouts)."""

from __future__ import annotations

import ast
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import spit_env  # noqa: F401  (registers Spit-v0)
from agents import arena
from agents.heuristics import GreedyBot, RacerBot
from spit_env import Latency, SpitConfig
from spit_env.envs.vec import SpitVecEnv
from spit_env.policy import apply_profile, register_policy, seat_profile

ROOT = Path(__file__).resolve().parents[1]
EXPERT, CLUB, NOVICE = (Latency.preset(n) for n in ("pro", "club", "novice"))


class SpyRacer(RacerBot):
    """The racer, noting the belief of every copy the route seats (read from its ``latency``)."""

    seated: list = []

    def with_latency(self, latency, opponent_latency=None):
        bot = super().with_latency(latency, opponent_latency)
        SpyRacer.seated.append(bot.latency)
        return bot


@pytest.fixture
def spy():
    register_policy("spy-racer", SpyRacer, overwrite=True)
    SpyRacer.seated = []
    return SpyRacer.seated


def test_apply_profile_tells_the_bot_its_seat_latency():
    bot, config = apply_profile("racer@pro", SpitConfig(), 1)
    assert config.latency == (CLUB, EXPERT)
    assert bot.latency == EXPERT
    # a bare name believes the config's latency of its seat, whichever seat
    two = SpitConfig(latency=("novice", "pro"))
    assert apply_profile("racer", two, 0)[0].latency == NOVICE
    assert apply_profile("racer", two, 1)[0].latency == EXPERT
    # what it believes of the opponent stays its own
    assert apply_profile("racer", two, 0)[0].opponent_latency == CLUB
    # a policy object is seated as a copy; the caller's object keeps its belief
    mine = RacerBot(latency="novice")
    seated, _ = apply_profile(mine, SpitConfig(), 0)
    assert seated.latency == CLUB and mine.latency == NOVICE
    # a policy without the hook is seated as it is
    greedy = GreedyBot()
    assert apply_profile(greedy, two, 1)[0] is greedy
    with pytest.raises(ValueError, match="seat"):
        apply_profile("racer", SpitConfig(), True)


def test_gymnasium_opponent_believes_its_profile():
    env = gymnasium.make("Spit-v0", opponent="racer@pro", learner_seat=0)
    env.reset(seed=0)
    duel = env.unwrapped.duel
    assert env.unwrapped.config.latency[1] == EXPERT  # its moves land at expert latency
    assert duel.policy.latency == EXPERT  # and it predicts races at expert latency
    env.unwrapped.set_opponent("racer")  # a bare name: the config's latency of its seat
    assert env.unwrapped.duel.policy.latency == CLUB
    bare = gymnasium.make("Spit-v0", opponent="racer", config=SpitConfig(latency="novice"))
    bare.reset(seed=0)
    assert bare.unwrapped.duel.policy.latency == NOVICE


def test_vec_env_opponents_believe_their_profiles_row_by_row():
    venv = SpitVecEnv(4, opponent="racer@pro", learner_seat=0, seed=0)
    venv.reset()
    assert venv.config.latency[1] == EXPERT
    assert venv.duel.policy.latency == EXPERT
    venv.set_opponent("racer@novice", indices=[1, 2])
    beliefs = [p.latency for p in venv.duel.policy]  # one policy per row now
    assert beliefs == [EXPERT, NOVICE, NOVICE, EXPERT]
    venv.set_opponent("racer", indices=[3])
    assert venv.duel.policy[3].latency == CLUB
    venv.close()


def test_random_learner_seat_seats_the_opponent_once_per_seat():
    """With the learner's seat drawn per game and seats of different latencies, the opponent in
    seat 0 believes seat 0's latency and the one in seat 1 seat 1's, in the games played too."""
    config = SpitConfig(latency=("novice", "pro"))
    venv = SpitVecEnv(64, opponent="racer", learner_seat="random", config=config, seed=0)
    seated = venv.duel._opponents[0][1]
    assert seated[0].latency == NOVICE and seated[1].latency == EXPERT
    calls = []
    for s in (0, 1):
        bot = seated[s]
        seated[s] = lambda obs, masks, rng, b=bot, s=s: calls.append((s, len(obs))) or b(
            obs, masks, rng)
    venv.reset()
    for _ in range(30):
        masks = venv.action_masks()
        venv.step(np.argmax(masks, axis=1))
    assert {s for s, _ in calls} == {0, 1}, "both seated copies decide for their seat's rows"
    venv.close()


def test_seat_profile_is_the_one_writer_of_a_seat_latency():
    """A profile is parsed once and its latency written into its seat; a player's latency kept
    apart from its name (agents.arena.Player) is written by the same function."""
    base = SpitConfig(latency="novice")
    assert seat_profile("racer@pro", base, 1) == ("racer", SpitConfig(latency=("novice", "pro")))
    assert seat_profile("racer", base, 0, EXPERT) == ("racer", SpitConfig(latency=("pro", "novice")))
    greedy = GreedyBot()
    for spec in ("racer", greedy):
        name, config = seat_profile(spec, base, 1)
        assert name == spec and config is base  # nothing to seat
    for bad in (2, True):
        with pytest.raises(ValueError, match="seat must be 0 or 1"):
            seat_profile("racer", base, bad)
    with pytest.raises(ValueError, match="has a latency of its own"):
        seat_profile("racer@club", base, 0, EXPERT)
    with pytest.raises(ValueError, match="profile"):
        seat_profile("racer@fast", base, 0)
    # the match library's players seat their latency through it, as a profile would
    parsed = arena.Player.parse("racer@pro")
    for s in (0, 1):
        policy, config = parsed.take_seat(base, s)
        bot, want = apply_profile("racer@pro", base, s)
        assert config == want and policy.latency == bot.latency == EXPERT


def test_arena_players_believe_their_profiles():
    match = arena.Match("racer@pro", "racer", [0, 1], config=SpitConfig(latency="novice"))
    assert match.config.latency == (EXPERT, NOVICE)
    assert [p.latency for p in match.policies] == [EXPERT, NOVICE]
    study = arena.Player("fast", "racer", arena.study_latency(300))
    policy, config = study.take_seat(SpitConfig(), 1)
    assert policy.latency == config.latency[1] == arena.study_latency(300)


class _Fixed:
    """A racer whose belief the route cannot change (it hides the latency hook)."""

    def __init__(self, latency):
        self.bot = RacerBot(latency=latency)

    def __call__(self, observations, action_masks, rng):
        return self.bot(observations, action_masks, rng)


def test_arena_games_play_as_a_racer_built_with_that_belief():
    """The games of "racer@pro" are those of a racer constructed believing expert in a seat at
    expert latency, not those of one believing club: the belief reaches the games."""
    for name in ("pro", "club"):
        register_policy(f"racer-believing-{name}", lambda n=name: _Fixed(n), overwrite=True)
    ids, config = np.arange(6), SpitConfig(latency=("pro", "club"))
    kw = dict(seed=3, batch_size=3)
    via_profile = arena.run_games("racer@pro", "greedy", ids, **kw)
    expert = arena.run_games("racer-believing-pro", "greedy", ids, config=config, **kw)
    club = arena.run_games("racer-believing-club", "greedy", ids, config=config, **kw)
    for key in ("winner", "steps", "clock_ms"):
        np.testing.assert_array_equal(via_profile[key], expert[key])
    assert (via_profile["clock_ms"] != club["clock_ms"]).any()


def test_replay_and_realtime_bots_believe_their_profiles(spy):
    from experiments.realtime.engine import RealtimeGame
    from experiments.replay import play_game

    record = play_game(["spy-racer@pro", "spy-racer"], seed=1,
                       config=SpitConfig(latency="novice", max_game_ms=20_000))
    assert spy == [EXPERT, NOVICE]
    assert SpitConfig.from_dict(record["config"]).latency == (EXPERT, NOVICE)
    game = RealtimeGame("spy-racer@pro", human_seat=0)
    assert spy[-1] == EXPERT and game.policy.latency == EXPERT
    assert game.config.latency[1] == EXPERT
    # the human's seat: a fixed motor time, the other rules as given
    game = RealtimeGame("spy-racer", human_seat=1, motor_ms=70, tick_ms=20,
                        config=SpitConfig(latency="novice", max_game_ms=30_000))
    assert game.config.latency == (NOVICE, Latency.fixed(70))
    assert game.config.wait_ms == 20 and game.config.max_game_ms == 30_000


def test_planner_rollout_seats_believe_the_config(spy):
    from agents.planner import PlannerBot

    planner = PlannerBot(rollouts=2, horizon_ms=500, rollout_policy="spy-racer")
    env = gymnasium.make("Spit-v0", opponent=planner, learner_seat=0,
                         config=SpitConfig(latency=("pro", "novice"), max_game_ms=20_000))
    env.reset(seed=0)
    for _ in range(30):
        mask = env.unwrapped.action_masks()
        env.step(int(np.flatnonzero(mask)[-1]))
    assert set(spy) == {EXPERT, NOVICE}  # each rollout seat believes its own seat's latency


def test_the_profile_route_is_the_only_caller_of_the_latency_hook():
    callers = []
    for folder in ("spit_env", "agents", "experiments"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute) and node.attr == "with_latency" \
                        and path.relative_to(ROOT).as_posix() != "spit_env/policy.py":
                    callers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                if isinstance(node, ast.Constant) and node.value == "with_latency" \
                        and path.relative_to(ROOT).as_posix() != "spit_env/policy.py":
                    callers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not callers, f"the latency hook is looked up outside apply_profile: {callers}"
