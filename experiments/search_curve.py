r"""The search's strength against its cost: win rates versus CPU per decision.

Run ``python -m experiments.search_curve --help``. The published curve (docs/results/)::

    python -m experiments.search_curve --deals 1000 --seed 2024 --workers 2 \
        --players planner-fast,planner,planner:rollouts=32 --opponents racer \
        --json docs/results/search_curve.json --plot docs/results/search_curve.png --resume

Each search player (a registered name or profile with factory arguments after colons, as the
screen takes them: ``planner:rollouts=32:horizon_ms=2000``, ``expert:leaf_value=value``,
``planner:racing=4:race_z=0.5``) plays each opponent on ``--deals`` duplicate deals (each deal
twice, seats swapped; 95% Wilson intervals, draws half), its deals cut into ``--workers``
chunks run by as many spawned processes. In each process the player's search counts its own
CPU seconds and the decisions it planned (``agents.planner.PlannerBot.totals``: process CPU
time inside its calls, so the other players and the game loop are not in it); the point's
cost is their sums' ratio, **CPU ms per planned decision** (a decision with two or more legal
moves), measured in the games themselves. The opponent's search, when it has one, is not
counted in the point's cost; it is measured in the same games beside it
(``opponent_cpu_ms_per_decision``), so two searches compare their costs in one run. Results go
to ``--json`` after every pairing (``--resume`` keeps those made under the
same settings) and one line per pairing to stdout; ``--plot`` draws win rate against CPU.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np

from agents.arena import GameJob, Player, pairing_result, play_jobs, save_figure
from experiments.cli import ArgumentParser, code_commit
from spit_env.config import SpitConfig
from spit_env.latency import Latency

__all__ = ["measure_chunk", "measure_pairing", "plot_curve", "main"]

_TIMED = "search-curve-player"  # the measured player's name inside a worker process


def measure_chunk(spec: str, opponent: str, first_game: int, count: int, *,
                  config: SpitConfig, seed: int, batch_size: int) -> dict:
    """Play deals ``first_game`` .. ``first_game + count - 1`` of ``spec`` against ``opponent``.

    The player is built once (``agents.screen.parse_player``: name, profile and factory
    arguments), registered in this process under a private name so that both seat orders
    play that one object, and its ``totals`` are read after the games.

    Returns:
        ``jobs`` (the two GameJobs), ``outputs`` (their results), ``cpu_s`` and ``decisions``
        (the player's own), ``process_cpu_s`` (all of this call's CPU), ``wall_s``.

    Raises:
        ValueError: a player that is not a search (it keeps no ``totals``).
    """
    from agents.screen import parse_player
    from spit_env.policy import make_policy, register_policy

    wall, cpu = time.perf_counter(), time.process_time()
    player = parse_player(spec)
    bot = make_policy(player.policy, **player.kwargs)
    if not isinstance(getattr(bot, "totals", None), dict):
        raise ValueError(f"{spec!r} is not a search player (no totals to measure its cost)")
    register_policy(_TIMED, lambda: bot, overwrite=True)
    timed = Player(player.label, _TIMED, player.latency, {})
    rival, other = _timed_opponent(opponent)
    jobs = [GameJob(timed, rival, first_game, count, False),
            GameJob(rival, timed, first_game, count, True)]
    outputs = play_jobs(jobs, config=config, seed=seed, batch_size=batch_size)
    totals = getattr(other, "totals", None) or {}
    return dict(jobs=jobs, outputs=outputs, cpu_s=bot.totals["cpu_s"],
                decisions=bot.totals["decisions"], rollouts=bot.totals["rollouts"],
                opponent_cpu_s=totals.get("cpu_s"), opponent_decisions=totals.get("decisions"),
                process_cpu_s=time.process_time() - cpu, wall_s=time.perf_counter() - wall)


def _timed_opponent(opponent: str):
    """(the opponent's Player, its built search or None).

    A search opponent is built once and registered under a private name, so that its totals
    can be read after the games.
    """
    from agents.screen import parse_player
    from spit_env.policy import make_policy, register_policy

    player = parse_player(opponent)
    bot = make_policy(player.policy, **player.kwargs)
    if not isinstance(getattr(bot, "totals", None), dict):
        return Player.parse(opponent), None
    register_policy(_TIMED + "-opponent", lambda: bot, overwrite=True)
    return Player(player.label, _TIMED + "-opponent", player.latency, {}), bot


def measure_pairing(spec: str, opponent: str, deals: int, *, config: SpitConfig, seed: int,
                    batch_size: int = 256, workers: int = 1, pool=None) -> dict:
    """One point of the curve: ``spec`` against ``opponent`` on ``deals`` duplicate deals.

    Returns:
        a dict: "player", "opponent", "deals", "games", "wins", "losses", "draws",
        "win_rate", "ci_low", "ci_high", "decisions", "cpu_s", "cpu_ms_per_decision",
        "rollouts_per_decision", "process_cpu_s", "wall_s".
    """
    bounds = np.linspace(0, deals, max(1, min(workers, deals)) + 1).astype(int)
    chunks = [(int(a), int(b - a)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
    run = partial(_chunk, spec, opponent, config=config, seed=seed, batch_size=batch_size)
    t = time.perf_counter()
    parts = list(pool.map(run, chunks)) if pool is not None else [run(c) for c in chunks]
    jobs = [j for p in parts for j in p["jobs"]]
    outputs = [o for p in parts for o in p["outputs"]]
    r = pairing_result(jobs[0].seat0, jobs[0].seat1, jobs, outputs)
    decisions = sum(p["decisions"] for p in parts)
    cpu = sum(p["cpu_s"] for p in parts)
    rival = {}
    if parts[0]["opponent_cpu_s"] is not None:  # a search: its cost in the same games
        o_cpu = sum(p["opponent_cpu_s"] for p in parts)
        o_dec = sum(p["opponent_decisions"] for p in parts)
        rival = {"opponent_decisions": o_dec, "opponent_cpu_s": round(o_cpu, 2),
                 "opponent_cpu_ms_per_decision": round(1000 * o_cpu / max(o_dec, 1), 4)}
    return {"player": spec, "opponent": opponent, "deals": deals, "games": r.games,
            "wins": r.wins_a, "losses": r.wins_b, "draws": r.draws, "win_rate": r.win_rate,
            "ci_low": r.ci_low, "ci_high": r.ci_high, "decisions": decisions,
            "cpu_s": round(cpu, 2),
            "cpu_ms_per_decision": round(1000 * cpu / max(decisions, 1), 4),
            "rollouts_per_decision": round(sum(p["rollouts"] for p in parts)
                                           / max(decisions, 1), 2),
            "process_cpu_s": round(sum(p["process_cpu_s"] for p in parts), 2),
            "wall_s": round(time.perf_counter() - t, 1), **rival}


def _chunk(spec, opponent, chunk, **kwargs) -> dict:
    return measure_chunk(spec, opponent, chunk[0], chunk[1], **kwargs)


def plot_curve(result: dict, path: str | Path | None = None, opponents=None):
    """Win rate (95% Wilson interval) against CPU ms per planned decision; the Figure.

    One series per opponent (those named in ``opponents``, default all), each point labelled by
    its ``label`` if it has one, else its player; saved to ``path`` if given.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    fig = Figure(figsize=(9, 6))
    ax = fig.subplots()
    for opp in opponents or dict.fromkeys(p["opponent"] for p in result["points"]):
        pts = sorted((p for p in result["points"] if p["opponent"] == opp),
                     key=lambda p: p["cpu_ms_per_decision"])
        x = np.array([p["cpu_ms_per_decision"] for p in pts])
        y = np.array([p["win_rate"] for p in pts])
        err = [y - np.array([p["ci_low"] for p in pts]), np.array([p["ci_high"] for p in pts]) - y]
        ax.errorbar(x, y, yerr=err, fmt="o", capsize=3, label=f"vs {opp}")
        # a label sits below its point when the point is lower than its neighbour in cost, so
        # that near neighbours' labels part; else above
        below = [i > 0 and p["win_rate"] < pts[i - 1]["win_rate"] for i, p in enumerate(pts)]
        for p, down in zip(pts, below, strict=True):
            ax.annotate(p.get("label", p["player"]), (p["cpu_ms_per_decision"], p["win_rate"]),
                        fontsize=6, xytext=(4, -8 if down else 3), textcoords="offset points")
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.xaxis.set_minor_formatter(plain)
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_xlabel("CPU ms per planned decision (in the games, one core)")
    ax.set_ylabel("win rate (95% Wilson interval)")
    ax.set_title(f"Search: strength against cost ({result['deals']:,} duplicate deals per point, "
                 f"seed {result['seed']})", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


def _parse_args(argv=None):
    p = ArgumentParser(prog="python -m experiments.search_curve",
                       description=__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[2])
    p.add_argument("--players", default="planner-fast,planner",
                   help="search players, comma-separated, each a name or profile with factory "
                        "arguments after colons (default: %(default)s)")
    p.add_argument("--opponents", default="racer",
                   help="their opponents, comma-separated (default: %(default)s)")
    p.add_argument("--deals", type=int, default=100,
                   help="duplicate deals per pairing (default: %(default)s)")
    p.add_argument("--seed", type=int, default=2024, help="game seed (default: %(default)s)")
    p.add_argument("--latency", default="club", help="both seats' latency (default: %(default)s)")
    p.add_argument("--workers", type=int, default=1,
                   help="processes per pairing, each a chunk of the deals (default: %(default)s)")
    p.add_argument("--batch", type=int, default=256,
                   help="games stepped at once per process (default: %(default)s)")
    p.add_argument("--json", type=Path, help="write the points as JSON here (after every one)")
    p.add_argument("--resume", action="store_true",
                   help="keep the points already in --json (same deals, seed and latency)")
    p.add_argument("--plot", type=Path, help="write the figure (PNG) here")
    args = p.parse_args(argv)
    for name in ("deals", "workers", "batch"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.seed < 0:
        p.error(f"--seed must be >= 0, got {args.seed}")
    if args.resume and args.json is None:
        p.error("--resume needs --json (the file to continue)")
    args.players = [s.strip() for s in args.players.split(",") if s.strip()]
    args.opponents = [s.strip() for s in args.opponents.split(",") if s.strip()]
    if not args.players or not args.opponents:
        p.error("--players and --opponents must each name at least one player")
    from agents.screen import parse_player, player_problem
    from spit_env.policy import make_policy

    for spec in args.players + args.opponents:
        try:
            problem = player_problem(parse_player(spec))
        except ValueError as err:
            problem = str(err)
        if problem:
            p.error(problem)
    for spec in args.players:
        player = parse_player(spec)
        if not isinstance(getattr(make_policy(player.policy, **player.kwargs), "totals", None),
                          dict):
            p.error(f"--players: {spec!r} is not a search player (planner, expert or their "
                    "profiles): its cost per decision cannot be measured")
    try:
        args.config = SpitConfig(latency=Latency.parse(args.latency))
    except ValueError as err:
        p.error(f"--latency: {err}")
    return args


def main(argv=None) -> dict:
    """Measure every (player, opponent) point (``--help``); returns the JSON's content."""
    args = _parse_args(argv)
    from spit_env.progress import Progress

    out = {"deals": args.deals, "seed": args.seed, "config": args.config.to_dict(),
           "batch": args.batch, "commit": code_commit(short=True),
           "command": "python -m experiments.search_curve " + " ".join(sys.argv[1:] if argv is None
                                                                       else argv),
           "points": []}
    old = {}
    if args.resume and args.json.is_file():
        prev = json.loads(args.json.read_text())
        if all(prev.get(k) == out[k] for k in ("deals", "seed", "config", "batch")):
            old = {(q["player"], q["opponent"]): q for q in prev["points"]}
            out["points"] = list(prev["points"])
    todo = [(s, o) for s in args.players for o in args.opponents if (s, o) not in old]
    pool = (ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn"))
            if args.workers > 1 else None)
    try:
        with Progress(len(todo), "search curve", unit="pairings") as progress:
            for spec, opponent in todo:
                point = measure_pairing(spec, opponent, args.deals, config=args.config,
                                        seed=args.seed, batch_size=args.batch,
                                        workers=args.workers, pool=pool)
                point["host_cpus"] = os.cpu_count()
                point["commit"] = out["commit"]
                out["points"].append(point)
                if args.json is not None:
                    args.json.parent.mkdir(parents=True, exist_ok=True)
                    args.json.write_text(json.dumps(out, indent=2))
                progress.write(f"{spec:>40} vs {opponent:<10} {point['win_rate']:.3f} "
                               f"[{point['ci_low']:.3f}, {point['ci_high']:.3f}]  "
                               f"{point['cpu_ms_per_decision']:.2f} CPU ms per decision"
                               + (f" (the opponent's {point['opponent_cpu_ms_per_decision']:.2f})"
                                  if "opponent_cpu_ms_per_decision" in point else ""),
                               file=sys.stdout, always=True)
                progress(1)
    finally:
        if pool is not None:
            pool.shutdown()
    if args.json is not None:
        print(f"wrote {args.json}")
    if args.plot is not None:
        plot_curve(out, args.plot)
        print(f"wrote {args.plot}")
    return out


if __name__ == "__main__":
    main()
