r"""Round-robin tournament of policies with duplicate deals, and the latency study.

Run ``python -m experiments.tournament --help``. Example::

    python -m experiments.tournament --players random,greedy,chain,racer --games 1000 \
        --json out/tournament.json --csv out/tournament.csv --heatmap out/winrate.png \
        --latency-study racer --latency-json out/latency.json --latency-plot out/latency.png

The games, pairings, intervals and ratings are the match library's (``agents.arena``: duplicate
deals, scoring, profiles, jobs); this script reads the arguments, runs
:func:`agents.arena.round_robin` and :func:`agents.arena.latency_curve`, prints the table and
writes the files. A player is a policy name, a profile "name@latency" (the profile's latency
replaces that seat's; ``--latency`` sets the default of both seats) or a trained model's path.

Without ``--ray`` every pairing's games play in one batch here. ``--ray [ADDRESS]`` runs the
jobs (``--chunk`` deals of one pairing in one seat order each) as Ray tasks
(``experiments/cluster/tasks.py``; a local Ray on 127.0.0.1 by default, a cluster by its
address). A game depends on its game id, its players and ``--seed`` alone (but for the draws a
policy takes from the generator the rows of one call share: docs/ENVIRONMENTS.md, "Seeding"),
so the table is the same, game for game, whatever ``--chunk`` and wherever the jobs run; a
smaller ``--chunk`` spreads a long pairing over more CPUs.

The latency study (``--latency-study BOT``): the bot against itself, one seat's mean latency
varied over ``--latency-grid`` (log-normal, sd = 20% of the mean as in the club preset, floored
at 150 ms like every preset), the other seat at ``--latency``; the win rate of the varied player
with 95% bands.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from agents.arena import (
    Runner,
    latency_curve,
    player_error,
    plot_latency_curve,
    plot_winrate_matrix,
    round_robin,
)
from experiments.cli import ArgumentParser, player_help
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.progress import counted

__all__ = ["main", "short_name", "short_names", "write_csv", "write_ratings_csv"]


def write_csv(result: dict, path: str | Path) -> None:
    """Write the tournament as CSV: one row per pairing (the PairingResult fields).

    Args:
        result: the dict of :func:`agents.arena.round_robin`.
        path: the CSV file (its folder is made if needed).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = list(result["pairings"][0])
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(result["pairings"])


def write_ratings_csv(result: dict, path: str | Path) -> None:
    """Write each player's Bradley-Terry rating as CSV (player, rating), the best first.

    Args:
        result: the dict of :func:`agents.arena.round_robin`.
        path: the CSV file (its folder is made if needed).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["player", "rating"])
        for name, r in sorted(result["ratings"].items(), key=lambda kv: -kv[1]):
            w.writerow([name, f"{r:.1f}"])


# --- command line ------------------------------------------------------------------------------
def _parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(
        prog="python -m experiments.tournament",
        description="Round robin of Spit policies (bots and trained models) with duplicate deals "
        "(each deal played twice, seats swapped), win rates with 95% Wilson intervals, "
        "Bradley-Terry ratings; optionally the latency study of one bot.",
    )
    p.add_argument("--players", default="random,greedy,chain,racer",
                   help=f"comma-separated players: policy names ({player_help()}), profiles "
                        "name@latency, or paths of trained models (model.zip, an RLlib "
                        "checkpoint folder) (default: %(default)s)")
    p.add_argument("--games", type=int, default=200,
                   help="duplicate deals per pairing; each is played twice "
                        "(default: %(default)s)")
    p.add_argument("--latency", default="club",
                   help="both seats' default latency: preset name or whole ms "
                        "(default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="game seed (default: %(default)s)")
    p.add_argument("--batch", type=int, default=512,
                   help="games stepped at once (default: %(default)s)")
    p.add_argument("--json", type=Path, help="write the tournament result as JSON here")
    p.add_argument("--csv", type=Path,
                   help="write one row per pairing as CSV here")
    p.add_argument("--ratings-csv", type=Path,
                   help="write each player's Bradley-Terry rating as CSV here")
    p.add_argument("--heatmap", type=Path, help="write the win-rate heatmap PNG here")
    p.add_argument("--latency-study", metavar="BOT",
                   help="also run the latency study of this bot against itself")
    p.add_argument("--latency-grid", default="300,350,400,450,500,550,600,650,700",
                   help="mean latencies (ms) of the varied seat (default: %(default)s)")
    p.add_argument("--latency-games", type=int, default=None,
                   help="duplicate deals per latency point (default: --games)")
    p.add_argument("--latency-json", type=Path, help="write the latency curve as JSON here")
    p.add_argument("--latency-plot", type=Path, help="write the latency curve PNG here")
    p.add_argument("--no-tournament", action="store_true", help="run only the latency study")
    p.add_argument("--quiet", action="store_true", help="no progress (no bar, no lines)")
    p.add_argument("--chunk", type=int, default=1000,
                   help="deals per job (one task with --ray); the table does not depend on it "
                   "(default: %(default)s)")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="run the jobs as Ray tasks: alone, on a local Ray started on 127.0.0.1 "
                   "for this run; 'auto' or HOST:PORT for a running cluster (needs the 'scale' "
                   "extra)")
    p.add_argument("--ray-cpus", type=int, default=None,
                   help="CPUs of the local Ray of a bare --ray (default: all)")
    args = p.parse_args(argv)
    if args.games < 1:
        p.error("--games must be >= 1")
    if args.chunk < 1:
        p.error("--chunk must be >= 1")
    if args.ray_cpus is not None and args.ray_cpus < 1:
        p.error("--ray-cpus must be >= 1")
    if args.ray is not None:
        from experiments.cluster.connect import parse_address

        try:
            parse_address(args.ray)
        except ValueError as err:
            p.error(f"--ray: {err}")
    if args.batch < 1:
        p.error("--batch must be >= 1")
    players = [s.strip() for s in args.players.split(",") if s.strip()]
    checked = [("--players", spec) for spec in players]
    if args.latency_study:
        checked.append(("--latency-study", args.latency_study))
    for flag, spec in checked:
        problem = player_error(spec)
        if problem:
            p.error(f"{flag}: {problem}")
    if not args.no_tournament and len(set(players)) < 2:
        p.error(f"--players needs at least 2 distinct players, got {players}")
    try:
        Latency.parse(args.latency)
    except ValueError as err:
        p.error(f"--latency: {err}")
    return args


_WIDTH = 16  # the player columns


def short_name(label: str, width: int = _WIDTH) -> str:
    """A player's name as the table shows it, at most ``width`` characters.

    A model's path is shown by its file's stem (its folder's name for model.zip or an RLlib
    checkpoint folder), its profile kept ("distilled@pro"); a longer name is cut with "~".
    The table's legend gives the full names, as do the JSON and the CSV. :func:`short_names`
    makes the names of several players distinct.
    """
    return next(_short_candidates(label, width))


def short_names(labels, width: int = _WIDTH) -> dict[str, str]:
    """Distinct table names of ``labels``: {label: name of at most ``width`` characters}.

    Each starts as :func:`short_name`; while names collide, a model path's name grows (its file
    name with ".zip", then its folders from the nearest) and a cut one is cut in the middle
    instead ("model_s~_1000500", where the step or seed usually differs); a name that is not a
    path keeps its name. Names still equal are numbered ("#1", "#2").
    """
    labels = list(dict.fromkeys(labels))
    options = {label: list(dict.fromkeys(_short_candidates(label, width))) for label in labels}
    pick = dict.fromkeys(labels, 0)
    while True:
        names = {label: options[label][pick[label]] for label in labels}
        groups: dict[str, list[str]] = {}
        for label, name in names.items():
            groups.setdefault(name, []).append(label)
        clashes = [group for group in groups.values() if len(group) > 1]
        moved = False
        for group in clashes:
            for label in group:
                if pick[label] + 1 < len(options[label]):
                    pick[label] += 1
                    moved = True
        if not clashes or not moved:
            break
    for group in clashes:  # nothing left to grow: number them, "#1", "#2", ...
        for k, label in enumerate(group, 1):
            names[label] = options[label][0][:width - len(f"#{k}")] + f"#{k}"
    return names


def _cut(name: str, width: int, where: str) -> str:
    """``name`` in at most ``width`` characters, "~" where it is cut (its end or its middle)."""
    if len(name) <= width:
        return name
    if where == "end":
        return name[:width - 1] + "~"
    head = (width - 1) // 2
    return name[:head] + "~" + name[len(name) - (width - 1 - head):]


def _short_candidates(label: str, width: int):
    """The names ``label`` may be shown by, shortest first, each at most ``width`` long."""
    if "/" in label or label.endswith(".zip"):
        name, _, latency = label.partition("@") if "@" in Path(label).name else (label, "", "")
        at = f"@{latency}" if latency else ""
        path = Path(name)
        folder = path.stem in ("model", "checkpoint")
        raw = [(path.parent.name if folder else path.stem) + at]
        if not folder and path.suffix:
            raw.append(path.name + at)  # "network.zip" beside the policy "network"
        parts = [p for p in path.parts if p not in ("/", "")]
        last = parts[:-1] if folder else parts
        raw += ["/".join(last[-k:]) + at for k in range(2, len(last) + 1)]
    else:
        raw = [label]
    for name in raw:
        yield _cut(name, width, "end")
        yield _cut(name, width, "middle")


def _print_table(result: dict, latency: str) -> None:
    deals = result["deals"]
    print(f"Round robin: {counted(deals, 'duplicate deal')} per pairing "
          f"({counted(2 * deals, 'game')}), "
          f"latency {latency} both seats unless a profile sets one, seed {result['seed']}")
    print(f"{'player':>16} {'opponent':>16} {'win rate':>9} {'95% CI':>17} {'draws':>6}")
    short = short_names(result["players"])
    for r in result["pairings"]:
        print(f"{short[r['a']]:>16} {short[r['b']]:>16} {r['win_rate']:9.3f} "
              f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] {r['draws']:6d}")
    print("ratings (Bradley-Terry, Elo scale):")
    for name, rating in sorted(result["ratings"].items(), key=lambda kv: -kv[1]):
        print(f"{short[name]:>16} {rating:8.1f}")
    for name in result["players"]:
        if short[name] != name:
            print(f"  {short[name]}: {name}")


def _wrote(*paths) -> None:
    for path in paths:
        print(f"wrote {path}")


def main(argv=None) -> dict:
    """Command-line entry point; returns {"tournament": ..., "latency": ...} (None if not run)."""
    args = _parse_args(argv)
    if args.ray is None:
        return _main(args, None)
    from experiments.cluster.connect import RayConnectError, RayMissingError, ray_session
    from experiments.cluster.tasks import run_jobs_on_ray

    try:
        with ray_session(args.ray, num_cpus=args.ray_cpus):
            return _main(args, run_jobs_on_ray)
    except (RayMissingError, RayConnectError) as err:
        sys.exit(f"python -m experiments.tournament: error: --ray: {err}")


def _main(args: argparse.Namespace, runner: Runner | None) -> dict:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    config = SpitConfig(latency=Latency.parse(args.latency))
    out: dict = {"tournament": None, "latency": None}
    if not args.no_tournament:
        players = [s.strip() for s in args.players.split(",") if s.strip()]
        result = round_robin(players, args.games, config=config, seed=args.seed,
                             batch_size=args.batch, show_progress=not args.quiet,
                             chunk=args.chunk, runner=runner)
        out["tournament"] = result
        _print_table(result, args.latency)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=2))
            _wrote(args.json)
        if args.csv:
            write_csv(result, args.csv)
            _wrote(args.csv)
        if args.ratings_csv:
            write_ratings_csv(result, args.ratings_csv)
            _wrote(args.ratings_csv)
        if args.heatmap:
            plot_winrate_matrix(result, args.heatmap)
            _wrote(args.heatmap)
    if args.latency_study:
        grid = [float(x) for x in args.latency_grid.split(",") if x.strip()]
        curve = latency_curve(args.latency_study, grid, args.latency_games or args.games,
                              config=config, reference=Latency.parse(args.latency), seed=args.seed,
                              batch_size=args.batch, show_progress=not args.quiet, runner=runner)
        out["latency"] = curve
        for pt in curve["points"]:
            print(f"{curve['bot']} at {pt['mean_ms']:.0f} ms vs {curve['reference']}: "
                  f"{pt['win_rate']:.3f} [{pt['ci_low']:.3f}, {pt['ci_high']:.3f}]")
        if args.latency_json:
            args.latency_json.parent.mkdir(parents=True, exist_ok=True)
            args.latency_json.write_text(json.dumps(curve, indent=2))
            _wrote(args.latency_json)
        if args.latency_plot:
            plot_latency_curve(curve, args.latency_plot)
            _wrote(args.latency_plot)
    return out


if __name__ == "__main__":
    main()
