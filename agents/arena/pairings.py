"""Duplicate-deal pairings, their jobs and runners, and the round robin (``agents.arena``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial

import numpy as np

from agents.arena.match import Match, Player, run_games
from agents.arena.stats import bradley_terry, wilson_interval
from spit_env.checks import check_int
from spit_env.config import SpitConfig
from spit_env.progress import Progress, counted

__all__ = ["PairingResult", "GameJob", "Runner", "play_jobs", "run_jobs_locally", "pairing_jobs",
           "pairing_result", "play_pairings", "play_pairing", "round_robin", "PLAYER_COST",
           "game_cost"]

#: A game's rough cost per seat by policy, relative to a heuristic bot's (1), for the progress's
#: ETA only: the planner plans about 500 decisions/s where the environment steps about 75,000
#: with a bot (docs/results/planner.md, docs/results/speed.md), expert-fast about two thirds of
#: the planner's CPU per decision (docs/results/search.md); a network is one batched forward
#: pass per decision. Policies not listed cost 1.
PLAYER_COST = {"planner": 100.0, "expert": 100.0, "planner-fast": 30.0, "expert-fast": 65.0,
               "network": 3.0, "ppo": 3.0, "rllib": 3.0}


def game_cost(a: Player, b: Player) -> float:
    """The rough cost of one game of ``a`` against ``b`` (:data:`PLAYER_COST` of each seat)."""
    return PLAYER_COST.get(a.policy, 1.0) + PLAYER_COST.get(b.policy, 1.0)


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

    ``swapped`` marks the job whose seat 0 is the pairing's second player. A job is picklable,
    and its games depend on nothing but the job and :meth:`run`'s arguments (the config and the
    seed): not on the other jobs played beside it in a batch, nor on how a pairing's deals are
    cut into jobs, so any runner gives the same games.
    """

    seat0: Player
    seat1: Player
    first_game: int
    count: int
    swapped: bool = False

    @property
    def game_ids(self) -> np.ndarray:
        """(count,) int64: the job's game ids."""
        return np.arange(self.first_game, self.first_game + self.count, dtype=np.int64)

    def run(self, *, config: SpitConfig | None = None, seed: int = 0, batch_size: int = 256,
            progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
        """Play the job's games (:func:`agents.arena.run_games`).

        Returns:
            the dict of (count,) arrays of :func:`agents.arena.run_games`.
        """
        return run_games(self.seat0, self.seat1, self.game_ids, config=config, seed=seed,
                         batch_size=batch_size, progress=progress)


def play_jobs(jobs: Sequence[GameJob], *, config: SpitConfig | None = None, seed: int = 0,
              batch_size: int = 256,
              report: Callable[[int, int], None] | None = None) -> list[dict[str, np.ndarray]]:
    """Play every job's games in one batch (``agents.arena.Match.of_pairings``).

    The jobs share the batch's steps: the run lasts as long as its longest game, not the sum
    of each job's longest; each game plays as it would in its job alone.

    Args:
        jobs: the jobs (of one pairing or many).
        config: the games' config (default SpitConfig()); a player's latency replaces its
            seat's.
        seed: the game seed.
        batch_size: games stepped at once, >= 1.
        report: called as ``report(k, n)`` when n more games of ``jobs[k]`` have finished.

    Returns:
        one dict of (count,) arrays per job, in the order of ``jobs``
        (:func:`agents.arena.run_games`).

    Raises:
        ValueError: a bad batch size, an unknown policy or a bad profile.
    """
    if not jobs:
        return []
    match = Match.of_pairings([(j.seat0, j.seat1, j.game_ids) for j in jobs], config=config,
                              seed=seed, batch_size=batch_size)
    match.run(report=report)
    return match.all_results


#: ``runner(jobs, play, report) -> outputs``: plays every job and returns the outputs in the
#: order of ``jobs``. ``play(some_jobs, report=None)`` is :func:`play_jobs` with the config,
#: seed and batch size bound, so a runner only chooses which jobs play together where;
#: ``report(k, n)``: n more games of ``jobs[k]`` finished. None: all of them in one batch here
#: (:func:`run_jobs_locally`); ``experiments.cluster.tasks.run_jobs_on_ray``: one Ray task per
#: job. The games, and so the outputs, do not depend on the runner.
Runner = Callable[[list, Callable, Callable[[int, int], None] | None], list]


def run_jobs_locally(jobs, play, report=None) -> list:
    """The default :data:`Runner`: every job in one batch in this process."""
    return play(list(jobs), report=report)


def pairing_jobs(a: Player | str, b: Player | str, deals: int, *, first_game: int = 0,
                 chunk: int | None = None) -> list[GameJob]:
    """The jobs of a duplicate-deal pairing.

    Chunks of at most ``chunk`` deals (None: one chunk), each played with a in seat 0 and with
    b in seat 0. The chunk size says how the work may be spread (one Ray task per job); it does
    not change the games.

    Raises:
        ValueError: deals or chunk not an integer >= 1, a bad first game or player.
    """
    check_int("deals", deals, 1)
    check_int("chunk", chunk, 1, none_ok=True)
    check_int("first_game", first_game, 0)
    a, b = Player.parse(a), Player.parse(b)
    size = int(deals if chunk is None else chunk)
    jobs = []
    for start in range(int(first_game), int(first_game) + int(deals), size):
        n = min(size, int(first_game) + int(deals) - start)
        jobs += [GameJob(a, b, start, n, False), GameJob(b, a, start, n, True)]
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


def play_pairings(pairings: Sequence[tuple], deals: int, *, config: SpitConfig | None = None,
                  seed: int = 0, first_game: int = 0, batch_size: int = 256,
                  chunk: int | None = None, runner: Runner | None = None,
                  report: Callable[[int, int], None] | None = None) -> list[PairingResult]:
    """Duplicate deals of each pairing ``(a, b)``, all of them played together.

    Each pairing plays game ids first_game .. first_game + deals - 1, each with a in seat 0 then
    with b in seat 0, in jobs of ``chunk`` deals (None: one per seat order; :func:`pairing_jobs`)
    that ``runner`` plays (None: all in one batch here, so the pairings share its steps).
    Scoring: ``agents.arena``. A pairing's result does not depend on the others, the chunks or
    the runner.

    Args:
        pairings: ``(a, b)`` pairs of players (Players, names or profiles).
        deals: duplicate deals per pairing.
        config: the games' config (default SpitConfig()).
        seed: the game seed.
        first_game: the first game id.
        batch_size: games stepped at once (by :func:`play_jobs`).
        chunk: deals per job (None: one job per seat order).
        runner: plays the jobs (:data:`Runner`; None: :func:`run_jobs_locally`).
        report: called as ``report(i, n)`` when n more games of ``pairings[i]`` have finished.

    Returns:
        one PairingResult per pairing, in order.

    Raises:
        ValueError: as :func:`pairing_jobs`, or an unknown policy or bad profile.
    """
    players = [(Player.parse(a), Player.parse(b)) for a, b in pairings]
    jobs = [pairing_jobs(a, b, deals, first_game=first_game, chunk=chunk) for a, b in players]
    owner = [i for i, js in enumerate(jobs) for _ in js]
    play = partial(play_jobs, config=config, seed=seed, batch_size=batch_size)
    tell = None if report is None else (lambda k, n: report(owner[k], n))
    outputs = (runner or run_jobs_locally)([j for js in jobs for j in js], play, tell)
    results, done = [], 0
    for (a, b), js in zip(players, jobs, strict=True):
        results.append(pairing_result(a, b, js, outputs[done:done + len(js)]))
        done += len(js)
    return results


def play_pairing(a: Player | str, b: Player | str, deals: int, *,
                 config: SpitConfig | None = None, seed: int = 0, first_game: int = 0,
                 batch_size: int = 256, progress: Callable[[int], None] | None = None,
                 chunk: int | None = None, runner: Runner | None = None) -> PairingResult:
    """Duplicate deals of ``a`` against ``b`` (:func:`play_pairings` of the one pairing).

    Game ids first_game .. first_game + deals - 1, each with a in seat 0 then with b in seat 0,
    in chunks of ``chunk`` deals (None: one piece; :func:`pairing_jobs`) run by ``runner``
    (None: here, in one batch). ``progress(n)``: n more games finished. Scoring:
    ``agents.arena``.

    Raises:
        ValueError: as :func:`pairing_jobs`, or an unknown policy or bad profile.
    """
    return play_pairings([(a, b)], deals, config=config, seed=seed, first_game=first_game,
                         batch_size=batch_size, chunk=chunk, runner=runner,
                         report=None if progress is None else (lambda _, n: progress(n)))[0]


def round_robin(players: Sequence[str | Player], deals: int, *, config: SpitConfig | None = None,
                seed: int = 0, batch_size: int = 256, show_progress: bool = True,
                chunk: int | None = None, runner: Runner | None = None) -> dict:
    """Every pairing of ``players`` over the same ``deals`` duplicate deals.

    The pairings' jobs (chunks of ``chunk`` deals, None: one per seat order; see
    :func:`pairing_jobs`) go to ``runner`` all at once (None: played here in one batch;
    ``experiments.cluster.tasks.run_jobs_on_ray``: as Ray tasks). The result does not depend
    on the runner or the chunks.

    With ``show_progress``, the games show their progress (``spit_env.progress``: a bar on a
    terminal, plain lines in a log), games done of all the pairings' games, the percentage and
    the ETA of the work (each pairing's games weighed by :func:`game_cost`).

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
    # the ETA weighs each pairing's games by their cost: slow players' games may come last
    bar = Progress(None, f"tournament ({counted(len(pairs), 'pairing')})", unit="games",
                   enabled=show_progress,
                   groups=[(2 * deals, game_cost(players[i], players[j])) for i, j in pairs])
    results = play_pairings([(players[i], players[j]) for i, j in pairs], deals, config=config,
                            seed=seed, batch_size=batch_size, chunk=chunk, runner=runner,
                            report=lambda i, n: bar.update(n, group=i))
    bar.close()
    score = np.zeros((k, k))
    games = np.zeros((k, k))
    for res, (i, j) in zip(results, pairs, strict=True):
        score[i, j] = res.wins_a + res.draws / 2
        score[j, i] = res.wins_b + res.draws / 2
        games[i, j] = games[j, i] = res.games
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
