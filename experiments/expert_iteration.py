"""Expert iteration: a network that learns the planner's improvements on its own moves.

    python -m experiments.expert_iteration --rounds 3 --out runs/expert
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

from experiments.expert.args import check, parser
from experiments.expert.rounds import run

__all__ = ["main"]


def main(argv=None) -> int:
    """Command-line entry point: check every flag, then run (or resume) the rounds."""
    p = parser(description=__doc__.split("\n\n")[0])
    args = check(p, p.parse_args(argv))
    run(args, show=not args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
