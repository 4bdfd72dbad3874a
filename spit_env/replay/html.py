"""A replay record (``spit_env.replay``) as one self-contained HTML page.

The page draws the table as cards, both hands' moves in flight with their landing times, races
and bounces, a timeline of spits, round ends and slaps, and player controls (play / pause, step,
scrub, speed, keyboard).

The page is a view of the recorded snapshots, like the text render: it re-implements no rule.
What it shows beyond a snapshot is read from the record here, in Python, and embedded as data:

* **moves** (:func:`moves_of`): every decision of each seat, from the clock it was made at to the
  clock it landed, with what became of it (play, bounce, fill, flip, slap, wait, cancelled);
* **races** (inside the moves): a bounce is a lost race when the opponent's card landed on the
  same centre pile while the bounced card was in flight; ``race_ms`` is by how much it lost;
* **marks** (:func:`marks_of`): the timeline's spits, round ends, slaps, races and the game end.

The page needs no network: CSS, JavaScript and data are inline, cards are drawn with CSS and
Unicode suit symbols. It runs in any current browser, from a file.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from pathlib import Path

from .. import rules
from .record import validate

__all__ = ["replay_html", "write_html", "moves_of", "marks_of", "card_label", "table_view",
           "resource", "spit_reason", "SUIT_SYMBOLS"]

#: Suit symbols for suits 0-3 of D2 (clubs, diamonds, hearts, spades, as render.py's c d h s).
SUIT_SYMBOLS = ("\u2663", "\u2666", "\u2665", "\u2660")
_RANK_LABELS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
_LANDING = {"play", "bounce", "fill", "flip", "slap"}
#: Names of the action kinds, indexed by rules.KIND_* (WAIT, PLAY, FILL, FLIP, SLAP).
KIND_NAMES = ("wait", "play", "fill", "flip", "slap")


def card_label(card: int) -> str:
    """Rank and suit symbol of a card id 0-51 (D2), e.g. 0 -> "A♣", 51 -> "K♠".

    Raises:
        ValueError: an id outside 0-51.
    """
    rank = rules.rank(card)  # checks the id
    return _RANK_LABELS[rank - 1] + SUIT_SYMBOLS[int(card) // rules.N_RANKS]


def _pile_abs(player: int, action: int) -> int:
    """The absolute centre pile of an egocentric action id (0 own = the player's, 1 the other's)."""
    pile = int(rules.ACTION_PILE[action])
    return -1 if pile < 0 else (player if pile == 0 else 1 - player)


def moves_of(record: dict) -> list[dict]:
    """Every decision of both seats, in decision order, with its landing.

    Each move: ``player``, ``step`` (the step it was decided in), ``start_ms`` (decision clock),
    ``end_ms`` (landing or cancellation clock), ``action`` (egocentric id), ``kind`` (wait, play,
    fill, flip, slap), ``card`` (carried card or -1), ``stock`` (place or -1), ``pile`` (absolute
    centre pile or -1), ``outcome`` (play, bounce, fill, flip, slap, wait, cancelled), and for a
    bounce that lost a race ``race_ms`` (landing minus the opponent's play on that pile) and
    ``race_card`` (the card that got there first).
    """
    wait_ms = int(record["config"]["wait_ms"])
    frames = [record["initial"]] + [s["snapshot"] for s in record["steps"]]
    open_moves: list[dict | None] = [None, None]
    moves: list[dict] = []
    plays_on = ([], [])  # per absolute pile: (clock, player, card) of every play
    for k, step in enumerate(record["steps"]):
        before, after = frames[k], frames[k + 1]
        for p in range(rules.N_PLAYERS):
            if before["in_flight"][p] is None:  # a free seat decides at the step's start
                fl = after["in_flight"][p]
                action = int(step["actions"][p])
                if any(ev["type"] == "illegal" and ev["player"] == p for ev in step["events"]):
                    # the core played something else (docs/RULES.md): what is in flight, if seen
                    action = int(fl["action"]) if fl is not None else rules.WAIT
                stock = int(rules.ACTION_STOCK[action])
                card = -1
                if rules.ACTION_KIND[action] in (rules.KIND_PLAY, rules.KIND_FILL):
                    place = before["stocks"][p][stock]
                    card = int(place[-1][0]) if place else -1
                move = {
                    "player": p,
                    "step": k,
                    "start_ms": int(before["clock_ms"]),
                    "end_ms": None,
                    "action": action,
                    "kind": KIND_NAMES[int(rules.ACTION_KIND[action])],
                    "card": card,
                    "stock": stock,
                    "pile": _pile_abs(p, action),
                    "outcome": None,
                }
                if fl is not None:
                    move["lands_ms"] = int(fl["lands_ms"])
                open_moves[p] = move
                moves.append(move)
        for ev in step["events"]:
            p = ev["player"]
            if ev["type"] == "play":
                plays_on[ev["pile"]].append((ev["clock_ms"], p, ev["card"]))
            if ev["type"] in _LANDING and p >= 0 and open_moves[p] is not None:
                move = open_moves[p]
                move["outcome"], move["end_ms"] = ev["type"], int(ev["clock_ms"])
                if ev["type"] == "slap":  # the pile taken (also for a slap the core chose)
                    move["kind"], move["pile"] = "slap", int(ev["pile"])
                open_moves[p] = None
        for p in range(rules.N_PLAYERS):
            move = open_moves[p]
            if move is not None and after["in_flight"][p] is None:
                # gone without a landing event: a WAIT that landed, or a move cancelled by a
                # stall, a round end or the other player's slap (D9, D10, D11)
                if move["kind"] == "wait":
                    move["outcome"] = "wait"
                    move["end_ms"] = min(move["start_ms"] + wait_ms, int(after["clock_ms"]))
                else:
                    move["outcome"] = "cancelled"
                    move["end_ms"] = min(
                        move.get("lands_ms", after["clock_ms"]), int(after["clock_ms"])
                    )
                open_moves[p] = None
    for move in moves:  # a game stopped early leaves moves in flight
        if move["outcome"] is None:
            move["outcome"] = "in_flight"
            move["end_ms"] = move.get("lands_ms", move["start_ms"])
        if move["outcome"] == "bounce" and move["pile"] >= 0:
            rivals = [(t, c) for t, q, c in plays_on[move["pile"]]
                      if q != move["player"] and move["start_ms"] <= t <= move["end_ms"]]
            if rivals:
                t, c = rivals[-1]
                move["race_ms"] = move["end_ms"] - t
                move["race_card"] = c
    return moves


def marks_of(record: dict, moves: list[dict] | None = None) -> list[dict]:
    """Timeline marks.

    Each: ``clock_ms``, ``step`` (the step after which it is seen), ``kind`` (spit, round_end,
    slap, race, bounce, game_end, illegal), ``player`` (-1 none) and ``text``.
    """
    names = [p["name"] for p in record["players"]]
    marks = []
    for k, step in enumerate(record["steps"]):
        spat = [ev for ev in step["events"] if ev["type"] == "spit"]
        if spat:
            cards = ", ".join(f"{names[ev['player']]} {card_label(ev['card'])}" for ev in spat)
            marks.append(
                {
                    "clock_ms": spat[0]["clock_ms"],
                    "step": k + 1,
                    "kind": "spit",
                    "player": -1,
                    "text": f"spit ({spit_reason(spat[0]['value'], record)}): {cards}",
                }
            )
        for ev in step["events"]:
            p, t = ev["player"], ev["clock_ms"]
            who = names[p] if p >= 0 else ""
            if ev["type"] == "round_end":
                cause = (
                    "emptied its stocks" if ev["value"] == rules.ROUND_END_EMPTIED else "stall-out"
                )
                text = f"round end: {who} {cause}" if p >= 0 else "round end: stall-out"
            elif ev["type"] == "slap":
                text = f"slap: {who} takes pile {ev['pile']} ({names[ev['pile']]}'s)"
            elif ev["type"] == "game_end":
                text = "game over: " + ("truncated" if ev["value"] == rules.GAME_END_TRUNCATED else
                                        (f"{who} wins" if p >= 0 else "a draw"))
            elif ev["type"] == "illegal":
                text = f"illegal: {who} sent {rules.ACTION_NAMES[ev['action']]}"
            else:
                continue
            marks.append(
                {"clock_ms": t, "step": k + 1, "kind": ev["type"], "player": p, "text": text}
            )
    for move in moves if moves is not None else moves_of(record):
        if move["outcome"] != "bounce":
            continue
        p, card = move["player"], card_label(move["card"]) if move["card"] >= 0 else "?"
        if "race_ms" in move:
            text = (f"race: {names[p]}'s {card} lost pile {move['pile']} to "
                    f"{card_label(move['race_card'])} by {move['race_ms']} ms")
            kind = "race"
        else:
            text = f"bounce: {names[p]}'s {card} no longer fits pile {move['pile']}"
            kind = "bounce"
        marks.append({"clock_ms": move["end_ms"], "step": _step_seen(record, move), "kind": kind,
                      "player": p, "text": text})
    marks.sort(key=lambda m: (m["clock_ms"], m["step"]))
    return marks


def spit_reason(value: int, record: dict) -> str:
    """Why a spit happened, from its event value and the record's config.

    The values: docs/RULES.md, "Events".
    """
    if value == rules.SPIT_STALL:
        return "nobody can play"
    if value == rules.SPIT_TIMEOUT:
        timeout = record["config"].get("stall_timeout_ms")
        return f"no card moved for {timeout / 1000:g} s" if timeout else "stall timeout"
    return "new round"


def _step_seen(record: dict, move: dict) -> int:
    """The frame index at which a move's landing is shown (the first whose clock reaches it)."""
    steps = record["steps"]
    for k in range(move["step"], len(steps)):
        if steps[k]["snapshot"]["clock_ms"] >= move["end_ms"]:
            return k + 1
    return len(steps)


def table_view() -> dict:
    """What the shared table drawing (``page/table.js``) reads besides snapshots.

    The cards' faces, the actions' kinds, stocks and piles, and the event values it words.
    """
    return {
        "kinds": list(KIND_NAMES),
        "cards": [{"label": card_label(c), "rank": _RANK_LABELS[rules.rank(c) - 1],
                   "suit": SUIT_SYMBOLS[c // rules.N_RANKS], "red": c // rules.N_RANKS in (1, 2)}
                  for c in range(rules.N_CARDS)],
        "actions": [{"name": rules.ACTION_NAMES[a], "kind": int(rules.ACTION_KIND[a]),
                     "stock": int(rules.ACTION_STOCK[a]), "pile": int(rules.ACTION_PILE[a])}
                    for a in range(rules.N_ACTIONS)],
        # event values the page words (docs/RULES.md "Events")
        "round_end_emptied": rules.ROUND_END_EMPTIED,
        "game_end_truncated": rules.GAME_END_TRUNCATED,
    }


def _view(record: dict) -> dict:
    moves = moves_of(record)
    return dict(table_view(), moves=moves, marks=marks_of(record, moves),
                spit_reasons={str(v): spit_reason(v, record) for v in
                              (rules.SPIT_ROUND_START, rules.SPIT_STALL, rules.SPIT_TIMEOUT)})


def resource(name: str) -> str:
    """The text of one of the page's assets in ``page/`` (UTF-8).

    ``table.html`` (the table's markup), ``table.css`` (its look) and ``table.js`` (its drawing:
    ``window.SpitTable``) are shared with the live game's page (``experiments/realtime/web.py``);
    ``page.html`` and ``replay.js`` are the replay's own.
    """
    return resources.files(__package__).joinpath("page", name).read_text(encoding="utf-8")


def _script_json(data) -> str:
    # inside <script>, "</script" would close the element and "<!--" change how it is parsed;
    # "\u003c" is the same character to JSON and none to HTML
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")


def replay_html(record: dict, title: str | None = None) -> str:
    """The page of a record, as one HTML string (UTF-8, no external resource).

    Raises:
        ValueError: an invalid record (``spit_env.replay.validate``).
    """
    validate(record)
    names = [p["name"] for p in record["players"]]
    title = title or f"Spit replay: {names[0]} vs {names[1]}"
    page = resource("page.html")
    parts = {
        "__TITLE__": html.escape(title),
        "/*__STYLE__*/": resource("table.css"),
        "<!--__TABLE__-->": resource("table.html"),
        "/*__TABLE_SCRIPT__*/": resource("table.js"),
        "/*__SCRIPT__*/": resource("replay.js"),
        "__DATA__": _script_json({"record": record, "view": _view(record)}),
    }
    pattern = re.compile("|".join(re.escape(key) for key in parts))
    found = pattern.findall(page)
    if sorted(found) != sorted(parts):
        raise RuntimeError(f"the replay page template must hold each of {sorted(parts)} once")
    # one pass, so that text inserted (a player's name, say) is never searched for placeholders
    return pattern.sub(lambda m: parts[m.group(0)], page)


def write_html(record: dict, path, title: str | None = None) -> Path:
    """Write :func:`replay_html` of ``record`` to ``path`` (folders created). Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(replay_html(record, title), encoding="utf-8")
    return path
