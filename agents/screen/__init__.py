"""The screen: score a policy or a search on fixed positions in seconds, before playing games.

A **truth set** is a fixed, versioned set of positions (decisions with two or more legal moves,
taken from the games of several players) with every legal move valued by many racer rollouts
run to the end of the round or game, in the planner's units (the card difference over 52, plus
``win_weight`` for a game won). The package ships one (:func:`shipped_truth_path`); building
another: ``python -m experiments.screen --build --out FILE`` (``--ray``: the positions valued as
Ray tasks, the same file)::

    from agents import screen

    truth = screen.load_truth()                    # the shipped set
    s = screen.score("planner", truth)             # any player: name, profile, path, policy
    print(s.gain, s.gain_se, s.share, s.precision, s.cpu_ms_per_decision)

A player's **gain** at a position is the truth value of its move minus racer's move's; racer
scores 0 by construction. :func:`score` reports the mean gain per decision with its standard
error, the share of the available gain (the best move's) captured, how often and how precisely
the player departs from racer's move, its regret against the best move and its CPU time per
decision; :func:`paired_difference` compares two players on the same positions.
:mod:`agents.screen.calibration` relates the gain to measured win rates against racer
(docs/results/screen.md).

Modules: ``positions`` (collecting positions from games), ``truth`` (valuing them; the file),
``players`` (what may be screened, and its moves), ``score``, ``calibration``.
"""

from __future__ import annotations

from agents.screen.players import parse_player, player_label, player_moves, player_problem
from agents.screen.positions import Positions, collect_positions, policy_keys
from agents.screen.score import ScreenScore, paired_difference, score
from agents.screen.truth import (
    SOURCES,
    TRUTH_VERSION,
    TruthFileError,
    TruthJob,
    TruthSet,
    build_truth,
    load_truth,
    save_truth,
    shipped_truth_path,
    value_jobs,
)

__all__ = [
    "TRUTH_VERSION",
    "SOURCES",
    "TruthSet",
    "TruthJob",
    "TruthFileError",
    "Positions",
    "ScreenScore",
    "build_truth",
    "value_jobs",
    "collect_positions",
    "policy_keys",
    "save_truth",
    "load_truth",
    "shipped_truth_path",
    "score",
    "paired_difference",
    "parse_player",
    "player_label",
    "player_problem",
    "player_moves",
]
