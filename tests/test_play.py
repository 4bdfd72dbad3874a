"""The terminal game: the real-time engine (experiments/realtime/engine.py) driven by a fake clock, and the
Textual app (experiments/realtime/tui.py) driven headless by Textual's own test pilot with scripted
key presses. Time is the fake clock's: nothing here sleeps or reads the wall clock."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from browser_helpers import chromium, screenshot_folder, svg_to_png
from helpers import build_deal

import agents
from experiments.realtime.engine import RealtimeGame, reaction_summary
from experiments.realtime.keys import GAME_KEYS, key_of
from spit_env import core, replay, rules
from spit_env.reference import RandomSource

textual = pytest.importorskip("textual", reason="the terminal game needs Textual: pip install -c constraints.txt -e '.[play]'")
from experiments.realtime.tui import KEYMAP, PlayApp, key_action, summary_lines  # noqa: E402


def _human_moves(record, seat=0):
    return [s["actions"][seat] for s in record["steps"] if s["actions"][seat] != rules.WAIT]


def _until(game, wall, predicate, step=5.0, within=120_000.0):
    """Advance the game in small steps of wall time until predicate(game); returns the wall time."""
    limit = wall + within
    while not predicate(game):
        wall += step
        game.advance(wall)
        assert wall < limit and not game.over, "the condition never came"
    return wall


# --- the engine ----------------------------------------------------------------------------------
def test_the_bot_moves_while_the_human_waits():
    game = RealtimeGame("greedy@club", seed=1, tick_ms=25)
    events = game.advance(8000.0)
    assert game.snapshot["clock_ms"] <= 8000
    record = game.record()
    bot_plays = [e for e in events if e["type"] == "play" and e["player"] == 1]
    assert len(bot_plays) >= 3, "the bot plays on its own latency"
    assert _human_moves(record) == [], "a human who presses nothing only waits"
    # the idle human got a decision every tick: consecutive human decisions are tick_ms apart
    # (unless something else happened at that time: a spit or a round end cancels the WAIT)
    frames = [record["initial"]] + [s["snapshot"] for s in record["steps"]]
    decided = [frames[k]["clock_ms"] for k in range(len(record["steps"])) if frames[k]["in_flight"][0] is None]
    gaps = np.diff(decided)
    assert (gaps <= 25).mean() > 0.9 and gaps.min() >= 1
    assert replay.check(record) == len(record["steps"]) + 1


def test_states_are_shown_only_when_their_time_has_come():
    game = RealtimeGame("racer@pro", seed=2)
    wall = 0.0
    for _ in range(400):
        wall += 7.0
        game.advance(wall)
        assert game.snapshot["clock_ms"] <= wall
    assert game.snapshot["clock_ms"] > wall - 600, "and the game keeps up with the clock"


def test_a_key_is_played_at_the_next_decision_and_lands_motor_time_after_the_key():
    game = RealtimeGame("random@novice", seed=4, motor_ms=60, tick_ms=20)
    wall = _until(game, 0.0, lambda g: g.human_mask()[1:11].any() and not g.busy())
    action = int(np.flatnonzero(game.human_mask()[1:11])[0]) + 1
    wall += 3.4  # the key comes between two ticks
    stimulus = game.last_event_ms
    assert game.press(action, wall) is None
    game.advance(wall + 500)
    record = game.record()
    k = next(k for k, s in enumerate(record["steps"]) if s["actions"][0] == action)
    decided = ([record["initial"]] + [s["snapshot"] for s in record["steps"]])[k]["clock_ms"]
    assert wall <= decided < wall + 20, "played at the first decision after the key"
    landing = next(e for s in record["steps"] for e in s["events"]
                   if e["player"] == 0 and e["type"] in ("play", "bounce"))
    assert landing["clock_ms"] == math.ceil(wall) + 60, "the hand moved from the key press on"
    assert record["steps"][k]["latency_ms"][0] == math.ceil(wall) + 60 - decided
    assert game.reactions[-1].action == action
    assert game.reactions[-1].reaction_ms == round(wall - stimulus) and not game.reactions[-1].held


def test_keys_that_cannot_be_played_are_refused_with_a_reason():
    game = RealtimeGame("greedy", seed=5, start_ms=1000.0)
    assert game.press(rules.WAIT, 500.0) == "wait for the start"
    game.advance(1000.0)
    mask = game.human_mask()
    illegal = next(a for a in range(1, 11) if not mask[a])
    assert game.press(illegal, 1000.0).startswith("not possible now: ")
    assert "onto" in game.press(illegal, 1000.0)
    wall = _until(game, 1000.0, lambda g: g.human_mask()[1:11].any() and not g.busy())
    action = int(np.flatnonzero(game.human_mask()[1:11])[0]) + 1
    assert game.press(action, wall) is None
    wall = _until(game, wall, lambda g: g.busy(), step=1.0)
    assert game.press(action, wall) == "your hand is busy: one card at a time"
    game.stop()
    assert game.over and game.press(action, wall) == "the game is over"
    assert game.record()["outcome"]["finished"] is False
    with pytest.raises(ValueError, match="motor_ms"):
        RealtimeGame("greedy", motor_ms=0)
    with pytest.raises(ValueError, match="unknown policy 'nobody'"):
        RealtimeGame("nobody")


def _greedy_human_until(game, wall, predicate, within=300_000.0):
    """Play the human's seat with the greedy bot's choices, pressed 120 ms after each chance,
    until predicate(game); returns the wall time."""
    greedy, rng = agents.make("greedy"), np.random.default_rng(0)
    limit = wall + within
    while not predicate(game):
        wall += 40.0
        game.advance(wall)
        assert wall < limit and not game.over, "the condition never came"
        mask = game.human_mask()
        if not game.busy() and mask[rules.WAIT] and mask[1:].any() and not game.keys:
            action = int(greedy(core.observe(game.state)[:, game.human], mask[None], rng)[0])
            if action != rules.WAIT:
                game.press(action, wall + 120.0)
    return wall


def _slap_phase(game):
    return game.snapshot["phase"] == "slap" and game.holding


def _bot_latency_now(game) -> int:
    """The latency the core draws for the bot's next decision (D7), from the game's own stream."""
    snap = game.snapshot
    source = RandomSource(game.state.seed, int(game.state.game_id[0]))
    return source.latency(game.bot, snap["decisions"][game.bot], game.config.latency[game.bot])


@pytest.mark.parametrize("think_ms", [60.0, 2600.0])
def test_a_compulsory_slap_lands_after_the_humans_real_time_to_decide(think_ms):
    game = RealtimeGame("greedy@club", seed=11, motor_ms=50)
    wall = _greedy_human_until(game, 0.0, _slap_phase)
    mask = game.human_mask()
    assert not mask[rules.WAIT] and mask[rules.slap_action(0)] and mask[rules.slap_action(1)], \
        "the core offers a free player only the two slaps (D11)"
    clock = game.snapshot["clock_ms"]
    bot_lands = clock + _bot_latency_now(game)
    game.advance(wall + think_ms / 2)  # the human thinks; the game runs on, the table waits
    assert game.snapshot["clock_ms"] == clock and game.holding
    mine, theirs = (len(game.snapshot["centre"][s]) for s in (game.human, game.bot))
    pile = 0 if mine <= theirs else 1
    assert game.press(rules.slap_action(pile), wall + think_ms) is None
    given = int(round(game.game_ms(wall + think_ms) - clock)) + 50  # real time to the key + motor
    events = game.advance(wall + think_ms + 2000.0)
    record = game.record()
    k = next(k for k, s in enumerate(record["steps"]) if s["actions"][0] == rules.slap_action(pile))
    frames = [record["initial"]] + [s["snapshot"] for s in record["steps"]]
    assert frames[k]["clock_ms"] == clock, "both slaps are decided when the round ended"
    assert record["steps"][k]["latency_ms"] == [given, -1]
    slaps = [e for e in events if e["type"] == "slap"]
    assert len(slaps) == 1
    # the first slap to land wins the race (D11): the bot's drawn latency against the human's time
    if clock + given < bot_lands:
        assert slaps[0]["player"] == game.human and slaps[0]["clock_ms"] == clock + given
    else:
        assert slaps[0]["player"] == game.bot and slaps[0]["clock_ms"] == bot_lands
    if think_ms > 2000:
        assert slaps[0]["player"] == game.bot, "a slow human loses the slap race"
    assert game.reactions[-1].held and game.reactions[-1].reaction_ms == int(think_ms)
    assert not game.holding and game.snapshot["phase"] == "play"
    assert replay.check(record) == len(record["steps"]) + 1  # rebuilt with the given latency


def test_a_human_that_does_not_slap_gets_the_cores_slap_after_the_timeout():
    game = RealtimeGame("greedy@club", seed=11, motor_ms=50, slap_timeout_ms=1500)
    wall = _greedy_human_until(game, 0.0, _slap_phase)
    clock = game.snapshot["clock_ms"]
    game.advance(wall + 1000.0)
    assert game.holding and game.snapshot["clock_ms"] == clock
    game.advance(wall + 1600.0)
    assert not game.holding
    assert "time is up: the rules slap for you" in game.messages
    step = next(s for s in game.record()["steps"] if any(e["type"] == "illegal" for e in s["events"]))
    assert step["actions"][0] == rules.WAIT, "the human's move went to the core as WAIT"
    assert step["latency_ms"][0] == int(round(game.game_ms(wall + 1600.0) - clock)) + 50
    illegal = next(e for e in step["events"] if e["type"] == "illegal")
    assert illegal["player"] == 0 and illegal["clock_ms"] == clock


def test_reaction_summary_sets_the_human_beside_the_presets():
    from experiments.realtime.engine import Reaction

    fast = [Reaction(1, 0, 0, r) for r in (250, 280, 300, 320, 350)]
    summary = reaction_summary(fast, motor_ms=50)
    assert summary["moves"] == 5 and summary["median_ms"] == 350
    assert summary["closest_median"] == summary["closest_mean"] == "pro"
    assert set(summary["presets"]) == {"pro", "club", "novice"}
    assert summary["presets"]["pro"]["median_ms"] < summary["presets"]["club"]["median_ms"]
    assert reaction_summary([], 50)["closest_median"] is None
    # a few slow moves pull the mean up, not the median: each statistic names its own preset
    skewed = [Reaction(1, 0, 0, r) for r in (280, 290, 300, 310, 320, 330, 340, 3000, 3500)]
    summary = reaction_summary(skewed, motor_ms=50)
    assert summary["closest_median"] == "pro" and summary["closest_mean"] == "novice"
    game = RealtimeGame("greedy", seed=5)
    game.reactions.extend(skewed)
    text = "\n".join(summary_lines(game))
    assert "closest to your median" in text and "closest to your mean" in text


def test_one_timed_move_is_written_in_the_singular():
    from experiments.realtime.engine import Reaction, person_profile
    from experiments.realtime.tui import profile_lines

    game = RealtimeGame("greedy", seed=5)
    game.reactions.append(Reaction(1, 0, 0, 400))
    text = "\n".join(summary_lines(game))
    assert "over 1 move: median 450 ms" in text and "1 moves" not in text  # with 50 ms motor time
    one = person_profile([400.0])
    assert one["why_not"].startswith("1 timed move: a profile needs at least")
    assert profile_lines(one) == [f"No latency profile: {one['why_not']}."]
    assert person_profile([400.0, 420.0])["why_not"].startswith("2 timed moves:")


# --- the app -------------------------------------------------------------------------------------


def test_keys_map_to_the_right_actions():
    mask = np.zeros(rules.N_ACTIONS, bool)
    mask[[0, rules.play_action(2, 1), rules.fill_action(4), rules.flip_action(1)]] = True
    assert key_action("3", mask) == rules.play_action(2, 1), "where it fits"
    mask[rules.play_action(2, 0)] = True
    assert key_action("3", mask) == rules.play_action(2, 0), "your own pile first"
    assert key_action("e", mask) == rules.play_action(2, 0)
    assert key_action("d", mask) == rules.play_action(2, 1)
    assert key_action("b", mask) == rules.fill_action(4)
    assert key_action("x", mask) == rules.flip_action(1)
    assert key_action("1", mask) == rules.play_action(0, 0), "nothing fits: refused later, by the game"
    assert key_action("left", mask) == rules.slap_action(0)
    assert key_action("right", mask) == rules.slap_action(1)
    assert key_action("p", mask) is None
    for kind, keys in KEYMAP.items():
        assert len(keys) == rules.N_STOCKS, kind
        if kind in ("own", "opp"):
            for key in keys:
                assert key_of(key_action(key, mask)) == key, "each play key stands for its own move"


class Clock:
    """A fake wall clock in ms."""

    def __init__(self):
        self.ms = 0.0

    def __call__(self):
        return self.ms


async def _play_to_the_end(app: PlayApp, clock: Clock, pilot, greedy, max_iter=5000):
    rng = np.random.default_rng(0)
    pressed = []
    for _ in range(max_iter):
        if app.finished:
            break
        game = app.game
        mask = game.human_mask()
        if not game.busy() and not mask[rules.WAIT] or (not game.busy() and mask[1:].any()):
            obs = core.observe(game.state)[:, game.human]
            action = int(greedy(obs, mask[None], rng)[0])
            if action != rules.WAIT:
                before = len(game.keys)
                await pilot.press(key_of(action))
                if len(game.keys) > before:
                    assert game.keys[-1].action == action, "the key queued the move it stands for"
                    pressed.append(action)
        clock.ms += 90.0
        app.tick()
    return pressed


def test_a_game_is_played_to_its_end_with_key_presses(tmp_path):
    # a short game: you hold five cards that chain up from the bot's first spit card (a 7)
    deal = build_deal({0: 8, 1: 9, 2: 10, 3: 11, 4: 12}, {15: 7}, size0=5)
    clock = Clock()
    game = RealtimeGame("random@novice", seed=0, deal=deal, start_ms=None)
    app = PlayApp(game, clock=clock, countdown_ms=1000, save_to=tmp_path / "mygame")

    async def run():
        async with app.run_test(size=(90, 46)) as pilot:
            await pilot.pause()
            assert "Press Space to start" in str(app.query_one("#status").render())
            clock.ms = 5000.0  # the clock does not run before Space
            app.tick()
            assert not game.started and game.snapshot["clock_ms"] == 0
            await pilot.press("1")
            assert game.keys == [] and "press Space to start" in str(app.query_one("#status").render())
            await pilot.press("space")
            assert "Get ready" in str(app.query_one("#status").render())
            clock.ms = 6000.0
            app.tick()
            pressed = await _play_to_the_end(app, clock, pilot, agents.make("greedy"))
            await pilot.pause()
            assert app.finished and game.over
            text = str(app.query_one("#status").render())
            assert "Result: you win" in text and "closest to your" in text and "[S] save" in text
            app.save_screenshot("terminal_end.svg", str(tmp_path))
            await pilot.press("s")
            await pilot.pause()
            assert "saved" in str(app.query_one("#status").render())
            await pilot.press("q")
            return pressed

    pressed = asyncio.run(run())
    record = game.record()
    assert record["outcome"]["winner"] == 0 and record["outcome"]["terminated"]
    assert _human_moves(record) == pressed, "every accepted key became that move, in order"
    assert len(game.reactions) == len(pressed)
    saved = replay.load(tmp_path / "mygame.json")
    assert replay.check(saved) == len(saved["steps"]) + 1
    assert (tmp_path / "mygame.html").read_text().count('id="spit-replay-data"') == 1
    assert saved["players"][0]["name"] == "human" and saved["players"][1]["name"] == "random@novice"
    assert any(line.startswith("Result: you win") for line in summary_lines(game))


def test_the_table_on_screen_and_a_screenshot(tmp_path, tmp_path_factory):
    clock = Clock()
    game = RealtimeGame("racer@club", seed=3, start_ms=None)
    app = PlayApp(game, clock=clock, countdown_ms=0, hints=True)
    shots = screenshot_folder(tmp_path_factory)

    async def run():
        async with app.run_test(size=(90, 46)) as pilot:
            await pilot.press("space")
            greedy, rng = agents.make("greedy"), np.random.default_rng(1)
            for _ in range(60):
                clock.ms += 60.0
                app.tick()
                mask = game.human_mask()
                if mask[1:11].any() and not game.busy():
                    action = int(greedy(core.observe(game.state)[:, 0], mask[None], rng)[0])
                    await pilot.press(key_of(action))
            for _ in range(200):  # the screenshot catches a card of yours in flight
                clock.ms += 20.0
                app.tick()
                mask = game.human_mask()
                if mask[1:11].any() and not game.busy():
                    action = int(greedy(core.observe(game.state)[:, 0], mask[None], rng)[0])
                    await pilot.press(key_of(action))
                    clock.ms += 30.0
                    app.tick()
                    if game.busy():
                        break
            await pilot.pause()
            table = str(app.query_one("#table").render())
            assert game.busy() and "lands in" in table
            snap = game.snapshot
            from spit_env.replay.html import card_label

            for c in (0, 1):
                if snap["centre"][c]:
                    assert card_label(snap["centre"][c][-1]) in table
            for place in snap["stocks"][0]:
                if place and place[-1][1]:
                    assert card_label(place[-1][0]) in table
            # the opponent is named by its player, its latency beside it; its pile by its owner
            assert "racer  (club latency)" in table and "racer's" in table and "@" not in table
            assert "you" in table
            return app.save_screenshot("terminal.svg", str(tmp_path))

    svg = asyncio.run(run())
    assert game.reactions, "the human played"
    try:
        with chromium() as browser:
            png = svg_to_png(browser, svg, shots / "terminal.png")
    except pytest.skip.Exception:
        return  # the PNG needs the browser; the SVG is there
    assert png.stat().st_size > 10_000


async def _open(overlay: str, app: PlayApp, pilot) -> None:
    await pilot.press({"palette": "ctrl+p", "help": "f1", "dialog": "escape"}[overlay])
    await pilot.pause()
    assert app.overlay() == {"palette": "CommandPalette", "help": "help", "dialog": "StopDialog"}[overlay]


@pytest.mark.parametrize("overlay", ["palette", "help", "dialog"])
def test_a_key_with_an_overlay_open_acts_only_on_the_overlay(overlay, monkeypatch):
    """Each game key (and Space) with the overlay open reaches no game; the Esc that closes the
    overlay closes only it; the same keys with it closed reach the game."""
    clock = Clock()
    game = RealtimeGame("greedy@club", seed=2, start_ms=None)
    app = PlayApp(game, clock=clock, countdown_ms=0, tick_s=60.0)  # the test ticks
    pressed = []
    real_press = game.press
    monkeypatch.setattr(game, "press", lambda action, wall: pressed.append(action) or real_press(action, wall))

    async def run():
        async with app.run_test(size=(90, 46)) as pilot:
            await pilot.press("space")
            clock.ms += 1500.0
            app.tick()
            await _open(overlay, app, pilot)
            clock.ms += 1000.0
            app.tick()
            assert game.paused, "an open overlay pauses the game"
            frozen = game.game_ms(clock.ms)
            for key in (*GAME_KEYS, "space"):
                await pilot.press(key)
                clock.ms += 10.0
                app.tick()
                assert app.overlay() is not None, f"{key!r} closed the overlay"
            assert pressed == [] and game.keys == [] and game.paused and not game.stopped
            assert game.game_ms(clock.ms) == frozen, "no game time passed under the overlay"
            await pilot.press("escape")
            await pilot.pause()
            clock.ms += 10.0
            app.tick()
            assert app.overlay() is None, "Esc closed the overlay"
            assert not game.stopped and not game.paused and pressed == [], "and did nothing else"
            assert game.game_ms(clock.ms) == frozen + 10.0
            for key in GAME_KEYS:  # with no overlay, each key reaches the game
                before = len(pressed)
                await pilot.press(key)
                assert len(pressed) == before + 1, f"{key!r} did not reach the game"
                clock.ms += 400.0
                app.tick()
            await pilot.press("escape")
            await pilot.press("y")
            assert game.stopped
            await pilot.press("q")

    asyncio.run(run())


def test_space_pauses_and_hides_the_table_and_reactions_count_from_the_resume():
    clock = Clock()
    game = RealtimeGame("greedy@club", seed=2, start_ms=None)
    app = PlayApp(game, clock=clock, countdown_ms=0, tick_s=60.0)  # the test ticks

    async def run():
        async with app.run_test(size=(90, 46)) as pilot:
            await pilot.press("space")
            clock.ms += 2000.0
            app.tick()
            await pilot.press("space")
            assert game.paused and "paused" in str(app.query_one("#table").render())
            assert "Space to go on" in str(app.query_one("#status").render())
            clock.ms += 60_000.0
            app.tick()
            assert game.game_ms(clock.ms) == 2000.0
            await pilot.press("space")
            assert not game.paused and game.last_event_ms == 2000
            # a key 300 ms after the resume is a reaction of 300 ms, whatever came before
            clock.ms += 300.0
            app.tick()
            mask = game.human_mask()
            if not game.busy() and mask[1:11].any() and game.last_event_ms == 2000:
                game.press(int(np.flatnonzero(mask[1:11])[0]) + 1, clock.ms)
                clock.ms += 200.0
                app.tick()
                assert game.reactions[-1].reaction_ms == 300
            await pilot.press("ctrl+q")

    asyncio.run(run())


def test_the_app_survives_its_own_shutdown_50_times_in_a_row(tmp_path):
    """Quits at random ticks (App.exit, Ctrl+Q, Esc then Q, or none: the test run's teardown) and at
    the game's end (a short deal played out, the replay saved or not), with the tick timer at 1 ms
    so that it fires while the app tears down: a callback touching a widget that is gone raises
    NoMatches, which the test run re-raises."""
    rng = np.random.default_rng(23)
    greedy = agents.make("greedy")
    outcomes = []
    for k in range(50):
        clock = Clock()
        at_end = k % 5 == 4
        if at_end:  # you hold five cards that chain up from the bot's first spit card
            deal = build_deal({0: 8, 1: 9, 2: 10, 3: 11, 4: 12}, {15: 7}, size0=5)
            game = RealtimeGame("random@novice", seed=k, deal=deal, start_ms=None)
        else:
            game = RealtimeGame("greedy@club", seed=k, start_ms=None)
        app = PlayApp(game, clock=clock, countdown_ms=0, save_to=tmp_path / f"game{k}", tick_s=0.001)
        # "leave": the test run's own teardown, with no quit first (the app is taken down
        # while its timer runs: the case that used to fail now and then)
        how = ["exit", "ctrl+q", "escape", "leave"][k % 4]

        async def run(app=app, clock=clock, game=game, at_end=at_end, how=how, k=k):
            async with app.run_test(size=(90, 46)) as pilot:
                await pilot.press("space")
                if at_end:  # the human's moves go straight to the game (keys are tested above)
                    rng_moves = np.random.default_rng(k)
                    while not app.finished:
                        mask = game.human_mask()
                        if not game.busy() and mask[1:].any():
                            obs = core.observe(game.state)[:, game.human]
                            game.press(int(greedy(obs, mask[None], rng_moves)[0]), clock.ms)
                        clock.ms += 90.0
                        app.tick()
                        await asyncio.sleep(0)
                    assert game.over
                    if k % 2:
                        await pilot.press("s")
                    await pilot.press("q")
                    return "end"
                for _ in range(int(rng.integers(0, 30))):
                    clock.ms += float(rng.integers(1, 120))
                    app.tick()
                    await asyncio.sleep(0)  # a yield (no wall time): the 1 ms timer ticks too
                if how == "leave":
                    pass
                elif how == "exit":
                    app.exit()
                elif how == "ctrl+q":
                    await pilot.press("ctrl+q")
                else:
                    await pilot.press("escape")  # asks: stop the game?
                    await pilot.press("y")  # the game stops: the end screen
                    await pilot.press("q")
                return how

        outcomes.append(asyncio.run(run()))
        assert not app.is_running
    assert len(outcomes) == 50 and outcomes.count("end") == 10


def test_once_the_app_is_leaving_no_callback_draws_or_saves(tmp_path):
    """The other callbacks of the review: a key (S would save), a tick and the end screen that
    come after exit() touch no widget and write nothing."""
    game = RealtimeGame("greedy@club", seed=2)
    game.stop()  # the first tick shows the end screen
    app = PlayApp(game, clock=Clock(), countdown_ms=0, save_to=tmp_path / "late")

    class Key:
        key = "s"

        def stop(self):
            pass

    async def run():
        async with app.run_test(size=(90, 46)) as pilot:
            await pilot.pause()
            assert app.finished and "[S] save" in str(app.query_one("#status").render())
            assert app.show("#status", "drawn") is True
            app.exit()
            app.key(Key())
            app.tick()
            assert app.show("#status", "drawn") is False

    asyncio.run(run())
    assert not (tmp_path / "late.json").exists() and app.saved == []


def test_the_end_screen_fits_the_latencies_saves_the_profile_and_says_how_to_use_it(tmp_path, tmp_path_factory):
    from experiments.realtime.engine import Reaction
    from spit_env import Latency

    clock = Clock()
    game = RealtimeGame("greedy@club", seed=5, start_ms=None)
    # a person's latencies: drawn from a known model, less the motor time
    person = Latency.lognormal(420, 110, shift_ms=190).sample(np.random.default_rng(1), 40)
    game.reactions.extend(Reaction(1, 0, 0, int(ms) - game.motor_ms) for ms in person)
    game.stop()
    app = PlayApp(game, clock=clock, countdown_ms=0, profile_to=tmp_path / "me.json", tick_s=60.0)

    async def run():
        async with app.run_test(size=(90, 50)) as pilot:
            await pilot.pause()
            text = str(app.query_one("#status").render())
            assert "Your latency profile over 40 moves" in text and "closest preset:" in text
            assert f"Saved your profile: {tmp_path / 'me.json'}" in text
            assert f"--players greedy@{tmp_path / 'me.json'},greedy@club" in text
            for row in ("you", "pro", "club", "novice"):
                assert f"  {row:<7}│" in text, "a density row per model"
            svg = app.save_screenshot("terminal_end.svg", str(tmp_path))
            await pilot.press("q")
            return svg

    svg = asyncio.run(run())
    assert Latency.load(tmp_path / "me.json") == Latency.fit(person).latency
    try:
        with chromium() as browser:
            svg_to_png(browser, svg, screenshot_folder(tmp_path_factory) / "terminal_end.png")
    except pytest.skip.Exception:
        pass


# --- the script ----------------------------------------------------------------------------------
def _run(*args):
    return subprocess.run([sys.executable, "-m", "experiments.play", *args], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_script_help_and_bad_input():
    res = _run("--help")
    assert res.returncode == 0 and "--opponent" in res.stdout and "--motor-ms" in res.stdout
    res = _run("--opponent", "nobody")
    assert res.returncode == 2 and "unknown policy 'nobody'" in res.stderr
    res = _run("--opponent", "runs/none/model.zip")
    assert res.returncode == 2 and "no model file at 'runs/none/model.zip'" in res.stderr
    res = _run("--motor-ms", "0")
    assert res.returncode == 2 and "--motor-ms must be in 1..10000" in res.stderr
    res = _run("--opponent", "racer@slowpoke")
    assert res.returncode == 2 and "latency preset must be one of" in res.stderr


# --- the end screens' profile: its plot and its commands ------------------------------------------
def test_a_long_tail_of_pauses_does_not_squeeze_the_density_axis():
    from experiments.realtime.engine import person_profile
    from spit_env import Latency

    rng = np.random.default_rng(3)
    quick = rng.lognormal(np.log(420.0), 0.25, 60)  # a person's moves...
    pauses = rng.uniform(4000.0, 9000.0, 6)  # ...and a few long pauses
    out = person_profile(np.concatenate([quick, pauses]))
    top = out["density"]["ms"][-1]
    # the axis ends by the slowest preset's tail or the bulk of the fit, not the pauses
    novice = float(np.quantile(Latency.preset("novice").table, 0.995))
    you = float(np.quantile(out["fit"].latency.table, 0.95))
    assert top == pytest.approx(1.05 * max(novice, you), rel=0.01)
    assert top < pauses.min()


def test_the_reuse_commands_name_the_profile_by_its_absolute_path(tmp_path, monkeypatch):
    from experiments.realtime.engine import reuse_lines

    monkeypatch.chdir(tmp_path)
    lines = reuse_lines(Path("replays") / "me.json", "racer")
    where = str(tmp_path / "replays" / "me.json")
    assert f"racer@{where},racer@club" in lines[0] and f"racer@{where}" in lines[1]
    assert repr(where) in lines[2]
