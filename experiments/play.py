"""Play Spit against a bot in real time: in the terminal, or in the browser with ``--web``.

Run ``python -m experiments.play --help``. Examples::

    python -m experiments.play --opponent racer@club         # in the terminal
    python -m experiments.play --web --opponent racer@club   # in the browser, on 127.0.0.1

The bot moves on its own latency while the clock runs; your moves land after your real reaction
(the time before your key press) plus a small fixed motor time (``--motor-ms``). The game waits
for Space before its clock starts. At the end it shows the result and your latency beside the
presets (pro, club, novice), fits your latencies into the presets' family
(``spit_env.Latency.fit``) and saves the fit as a profile file (``--profile``) that every entry
point takes as a latency: ``--opponent racer@<file>``, ``--players racer@<file>,...``,
``spit_env.Latency.load(<file>)``; it prints the command. The replay can be saved too (a JSON
record and an HTML page, as ``experiments.replay`` writes). How time works, idle ticks and
compulsory slaps: ``experiments/realtime/engine.py``.

Keys (columns = your five stock places, left to right)::

    1 2 3 4 5   play that stock's top card where it fits (your pile first)
    Q W E R T   play it onto your pile (left)
    A S D F G   play it onto the opponent's pile (right)
    Z X C V B   move it to an empty place (or turn it up, with auto_flip off)
    <- / ->     slap your pile / the opponent's pile
    Space       start, pause, go on                             Esc  stop the game (asks first)

In the browser a click plays too: one of your cards, then a pile or an empty place; a click on a
pile slaps it. The browser game is served on 127.0.0.1 (``--host`` serves another address, with a
warning); each tab plays its own game, a closed tab ends its game, and Ctrl-C stops the server.

Needs the ``[play]`` extra (Textual) in the terminal and the ``[web]`` extra (Starlette, uvicorn)
in the browser: ``pip install -c constraints.txt -e ".[play,web]"``.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from agents.arena import player_error
from experiments.cli import ArgumentParser, install_hint, player_help

__all__ = ["main"]

#: The program name of the usage line and of every error ("{PROG}: error: ...").
PROG = "python -m experiments.play"

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(
        prog=PROG,
        description="Play Spit against a bot in real time, in the terminal or in the browser "
        "(--web); your reaction times are measured, set beside the latency presets and saved as "
        "a latency profile that every entry point takes, and the replay can be saved.",
        epilog="Keys: 1-5 play a stock card where it fits, Q-T onto your pile, A-G onto the "
        "opponent's, Z-B fill an empty place, <-/-> slap, Space start / pause, Esc stop.",
    )
    p.add_argument("--opponent", default="racer@club",
                   help=f"the bot: a policy name ({player_help()}), a profile name@latency "
                   "(racer@pro, greedy@600, racer@me.json) or a trained model path "
                   "(default: %(default)s)")
    p.add_argument("--seat", type=int, choices=(0, 1), default=0,
                   help="your seat (default: %(default)s)")
    p.add_argument("--motor-ms", type=int, default=50,
                   help="fixed time from your key press to the card landing, ms "
                        "(default: %(default)s)")
    p.add_argument("--tick-ms", type=int, default=25,
                   help="how often an idle player gets to decide (the game's wait_ms), ms "
                        "(default: %(default)s)")
    p.add_argument("--slap-timeout-ms", type=int, default=5000,
                   help="longest the game waits for your compulsory slap (D11), ms; your slap "
                   "lands after your real time to the key + --motor-ms (default: %(default)s)")
    p.add_argument("--seed", type=int, default=None, help="game seed (default: from the clock)")
    p.add_argument("--game", type=int, default=0,
                   help="game id of that seed (default: %(default)s; a rematch in the browser "
                   "plays the next one)")
    p.add_argument("--save", type=Path, metavar="PATH",
                   help="where the replay is saved when you ask for it at the end: PATH.json "
                   "and PATH.html, in the browser PATH-<game>.json and .html (default: "
                   "replays/spit-<date-time>)")
    p.add_argument("--profile", type=Path, metavar="FILE",
                   help="where your fitted latency profile is saved at the end (JSON; in the "
                   "browser it pools the games of the tab; default: the --save path + "
                   "-latency.json)")
    p.add_argument("--hints", action="store_true", help="mark the stock cards that can be played")
    web = p.add_argument_group("the browser game")
    web.add_argument("--web", action="store_true",
                     help="play in the browser: serve the game on 127.0.0.1, print its address "
                     "and open it")
    web.add_argument("--port", type=int, default=0,
                     help="the server's port (default: a free one)")
    web.add_argument("--no-browser", action="store_true",
                     help="print the address only, do not open a browser")
    web.add_argument("--host", default="127.0.0.1",
                     help="the address to serve on (default: %(default)s, this machine only; "
                     "another one lets other machines play and prints a warning)")
    args = p.parse_args(argv)
    for flag, value, lo, hi in (("--motor-ms", args.motor_ms, 1, 10_000),
                                ("--tick-ms", args.tick_ms, 1, 1000),
                                ("--slap-timeout-ms", args.slap_timeout_ms, 0, 600_000),
                                ("--port", args.port, 0, 65_535)):
        if not lo <= value <= hi:
            p.error(f"{flag} must be in {lo}..{hi}{'' if flag == '--port' else ' ms'}, "
                    f"got {value}")
    if args.game < 0 or (args.seed is not None and args.seed < 0):
        p.error("--seed and --game must be >= 0")
    if not args.web and (args.port or args.no_browser or args.host != "127.0.0.1"):
        p.error("--port, --host and --no-browser are for the browser game: add --web")
    problem = player_error(args.opponent)
    if problem:
        p.error(f"--opponent: {problem}")
    if args.save is not None and args.save.is_dir():
        p.error(f"--save: {str(args.save)!r} is a folder; give a path without extension, "
                "e.g. replays/mygame")
    if args.profile is not None and (args.profile.is_dir() or args.profile.suffix != ".json"):
        p.error(f"--profile: give a file name ending in .json (the ending a latency is read "
                f"from as a file), got {str(args.profile)!r}")
    return args


def _terminal(args, seed: int, save: Path, profile: Path):
    try:
        from experiments.realtime.tui import PlayApp, profile_lines, summary_lines
    except ImportError as err:
        sys.exit(f"{PROG}: error: the terminal game needs Textual ({err}); install it with: "
                 f"{install_hint('play')}")
    from experiments.realtime.engine import RealtimeGame

    game = RealtimeGame(args.opponent, human_seat=args.seat, motor_ms=args.motor_ms,
                        tick_ms=args.tick_ms, seed=seed, game_id=args.game,
                        slap_timeout_ms=args.slap_timeout_ms, start_ms=None)
    app = PlayApp(game, save_to=save, profile_to=profile, hints=args.hints)
    app.run()
    for line in summary_lines(game):
        print(line)
    if app.profile is not None:
        for line in profile_lines(app.profile, app.profile_saved,
                                  game.opponent.partition("@")[0]):
            print(line)
    print(f"(seed {seed}, game {args.game})")
    for path in app.saved:
        print(f"saved {path}")
    return game


def _browser(args, seed: int, save: Path, profile: Path) -> None:
    try:
        from experiments.realtime.web import WebSettings, create_app, free_socket, serve
    except ImportError as err:
        sys.exit(f"{PROG}: error: the browser game needs Starlette and uvicorn ({err}); install "
                 f"them with: {install_hint('web')}")
    public = args.host not in LOOPBACK
    try:
        sock = free_socket(args.host, args.port)
    except OSError as err:
        sys.exit(f"{PROG}: error: cannot serve on {args.host}:{args.port}: {err.strerror or err}")
    port = sock.getsockname()[1]
    shown = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    url = f"http://{shown}:{port}/"

    def on_end(lines: list[str]) -> None:
        for line in lines:
            print(line, flush=True)

    settings = WebSettings(opponent=args.opponent, seed=seed, game_id=args.game,
                           human_seat=args.seat, motor_ms=args.motor_ms, tick_ms=args.tick_ms,
                           slap_timeout_ms=args.slap_timeout_ms, save_to=save,
                           profile_to=profile, hints=args.hints, on_end=on_end)
    hosts = ("*",) if args.host in ("0.0.0.0", "::") else \
        tuple(dict.fromkeys((args.host, "127.0.0.1", "localhost")))
    app = create_app(settings, hosts=hosts)
    if public:
        print(f"warning: serving on {args.host} instead of 127.0.0.1: anyone who can reach "
              f"{args.host}:{port} can play games on this server and make it write replays and "
              "profiles; serve on 127.0.0.1 (the default) unless you trust that network",
              file=sys.stderr)

    def ready() -> None:
        print(f"Spit in the browser: {url}  (you against {args.opponent}; Ctrl-C stops the "
              "server)", flush=True)
        if not args.no_browser:
            import webbrowser

            webbrowser.open(url)

    serve(app, sock, on_ready=ready)
    print(f"server stopped (seed {seed}, game ids from {args.game})")


def main(argv=None):
    """Command-line entry point: play, then print the result, the reaction times, the profile."""
    args = _parse_args(argv)
    seed = args.seed if args.seed is not None else int(datetime.now().timestamp()) % 1_000_000
    save = args.save or Path("replays") / datetime.now().strftime("spit-%Y%m%d-%H%M%S")
    profile = args.profile or save.with_name(save.name + "-latency.json")
    if args.web:
        return _browser(args, seed, save, profile)
    return _terminal(args, seed, save, profile)


if __name__ == "__main__":
    main()
