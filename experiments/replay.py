r"""Record one game between two players and write it as a replay: a JSON record and an HTML page.

Run ``python -m experiments.replay --help``. Examples::

    python -m experiments.replay --players racer,greedy@pro --seed 7 --out game.html \
        --json game.json
    python -m experiments.replay --players runs/ppo_greedy/model.zip,racer --out ppo.html
    python -m experiments.replay --load game.json --out game.html      # a saved record, re-drawn

A player is what the tournament takes: a registered bot name ("racer"), a profile with a latency
("greedy@pro", "racer@350") or the path of a trained model ("runs/x/model.zip", optionally
"@latency"). Game ``--game`` of ``--seed`` is the same deal, latency draws and tie coins as game id
``--game`` of that seed in ``experiments.tournament`` (both play it in the match library's loop,
``agents.arena.Match``, each seat's policy generator seeded by (seed, seat)).

The JSON record (``spit_env.replay``, schema version 1) holds the config, seed, game id, deal,
every step's actions, events and snapshot, and the outcome; ``--load`` reads one back, checks that
the core rebuilds every recorded state from it (``--no-check`` skips that), and draws it again.
The HTML page (``spit_env.replay.html``) is one self-contained file that opens offline.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents.arena import Match, player_error
from experiments.cli import ArgumentParser, player_help
from spit_env import replay
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.progress import counted
from spit_env.replay.html import write_html

__all__ = ["play_game", "main"]

#: The program name of the usage line and of every error ("{PROG}: error: ...").
PROG = "python -m experiments.replay"


def play_game(players, *, config: SpitConfig | None = None, seed: int = 0, game_id: int = 0,
              progress=None) -> dict:
    """Play game ``game_id`` of ``seed`` between two players and return its record.

    The game runs in the match library's loop (``agents.arena.Match``), which records every step.

    Args:
        players: two Players or player strings (names, profiles, model paths), seat 0 first.
        config: the rules (default SpitConfig()); a profile's latency replaces its seat's.
        seed: the game seed.
        game_id: which game of ``seed`` (its deal and random streams).
        progress: called with 1 after every step (e.g. a tqdm bar's ``update``).

    Returns:
        The replay record (``spit_env.replay`` format).

    Raises:
        ValueError: an unknown player, a bad profile or model path, a bad seed or game id.
    """
    if isinstance(players, str) or len(players) != 2:
        raise ValueError(f"players must be two player specs, seat 0 first, got {players!r}")
    match = Match(players[0], players[1], [game_id], config=config, seed=seed, batch_size=1)
    recorder = replay.Recorder(match.state, [{"name": p.label} for p in match.players])
    while not match.over:
        actions = match.moves()
        out = match.step(actions, events=True)
        recorder.add(actions[0], match.state, out)
        if progress is not None:
            progress(1)
    return recorder.record()


def _parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(
        prog=PROG,
        description="Play one game of Spit between two players and write its replay: a "
        "versioned JSON record (--json) and a self-contained HTML page (--out) with the table "
        "drawn as cards, moves in flight, races, and a timeline; or draw a saved record again "
        "(--load).",
    )
    p.add_argument("--players", metavar="A,B",
                   help=f"two players, seat 0 first: policy names ({player_help()}), profiles "
                   "name@latency (greedy@pro, racer@350) or trained model paths "
                   "(runs/x/model.zip, an RLlib checkpoint folder)")
    p.add_argument("--seed", type=int, default=0, help="game seed (default: %(default)s)")
    p.add_argument("--game", type=int, default=0,
                   help="game id of that seed (default: %(default)s)")
    p.add_argument("--latency", default="club",
                   help="both seats' latency unless a profile says otherwise: preset name "
                   "(pro, club, novice) or whole ms (default: %(default)s)")
    p.add_argument("--out", type=Path, help="write the HTML replay page here")
    p.add_argument("--json", type=Path, help="write the JSON record here")
    p.add_argument("--load", type=Path, metavar="RECORD.json",
                   help="read a saved JSON record instead of playing a game")
    p.add_argument("--no-check", action="store_true",
                   help="with --load: do not rebuild the recorded states through the core")
    p.add_argument("--title", help="the page title (default: 'Spit replay: A vs B')")
    p.add_argument("--quiet", action="store_true", help="no progress (no bar, no lines)")
    args = p.parse_args(argv)
    if args.load is None and args.players is None:
        p.error("give --players A,B to play a game, or --load RECORD.json to draw a saved one")
    if args.load is not None and args.players is not None:
        p.error("--load draws a saved game; it takes no --players")
    if args.out is None and args.json is None:
        p.error("nothing to write: give --out PAGE.html and/or --json RECORD.json")
    if args.load is not None and args.json is not None \
            and args.json.resolve() == args.load.resolve():
        p.error("--json would overwrite the --load file")
    for path, flag in ((args.out, "--out"), (args.json, "--json")):
        if path is not None and path.is_dir():
            p.error(f"{flag}: {str(path)!r} is a folder; give a file path")
    if args.players is not None:
        # the cheap checks first: building the players may load models (seconds)
        if args.seed < 0 or args.game < 0:
            p.error("--seed and --game must be >= 0")
        players = [s.strip() for s in args.players.split(",") if s.strip()]
        if len(players) != 2:
            p.error(f"--players needs exactly two players, seat 0 first, got {players}")
        try:
            Latency.parse(args.latency)
        except ValueError as err:
            p.error(f"--latency: {err}")
        for spec in players:
            problem = player_error(spec)
            if problem:
                p.error(f"--players: {problem}")
        args.player_list = players
    return args


def main(argv=None) -> dict:
    """Command-line entry point; returns the record written."""
    args = _parse_args(argv)
    if args.load is not None:
        try:
            record = replay.load(args.load)
            if not args.no_check:
                n = replay.check(record)
                print(f"{args.load}: the core rebuilds all {counted(n, 'recorded state')}")
        except ValueError as err:
            sys.exit(f"{PROG}: error: {err}")
    else:
        from spit_env.progress import Progress

        config = SpitConfig(latency=Latency.parse(args.latency))
        # the game's length is not known before its end: steps so far, the rate, no ETA
        with Progress(None, f"playing game {args.game} of seed {args.seed}", unit="steps",
                      enabled=not args.quiet) as progress:
            record = play_game(args.player_list, config=config, seed=args.seed, game_id=args.game,
                               progress=progress)
    o = record["outcome"]
    names = [p["name"] for p in record["players"]]
    print(f"{names[0]} vs {names[1]}: {o['result']} after {counted(o['rounds'], 'round')}, "
          f"{o['clock_ms'] / 1000:.1f} s of game time, {counted(o['steps'], 'step')}")
    if args.json is not None:
        replay.save(record, args.json)
        print(f"wrote {args.json}")
    if args.out is not None:
        write_html(record, args.out, title=args.title)
        print(f"wrote {args.out} (open it in a browser)")
    return record


if __name__ == "__main__":
    main()
