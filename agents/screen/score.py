"""The score of a player on the truth set, and the line from screen gain to win rate.

:func:`score` asks a player for its move at every position of a :class:`~agents.screen.truth.
TruthSet` (:func:`agents.screen.players.player_moves`) and reads the truth's value of each move.
Per decision, ``gain`` is the truth value of the player's move minus racer's move's (racer plays
0 by construction); ``best`` the best legal move's (>= 0). The figures (:class:`ScreenScore`):

* **gain per decision**: the mean gain, with its standard error over the positions (the truth's
  own noise is inside it);
* **share of the available gain**: the summed gain over the summed best gain;
* **departure rate**: the share of positions where the player leaves racer's move,
  **departure precision**: of those departures, the share whose truth gain is above 0, and the
  mean **gain per departure**;
* **regret**: the mean best gain minus the mean gain (what the best move would have added);
* **CPU seconds per decision** of the player's calls on the screen.

**The truth's own noise.** A player does not see the truth's rollouts, so its gain and its gain
per departure are unbiased estimates. The best move is the maximum of noisy values, so the
available gain (and with it the share and the regret) leans high,
:meth:`~agents.screen.truth.TruthSet.best_gain_noise` estimates by how much; and a departure to a
move that is truly as good as racer's counts as precise about half of the time, which pulls every
precision toward 50%.

How the gain predicts a win rate: :mod:`agents.screen.calibration`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from agents.screen.players import player_label, player_moves
from agents.screen.truth import TruthSet

__all__ = ["ScreenScore", "score", "paired_difference"]


@dataclass(eq=False)
class ScreenScore:
    """A player's score on a truth set (module docstring). Gains are in planner units.

    Attributes:
        label: the player's name.
        decisions: N, the positions.
        gain: mean gain per decision over racer's move; ``gain_se`` its standard error.
        available: mean best gain per decision (the gain of always playing the best move).
        share: ``gain / available``.
        departure_rate: share of positions where the move is not racer's; ``departures`` their
            number.
        precision: share of departures with a truth gain above 0 (NaN without departures).
        gain_per_departure: mean gain of the departures (NaN without departures).
        regret: ``available - gain``.
        cpu_s: CPU seconds of the player's calls; ``cpu_ms_per_decision`` the same per
            position, in ms.
        by_source: mean gain per decision on each source's positions.
        moves: (N,) int64 the player's moves; ``gains``: (N,) float64 their gains.
    """

    label: str
    decisions: int
    gain: float
    gain_se: float
    available: float
    share: float
    departure_rate: float
    departures: int
    precision: float
    gain_per_departure: float
    regret: float
    cpu_s: float
    cpu_ms_per_decision: float
    by_source: dict = field(default_factory=dict)
    moves: np.ndarray = field(default=None, repr=False)
    gains: np.ndarray = field(default=None, repr=False)

    def to_dict(self) -> dict:
        """The figures as plain JSON values (without the per-position arrays)."""
        return {k: v for k, v in vars(self).items() if k not in ("moves", "gains")}


def score(player, truth: TruthSet, *, chunk: int = 256) -> ScreenScore:
    """Score ``player`` on ``truth`` (module docstring).

    Args:
        player: a registered name, profile, model path, ``NAME:key=value`` spec, Player or
            batched policy (``agents.screen.players``).
        truth: the truth set (``agents.screen.load_truth()``).
        chunk: positions per policy call.

    Raises:
        ValueError: an unknown player, a bad argument or an illegal move.
    """
    moves, cpu = player_moves(player, truth.positions, truth.policy_key, chunk=chunk)
    n = truth.size
    gains = truth.diff[np.arange(n), moves].astype(np.float64)
    best = truth.best_gain
    departed = moves != truth.racer_move
    src = truth.positions.source
    by_source = {name: float(gains[src == k].mean()) for k, name in
                 enumerate(truth.positions.sources) if (src == k).any()}
    return ScreenScore(
        label=player_label(player), decisions=n, gain=float(gains.mean()),
        gain_se=float(gains.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"),
        available=float(best.mean()), share=float(gains.sum() / best.sum()),
        departure_rate=float(departed.mean()), departures=int(departed.sum()),
        precision=float((gains[departed] > 0).mean()) if departed.any() else float("nan"),
        gain_per_departure=float(gains[departed].mean()) if departed.any() else float("nan"),
        regret=float((best - gains).mean()), cpu_s=float(cpu),
        cpu_ms_per_decision=1000.0 * cpu / n, by_source=by_source, moves=moves, gains=gains)


def paired_difference(a: ScreenScore, b: ScreenScore) -> tuple[float, float]:
    """Mean gain of ``a`` minus ``b`` on the same positions, and its paired standard error.

    Raises:
        ValueError: scores of different truth sets (other position counts).
    """
    if a.gains.shape != b.gains.shape:
        raise ValueError(f"scores of different truth sets ({a.decisions} and {b.decisions} "
                         "positions)")
    d = a.gains - b.gains
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))
