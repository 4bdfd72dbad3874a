"""The browser game: the real-time engine (``engine.py``) served to a page on 127.0.0.1.

Imported by ``experiments/play.py --web`` (and its tests): Starlette and uvicorn are optional
dependencies (the ``[web]`` extra). :func:`create_app` is the ASGI app: the page at ``/``, its
assets at ``/assets/...`` (shipped in the packages: the table's markup, look and drawing are the
replay page's own, ``spit_env/replay/page/table.*``; the live page's in ``page/``), and one game
per websocket at ``/ws``. :func:`serve` runs it with uvicorn until Ctrl-C.

**One connection, one sitting.** Each websocket gets its own ``engine.Sitting``: a game against
the opponent, then its rematches, their latencies pooled into one profile, which is fitted and
saved at the end of each game. A closed connection (a closed tab) stops its game; the server
goes on, serving other tabs, until Ctrl-C, which closes every connection, stops their games and
frees the port.

**Time.** The server ticks every ``tick_s`` (1/60 s) of real time and advances the game to the
wall time of ``clock`` (injectable: the tests pass a clock they move by hand, so a game's result
depends only on the times they set and the keys they press). A state message goes to the page
whenever the table, a hand or the game's status changed, or game time moved by ``STATE_EVERY_MS``.

**Messages** (JSON text, one object each). From the page: ``{"type": "start" | "pause" |
"resume" | "stop" | "rematch" | "save"}``, ``{"type": "key", "key": K}`` (a key of
``keys.KEYMAP`` or "left" / "right": the terminal game's keys), ``{"type": "move", "stock": s,
"to": "own" | "opp" | "empty"}`` and ``{"type": "slap", "pile": "own" | "opp"}`` (clicks; each is
played as the key it stands for). To the page: ``hello`` (names, keys, the table's view data),
``state`` (the table, the hands, the last seconds of moves, new events, messages), ``refused``
(a key the game refused, and why), ``end`` (the result and the fitted profile: its report, the
densities beside the presets', the file and the commands that reuse it), ``saved`` (the replay's
files) and ``error``: a message that is not JSON, not an object, of an unknown type, with a bad or
unknown field, or out of order (a second start, a rematch before the end, ...) gets an ``error``
and changes nothing.

**Safety.** The server binds 127.0.0.1 unless told otherwise (``serve(host=...)``, which the
script allows with ``--host`` only, printing a warning). Requests whose Host header is not the
served host are refused (Starlette's ``TrustedHostMiddleware``: no DNS rebinding), a websocket
whose Origin is not the page's own is closed before it opens (code 1008), messages are at most
``MAX_MESSAGE_BYTES``, and at most ``MAX_CONNECTIONS`` games run at once. The page loads nothing
from elsewhere (its Content-Security-Policy says so).
"""

from __future__ import annotations

import asyncio
import bisect
import json
import math
import socket
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from experiments.realtime.engine import HUMAN, Sitting, reaction_summary, reuse_lines
from experiments.realtime.keys import GAME_KEYS, KEYMAP, press_key
from spit_env import replay, rules
from spit_env.progress import counted
from spit_env.replay.html import KIND_NAMES, marks_of, moves_of, resource, spit_reason, table_view

__all__ = ["WebSettings", "Connection", "create_app", "serve", "free_socket",
           "MAX_CONNECTIONS", "MAX_MESSAGE_BYTES"]

MAX_CONNECTIONS = 4
MAX_MESSAGE_BYTES = 4096
STATE_EVERY_MS = 100  # a state message at least this often (game time) while the clock runs
WINDOW_MS = 4000  # the moves and marks sent: this much game time back
_ASSETS = {  # name -> (package, file, media type): everything the page loads
    "table.css": ("spit_env.replay", "table.css", "text/css"),
    "table.js": ("spit_env.replay", "table.js", "text/javascript"),
    "live.css": ("experiments.realtime", "live.css", "text/css"),
    "live.js": ("experiments.realtime", "live.js", "text/javascript"),
}
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'")
_FIELDS = {  # message type -> its fields besides "type"
    "start": (), "pause": (), "resume": (), "stop": (), "rematch": (), "save": (),
    "key": ("key",), "move": ("stock", "to"), "slap": ("pile",),
}
_CLICK_KEYS = {"own": KEYMAP["own"], "opp": KEYMAP["opp"], "empty": KEYMAP["fill"]}


@dataclass
class WebSettings:
    """The games the server plays: one sitting per connection, each as the script's flags say.

    Attributes:
        opponent: the player string of the bot (``--opponent``).
        seed, game_id: the first game of every sitting (a rematch plays the next game id).
        human_seat, motor_ms, tick_ms, slap_timeout_ms: as ``engine.RealtimeGame`` takes them.
        countdown_ms: from Space to the clock's start.
        save_to: the replays' path without extension (game k of a connection: ``-k`` added).
        profile_to: where each sitting's fitted profile is saved (None: nowhere).
        hints: mark the stock places with a legal play.
        deal: a fixed deal for every game (tests).
        on_end: called with the lines an ended game prints (the script prints them).
    """

    opponent: str = "racer@club"
    seed: int = 0
    game_id: int = 0
    human_seat: int = 0
    motor_ms: int = 50
    tick_ms: int = 25
    slap_timeout_ms: int = 5000
    countdown_ms: int = 3000
    save_to: Path = Path("replays/spit")
    profile_to: Path | None = None
    hints: bool = False
    deal: tuple | None = None
    on_end: Callable[[list[str]], None] | None = field(default=None, repr=False)

    def sitting(self) -> Sitting:
        """A new sitting of these settings."""
        return Sitting(self.opponent, seed=self.seed, game_id=self.game_id,
                       profile_path=self.profile_to, human_seat=self.human_seat,
                       motor_ms=self.motor_ms, tick_ms=self.tick_ms,
                       slap_timeout_ms=self.slap_timeout_ms, deal=self.deal)


class Connection:
    """One websocket's sitting: its messages in, its states out.

    Args:
        websocket: the accepted websocket.
        settings: the server's :class:`WebSettings`.
        clock: the wall time in ms.
        tick_s: seconds between two ticks.
        runs_on: the page may run its clock on between two states (the clock is the wall's).
    """

    def __init__(self, websocket: WebSocket, settings: WebSettings, clock: Callable[[], float],
                 tick_s: float, runs_on: bool = True):
        self.websocket, self.settings, self.clock, self.tick_s = websocket, settings, clock, tick_s
        self.runs_on = runs_on
        self.sitting = settings.sitting()
        self.errors = 0  # error messages sent (bad or out-of-order messages)
        self._send_lock = asyncio.Lock()
        self._events: list[dict] = []
        self._last_key = None
        self._last_sent_ms = -math.inf
        self._ended = False
        self._record_head: tuple = (None, None)  # (game, the record's fixed parts)
        self.closed = False

    @property
    def game(self):
        """The sitting's game being played."""
        return self.sitting.game

    # --- the loop -------------------------------------------------------------------------------
    async def run(self) -> None:
        """Greet, then tick and answer messages until the page goes away."""
        await self.send(self.hello())
        ticker = asyncio.create_task(self._tick_forever())
        try:
            while True:
                message = await self.websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                for reply in self.handle(message.get("text"), message.get("bytes")):
                    await self.send(reply)
                await self.tick()
        except WebSocketDisconnect:
            pass
        finally:
            ticker.cancel()
            with suppress(asyncio.CancelledError):
                await ticker
            self.close()

    def close(self) -> None:
        """The page went away: its game stops (its record says so)."""
        self.closed = True
        if not self.game.over:
            self.game.stop()

    async def _tick_forever(self) -> None:
        while True:
            await self.tick()
            await asyncio.sleep(self.tick_s)

    async def tick(self) -> None:
        """Advance the game to now and send what changed (a state, the end)."""
        wall = self.clock()
        if not self._ended:
            self._events += self.game.advance(wall)
        state = self.state(wall)
        if state is not None:
            await self.send(state)
        if self.game.over and not self._ended:
            self._ended = True
            await self.send(self.end())

    async def send(self, message: dict) -> None:
        """Send one message (JSON); nothing once the connection is closed."""
        if self.closed:
            return
        async with self._send_lock:
            with suppress(WebSocketDisconnect, RuntimeError, OSError):
                await self.websocket.send_text(json.dumps(message, separators=(",", ":"),
                                                          ensure_ascii=False))

    # --- messages in ----------------------------------------------------------------------------
    def error(self, why: str) -> dict:
        """An error reply (and counted)."""
        self.errors += 1
        return {"type": "error", "error": why}

    def handle(self, text: str | None, data: bytes | None = None) -> list[dict]:
        """The replies to one message from the page (module docstring, "Messages").

        Returns:
            the messages to send back (an ``error`` for anything malformed or out of order,
            which changes nothing).
        """
        if text is None:
            return [self.error("messages are JSON text, not binary")]
        if len(text.encode("utf-8")) > MAX_MESSAGE_BYTES:
            return [self.error(f"a message is at most {MAX_MESSAGE_BYTES:,} bytes")]
        try:
            msg = json.loads(text)
        except json.JSONDecodeError:
            return [self.error("a message must be JSON")]
        if not isinstance(msg, dict) or msg.get("type") not in _FIELDS:
            return [self.error(f"a message is an object whose type is one of {sorted(_FIELDS)}")]
        kind = msg["type"]
        extra = sorted(set(msg) - {"type", *_FIELDS[kind]})
        missing = [f for f in _FIELDS[kind] if f not in msg]
        if extra or missing:
            return [self.error(f"{kind}: fields {list(_FIELDS[kind])}; "
                               + (f"unknown {extra}" if extra else f"missing {missing}"))]
        return getattr(self, "_on_" + kind)(msg, self.clock())

    def _on_start(self, msg, wall) -> list[dict]:
        if self.game.started:
            return [self.error("the game has started already")]
        self.game.start(wall, self.settings.countdown_ms)
        return []

    def _on_pause(self, msg, wall) -> list[dict]:
        if not self.game.started or self.game.over or self.game.paused:
            return [self.error("only a running game can be paused")]
        self.game.pause(wall)
        return []

    def _on_resume(self, msg, wall) -> list[dict]:
        if not self.game.paused:
            return [self.error("the game is not paused")]
        self.game.resume(wall)
        return []

    def _on_stop(self, msg, wall) -> list[dict]:
        if self.game.over:
            return [self.error("the game is over already")]
        self.game.stop()
        return []

    def _on_rematch(self, msg, wall) -> list[dict]:
        if not self._ended:
            return [self.error("a rematch comes after the end of the game")]
        self.sitting.new_game()
        self._ended, self._events, self._last_key = False, [], None
        return [self.hello()]

    def _on_save(self, msg, wall) -> list[dict]:
        if not self._ended:
            return [self.error("the replay is saved after the end of the game")]
        k = len(self.sitting.games)
        base = self.settings.save_to
        base = base.with_name(f"{base.name}-{k}")
        record = self.game.record()
        paths = [replay.save(record, base.with_name(base.name + ".json")),
                 replay.write_html(record, base.with_name(base.name + ".html"),
                                   title="Spit: you vs " + self.game.opponent)]
        return [{"type": "saved", "paths": [str(p) for p in paths]}]

    def _press(self, key: str, wall) -> list[dict]:
        action, refused = press_key(self.game, key, wall)
        return [{"type": "refused", "key": key, "reason": refused}] if refused else \
            [{"type": "queued", "key": key, "action": action, "text": self.game.describe(action)}]

    def _on_key(self, msg, wall) -> list[dict]:
        if msg["key"] not in GAME_KEYS:
            return [self.error(f"key must be one of {list(GAME_KEYS)}, got {msg['key']!r}")]
        return self._press(msg["key"], wall)

    def _on_move(self, msg, wall) -> list[dict]:
        stock, to = msg["stock"], msg["to"]
        if isinstance(stock, bool) or not isinstance(stock, int) or not 0 <= stock < rules.N_STOCKS:
            return [self.error(f"move: stock must be a stock place 0-{rules.N_STOCKS - 1}, "
                               f"got {stock!r}")]
        if to not in _CLICK_KEYS:
            return [self.error(f"move: to must be one of {sorted(_CLICK_KEYS)}, got {to!r}")]
        return self._press(_CLICK_KEYS[to][stock], wall)

    def _on_slap(self, msg, wall) -> list[dict]:
        if msg["pile"] not in ("own", "opp"):
            return [self.error(f"slap: pile must be 'own' or 'opp', got {msg['pile']!r}")]
        return self._press("left" if msg["pile"] == "own" else "right", wall)

    # --- messages out ---------------------------------------------------------------------------
    def hello(self) -> dict:
        """The page's set-up: who plays, the keys, the table's view data."""
        game = self.game
        names = [None, None]
        names[game.human], names[game.bot] = "you", game.opponent_name
        view = dict(table_view(), spit_reasons={
            str(v): spit_reason(v, {"config": game.config.to_dict()})
            for v in (rules.SPIT_ROUND_START, rules.SPIT_STALL, rules.SPIT_TIMEOUT)})
        return {"type": "hello", "game": len(self.sitting.games), "names": names,
                "human": game.human, "opponent": game.opponent,
                "latency": [f"{game.motor_ms} ms motor time" if s == game.human
                            else game.config.latency[s].label + " latency" for s in (0, 1)],
                "keys": KEYMAP, "scoring": game.config.scoring, "hints": self.settings.hints,
                "countdown_ms": self.settings.countdown_ms, "runs_on": self.runs_on,
                "view": view}

    def _window(self, now: float) -> tuple[list, list]:
        """The moves (no WAITs) and marks of the last ``WINDOW_MS`` of game time.

        With the moves decided at the table's clock (in the engine's step ahead).
        """
        game = self.game
        steps = game.recorder.steps
        k = bisect.bisect_left(steps, now - WINDOW_MS, key=lambda s: s["snapshot"]["clock_ms"])
        if self._record_head[0] is not game:
            names = ["you", game.opponent_name] if game.human == 0 else [game.opponent_name, "you"]
            self._record_head = (game, {"config": game.recorder.config.to_dict(),
                                        "players": [{"name": n} for n in names]})
        record = dict(self._record_head[1], steps=steps[k:],
                      initial=steps[k - 1]["snapshot"] if k else game.recorder.initial)
        moves = [m for m in moves_of(record) if m["kind"] != "wait"]
        clock = game.snapshot["clock_ms"]
        for seat in (0, 1):
            fl = game.in_flight(seat)
            ahead = fl is not None and fl["action"] != rules.WAIT and \
                game.snapshot["in_flight"][seat] is None
            if ahead:  # decided at this clock: not in the record yet
                action = fl["action"]
                pile = int(rules.ACTION_PILE[action])
                moves.append({"player": seat, "start_ms": clock, "end_ms": fl["lands_ms"],
                              "lands_ms": fl["lands_ms"], "action": action,
                              "kind": KIND_NAMES[int(rules.ACTION_KIND[action])],
                              "card": fl["card"], "stock": int(rules.ACTION_STOCK[action]),
                              "pile": -1 if pile < 0 else (seat if pile == 0 else 1 - seat),
                              "outcome": "in_flight"})
        return moves, marks_of(record, [m for m in moves if m["outcome"] != "in_flight"])

    def state(self, wall: float) -> dict | None:
        """The state message, or None if nothing the page shows changed."""
        game = self.game
        now = game.game_ms(wall)
        snap = game.snapshot
        hands = [game.in_flight(seat) for seat in (0, 1)]
        hands = [fl if fl is not None and fl["action"] != rules.WAIT else None for fl in hands]
        key = json.dumps([len(self.sitting.games), snap["stocks"], snap["centre"], snap["spit"],
                          snap["phase"], snap["round"], snap["scores"], hands, game.started,
                          game.paused, game.over, game.holding, bool(game.messages),
                          bool(self._events)])
        moved = math.isfinite(now) and now - self._last_sent_ms >= STATE_EVERY_MS
        if key == self._last_key and not moved:
            return None
        self._last_key = key
        self._last_sent_ms = now if math.isfinite(now) else -math.inf
        moves, marks = self._window(now if math.isfinite(now) else 0.0)
        mask = game.human_mask()
        hints = [bool(mask[rules.play_action(s, 0)] or mask[rules.play_action(s, 1)])
                 for s in range(rules.N_STOCKS)] if self.settings.hints else None
        message = {"type": "state", "game": len(self.sitting.games),
                   "game_ms": now if math.isfinite(now) else None, "started": game.started,
                   "paused": game.paused, "over": game.over, "holding": game.holding,
                   "snapshot": snap, "moves": moves, "marks": marks, "events": self._events,
                   "messages": list(game.messages), "hints": hints}
        self._events = []
        game.messages.clear()
        return message

    def end(self) -> dict:
        """The end message: the result, the sitting's fitted profile (saved), its reuse."""
        game = self.game
        record = game.record()
        outcome = record["outcome"]
        profile = self.sitting.profile()
        saved = self.sitting.save_profile(profile)
        fit = profile["fit"]
        summary = reaction_summary(game.reactions, game.motor_ms)
        commands = reuse_lines(saved, game.opponent.partition("@")[0]) if saved else []
        result = outcome["result"].replace(f"{HUMAN} wins", "you win")
        lines = [f"game {len(self.sitting.games)} against {game.opponent}: {result}, "
                 f"{counted(outcome['rounds'], 'round')}, {outcome['clock_ms'] / 1000:.1f} s of "
                 "game time"]
        if saved:
            lines += [f"saved your latency profile ({fit.latency.label}, "
                      f"{counted(fit.n, 'move')}): {saved}", "use it as any latency, e.g.:",
                      *("  " + c for c in commands)]
        elif profile["why_not"]:
            lines.append(f"no latency profile yet: {profile['why_not']}")
        if self.settings.on_end is not None:
            self.settings.on_end(lines)
        return {"type": "end", "game": len(self.sitting.games), "result": result,
                "outcome": outcome, "moves": summary["moves"],
                "summary": {k: v for k, v in summary.items() if k != "presets"},
                "fit": fit.report() if fit else None, "why_not": profile["why_not"],
                "distance": profile["distance"], "closest": profile["closest"],
                "density": profile["density"], "latencies_ms": self.sitting.latencies_ms(),
                "profile_path": str(saved) if saved else None, "commands": commands}


def _page(request: Request) -> Response:
    page = resources.files("experiments.realtime").joinpath("page", "live.html") \
        .read_text(encoding="utf-8")
    page = page.replace("<!--__TABLE__-->", resource("table.html"))
    return HTMLResponse(page, headers={"Content-Security-Policy": _CSP,
                                       "Cache-Control": "no-store"})


def _asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _ASSETS:
        return Response("no such asset", status_code=404, media_type="text/plain")
    package, file, media = _ASSETS[name]
    text = resources.files(package).joinpath("page", file).read_text(encoding="utf-8")
    return Response(text, media_type=media, headers={"Cache-Control": "no-store"})


def _same_origin(websocket: WebSocket) -> bool:
    origin, host = websocket.headers.get("origin"), websocket.headers.get("host")
    return origin is not None and host is not None and origin == f"http://{host}"


def create_app(settings: WebSettings, *, clock: Callable[[], float] | None = None,
               tick_s: float = 1 / 60, hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
               ) -> Starlette:
    """The ASGI app of the browser game (module docstring).

    Args:
        settings: the games it plays.
        clock: the wall time in ms (default ``time.monotonic``, in ms; with another clock the
            page shows the server's game time only, not running it on between two states).
        tick_s: seconds between two ticks of each game.
        hosts: the Host header values it answers ("*": any, for a host other than 127.0.0.1).

    Returns:
        the Starlette app; ``app.state.connections`` is the set of open :class:`Connection`
        (``app.state.changes``, a ``threading.Condition``, is notified when it changes).
    """
    def wall() -> float:
        return time.monotonic() * 1000.0

    connections: set[Connection] = set()
    changes = threading.Condition()  # notified when a connection opens or closes

    def changed() -> None:
        with changes:
            changes.notify_all()

    async def play(websocket: WebSocket) -> None:
        if not _same_origin(websocket):
            await websocket.close(code=1008, reason="the page must come from this server")
            return
        await websocket.accept()
        if len(connections) >= MAX_CONNECTIONS:  # told why, so that the page can say it
            await websocket.close(code=1013, reason=f"at most {MAX_CONNECTIONS} games at once")
            return
        conn = Connection(websocket, settings, clock or wall, tick_s, runs_on=clock is None)
        connections.add(conn)
        changed()
        try:
            await conn.run()
        finally:
            connections.discard(conn)
            changed()

    app = Starlette(routes=[Route("/", _page), Route("/assets/{name}", _asset),
                            WebSocketRoute("/ws", play)],
                    middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))])
    app.state.connections = connections
    app.state.changes = changes
    app.state.settings = settings
    return app


def free_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: a free port the system picks).

    Raises:
        OSError: the port is taken (or the host is not this machine's).
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
        sock.listen(16)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve(app: Starlette, sock: socket.socket, *, on_ready: Callable[[], None] | None = None,
          ) -> None:
    """Run ``app`` with uvicorn on ``sock`` until Ctrl-C (or SIGTERM).

    On the way out every connection is closed (its game stopped) and the socket is closed, so
    the port is free again; nothing is left running.
    """
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", ws="auto", lifespan="off",
                            ws_max_size=MAX_MESSAGE_BYTES * 4, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started and on_ready is not None:
            on_ready()
        await task

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
    finally:
        for conn in list(app.state.connections):
            conn.close()
        sock.close()
        sys.stdout.flush()
