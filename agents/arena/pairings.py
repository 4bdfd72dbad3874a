"""Duplicate-deal pairings, their jobs and runners, and the round robin (``agents.arena``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial

import numpy as np

from agents.arena.match import Player, run_games
from agents.arena.stats import bradley_terry, wilson_interval
from spit_env.checks import check_int
from spit_env.config import SpitConfig
from spit_env.progress import Progress, counted

__all__ = ["PairingResult", "GameJob", "Runner", "run_jobs_locally", "pairing_jobs",
           "pairing_result", "play_pairing", "round_robin"]


@dataclass
class PairingResult:
    """The duplicate-deal result of ``a`` against ``b`` over ``deals`` deals (2 games each).

    ``score_a`` = wins_a + draws / 2; ``win_rate`` = score_a / games, with its 95% Wilson interval
    (``ci_low``, ``ci_high``). ``truncated`` games are counted among the draws.
    """

    a: str
    b: str
    deals: int
    games: int
    wins_a: int
    wins_b: int
    draws: int
    truncated: int
    win_rate: float
    ci_low: float
    ci_high: float
    mean_steps: float


@dataclass(frozen=True)
class GameJob:
    """One task of a pairing: ``count`` deals from game id ``first_game``, ``seat0`` in seat 0.

    ``swapped`` marks the job whose seat 0 is the pairing's second player; ``stream`` is the
    chunk's index, which seeds the policies' generators (see :class:`agents.arena.Match`). A job
    is picklable, and its games depend on nothing but the job and :meth:`run`'s arguments.
    """

    seat0: Player
    seat1: Player
    first_game: int
    count: int
    stream: int = 0
    swapped: bool = False

    def run(self, *, config: SpitConfig | None = None, seed: int = 0, batch_size: int = 256,
            progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
        """Play the job's games (:func:`agents.arena.run_games`).

        Returns:
            the dict of (count,) arrays of :func:`agents.arena.run_games`.
        """
        ids = np.arange(self.first_game, self.first_game + self.count)
        return run_games(self.seat0, self.seat1, ids, config=config, seed=seed,
                         batch_size=batch_size, policy_stream=self.stream, progress=progress)


#: ``runner(jobs, run_one, progress) -> outputs``: plays every job (``run_one(job)`` is
#: ``job.run`` with the pairing's config, seed and batch size bound) and returns the outputs
#: in the order of ``jobs``; ``progress(n)`` after n games. None: one after another, here
#: (:func:`run_jobs_locally`); ``experiments.cluster.tasks.run_jobs_on_ray``: as Ray tasks.
Runner = Callable[[list, Callable, Callable[[int], None] | None], list]


def run_jobs_locally(jobs, run_one, progress=None) -> list:
    """The default :data:`Runner`: the jobs one after another in this process."""
    return [run_one(job, progress=progress) for job in jobs]


def pairing_jobs(a: Player | str, b: Player | str, deals: int, *, first_game: int = 0,
                 chunk: int | None = None) -> list[GameJob]:
    """The jobs of a duplicate-deal pairing.

    Chunks of at most ``chunk`` deals (None: one chunk), chunk k as stream k, each played with
    a in seat 0 and with b in seat 0.

    Raises:
        ValueError: deals or chunk not an integer >= 1, a bad first game or player.
    """
    check_int("deals", deals, 1)
    check_int("chunk", chunk, 1, none_ok=True)
    check_int("first_game", first_game, 0)
    a, b = Player.parse(a), Player.parse(b)
    size = int(deals if chunk is None else chunk)
    jobs = []
    for k, start in enumerate(range(int(first_game), int(first_game) + int(deals), size)):
        n = min(size, int(first_game) + int(deals) - start)
        jobs += [GameJob(a, b, start, n, k, False), GameJob(b, a, start, n, k, True)]
    return jobs


def pairing_result(a: Player, b: Player, jobs: Sequence[GameJob],
                   outputs: Sequence[dict]) -> PairingResult:
    """Score the outputs of a pairing's jobs (``agents.arena``: scoring)."""
    wins_a = wins_b = truncated = 0
    for job, out in zip(jobs, outputs, strict=True):
        first, second = int((out["winner"] == 0).sum()), int((out["winner"] == 1).sum())
        wins_a += second if job.swapped else first
        wins_b += first if job.swapped else second
        truncated += int(out["truncated"].sum())
    games = int(sum(out["winner"].size for out in outputs))
    draws = games - wins_a - wins_b
    lo, hi = wilson_interval(wins_a + draws / 2, games)
    return PairingResult(
        a=a.label, b=b.label, deals=games // 2, games=games, wins_a=wins_a, wins_b=wins_b,
        draws=draws, truncated=truncated, win_rate=(wins_a + draws / 2) / games, ci_low=lo,
        ci_high=hi, mean_steps=float(np.concatenate([out["steps"] for out in outputs]).mean()),
    )


def play_pairing(a: Player | str, b: Player | str, deals: int, *,
                 config: SpitConfig | None = None, seed: int = 0, first_game: int = 0,
                 batch_size: int = 256, progress: Callable[[int], None] | None = None,
                 chunk: int | None = None, runner: Runner | None = None) -> PairingResult:
    """Duplicate deals of ``a`` against ``b``.

    Game ids first_game .. first_game + deals - 1, each with a in seat 0 then with b in seat 0,
    in chunks of ``chunk`` deals (None: one piece; :func:`pairing_jobs`) run by ``runner``
    (None: here, one after another). Scoring: ``agents.arena``.

    Raises:
        ValueError: as :func:`pairing_jobs`, or an unknown policy or bad profile.
    """
    a, b = Player.parse(a), Player.parse(b)
    jobs = pairing_jobs(a, b, deals, first_game=first_game, chunk=chunk)
    run_one = partial(_run_job, config=config, seed=seed, batch_size=batch_size)
    outputs = (runner or run_jobs_locally)(jobs, run_one, progress)
    return pairing_result(a, b, jobs, outputs)


def _run_job(job: GameJob, *, config, seed, batch_size, progress=None) -> dict:
    return job.run(config=config, seed=seed, batch_size=batch_size, progress=progress)


def round_robin(players: Sequence[str | Player], deals: int, *, config: SpitConfig | None = None,
                seed: int = 0, batch_size: int = 256, show_progress: bool = True,
                chunk: int | None = None, runner: Runner | None = None) -> dict:
    """Every pairing of ``players`` over the same ``deals`` duplicate deals.

    The pairings' jobs (chunks of ``chunk`` deals, None: one per seat order; see
    :func:`pairing_jobs`) go to ``runner`` all at once (None: played here one after another;
    ``experiments.cluster.tasks.run_jobs_on_ray``: as Ray tasks). The result does not depend
    on the runner.

    With ``show_progress``, the games show their progress (``spit_env.progress``: a bar on a
    terminal, plain lines in a log), games done of all the pairings' games.

    Returns:
        a JSON-serialisable dict: "players", "deals", "seed", "config", "pairings" (list of
        PairingResult dicts), "win_rate" / "ci_low" / "ci_high" ((K, K) nested lists, row
        against column, 0.5 and the vacuous interval on the diagonal) and "ratings" (Bradley-
        Terry, Elo scale).

    Raises:
        ValueError: fewer than 2 players, duplicate labels, or as :func:`play_pairing`.
    """
    players = [Player.parse(p) for p in players]
    labels = [p.label for p in players]
    if len(players) < 2 or len(set(labels)) != len(labels):
        raise ValueError(f"players must be at least 2 distinct names or profiles, got {labels}")
    config = config or SpitConfig()
    k = len(players)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    bar = Progress(len(pairs) * 2 * deals, f"tournament ({counted(len(pairs), 'pairing')})",
                   unit="games", enabled=show_progress)
    jobs = [pairing_jobs(players[i], players[j], deals, chunk=chunk) for i, j in pairs]
    run_one = partial(_run_job, config=config, seed=seed, batch_size=batch_size)
    outputs = (runner or run_jobs_locally)([job for js in jobs for job in js], run_one, bar)
    results = []
    score = np.zeros((k, k))
    games = np.zeros((k, k))
    done = 0
    for (i, j), js in zip(pairs, jobs, strict=True):
        res = pairing_result(players[i], players[j], js, outputs[done:done + len(js)])
        done += len(js)
        results.append(res)
        score[i, j] = res.wins_a + res.draws / 2
        score[j, i] = res.wins_b + res.draws / 2
        games[i, j] = games[j, i] = res.games
    bar.close()
    rate = np.full((k, k), 0.5)
    lo = np.zeros((k, k))
    hi = np.ones((k, k))
    for r, (i, j) in zip(results, pairs, strict=True):
        rate[i, j], lo[i, j], hi[i, j] = r.win_rate, r.ci_low, r.ci_high
        rate[j, i], lo[j, i], hi[j, i] = 1 - r.win_rate, 1 - r.ci_high, 1 - r.ci_low
    return {
        "players": labels,
        "deals": int(deals),
        "seed": int(seed),
        "config": config.to_dict(),
        "scoring": "win 1, loss 0, draw or truncation 1/2; 95% Wilson intervals over 2 x deals "
                   "games",
        "pairings": [asdict(r) for r in results],
        "win_rate": rate.tolist(),
        "ci_low": lo.tolist(),
        "ci_high": hi.tolist(),
        "ratings": bradley_terry(labels, score, games),
    }
