"""The HTML replay page in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright. The page loads from a file with no console error, and the table it draws at every step
it is taken to (keys, buttons, the step slider, the timeline) is the recorded snapshot of that step,
which the core rebuilds.

The browser (tests/browser_helpers.py) is started here, headless, opens only a file:// page and
fails the test on any other request, and is closed at the end of the module. Without Chromium or
Playwright the tests skip, saying how to install them; under CI (``SPIT_REQUIRE_BROWSER=1``) they
fail instead. The README's screenshot goes to ``SPIT_SCREENSHOTS`` (a folder) if set.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_helpers import chromium, screenshot_folder

from experiments.replay import play_game
from spit_env import replay
from spit_env.replay.html import card_label, moves_of, write_html


@pytest.fixture(scope="module")
def record():
    return play_game(("racer", "greedy@pro"), seed=7, game_id=0)


@pytest.fixture(scope="module")
def page_file(record, tmp_path_factory) -> Path:
    return write_html(record, tmp_path_factory.mktemp("replay") / "game.html")


@pytest.fixture(scope="module")
def browser():
    with chromium() as chromium_browser:
        yield chromium_browser


@pytest.fixture
def page(browser, page_file):
    context = browser.new_context(viewport={"width": 1200, "height": 1000})
    pg = context.new_page()
    errors = []
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    pg.on("pageerror", lambda err: errors.append(str(err)))
    pg.on("request", lambda req: None if req.url.startswith(("file:", "data:", "about:"))
          else errors.append(f"network request to {req.url}"))
    pg.goto(page_file.as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    pg.errors = errors
    yield pg
    context.close()


@pytest.fixture(scope="session")
def shots(tmp_path_factory) -> Path:
    return screenshot_folder(tmp_path_factory)


# --- reading the table off the page -------------------------------------------------------------
_READ_TABLE = """() => {
  const ids = (s) => (s ? s.split(",").map(Number) : []);
  // what a card shows in its corner (rank and suit), or null for no card / a card back
  const face = (card) => (card && card.querySelector(".corner")
    ? card.querySelector(".corner").innerText.replace(/\\s+/g, "") : null);
  const places = [0, 1].map((p) => [...document.querySelectorAll("#places" + p + " .place")].map((el) => ({
    cards: ids(el.dataset.cards), up: ids(el.dataset.up).map(Boolean),
    top: face(el.querySelector(".card.top")),
  })));
  const piles = [0, 1].map((c) => {
    const el = document.getElementById("pile" + c);
    return { cards: ids(el.dataset.cards), top: face(el.querySelector(".card.top")) };
  });
  const spit = [0, 1].map((p) => ids(document.getElementById("spit" + p).dataset.cards));
  return { frame: Number(document.body.dataset.frame), places, piles, spit,
           clock: document.getElementById("clock").textContent,
           hands: [0, 1].map((p) => document.getElementById("hand" + p).innerText) };
}"""


def _clock(ms: int) -> str:
    return f"{ms // 60000}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def assert_table_is(table: dict, snap: dict) -> None:
    for p in range(2):
        for s, place in enumerate(snap["stocks"][p]):
            shown = table["places"][p][s]
            assert shown["cards"] == [c for c, _ in place], f"player {p} stock {s}"
            assert shown["up"] == [u for _, u in place], f"player {p} stock {s} face-up flags"
            top = place[-1] if place else None
            assert shown["top"] == (card_label(top[0]) if top and top[1] else None), "a face-up top shows its face"
        assert table["spit"][p] == snap["spit"][p], f"player {p} spit cards"
    for c in range(2):
        pile = snap["centre"][c]
        assert table["piles"][c]["cards"] == pile, f"centre pile {c}"
        assert table["piles"][c]["top"] == (card_label(pile[-1]) if pile else None)


def _frames(record):
    return [record["initial"]] + [s["snapshot"] for s in record["steps"]]


def _scrub(page, frame: int) -> None:
    page.eval_on_selector("#scrub", "(el, v) => { el.value = v; el.dispatchEvent(new Event('input')); }", frame)


# --- tests ---------------------------------------------------------------------------------------
def test_page_loads_offline_without_console_errors(page, record, page_file):
    assert page.title() == "Spit replay: racer vs greedy@pro"
    assert int(page.get_attribute("body", "data-frames")) == len(record["steps"]) + 1
    table = page.evaluate(_READ_TABLE)
    assert table["frame"] == 0
    assert_table_is(table, record["initial"])
    assert page.inner_text("#result").startswith(record["outcome"]["result"])
    page.screenshot(path=str(page_file.parent / "replay_start.png"), full_page=True)
    assert page.errors == []


def test_stepping_to_the_end_shows_the_final_snapshot(page, record):
    final = list(replay.rebuild(record))[-1]  # the core's own final state of the recorded game
    assert final == record["steps"][-1]["snapshot"]
    page.keyboard.press("End")
    table = page.evaluate(_READ_TABLE)
    assert table["frame"] == len(record["steps"])
    assert_table_is(table, final)
    assert table["clock"] == _clock(final["clock_ms"])
    end = record["outcome"]
    assert "game over: " + ("truncated" if end["truncated"] else end["result"]) in page.inner_text("#log")
    # and step by step from the start, with the keys and the buttons
    page.keyboard.press("Home")
    for k in range(1, 6):
        page.keyboard.press("ArrowRight")
        assert_table_is(page.evaluate(_READ_TABLE), _frames(record)[k])
    page.click("#btn-next")
    page.click("#btn-prev")
    page.keyboard.press("ArrowLeft")
    table = page.evaluate(_READ_TABLE)
    assert table["frame"] == 4
    assert_table_is(table, _frames(record)[4])
    assert page.errors == []


def test_scrubbing_back_and_forth_shows_the_same_states(page, record):
    frames = _frames(record)
    seen = {}
    for k in (150, 20, len(frames) - 1, 75, 150, 20, 75, 0):
        _scrub(page, k)
        table = page.evaluate(_READ_TABLE)
        assert table["frame"] == k
        assert_table_is(table, frames[k])
        assert table["clock"] == _clock(frames[k]["clock_ms"])
        if k in seen:
            assert table == seen[k], f"step {k} looks different the second time"
        seen[k] = table
    # the timeline: a click at a time shows the last step at or before it
    box = page.locator("#overview").bounding_box()
    clocks = [f["clock_ms"] for f in frames]
    for fraction in (0.8, 0.3, 0.55):
        page.mouse.click(box["x"] + 92 + fraction * (box["width"] - 94), box["y"] + 30)
        table = page.evaluate(_READ_TABLE)
        k = table["frame"]
        shown = table["clock"]
        m, rest = shown.split(":")
        t = int(m) * 60000 + round(float(rest) * 1000)
        assert clocks[k] <= t and (k == len(clocks) - 1 or t < clocks[k + 1])
        assert abs(t - fraction * clocks[-1]) <= clocks[-1] / 400 + 1
        assert_table_is(table, frames[k])
    assert page.errors == []


def test_moves_in_flight_and_a_lost_race_are_shown(page, record, shots):
    frames = _frames(record)
    race = next(m for m in moves_of(record) if "race_ms" in m)
    # the frame where the losing card is in flight: its hand says where it goes and when it lands
    k = next(k for k, f in enumerate(frames) if f["in_flight"][race["player"]] is not None
             and f["in_flight"][race["player"]]["card"] == race["card"]
             and f["clock_ms"] >= race["start_ms"] and f["clock_ms"] < race["end_ms"])
    _scrub(page, k)
    hand = page.evaluate(_READ_TABLE)["hands"][race["player"]]
    assert card_label(race["card"]) in hand and f"lands {_clock(race['end_ms'])}" in hand
    # jump mark by mark ("]") to the race: the log says by how much it was lost
    page.keyboard.press("Home")
    for _ in range(200):
        page.keyboard.press("]")
        if page.evaluate(_READ_TABLE)["frame"] >= race["step"] + 1:
            break
    log = page.inner_text("#log")
    assert f"lost the race to {card_label(race['race_card'])} by {race['race_ms']} ms" in log
    page.screenshot(path=str(shots / "replay.png"), full_page=True)  # the README's
    assert page.errors == []


def test_play_runs_the_clock_and_pause_stops_it(page, record, page_file):
    page.select_option("#speed", label="32\u00d7")
    page.keyboard.press("Space")
    page.wait_for_function("Number(document.body.dataset.frame) >= 40")  # polls the page, no sleep
    page.keyboard.press("Space")
    stopped = page.evaluate(_READ_TABLE)
    assert stopped["frame"] >= 40
    assert page.evaluate(_READ_TABLE)["frame"] == stopped["frame"]
    assert_table_is(stopped, _frames(record)[stopped["frame"]])
    # show the face-down cards: the same cards, now drawn with faces
    page.keyboard.press("h")
    assert re.search(r"[AJQK2-9]|10", page.inner_text("#places0"))
    assert_table_is(page.evaluate(_READ_TABLE), _frames(record)[stopped["frame"]])
    page.keyboard.press("h")
    _scrub(page, 118)
    page.screenshot(path=str(page_file.parent / "replay_playing.png"), full_page=True)
    assert page.errors == []
