r"""How much strategy is there in Spit? The planning bot measured against the heuristics.

Run ``python -m experiments.planner_study --help``. The published run (docs/results/)::

    python -m experiments.planner_study --deals 1000 --workers 2 \
        --json docs/results/planner.json --plot docs/results/planner_curve.png

Two parts, both on duplicate deals at equal latency (the match library, ``agents.arena``: each
deal played twice with the seats swapped, win rates with 95% Wilson intervals, draws counted
half):

1. **Table**: each planner budget (``--budgets``, registered names such as ``planner-fast`` and
   ``planner``) against each heuristic (``--opponents``), ``--deals`` deals per pairing.
2. **Curve**: the planner with ``r`` rollouts per move (its default horizon otherwise) against
   ``--curve-opponent`` for each ``r`` of ``--curve-rollouts``: the win rate as a function of the
   budget. If planning helps, the curve climbs; where the game leaves no room, it flattens.

Each pairing's deals are split into ``--workers`` chunks run by as many processes (one process:
all of a pairing's games in one batch); wall seconds per pairing are reported with the results.
A game's moves depend on its game id, its players and ``--seed`` alone, so the chunks change
nothing, but for the draws a policy takes from the generator the rows of one call share
(docs/ENVIRONMENTS.md, "Seeding"). Results go to stdout, one line per pairing as it ends;
progress to stderr (``--quiet``: none).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np

from agents.arena import GameJob, Player, pairing_result, play_jobs, player_error, save_figure
from experiments.cli import ArgumentParser
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.progress import counted

__all__ = ["run_pairing", "study", "plot_curve", "main"]


def run_pairing(player: Player | str, opponent: str, deals: int, *,
                config: SpitConfig | None = None, seed: int = 0, batch_size: int = 512,
                workers: int = 1, pool=None, progress=None) -> dict:
    """One duplicate-deal pairing, its deals split among ``workers`` processes.

    The deals are cut into ``workers`` near-equal chunks of consecutive game ids, each played in
    both seat orders as two jobs (``agents.arena.GameJob``) on ``pool`` (without a pool: all
    jobs in one batch here, ``agents.arena.play_jobs``).

    Args:
        player: the player measured (a Player, name or profile).
        opponent: its opponent's name or profile.
        deals: the duplicate deals (game ids 0 .. deals - 1), each played twice.
        config: the games' config (default ``SpitConfig()``).
        seed: the game seed.
        batch_size: games stepped at once per job.
        workers: the number of chunks.
        pool: a ``concurrent.futures`` executor to run the jobs on; None: in this process.
        progress: called with the number of games just finished (as games end here, as jobs
            end on ``pool``), or None.

    Returns:
        a dict: "player", "opponent", "deals", "games", "wins", "losses", "draws",
        "truncated", "win_rate", "ci_low", "ci_high" (95% Wilson), "mean_steps",
        "wall_seconds".
    """
    player = Player.parse(player)
    rival = Player.parse(opponent)
    n_chunks = max(1, min(workers, deals))
    bounds = np.linspace(0, deals, n_chunks + 1).astype(int)
    jobs = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        if b > a:
            jobs += [GameJob(player, rival, int(a), int(b - a), False),
                     GameJob(rival, player, int(a), int(b - a), True)]
    settings = dict(config=config or SpitConfig(), seed=seed, batch_size=batch_size)
    t0 = time.perf_counter()
    if pool is None:
        outputs = play_jobs(jobs, **settings,
                            report=None if progress is None else (lambda _, n: progress(n)))
    else:
        outputs = []
        for job, out in zip(jobs, pool.map(partial(GameJob.run, **settings), jobs), strict=True):
            outputs.append(out)
            if progress is not None:
                progress(job.count)
    wall = time.perf_counter() - t0
    r = pairing_result(player, rival, jobs, outputs)
    return {"player": r.a, "opponent": opponent, "deals": deals, "games": r.games,
            "wins": r.wins_a, "losses": r.wins_b, "draws": r.draws, "truncated": r.truncated,
            "win_rate": r.win_rate, "ci_low": r.ci_low, "ci_high": r.ci_high,
            "mean_steps": r.mean_steps, "wall_seconds": wall}


def study(budgets, opponents, deals: int, curve_rollouts, curve_opponent: str,
          curve_deals: int, *, config: SpitConfig | None = None, seed: int = 0,
          batch_size: int = 512, workers: int = 1, show_progress: bool = True,
          json_path: str | Path | None = None, resume: bool = False) -> dict:
    """Run the table and the curve (module docstring).

    Args:
        budgets: the table's planner names or profiles.
        opponents: the heuristics they play (names or profiles).
        deals: duplicate deals per table pairing.
        curve_rollouts: the rollouts per move of the curve's points (empty: no curve).
        curve_opponent: the curve's opponent.
        curve_deals: duplicate deals per curve point.
        config: the games' config (default ``SpitConfig()``).
        seed: the game seed.
        batch_size: games stepped at once per process.
        workers: processes (spawned) per pairing.
        show_progress: show the progress (a bar, or plain lines on stderr); the line of each
            pairing's result goes to stdout either way.
        json_path: write the result there after every pairing.
        resume: keep the pairings already in ``json_path`` (same player, opponent and deals,
            same config and seed) instead of playing them again, so a long study can be stopped
            and continued.

    Returns:
        the JSON-serialisable result: the settings, "table" and "curve" (lists of
        :func:`run_pairing` dicts; a curve point also has "rollouts").
    """
    from agents import PLANNER_PROFILES
    from spit_env.progress import Progress

    jobs = [("table", Player.parse(b), o, deals) for b in budgets for o in opponents]
    horizon = PLANNER_PROFILES["planner"]["horizon_ms"]
    for r in curve_rollouts:
        kw = {"rollouts": int(r), "horizon_ms": horizon}
        jobs.append(("curve", Player(f"planner(rollouts={r})", "planner", None, kw),
                     curve_opponent, curve_deals))
    config = config or SpitConfig()
    out = {"deals": deals, "curve_deals": curve_deals, "seed": seed, "config": config.to_dict(),
           "profiles": PLANNER_PROFILES, "curve_horizon_ms": horizon, "workers": workers,
           "scoring": "win 1, loss 0, draw or truncation 1/2; 95% Wilson intervals over "
                      "2 x deals games",
           "table": [], "curve": []}
    done = _previous(json_path, out) if resume else {}
    bar = Progress(sum(2 * n for *_, n in jobs), f"planner study ({counted(len(jobs), 'pairing')})",
                   unit="games", enabled=show_progress)
    # spawned, not forked: a fork of a process whose torch has started its thread pool (a "network"
    # player loaded to check the arguments) hangs at the child's first forward pass
    pool = (ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
            if workers > 1 else None)
    try:
        for part, player, opponent, n in jobs:
            res = done.get((part, player.label, opponent, n))
            if res is None:
                res = run_pairing(player, opponent, n, config=config, seed=seed,
                                  batch_size=batch_size, workers=workers, pool=pool,
                                  progress=bar)
                if part == "curve":
                    res["rollouts"] = player.kwargs["rollouts"]
            else:
                bar.update(2 * n)  # kept from the earlier run
            out[part].append(res)
            if json_path is not None:
                Path(json_path).parent.mkdir(parents=True, exist_ok=True)
                Path(json_path).write_text(json.dumps(out, indent=2))
            # a result: on stdout (above the bar on a terminal), whatever --quiet says
            bar.write(f"{res['player']:>24} vs {res['opponent']:<8} {res['win_rate']:.3f} "
                      f"[{res['ci_low']:.3f}, {res['ci_high']:.3f}]  {res['wall_seconds']:.0f} s",
                      file=sys.stdout, always=True)
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown()
    return out


def _previous(json_path, out: dict) -> dict:
    """The pairings of an earlier run at ``json_path`` made under the same config and seed.

    Returns:
        a dict keyed by (part, player, opponent, deals); empty if there is no such file or it
        was made under another config or seed.
    """
    if json_path is None or not Path(json_path).is_file():
        return {}
    old = json.loads(Path(json_path).read_text())
    if old.get("config") != out["config"] or old.get("seed") != out["seed"]:
        return {}
    return {(part, r["player"], r["opponent"], r["deals"]): r for part in ("table", "curve")
            for r in old.get(part, [])}


def plot_curve(result: dict, path: str | Path | None = None):
    """Plot the curve: the win rate against the rollouts per move (log scale), with the 95% band.

    Args:
        result: the dict of :func:`study`.
        path: where to save the PNG, if given.

    Returns:
        the matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    pts = result["curve"]
    x = np.array([p["rollouts"] for p in pts], float)
    y = np.array([p["win_rate"] for p in pts])
    lo = np.array([p["ci_low"] for p in pts])
    hi = np.array([p["ci_high"] for p in pts])
    fig, ax = plt.subplots(figsize=(6, 4))
    if len(pts):
        opp = pts[0]["opponent"]
        ax.fill_between(x, lo, hi, alpha=0.3, label="95% Wilson interval")
        ax.plot(x, y, "o-", label=f"planner vs {opp} (horizon {result['curve_horizon_ms']} ms)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [f"{int(v)}" for v in x])
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("rollouts per legal move and decision")
    ax.set_ylabel("win rate of the planner")
    deals = counted(result["curve_deals"], "duplicate deal")
    ax.set_title(f"Does thinking pay? ({deals} per point)", fontsize=10)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def _parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(prog="python -m experiments.planner_study",
                       description="The planning bot against the heuristics on duplicate "
                                "deals: a table at two budgets and the win rate as a function of "
                                "rollouts.")
    p.add_argument("--budgets", default="planner-fast,planner",
                   help="planner names or profiles for the table (default: %(default)s)")
    p.add_argument("--opponents", default="random,greedy,racer",
                   help="the heuristics they play (default: %(default)s)")
    p.add_argument("--deals", type=int, default=100,
                   help="duplicate deals per pairing (default: %(default)s)")
    p.add_argument("--curve-rollouts", default="1,2,4,8,16",
                   help="rollouts per move of the curve's points; empty: no curve "
                        "(default: %(default)s)")
    p.add_argument("--curve-opponent", default="racer",
                   help="the curve's opponent (default: %(default)s)")
    p.add_argument("--curve-deals", type=int, default=None,
                   help="deals per curve point (default: --deals)")
    p.add_argument("--latency", default="club", help="both seats' latency (default: %(default)s)")
    p.add_argument("--max-game-ms", type=int, default=None,
                   help="simulated time after which a game is truncated, a draw (D16; default: "
                        "the config's)")
    p.add_argument("--seed", type=int, default=0, help="game seed (default: %(default)s)")
    p.add_argument("--batch", type=int, default=512,
                   help="games stepped at once per process (default: %(default)s)")
    p.add_argument("--workers", type=int, default=1, help="processes (default: %(default)s)")
    p.add_argument("--json", type=Path, help="write the result as JSON here (after every pairing)")
    p.add_argument("--resume", action="store_true",
                   help="keep the pairings already in --json (same config and seed) instead of "
                        "playing them again")
    p.add_argument("--plot", type=Path, help="write the curve PNG here")
    p.add_argument("--quiet", action="store_true", help="no progress (no bar, no lines)")
    args = p.parse_args(argv)
    for name in ("deals", "batch", "workers"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    if args.curve_deals is not None and args.curve_deals < 1:
        p.error("--curve-deals must be >= 1")
    if args.resume and args.json is None:
        p.error("--resume needs --json (the file to continue)")
    args.budgets = [s.strip() for s in args.budgets.split(",") if s.strip()]
    args.opponents = [s.strip() for s in args.opponents.split(",") if s.strip()]
    try:
        args.curve_rollouts = [int(x) for x in args.curve_rollouts.split(",") if x.strip()]
    except ValueError:
        p.error("--curve-rollouts must be whole numbers separated by commas, "
                f"got {args.curve_rollouts!r}")
    for spec in args.budgets + args.opponents + [args.curve_opponent]:
        problem = player_error(spec)
        if problem:
            p.error(problem)
    for r in args.curve_rollouts:
        try:
            Player("x", "planner", None, {"rollouts": r}).take_seat(SpitConfig(), 0)
        except ValueError as err:
            p.error(f"--curve-rollouts: {err}")
    try:
        args.config = SpitConfig(latency=Latency.parse(args.latency))
        if args.max_game_ms is not None:
            args.config = args.config.replace(max_game_ms=args.max_game_ms)
    except ValueError as err:
        p.error(f"--latency / --max-game-ms: {err}")
    return args


def main(argv=None) -> dict:
    """Run the study from the command line (``--help``); returns :func:`study`'s result."""
    args = _parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    result = study(args.budgets, args.opponents, args.deals, args.curve_rollouts,
                   args.curve_opponent, args.curve_deals or args.deals, config=args.config,
                   seed=args.seed, batch_size=args.batch, workers=args.workers,
                   show_progress=not args.quiet,
                   json_path=args.json, resume=args.resume)
    if args.plot and result["curve"]:
        plot_curve(result, args.plot)
    return result


if __name__ == "__main__":
    main()
