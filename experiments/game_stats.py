r"""How long a game of Spit lasts and how it ends, for bots playing themselves.

Run ``python -m experiments.game_stats --help``. Example (the table in docs/results/)::

    python -m experiments.game_stats --players greedy,random --games 1000 \
        --json docs/results/game_stats.json --markdown docs/results/game_stats.md

For each player, ``--games`` games of the player against itself (game ids 0 .. games - 1 of
``--seed``, both seats at ``--latency``): the median and 90th percentile of the rounds, decision
epochs (core steps), decisions (both players' moves, D7) and simulated minutes per game, and the
share of games that end by a win (in standard scoring without the house rule: a one-pile win,
D12 / D14), a draw (points variant, D15), the ``max_rounds`` limit or the ``max_game_ms`` limit
(D16).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from agents.arena import Player, player_error, run_games
from experiments.cli import ArgumentParser
from spit_env.config import SpitConfig
from spit_env.latency import Latency

__all__ = ["game_statistics", "markdown_table", "main"]

#: (key, column title, unit scale) of the per-game quantities summarised
_QUANTITIES = (("rounds", "rounds", 1.0), ("steps", "decision epochs", 1.0),
               ("decisions", "decisions", 1.0), ("clock_ms", "game minutes", 1 / 60_000))


def game_statistics(player: str, games: int, *, config: SpitConfig | None = None, seed: int = 0,
                    batch_size: int = 512, progress=None) -> dict:
    """Length and endings of ``games`` games of ``player`` against itself.

    Args:
        player: a policy name or profile (``Player.parse``).
        games: the number of games (game ids 0 .. games - 1 of ``seed``), >= 1.
        config: the rules (default ``SpitConfig()``).
        seed: the game seed (with the game ids, it fixes the deals and the streams).
        batch_size: games stepped at once.
        progress: called with the number of games that just finished
            (:meth:`agents.arena.Match.run`); None: silent.

    Returns:
        a JSON-serialisable dict: "player", "games", for each quantity (rounds, steps, decisions,
        minutes) its "median" and "p90", and "ends": the share of games that were won, drawn,
        truncated by max_rounds and truncated by max_game_ms.

    Raises:
        ValueError: ``games`` < 1, an unknown player or a bad profile.
    """
    if isinstance(games, bool) or not isinstance(games, (int, np.integer)) or games < 1:
        raise ValueError(f"games must be an integer >= 1, got {games!r}")
    config = config or SpitConfig()
    res = run_games(player, player, np.arange(games), config=config, seed=seed,
                    batch_size=batch_size, progress=progress)
    out: dict = {"player": Player.parse(player).label, "games": int(games)}
    for key, _, scale in _QUANTITIES:
        values = res[key] * scale
        name = "minutes" if key == "clock_ms" else key
        out[name] = {"median": float(np.median(values)), "p90": float(np.percentile(values, 90))}
    trunc = res["truncated"]
    by_rounds = trunc & (res["rounds"] >= config.max_rounds)
    out["ends"] = {
        "won": float(((~trunc) & (res["winner"] >= 0)).mean()),
        "drawn": float(((~trunc) & (res["winner"] < 0)).mean()),
        "max_rounds": float(by_rounds.mean()),
        "max_game_ms": float((trunc & ~by_rounds).mean()),
    }
    return out


#: the first line of the page ``--markdown`` writes
MARKDOWN_TITLE = "# Game statistics: bots against themselves"


def markdown_table(rows: list[dict], config: SpitConfig) -> str:
    """The statistics of :func:`game_statistics` as one Markdown table (a row per player)."""
    won = "one-pile win" if config.scoring == "standard" and not config.win_on_empty_hand else "won"
    head = ["player vs itself", "games"]
    head += [f"{title} (median / p90)" for _, title, _ in _QUANTITIES]
    head += [won, "drawn", "`max_rounds`", "`max_game_ms`"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["player"], f"{r['games']:,}"]
        for key, _, _ in _QUANTITIES:
            q = r["minutes" if key == "clock_ms" else key]
            fmt = "{:.1f}" if key == "clock_ms" else "{:,.0f}"
            cells.append(f"{fmt.format(q['median'])} / {fmt.format(q['p90'])}")
        cells += [f"{100 * r['ends'][k]:.1f}%"
                  for k in ("won", "drawn", "max_rounds", "max_game_ms")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(
        prog="python -m experiments.game_stats",
        description="Length and endings of games of Spit bots against themselves: rounds, "
        "decision epochs, decisions and simulated minutes per game (median, 90th percentile), "
        "and how the games end (a win, a draw, the max_rounds or the max_game_ms limit).")
    p.add_argument("--players", default="greedy,random",
                   help="comma-separated policy names or profiles; each plays itself "
                        "(default: %(default)s)")
    p.add_argument("--games", type=int, default=1000,
                   help="games per player (default: %(default)s)")
    p.add_argument("--latency", default="club",
                   help="both seats' latency: preset name or whole ms (default: %(default)s)")
    p.add_argument("--stall-timeout-ms", default="3000",
                   help="D17 stall timeout in ms, or 'none' (default: %(default)s)")
    p.add_argument("--win-on-empty-hand", action="store_true", help="the D14 house rule")
    p.add_argument("--seed", type=int, default=0, help="game seed (default: %(default)s)")
    p.add_argument("--batch", type=int, default=512,
                   help="games stepped at once (default: %(default)s)")
    p.add_argument("--json", type=Path, help="write the statistics as JSON here")
    p.add_argument("--markdown", type=Path,
                   help="write the Markdown page here (a title and the table)")
    p.add_argument("--quiet", action="store_true", help="no progress (no bar, no lines)")
    args = p.parse_args(argv)
    if args.games < 1:
        p.error("--games must be >= 1")
    if args.batch < 1:
        p.error("--batch must be >= 1")
    timeout = args.stall_timeout_ms.strip().lower()
    try:
        args.stall_timeout_ms = None if timeout == "none" else int(timeout)
        args.config = SpitConfig(latency=Latency.parse(args.latency),
                                 stall_timeout_ms=args.stall_timeout_ms,
                                 win_on_empty_hand=args.win_on_empty_hand)
    except ValueError as err:
        p.error(f"--latency / --stall-timeout-ms: {err}")
    args.players = [s.strip() for s in args.players.split(",") if s.strip()]
    if not args.players:
        p.error("--players needs at least one player")
    for spec in args.players:
        problem = player_error(spec)
        if problem:
            p.error(f"--players: {problem}")
    return args


def main(argv=None) -> dict:
    """Command-line entry point; returns {"config": ..., "rows": [...]}."""
    from spit_env.progress import Progress

    args = _parse_args(argv)
    rows = []
    with Progress(len(args.players) * args.games, "game statistics", unit="games",
                  enabled=not args.quiet) as progress:
        for spec in args.players:
            rows.append(game_statistics(spec, args.games, config=args.config, seed=args.seed,
                                        batch_size=args.batch, progress=progress))
    table = markdown_table(rows, args.config)
    print(table)
    result = {"config": args.config.to_dict(), "seed": args.seed, "rows": rows}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
        print(f"wrote {args.json}")
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(f"{MARKDOWN_TITLE}\n\n{table}\n")
        print(f"wrote {args.markdown}")
    return result


if __name__ == "__main__":
    main()
