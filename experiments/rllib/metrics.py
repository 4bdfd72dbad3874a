"""A run's ``metrics.json``: the arguments, one record per iteration, the speed, the evaluation.

:func:`new_metrics` starts it, :func:`iteration_record` and :func:`speed_record` are its
records, :func:`write_json` writes it whole (through a temporary file, so a reader never sees
half of it), :func:`print_summary` prints what the run found.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from experiments.rllib.config import LEARNER, SINGLE
from spit_env.progress import counted

__all__ = ["new_metrics", "iteration_record", "speed_record", "write_json", "print_summary"]


def new_metrics(args) -> dict:
    """The metrics of a run before its first iteration: its arguments (paths as text)."""
    return {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(args).items()},
            "iterations": [], "speed": None, "final": None}


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def iteration_record(result: dict, seconds: float) -> dict:
    """The figures of one ``algo.train()`` result that metrics.json keeps.

    Args:
        result: the result dict of ``Algorithm.train()``.
        seconds: wall seconds since the learning started.
    """
    runners = result.get("env_runners", {})
    timers = result.get("timers", {})
    returns = runners.get("module_episode_returns_mean", {}) or {}
    module_steps = runners.get("num_module_steps_sampled_lifetime") or {}
    trained = LEARNER if LEARNER in module_steps or LEARNER in returns else SINGLE
    return {
        "iteration": int(result.get("training_iteration", 0)),
        "env_steps": int(_number(result.get("num_env_steps_sampled_lifetime")) or 0),
        "agent_steps": int(sum(_number(v) or 0 for v in
                               (runners.get("num_agent_steps_sampled_lifetime") or {}).values())),
        "learner_steps": int(_number(module_steps.get(trained)) or 0),
        "episodes": int(_number(runners.get("num_episodes_lifetime")) or 0),
        "episode_len_mean": _number(runners.get("episode_len_mean")),
        # single-agent (the vector env): the episode's return is the learner's
        "learner_return_mean": _number(returns.get(trained, runners.get("episode_return_mean"))
                                       if trained == SINGLE else returns.get(trained)),
        "seconds": round(seconds, 3),
        "iteration_seconds": round(float(result.get("time_this_iter_s", 0.0)), 3),
        # RLlib's smoothed timers of the iteration's two phases
        "sample_seconds": _number(timers.get("env_runner_sampling_timer")),
        "learn_seconds": _number(timers.get("learner_update_timer")),
    }


def speed_record(last: dict, train_seconds: float, vector: bool) -> dict:
    """The run's speed: the last iteration's lifetime counts over the learning's wall seconds.

    Args:
        last: the last :func:`iteration_record`.
        train_seconds: wall seconds of the learning loop, > 0.
        vector: whether the run sampled from ``Spit-v0``'s vector env (what an env step is).
    """
    return {
        "train_seconds": round(train_seconds, 2),
        "env_steps": last["env_steps"],
        "agent_steps": last["agent_steps"],
        "learner_steps": last["learner_steps"],
        "episodes": last["episodes"],
        "env_steps_per_second": round(last["env_steps"] / train_seconds, 1),
        "learner_steps_per_second": round(last["learner_steps"] / train_seconds, 1),
        "episodes_per_second": round(last["episodes"] / train_seconds, 2),
        "note": ("env step = one learner decision (the vector env of Spit-v0)" if vector else
                 "env step = one decision epoch of both players; learner steps = the "
                 "learner's own decisions (forced WAITs included)")
                + "; wall time of sampling and learning together, on a shared machine",
    }


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` to ``path`` as indented JSON, replacing the file in one step."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)


def print_summary(metrics: dict, out: Path) -> None:
    """The run's speed, its evaluation (95% Wilson intervals) and its folder, on stdout."""
    s = metrics["speed"]
    print(f"{counted(s['env_steps'], 'env step')} "
          f"({counted(s['learner_steps'], 'learner decision')}) in "
          f"{s['train_seconds']:.0f} s: {s['env_steps_per_second']:,.0f} env steps/s")
    final = metrics.get("final")
    if final:
        print(f"evaluation, {counted(final['deals'], 'duplicate deal')} per opponent "
              "(95% Wilson interval):")
        for name, r in final["results"].items():
            print(f"  vs {name:>8}: {r['win_rate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]  "
                  f"wins {r['wins_a']}, losses {r['wins_b']}, draws {r['draws']}")
    print(f"run folder {out} (checkpoint: {out / 'checkpoint'})")
