"""The shipped network against every heuristic bot, written to docs/results/ppo_shipped.{json,md}.

The games are duplicate deals at equal latency; the table is written with the model file's
SHA-256 (so a test can tell when the figures no longer belong to the shipped file) and its
training run's history. Run::

    python -m experiments.shipped_results --run runs/ppo_long --command "python -m ..."

``--run`` is the run folder the model came from, with ``--command`` saying how it was made: a
``train_ppo`` run (its ``eval.json`` and ``config.json``: the evaluations during training, the
speed, the arguments) or an ``expert_iteration`` run (its ``rounds.json``, ``state.json`` and
``config.json``: one row per finished round, the network alone against the round's evaluation
opponents, the labels and their speed). For a
file re-written from the same model (``experiments.ship_model`` converting an older format),
``--previous docs/results/ppo_shipped.json`` takes the run's part from the results it had, and
the games are played again with the new file.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from spit_env.progress import counted

__all__ = ["Args", "main", "evaluate_shipped", "markdown"]

#: The program name of the usage line and of every error ("{PROG}: error: ...").
PROG = "python -m experiments.shipped_results"

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


@dataclass
class Args:
    """Evaluate the shipped network against every heuristic bot and write its results."""

    run: Path | None = None
    """The run folder the shipped model was written from: a train_ppo run (eval.json,
    config.json) or an expert_iteration run (rounds.json, state.json, config.json)."""
    command: str | None = None
    """The command(s) that trained it, as shown in the results (required with --run)."""
    previous: Path | None = None
    """Instead of --run and --command: an earlier results file of the same model (the run's
    part is taken from it; the games are played again)."""
    train_minutes: float | None = None
    """Training wall time in minutes, all stages (default: the run folder's learn time, or the
    sum of an expert-iteration run's rounds)."""
    deals: int = 1000
    """Duplicate deals per bot (2 games each)."""
    seed: int = 2024
    """Seed of the deals (train_ppo's evaluation seed)."""
    latency: str = "club"
    """Latency of both seats."""
    out: Path = RESULTS / "ppo_shipped"
    """Output path without suffix: .json and .md are written."""
    progress_bar: bool = True
    """Show the games' progress on stderr: a bar on a terminal, plain lines with the rate and
    the ETA in a log file."""


def evaluate_shipped(deals: int, seed: int, latency: str, show_progress: bool = True) -> dict:
    """{bot: PairingResult dict} of the shipped network against every bot of ``agents.BOTS``.

    All bots in one batch (``experiments.ppo.evaluation.evaluate``), with one progress.
    """
    import agents
    from experiments.ppo.evaluation import evaluate
    from spit_env.config import SpitConfig

    return evaluate("network", list(agents.BOTS), deals, latency=latency, seed=seed,
                    max_game_ms=SpitConfig().max_game_ms, desc="the shipped network",
                    show_progress=show_progress)


def markdown(result: dict) -> str:
    """The results as a Markdown page."""
    m = result["model"]
    lines = [
        "# The shipped policy network against the heuristic bots",
        "",
        f"`agents.make(\"network\")` (`\"ppo\"`: its older name) plays `{m['file']}` "
        f"({m['bytes'] / 1024:.0f} KB, SHA-256 "
        f"`{m['sha256'][:12]}…`). {counted(result['deals'], 'duplicate deal')} "
        f"({counted(2 * result['deals'], 'game')}) per bot, both seats at `{result['latency']}` "
        "latency, deals of seed "
        f"{result['seed']}; win rate of the model with 95% Wilson intervals (draws count 1/2).",
        "",
        "| opponent | win rate | 95% interval | wins | losses | draws |",
        "|---|---|---|---|---|---|",
    ]
    for bot, r in result["results"].items():
        lines.append(f"| {bot} | {r['win_rate']:.3f} | [{r['ci_low']:.3f}, {r['ci_high']:.3f}] "
                     f"| {r['wins_a']} | {r['wins_b']} | {r['draws']} |")
    t = result["training"]
    lines += ["", "## How it was made", "", "```bash", m["command"], "```", ""]
    if t.get("pipeline") == "expert_iteration":
        lines += _expert_iteration_lines(m, t)
    else:
        lines += _train_ppo_lines(m, t)
    return "\n".join(lines).rstrip() + "\n"


def _train_ppo_lines(m: dict, t: dict) -> list[str]:
    lines = [
        f"The run trained {m.get('run_timesteps', m['timesteps']):,} learner decisions in "
        f"{m['train_minutes']:.0f} min on the shared 2-core machine (evaluations during training "
        f"included); the shipped model is the one of {m['timesteps']:,} decisions "
        f"({m.get('kept', 'last')} model, see `--keep-best`); network {m['net_arch']} (policy and "
        f"value), written by `python -m experiments.ship_model` (float16 weights, no optimizer "
        f"state).",
        "",
        "Evaluations during training (held-out deals, win rate):",
        "",
    ]
    if t["history"]:
        names = list(t["history"][0]["results"])
        lines += ["| timesteps | " + " | ".join(names) + " |", "|---" * (1 + len(names)) + "|"]
    for h in t["history"]:
        lines.append(f"| {h['timesteps']:,} | " + " | ".join(
            f"{r['win_rate']:.3f}" for r in h["results"].values()) + " |")
    return lines


def _expert_iteration_lines(m: dict, t: dict) -> list[str]:
    rounds = t["rounds"]
    opponents = [k[len("win_rate_"):] for k in rounds[0] if k.startswith("win_rate_")]
    config = t["config"]
    lines = [
        f"Expert iteration (`python -m experiments.expert_iteration`): round 0 clones "
        f"{config['bc_teacher']} ({rounds[0]['labels']:,} labels), then "
        f"{counted(len(rounds) - 1, 'round')} in which the planner "
        f"({counted(config['rollouts'], 'rollout')}, {config['horizon_ms']:,} ms horizon) "
        "labels the "
        f"network's own positions and the network fits them; {m['train_minutes']:.0f} min in "
        f"all on the shared 2-core machine (evaluations included). The shipped model is the "
        f"network of round {rounds[-1]['round']}, {m['net_arch']} (policy and value), written "
        f"by `python -m experiments.ship_model` (float16 weights, no optimizer state).",
        "",
        f"Rounds (the network alone against {', '.join(opponents)}, "
        f"{counted(config['eval_deals'], 'duplicate deal')} of seed {config['eval_seed']}; how "
        f"often the planner departs from the network's move, and the share of those departures the "
        f"round's fitted network reproduces on held-out positions):",
        "",
        "| round | teacher | labels | labels/s | departures | reproduced | minutes | "
        + " | ".join(f"vs {o}" for o in opponents) + " |",
        "|---" * (7 + len(opponents)) + "|",
    ]
    for r in rounds:
        dep = "-" if r["departure_agreement"] is None else f"{r['departure_agreement']:.3f}"
        lines.append(
            f"| {r['round']} | {r['teacher']} | {r['labels']:,} | {r['labels_per_s']:,.0f} | "
            f"{r['departure_rate']:.3f} | {dep} | {r['seconds'] / 60:.1f} | " + " | ".join(
                f"{r[f'win_rate_{o}']:.3f} [{r[f'ci_low_{o}']:.3f}, {r[f'ci_high_{o}']:.3f}]"
                for o in opponents) + " |")
    return lines


def _run_part(run_dir: Path, command: str, train_minutes: float | None) -> tuple[dict, dict]:
    """(model, training) parts of the results from a train_ppo or expert_iteration run folder."""
    config = json.loads((run_dir / "config.json").read_text())
    if (run_dir / "rounds.json").is_file():  # expert_iteration
        finished = json.loads((run_dir / "state.json").read_text())["finished_round"]
        rounds = [r for r in json.loads((run_dir / "rounds.json").read_text())
                  if r["round"] <= finished]
        model = {
            "command": command,
            "pipeline": "expert_iteration",
            "rounds": finished,
            "labels": sum(r["labels"] for r in rounds),
            "train_minutes": train_minutes if train_minutes is not None
            else round(sum(r["seconds"] for r in rounds) / 60, 1),
            "net_arch": [int(n) for n in str(config["net_arch"]).split(",")],
        }
        return model, {"pipeline": "expert_iteration", "config": config, "rounds": rounds}
    run = json.loads((run_dir / "eval.json").read_text())
    model = {
        "command": command,
        "pipeline": "train_ppo",
        "timesteps": run["final"]["timesteps"],  # the model evaluated: the kept one
        "run_timesteps": run["speed"]["timesteps"],
        "kept": (run.get("kept_model") or {}).get("kept", "last"),
        "train_minutes": train_minutes if train_minutes is not None
        else round(run["speed"]["learn_seconds"] / 60, 1),
        "net_arch": run["config"]["net_arch"],
    }
    return model, {key: run[key] for key in ("config", "history", "episode_reward", "final")}


def main(argv=None) -> int:
    """Command-line entry point."""
    from experiments.cli import tyro_cli

    args = tyro_cli(Args, argv, prog=PROG,
                    description=__doc__.split("\n\n")[0])
    from agents.network import SHIPPED_MODEL, shipped_model_path

    path = shipped_model_path()
    if (args.run is None) == (args.previous is None):
        print(f"{PROG}: error: give --run (with --command) or --previous, not both",
              file=sys.stderr)
        return 2
    if args.run is not None:
        run_dir = Path(args.run)
        kind = [f for f in ("eval.json", "rounds.json") if (run_dir / f).is_file()]
        if not (run_dir / "config.json").is_file() or not kind or (
                kind == ["rounds.json"] and not (run_dir / "state.json").is_file()):
            print(f"{PROG}: error: --run: no finished train_ppo or expert_iteration run at "
                  f"{str(args.run)!r} (config.json with eval.json, or config.json with "
                  f"rounds.json and state.json)", file=sys.stderr)
            return 2
    if args.run is not None and not args.command:
        print(f"{PROG}: error: --command: say how the model was trained (required with --run)",
              file=sys.stderr)
        return 2
    if args.previous is not None and not Path(args.previous).is_file():
        print(f"{PROG}: error: --previous: no results file at {str(args.previous)!r}",
              file=sys.stderr)
        return 2
    results = evaluate_shipped(args.deals, args.seed, args.latency, args.progress_bar)
    if args.previous is not None:
        before = json.loads(Path(args.previous).read_text())
        model, training = dict(before["model"]), before["training"]
    else:
        # after the games: the run may have been finishing meanwhile
        model, training = _run_part(Path(args.run), args.command, args.train_minutes)
    model.update(file=f"agents/{SHIPPED_MODEL}",
                 sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                 bytes=path.stat().st_size)
    result = {"model": model, "deals": args.deals, "seed": args.seed, "latency": args.latency,
              "results": results, "training": training}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    print(out.with_suffix(".md").read_text())
    print(f"wrote {out.with_suffix('.json')}\nwrote {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
