"""The command line of ``python -m experiments.expert_iteration``: its flags and their checks.

:class:`Args` holds one documented field per flag (``experiments.cli.tyro_cli`` makes the
command line of it, each field's docstring its help). :func:`check` checks every value before
any work starts, topic by topic, and reports the first bad one as an
``experiments.cli.checks.ArgumentError`` naming the flag and what is allowed; names of players
are checked against the registry and a mistyped one gets the nearest known name. With
``--resume`` the run's own settings (its config.json) replace every flag but :data:`RESUMABLE`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Literal

from experiments.cli import player_names
from experiments.cli.checks import (
    ArgumentError,
    check_at_least,
    check_game_ms,
    check_latency,
    check_layers,
    check_out_folder,
    check_players,
    check_positive,
)

__all__ = ["Args", "SMOKE", "check", "config_of", "parse_mix", "parse_layers", "RESUMABLE", "SELF",
           "NETWORK"]

#: The opponent name that stands for the current network itself.
SELF = "self"
#: The rollout-policy name that stands for the current network.
NETWORK = "network"
#: Flags a resumed run may change: the rest are the run's own (its config.json; --smoke is
#: not saved, the values it gave are).
RESUMABLE = ("rounds", "quiet", "resume", "out", "torch_threads", "smoke")

_PLANNER_ROLLOUTS = (1, 4096)  # agents.planner.PlannerBot's own bounds
_PLANNER_HORIZON_MS = (1, 600_000)


@dataclass
class Args:
    """Expert iteration on Spit: the planner labels the network's own moves, the network fits."""

    smoke: bool = False
    """A quick run of the whole pipeline at toy size (round 0's cloning, one planner-labelled
    round, their evaluations and the run folder, runs/expert_smoke_s<seed>), in under a
    minute: the values of SMOKE in experiments/expert/args.py for every flag not given on the
    command line (a flag given keeps its value). Its figures mean nothing."""
    rounds: int = 3
    """Planner-labelled rounds after the behaviour-cloned start (round 0); with --resume the run
    goes on up to this many."""
    out: Path | None = None
    """Run folder: config.json, state.json, rounds.csv, rounds.json, curve.png, model.zip (the
    last round's network) and round_K/; None means runs/expert_s<seed> (with --smoke
    runs/expert_smoke_s<seed>)."""
    resume: bool = False
    """Continue the run in --out from its last finished round, with its own settings (only
    --rounds, --quiet and --torch-threads may differ)."""
    seed: int = 0
    """Seed of the training games, the network's initialisation and the fits."""
    num_envs: int = 128
    """Games played at once while collecting positions."""
    labels: int = 12_000
    """Positions the planner labels per round (decisions with a choice in the network's games),
    at least --num-envs."""
    bc_teacher: str = "racer"
    """The bot cloned in round 0: a policy name ({players})."""
    bc_labels: int = 60_000
    """Positions of --bc-teacher's own games labelled in round 0 (its moves, WAITs on purpose
    included), at least --num-envs."""
    opponents: str = "racer:2,greedy:1,chain:1,self:1"
    """The learner's opponents while collecting: name[:weight],... (policy names; '{self}' is
    the learner itself: the current network, --bc-teacher in round 0); each gets its share of
    the games."""
    rollouts: int = 16
    """Planner rollouts per legal move and position, 1-4096."""
    horizon_ms: int = 3000
    """Planner rollout horizon, simulated ms, 1-600000."""
    rollout_policy: str = "racer"
    """The policy of both seats in the planner's rollouts: a policy name, or '{network}' for
    the current network."""
    confidence: float = 1.0
    """Standard errors a move's gain must exceed for the planner to choose it over the network's
    move (its teacher move), >= 0."""
    win_weight: float = 2.0
    """The planner's value of a game won within a rollout, on top of the card difference, >= 0."""
    temperature: float = 0.01
    """Soft targets: softmax over each position's moves of the planner's mean gain over the
    reference move / temperature (value units: card difference / 52 + win weight), > 0."""
    target_score: Literal["lower", "mean"] = "lower"
    """What the soft targets are a softmax of: each move's mean gain over the network's move
    ('mean'), or that gain less --confidence standard errors ('lower', the planner's own rule:
    the network's move keeps the mass unless a move beats it beyond the noise)."""
    target_margin: float = 0.01
    """Subtracted from the score of every move but the network's own in the soft targets, >= 0
    (value units): a move the rollouts cannot tell from the network's leaves the mass on the
    network's move."""
    value_target: Literal["outcome", "plan", "mean"] = "outcome"
    """The value head's target: the game's outcome from the learner's seat, the planner's value
    of the network's move, or their mean."""
    aggregate: bool = True
    """Fit each round on the positions of every round so far (DAgger) rather than the round's
    own."""
    fit_steps: int = 1000
    """Adam steps of each round's fit."""
    bc_fit_steps: int = 3000
    """Adam steps of round 0's fit."""
    fit_batch_size: int = 512
    """Positions per fitting step, at most the positions of a round."""
    learning_rate: float = 5e-4
    """Adam's learning rate of the fits, > 0."""
    value_coef: float = 0.5
    """Weight of the value loss beside the policy's cross-entropy, >= 0."""
    holdout: float = 0.1
    """Share of each round's new positions kept out of the fits to measure agreement on, in
    [0, 0.5]."""
    net_arch: str = "256,256"
    """Hidden layer sizes of the policy and value MLPs, separated by commas."""
    eval_deals: int = 300
    """Duplicate deals per opponent of each round's evaluation."""
    eval_opponents: str = "racer"
    """The bots each round's network plays alone (comma-separated names)."""
    eval_seed: int = 2024
    """Seed of the evaluation's deals; must differ from --seed (held-out deals)."""
    eval_latency: str = "club"
    """Both seats' latency in the evaluation and the training games: a preset name or whole
    ms."""
    max_game_ms: int = 1_800_000
    """Simulated ms after which a game (training or evaluation) is truncated and counts as a
    draw (D16; the default is SpitConfig's 30 min); lower it only for smoke tests."""
    eval_batch: int = 512
    """Evaluation games stepped at once."""
    torch_threads: int = 1
    """Torch threads (1: more contend with the games on a small machine)."""
    quiet: bool = False
    """No progress bars or lines."""

    # what the flags parse to (valid once check() has passed)
    @property
    def arch(self) -> list[int]:
        """--net-arch as layer sizes."""
        return parse_layers(self.net_arch)

    @property
    def opponent_mix(self) -> list[tuple[str, float]]:
        """--opponents as [(name, weight)]."""
        return parse_mix(self.opponents, "--opponents", extra=(SELF,))

    @property
    def eval_list(self) -> list[str]:
        """--eval-opponents as names."""
        return [n.strip() for n in self.eval_opponents.split(",")]


#: The values ``--smoke`` gives every field not set on the command line: one labelled round of
#: 16 games, 256 positions labelled with 2 rollouts of 1 s, round 0 on 1,024 positions, short
#: fits, 10 evaluation deals, games cut at 2 min.
SMOKE = dict(rounds=1, num_envs=16, labels=256, bc_labels=1024, rollouts=2, horizon_ms=1000,
             fit_steps=50, bc_fit_steps=100, fit_batch_size=64, net_arch="64,64", eval_deals=10,
             max_game_ms=120_000)


def config_of(args: Args) -> dict:
    """A run's own settings, config.json's content: every flag but :data:`RESUMABLE`."""
    return {k: v for k, v in asdict(args).items() if k not in RESUMABLE}


def parse_layers(spec: str) -> list[int]:
    """``"256,256"`` -> ``[256, 256]``.

    Raises:
        ArgumentError: "--net-arch ..." unless positive integers separated by commas.
    """
    return list(check_layers("--net-arch", spec))


def parse_mix(spec: str, flag: str, extra=()) -> list[tuple[str, float]]:
    """``"racer:2,self:1"`` -> ``[("racer", 2.0), ("self", 1.0)]``.

    Raises:
        ArgumentError: "<flag>: ..." for an empty member, a bad weight, all weights 0, a name
            repeated or not a registered policy (nor one of ``extra``), with the nearest name.
    """
    out = []
    for item in str(spec).split(","):
        name, _, weight = item.strip().partition(":")
        if not name:
            raise ArgumentError(f"{flag}: an empty name in {spec!r}; give name[:weight],...")
        _check_player(flag, name, extra)
        try:
            w = float(weight) if weight else 1.0
        except ValueError:
            raise ArgumentError(f"{flag}: the weight of {name!r} must be a number >= 0, "
                                f"got {weight!r}") from None
        if not w >= 0 or w == float("inf"):
            raise ArgumentError(f"{flag}: the weight of {name!r} must be a number >= 0, "
                                f"got {weight!r}")
        if name in [n for n, _ in out]:
            raise ArgumentError(f"{flag}: {name!r} is named twice in {spec!r}")
        out.append((name, w))
    if sum(w for _, w in out) <= 0:
        raise ArgumentError(f"{flag}: the weights of {spec!r} are all 0")
    return out


def _check_player(flag: str, name: str, extra=()) -> None:
    """``name`` is a registered player (or one of ``extra``), given by its name alone."""
    ((_, latency),) = check_players(flag, [name], allowed=player_names(), extra=extra)
    if latency is not None:
        raise ArgumentError(f"{flag}: {name!r} is a profile; give the player's name alone")


def check(args: Args) -> Args:
    """Check every value of ``args``; with --resume, take the run's own settings.

    Returns:
        ``args`` with ``out`` set (the default folder if none was given) and, with --resume,
        the run's config.json in place of every flag but :data:`RESUMABLE`.

    Raises:
        ArgumentError: the first bad value, naming its flag and what is allowed.
    """
    args = _run_folder(args)
    _check_sizes(args)
    _check_seeds(args)
    _check_planner(args)
    _check_fit(args)
    _check_players(args)
    parse_layers(args.net_arch)
    check_latency("--eval-latency", args.eval_latency)
    check_game_ms("--max-game-ms", args.max_game_ms)
    return args


def _run_folder(args: Args) -> Args:
    """--out and --resume: a new run in a folder without one, or the run resumed."""
    out = Path(args.out) if args.out is not None else \
        Path("runs") / f"expert{'_smoke' if args.smoke else ''}_s{args.seed}"
    check_out_folder("--out", out)
    state = out / "state.json"
    if not args.resume:
        if state.is_file():
            raise ArgumentError(f"--out: {str(out)!r} already holds a run; pass --resume to "
                                "continue it or another --out")
        return replace(args, out=out)
    if not state.is_file() or not (out / "config.json").is_file():
        raise ArgumentError(f"--resume: no run to resume in {str(out)!r} (no state.json and "
                            "config.json); run without --resume first")
    saved = json.loads((out / "config.json").read_text())
    names = {f.name for f in fields(Args)}
    return replace(args, out=out, **{k: v for k, v in saved.items()
                                     if k not in RESUMABLE and k in names})


def _check_sizes(args: Args) -> None:
    """The rounds, the batch sizes and the label budgets."""
    check_at_least("--rounds", args.rounds, 1)
    for name in ("num_envs", "fit_steps", "bc_fit_steps", "fit_batch_size", "eval_deals",
                 "eval_batch", "torch_threads"):
        check_at_least("--" + name.replace("_", "-"), getattr(args, name), 1)
    for flag, value in (("--labels", args.labels), ("--bc-labels", args.bc_labels)):
        if value < args.num_envs:
            raise ArgumentError(f"{flag} ({value}) must be at least --num-envs "
                                f"({args.num_envs}): one step of the batch labels up to "
                                "--num-envs positions")


def _check_seeds(args: Args) -> None:
    """The seeds: >= 0, and the evaluation's apart from the training's."""
    check_at_least("--seed", args.seed, 0)
    check_at_least("--eval-seed", args.eval_seed, 0)
    if args.eval_seed == args.seed:
        raise ArgumentError(f"--eval-seed must differ from --seed (the evaluation plays "
                            f"held-out deals), both {args.seed}")


def _check_planner(args: Args) -> None:
    """The planner's search and its soft targets."""
    for flag, value, (lo, hi) in (("--rollouts", args.rollouts, _PLANNER_ROLLOUTS),
                                  ("--horizon-ms", args.horizon_ms, _PLANNER_HORIZON_MS)):
        if not lo <= value <= hi:
            raise ArgumentError(f"{flag} must be an integer in {lo}..{hi}, got {value}")
    check_positive("--temperature", args.temperature)
    for flag, value in (("--confidence", args.confidence), ("--win-weight", args.win_weight),
                        ("--target-margin", args.target_margin)):
        check_at_least(flag, value, 0)


def _check_fit(args: Args) -> None:
    """The fits: the held-out share, the batch it leaves room for, the rate and the weights."""
    if not 0 <= args.holdout <= 0.5:
        raise ArgumentError(f"--holdout must be in [0, 0.5], got {args.holdout}")
    kept = int(min(args.labels, args.bc_labels) * (1 - args.holdout))
    if args.fit_batch_size > kept:
        raise ArgumentError(f"--fit-batch-size ({args.fit_batch_size}) must be at most the "
                            f"positions a round fits on: --labels and --bc-labels less the "
                            f"--holdout share ({kept})")
    check_positive("--learning-rate", args.learning_rate)
    check_at_least("--value-coef", args.value_coef, 0)


def _check_players(args: Args) -> None:
    """The teacher, the rollout policy, the opponents and the evaluation's bots."""
    _check_player("--bc-teacher", args.bc_teacher)
    _check_player("--rollout-policy", args.rollout_policy, extra=(NETWORK,))
    mix = parse_mix(args.opponents, "--opponents", extra=(SELF,))
    if len(mix) > args.num_envs:
        raise ArgumentError(f"--num-envs ({args.num_envs}) must be at least the number of "
                            f"--opponents ({len(mix)}): each gets its own games")
    for name in args.eval_list:
        _check_player("--eval-opponents", name)
