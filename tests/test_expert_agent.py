"""The search player (agents.expert): the planner around the shipped network. It is registered
with its budgets, refuses bad budgets by name, takes the network's move as its reference, plays
legal moves through every runner (environments, match library, tournament and replay CLIs, the
terminal game), and a game's moves depend on that game alone; "expert" as a player name and as a
latency preset ("expert@club", "racer@pro") never mix up."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sb3_contrib")

import agents  # noqa: E402
import spit_env  # noqa: E402
from agents import arena  # noqa: E402
from agents.expert import NETWORK, PROFILES, ExpertBot  # noqa: E402
from spit_env import core, streams  # noqa: E402
from spit_env.config import SpitConfig  # noqa: E402
from spit_env.latency import DEPRECATED_PRESETS, PRESETS, Latency  # noqa: E402
from spit_env.policy import (  # noqa: E402
    apply_profile,
    call_policy,
    parse_profile,
    register_policy,
    registered_policies,
)

TINY = dict(rollouts=2, horizon_ms=600)
SHORT = SpitConfig(max_game_ms=8_000)


def _mid_game(batch: int = 12, steps: int = 24, seed: int = 4):
    """Mid-game states of racer against racer (rows stopped after different numbers of steps)
    and each row's policy stream for seat ``row % 2``, as the match library keys it."""
    state = core.init(SpitConfig(max_game_ms=30_000), batch, seed=seed)
    racer, rng = agents.make("racer"), np.random.default_rng(seed)
    for k in range(steps):
        obs, masks = core.observe(state), core.legal_action_mask(state)
        acts = np.stack([racer(obs[:, s], masks[:, s], rng) for s in range(2)], axis=1)
        state, _ = core.step(state, acts, rows=np.arange(batch) >= (k * batch) // steps)
    seat = np.arange(batch) % 2
    keys = streams.draw(state.key, streams.POLICY, seat, state.decisions[np.arange(batch), seat])
    return state, seat, keys


def _plan(bot, state, seat, keys, idx):
    idx = np.asarray(idx)
    obs = core.observe(state, idx, seat[idx])
    masks = core.legal_action_mask(state, idx, seat[idx])
    return bot.plan(obs, masks, streams.RowStreams(keys[idx]),
                    table=core.public_table(state, idx, seat[idx])), obs, masks


# --- registration, budgets, bad input ------------------------------------------------------------
def test_the_expert_profiles_are_registered_with_their_budgets():
    assert {"expert", "expert-fast"} <= set(registered_policies())
    default, fast = agents.make("expert"), agents.make("expert-fast")
    assert isinstance(default, ExpertBot) and default.reads_public_table
    for bot, name in ((default, "expert"), (fast, "expert-fast")):
        assert (bot.rollouts, bot.horizon_ms) == (PROFILES[name]["rollouts"],
                                                 PROFILES[name]["horizon_ms"])
    assert fast.rollouts * fast.horizon_ms < default.rollouts * default.horizon_ms
    net = agents.make("expert", rollouts=3, rollout_policy=NETWORK)
    assert net.rollouts == 3 and net.rollout_policy == NETWORK and net._default is net.network
    assert "ExpertBot(" in repr(net) and "network=shipped" in repr(net)
    assert agents.make("expert", rollout_policy="chain").rollout_policy == "chain"


def test_help_texts_list_the_expert():
    from experiments.cli import player_help

    assert "expert" in player_help() and "expert-fast" in player_help()
    assert "expert" in agents.__doc__


@pytest.mark.parametrize("kwargs, match", [
    (dict(rollouts=0), "rollouts"), (dict(rollouts=1.5), "rollouts"),
    (dict(horizon_ms=0), "horizon_ms"), (dict(horizon_ms="3s"), "horizon_ms"),
    (dict(confidence=-1), "confidence"), (dict(win_weight=float("inf")), "win_weight"),
    (dict(rollout_policy="nobody"), "unknown policy"),
    (dict(rollout_policy="planner-fast"), "rollout_policy"),
    (dict(rollout_policy="expert"), "rollout_policy"),
    (dict(threads=0), "threads"), (dict(threads=True), "threads"),
    (dict(reference="racer"), "reference"),
    (dict(path="no/such/model.zip"), "path"),
    (dict(path="no/such/model.zip", model=object()), "not both"),
])
def test_bad_budgets_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        agents.make("expert", **kwargs)


def test_threads_may_be_a_numpy_integer():
    bot = agents.make("expert", threads=np.int64(1))
    assert bot.threads == 1 and type(bot.threads) is int
    assert type(bot.network.threads) is int


def test_a_bad_budget_is_refused_before_the_network_is_read():
    # the file does not exist: had the network been loaded first, the error would name path
    with pytest.raises(ValueError, match="rollouts"):
        agents.make("expert", rollouts=0, path="no/such/model.zip")


# --- "expert": a player, and the old name of the "pro" latency preset -----------------------------
def test_expert_the_player_and_expert_the_latency_never_mix_up():
    assert parse_profile("expert") == ("expert", None)
    assert parse_profile("expert@club") == ("expert", Latency.preset("club"))
    assert parse_profile("racer@pro") == ("racer", Latency.preset("pro"))
    assert parse_profile("expert@pro") == ("expert", Latency.preset("pro"))
    player = arena.Player.parse("expert-fast@club")
    assert (player.policy, player.latency.name) == ("expert-fast", "club")
    player = arena.Player.parse("racer@pro")
    assert (player.policy, player.latency.name) == ("racer", "pro")
    # seated: the latency lands in the seat's config, the bot is the named one
    bot, config = apply_profile("expert@club", SpitConfig(latency="novice"), 1, **TINY)
    assert isinstance(bot, ExpertBot) and config.latency[1].name == "club"
    assert config.latency[0].name == "novice"
    racer, config = apply_profile("racer@pro", SpitConfig(), 0)
    assert type(racer).__name__ == "RacerBot" and config.latency[0].name == "pro"
    assert racer.latency.name == "pro"  # the racer believes its seat's latency
    # the order swapped: the error says which part is which
    with pytest.raises(ValueError, match="racer@pro"):
        parse_profile("expert@racer")
    with pytest.raises(ValueError, match="did you mean 'expert@club'"), \
            pytest.warns(FutureWarning, match="preset 'expert' is now 'pro'"):
        agents.make("club@expert")  # "expert" right of "@": the old preset name, read as pro
    with pytest.raises(ValueError, match="unknown policy 'nobody'"):
        agents.make("nobody@pro")


# --- the reference move is the network's ----------------------------------------------------------
def test_the_reference_is_the_networks_move():
    state, seat, keys = _mid_game()
    network = agents.make("network")
    for rollout_policy in ("racer", NETWORK):
        bot = ExpertBot(rollouts=3, horizon_ms=1000, rollout_policy=rollout_policy)
        every = np.arange(state.batch_size)
        plan, obs, masks = _plan(bot, state, seat, keys, every)
        assert plan.planned.sum() >= 4
        expected = network(obs, masks, np.random.default_rng(0))
        np.testing.assert_array_equal(plan.reference[plan.planned], expected[plan.planned])
        assert masks[every, plan.actions].all()


def test_with_no_deviation_allowed_the_expert_plays_the_network_game_for_game():
    """With one rollout per move no deviation passes the confidence test (its standard error is
    unknown): whole games of the expert against racer are the network's games, move for move."""
    ids = np.arange(4)
    expert = arena.Player("expert-1", "expert", None, dict(rollouts=1, horizon_ms=1000))
    searched = arena.run_games(expert, "racer", ids, config=SHORT, batch_size=4)
    alone = arena.run_games("network", "racer", ids, config=SHORT, batch_size=4)
    for field in ("winner", "steps", "decisions", "clock_ms"):
        np.testing.assert_array_equal(searched[field], alone[field], err_msg=field)
    # and the search does deviate when it may (else the test above could not fail)
    state, seat, keys = _mid_game(batch=24, steps=30)
    bot = ExpertBot(rollouts=4, horizon_ms=1500, confidence=0.0)
    plan, _, _ = _plan(bot, state, seat, keys, np.arange(24))
    assert (plan.actions != plan.reference).any()


# --- a game's moves depend on that game alone ----------------------------------------------------
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_an_experts_decision_in_a_game_does_not_depend_on_the_other_rows(data):
    """With the network in the rollouts (one forward pass per simulated epoch over all rows):
    the same moves and rollout statistics for a row whatever other rows share the batch."""
    state, seat, keys = _mid_game()
    bot = ExpertBot(rollouts=3, horizon_ms=1200, confidence=0.0, rollout_policy=NETWORK)
    full, _, _ = _plan(bot, state, seat, keys, np.arange(state.batch_size))
    assert full.planned.sum() >= 4
    idx = data.draw(st.lists(st.integers(0, state.batch_size - 1), min_size=1, max_size=5,
                             unique=True))
    part, _, _ = _plan(bot, state, seat, keys, idx)
    np.testing.assert_array_equal(part.actions, full.actions[idx])
    np.testing.assert_array_equal(part.reference, full.reference[idx])
    np.testing.assert_array_equal(part.value, full.value[idx])
    for j, row in enumerate(idx):
        mine, theirs = part.cand_row == j, full.cand_row == row
        np.testing.assert_array_equal(part.cand_action[mine], full.cand_action[theirs])
        np.testing.assert_array_equal(part.mean_diff[mine], full.mean_diff[theirs])


def test_an_experts_games_play_the_same_in_any_batch():
    expert = arena.Player("expert-small", "expert", None, dict(TINY, rollout_policy=NETWORK))
    together = arena.run_games(expert, "greedy", np.arange(5), config=SHORT, batch_size=4)
    for g in (1, 4):
        alone = arena.run_games(expert, "greedy", [g], config=SHORT, batch_size=1)
        for field in ("winner", "steps", "decisions", "clock_ms"):
            assert alone[field][0] == together[field][g], (g, field)


# --- legal moves in every view --------------------------------------------------------------------
def test_the_expert_is_an_opponent_of_every_environment():
    env = gymnasium.make("Spit-v0", opponent="expert", config=SpitConfig(max_game_ms=3_000))
    _, info = env.reset(seed=1)
    done = False
    while not done:
        _, _, term, trunc, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
        done = term or trunc
    venv = spit_env.SpitVecEnv(4, opponent="expert-fast@club",
                               config=SpitConfig(max_game_ms=5_000, latency="pro"), seed=3)
    venv.reset()
    for i in range(4):
        latency = venv.duel.row_config(i).latency
        seat = venv.learner_seats[i]
        assert (latency[1 - seat].name, latency[seat].name) == ("club", "pro")
    rng = np.random.default_rng(0)
    for _ in range(30):
        masks = venv.action_masks()
        venv.step(np.where(masks, rng.random(masks.shape), -1).argmax(axis=1))


def test_the_expert_plays_the_learner_seat_and_the_agents_of_pettingzoo():
    bot = ExpertBot(**TINY, rollout_policy=NETWORK)
    rng = np.random.default_rng(0)
    venv = spit_env.SpitVecEnv(4, opponent="racer@pro", config=SHORT, seed=5)
    obs = venv.reset()
    for _ in range(20):
        actions = call_policy(bot, obs, venv.action_masks(), venv.learner_rng(),
                              table=venv.public_table())
        obs, *_ = venv.step(actions)
    par = spit_env.parallel_env(config=SHORT)
    obs, _ = par.reset(seed=3)
    for _ in range(20):
        moves = {}
        for agent in par.agents:
            mask = obs[agent]["action_mask"][None].astype(bool)
            moves[agent] = int(call_policy(bot, obs[agent]["observation"][None], mask, rng,
                                           table=par.public_table(agent))[0])
        obs, _, term, trunc, _ = par.step(moves)
        if not par.agents:
            break


@pytest.mark.parametrize("config", [SpitConfig(max_game_ms=6_000),
                                    SpitConfig(max_game_ms=6_000, auto_flip=False,
                                               wrap_ranks=False, observe_opponent_move=False)])
def test_the_expert_plays_whole_games_in_the_match_library(config):
    expert = arena.Player("expert-small", "expert", None, dict(TINY, rollout_policy=NETWORK))
    res = arena.run_games(expert, "racer@pro", np.arange(3), config=config, batch_size=3)
    assert (res["steps"] > 0).all()  # call_policy checked every move


# --- the scripts ------------------------------------------------------------------------------------
def test_the_tournament_and_replay_clis_play_the_expert(tmp_path, monkeypatch, capsys):
    from experiments import replay, tournament
    from spit_env import policy
    from spit_env import replay as replay_lib

    # a tiny budget under a name of its own, so the CLIs play it in a second
    monkeypatch.setitem(policy._REGISTRY, "expert-tiny",
                        lambda **kw: ExpertBot(**{**TINY, "rollout_policy": NETWORK, **kw}))
    out = tournament.main(["--players", "expert-tiny,racer@pro", "--games", "1", "--quiet",
                           "--json", str(tmp_path / "t.json")])
    (row,) = out["tournament"]["pairings"]
    assert (row["a"], row["b"], row["games"]) == ("expert-tiny", "racer@pro", 2)
    page = tmp_path / "r.html"
    record = replay.main(["--players", "expert-tiny@club,racer", "--json",
                          str(tmp_path / "r.json"), "--out", str(page), "--quiet"])
    assert page.is_file() and record["players"][0]["name"] == "expert-tiny@club"
    assert replay_lib.check(replay_lib.load(tmp_path / "r.json")) == len(record["steps"]) + 1
    with pytest.raises(SystemExit):
        tournament.main(["--players", "expert@racer,racer", "--games", "1"])
    assert "racer@pro" in capsys.readouterr().err


def test_the_expert_plays_against_a_human():
    from experiments.realtime.engine import RealtimeGame

    game = RealtimeGame("expert-fast@club", seed=1, tick_ms=25)
    events = game.advance(4000.0)
    assert any(e["type"] == "play" and e["player"] == 1 for e in events), "the expert plays"


def test_the_old_preset_name_still_reads_with_a_warning_and_no_player_takes_a_preset_name():
    with pytest.warns(FutureWarning, match="'pro'"):  # shown by default, unlike a Deprecation
        assert Latency.parse("expert") == Latency.preset("pro")
    with pytest.warns(FutureWarning):
        assert parse_profile("racer@expert") == ("racer", Latency.preset("pro"))
    # a name is a player or a preset, never both (the old alias "expert" is the player's now)
    assert not set(PRESETS) & set(registered_policies())
    for name in PRESETS:
        with pytest.raises(ValueError, match="latency preset"):
            register_policy(name, lambda **kw: None)
    assert set(registered_policies()) >= set(DEPRECATED_PRESETS)  # why the preset was renamed


@pytest.mark.parametrize("command", [
    ["experiments.tournament", "--players", "racer@expert,random", "--games", "1", "--quiet"],
    ["experiments.train_ppo", "--opponent", "racer@expert", "--init-model", "nowhere.zip"],
])
def test_the_old_preset_name_is_shown_on_the_command_line_in_one_line(command, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-m", *command, "--out" if "--init-model" in command
                           else "--json", str(tmp_path / "out")], cwd=root, capture_output=True,
                          text=True, timeout=300)
    said = [line for line in proc.stderr.splitlines() if "'expert'" in line]
    assert said == ["warning: the latency preset 'expert' is now 'pro' ('expert' is also a "
                    "player's name)"], proc.stderr
    assert "Warning" not in proc.stderr  # no file, line or category: one line for the user
