"""The command line of ``python -m experiments.expert_iteration``: flags and their checks.

:func:`parser` builds the argparse parser (``experiments.cli.ArgumentParser``), :func:`check`
checks every value before any work starts and reports a bad one through ``parser.error`` (exit
status 2) naming the flag and what is allowed; names of players are checked against the registry
and a mistyped one gets the nearest known name.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from experiments.cli import ArgumentParser, player_help, player_names
from experiments.expert.network import VALUE_TARGETS
from experiments.expert.targets import SCORES
from spit_env.checks import did_you_mean

__all__ = ["parser", "check", "parse_mix", "RESUMABLE", "SELF", "NETWORK"]

#: The opponent name that stands for the current network itself.
SELF = "self"
#: The rollout-policy name that stands for the current network.
NETWORK = "network"
#: Flags a resumed run may change: the rest are the run's own (its config.json).
RESUMABLE = ("rounds", "quiet", "resume", "out", "torch_threads")

_PLANNER_ROLLOUTS = (1, 4096)  # agents.planner.PlannerBot's own bounds
_PLANNER_HORIZON_MS = (1, 600_000)


def parser(description: str = "") -> ArgumentParser:
    """The argparse parser of the script (every flag with its help and default)."""
    p = ArgumentParser(prog="python -m experiments.expert_iteration", description=description)
    add = p.add_argument
    add("--rounds", type=int, default=3,
        help="planner-labelled rounds after the behaviour-cloned start (round 0); with --resume "
             "the run goes on up to this many (default: %(default)s)")
    add("--out", type=Path, default=None,
        help="run folder: config.json, state.json, rounds.csv, rounds.json, curve.png, "
             "model.zip (the last round's network) and round_K/ (default: runs/expert_s<seed>)")
    add("--resume", action="store_true",
        help="continue the run in --out from its last finished round, with its own settings "
             "(only --rounds, --quiet and --torch-threads may differ)")
    add("--seed", type=int, default=0,
        help="seed of the training games, the network's initialisation and the fits "
             "(default: %(default)s)")
    add("--num-envs", type=int, default=128,
        help="games played at once while collecting positions (default: %(default)s)")
    add("--labels", type=int, default=12_000,
        help="positions the planner labels per round (decisions with a choice in the "
             "network's games), at least --num-envs (default: %(default)s)")
    add("--bc-teacher", default="racer",
        help=f"the bot cloned in round 0: a policy name ({player_help()}) "
             "(default: %(default)s)")
    add("--bc-labels", type=int, default=60_000,
        help="positions of --bc-teacher's own games labelled in round 0 (its moves, WAITs on "
             "purpose included), at least --num-envs (default: %(default)s)")
    add("--opponents", default="racer:2,greedy:1,chain:1,self:1",
        help="the learner's opponents while collecting: name[:weight],... (policy names; "
             f"'{SELF}' is the learner itself: the current network, --bc-teacher in round 0); "
             "each gets its share of the games "
             "(default: %(default)s)")
    add("--rollouts", type=int, default=16,
        help="planner rollouts per legal move and position, 1-4096 (default: %(default)s)")
    add("--horizon-ms", type=int, default=3000,
        help="planner rollout horizon, simulated ms, 1-600000 (default: %(default)s)")
    add("--rollout-policy", default="racer",
        help=f"the policy of both seats in the planner's rollouts: a policy name, or "
             f"'{NETWORK}' for the current network (default: %(default)s)")
    add("--confidence", type=float, default=1.0,
        help="standard errors a move's gain must exceed for the planner to choose it over the "
             "network's move (its teacher move), >= 0 (default: %(default)s)")
    add("--win-weight", type=float, default=2.0,
        help="the planner's value of a game won within a rollout, on top of the card "
             "difference, >= 0 (default: %(default)s)")
    add("--temperature", type=float, default=0.01,
        help="soft targets: softmax over each position's moves of the planner's mean gain over "
             "the reference move / temperature (value units: card difference / 52 + "
             "win weight), > 0 (default: %(default)s)")
    add("--target-score", choices=SCORES, default="lower",
        help="what the soft targets are a softmax of: each move's mean gain over the network's "
             "move ('mean'), or that gain less --confidence standard errors ('lower', the "
             "planner's own rule: the network's move keeps the mass unless a move beats it "
             "beyond the noise) (default: %(default)s)")
    add("--target-margin", type=float, default=0.01,
        help="subtracted from the score of every move but the network's own in the soft "
             "targets, >= 0 (value units): a move the rollouts cannot tell from the network's "
             "leaves the mass on the network's move (default: %(default)s)")
    add("--value-target", choices=VALUE_TARGETS, default="outcome",
        help="the value head's target: the game's outcome from the learner's seat, the "
             "planner's value of the network's move, or their mean (default: %(default)s)")
    add("--aggregate", action=argparse.BooleanOptionalAction, default=True,
        help="fit each round on the positions of every round so far (DAgger) rather than the "
             "round's own (default: on)")
    add("--fit-steps", type=int, default=1000,
        help="Adam steps of each round's fit (default: %(default)s)")
    add("--bc-fit-steps", type=int, default=3000,
        help="Adam steps of round 0's fit (default: %(default)s)")
    add("--fit-batch-size", type=int, default=512,
        help="positions per fitting step, at most the positions of a round "
             "(default: %(default)s)")
    add("--learning-rate", type=float, default=5e-4,
        help="Adam's learning rate of the fits, > 0 (default: %(default)s)")
    add("--value-coef", type=float, default=0.5,
        help="weight of the value loss beside the policy's cross-entropy, >= 0 "
             "(default: %(default)s)")
    add("--holdout", type=float, default=0.1,
        help="share of each round's new positions kept out of the fits to measure agreement "
             "on, in [0, 0.5] (default: %(default)s)")
    add("--net-arch", default="256,256",
        help="hidden layer sizes of the policy and value MLPs (default: %(default)s)")
    add("--eval-deals", type=int, default=300,
        help="duplicate deals per opponent of each round's evaluation (default: %(default)s)")
    add("--eval-opponents", default="racer",
        help="the bots each round's network plays alone (comma-separated names) "
             "(default: %(default)s)")
    add("--eval-seed", type=int, default=2024,
        help="seed of the evaluation's deals; must differ from --seed (held-out deals) "
             "(default: %(default)s)")
    add("--eval-latency", default="club",
        help="both seats' latency in the evaluation and the training games: a preset name or "
             "whole ms (default: %(default)s)")
    add("--max-game-ms", type=int, default=1_800_000,
        help="simulated ms after which a game (training or evaluation) is truncated and counts "
             "as a draw (D16; the default is SpitConfig's 30 min); lower it only for smoke "
             "tests (default: %(default)s)")
    add("--eval-batch", type=int, default=512,
        help="evaluation games stepped at once (default: %(default)s)")
    add("--torch-threads", type=int, default=1,
        help="torch threads (1: more contend with the games on a small machine) "
             "(default: %(default)s)")
    add("--quiet", action="store_true", help="no progress bars or lines")
    return p


def parse_mix(spec: str, flag: str, extra=()) -> list[tuple[str, float]]:
    """``"racer:2,self:1"`` -> ``[("racer", 2.0), ("self", 1.0)]``.

    Raises:
        ValueError: "<flag>: ..." for an empty member, a bad weight, all weights 0, a name
            repeated or not a registered policy (nor one of ``extra``), with the nearest name.
    """
    known = player_names() + list(extra)
    out = []
    for item in str(spec).split(","):
        name, _, weight = item.strip().partition(":")
        if not name:
            raise ValueError(f"{flag}: an empty name in {spec!r}; give name[:weight],...")
        if name not in known:
            raise ValueError(f"{flag}: unknown player {name!r}{did_you_mean(name, known)}; "
                             f"allowed: {', '.join(known)}")
        try:
            w = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"{flag}: the weight of {name!r} must be a number >= 0, "
                             f"got {weight!r}") from None
        if not w >= 0 or w == float("inf"):
            raise ValueError(f"{flag}: the weight of {name!r} must be a number >= 0, "
                             f"got {weight!r}")
        if name in [n for n, _ in out]:
            raise ValueError(f"{flag}: {name!r} is named twice in {spec!r}")
        out.append((name, w))
    if sum(w for _, w in out) <= 0:
        raise ValueError(f"{flag}: the weights of {spec!r} are all 0")
    return out


def _name(p, flag: str, value: str, extra=()) -> None:
    known = player_names() + list(extra)
    if value not in known:
        p.error(f"{flag}: unknown player {value!r}{did_you_mean(value, known)}; "
                f"allowed: {', '.join(known)}")


def check(p: ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """Check every value of ``args`` (``p.error`` on the first bad one); fill the parsed ones.

    With ``--resume`` the run's saved settings replace every flag but :data:`RESUMABLE`.

    Returns:
        ``args`` with ``opponent_mix`` ([(name, weight)]), ``eval_list`` ([name]) and
        ``arch`` ([int]) added.
    """
    from spit_env.config import SpitConfig
    from spit_env.latency import Latency

    out = args.out if args.out is not None else Path("runs") / f"expert_s{args.seed}"
    if out.exists() and not out.is_dir():
        p.error(f"--out: {str(out)!r} exists and is not a folder")
    state = out / "state.json"
    if args.resume:
        if not state.is_file() or not (out / "config.json").is_file():
            p.error(f"--resume: no run to resume in {str(out)!r} (no state.json and "
                    "config.json); run without --resume first")
        saved = json.loads((out / "config.json").read_text())
        for key, value in saved.items():
            if key not in RESUMABLE and hasattr(args, key):
                setattr(args, key, value)
    elif state.is_file():
        p.error(f"--out: {str(out)!r} already holds a run; pass --resume to continue it or "
                "another --out")
    args.out = out
    if args.rounds < 1:
        p.error(f"--rounds must be an integer >= 1, got {args.rounds}")
    for flag, value in (("--num-envs", args.num_envs), ("--fit-steps", args.fit_steps),
                        ("--bc-fit-steps", args.bc_fit_steps),
                        ("--fit-batch-size", args.fit_batch_size),
                        ("--eval-deals", args.eval_deals), ("--eval-batch", args.eval_batch),
                        ("--torch-threads", args.torch_threads)):
        if value < 1:
            p.error(f"{flag} must be an integer >= 1, got {value}")
    if args.seed < 0 or args.eval_seed < 0:
        p.error(f"--seed and --eval-seed must be integers >= 0, got {args.seed}, "
                f"{args.eval_seed}")
    if args.eval_seed == args.seed:
        p.error(f"--eval-seed must differ from --seed (the evaluation plays held-out deals), "
                f"both {args.seed}")
    for flag, value in (("--labels", args.labels), ("--bc-labels", args.bc_labels)):
        if value < args.num_envs:
            p.error(f"{flag} ({value}) must be at least --num-envs ({args.num_envs}): one step of "
                    "the batch labels up to --num-envs positions")
    if not 0 <= args.holdout <= 0.5:
        p.error(f"--holdout must be in [0, 0.5], got {args.holdout}")
    holdout_kept = int(min(args.labels, args.bc_labels) * (1 - args.holdout))
    if args.fit_batch_size > holdout_kept:
        p.error(f"--fit-batch-size ({args.fit_batch_size}) must be at most the positions a round "
                f"fits on: --labels and --bc-labels less the --holdout share ({holdout_kept})")
    lo, hi = _PLANNER_ROLLOUTS
    if not lo <= args.rollouts <= hi:
        p.error(f"--rollouts must be an integer in {lo}..{hi}, got {args.rollouts}")
    lo, hi = _PLANNER_HORIZON_MS
    if not lo <= args.horizon_ms <= hi:
        p.error(f"--horizon-ms must be an integer in {lo}..{hi}, got {args.horizon_ms}")
    if not args.temperature > 0 or args.temperature == float("inf"):
        p.error(f"--temperature must be a finite number > 0, got {args.temperature}")
    for flag, value in (("--confidence", args.confidence), ("--win-weight", args.win_weight),
                        ("--value-coef", args.value_coef),
                        ("--target-margin", args.target_margin)):
        if not 0 <= value < float("inf"):
            p.error(f"{flag} must be a finite number >= 0, got {value}")
    if not 0 < args.learning_rate < float("inf"):
        p.error(f"--learning-rate must be a finite number > 0, got {args.learning_rate}")
    _name(p, "--bc-teacher", args.bc_teacher)
    _name(p, "--rollout-policy", args.rollout_policy, extra=(NETWORK,))
    try:
        args.opponent_mix = parse_mix(args.opponents, "--opponents", extra=(SELF,))
    except ValueError as err:
        p.error(str(err))
    if len(args.opponent_mix) > args.num_envs:
        p.error(f"--num-envs ({args.num_envs}) must be at least the number of --opponents "
                f"({len(args.opponent_mix)}): each gets its own games")
    args.eval_list = [n.strip() for n in args.eval_opponents.split(",")]
    for name in args.eval_list:
        _name(p, "--eval-opponents", name)
    try:
        args.arch = [int(n) for n in str(args.net_arch).split(",")]
    except ValueError:
        args.arch = []
    if not args.arch or min(args.arch) < 1:
        p.error(f"--net-arch must be positive layer sizes separated by commas, "
                f"got {args.net_arch!r}")
    try:
        Latency.parse(args.eval_latency)
    except ValueError as err:
        p.error(f"--eval-latency: {err}")
    try:
        SpitConfig(max_game_ms=args.max_game_ms)
    except ValueError as err:
        p.error(f"--max-game-ms: {err}")
    return args
