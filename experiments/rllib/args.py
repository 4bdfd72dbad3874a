"""The command line of ``python -m experiments.train_rllib``: the :class:`Args` and their checks.

tyro reads :class:`Args` (each field's docstring is its help, ``experiments.cli.tyro_cli``);
:func:`validate` checks every value before any work starts and reports the first bad one as an
``experiments.cli.checks.ArgumentError`` naming the flag and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from experiments.cli.checks import (
    ArgumentError,
    check_at_least,
    check_fraction,
    check_game_ms,
    check_json_file,
    check_latency,
    check_layers,
    check_out_folder,
    check_players,
    check_positive,
    flag,
)

__all__ = ["Args", "SMOKE", "rllib_bots", "validate", "game_config", "run_folder"]


@dataclass
class Args:
    """Train RLlib PPO on Spit (spit-env) on Ray and evaluate it against the bots."""

    smoke: bool = False
    """A quick run of the whole pipeline at toy size (Ray, two iterations, a checkpoint, the
    final evaluation, run folder runs/rllib_<mode>_s<seed>_smoke): the values of SMOKE in
    experiments/rllib/args.py for every flag not given on the command line (a flag given keeps
    its value). Its figures mean nothing."""
    mode: Literal["bot", "self-play"] = "bot"
    """Policy mapping: "bot" = the learner in one seat (drawn per game) against --opponent,
    which RLlib runs but does not train; "self-play" = one shared policy in both seats."""
    opponent: str = "greedy"
    """The bot of --mode bot: one of {rllib_bots}."""
    vector_env: bool = True
    """--mode bot on Spit-v0's native vector env (one batched core per env runner, the bot
    inside it); --no-vector-env: on the PettingZoo path, the bot as an untrained RLlib module."""
    iterations: int = 100
    """Training iterations (each samples --train-batch-size env steps, then updates)."""
    seed: int = 0
    """Seed of RLlib (network initialisation, env runners' games and sampling)."""
    out: Path | None = None
    """Run folder; None means runs/rllib_<mode>_s<seed> (with --smoke ..._smoke)."""
    address: str | None = None
    """Ray to run on: None = a local Ray started on 127.0.0.1 for this run; "auto" = the
    cluster started with `ray start` on this machine; HOST:PORT = a head node's address."""
    num_env_runners: int = 2
    """Env runners (Ray actors of one CPU each) sampling in parallel; 0 = sample in this process."""
    num_envs_per_runner: int | None = None
    """Games each env runner steps at once (one batched forward pass of the module for all);
    None = 64 for --mode bot on the vector env (its num_envs: one batched core, so more games
    cost little), 8 otherwise (one Python env object per game)."""
    num_cpus: int | None = None
    """CPUs of the local Ray (without --address); None = max(this machine's, env runners + 1)."""
    connect_timeout: float = 30.0
    """Seconds allowed to reach and join --address before giving up with an error."""
    latency: str = "club"
    """Latency of both seats: a preset name (pro, club, novice) or whole ms."""
    train_batch_size: int = 4000
    """Env steps sampled per iteration (an env step is one learner decision with --mode bot on
    the vector env, one decision epoch of both players otherwise)."""
    minibatch_size: int = 500
    """Minibatch size of the PPO update, in agent steps."""
    num_epochs: int = 4
    """Passes over each iteration's batch."""
    lr: float = 3e-4
    """Adam learning rate."""
    gamma: float = 0.999
    """Discount factor per decision epoch."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    entropy_coeff: float = 0.01
    """Entropy bonus coefficient."""
    hiddens: tuple[int, ...] = (256, 256)
    """Hidden layer sizes of the policy and value MLPs (separate networks, tanh)."""
    mask_wait: bool = True
    """Take WAIT out of the learner's legal moves whenever it has another one (as train_ppo
    does): the policy never idles when it can act. Kept in the checkpoint."""
    obs_mask: bool = True
    """Feed the legal mask (23 floats) to the network beside the observation."""
    checkpoint_every: int = 10
    """Iterations between checkpoints in <out>/checkpoints/iter_NNNN, but the last iteration's,
    which is <out>/checkpoint (0 = only the final one, and no checkpoints/)."""
    eval_games: int = 1000
    """Duplicate deals of the final evaluation against each opponent (0 = no evaluation)."""
    eval_opponents: tuple[str, ...] = ("random", "greedy")
    """Bots the final evaluation plays (names or profiles of {rllib_bots})."""
    eval_seed: int = 2024
    """Seed of the evaluation deals (train_ppo's default, so the two scripts' figures compare)."""
    eval_max_game_ms: int = 1_800_000
    """Simulated time after which an evaluation game is truncated, a draw (D16); lower it only
    for smoke tests."""
    torch_threads: int = 1
    """torch threads of the learner in this process (more contend with the env runners on a
    small machine)."""
    progress_bar: bool = True
    """Show the progress of the iterations and of the final evaluation: a bar when stderr is a
    terminal, otherwise (a log file, CI) plain lines with the count, the rate and the ETA."""
    json: Path | None = None
    """Also write the metrics (as <out>/metrics.json) to this file at the end."""


#: The values ``--smoke`` gives every field not set on the command line: 2 iterations of 500
#: env steps sampled in this process (no env runner actors), a checkpoint after each, 10
#: evaluation deals per bot, games cut at 2 min.
SMOKE = dict(iterations=2, num_env_runners=0, num_envs_per_runner=8, train_batch_size=500,
             minibatch_size=250, num_epochs=1, hiddens=(64, 64), checkpoint_every=1,
             eval_games=10, eval_max_game_ms=120_000)


def rllib_bots() -> list[str]:
    """The registered bots RLlib can run as the opponent module (not the trained networks)."""
    from spit_env.policy import registered_policies

    return [n for n in registered_policies() if n not in ("network", "ppo", "rllib")]


def validate(args: Args) -> None:
    """Check every value.

    Raises:
        ArgumentError: naming the argument and what is allowed.
    """
    from experiments.cluster.connect import parse_address
    from spit_env.checks import did_you_mean

    if args.num_envs_per_runner is not None:
        check_at_least("--num-envs-per-runner", args.num_envs_per_runner, 1)
    for name in ("iterations", "train_batch_size", "minibatch_size", "num_epochs",
                 "torch_threads"):
        check_at_least(flag(name), getattr(args, name), 1)
    for name in ("num_env_runners", "checkpoint_every", "eval_games", "seed", "eval_seed"):
        check_at_least(flag(name), getattr(args, name), 0)
    if args.num_cpus is not None:
        check_at_least("--num-cpus", args.num_cpus, 1)
    check_positive("--connect-timeout", args.connect_timeout)
    if args.minibatch_size > args.train_batch_size:
        raise ArgumentError(f"--minibatch-size ({args.minibatch_size}) must be at most "
                            f"--train-batch-size ({args.train_batch_size})")
    for name in ("lr", "gamma", "gae_lambda"):
        check_fraction(flag(name), getattr(args, name))
    check_at_least("--entropy-coeff", args.entropy_coeff, 0)
    check_layers("--hiddens", args.hiddens)
    bots = rllib_bots()
    if args.opponent not in bots:  # a bare name: its latency is --latency, as the learner's
        raise ArgumentError(
            f"--opponent must be a registered bot {bots} (both seats' latency is --latency), "
            f"got {args.opponent!r}{did_you_mean(args.opponent, bots)}"
        )
    check_players("--eval-opponents", args.eval_opponents, allowed=bots)
    check_latency("--latency", args.latency)
    check_game_ms("--eval-max-game-ms", args.eval_max_game_ms)
    try:
        parse_address(args.address)
    except ValueError as err:
        raise ArgumentError(f"--address: {err}") from None
    check_out_folder("--out", args.out)
    check_json_file("--json", args.json)


def game_config(args: Args):
    """The games' ``SpitConfig`` of a run: the default rules, both seats at ``--latency``."""
    from spit_env.config import SpitConfig

    return SpitConfig(latency=check_latency("--latency", args.latency))


def run_folder(args: Args) -> Path:
    """``--out``, or ``runs/rllib_<mode>_s<seed>[_smoke]`` without it."""
    return Path(args.out) if args.out is not None else \
        Path("runs") / f"rllib_{args.mode}_s{args.seed}{'_smoke' if args.smoke else ''}"
