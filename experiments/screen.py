r"""The screen: score players on the truth set in seconds, build a truth set, calibrate the screen.

Run ``python -m experiments.screen --help``. Three uses::

    python -m experiments.screen --players planner,planner-fast,expert,network,racer,greedy \
        --json out/screen.json                     # score players on the shipped truth set
    python -m experiments.screen --build --out out/truth.npz [--ray [--address HOST:PORT]]
    python -m experiments.screen --calibrate --json docs/results/screen_calibration.json \
        --plot docs/results/screen_calibration.png # the published players' gain and win rate

A player is a registered name, a profile ``name@latency``, a trained model's path, each with
optional factory arguments ``NAME:key=value`` (``planner:rollouts=32:horizon_ms=2000``). The
truth set, the score and the calibration are the library's (``agents.screen``); this script
reads the arguments, prints the table and writes the files. ``--build`` values the positions
here, job by job, or with ``--ray`` as Ray tasks (``experiments/cluster``: a local Ray on
127.0.0.1 for the run, or the cluster at ``--address``); the file is the same either way.

Results (the table, "wrote <file>") go to stdout; progress to stderr (``--quiet``: none).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from experiments.cli import ArgumentParser, code_commit, player_help
from spit_env.progress import counted

__all__ = ["main", "PUBLISHED"]

#: Win rates against racer published in docs/results/ (club latency, duplicate deals, 95% Wilson)
#: and the players that made them: (label, player, win rate, low, high, deals, source).
PUBLISHED = [
    ("greedy", "greedy", 0.429, 0.408, 0.451, 1000, "tournament.md"),
    ("chain", "chain", 0.458, 0.436, 0.479, 1000, "tournament.md"),
    ("network (shipped)", "network", 0.505, 0.484, 0.527, 1000, "ppo_shipped.md"),
    ("planner-fast (4 rollouts, 2 s horizon)", "planner-fast", 0.535, 0.513, 0.557, 1000,
     "planner.md"),
    ("planner (16 rollouts, 3 s horizon)", "planner", 0.566, 0.544, 0.588, 1000, "planner.md"),
    ("expert, earlier (16 rollouts, 3 s)", "expert:rollouts=16:prune=0", 0.568, 0.546, 0.589,
     1000, "expert.md"),
    ("planner 1, 3 s", "planner:rollouts=1", 0.472, 0.432, 0.512, 300, "planner.md, curve"),
    ("planner 2, 3 s", "planner:rollouts=2", 0.440, 0.401, 0.480, 300, "planner.md, curve"),
    ("planner 2, 3 s (again)", "planner:rollouts=2", 0.492, 0.452, 0.532, 300, "screen.md"),
    ("planner 4, 3 s", "planner:rollouts=4", 0.533, 0.493, 0.573, 300, "planner.md, curve"),
    ("planner 8, 3 s", "planner:rollouts=8", 0.578, 0.538, 0.617, 300, "planner.md, curve"),
    ("planner 32, 3 s", "planner:rollouts=32", 0.603, 0.564, 0.642, 300, "planner.md, curve"),
    ("planner 8, 3 s (speed)", "planner:rollouts=8", 0.548, 0.499, 0.596, 200, "speed.md"),
    ("planner 16, 2 s", "planner:horizon_ms=2000", 0.543, 0.494, 0.591, 200, "speed.md"),
    ("planner 8, 2 s", "planner:rollouts=8:horizon_ms=2000", 0.553, 0.504, 0.600, 200,
     "speed.md"),
    # the search curve's points: 1,000 deals of seed 2024
    ("planner (seed 2024)", "planner", 0.575, 0.553, 0.596, 1000, "search.md"),
    ("planner-fast (seed 2024)", "planner-fast", 0.516, 0.495, 0.538, 1000, "search.md"),
    ("planner 16, 2 s (1,000)", "planner:horizon_ms=2000", 0.572, 0.550, 0.593, 1000,
     "search.md"),
    ("planner 32, 3 s (1,000)", "planner:rollouts=32", 0.571, 0.549, 0.593, 1000, "search.md"),
    ("planner 32, 2 s", "planner:rollouts=32:horizon_ms=2000", 0.597, 0.575, 0.618, 1000,
     "search.md"),
    ("planner 24, 2 s", "planner:rollouts=24:horizon_ms=2000", 0.571, 0.549, 0.593, 1000,
     "search.md"),
    ("planner 16, 1 s", "planner:horizon_ms=1000", 0.541, 0.520, 0.563, 1000, "search.md"),
    ("planner 16, 1 s + value", "planner:horizon_ms=1000:leaf_value=value", 0.571, 0.549,
     0.592, 1000, "search.md"),
    ("planner 8, 1 s + value", "planner:rollouts=8:horizon_ms=1000:leaf_value=value", 0.530,
     0.509, 0.552, 1000, "search.md"),
    ("planner 32, 3 s, raced", "planner:rollouts=32:racing=4:race_z=0", 0.599, 0.577, 0.620,
     1000, "search.md"),
    ("expert (28, 3 s, prune 0.1)", "expert", 0.589, 0.567, 0.610, 1000, "search.md"),
    ("expert 40, 2 s, prune 0.1", "expert:prune=0.1:rollouts=40:horizon_ms=2000", 0.603, 0.581,
     0.624, 1000, "search.md"),
    ("expert 8, 3 s, prune 0.15", "expert:prune=0.15:rollouts=8", 0.536, 0.514, 0.558, 1000,
     "search.md"),
    ("expert 8, 1 s + value, prune", "expert:prune=0.1:rollouts=8:horizon_ms=1000:leaf_value=value",
     0.549, 0.528, 0.571, 1000, "search.md"),
    ("expert-fast (16, 1 s + value)", "expert-fast", 0.574, 0.552, 0.596, 1000, "search.md"),
    ("expert 16, 1 s + value, prune",
     "expert:prune=0.1:rollouts=16:horizon_ms=1000:leaf_value=value", 0.541, 0.520, 0.563, 1000,
     "search.md"),
]
_DEFAULT_PLAYERS = "planner,planner-fast,expert,expert-fast,network,racer,greedy"
#: the flags that do not change a built file (left out of the command recorded in it)
_NOT_CONTENT = {"--out", "--ray", "--address", "--ray-cpus", "--quiet", "--positions-per-job"}


def _parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(
        prog="python -m experiments.screen",
        description="Score players on a truth set: fixed positions whose every legal move is "
        "valued by many racer rollouts to the end of the round. Per decision: the gain over "
        "racer's move, the share of the best move's gain captured, how often the player leaves "
        "racer's move and how often that departure truly gains, the regret against the best "
        "move, and CPU time. --build makes a truth set; --calibrate relates the gain to the "
        "published win rates against racer.",
    )
    p.add_argument("--players", default=_DEFAULT_PLAYERS,
                   help=f"comma-separated players: names ({player_help()}), profiles "
                        "name@latency, model paths, each optionally NAME:key=value for its "
                        "factory (planner:rollouts=32) (default: %(default)s)")
    p.add_argument("--truth", type=Path, default=None,
                   help="the truth set to score on (default: the one shipped in the package)")
    p.add_argument("--json", type=Path, help="write the scores (or the calibration) as JSON")
    p.add_argument("--chunk", type=int, default=256,
                   help="positions per policy call (default: %(default)s)")
    p.add_argument("--quiet", action="store_true", help="no progress (results still printed)")
    g = p.add_argument_group("calibration")
    g.add_argument("--calibrate", action="store_true",
                   help="score the players of the published win rates against racer and fit "
                        "the line from gain to win rate (--json, --plot)")
    g.add_argument("--plot", type=Path, help="with --calibrate: write the figure (PNG) here")
    b = p.add_argument_group("building a truth set")
    b.add_argument("--build", action="store_true",
                   help="build a truth set (needs --out; the defaults make the shipped one, about "
                        "26 CPU minutes on one core)")
    b.add_argument("--out", type=Path, help="the truth set file to write (.npz)")
    b.add_argument("--per-source", type=int, default=600,
                   help="positions per source player (default: %(default)s)")
    b.add_argument("--sources", default="racer,greedy,chain,planner,network",
                   help="the players whose games the positions come from, each against racer, "
                        "in both seats (default: %(default)s)")
    b.add_argument("--games", type=int, default=50,
                   help="games per source and seat (default: %(default)s)")
    b.add_argument("--rollouts", type=int, default=2560,
                   help="rollouts per legal move, 2-4096 (default: %(default)s)")
    b.add_argument("--seed", type=int, default=0, help="the build's seed (default: %(default)s)")
    b.add_argument("--positions-per-job", type=int, default=8,
                   help="positions valued together (one Ray task each); the file does not "
                        "depend on it (default: %(default)s)")
    b.add_argument("--ray", action="store_true",
                   help="value the positions as Ray tasks (the 'scale' extra): a local Ray on "
                        "127.0.0.1 for this run, or the cluster at --address")
    b.add_argument("--address", default=None,
                   help="with --ray: 'auto' or HOST:PORT of a running cluster (default: a local "
                        "Ray)")
    b.add_argument("--ray-cpus", type=int, default=None,
                   help="CPUs of the local Ray (default: all)")
    args = p.parse_args(argv)
    _check(p, args)
    args.command = shlex.join(["python", "-m", "experiments.screen",
                               *(sys.argv[1:] if argv is None else argv)])
    return args


def _check(p: ArgumentParser, args: argparse.Namespace) -> None:
    if args.build and args.calibrate:
        p.error("--build and --calibrate: one at a time")
    for flag, lo in (("chunk", 1), ("per_source", 2), ("games", 1), ("positions_per_job", 1)):
        if getattr(args, flag) < lo:
            p.error(f"--{flag.replace('_', '-')} must be >= {lo}, got {getattr(args, flag)}")
    if not 2 <= args.rollouts <= 4096:
        p.error(f"--rollouts must be in 2..4096, got {args.rollouts}")
    if args.ray_cpus is not None and args.ray_cpus < 1:
        p.error(f"--ray-cpus must be >= 1, got {args.ray_cpus}")
    if (args.ray or args.address or args.out) and not args.build:
        p.error("--out, --ray and --address are for --build")
    if args.address is not None:
        if not args.ray:
            p.error("--address needs --ray")
        from experiments.cluster.connect import parse_address

        try:
            parse_address(args.address)
        except ValueError as err:
            p.error(f"--address: {err}")
    if args.plot and not args.calibrate:
        p.error("--plot is for --calibrate")
    from agents.screen import player_problem

    if args.build:
        if args.out is None:
            p.error("--build needs --out FILE")
        args.sources = [s.strip() for s in args.sources.split(",") if s.strip()]
        checked = [("--sources", s) for s in args.sources]
    else:
        args.players = [s.strip() for s in args.players.split(",") if s.strip()]
        if not args.players:
            p.error("--players: no player given")
        checked = [] if args.calibrate else [("--players", s) for s in args.players]
    for flag, spec in checked:
        problem = player_problem(spec)
        if problem:
            p.error(f"{flag}: {problem}")


# --- scoring ------------------------------------------------------------------------------------
def _load(args):
    from agents.screen import TruthFileError, load_truth

    try:
        return load_truth(args.truth)
    except TruthFileError as err:
        sys.exit(f"python -m experiments.screen: error: --truth: {err}")


def _score_all(players, truth, args) -> list:
    from agents.screen import score
    from spit_env.progress import Progress

    out = []
    with Progress(len(players), "screen", unit="players", enabled=not args.quiet,
                  every_s=10) as bar:
        for spec in players:
            out.append(score(spec, truth, chunk=args.chunk))
            bar(1)
    return out


def _print_scores(truth, scores) -> None:
    meta = truth.meta
    print(f"truth set v{meta['version']}: {counted(truth.size, 'position')}, "
          f"{counted(meta['rollouts'], 'rollout')} per move (commit {meta['commit'][:10] or '?'}); "
          "gains in planner units "
          f"(a card = 0.019); the best move gains {scores[0].available:.4f} per decision, about "
          f"{truth.best_gain_noise():.4f} of it the truth's noise")
    cols = ("player", "gain / decision", "± se", "share", "departures", "precision",
            "gain / departure", "regret", "CPU ms / decision")
    rows = [(s.label, f"{s.gain:+.5f}", f"{s.gain_se:.5f}", f"{s.share:+.1%}",
             f"{s.departure_rate:.1%}", _maybe(s.precision, "{:.0%}"),
             _maybe(s.gain_per_departure, "{:+.4f}"), f"{s.regret:.4f}",
             f"{s.cpu_ms_per_decision:.2f}") for s in scores]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich comes with the train extra
        for r in (cols, *rows):
            print("  ".join(f"{c:>16}" for c in r))
        return
    table = Table()
    for c in cols:
        table.add_column(c, justify="left" if c == "player" else "right", no_wrap=True)
    for r in rows:
        table.add_row(*r)
    Console(width=200).print(table)  # as wide as its columns, never wrapped


def _maybe(value: float, fmt: str) -> str:
    return "-" if value != value else fmt.format(value)


def _run_score(args) -> dict:
    truth = _load(args)
    scores = _score_all(args.players, truth, args)
    _print_scores(truth, scores)
    result = dict(command=args.command, commit=code_commit(),
                  truth=_truth_summary(truth, args.truth),
                  scores=[s.to_dict() for s in scores])
    _write_json(args.json, result)
    return result


def _truth_summary(truth, path) -> dict:
    meta = truth.meta
    return dict(path=str(path) if path else "shipped", version=meta["version"],
                positions=truth.size, rollouts=meta["rollouts"], command=meta["command"],
                commit=meta["commit"], best_gain_noise=truth.best_gain_noise())


def _write_json(path, result) -> None:
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {path}")


# --- calibration ----------------------------------------------------------------------------------
def _run_calibrate(args) -> dict:
    import matplotlib

    matplotlib.use("Agg")  # files only
    from agents.screen.calibration import fit_line, plot_calibration, wilson_sigma

    truth = _load(args)
    specs = list(dict.fromkeys(spec for _, spec, *_ in PUBLISHED))
    scores = dict(zip(specs, _score_all(specs, truth, args), strict=True))
    _print_scores(truth, [*scores.values(), *_score_all(["racer"], truth, args)])
    points = []
    for label, spec, rate, lo, hi, deals, source in PUBLISHED:
        s = scores[spec]
        points.append(dict(label=label, player=spec, gain=s.gain, gain_se=s.gain_se,
                           win_rate=rate, ci_low=lo, ci_high=hi, deals=deals, source=source))
    x = [q["gain"] for q in points]
    y = [q["win_rate"] for q in points]
    sigma = [wilson_sigma(q["ci_low"], q["ci_high"]) for q in points]
    xerr = [q["gain_se"] for q in points]
    fit = fit_line(x, y, sigma, xerr=xerr, through=(0.0, 0.5))  # racer: gain 0, win rate 0.5
    free = fit_line(x, y, sigma, xerr=xerr)
    for q, r, sd in zip(points, fit["residuals"], fit["point_sd"], strict=True):
        q.update(predicted=q["win_rate"] - r, residual_sd=r / sd)
    print(f"{'point':>26} {'gain':>8} {'win rate':>9} {'predicted':>9} {'residual / sd':>13}")
    for q in points:
        print(f"{q['label']:>26} {q['gain']:+8.5f} {q['win_rate']:9.3f} {q['predicted']:9.3f} "
              f"{q['residual_sd']:+13.2f}")
    print(f"win rate = 0.5 + {fit['slope']:.2f} x gain (slope se {fit['slope_se']:.2f}), "
          f"weighted R^2 {fit['r2']:.2f}, chi^2 {fit['chi2']:.1f} on {fit['dof']} dof; "
          f"free line: {free['intercept']:.3f} + {free['slope']:.2f} x gain, R^2 {free['r2']:.2f}")
    if args.plot:
        plot_calibration(points, fit, args.plot)
        print(f"wrote {args.plot}")
    result = dict(command=args.command, commit=code_commit(),
                  truth=_truth_summary(truth, args.truth),
                  points=points, fit=fit, free_fit=free,
                  scores={k: v.to_dict() for k, v in scores.items()})
    _write_json(args.json, result)
    return result


# --- building -------------------------------------------------------------------------------------
def _content_command(argv) -> str:
    """The build's command line without the flags that do not change the file."""
    argv = list(sys.argv[1:] if argv is None else argv)
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        name = a.split("=")[0]
        if name in _NOT_CONTENT:
            skip = "=" not in a and name not in ("--ray", "--quiet")
            continue
        kept.append(a)
    return shlex.join(["python", "-m", "experiments.screen", *kept])


def _run_build(args, argv) -> dict:
    from agents.screen import build_truth, save_truth
    from spit_env.progress import Progress

    def progress(stage, total):
        unit = "games" if stage == "games" else "positions"
        return Progress(total, f"truth set: {stage}", unit=unit, enabled=not args.quiet)

    def build(runner):
        return build_truth(per_source=args.per_source, games=args.games, rollouts=args.rollouts,
                           seed=args.seed, sources=args.sources,
                           positions_per_job=args.positions_per_job, runner=runner,
                           command=_content_command(argv), commit=code_commit(), progress=progress)

    if args.ray:
        from experiments.cluster.connect import RayConnectError, RayMissingError, ray_session
        from experiments.cluster.tasks import run_jobs_on_ray

        try:
            with ray_session(args.address, num_cpus=args.ray_cpus):
                truth, stats = build(run_jobs_on_ray)
        except (RayMissingError, RayConnectError) as err:
            sys.exit(f"python -m experiments.screen: error: --ray: {err}")
    else:
        truth, stats = build(None)
    path = save_truth(truth, args.out)
    summary = _build_summary(truth, stats, path)
    print(f"{counted(summary['positions'], 'position')} ({summary['counts']}), "
          f"{counted(truth.meta['rollouts'], 'rollout')} per move; standard error of a move's gain "
          f"over racer's: median {summary['se_median']:.4f}, 90th percentile "
          f"{summary['se_p90']:.4f}; the best move gains {summary['best_gain']:.4f} per decision, "
          f"about {summary['best_gain_noise']:.4f} of it noise; CPU: positions "
          f"{stats['positions_cpu_s']:.0f} s, values "
          f"{stats['values_cpu_s']:.0f} s; {summary['bytes']:,} bytes")
    print(f"wrote {path}")
    return summary


def _build_summary(truth, stats, path) -> dict:
    import numpy as np

    se = truth.se[np.isfinite(truth.se) & (truth.se > 0)]
    return dict(positions=truth.size, counts=truth.meta["counts"],
                se_median=float(np.median(se)), se_p90=float(np.quantile(se, 0.9)),
                best_gain=float(truth.best_gain.mean()), best_gain_noise=truth.best_gain_noise(),
                bytes=path.stat().st_size, **stats)


def main(argv=None) -> dict:
    """Command-line entry point; returns what it printed as a dict."""
    args = _parse_args(argv)
    if args.build:
        return _run_build(args, argv)
    if args.calibrate:
        return _run_calibrate(args)
    return _run_score(args)


if __name__ == "__main__":
    main()
