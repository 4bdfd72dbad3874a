"""Expert iteration: a network that learns the planner's improvements on its own moves.

    python -m experiments.expert_iteration --rounds 3 --out runs/expert
    python -m experiments.expert_iteration --smoke      # the whole pipeline at toy size, < 1 min
    python -m experiments.expert_iteration --rounds 5 --out runs/expert --resume
    python -m experiments.expert_iteration --help

Round 0 clones racer (every move it makes, WAITs on purpose included; both heads: its moves and
the games' outcomes). Each later round the current network plays its own games against a mix of
bots and itself, the planner labels those positions with its network-guided search (soft targets
from its per-move values, and a value target), and the network fits them; after each round it
plays alone against racer on held-out duplicate deals. The run folder holds the networks
(``model.zip``: ``agents.make("network", path=...)`` plays it, ``experiments.train_ppo`` can go on
training it), the rows per round (rounds.csv, rounds.json) and the curve (curve.png). The rounds
and the run folder: ``experiments/expert/rounds.py``.
"""

from __future__ import annotations

import sys

from experiments.cli.checks import ArgumentError
from experiments.expert.args import NETWORK, SELF, SMOKE, Args, check

__all__ = ["main"]

PROG = "python -m experiments.expert_iteration"
_DESCRIPTION = (__doc__.split("\n\n")[0] + "\n\n" + "--smoke runs the whole pipeline at toy "
                "size in under a minute (any flag given keeps its value), to try the script or a "
                "change before a real run.")


def main(argv=None) -> int:
    """Command-line entry point: parse with tyro, check every flag, run (or resume) the rounds."""
    from experiments.cli import help_values, tyro_cli

    args = tyro_cli(Args, argv, prog=PROG, description=_DESCRIPTION,
                    fill=help_values(self=SELF, network=NETWORK), presets={"smoke": SMOKE})
    try:
        args = check(args)
    except ArgumentError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    from experiments.expert.rounds import run  # torch: not needed for --help or a bad flag

    run(args, show=not args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
