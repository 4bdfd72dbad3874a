"""The run of ``python -m experiments.train_value``, phase by phase.

1. **Set-up**: the run folder and its ``config.json``.
2. **Data**: the sources' games against racer, positions sampled from them and each valued by
   racer rollouts (``experiments.value.data``), job by job here or as Ray tasks (``--ray``:
   the same arrays); or ``--data`` of an earlier run. Written to ``data.npz``.
3. **Fit**: whole games held out (``--holdout``), the network fitted to ``--target`` on the
   rest (``experiments.value.fit``), written to ``value.npz``.
4. **Evaluation**: on the held-out games, the explained variance of every target and the
   calibration (``calibration.png``); with ``--screen``, the planner with the value at a 1 s
   horizon and without it on the shipped screen (``agents.screen``).
5. **Report**: ``report.json`` (the figures, the command's settings and commit), a summary
   line per figure, and a ``wrote`` line per file.
"""

from __future__ import annotations

import json
import time
from functools import partial
from pathlib import Path

import numpy as np

from experiments.cli import code_commit
from experiments.value.args import Args, config_of
from experiments.value.data import ValueData, data_jobs, play_value_jobs
from spit_env.config import SpitConfig
from spit_env.latency import Latency
from spit_env.progress import Progress, counted

__all__ = ["run", "game_config", "plot_calibration", "command_of", "SCREEN_HORIZON_MS"]

#: the horizon of the planners the run screens, with and without its value
SCREEN_HORIZON_MS = 1000


def game_config(args: Args) -> SpitConfig:
    """The games' config: both seats at ``--latency``, truncated after ``--max-game-ms``."""
    return SpitConfig(latency=Latency.parse(args.latency), max_game_ms=args.max_game_ms)


#: the flags that make a value network, as its file records its command
_COMMAND_FLAGS = ("seed", "sources", "games", "rate", "rollouts", "ahead_ms", "game_rollouts",
                  "target", "residual", "hidden", "steps", "data")


def command_of(args: Args) -> str:
    """The command line that makes the run's network again (its file's ``command``)."""
    parts = []
    for name in _COMMAND_FLAGS:
        value = getattr(args, name)
        flag = "--" + name.replace("_", "-")
        if value is None:
            continue
        if isinstance(value, bool):
            parts.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, tuple):
            parts.append(f"{flag} {' '.join(str(v) for v in value)}")
        else:
            parts.append(f"{flag} {value}")
    return "python -m experiments.train_value " + " ".join(parts)


def _collect(args: Args, show: bool) -> tuple[ValueData, float]:
    """The run's positions and targets (phase 2), and the CPU-free wall seconds they took."""
    t = time.perf_counter()
    jobs = data_jobs(args.games, args.games_per_job)
    play = partial(play_value_jobs, sources=args.source_list, rate=args.rate,
                   rollouts=args.rollouts, game_rollouts=args.game_rollouts,
                   ahead_ms=args.ahead_ms, seed=args.seed,
                   config=game_config(args), win_weight=args.win_weight)
    per_id = len(args.source_list)  # every source plays each game id
    with Progress(args.games * per_id, "value data", unit="games", enabled=show) as progress:
        if args.ray:
            from experiments.cluster.connect import ray_session
            from experiments.cluster.tasks import run_jobs_on_ray

            with ray_session(args.address):
                parts = run_jobs_on_ray(jobs, play, lambda _, n: progress(n * per_id))
        else:
            parts = []
            for job in jobs:
                parts += play([job])
                progress(job.count * per_id)
    return ValueData.concat(parts), time.perf_counter() - t


def _screen(value_path: Path, show: bool) -> dict:
    """The planner at a 1 s horizon with the value at ``value_path`` and without it."""
    from agents import screen
    from agents.planner import PlannerBot

    truth = screen.load_truth()
    players = {"without": PlannerBot(horizon_ms=SCREEN_HORIZON_MS),
               "with": PlannerBot(horizon_ms=SCREEN_HORIZON_MS, leaf_value=str(value_path))}
    out = {}
    with Progress(len(players), "screen", unit="players", enabled=show) as progress:
        for name, player in players.items():
            out[name] = screen.score(player, truth)
            progress(1)
    diff, se = screen.paired_difference(out["with"], out["without"])
    return {"horizon_ms": SCREEN_HORIZON_MS, "rollouts": 16,
            **{name: s.to_dict() for name, s in out.items()},
            "with_minus_without": diff, "with_minus_without_se": se}


def plot_calibration(calibration: dict, change: dict, path: Path, title: str) -> None:
    """The mean target over bins of the prediction, one line per target, a PNG of two panels.

    Args:
        calibration: {target: ``experiments.value.fit.calibration_bins`` output}: the values.
        change: the same of the change to come (the values less the card difference now).
        path: the PNG to write.
        title: the figure's title.
    """
    from matplotlib.figure import Figure  # no pyplot: no backend switch in the caller

    fig = Figure(figsize=(10, 4.5))
    axes = fig.subplots(1, 2)
    for ax, data, what in ((axes[0], calibration, "value"),
                           (axes[1], change, "change to come (value less the card difference)")):
        lo, hi = np.inf, -np.inf
        for name, bins in data.items():
            x = np.array([b["pred"] for b in bins])
            y = np.array([b["target"] for b in bins])
            se = np.array([b["se"] for b in bins])
            ax.errorbar(x, y, yerr=1.96 * se, marker="o", ms=3, capsize=2, label=name)
            lo, hi = min(lo, x.min(), y.min()), max(hi, x.max(), y.max())
        if np.isfinite(lo):
            ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--", label="calibrated")
        ax.set_xlabel(f"predicted {what}", fontsize=9)
        ax.set_ylabel("mean target in the bin (95% CI)", fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _summary(report: dict) -> list[str]:
    held = report["holdout"]
    ev, ch = held["explained"], held["explained_change"]
    lines = [f"held out: {counted(held['positions'], 'position')} of "
             f"{counted(held['games'], 'game')}; explained "
             f"variance (of the change to come) ahead {_fmt(ev['ahead'])} ({_fmt(ch['ahead'])}), "
             f"round {_fmt(ev['round'])} ({_fmt(ch['round'])}), game {_fmt(ev['game'])}, outcome "
             f"{_fmt(ev['outcome'])}; of the game's result {_fmt(held['outcome_win'])}"]
    if "screen" in report:
        s = report["screen"]
        lines.append(f"screen, planner at {s['horizon_ms']} ms: gain per decision "
                     f"{s['with']['gain']:+.5f} with the value, {s['without']['gain']:+.5f} "
                     f"without (paired difference {s['with_minus_without']:+.5f} ± "
                     f"{s['with_minus_without_se']:.5f})")
    return lines


def _strict(value):
    """``value`` as strict JSON has it: NaN and infinities as None, in nested lists and dicts."""
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def run(args: Args, show: bool = True) -> dict:
    """Run the phases of ``args`` (checked by ``experiments.value.args.check``); the report."""
    from experiments.value.fit import evaluate, fit_value, split_by_game

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config_of(args), indent=2))
    if args.data is not None:
        data, data_s = ValueData.load(args.data), 0.0
    else:
        data, data_s = _collect(args, show)
    data.save(out / "data.npz")
    train, held = split_by_game(data, args.holdout, args.seed)
    meta = dict(command=command_of(args), commit=code_commit(short=True),
                win_weight=args.win_weight, ahead_ms=data.ahead_ms, positions=int(train.sum()))
    t = time.perf_counter()
    with Progress(args.steps, "fit", unit="steps", enabled=show) as progress:
        net, losses = fit_value(data.take(train), args.target, residual=args.residual,
                                hidden=args.hidden,
                                steps=args.steps, batch_size=args.batch_size,
                                learning_rate=args.learning_rate, seed=args.seed,
                                threads=args.torch_threads, meta=meta, progress=progress)
    fit_s = time.perf_counter() - t
    figures = evaluate(net, data.take(held))
    net.meta["holdout"] = _strict({k: figures[k] for k in ("positions", "games", "explained",
                                                    "explained_change", "corr", "outcome_win")})
    net.save(out / "value.npz")
    plot_calibration({k: v for k, v in figures["calibration"].items() if k != "mix" and v},
                     {k: v for k, v in figures["calibration_change"].items()
                      if k in ("ahead", "round") and v},
                     out / "calibration.png",
                     f"value network ({args.target} target), "
                     f"{counted(figures['games'], 'held-out game')}")
    report = {"settings": config_of(args), "commit": meta["commit"], "positions": len(data),
              "games": int(np.unique(data.game_id).size), "data_seconds": round(data_s, 1),
              "fit_seconds": round(fit_s, 1), "losses": [round(x, 5) for x in losses],
              "holdout": figures}
    report = _strict(report)
    if args.screen:
        report["screen"] = _screen(out / "value.npz", show)
    (out / "report.json").write_text(json.dumps(_strict(report), indent=2))
    for line in _summary(report):
        print(line, flush=True)
    for path in sorted(out.iterdir()):
        print(f"wrote {path}")
    return report
