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

from rich.text import Text
from textual.app import App, ComposeResult
from textual.css.query import NoMatches
from textual.widgets import Static

from experiments.realtime.engine import RealtimeGame, reaction_summary
from spit_env import replay, rules
from spit_env.replay.html import card_label, write_html

__all__ = ["PlayApp", "KEYMAP", "key_action", "summary_lines"]

#: The keys of the five stock places, per kind of move (column s = stock place s).
KEYMAP = {
    "fits": "12345",  # play where it fits: your pile first
    "own": "qwert",  # play onto your own centre pile (drawn on the left)
    "opp": "asdfg",  # play onto the opponent's centre pile (drawn on the right)
    "fill": "zxcvb",  # fill an empty place from this place, or turn its top up (auto_flip off)
}
SLAP_KEYS = {"left": 0, "right": 1}  # slap your pile / the opponent's (egocentric piles)

_FACE = {False: "bold #161616 on #f4f1e8", True: "bold #c62828 on #f4f1e8"}
_BACK = "#9fb8ee on #24427c"
_DIM = "#5b7565"
_P = ("bold #4fc3f7", "bold #ffb74d")  # seat colours, as in the HTML replay


def key_action(key: str, mask) -> int | None:
    """The egocentric action id a key asks for (:data:`KEYMAP`, the arrows for SLAP).

    "Where it fits" and "fill or flip" pick the legal one (own pile first); if none is legal, the
    plain PLAY onto the own pile / FILL is returned (and refused by the game).

    Args:
        key: a Textual key name.
        mask: (23,) bool, the human's legal moves.

    Returns:
        an action id 0-22, or None if the key is not a move key.
    """
    for kind, keys in KEYMAP.items():
        if key in keys:
            s = keys.index(key)
            if kind == "own":
                return rules.play_action(s, 0)
            if kind == "opp":
                return rules.play_action(s, 1)
            if kind == "fits":
                legal = [a for a in (rules.play_action(s, 0), rules.play_action(s, 1)) if mask[a]]
                return legal[0] if legal else rules.play_action(s, 0)
            legal = [a for a in (rules.fill_action(s), rules.flip_action(s)) if mask[a]]
            return legal[0] if legal else rules.fill_action(s)
    if key in SLAP_KEYS:
        return rules.slap_action(SLAP_KEYS[key])
    return None


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
    pile = "your" if (rules.ACTION_PILE[a] == 0) == me else f"{game.opponent}'s"
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
    name = "you" if seat == game.human else game.opponent
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
    right = Text(f"  {game.opponent}'s spit ×{spit[1]}", _DIM)
    for r in range(3):
        line = Text(" " * 2)
        line.append_text(left if r == 1 else Text(" " * 16))
        line.append_text(cells[0][r]).append(" " * 9).append_text(cells[1][r])
        if r == 1:
            line.append_text(right)
        lines.append(line)
    sizes = [("1 card" if len(p) == 1 else f"{len(p)} cards") if p else "no pile" for p in piles]
    lines.append(Text(" " * 16 + "your pile".center(9) + " " * 5
                      + f"{game.opponent}'s".center(9), _DIM))
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
            ("opp", f"onto {game.opponent}'s pile (right)"),
            ("fill", "fill an empty place / turn up")]
    lines = []
    for kind, text in rows:
        keys = " ".join(k.upper().center(5) for k in KEYMAP[kind])
        lines.append(Text("  keys  " if kind == "fits" else " " * 8, _DIM)
                     .append(keys, "bold").append("   " + text, _DIM))
    lines.append(Text("  ← / →  slap your / their pile     Esc  stop the game", _DIM))
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
    rounds = "1 round" if o["rounds"] == 1 else f"{o['rounds']} rounds"
    lines = [f"Result: {result} — {rounds}, {_clock(o['clock_ms'])} of game time "
             f"(you: seat {game.human}, {names[game.bot]}: seat {game.bot})"]
    s = reaction_summary(game.reactions, game.motor_ms)
    if s["moves"] == 0:
        lines.append("No moves of yours to time.")
    else:
        lines.append(f"Your latency (reaction + {game.motor_ms} ms motor time) over "
                     f"{s['moves']} moves: median {s['median_ms']:.0f} ms, "
                     f"mean {s['mean_ms']:.0f} ms, "
                     f"10%-90% {s['p10_ms']:.0f}-{s['p90_ms']:.0f} ms")
    lines.append("  preset    median    mean")
    for name, p in s["presets"].items():
        near = [stat for stat in ("median", "mean") if s[f"closest_{stat}"] == name]
        mark = f"  <- closest to your {' and '.join(near)}" if near else ""
        lines.append(f"  {name:<8} {p['median_ms']:6.0f}  {p['mean_ms']:6.0f}{mark}")
    return lines


class PlayApp(App):
    """Spit against a bot in the terminal.

    Args:
        game: the game to run (its clock offset is set when the app mounts).
        clock: returns the wall time in ms (default: ``time.monotonic``, in ms); tests pass their
            own to drive time.
        countdown_ms: the game starts this long after the app does.
        save_to: the replay's path without extension (default ``spit-replay``).
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
                 countdown_ms: int = 3000, save_to: Path | None = None, hints: bool = False,
                 tick_s: float = 1 / 60):
        super().__init__()
        self.game = game
        self.clock = clock or (lambda: time.monotonic() * 1000.0)
        self.save_to = Path(save_to) if save_to else None
        self.hints = hints
        self.countdown_ms = countdown_ms
        self.log_lines: list[Text] = []
        self.saved: list[Path] = []
        self.finished = False
        self.tick_s = tick_s
        self._ticker = None
        self._leaving = False

    def compose(self) -> ComposeResult:
        """The three panes: the table, the status lines, the key legend."""
        yield Static(id="table")
        yield Static(id="status")
        yield Static(id="keys")

    def on_mount(self) -> None:
        """Start the game clock after the countdown and tick 60 times a second."""
        self.game.offset = self.clock() + self.countdown_ms
        self.show("#keys", keys_text(self.game))
        self._ticker = self.set_interval(self.tick_s, self.tick)
        self.tick()

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
        """Put ``content`` in the widget ``selector`` if the app is not leaving and it is there.

        Returns:
            whether it was shown.
        """
        if self._leaving or not self.is_running:
            return False
        try:
            widget = self.query_one(selector, Static)
        except NoMatches:  # the screen is being taken down
            return False
        widget.update(content)
        return True

    # --- time ---------------------------------------------------------------------------------
    def tick(self) -> None:
        """Advance the game to now and redraw (called 60 times a second, and by tests).

        Once the app is leaving, a tick that still comes does nothing.
        """
        if self._leaving:
            return
        wall = self.clock()
        if not self.finished:
            for ev in self.game.advance(wall):
                self._narrate(ev)
            for msg in self.game.messages:
                self._say(Text(msg, "#ff8a80"))
            self.game.messages.clear()
            if self.game.over:
                self.finished = True
                self._show_end()
        now = self.game.game_ms(wall)
        self.show("#table", table_text(self.game, now, self.hints))
        if not self.finished:
            self.show("#status", self._status(now))

    def _status(self, now: float) -> Text:
        snap = self.game.snapshot
        if now < 0:
            head = Text(f"  Get ready… {int(-now) // 1000 + 1}", "bold #ffd54f")
        elif self.game.holding or snap["phase"] == "slap":
            me, opp = self.game.human, self.game.bot
            head = Text(f"  SLAP!  ← your pile ({len(snap['centre'][me])} cards)   → "
                        f"{self.game.opponent}'s pile ({len(snap['centre'][opp])} cards) — the "
                        "smaller one is better", "bold #ffd54f")
        else:
            head = Text(f"  clock {_clock(now)} · round {snap['round'] + 1} · {snap['phase']}",
                        "bold")
        return Text("\n").join([head, *self.log_lines[-4:]])

    def _say(self, line: Text) -> None:
        self.log_lines.append(Text("  ").append_text(line))
        del self.log_lines[:-20]

    def _narrate(self, ev: dict) -> None:
        p, t = ev["player"], ev["type"]
        who = "you" if p == self.game.human else self.game.opponent
        pile = ""
        if ev.get("pile", -1) >= 0:
            pile = "your pile" if ev["pile"] == self.game.human else f"{self.game.opponent}'s pile"
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
    def on_key(self, event) -> None:
        """Handle a key: a move goes to the game (a refusal is shown), Esc stops the game.

        At the end, S saves the replay and Q (or Esc) quits.
        """
        key = event.key
        if self._leaving:
            return
        if self.finished:
            if key == "s":
                self.save()
            elif key in ("q", "escape"):
                self.exit(self.game)
            return
        if key == "escape":
            self.game.stop()
            self.tick()
            return
        action = key_action(key, self.game.human_mask())
        if action is None:
            return
        event.stop()
        refused = self.game.press(action, self.clock())
        if refused and key in KEYMAP["fits"] and refused.startswith("not possible"):
            place = self.game.snapshot["stocks"][self.game.human][KEYMAP["fits"].index(key)]
            refused = f"{card_label(place[-1][0])} fits neither pile" if place and place[-1][1] \
                else "nothing to play from that place"
        if refused:
            self._say(Text(refused, "#ff8a80"))
        self.tick()

    # --- the end ------------------------------------------------------------------------------
    def _show_end(self) -> None:
        lines = [Text(line) for line in summary_lines(self.game)]
        lines[0].stylize("bold")
        where = self.save_to if self.save_to else Path("spit-replay")
        lines.append(Text(f"[S] save the replay ({where}.json and .html)    [Q] quit",
                          "bold #ffd54f"))
        self.show("#status", Text("\n").join(lines))
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
        lines = [Text(line) for line in summary_lines(self.game)]
        lines.append(Text(f"saved {paths[0]} and {paths[1].name}    [Q] quit", "bold #66bb6a"))
        self.show("#status", Text("\n").join(lines))
        return paths
