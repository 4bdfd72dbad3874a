"""One run of ``python -m experiments.train_rllib``, phase by phase.

:func:`train` reads as its phases: set-up (:func:`set_up`: the checks, torch, the run's
config and metrics), the Ray session (:func:`ray_for`: started or joined, its CPUs checked),
the algorithm (:func:`build`), the learning loop with its checkpoints and progress
(:func:`learn`), and the final evaluation (:func:`evaluate_run`) and the run folder
(:func:`finish`). The run folder holds ``checkpoint/``, ``checkpoints/iter_NNNN/`` and
``metrics.json`` (``experiments.rllib.metrics``), rewritten after every iteration.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from experiments.cli.checks import ArgumentError
from experiments.rllib.args import Args, game_config, run_folder, validate
from experiments.rllib.config import build_algorithm, on_vector_env
from experiments.rllib.metrics import (
    iteration_record,
    new_metrics,
    print_summary,
    speed_record,
    write_json,
)
from spit_env.progress import counted

if TYPE_CHECKING:
    from spit_env.config import SpitConfig

__all__ = ["Run", "train", "set_up", "ray_for", "build", "learn", "evaluate", "evaluate_run",
           "finish"]


@dataclass
class Run:
    """What the phases of one run share: its folder, its games' config and its metrics."""

    out: Path
    spit_config: SpitConfig
    metrics: dict


def train(args: Args) -> dict:
    """Train, checkpoint, evaluate; returns the metrics.json content.

    Raises:
        ArgumentError: a bad argument value (see ``experiments.rllib.args.validate``).
        RayMissingError: Ray is not installed.
        RayConnectError: --address cannot be reached or joined.
    """
    run = set_up(args)
    with ray_for(args, run):
        algo = build(args, run)
        try:
            checkpoint = learn(algo, args, run)
        finally:
            algo.stop()  # frees the env runners' CPUs for the evaluation tasks
        evaluate_run(args, run, checkpoint)
    finish(args, run)
    return run.metrics


def set_up(args: Args) -> Run:
    """Check every argument and Ray's presence, set torch's threads; the run before Ray starts.

    Raises:
        ArgumentError: a bad argument value.
        RayMissingError: Ray is not installed.
    """
    validate(args)
    from agents.rllib import require_ray

    require_ray()
    import torch

    torch.set_num_threads(args.torch_threads)
    return Run(out=run_folder(args), spit_config=game_config(args), metrics=new_metrics(args))


@contextlib.contextmanager
def ray_for(args: Args, run: Run):
    """The run's Ray session (``experiments.cluster.connect.ray_session``), its start timed.

    Yields the ``ray`` module once the cluster has the CPUs of the env runners and the run
    folder exists; ``run.metrics["ray"]`` holds the session's facts (:func:`build` adds its own).

    Raises:
        ArgumentError: more env runners than the cluster has CPUs.
        RayConnectError: --address cannot be reached or joined.
    """
    from experiments.cluster.connect import ray_session

    num_cpus = args.num_cpus or max(os.cpu_count() or 1, args.num_env_runners + 1)
    where = "a local Ray on 127.0.0.1" if args.address is None else f"Ray at {args.address}"
    print(f"starting {where}...", file=sys.stderr, flush=True)  # a log line: stderr
    t_ray = time.perf_counter()
    with ray_session(args.address, num_cpus=num_cpus, timeout_s=args.connect_timeout) as ray:
        seconds = time.perf_counter() - t_ray
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if args.num_env_runners > cpus:
            raise ArgumentError(f"--num-env-runners ({args.num_env_runners}) needs that many "
                                f"CPUs; the Ray cluster has {cpus}")
        run.out.mkdir(parents=True, exist_ok=True)
        run.metrics["ray"] = {"address": args.address or "local", "cpus": cpus,
                              "version": ray.__version__, "start_seconds": round(seconds, 2)}
        yield ray


def build(args: Args, run: Run):
    """The algorithm and its env runners (``experiments.rllib.config``), timed."""
    t_build = time.perf_counter()
    algo = build_algorithm(args, run.spit_config)
    seconds = time.perf_counter() - t_build
    facts = run.metrics["ray"]
    facts["build_seconds"] = round(seconds, 2)
    print(f"Ray ready in {facts['start_seconds']:.1f} s ({facts['cpus']} CPUs), the algorithm "
          f"and its {counted(args.num_env_runners, 'env runner')} in {seconds:.1f} s",
          file=sys.stderr, flush=True)
    return algo


def learn(algo, args: Args, run: Run) -> Path:
    """``--iterations`` of ``algo.train()``: a record each, checkpoints, the progress, the speed.

    Every ``--checkpoint-every`` iterations (but the last) the algorithm is saved in
    ``checkpoints/iter_NNNN``, and after the last in ``checkpoint/``; metrics.json is rewritten
    after every iteration and once more with the speed.

    Returns:
        the final checkpoint's folder.
    """
    from spit_env.progress import Progress

    last: dict = {}

    def postfix() -> str | None:
        if not last:
            return None
        ret = last["learner_return_mean"]
        return (f"{counted(last['env_steps'], 'env step')}, learner return "
                f"{'n/a' if ret is None else f'{ret:+.2f}'}")

    bar = Progress(args.iterations, "RLlib training", unit="iterations",
                   enabled=args.progress_bar, postfix=postfix)
    t0 = time.perf_counter()
    for i in range(1, args.iterations + 1):
        last.update(iteration_record(algo.train(), time.perf_counter() - t0))
        run.metrics["iterations"].append(dict(last))
        bar.update(1)
        if args.checkpoint_every and i % args.checkpoint_every == 0 and i < args.iterations:
            algo.save_to_path(str((run.out / "checkpoints" / f"iter_{i:04d}").resolve()))
        write_json(run.out / "metrics.json", run.metrics)
    train_seconds = time.perf_counter() - t0
    bar.close()
    checkpoint = run.out / "checkpoint"
    algo.save_to_path(str(checkpoint.resolve()))
    run.metrics["speed"] = speed_record(last, train_seconds, on_vector_env(args))
    write_json(run.out / "metrics.json", run.metrics)
    return checkpoint


def evaluate(checkpoint: Path, opponents, deals: int, *, latency: str, seed: int,
             max_game_ms: int, runner=None, show_progress: bool = True) -> dict[str, dict]:
    """Win rate of the checkpoint's learner (deterministic) against each opponent.

    Args:
        checkpoint: the algorithm checkpoint (``agents.rllib.find_module_dir``).
        opponents: names or profiles.
        deals: duplicate deals of ``seed`` per opponent (``agents.arena.play_pairing``).
        latency: both seats' latency, a preset name or whole ms.
        seed: the game seed of the deals.
        max_game_ms: simulated ms after which a game is truncated (D16).
        runner: runs the pairings' jobs, as in ``agents.arena.play_pairing`` (None: here).
        show_progress: each opponent's games show their progress (``spit_env.progress``).

    Returns:
        ``{opponent: PairingResult as a dict}`` (win_rate, ci_low, ci_high, games, ...).
    """
    from agents.arena import Player
    from experiments.ppo.evaluation import evaluate as evaluate_player

    me = Player("rllib", "rllib", None, {"path": str(checkpoint)})
    return evaluate_player(me, opponents, deals, latency=latency, seed=seed,
                           max_game_ms=max_game_ms, runner=runner, desc="final evaluation",
                           show_progress=show_progress)


def evaluate_run(args: Args, run: Run, checkpoint: Path) -> None:
    """The final evaluation (``--eval-games`` deals per opponent, as Ray tasks) into metrics."""
    if not args.eval_games:
        return
    from experiments.cluster.tasks import run_jobs_on_ray

    t1 = time.perf_counter()
    results = evaluate(checkpoint, args.eval_opponents, args.eval_games, latency=args.latency,
                       seed=args.eval_seed, max_game_ms=args.eval_max_game_ms,
                       runner=run_jobs_on_ray, show_progress=args.progress_bar)
    run.metrics["final"] = {"deals": args.eval_games, "games_per_opponent": 2 * args.eval_games,
                            "seed": args.eval_seed, "latency": args.latency,
                            "seconds": round(time.perf_counter() - t1, 2), "results": results}
    write_json(run.out / "metrics.json", run.metrics)


def finish(args: Args, run: Run) -> None:
    """The copy of the metrics at ``--json``, and the summary on stdout."""
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_json(args.json, run.metrics)
    print_summary(run.metrics, run.out)
    for path in sorted(run.out.iterdir()):  # the run folder's entries (and --json's copy)
        print(f"wrote {path}{'/' if path.is_dir() else ''}")
    if args.json is not None:
        print(f"wrote {args.json}")
