"""The terminal game: a Textual app around :class:`experiments.realtime.engine.RealtimeGame`.

Imported only by ``experiments/play.py`` (and its tests): Textual is an optional dependency (the
``[play]`` extra). The app draws the table as cards, maps keys to moves, runs the game against the
wall clock (``clock``, injectable so tests can drive time) and, at the end, shows the result and
the human's reaction times beside the latency presets and offers to save the replay.

**Shutdown.** The app survives its own: the tick timer is stopped on every way out (``exit``,
whatever calls it: Q at the end, Textual's Ctrl+Q, a test) and when the app unmounts, and every
callback that draws goes through :meth:`PlayApp.show`, which does nothing once the app is
leaving or its widget is gone (the screen is taken down before the app's timers stop), so a
last tick, a key or the end screen during teardown touches no widget.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.text import Text
from textual.app import App, ComposeResult, ScreenStackError
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widgets import HelpPanel, Static

from experiments.realtime.engine import (
    RealtimeGame,
    person_profile,
    reaction_summary,
    reuse_lines,
)
from experiments.realtime.keys import GAME_KEYS, KEYMAP, key_action, press_key
from spit_env import replay, rules
from spit_env.progress import counted
from spit_env.replay.html import card_label, write_html

__all__ = ["PlayApp", "GameScreen", "StopDialog", "KEYMAP", "key_action", "summary_lines",
           "profile_lines"]

_FACE = {False: "bold #161616 on #f4f1e8", True: "bold #c62828 on #f4f1e8"}
_BACK = "#9fb8ee on #24427c"
_DIM = "#5b7565"
_P = ("bold #4fc3f7", "bold #ffb74d")  # seat colours, as in the HTML replay


# --- drawing -------------------------------------------------------------------------------------
def _card_rows(place: list | None, style_hint: str | None = None) -> list[Text]:
    """Three rows of five cells: a card face, a card back, or an empty place."""
    if not place:
        return [Text("┌ ─ ┐", _DIM), Text("╎   ╎", _DIM), Text("└ ─ ┘", _DIM)]
    card, up = place[-1]
    if not up:
        return [Text("╭───╮", _BACK), Text("│▒▒▒│", _BACK), Text("╰───╯", _BACK)]
    label = card_label(card)
    style = style_hint or _FACE[card // rules.N_RANKS in (1, 2)]
    return [Text("╭───╮", style), Text("│" + label.rjust(3) + "│", style), Text("╰───╯", style)]


def _row(cells: list[list[Text]], indent: int = 8, gap: int = 1) -> list[Text]:
    lines = []
    for r in range(3):
        line = Text(" " * indent)
        for k, cell in enumerate(cells):
            if k:
                line.append(" " * gap)
            line.append_text(cell[r])
        lines.append(line)
    return lines


def _counts(places: list, indent: int = 8) -> Text:
    return Text(" " * indent + " ".join(f"×{len(p)}".center(5) for p in places), _DIM)


def _hand(game: RealtimeGame, seat: int, now: float) -> Text:
    snap = game.snapshot
    fl = game.in_flight(seat)
    me = seat == game.human
    line = Text("  hand: ", _DIM)
    if fl is None or fl["action"] == rules.WAIT:
        line.append("free" if snap["phase"] != "over" else "—", "italic " + _DIM)
        return line
    a = fl["action"]
    kind = int(rules.ACTION_KIND[a])
    pile = "your" if (rules.ACTION_PILE[a] == 0) == me else f"{game.opponent_name}'s"
    if kind == rules.KIND_PLAY:
        what = f"{card_label(fl['card'])} → {pile} pile"
    elif kind == rules.KIND_FILL:
        what = f"{card_label(fl['card'])} → an empty place"
    elif kind == rules.KIND_FLIP:
        what = f"turning up stock {rules.ACTION_STOCK[a] + 1}"
    else:
        what = f"slapping {pile} pile"
    line.append(what, _P[seat])
    line.append(f"  lands in {max(0, int(fl['lands_ms'] - now))} ms", _DIM)
    return line


def _seat_head(game: RealtimeGame, seat: int) -> Text:
    snap = game.snapshot
    stock = sum(len(p) for p in snap["stocks"][seat])
    spit = len(snap["spit"][seat])
    name = "you" if seat == game.human else game.opponent_name
    lat = f"  ({game.motor_ms} ms motor time)" if seat == game.human else \
        f"  ({game.config.latency[seat].label} latency)"
    head = Text("  ● ", _P[seat]).append(name, "bold").append(lat, _DIM)
    head.append(f"     stock {stock} · spit {spit} · held {stock + spit}")
    if game.config.scoring == "points":
        head.append(f" · score {snap['scores'][seat]}")
    return head


def table_text(game: RealtimeGame, now: float, hints: bool = False) -> Text:
    """The table as the human sees it: the opponent on top, the centre, the human's stocks below.

    Args:
        game: the game shown.
        now: the game time, ms (times to landing are counted from it).
        hints: mark the stock places that have a legal play.
    """
    snap = game.snapshot
    me, opp = game.human, game.bot
    lines: list[Text] = [_seat_head(game, opp), _counts(snap["stocks"][opp])]
    lines += _row([_card_rows(p) for p in snap["stocks"][opp]])
    lines += [_hand(game, opp, now), Text("")]
    # centre: your pile on the left, the opponent's on the right (egocentric pile 0, 1)
    piles = [snap["centre"][me], snap["centre"][opp]]
    cells = [_card_rows([[pile[-1], True]] if pile else None) for pile in piles]
    spit = [len(snap["spit"][me]), len(snap["spit"][opp])]
    left = Text(f"your spit ×{spit[0]}".rjust(14) + "  ", _DIM)
    right = Text(f"  {game.opponent_name}'s spit ×{spit[1]}", _DIM)
    for r in range(3):
        line = Text(" " * 2)
        line.append_text(left if r == 1 else Text(" " * 16))
        line.append_text(cells[0][r]).append(" " * 9).append_text(cells[1][r])
        if r == 1:
            line.append_text(right)
        lines.append(line)
    sizes = [counted(len(p), "card") if p else "no pile" for p in piles]
    lines.append(Text(" " * 16 + "your pile".center(9) + " " * 5
                      + f"{game.opponent_name}'s".center(9), _DIM))
    lines.append(Text(" " * 16 + sizes[0].center(9) + " " * 5 + sizes[1].center(9), _DIM))
    lines += [Text(""), _hand(game, me, now)]
    lines += _row([_card_rows(p) for p in snap["stocks"][me]])
    lines.append(_counts(snap["stocks"][me]))
    if hints:
        mask = game.human_mask()
        marks = ["  ▲  " if any(mask[rules.play_action(s, c)] for c in (0, 1)) else "     "
                 for s in range(rules.N_STOCKS)]
        lines.append(Text(" " * 8 + " ".join(marks), "bold #66bb6a"))
    lines.append(_seat_head(game, me))
    return Text("\n").join(lines)


def keys_text(game: RealtimeGame) -> Text:
    """The key legend, one row per kind of move, columns under the stock places."""
    rows = [("fits", "play where it fits (your pile first)"), ("own", "onto your pile (left)"),
            ("opp", f"onto {game.opponent_name}'s pile (right)"),
            ("fill", "fill an empty place / turn up")]
    lines = []
    for kind, text in rows:
        keys = " ".join(k.upper().center(5) for k in KEYMAP[kind])
        lines.append(Text("  keys  " if kind == "fits" else " " * 8, _DIM)
                     .append(keys, "bold").append("   " + text, _DIM))
    lines.append(Text("  ← / →  slap your / their pile    Space  start / pause    F1  keys    "
                      "Esc  stop", _DIM))
    return Text("\n").join(lines)


def _clock(ms: float) -> str:
    ms = max(0, int(ms))
    return f"{ms // 60000}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def summary_lines(game: RealtimeGame) -> list[str]:
    """The result and the human's reaction times beside the presets, as plain text lines.

    The human's median and mean latency are each set beside the presets' own, and the preset
    nearest each is marked, naming the statistic ("<- closest to your median").
    """
    rec = game.record()
    o = rec["outcome"]
    names = ["you" if p["name"] == "human" else p["name"] for p in rec["players"]]
    result = o["result"].replace("human wins", "you win")
    rounds = counted(o["rounds"], "round")
    lines = [f"Result: {result} — {rounds}, {_clock(o['clock_ms'])} of game time "
             f"(you: seat {game.human}, {names[game.bot]}: seat {game.bot})"]
    s = reaction_summary(game.reactions, game.motor_ms)
    if s["moves"] == 0:
        lines.append("No moves of yours to time.")
    else:
        lines.append(f"Your latency (reaction + {game.motor_ms} ms motor time) over "
                     f"{counted(s['moves'], 'move')}: median {s['median_ms']:.0f} ms, "
                     f"mean {s['mean_ms']:.0f} ms, "
                     f"10%-90% {s['p10_ms']:.0f}-{s['p90_ms']:.0f} ms")
    lines.append("  preset    median    mean")
    for name, p in s["presets"].items():
        near = [stat for stat in ("median", "mean") if s[f"closest_{stat}"] == name]
        mark = f"  <- closest to your {' and '.join(near)}" if near else ""
        lines.append(f"  {name:<8} {p['median_ms']:6.0f}  {p['mean_ms']:6.0f}{mark}")
    return lines


_BARS = " ▁▂▃▄▅▆▇█"


def profile_lines(profile: dict, saved: Path | None = None, opponent: str = "racer",
                  columns: int = 48) -> list[str]:
    """A person's fitted latency beside the presets, as plain text lines.

    Args:
        profile: ``engine.person_profile``'s result.
        saved: where the profile file was written (its reuse commands follow), or None.
        opponent: the player the reuse commands name.
        columns: the width of the density rows.
    """
    fit = profile["fit"]
    if fit is None:
        return [f"No latency profile: {profile['why_not']}."]
    lines = [f"Your latency profile over {counted(fit.n, 'move')} (a log-normal from "
             f"{fit.shift_ms:.0f} ms): mean {fit.mean_ms:.0f} ms, sd {fit.std_ms:.0f} ms, "
             f"median {fit.median_ms:.0f} ms",
             f"  closest preset: {profile['closest']} (largest gap between the distribution "
             "functions: " + ", ".join(f"{n} {d:.2f}" for n, d in profile["distance"].items())
             + ")"]
    density = profile["density"]
    ms = np.asarray(density["ms"])
    names = ["you", *(n for n in density if n not in ("ms", "you"))]
    edges = np.linspace(0, len(ms), columns + 1).astype(int)
    spans = list(zip(edges[:-1], edges[1:], strict=True))
    rows = {n: np.array([np.mean(density[n][a:b]) for a, b in spans]) for n in names}
    top = max(r.max() for r in rows.values())
    for name in names:
        bars = "".join(_BARS[int(round(v / top * (len(_BARS) - 1)))] for v in rows[name])
        lines.append(f"  {name:<7}│{bars}│")
    lines.append(f"  {'':<7} 0 ms{ms[-1]:>{columns - 4}.0f} ms")
    if saved is not None:
        lines.append(f"Saved your profile: {saved}. A bot at your speed:")
        lines += ["  " + line for line in reuse_lines(saved, opponent)]
    return lines


class StopDialog(ModalScreen[bool]):
    """"Stop the game?": Y stops it, N or Esc goes back to it (and only that)."""

    DEFAULT_CSS = """
    StopDialog { align: center middle; background: #0f1a14 60%; }
    #dialog { width: 44; height: auto; border: round #ffd54f; background: #17301f; padding: 1 2; }
    """

    def compose(self) -> ComposeResult:
        """One box: the question and its keys."""
        yield Static(Text("Stop the game?\n\n", "bold").append("[Y] stop   [N] / [Esc] go on",
                                                                 "#ffd54f"), id="dialog")

    def on_key(self, event) -> None:
        """Y stops, N / Esc closes the dialog; no key reaches the game below."""
        event.stop()
        if event.key in ("y", "enter"):
            self.dismiss(True)
        elif event.key in ("n", "escape"):
            self.dismiss(False)


class GameScreen(Screen):
    """The table, the status lines and the key legend; the game's keys.

    Its keys reach it only while it is the screen on top: a dialog or Textual's command palette
    over it takes every key, the Esc that closes it included. Textual's help panel (F1) lies on it:
    while it is open the game keys do nothing and Esc (or F1) closes only the panel.
    """

    def compose(self) -> ComposeResult:
        """The three panes: the table, the status lines, the key legend."""
        yield Static(id="table")
        yield Static(id="status")
        yield Static(id="keys")

    def on_mount(self) -> None:
        """The widgets are there: draw them."""
        self.app.show("#keys", keys_text(self.app.game))
        self.app.tick()

    def help_open(self) -> bool:
        """Textual's help panel is shown on this screen."""
        return bool(self.query(HelpPanel))

    def on_screen_suspend(self) -> None:
        """An overlay came on top (a dialog, the command palette): the game pauses."""
        self.app.tick()

    def on_screen_resume(self) -> None:
        """The overlay is gone: the game goes on if it paused for it."""
        self.app.tick()

    def on_key(self, event) -> None:
        """Handle a key (:meth:`PlayApp.key`)."""
        self.app.key(event)


class PlayApp(App):
    """Spit against a bot in the terminal.

    The game starts when the player presses Space (then ``countdown_ms`` of "get ready"); Space
    pauses and resumes it, and any overlay (the stop dialog, Textual's command palette or help
    panel) pauses it while it is open. At the end the result, the human's latency beside the
    presets and its fitted profile are shown; the profile is saved to ``profile_to``.

    Args:
        game: the game to run (not started: the app starts it).
        clock: returns the wall time in ms (default: ``time.monotonic``, in ms); tests pass their
            own to drive time.
        countdown_ms: the game starts this long after Space.
        save_to: the replay's path without extension (default ``spit-replay``).
        profile_to: where the fitted profile is saved at the end (None: not saved).
        hints: mark the stock places that have a legal play.
        tick_s: seconds between two ticks of the game (default 1/60; tests make it short to
            have the timer fire during the app's shutdown).
    """

    TITLE = "Spit"
    CSS = """
    Screen { background: #0f1a14; }
    #table { border: round #3b6b4f; background: #17301f; color: #e8efe9; padding: 0 1; width: 84; }
    #status { color: #e8efe9; padding: 0 1; height: auto; width: 84; }
    #keys { padding: 0 1; width: 84; }
    """

    def __init__(self, game: RealtimeGame, *, clock: Callable[[], float] | None = None,
                 countdown_ms: int = 3000, save_to: Path | None = None,
                 profile_to: Path | None = None, hints: bool = False, tick_s: float = 1 / 60):
        super().__init__()
        self.game = game
        self.clock = clock or (lambda: time.monotonic() * 1000.0)
        self.save_to = Path(save_to) if save_to else None
        self.profile_to = Path(profile_to) if profile_to else None
        self.hints = hints
        self.countdown_ms = countdown_ms
        self.log_lines: list[Text] = []
        self.saved: list[Path] = []
        self.profile: dict | None = None
        self.profile_saved: Path | None = None
        self.finished = False
        self._end_text = Text("")
        self._shown: dict[str, object] = {}
        self.tick_s = tick_s
        self.game_screen = GameScreen()
        self._ticker = None
        self._leaving = False
        self._overlay_paused = False

    def get_default_screen(self) -> Screen:
        """The game's screen, at the bottom of the stack."""
        return self.game_screen

    def on_mount(self) -> None:
        """Tick 60 times a second (the game screen draws itself once mounted)."""
        self._ticker = self.set_interval(self.tick_s, self.tick)

    # --- shutdown -----------------------------------------------------------------------------
    def _stop_ticking(self) -> None:
        self._leaving = True
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    def exit(self, *args, **kwargs) -> None:
        """Stop the tick, then leave (Textual's ``App.exit``): every way out comes here."""
        self._stop_ticking()
        super().exit(*args, **kwargs)

    def on_unmount(self) -> None:
        """Stop the tick (if something took the app down without :meth:`exit`)."""
        self._stop_ticking()

    def show(self, selector: str, content) -> bool:
        """Put ``content`` in the game screen's widget ``selector``.

        Only while the app is not leaving and the widget is there.

        Returns:
            whether it was shown.
        """
        if self._leaving or not self.is_running:
            return False
        try:
            widget = self.game_screen.query_one(selector, Static)
        except NoMatches:  # the screen is being taken down
            return False
        if self._shown.get(selector) != content:  # a redraw only for a change
            self._shown[selector] = content
            widget.update(content)
        return True

    # --- overlays -----------------------------------------------------------------------------
    def overlay(self) -> str | None:
        """The overlay open over the game ("help", or the screen on top), or None."""
        try:
            top = self.screen
        except ScreenStackError:  # the app is being taken down
            return None
        if top is not self.game_screen:
            return type(top).__name__
        if self.game_screen.help_open():
            return "help"
        return None

    def _follow_overlays(self, wall: float) -> None:
        """Pause the running game while an overlay is open; resume it once none is."""
        game = self.game
        open_now = self.overlay() is not None
        if open_now and game.started and not game.over and not game.paused:
            game.pause(wall)
            self._overlay_paused = True
        elif not open_now and self._overlay_paused:
            self._overlay_paused = False
            if game.paused:
                game.resume(wall)

    # --- time ---------------------------------------------------------------------------------
    def tick(self) -> None:
        """Advance the game to now and redraw (called 60 times a second, and by tests).

        Once the app is leaving, a tick that still comes does nothing.
        """
        if self._leaving:
            return
        wall = self.clock()
        if not self.finished:
            self._follow_overlays(wall)
            for ev in self.game.advance(wall):
                self._narrate(ev)
            for msg in self.game.messages:
                self._say(Text(msg, "#ff8a80"))
            self.game.messages.clear()
            if self.game.over:
                self.finished = True
                self._show_end()
        now = self.game.game_ms(wall)
        if self.game.paused and not self.finished:
            self.show("#table", Text("\n" * 8 + "paused: the cards are hidden".center(80),
                                     "bold #ffd54f"))
        else:
            self.show("#table", table_text(self.game, max(now, 0.0), self.hints))
        self.show("#status", self._end_text if self.finished else self._status(now))

    def _status(self, now: float) -> Text:
        snap = self.game.snapshot
        if not self.game.started:
            head = Text(f"  Press Space to start  ·  you against {self.game.opponent}",
                        "bold #ffd54f")
        elif self.game.paused:
            head = Text("  Paused  ·  Space to go on" if not self._overlay_paused else
                        "  Paused while the overlay is open", "bold #ffd54f")
        elif now < 0:
            head = Text(f"  Get ready… {int(-now) // 1000 + 1}", "bold #ffd54f")
        elif self.game.holding or snap["phase"] == "slap":
            me, opp = self.game.human, self.game.bot
            head = Text(f"  SLAP!  ← your pile ({counted(len(snap['centre'][me]), 'card')})   → "
                        f"{self.game.opponent_name}'s pile "
                        f"({counted(len(snap['centre'][opp]), 'card')}) — "
                        "the smaller one is better", "bold #ffd54f")
        else:
            head = Text(f"  clock {_clock(now)} · round {snap['round'] + 1} · {snap['phase']}",
                        "bold")
        return Text("\n").join([head, *self.log_lines[-4:]])

    def _say(self, line: Text) -> None:
        self.log_lines.append(Text("  ").append_text(line))
        del self.log_lines[:-20]

    def _narrate(self, ev: dict) -> None:
        p, t = ev["player"], ev["type"]
        who = "you" if p == self.game.human else self.game.opponent_name
        pile = ""
        if ev.get("pile", -1) >= 0:
            pile = "your pile" if ev["pile"] == self.game.human else \
                f"{self.game.opponent_name}'s pile"
        style = _P[p] if p >= 0 else "bold"
        if t == "play":
            self._say(Text(f"{who} played {card_label(ev['card'])} on {pile}", style))
        elif t == "bounce":
            self._say(Text(f"{who}: {card_label(ev['card'])} bounced off {pile} (too late)",
                           "#ff8a80"))
        elif t == "spit":
            self._say(Text(f"spit: {who} turned {card_label(ev['card'])}", "#64b5f6"))
        elif t == "slap":
            self._say(Text(f"{who} slapped first and took {pile}", "bold #ffd54f"))
        elif t == "round_end":
            self._say(Text("round over" + (f": {who} emptied the stocks first" if p >= 0 else ""),
                           "bold"))

    # --- input --------------------------------------------------------------------------------
    def key(self, event) -> None:
        """A key on the game screen (no dialog or palette over it).

        With the help panel open, Esc or F1 closes it and nothing else happens. Otherwise: a
        move key goes to the game (a refusal is shown), Space starts, pauses or resumes, F1
        opens the help panel, Esc asks whether to stop. At the end, S saves the replay and Q (or
        Esc) quits.
        """
        key = event.key
        if self._leaving:
            return
        event.stop()
        if self.finished:
            if key == "s":
                self.save()
            elif key in ("q", "escape"):
                self.exit(self.game)
            return
        if self.game_screen.help_open():
            if key in ("escape", "f1"):
                self.action_hide_help_panel()
                self.call_after_refresh(self.tick)
            return
        wall = self.clock()
        if key == "f1":
            self.action_show_help_panel()
            self.call_after_refresh(self.tick)
        elif key == "escape":
            self.push_screen(StopDialog(), self._stop_answer)
        elif key == "space":
            self._space(wall)
        elif key in GAME_KEYS:
            self._move(key, wall)
        self.tick()

    def _space(self, wall: float) -> None:
        game = self.game
        if not game.started:
            game.start(wall, self.countdown_ms)
        elif game.paused:
            game.resume(wall)
        elif not game.over:
            game.pause(wall)

    def _move(self, key: str, wall: float) -> None:
        if not self.game.started:
            self._say(Text("press Space to start", "#ff8a80"))
            return
        if self.game.paused:
            self._say(Text("paused: Space to go on", "#ff8a80"))
            return
        _, refused = press_key(self.game, key, wall)
        if refused:
            self._say(Text(refused, "#ff8a80"))

    def _stop_answer(self, stop: bool | None) -> None:
        if stop and not self._leaving:
            self.game.stop()
            self._overlay_paused = False
        self.tick()

    # --- the end ------------------------------------------------------------------------------
    def _end_lines(self) -> list[Text]:
        lines = [Text(line) for line in summary_lines(self.game)]
        lines[0].stylize("bold")
        lines += [Text(line) for line in profile_lines(
            self.profile, self.profile_saved, self.game.opponent.partition("@")[0])]
        return lines

    def _show_end(self) -> None:
        self.profile = person_profile(self.game.latencies_ms())
        if self.profile_to is not None and self.profile["fit"] is not None:
            self.profile_saved = self.profile["fit"].save(
                self.profile_to, source=f"experiments.play (terminal): {self.profile['moves']} "
                f"moves against {self.game.opponent}, motor time {self.game.motor_ms} ms")
        where = self.save_to if self.save_to else Path("spit-replay")
        lines = self._end_lines()
        lines.append(Text(f"[S] save the replay ({where}.json and .html)    [Q] quit",
                          "bold #ffd54f"))
        self._end_text = Text("\n").join(lines)
        self.show("#status", self._end_text)
        self.show("#keys", "")

    def save(self) -> list[Path]:
        """Write the replay record and its HTML page to ``save_to`` + .json / .html.

        Returns:
            the two paths written.
        """
        base = self.save_to if self.save_to else Path("spit-replay")
        record = self.game.record()
        paths = [replay.save(record, base.with_name(base.name + ".json")),
                 write_html(record, base.with_name(base.name + ".html"),
                            title="Spit: you vs " + self.game.opponent)]
        self.saved = paths
        lines = self._end_lines()
        lines.append(Text(f"saved {paths[0]} and {paths[1].name}    [Q] quit", "bold #66bb6a"))
        self._end_text = Text("\n").join(lines)
        self.show("#status", self._end_text)
        return paths
