"""The browser game in a real browser: headless Chromium (Debian's ``chromium``, or
``SPIT_CHROMIUM``) driven by Playwright, against the real server (uvicorn in a thread on
127.0.0.1) whose clock the test moves: a scripted player plays whole games by key presses and by
clicks, every overlay takes the keys while it is open, a closed page stops its game, and a key
lands its motor time after it is pressed. Nothing sleeps: the test waits for the page to show what
the server sent (Playwright polls the page) or for the server's condition.

Without Chromium or Playwright the tests skip, saying how to install them; under CI
(``SPIT_REQUIRE_BROWSER=1``) they fail instead. The README's screenshot (browser.png) goes to
``SPIT_SCREENSHOTS`` if set; the end screen with a fitted profile goes there too.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from browser_helpers import FakeClock, chromium, live_server, screenshot_folder, wait_for
from helpers import build_deal

pytest.importorskip("starlette", reason="the browser game needs the [web] extra: pip install -c constraints.txt -e '.[web]'")
pytest.importorskip("uvicorn", reason="the browser game needs the [web] extra")

import agents  # noqa: E402
from experiments.realtime.engine import RealtimeGame  # noqa: E402
from experiments.realtime.keys import GAME_KEYS, key_of  # noqa: E402
from experiments.realtime.web import WebSettings  # noqa: E402
from spit_env import Latency, core, rules  # noqa: E402

SHORT_DEAL = build_deal({0: 8, 1: 9, 2: 10, 3: 11, 4: 12}, {15: 7}, size0=5)  # five cards win it
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def browser():
    with chromium() as chromium_browser:
        yield chromium_browser


@pytest.fixture(scope="session")
def shots(tmp_path_factory) -> Path:
    return screenshot_folder(tmp_path_factory)


class Live:
    """A server, its clock and one page on it, with the page's errors and requests noted."""

    def __init__(self, browser, app, base, clock):
        self.app, self.base, self.clock = app, base, clock
        self.context = browser.new_context(viewport={"width": 1200, "height": 1000})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        page = self.page
        page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda err: self.errors.append(str(err)))
        ours = (base + "/", base.replace("http", "ws") + "/")
        page.on("request", lambda req: None if req.url.startswith(ours) or req.url.startswith("data:")
                else self.errors.append(f"request to {req.url}"))
        page.on("websocket", lambda ws: None if ws.url.startswith(ours[1])
                else self.errors.append(f"websocket to {ws.url}"))
        page.goto(base + "/")
        page.wait_for_selector("body[data-ready='1']")
        wait_for(app, lambda conns: len(conns) == 1)
        self.conn = next(iter(app.state.connections))

    @property
    def game(self) -> RealtimeGame:
        return self.conn.game

    def data(self, name: str) -> str:
        return self.page.evaluate("(n) => document.body.dataset[n] || ''", name)

    def acks(self) -> int:
        return self.page.evaluate("() => ['queued', 'refused', 'errors'].reduce((n, k) => n + Number(document.body.dataset[k] || 0), 0)")

    def run_to(self, ms: float) -> None:
        """Move the clock to wall time ``ms`` and wait until the page shows that game time (or
        the game's end)."""
        self.clock.ms = ms
        target = self.game.game_ms(ms)
        self.page.wait_for_function("(t) => Number(document.body.dataset.gameMs) >= t || document.body.dataset.over === '1'",
                                    arg=target - 0.5 if math.isfinite(target) else 0)

    def advance(self, step: float = 100.0) -> None:
        self.run_to(self.clock.ms + step)

    def acked(self, act) -> None:
        """Do ``act`` (a key press or clicks) and wait for the server's answer to reach the page."""
        before = self.acks()
        act()
        self.page.wait_for_function("(n) => ['queued', 'refused', 'errors'].reduce((m, k) => m + Number(document.body.dataset[k] || 0), 0) > n", arg=before)

    def server_paused(self, paused: bool) -> None:
        """Wait until the page shows the server's state after its pause or resume (the page
        opens or closes its overlay at once, the server pauses when the message arrives, and
        ``data-paused`` is set from the server's state only): without it the clock could move,
        or the game be read, before the server knew."""
        self.page.wait_for_selector(f"body[data-paused='{int(paused)}']")

    def start(self) -> None:
        self.page.keyboard.press("Space")
        self.page.wait_for_selector("body[data-started='1']")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def live(browser, tmp_path):
    """A page on a server of the short deal against random@novice, and its clock."""
    opened = []

    def make(**kw):
        settings = WebSettings(**dict(dict(opponent="random@novice", seed=3, countdown_ms=0,
                                           deal=SHORT_DEAL, save_to=tmp_path / "replay",
                                           profile_to=tmp_path / "me.json"), **kw))
        clock = FakeClock(1000.0)
        server = live_server(settings, clock)
        app, base = server.__enter__()
        opened.append(server)
        one = Live(browser, app, base, clock)
        opened.append(one)
        return one

    yield make
    for thing in reversed(opened):
        if isinstance(thing, Live):
            thing.close()
        else:
            thing.__exit__(None, None, None)


def _key_of(action: int) -> str:
    """The browser's key for ``action``: the arrows by their DOM names."""
    key = key_of(action)
    return {"left": "ArrowLeft", "right": "ArrowRight"}.get(key, key)


def _click(live: Live, action: int) -> None:
    """Play ``action`` with the mouse: a card, then a pile or an empty place; a pile alone slaps."""
    kind, s, c = int(rules.ACTION_KIND[action]), int(rules.ACTION_STOCK[action]), int(rules.ACTION_PILE[action])
    page = live.page
    own, opp = "#pile0", "#pile1"  # the human sits at the bottom: its pile is drawn in slot 0
    if kind == rules.KIND_SLAP:
        page.click(own if c == 0 else opp)
        return
    page.click(f'#places0 .place[data-place="{s}"]')
    assert live.data("selected") == str(s)
    if kind == rules.KIND_PLAY:
        page.click(own if c == 0 else opp)
    else:
        page.click("#places0 .place.empty")


def _play_out(live: Live, by: str = "keys", think_ms=(150, 90), max_steps: int = 800) -> list[int]:
    """A scripted person: the greedy bot's move, pressed (or clicked) some ms after each chance,
    until the page shows the end. Returns the moves the server queued."""
    greedy, rng = agents.make("greedy"), np.random.default_rng(0)
    queued, k = [], 0
    for _ in range(max_steps):
        if live.data("over") == "1":
            break
        game = live.game
        mask = game.human_mask()
        if not game.busy() and mask[1:].any() and not game.keys:
            action = int(greedy(core.observe(game.state)[:, game.human], mask[None], rng)[0])
            if action != rules.WAIT:
                k += 1
                live.advance(think_ms[0] + (k * think_ms[1]) % 250)  # some spread
                before = len(game.keys) + len(game.reactions)
                if by == "keys":
                    live.acked(lambda a=action: live.page.keyboard.press(_key_of(a)))
                else:
                    live.acked(lambda a=action: _click(live, a))
                if len(game.keys) + len(game.reactions) > before:
                    queued.append(action)
        live.advance()
    assert live.data("over") == "1", "the game never ended"
    return queued


# --- tests ---------------------------------------------------------------------------------------
def test_the_page_loads_with_no_console_error_and_asks_nothing_of_another_host(live):
    one = live(opponent="racer@club", deal=None)
    page = one.page
    assert page.title() == "Spit" and page.inner_text("#matchup").startswith("you vs racer")
    assert one.data("overlay") == "start" and page.is_visible("#overlay-start")
    one.start()
    for _ in range(20):
        one.advance()
    page.keyboard.press("?")
    assert one.data("overlay") == "help"
    page.keyboard.press("Escape")
    page.keyboard.press("Space")
    assert one.data("overlay") == "paused"
    one.server_paused(True)
    page.keyboard.press("Space")
    one.server_paused(False)
    one.advance()
    assert one.data("overlay") == "" and one.data("paused") == "0"
    assert "racer's pile" in page.inner_text("#centre") and "your pile" in page.inner_text("#centre")
    assert one.errors == []


def test_a_whole_game_by_key_presses_ends_with_a_result_and_three_fit_a_profile(live, shots):
    one = live()
    totals = []
    for game_no in (1, 2, 3):
        one.start()
        queued = _play_out(one, "keys", think_ms=(140 + 30 * game_no, 97))
        one.page.wait_for_selector(f"body[data-ended='{game_no}']")
        assert one.page.is_visible("#overlay-end")
        assert one.page.inner_text("#end-result") == "You win"
        record = one.game.record()
        moves = [s["actions"][0] for s in record["steps"] if s["actions"][0] != rules.WAIT]
        assert moves == queued, "every key the server queued was played, in order"
        totals.append(len(one.game.reactions))
        if game_no < 3:
            one.page.keyboard.press("Enter")  # a rematch: the same sitting
            one.page.wait_for_selector(f"body[data-game='{game_no + 1}'][data-overlay='start']")
    text = one.page.inner_text("#overlay-end")
    n = sum(totals)
    assert f"Your profile over {n} moves" in text and "Closest preset" in text
    profile = Path(one.app.state.settings.profile_to)
    assert str(profile) in text and f"--players random@{profile}" in text
    assert Latency.load(profile) == Latency.fit(one.conn.sitting.latencies_ms()).latency
    one.page.screenshot(path=str(shots / "browser_end.png"))
    # the density plot's tick labels lie inside the canvas (the last one, too)
    drawn = json.loads(one.page.get_attribute("#density", "data-ticks"))
    assert drawn["ticks"] and drawn["ticks"][0]["label"] == "0 ms"
    for tick in drawn["ticks"]:
        assert 0 <= tick["x0"] < tick["x1"] <= drawn["width"], tick
    # the saved path and the commands wrap between words and after a "/" or ",", never inside a
    # name: each such piece of the box's text lies on one line
    cut = one.page.evaluate("""() => {
        const box = document.getElementById('end-commands'), cut = [];
        const walk = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
        for (let node = walk.nextNode(); node; node = walk.nextNode()) {
          for (const m of node.data.matchAll(/[^\\s/,]+[/,]?/g)) {
            const r = document.createRange();
            r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
            const tops = new Set([...r.getClientRects()].map((q) => Math.round(q.top)));
            if (tops.size > 1) cut.push(m[0]);
          }
        }
        return cut;
      }""")
    assert cut == [], f"cut across lines: {cut}"
    assert str(profile) in one.page.inner_text("#end-commands")  # the text is the path, whole
    assert one.errors == []


def test_a_whole_game_by_clicks_ends_with_a_result(live):
    one = live()
    one.start()
    queued = _play_out(one, "clicks")
    one.page.wait_for_selector("body[data-ended='1']")
    assert one.page.inner_text("#end-result") == "You win"
    assert [s["actions"][0] for s in one.game.record()["steps"] if s["actions"][0] != rules.WAIT] == queued
    assert len(queued) == 5 and one.errors == []


def test_a_key_pressed_at_game_time_k_lands_motor_time_later_through_the_page(live):
    one = live(motor_ms=80, tick_ms=20)
    one.start()
    one.advance(400.0)
    game = one.game
    mask = game.human_mask()
    action = int(np.flatnonzero(mask[1:11])[0]) + 1
    one.clock.ms += 13.7  # between two of the human's ticks
    k = game.game_ms(one.clock.ms)
    one.acked(lambda: one.page.keyboard.press(_key_of(action)))
    one.advance(300.0)
    landing = next(e for s in game.record()["steps"] for e in s["events"]
                   if e["player"] == game.human and e["type"] in ("play", "bounce"))
    assert landing["clock_ms"] == math.ceil(k) + 80
    assert game.reactions[0].key_ms == int(k)


OVERLAY_OPEN = {"help": "?", "dialog": "Escape", "paused": "Space"}


@pytest.mark.parametrize("overlay", ["start", "help", "dialog", "paused", "end"])
def test_every_game_key_with_an_overlay_open_acts_only_on_the_overlay(live, overlay, monkeypatch):
    pressed = []
    real_press = RealtimeGame.press
    monkeypatch.setattr(RealtimeGame, "press", lambda self, action, wall: pressed.append(action) or real_press(self, action, wall))
    one = live()
    page = one.page
    if overlay != "start":
        one.start()
        one.advance(300.0)
    if overlay == "end":
        _play_out(one)
        page.wait_for_selector("body[data-ended='1']")
        pressed.clear()
    elif overlay != "start":
        page.keyboard.press(OVERLAY_OPEN[overlay])
        one.server_paused(True)
    assert one.data("overlay") == overlay
    one.advance()
    paused_at = one.game.game_ms(one.clock.ms)
    for key in GAME_KEYS:
        page.keyboard.press({"left": "ArrowLeft", "right": "ArrowRight"}.get(key, key.upper()))
        assert one.data("overlay") == overlay, f"{key!r} closed the overlay"
    one.advance()
    assert pressed == [] and one.game.keys == [], "no key reached the game"
    if overlay in ("help", "dialog", "paused"):
        assert one.game.paused and one.game.game_ms(one.clock.ms) == paused_at
    if overlay == "start":
        assert not one.game.started
        return
    page.keyboard.press("Escape")  # closes the overlay, and only it
    one.server_paused(False)
    one.advance()
    assert one.data("overlay") == ""
    assert not one.game.paused and pressed == []
    assert one.game.stopped is False and one.data("errors") == ""
    if overlay == "end":
        assert one.data("game") == "1" and one.data("saved") == "", "no rematch, nothing saved"
        page.keyboard.press("Escape")  # the end screen again, over the final table
        assert one.data("overlay") == "end"
        page.click("#btn-save")  # its buttons: the replay, then a rematch (or Enter)
        page.wait_for_selector("body[data-saved='1']")
        assert "Saved the replay: " in page.inner_text("#end-saved")
        page.keyboard.press("Enter")
        page.wait_for_selector("body[data-game='2'][data-overlay='start']")
        return
    for key in ("1", "q", "ArrowLeft"):  # with no overlay, a key reaches the game
        one.acked(lambda k=key: page.keyboard.press(k))
    assert len(pressed) == 3


def test_in_seat_1_you_still_sit_at_the_bottom(live):
    one = live(opponent="racer@club", deal=None, human_seat=1)
    one.start()
    one.advance(600.0)
    snap = one.game.snapshot
    shown = one.page.evaluate("() => [0, 1].map((k) => [...document.querySelectorAll('#places' + k + ' .place')].map((e) => e.dataset.cards))")
    as_text = [[",".join(str(c) for c, _ in place) for place in snap["stocks"][seat]] for seat in (0, 1)]
    assert shown == [as_text[1], as_text[0]], "your stocks at the bottom, the bot's on top"
    assert one.page.inner_text("#seat0 .name") == "you" and one.page.inner_text("#seat1 .name") == "racer"
    assert one.page.inner_text("#pile0-label").startswith(("your pile", "you: no pile"))
    assert one.errors == []


@pytest.mark.parametrize("seat", [0, 1])
def test_your_pile_is_drawn_on_the_left_as_the_keys_say(live, seat):
    # <- slaps your pile, Q-T play onto it (keys.py): it is the left one on the page, in either seat
    one = live(opponent="racer@club", deal=None, human_seat=seat)
    one.start()
    one.advance(600.0)
    own, opp = (one.page.locator(f"#pile{k}").bounding_box()["x"] for k in (0, 1))
    assert own < opp
    assert one.page.inner_text("#pile0-label").startswith(("your pile", "you: no pile"))
    assert one.page.inner_text("#pile1-label").startswith("racer")


def test_a_closed_page_stops_its_game(live):
    one = live(opponent="racer@club", deal=None)
    one.start()
    one.advance(500.0)
    game = one.game
    one.page.close()
    wait_for(one.app, lambda conns: not conns)
    assert game.stopped and game.over and game.record()["outcome"]["finished"] is False


def test_a_live_game_on_screen(live, shots):
    """The README's picture: racer at club latency, a card of yours in flight."""
    one = live(opponent="racer@club", deal=None, seed=5, hints=False)
    one.start()
    greedy, rng = agents.make("greedy"), np.random.default_rng(2)
    for _ in range(400):
        game = one.game
        mask = game.human_mask()
        if not game.busy() and mask[1:11].any():
            action = int(greedy(core.observe(game.state)[:, game.human], mask[None], rng)[0])
            one.acked(lambda a=action: one.page.keyboard.press(_key_of(a)))
            if game.game_ms(one.clock.ms) > 6000 and game.keys:
                one.advance(26.0)  # the human's next tick decides it: the hand shows it (a state)
                if game.busy():
                    break
        one.advance(100.0)
    assert one.game.busy() and "lands" in one.page.inner_text("#hand0")
    one.page.screenshot(path=str(shots / "browser.png"), full_page=False)
    assert one.errors == []


def test_a_browser_path_that_is_not_there_fails_the_tests_with_one_line(tmp_path):
    env = dict(os.environ, SPIT_CHROMIUM=str(tmp_path / "no-chromium"))
    env.pop("SPIT_REQUIRE_BROWSER", None)  # failing is not a matter of being required
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                          "tests/test_replay_browser.py", "-k", "loads_offline"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert res.returncode == 1, res.stdout
    line = f"SPIT_CHROMIUM='{tmp_path / 'no-chromium'}' is not an executable browser"
    assert line in res.stdout and "skipped" not in res.stdout.splitlines()[-1]
