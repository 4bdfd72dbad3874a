"""Play Spit against a bot in the terminal, in real time.

Run ``python -m experiments.play --help``. Example::

    python -m experiments.play --opponent racer@club

The bot moves on its own latency while the clock runs; your moves land after your real reaction
(the time before your key press) plus a small fixed motor time (``--motor-ms``). At the end the
game shows the result and your measured latency beside the presets (expert, club, novice), and
offers to save the replay (a JSON record and an HTML page, as ``experiments.replay`` writes).
How time works, idle ticks and compulsory slaps: ``experiments/realtime/engine.py``.

Keys (columns = your five stock places, left to right)::

    1 2 3 4 5   play that stock's top card where it fits (your pile first)
    Q W E R T   play it onto your pile (left)
    A S D F G   play it onto the opponent's pile (right)
    Z X C V B   move it to an empty place (or turn it up, with auto_flip off)
    <- / ->     slap your pile / the opponent's pile      Esc  stop the game

Needs the ``[play]`` extra (Textual): ``pip install -c constraints.txt -e ".[play]"``.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from agents.arena import player_error
from experiments.cli import ArgumentParser, install_hint, player_help

__all__ = ["main"]


def _parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(
        prog="python -m experiments.play",
        description="Play Spit against a bot in the terminal, in real time; your reaction times "
        "are measured and set beside the latency presets, and the replay can be saved.",
        epilog="Keys: 1-5 play a stock card where it fits, Q-T onto your pile, A-G onto the "
        "opponent's, Z-B fill an empty place, <-/-> slap, Esc stop.",
    )
    p.add_argument("--opponent", default="racer@club",
                   help=f"the bot: a policy name ({player_help()}), a profile name@latency "
                   "(racer@expert, greedy@600) or a trained model path (default: %(default)s)")
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
                   help="game id of that seed (default: %(default)s)")
    p.add_argument("--save", type=Path, metavar="PATH",
                   help="where the replay is saved when you press S at the end: PATH.json and "
                   "PATH.html (default: replays/spit-<date-time>)")
    p.add_argument("--hints", action="store_true", help="mark the stock cards that can be played")
    args = p.parse_args(argv)
    for flag, value, lo, hi in (("--motor-ms", args.motor_ms, 1, 10_000),
                                ("--tick-ms", args.tick_ms, 1, 1000),
                                ("--slap-timeout-ms", args.slap_timeout_ms, 0, 600_000)):
        if not lo <= value <= hi:
            p.error(f"{flag} must be in {lo}..{hi} ms, got {value}")
    if args.game < 0 or (args.seed is not None and args.seed < 0):
        p.error("--seed and --game must be >= 0")
    problem = player_error(args.opponent)
    if problem:
        p.error(f"--opponent: {problem}")
    if args.save is not None and args.save.is_dir():
        p.error(f"--save: {str(args.save)!r} is a folder; give a path without extension, "
                "e.g. replays/mygame")
    return args


def main(argv=None):
    """Command-line entry point: play, then print the result and reaction times."""
    args = _parse_args(argv)
    try:
        from experiments.realtime.tui import PlayApp, summary_lines
    except ImportError as err:
        sys.exit(f"error: the terminal game needs Textual ({err}); install it with: "
                 f"{install_hint('play')}")
    from experiments.realtime.engine import RealtimeGame

    seed = args.seed if args.seed is not None else int(datetime.now().timestamp()) % 1_000_000
    game = RealtimeGame(args.opponent, human_seat=args.seat, motor_ms=args.motor_ms,
                        tick_ms=args.tick_ms, seed=seed, game_id=args.game,
                        slap_timeout_ms=args.slap_timeout_ms)
    save = args.save or Path("replays") / datetime.now().strftime("spit-%Y%m%d-%H%M%S")
    app = PlayApp(game, save_to=save, hints=args.hints)
    app.run()
    for line in summary_lines(game):
        print(line)
    print(f"(seed {seed}, game {args.game})")
    for path in app.saved:
        print(f"saved {path}")
    return game


if __name__ == "__main__":
    main()
