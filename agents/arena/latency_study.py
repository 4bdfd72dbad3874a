"""The latency study: how much is speed worth? One bot against itself, one seat's latency varied.

:func:`latency_curve`: one seat's mean latency varied over a grid (log-normal, sd = 20% of the
mean as in the club preset, floored at 150 ms like every preset: :func:`study_latency`), the
other seat at a reference latency (club, 500 ms, by default); the win rate of the varied player
with 95% bands, each point a duplicate-deal pairing on the same deals, all points played
together (:func:`agents.arena.play_pairings`).
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.arena.match import Player
from agents.arena.pairings import Runner, play_pairings
from spit_env.config import SpitConfig
from spit_env.latency import PRESET_MIN_MS, Latency
from spit_env.progress import Progress, counted

__all__ = ["study_latency", "latency_curve"]


def study_latency(mean_ms: float, cv: float = 0.2) -> Latency:
    """The varied seat's latency model: log-normal, sd = cv * mean, floored like the presets."""
    return Latency.lognormal(float(mean_ms), cv * float(mean_ms), PRESET_MIN_MS)


def latency_curve(bot: str, means_ms: Sequence[float], deals: int, *,
                  config: SpitConfig | None = None, reference: str | Latency = "club",
                  seed: int = 0, batch_size: int = 256, show_progress: bool = True,
                  runner: Runner | None = None) -> dict:
    """Win rate of ``bot`` with mean latency m against ``bot`` at ``reference``, for each m.

    Each point is a duplicate-deal pairing of ``deals`` deals (the same deals at every m); the
    points' games are run by ``runner`` (as in :func:`agents.arena.round_robin`; None: all in
    one batch here).

    Returns:
        a JSON-serialisable dict: "bot", "reference", "deals", "points": list of {"mean_ms",
        "win_rate", "ci_low", "ci_high", "games", "draws"}.

    Raises:
        ValueError: a bad reference latency, an unknown bot, or as
            :func:`agents.arena.play_pairings`.
    """
    ref = Latency.parse(reference)
    bar = Progress(len(means_ms) * 2 * deals,
                   f"latency study of {bot} ({counted(len(means_ms), 'point')})",
                   unit="games", enabled=show_progress)
    base = Player(f"{bot}@{ref.label}", bot, ref)
    pairings = [(Player(f"{bot}@{m:g}ms", bot, study_latency(m)), base) for m in means_ms]
    results = play_pairings(pairings, deals, config=config, seed=seed, batch_size=batch_size,
                            runner=runner, report=lambda _, n: bar(n))
    points = [{"mean_ms": float(m), "win_rate": res.win_rate, "ci_low": res.ci_low,
               "ci_high": res.ci_high, "games": res.games, "draws": res.draws}
              for m, res in zip(means_ms, results, strict=True)]
    bar.close()
    return {"bot": bot, "reference": ref.label, "reference_mean_ms": ref.mean_ms,
            "deals": int(deals), "seed": int(seed), "cv": 0.2, "points": points}
