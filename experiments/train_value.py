"""A value network for the planner: where its rollouts stop, what they would have found.

    python -m experiments.train_value --out runs/value
    python -m experiments.train_value --smoke        # the whole pipeline at toy size, < 1 min
    python -m experiments.train_value --ray --out runs/value   # the data as Ray tasks
    python -m experiments.train_value --help

The sources' games against racer give positions (any moment of a game, seen from one seat);
racer rollouts from each to the end of its round (and of the game) give its targets, in the
planner's units; a small network fits one of them on all but the held-out games and is
measured on those (explained variance, calibration) and on the shipped screen. The network
(``value.npz``) is a ``leaf_value`` of the planner and the expert:
``agents.make("planner", horizon_ms=1000, leaf_value="runs/value/value.npz")``. The phases and
the run folder: ``experiments/value/run.py``.
"""

from __future__ import annotations

import sys

from experiments.cli.checks import ArgumentError
from experiments.value.args import SMOKE, Args, check

__all__ = ["main"]

PROG = "python -m experiments.train_value"
_DESCRIPTION = (__doc__.split("\n\n")[0] + "\n\n" + "--smoke runs the whole pipeline at toy "
                "size in under a minute (any flag given keeps its value), to try the script or a "
                "change before a real run.")


def main(argv=None) -> int:
    """Command-line entry point: parse with tyro, check every flag, run the phases."""
    from experiments.cli import help_values, tyro_cli

    args = tyro_cli(Args, argv, prog=PROG, description=_DESCRIPTION, fill=help_values(),
                    presets={"smoke": SMOKE})
    try:
        args = check(args)
    except ArgumentError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    from experiments.cluster.connect import RayConnectError, RayMissingError
    from experiments.value.run import run  # torch: not needed for --help or a bad flag

    try:
        run(args, show=not args.quiet)
    except (RayMissingError, RayConnectError) as err:
        print(f"{PROG}: error: --ray: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
