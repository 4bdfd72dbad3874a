"""The checks of ``experiments.train_ppo``'s arguments (:class:`experiments.ppo.args.Args`).

:func:`validate` checks every value before any work starts, topic by topic (the numbers, the
observation fields, the opponents and their schedule, the evaluation, the start of the run, the
output paths), and reports the first bad one as an ``experiments.cli.checks.ArgumentError`` that
names the flag and what is allowed. :func:`parse_opponent` reads an opponent spec (``--opponent``,
``--bc-teacher``, ``--eval-opponents``); :func:`check_model_file` holds a model file to the
input the flags give.
"""

from __future__ import annotations

import numpy as np

from experiments.cli.checks import (
    ArgumentError,
    check_at_least,
    check_fraction,
    check_game_ms,
    check_json_file,
    check_latency,
    check_layers,
    check_model_zip,
    check_out_folder,
    check_positive,
    flag,
)
from experiments.ppo.args import Args, cloning
from spit_env.rules import OBSERVATION

__all__ = ["validate", "parse_opponent", "check_model_file"]

#: The fields that must be > 0, and those that must be >= 0.
_POSITIVE = ("total_timesteps", "num_envs", "n_steps", "batch_size", "n_epochs", "learning_rate",
             "eval_games", "eval_games_during", "torch_threads", "self_play_every",
             "self_play_pool", "mix_groups", "bc_samples", "bc_batch_size", "bc_learning_rate",
             "progress_lines")
_NOT_NEGATIVE = ("eval_freq", "checkpoint_freq", "ent_coef", "shaping", "bc_steps",
                 "critic_steps")


def parse_opponent(spec: str, what: str = "--opponent") -> list[list[tuple[str, float]]]:
    """Parse an opponent spec into curriculum stages, each a list of (profile, weight).

    "greedy" -> [[("greedy", 1.0)]]; "random:0.3,greedy:0.7" -> [[("random", .3), ("greedy", .7)]];
    "random->greedy@pro" -> [[("random", 1.0)], [("greedy@pro", 1.0)]].

    Raises:
        ArgumentError: an empty part, a bad weight, an unknown policy name (the message lists
            the known ones), a bad latency, or mix members with different latencies (the
            latency belongs to the opponent's seat, one per batch).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ArgumentError(f"{what} must be a non-empty string, got {spec!r}")
    stages = []
    for stage in spec.split("->"):
        members = [_member(item.strip(), spec, what) for item in stage.split(",")]
        if sum(w for _, w in members) <= 0:
            raise ArgumentError(f"{what}: the weights of stage {stage!r} are all 0")
        stages.append(members)
    return stages


def _member(item: str, spec: str, what: str) -> tuple[str, float]:
    """One ``name[:weight]`` of an opponent spec, checked."""
    from spit_env.checks import did_you_mean
    from spit_env.policy import available_policies, missing_extras, parse_profile

    name, _, weight = item.rpartition(":") if ":" in item else (item, "", "1")
    if not name:
        raise ArgumentError(f"{what}: empty policy name in {spec!r}")
    try:
        w = float(weight)
    except ValueError:
        raise ArgumentError(f"{what}: weight {weight!r} of {name!r} is not a number") from None
    if not np.isfinite(w) or w < 0:
        raise ArgumentError(f"{what}: weight of {name!r} must be >= 0, got {weight!r}")
    try:
        base, _ = parse_profile(name)
    except ValueError as err:
        raise ArgumentError(f"{what}: {err}") from None
    known = available_policies()
    if base not in known and missing_extras(base):
        raise ArgumentError(f"{what}: opponent {base!r} needs {', '.join(missing_extras(base))}, "
                            "not installed here")
    if base not in known:  # "network" (or "ppo") is the shipped network
        raise ArgumentError(f"{what}: unknown opponent {base!r} in {spec!r}"
                            f"{did_you_mean(base, known)}; known policies: {known}")
    return name, w


def validate(args: Args) -> list[list[tuple[str, float]]]:
    """Check every value; return the parsed opponent stages (:func:`parse_opponent`).

    Raises:
        ArgumentError: naming the argument and what is allowed.
    """
    _check_numbers(args)
    _check_obs_fields(args)
    stages = _check_opponents(args)
    _check_evaluation(args)
    _check_start(args)
    check_out_folder("--out", args.out)
    check_json_file("--json", args.json)
    return stages


def _check_numbers(args: Args) -> None:
    """The sizes, rates and coefficients, and the sizes that depend on each other."""
    for name in _POSITIVE:
        check_positive(flag(name), getattr(args, name))
    for name in _NOT_NEGATIVE:
        check_at_least(flag(name), getattr(args, name), 0)
    if args.batch_size > args.num_envs * args.n_steps:
        raise ArgumentError(f"--batch-size ({args.batch_size}) must be at most --num-envs * "
                            f"--n-steps ({args.num_envs * args.n_steps})")
    if args.critic_steps and args.num_envs < 2:
        raise ArgumentError(f"--critic-steps > 0 holds out the games of some rows to score the "
                            f"critic's fit: --num-envs must be at least 2, got {args.num_envs}")
    check_fraction("--gamma", args.gamma)
    check_fraction("--gae-lambda", args.gae_lambda, low_open=False)
    check_fraction("--clip-range", args.clip_range)
    check_layers("--net-arch", args.net_arch)
    check_fraction("--self-play-bot-weight", args.self_play_bot_weight, low_open=False)
    if args.curriculum_threshold is not None:
        check_fraction("--curriculum-threshold", args.curriculum_threshold)
    if not np.isfinite(args.pull_coef) or args.pull_coef < 0:
        raise ArgumentError(f"--pull-coef must be a finite number >= 0 (0 = off), got "
                            f"{args.pull_coef}")


def _check_obs_fields(args: Args) -> None:
    """--obs-leave-out names fields of the observation and leaves some."""
    names = [f.name for f in OBSERVATION]
    unknown = sorted(set(args.obs_leave_out) - set(names))
    if unknown or len(set(args.obs_leave_out)) == len(OBSERVATION):
        raise ArgumentError(f"--obs-leave-out must name fields of the observation and leave some, "
                            f"got {list(args.obs_leave_out)} (unknown: {unknown}); the fields: "
                            f"{names}")


def _check_opponents(args: Args) -> list[list[tuple[str, float]]]:
    """--opponent and what schedules it: the row groups, the curriculum, the league weighting."""
    stages = parse_opponent(args.opponent)
    widest = max(len(m) for m in stages)
    needed = widest + (1 if args.self_play else 0)
    if needed > 1 and min(args.mix_groups, args.num_envs) < needed:
        raise ArgumentError(
            f"--mix-groups and --num-envs must both be at least {needed} (one row group per "
            f"opponent of a mix{' plus one for the self-play pool' if args.self_play else ''}), "
            f"got --mix-groups {args.mix_groups}, --num-envs {args.num_envs}")
    if args.curriculum_switch:
        if len(args.curriculum_switch) != len(stages) - 1:
            raise ArgumentError(f"--curriculum-switch needs one fraction per '->' in --opponent "
                                f"({len(stages) - 1}), got {len(args.curriculum_switch)}")
        fr = list(args.curriculum_switch)
        if any(not 0 < f < 1 for f in fr) or fr != sorted(fr):
            raise ArgumentError(
                f"--curriculum-switch must be increasing fractions in (0, 1), got {fr}")
    if args.curriculum_threshold is not None and len(stages) > 1 and args.eval_freq == 0:
        raise ArgumentError(
            "--curriculum-threshold needs evaluations during training (--eval-freq > 0)")
    if args.league_weighting == "losses":
        if widest < 2:
            raise ArgumentError(
                "--league-weighting losses re-weights the members of a mix: it needs a mix in "
                f"--opponent (e.g. greedy:1,racer:1), got {args.opponent!r}")
        if not 0 < args.eval_freq < args.total_timesteps:
            raise ArgumentError(
                "--league-weighting losses re-weights after each evaluation during training: "
                f"--eval-freq must be above 0 and below --total-timesteps "
                f"({args.total_timesteps}), got {args.eval_freq}")
    return stages


def _check_evaluation(args: Args) -> None:
    """The evaluation's bots, deals, latency and game length."""
    if args.keep_best and args.eval_during_seed == args.eval_seed:
        raise ArgumentError(
            f"--keep-best chooses on held-out deals: --eval-during-seed must differ from "
            f"--eval-seed (both {args.eval_seed})")
    for spec in args.eval_opponents:
        if spec != "strongest":
            parse_opponent(spec, "--eval-opponents")
    check_latency("--eval-latency", args.eval_latency)
    check_game_ms("--eval-max-game-ms", args.eval_max_game_ms)


def _check_start(args: Args) -> None:
    """Where the model starts: the warm start's teacher, the pull, --resume and --init-model."""
    if args.bc_steps:
        parse_opponent(args.bc_teacher, "--bc-teacher")
    if args.pull_model is not None and args.pull_coef == 0:
        raise ArgumentError("--pull-model is the policy --pull-coef pulls toward: give "
                            "--pull-coef > 0 with it")
    if args.init_model is not None and args.resume is not None:
        raise ArgumentError("--init-model and --resume both give the starting model: pass one "
                            "(--resume continues a run, --init-model starts a new one)")
    if cloning(args) and args.mask_wait:
        raise ArgumentError(
            f"--mask-wait with a behaviour-cloning warm start (--bc-steps {args.bc_steps}): the "
            f"mask takes WAIT out whenever another move is legal, and --bc-teacher "
            f"{args.bc_teacher!r} may WAIT on purpose, a move the model could not imitate; pass "
            f"--no-mask-wait (the default) or --bc-steps 0")
    if args.resume is not None:
        check_model_zip("--resume", args.resume)
    for name, path in (("--init-model", args.init_model), ("--pull-model", args.pull_model)):
        if path is not None:
            check_model_file(args, path, name)


def check_model_file(args: Args, path, name: str) -> None:
    """Check that the model at ``path`` reads the input the flags give the trained model.

    The input options (--mask-wait, --obs-mask, --racer-features), the observation fields
    (--obs-leave-out) and, for --init-model, the hidden layers (--net-arch) must be the flags'.

    Raises:
        ArgumentError: naming ``name`` (the flag that gives the file), the differing setting
            and the flag that sets it.
    """
    from agents.network import input_options, load_model
    from agents.ppo_model import observation_fields

    check_model_zip(name, path)
    try:
        saved = load_model(path)
    except ValueError as err:
        raise ArgumentError(f"{name}: {err}") from None
    options = input_options(saved)
    for option in ("mask_wait", "obs_mask", "racer_features"):
        on, wanted = options[option], getattr(args, option)
        if on != wanted:
            raise ArgumentError(
                f"{name}: the model at {str(path)!r} has {flag(option)} {'on' if on else 'off'}, "
                f"the flags {'on' if wanted else 'off'}; pass "
                f"{'--' if on else '--no-'}{option.replace('_', '-')} to match it")
    fields = list(getattr(saved.policy, "obs_fields", ()))
    wanted = list(observation_fields(leave_out=args.obs_leave_out))
    if fields != wanted:
        raise ArgumentError(
            f"{name}: the model at {str(path)!r} reads the observation fields {fields}, the flags "
            f"{wanted}; set --obs-leave-out to leave out {sorted(set(wanted) - set(fields))}")
    arch = saved.policy.net_arch
    layers = list(arch["pi"]) if isinstance(arch, dict) else list(arch)
    value_layers = list(arch["vf"]) if isinstance(arch, dict) else layers
    if name == "--init-model" and (layers != value_layers or list(args.net_arch) != layers):
        raise ArgumentError(f"{name}: the model at {str(path)!r} has hidden layers {arch}, the "
                            f"flags --net-arch {list(args.net_arch)}; pass --net-arch "
                            f"{' '.join(map(str, layers))}")
