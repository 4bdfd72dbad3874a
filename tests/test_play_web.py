"""The browser game's server (experiments/realtime/web.py) through a websocket client, as a page
would talk to it: the real server (uvicorn, in a thread, on 127.0.0.1), a clock the test moves
(nothing sleeps on wall time), one game per connection, the origin check, the engine's timing
through the web path, malformed and out-of-order messages; and the script's --web (a subprocess:
its address, Ctrl-C, the port freed)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from contextlib import ExitStack

import numpy as np
import pytest
from browser_helpers import FakeClock, live_server, wait_for
from helpers import build_deal

pytest.importorskip("starlette", reason="the browser game needs the [web] extra: pip install -c constraints.txt -e '.[web]'")
pytest.importorskip("uvicorn", reason="the browser game needs the [web] extra")
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import agents  # noqa: E402
from experiments.realtime.keys import KEYMAP  # noqa: E402
from experiments.realtime.web import MAX_CONNECTIONS, MAX_MESSAGE_BYTES, WebSettings, free_socket  # noqa: E402
from spit_env import core, rules  # noqa: E402

SHORT_DEAL = build_deal({0: 8, 1: 9, 2: 10, 3: 11, 4: 12}, {15: 7}, size0=5)  # five cards win it


class Page:
    """A websocket client standing in for the page: it keeps what it was sent, by type."""

    def __init__(self, base: str, origin: str | None = None):
        self._stack = ExitStack()
        self.ws = self._stack.enter_context(connect(base.replace("http", "ws") + "/ws",
                                                    origin=origin or base, open_timeout=30))
        self.got: list[dict] = []

    def send(self, message) -> None:
        self.ws.send(message if isinstance(message, str | bytes) else json.dumps(message))

    def until(self, predicate, timeout: float = 30.0) -> dict:
        """The first message (from now on) for which predicate(message) holds."""
        while True:
            msg = json.loads(self.ws.recv(timeout=timeout))
            self.got.append(msg)
            if predicate(msg):
                return msg

    def reply(self, kind: str = "error") -> dict:
        return self.until(lambda m: m["type"] in ("error", "refused", "queued") and
                          (kind is None or m["type"] == kind))

    def state_at(self, game_ms: float) -> dict:
        return self.until(lambda m: m["type"] == "state" and m["game_ms"] is not None
                          and m["game_ms"] >= game_ms)

    def close(self) -> None:
        self._stack.close()


def _settings(**kw):
    return WebSettings(**dict(dict(opponent="random@novice", seed=3, countdown_ms=0, tick_ms=25,
                                   motor_ms=50), **kw))


def _game_of(app):
    wait_for(app, lambda conns: len(conns) == 1)
    return next(iter(app.state.connections))


def _fingerprint(game) -> str:
    """Everything a message could change in a game."""
    return json.dumps([game.record()["steps"], [vars(k) for k in game.keys], game.started,
                       game.paused, game.over, game.offset, game.reactions], default=str)


# --- http ----------------------------------------------------------------------------------------
def test_the_page_and_its_assets_come_from_the_package_and_only_those(tmp_path):
    with live_server(_settings(save_to=tmp_path / "r"), FakeClock()) as (_, base):
        with urllib.request.urlopen(base + "/") as res:
            page = res.read().decode()
            csp = res.headers["Content-Security-Policy"]
        assert 'id="places0"' in page and "/assets/table.js" in page and "/assets/live.js" in page
        assert "default-src 'none'" in csp and "connect-src 'self'" in csp
        assert "http" not in page.replace(base, ""), "no address other than the server's own"
        for name in ("table.css", "table.js", "live.css", "live.js"):
            with urllib.request.urlopen(f"{base}/assets/{name}") as res:
                assert res.status == 200 and len(res.read()) > 500
        for bad in ("/assets/web.py", "/assets/..%2Fweb.py", "/assets/replay.js", "/favicon.ico"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(base + bad)
            assert err.value.code == 404, bad
        # another Host (a DNS-rebinding page) is refused
        req = urllib.request.Request(base + "/", headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req)
        assert err.value.code == 400


# --- the websocket -------------------------------------------------------------------------------
@pytest.mark.parametrize("origin", ["http://evil.example", "http://localhost:1", "null"])
def test_a_websocket_from_another_origin_is_closed_before_it_opens(origin, tmp_path):
    with live_server(_settings(save_to=tmp_path / "r"), FakeClock()) as (app, base):
        with pytest.raises(Exception) as err:  # the handshake is refused: HTTP 403
            Page(base, origin=origin).until(lambda m: True, timeout=10)
        assert "403" in str(err.value) or isinstance(err.value, ConnectionClosed)
        assert app.state.connections == set()


def test_one_game_per_connection_and_a_closed_connection_stops_its_game(tmp_path):
    with live_server(_settings(save_to=tmp_path / "r"), FakeClock()) as (app, base):
        one, two = Page(base), Page(base)
        hello = one.until(lambda m: m["type"] == "hello")
        assert hello["names"] == ["you", "random"] and hello["keys"] == KEYMAP
        two.until(lambda m: m["type"] == "hello")
        wait_for(app, lambda conns: len(conns) == 2)
        games = [c.game for c in app.state.connections]
        assert games[0] is not games[1], "each connection plays its own game"
        one.send({"type": "start"})
        one.state_at(0)
        started = [g for g in games if g.started]
        assert len(started) == 1, "a message acts on its own connection's game only"
        one.close()
        wait_for(app, lambda conns: len(conns) == 1)
        assert started[0].stopped and started[0].record()["outcome"]["finished"] is False
        assert not [c.game for c in app.state.connections][0].over, "the other game goes on"
        # the server takes at most MAX_CONNECTIONS games at once
        more = [Page(base) for _ in range(MAX_CONNECTIONS - 1)]
        wait_for(app, lambda conns: len(conns) == MAX_CONNECTIONS)
        with pytest.raises(ConnectionClosed) as closed:
            Page(base).until(lambda m: True, timeout=10)
        assert closed.value.rcvd.code == 1013
        for page in [two, *more]:
            page.close()
        wait_for(app, lambda conns: not conns)


def test_a_key_pressed_at_game_time_k_lands_at_k_plus_the_motor_time(tmp_path):
    clock = FakeClock(10_000.0)
    with live_server(_settings(save_to=tmp_path / "r", motor_ms=70), clock) as (app, base):
        page = Page(base)
        page.until(lambda m: m["type"] == "hello")
        page.send({"type": "start"})
        page.state_at(0)
        game = _game_of(app).game
        checked = 0
        for _ in range(400):
            clock.ms += 100.0
            page.state_at(clock.ms - 10_000.0)
            mask = game.human_mask()
            if game.busy() or not mask[1:11].any() or game.over:
                continue
            action = int(np.flatnonzero(mask[1:11])[0]) + 1
            key = KEYMAP["own" if rules.ACTION_PILE[action] == 0 else "opp"][rules.ACTION_STOCK[action]]
            clock.ms += 37.3  # the key falls between two ticks of the human (25 ms)
            k = game.game_ms(clock.ms)
            seen = len(game.recorder.steps)
            page.send({"type": "key", "key": key})
            if page.reply(None)["type"] != "queued":  # the table changed meanwhile
                continue
            clock.ms += 200.0
            page.state_at(k + 200.0)
            after = game.record()["steps"][seen:]
            step_of = next((s for s in after if s["actions"][0] == action), None)
            if step_of is None:  # dropped at its decision: the table changed meanwhile
                continue
            landed = [e for s in after for e in s["events"]
                      if e["player"] == 0 and e["type"] in ("play", "bounce")]
            assert landed[0]["clock_ms"] == math.ceil(k) + 70, f"pressed at {k}"
            assert step_of["latency_ms"][0] <= 70, "decided at the next tick, landing unchanged"
            checked += 1
            if checked == 4:
                break
        assert checked == 4
        page.close()


MALFORMED = [
    ("not json", "a message must be JSON"),
    (b"\x00binary", "JSON text, not binary"),
    ("[1, 2]", "a message is an object whose type is one of"),
    ('{"type": "teleport"}', "whose type is one of"),
    ('{"key": "q"}', "whose type is one of"),
    ('{"type": "key"}', "key: fields ['key']; missing ['key']"),
    ('{"type": "key", "key": "p"}', "key must be one of"),
    ('{"type": "key", "key": ["q"]}', "key must be one of"),
    ('{"type": "key", "key": "q", "also": 1}', "unknown ['also']"),
    ('{"type": "move", "stock": 7, "to": "own"}', "stock must be a stock place 0-4"),
    ('{"type": "move", "stock": true, "to": "own"}', "stock must be a stock place"),
    ('{"type": "move", "stock": 1, "to": "floor"}', "to must be one of"),
    ('{"type": "slap", "pile": 0}', "pile must be 'own' or 'opp'"),
    ('{"type": "start", "now": 1}', "unknown ['now']"),
    ("{" + '"type": "key", "key": "' + "q" * MAX_MESSAGE_BYTES + '"}', "at most"),
]
OUT_OF_ORDER = [
    ({"type": "resume"}, "the game is not paused"),
    ({"type": "rematch"}, "a rematch comes after the end"),
    ({"type": "save"}, "the replay is saved after the end"),
]


def test_malformed_and_out_of_order_messages_get_an_error_and_change_nothing(tmp_path):
    clock = FakeClock()
    with live_server(_settings(save_to=tmp_path / "r"), clock) as (app, base):
        page = Page(base)
        page.until(lambda m: m["type"] == "hello")
        game = _game_of(app).game
        page.send({"type": "pause"})  # before the start
        assert "only a running game can be paused" in page.reply()["error"]
        page.send({"type": "start"})
        page.state_at(0)
        page.send({"type": "start"})
        assert page.reply()["error"] == "the game has started already"
        clock.ms += 2000.0
        page.state_at(2000.0)
        for message, error in [*MALFORMED, *OUT_OF_ORDER]:
            before = _fingerprint(game)
            page.send(message)
            assert error in page.reply()["error"], message
            assert _fingerprint(game) == before, f"{message!r} changed the game"
        # a key while paused is refused, not an error, and changes nothing either
        page.send({"type": "pause"})
        page.send({"type": "pause"})
        assert page.reply()["error"] == "only a running game can be paused"
        before = _fingerprint(game)
        page.send({"type": "key", "key": "1"})
        assert page.reply("refused")["reason"] == "the game is paused"
        assert _fingerprint(game) == before
        page.send({"type": "resume"})
        page.send({"type": "stop"})
        page.until(lambda m: m["type"] == "end")
        page.send({"type": "stop"})
        assert page.reply()["error"] == "the game is over already"
        assert _game_of(app).errors == len(MALFORMED) + len(OUT_OF_ORDER) + 4
        page.close()


def test_a_sitting_pools_its_games_into_one_fitted_profile_saved_at_each_end(tmp_path):
    """The short deal, won in five moves, three times: the profile comes with the second game's
    tenth move, and the third game adds its own."""
    clock = FakeClock()
    profile = tmp_path / "me.json"
    settings = _settings(save_to=tmp_path / "r", profile_to=profile, deal=SHORT_DEAL)
    greedy, rng = agents.make("greedy"), np.random.default_rng(0)
    with live_server(settings, clock) as (app, base):
        page = Page(base)
        ends = []
        for game_no in (1, 2, 3):
            page.until(lambda m, n=game_no: m["type"] == "hello" and m["game"] == n)
            page.send({"type": "start"})
            game = _game_of(app).game
            delay = 0
            while True:
                msg = page.state_at(game.game_ms(clock.ms))
                if msg["over"]:
                    break
                mask = game.human_mask()
                if not game.busy() and mask[1:].any() and not game.keys:
                    action = int(greedy(core.observe(game.state)[:, game.human], mask[None], rng)[0])
                    if action != rules.WAIT:
                        delay = (delay + 57) % 300  # a scripted person: some spread
                        clock.ms += 120 + delay
                        page.state_at(game.game_ms(clock.ms))
                        kind = "own" if rules.ACTION_PILE[action] == 0 else "opp"
                        page.send({"type": "key", "key": KEYMAP[kind][rules.ACTION_STOCK[action]]})
                        page.reply(None)
                clock.ms += 100.0
            ends.append(page.until(lambda m: m["type"] == "end"))
            assert ends[-1]["result"] == "you win"
            if game_no < 3:
                page.send({"type": "rematch"})
        assert ends[0]["fit"] is None and "a profile needs at least 10" in ends[0]["why_not"]
        assert ends[1]["fit"]["n"] == 10 and ends[2]["fit"]["n"] == 15
        assert ends[2]["profile_path"] == str(profile) and profile.is_file()
        assert ends[2]["closest"] in ("pro", "club", "novice")
        assert set(ends[2]["density"]) == {"ms", "you", "pro", "club", "novice"}
        from spit_env import Latency

        pooled = ends[2]["latencies_ms"]
        assert Latency.load(profile) == Latency.fit(pooled).latency
        assert f"--players random@{profile}" in ends[2]["commands"][0]
        # the replay of the last game, on request
        page.send({"type": "save"})
        saved = page.until(lambda m: m["type"] == "saved")["paths"]
        assert saved[0].endswith("r-3.json") and os.path.exists(saved[1])
        page.close()


# --- the script ----------------------------------------------------------------------------------
def _start_script(*args):
    proc = subprocess.Popen([sys.executable, "-m", "experiments.play", "--web", "--no-browser",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    line = proc.stdout.readline()
    assert "Spit in the browser: http://" in line, line + proc.stderr.read()
    return proc, line.split("browser: ")[1].split()[0].rstrip("/")


def test_the_script_serves_prints_its_address_and_ctrl_c_frees_the_port(tmp_path):
    proc, base = _start_script("--seed", "1", "--save", str(tmp_path / "g"))
    try:
        assert base.startswith("http://127.0.0.1:")
        page = Page(base)
        assert page.until(lambda m: m["type"] == "hello")["opponent"] == "racer@club"
        page.send({"type": "start"})
        page.until(lambda m: m["type"] == "state" and m["started"])
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "server stopped" in out and "Traceback" not in err
    with pytest.raises(ConnectionClosed):  # the page was told
        page.until(lambda m: False, timeout=10)
    port = int(base.rsplit(":", 1)[1])
    free_socket(port=port).close()  # the port is free again


def test_the_script_warns_when_it_serves_another_host_and_checks_its_flags(tmp_path):
    # 127.0.0.2: another address than the default, yet of this machine only
    proc, base = _start_script("--host", "127.0.0.2", "--save", str(tmp_path / "g"))
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert base.startswith("http://127.0.0.2:")
    assert proc.returncode == 0 and "warning: serving on 127.0.0.2 instead of 127.0.0.1" in err
    for args, error in ((["--port", "8080"], "--port, --host and --no-browser are for the browser game"),
                        (["--web", "--port", "70000"], "--port must be in 0..65535"),
                        (["--profile", "me.txt"], "--profile: give a file name ending in .json")):
        res = subprocess.run([sys.executable, "-m", "experiments.play", *args], capture_output=True,
                             text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert res.returncode == 2 and error in res.stderr, res.stderr
    taken = free_socket()
    try:
        res = subprocess.run([sys.executable, "-m", "experiments.play", "--web", "--no-browser",
                              "--port", str(taken.getsockname()[1])], capture_output=True,
                             text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert res.returncode == 1 and "cannot serve on 127.0.0.1:" in res.stderr
    finally:
        taken.close()
