"""The shipped model against every heuristic bot, written to docs/results/ppo_shipped.{json,md}.

The games are duplicate deals at equal latency; the table is written with the model file's
SHA-256 (so a test can tell when the figures no longer belong to the shipped file) and its
training run's history. Run::

    python -m experiments.shipped_results --run runs/ppo_long --command "python -m ..."

``--run`` is the run folder the model came from (its ``eval.json`` and ``config.json``: the
evaluations during training, the speed, the arguments); ``--command`` says how it was made. For a
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

__all__ = ["Args", "main", "evaluate_shipped", "markdown"]

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


@dataclass
class Args:
    """Evaluate the shipped PPO model against every heuristic bot and write its results."""

    run: Path | None = None
    """The run folder the shipped model was written from (eval.json, config.json)."""
    command: str | None = None
    """The command(s) that trained it, as shown in the results (required with --run)."""
    previous: Path | None = None
    """Instead of --run and --command: an earlier results file of the same model (the run's
    part is taken from it; the games are played again)."""
    train_minutes: float | None = None
    """Training wall time in minutes, all stages (default: the run folder's learn time)."""
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
    """{bot: PairingResult dict} of the shipped model against every bot of ``agents.BOTS``.

    All bots in one batch (``experiments.ppo.evaluation.evaluate``), with one progress.
    """
    import agents
    from experiments.ppo.evaluation import evaluate
    from spit_env.config import SpitConfig

    return evaluate("ppo", list(agents.BOTS), deals, latency=latency, seed=seed,
                    max_game_ms=SpitConfig().max_game_ms, desc="the shipped model",
                    show_progress=show_progress)


def markdown(result: dict) -> str:
    """The results as a Markdown page."""
    m = result["model"]
    lines = [
        "# The shipped PPO model against the heuristic bots",
        "",
        f"`agents.make(\"ppo\")` plays `{m['file']}` ({m['bytes'] / 1024:.0f} KB, SHA-256 "
        f"`{m['sha256'][:12]}…`). {result['deals']:,} duplicate deals ({2 * result['deals']:,} "
        f"games) per bot, both seats at `{result['latency']}` latency, deals of seed "
        f"{result['seed']}; win rate of the model with 95% Wilson intervals (draws count 1/2).",
        "",
        "| opponent | win rate | 95% interval | wins | losses | draws |",
        "|---|---|---|---|---|---|",
    ]
    for bot, r in result["results"].items():
        lines.append(f"| {bot} | {r['win_rate']:.3f} | [{r['ci_low']:.3f}, {r['ci_high']:.3f}] "
                     f"| {r['wins_a']} | {r['wins_b']} | {r['draws']} |")
    t = result["training"]
    lines += [
        "",
        "## How it was made",
        "",
        "```bash",
        m["command"],
        "```",
        "",
        f"The run trained {m.get('run_timesteps', m['timesteps']):,} learner decisions in "
        f"{m['train_minutes']:.0f} min on the shared 2-core machine (evaluations during training "
        f"included); the shipped model is the one of {m['timesteps']:,} decisions "
        f"({m.get('kept', 'last')} model, see `--keep-best`); network {m['net_arch']} (policy and "
        f"value), written by `python -m experiments.ship_model` (float16 weights, no optimizer "
        f"state).",
        "",
        "Evaluations during training (held-out deals, win rate):",
        "",
        "| timesteps | " + " | ".join(t["history"][0]["results"]) + " |" if t["history"] else "",
        "|---" * (1 + len(t["history"][0]["results"])) + "|" if t["history"] else "",
    ]
    for h in t["history"]:
        lines.append(f"| {h['timesteps']:,} | " + " | ".join(
            f"{r['win_rate']:.3f}" for r in h["results"].values()) + " |")
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    """Command-line entry point."""
    from experiments.cli import tyro_cli

    args = tyro_cli(Args, argv, prog="python -m experiments.shipped_results",
                    description=__doc__.split("\n\n")[0])
    from agents.ppo import SHIPPED_MODEL, shipped_model_path

    path = shipped_model_path()
    if (args.run is None) == (args.previous is None):
        print("error: give --run (with --command) or --previous, not both", file=sys.stderr)
        return 2
    if args.run is not None and not (Path(args.run) / "config.json").is_file():
        print(f"error: --run: no run folder at {str(args.run)!r} (config.json missing)",
              file=sys.stderr)
        return 2
    if args.run is not None and not args.command:
        print("error: --command: say how the model was trained (required with --run)",
              file=sys.stderr)
        return 2
    if args.previous is not None and not Path(args.previous).is_file():
        print(f"error: --previous: no results file at {str(args.previous)!r}", file=sys.stderr)
        return 2
    results = evaluate_shipped(args.deals, args.seed, args.latency, args.progress_bar)
    if args.previous is not None:
        before = json.loads(Path(args.previous).read_text())
        model, training = dict(before["model"]), before["training"]
    else:
        run = json.loads((Path(args.run) / "eval.json").read_text())  # after the games: the
        config = run["config"]                                         # run may be finishing
        model = {
            "command": args.command,
            "timesteps": run["final"]["timesteps"],  # the model evaluated: the kept one
            "run_timesteps": run["speed"]["timesteps"],
            "kept": (run.get("kept_model") or {}).get("kept", "last"),
            "train_minutes": args.train_minutes if args.train_minutes is not None
            else round(run["speed"]["learn_seconds"] / 60, 1),
            "net_arch": config["net_arch"],
        }
        training = {key: run[key] for key in ("config", "history", "episode_reward", "final")}
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
