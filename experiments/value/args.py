"""The command line of ``python -m experiments.train_value``: its flags and their checks.

:class:`Args` holds one documented field per flag (``experiments.cli.tyro_cli`` makes the
command line of it, each field's docstring its help). :func:`check` checks every value before
any work starts and reports the first bad one as an ``experiments.cli.checks.ArgumentError``
naming the flag and what is allowed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from experiments.cli.checks import (
    ArgumentError,
    check_at_least,
    check_fraction,
    check_game_ms,
    check_latency,
    check_layers,
    check_out_folder,
    check_players,
    check_positive,
)

__all__ = ["Args", "SMOKE", "check", "config_of"]


@dataclass
class Args:
    """A value network for the planner's rollouts: positions, racer rollouts, a fit."""

    smoke: bool = False
    """A quick run of the whole pipeline at toy size (positions of a few games, a short fit,
    its held-out figures, the screen and the run folder, runs/value_smoke_s<seed>), in under a
    minute: the values of SMOKE in experiments/value/args.py for every flag not given on the
    command line (a flag given keeps its value). Its figures mean nothing."""
    out: Path | None = None
    """Run folder: config.json, data.npz (the positions and their targets), value.npz (the
    network: leaf_value=<this path>), report.json (held-out figures, the screen), calibration.png;
    None means runs/value_s<seed> (with --smoke runs/value_smoke_s<seed>)."""
    seed: int = 0
    """Seed of the games (deals and streams), the held-out split and the fit."""
    sources: str = "racer,greedy,chain,planner-fast"
    """The players whose games against racer give the positions (comma-separated names of
    {players}): each plays --games games, half in each seat."""
    games: int = 3000
    """Games per source."""
    rate: float = 0.02
    """The probability of keeping a decision epoch of a game as a position, in (0, 1]."""
    rollouts: int = 8
    """Racer rollouts per position for the ahead target, and as many for the round target,
    1-4096."""
    ahead_ms: int = 2000
    """The ahead target's look-ahead: the value this many simulated ms further on (or at the
    round's end), 1-600000."""
    game_rollouts: int = 0
    """Racer rollouts to the end of the game per position: the game target's mean, 0-4096
    (0: no game target; each costs about a round's rollouts times the rounds left)."""
    win_weight: float = 2.0
    """The value of a game won, on top of the card difference (the planner's), >= 0."""
    target: Literal["ahead", "round", "game", "outcome", "mix"] = "ahead"
    """What the network fits: the value --ahead-ms further on (a rollout stopped at a horizon
    then looks that much further), at the end of the round (what the planner's rollout would
    have returned without its horizon), at the end of the game, the real game's result, or the
    mean of round and game."""
    residual: bool = True
    """Fit the target less the card difference the observation shows (the network adds it
    back): it learns the change to come, not the present."""
    hidden: tuple[int, ...] = (128, 128)
    """Hidden layer widths (--hidden 128 128)."""
    steps: int = 6000
    """Adam steps of the fit."""
    batch_size: int = 512
    """Positions per step."""
    learning_rate: float = 1e-3
    """Adam's step size (decayed linearly to a tenth), > 0."""
    holdout: float = 0.1
    """Share of the games held out whole from the fit, to measure it on, in (0, 0.5]."""
    latency: str = "club"
    """Both seats' latency in the games and the rollouts: a preset name or whole ms."""
    max_game_ms: int = 1_800_000
    """Simulated ms after which a game is truncated (a draw, D16); lower it only for smoke
    tests."""
    data: Path | None = None
    """A data.npz of an earlier run to fit on, instead of collecting positions (its sources,
    games and rollouts are its own)."""
    games_per_job: int = 250
    """Game ids per job of the collection (a Ray task each with --ray; locally, the unit of
    progress)."""
    ray: bool = False
    """Collect as Ray tasks (a local Ray on 127.0.0.1, or the cluster of --address): the same
    data as a local run, array for array."""
    address: str | None = None
    """With --ray: 'auto' (the cluster of `ray start` on this machine) or HOST:PORT of a head
    node; None starts a local Ray on 127.0.0.1 and stops it at the end."""
    screen: bool = True
    """Score the planner with the fitted value at a 1 s horizon, and without it, on the screen
    shipped with the package (seconds; report.json)."""
    torch_threads: int = 1
    """Torch threads of the fit."""
    quiet: bool = False
    """No progress bars or lines."""

    @property
    def source_list(self) -> list[str]:
        """--sources as names."""
        return [s.strip() for s in self.sources.split(",") if s.strip()]



#: The values ``--smoke`` gives every field not set on the command line: two sources of 8
#: games, 4 rollouts, a 200-step fit of a small network, games cut at 2 min.
SMOKE = dict(sources="racer,greedy", games=8, rate=0.05, rollouts=4, game_rollouts=1,
             hidden=(32,), steps=200, batch_size=128, max_game_ms=120_000, games_per_job=4,
             holdout=0.25)


def config_of(args: Args) -> dict:
    """A run's settings, config.json's content (paths as text; --smoke is not one)."""
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(args).items()
            if k != "smoke"}


def check(args: Args) -> Args:
    """Check every value of ``args``; returns it with ``out`` set.

    Raises:
        ArgumentError: the first bad value, naming its flag and what is allowed.
    """
    out = Path(args.out) if args.out is not None else \
        Path("runs") / f"value{'_smoke' if args.smoke else ''}_s{args.seed}"
    check_out_folder("--out", out)
    if (out / "value.npz").exists():
        raise ArgumentError(f"--out: {str(out)!r} already holds a value network; give another "
                            "--out")
    check_at_least("--seed", args.seed, 0)
    if args.data is None:
        if not args.source_list:
            raise ArgumentError("--sources: give at least one player")
        check_players("--sources", args.source_list)
        check_at_least("--games", args.games, 2)
        check_fraction("--rate", args.rate)
        for flag, value, lo, hi in (("--rollouts", args.rollouts, 1, 4096),
                                    ("--game-rollouts", args.game_rollouts, 0, 4096),
                                    ("--ahead-ms", args.ahead_ms, 1, 600_000)):
            if not (isinstance(value, int) and lo <= value <= hi):
                raise ArgumentError(f"{flag} must be an integer in {lo}..{hi}, got {value}")
        check_at_least("--games-per-job", args.games_per_job, 1)
    elif not Path(args.data).is_file():
        raise ArgumentError(f"--data: no file at {str(args.data)!r}")
    if args.target == "game" and args.data is None and args.game_rollouts == 0:
        raise ArgumentError("--target game needs --game-rollouts >= 1")
    check_at_least("--win-weight", args.win_weight, 0)
    check_layers("--hidden", args.hidden)
    for flag, value in (("--steps", args.steps), ("--batch-size", args.batch_size),
                        ("--torch-threads", args.torch_threads)):
        check_at_least(flag, value, 1)
    check_positive("--learning-rate", args.learning_rate)
    if not 0 < args.holdout <= 0.5:
        raise ArgumentError(f"--holdout must be in (0, 0.5], got {args.holdout}")
    check_latency("--latency", args.latency)
    check_game_ms("--max-game-ms", args.max_game_ms)
    if args.address is not None and not args.ray:
        raise ArgumentError("--address needs --ray")
    return replace(args, out=out)
