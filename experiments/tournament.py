"""Round-robin tournament of policies with duplicate deals, and the latency study.

Run ``python -m experiments.tournament --help``. Example::

    python -m experiments.tournament --players random,greedy,chain,racer --games 1000 \\
        --json out/tournament.json --csv out/tournament.csv --heatmap out/winrate.png \\
        --latency-study racer --latency-json out/latency.json --latency-plot out/latency.png

**Duplicate deals.** Every pairing (A, B) plays each deal twice: game id g of ``--seed`` with A in
seat 0 and B in seat 1, then the same game id with the seats swapped. A game id fixes the deal
and every random stream of the game (latency draws per seat and decision, tie coins, re-deal
shuffles; ``spit_env/streams.py``), and each seat's policy generator is seeded by (seed, seat)
alone, so the two games differ only in which policy sits where. Luck of the deal then cancels
out of the pairing's result.

**Scoring.** A game's winner gets 1, the loser 0; a draw or a truncated game (D16) counts half
to each (``draws`` are also reported separately). The win rate of A against B is its score over
the pairing's 2 x deals games, with a 95% Wilson score interval. The interval treats games as
independent; the two games of a deal are negatively correlated (a deal that favours a seat helps
each player once), so for duplicate deals it is conservative.

**Ratings.** A Bradley-Terry fit of all pairings (draws as half a win each), by maximum
likelihood with scipy, on the Elo scale (400 points = 10:1 odds), centred on a mean of 0. A tiny
ridge term keeps the fit finite when a player wins every game.

**Profiles.** A player is a registered policy name or a profile "name@latency"
(``spit_env.policy.parse_profile``); the profile's latency replaces that seat's latency in the
config of the games it plays (``--latency`` sets the default of both seats). A policy object
with a ``with_latency(latency)`` method (the ``racer`` bot, which models its own latency) is
given its seat's latency.

**Tasks and Ray.** A pairing's games are split into jobs (:class:`GameJob`): chunks of at most
``--chunk`` deals (default 1000), each played in both seat orders. Chunk k seeds the policies'
generators with (seed, seat, k) -- chunk 0 with (seed, seat), as a pairing played in one piece --
so a job's games depend only on the job, never on where or in which order it runs. The local run
plays the jobs one after another; ``--ray [ADDRESS]`` runs each as a Ray task
(``experiments/cluster/tasks.py``; a local Ray on 127.0.0.1 by default, a cluster by its
address) and the table is the same, number for number. A smaller ``--chunk`` spreads a long
pairing over more CPUs (for the same seed, a different chunk size gives other random draws).

**Latency study** (:func:`latency_curve`): one bot against itself, one seat's mean latency varied
over a grid (log-normal, sd = 20% of the mean like the presets, floor 150 ms), the other seat at
``--latency`` (club, 500 ms, by default); the win rate of the varied player with 95% bands.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from spit_env import core
from spit_env.checks import check_int
from spit_env.config import SpitConfig
from spit_env.latency import PRESET_MIN_MS, Latency
from spit_env.policy import call_policy, make_policy, parse_profile

__all__ = [
    "save_figure",
    "Player",
    "PairingResult",
    "GameJob",
    "pairing_jobs",
    "run_games",
    "play_pairing",
    "round_robin",
    "wilson_interval",
    "bradley_terry",
    "latency_curve",
    "plot_winrate_matrix",
    "plot_latency_curve",
    "main",
]

Trace = Callable[[object, np.ndarray], None]


# --- players -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Player:
    """A seat's occupant: a registered policy name, its factory kwargs and an optional latency.

    Attributes:
        label: the name shown in tables ("greedy@expert").
        policy: the registered policy name ("greedy").
        latency: the seat latency this player brings (None: keep the config's).
        kwargs: keyword arguments for the policy factory.
    """

    label: str
    policy: str
    latency: Latency | None = None
    kwargs: dict = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str | Player) -> Player:
        """A Player from a name or profile "name@latency"; a path to a trained model
        ("runs/x/model.zip", optionally "@latency") is the "ppo" policy loaded from it.

        Raises:
            ValueError: a bad profile (see ``parse_profile``).
        """
        if isinstance(spec, Player):
            return spec
        name, latency = parse_profile(spec)
        if name.endswith(".zip"):
            return cls(spec, "ppo", latency, {"path": name})
        from agents.rllib import is_rllib_checkpoint

        if is_rllib_checkpoint(name):  # a checkpoint folder of experiments/train_rllib.py
            return cls(spec, "rllib", latency, {"path": name})
        return cls(spec, name, latency)

    def build(self, seat_latency: Latency):
        """The policy object, told its seat's latency when it models it (``with_latency``)."""
        policy = make_policy(self.policy, **self.kwargs)
        if hasattr(policy, "with_latency"):
            policy = policy.with_latency(seat_latency)
        return policy


def _seat_config(config: SpitConfig, seat0: Player, seat1: Player) -> SpitConfig:
    pair = list(config.latency)
    for seat, player in enumerate((seat0, seat1)):
        if player.latency is not None:
            pair[seat] = player.latency
    return config.replace(latency=tuple(pair))


# --- running games -----------------------------------------------------------------------------
def run_games(
    seat0: Player | str,
    seat1: Player | str,
    game_ids: Sequence[int] | np.ndarray,
    *,
    config: SpitConfig | None = None,
    seed: int = 0,
    batch_size: int = 256,
    policy_seed: int | None = None,
    policy_stream: int = 0,
    trace: Trace | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, np.ndarray]:
    """Play game ids ``game_ids`` of ``seed`` to the end, ``seat0`` in seat 0, ``seat1`` in seat 1.

    Up to ``batch_size`` games run at once on the batched core; a finished row is re-started with
    the next game id (``core.reset``), so the batch stays full. Each seat's policy gets the
    observations and masks of its seat in the running rows and its own generator, seeded by
    (policy_seed, seat), so the same game ids with the seats' players swapped replay the same
    deals with the same streams. A busy seat's mask allows only WAIT, so its policy submits WAIT.

    Args:
        seat0, seat1: Players or profile strings.
        game_ids: (N,) distinct non-negative game ids.
        config: the game config (default SpitConfig()); profiles override a seat's latency.
        seed: the game seed (deals and all random streams).
        batch_size: games stepped at once, >= 1.
        policy_seed: seeds the policies' generators (default: ``seed``).
        policy_stream: >= 0; a stream k > 0 seeds them with (policy_seed, seat, k) instead of
            (policy_seed, seat): the chunks of a pairing (:class:`GameJob`) draw apart.
        trace: called as ``trace(state, row_game_ids)`` after the start and after every step
            (row_game_ids (B,) int64, -1 for an idle row); for tests and replays.
        progress: called with the number of games that just finished.

    Returns:
        dict of (N,) arrays in the order of ``game_ids``: "game_id" int64, "winner" int8 (seat
        0 / 1, -1 draw or truncation), "truncated" bool, "steps" int64 (core steps, i.e.
        decision epochs, the game took), "decisions" int64 (both players' decisions, D7),
        "rounds" int64 (completed rounds) and "clock_ms" int64 (the game's length in ms).

    Raises:
        ValueError: a bad batch size or game id list, an unknown policy or a bad profile.
    """
    check_int("batch_size", batch_size, 1)
    ids = np.asarray(game_ids, dtype=np.int64).reshape(-1)
    if ids.size and (ids.min() < 0 or np.unique(ids).size != ids.size):
        raise ValueError("game_ids must be distinct non-negative integers")
    seat0, seat1 = Player.parse(seat0), Player.parse(seat1)
    config = _seat_config(config or SpitConfig(), seat0, seat1)
    policies = [p.build(config.latency[s]) for s, p in enumerate((seat0, seat1))]
    pseed = seed if policy_seed is None else policy_seed
    if isinstance(policy_stream, bool) or not isinstance(policy_stream, (int, np.integer)) \
            or policy_stream < 0:
        raise ValueError(f"policy_stream must be an integer >= 0, got {policy_stream!r}")
    stream = [int(policy_stream)] if policy_stream else []
    rngs = [np.random.default_rng([int(pseed), s, *stream]) for s in range(2)]

    n = ids.size
    winner = np.full(n, -1, np.int8)
    truncated = np.zeros(n, bool)
    steps, decisions, rounds, clock = (np.zeros(n, np.int64) for _ in range(4))
    result = {"game_id": ids, "winner": winner, "truncated": truncated, "steps": steps,
              "decisions": decisions, "rounds": rounds, "clock_ms": clock}
    if n == 0:
        return result

    b = int(min(batch_size, n))
    # row -> index into ids (-1 idle); game ids are handed out in order as rows free up
    slot = np.arange(b, dtype=np.int64)
    first = ids[:b]
    if (np.diff(first) == 1).all():  # the usual case: a run of consecutive game ids
        state = core.init(config, b, seed, first_game=int(first[0]))
    else:
        state = core.reset(core.init(config, b, seed), np.ones(b, bool), first)
    next_index = b
    row_steps = np.zeros(b, np.int64)
    if trace is not None:
        trace(state, ids[slot])
    while True:
        active = slot >= 0
        if not active.any():
            break
        obs = core.observe(state)
        masks = core.legal_action_mask(state)
        actions = np.zeros((b, 2), np.int64)
        rows = np.flatnonzero(active)
        for s in range(2):
            # a planning policy also gets the public table of its seat (built only for it)
            actions[rows, s] = call_policy(policies[s], obs[rows, s], masks[rows, s], rngs[s],
                                           table=lambda s=s, st=state, r=rows: core.public_table(st, r, s))
        state, out = core.step(state, actions, rows=active)
        row_steps += active
        done = active & (out.terminated | out.truncated)
        if done.any():
            d = np.flatnonzero(done)
            k = slot[d]
            r = out.rewards[d]
            winner[k] = np.where(r[:, 0] > 0, 0, np.where(r[:, 1] > 0, 1, -1))
            truncated[k] = out.truncated[d]
            steps[k] = row_steps[d]
            decisions[k] = state.decisions[d].sum(axis=1)
            rounds[k] = state.rounds[d]
            clock[k] = state.clock[d]
            row_steps[d] = 0
            if progress is not None:
                progress(int(d.size))
            # refill finished rows with the next game ids, in row order
            take = min(d.size, n - next_index)
            refill = d[:take]
            slot[d[take:]] = -1
            if take:
                slot[refill] = np.arange(next_index, next_index + take)
                next_index += take
                reset_rows = np.zeros(b, bool)
                reset_rows[refill] = True
                gid = np.where(slot >= 0, ids[np.maximum(slot, 0)], 0)
                state = core.reset(state, reset_rows, gid)
        if trace is not None:
            trace(state, np.where(slot >= 0, ids[np.maximum(slot, 0)], -1))
    return result


# --- statistics --------------------------------------------------------------------------------
def wilson_interval(successes, trials, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Args:
        successes: the count of successes (may be fractional, e.g. draws as halves), 0..trials.
        trials: the number of trials, >= 0 (0 gives the vacuous interval (0, 1)).
        confidence: in (0, 1).

    Raises:
        ValueError: counts out of range or a bad confidence.
    """
    from scipy.stats import norm

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got successes={successes}, trials={trials}")
    if trials == 0:
        return 0.0, 1.0
    z = float(norm.ppf(0.5 + confidence / 2))
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    # at the ends the exact bound is 0 / 1; rounding would leave 1e-17 there
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == trials else min(1.0, centre + half)
    return lo, hi


def bradley_terry(names: Sequence[str], score: np.ndarray, games: np.ndarray,
                  ridge: float = 1e-3) -> dict[str, float]:
    """Bradley-Terry ratings on the Elo scale, mean 0.

    Args:
        names: the K players.
        score: (K, K) score of row i against column j (wins + draws / 2).
        games: (K, K) games between i and j (symmetric).
        ridge: the weight of a Gaussian prior on the strengths (keeps them finite).

    Returns:
        {name: rating}; P(i beats j) = 1 / (1 + 10 ** ((r_j - r_i) / 400)).
    """
    from scipy.optimize import minimize

    k = len(names)
    score = np.asarray(score, float)
    games = np.asarray(games, float)
    if score.shape != (k, k) or games.shape != (k, k):
        raise ValueError(f"score and games must be ({k}, {k}) arrays")

    def nll(theta):
        diff = theta[:, None] - theta[None, :]
        logp = -np.logaddexp(0.0, -diff)  # log sigmoid(diff)
        value = -(score * logp).sum() + ridge * (theta ** 2).sum()
        p = 1.0 / (1.0 + np.exp(-diff))
        grad_m = score * (1 - p)  # d/d diff of score * log p
        grad = -(grad_m.sum(axis=1) - grad_m.sum(axis=0)) + 2 * ridge * theta
        return value, grad

    res = minimize(nll, np.zeros(k), jac=True, method="L-BFGS-B")
    theta = res.x - res.x.mean()
    scale = 400.0 / math.log(10.0)
    return {name: float(scale * t) for name, t in zip(names, theta, strict=True)}


# --- pairings and the round robin -------------------------------------------------------------
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
    chunk's index, which seeds the policies' generators (see :func:`run_games`). A job is
    picklable, and its games depend on nothing but the job and :meth:`run`'s arguments.
    """

    seat0: Player
    seat1: Player
    first_game: int
    count: int
    stream: int = 0
    swapped: bool = False

    def run(self, *, config: SpitConfig | None = None, seed: int = 0, batch_size: int = 256,
            progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
        """Play the job's games (:func:`run_games`); returns its dict of (count,) arrays."""
        ids = np.arange(self.first_game, self.first_game + self.count)
        return run_games(self.seat0, self.seat1, ids, config=config, seed=seed,
                         batch_size=batch_size, policy_stream=self.stream, progress=progress)


#: ``runner(jobs, run_one, progress) -> outputs``: plays every job (``run_one(job)`` is
#: ``job.run`` with the tournament's config, seed and batch size bound) and returns the outputs
#: in the order of ``jobs``; ``progress(n)`` after n games. None: one after another, here.
Runner = Callable[[list, Callable, Callable[[int], None] | None], list]


def run_jobs_locally(jobs, run_one, progress=None) -> list:
    """The default :data:`Runner`: the jobs one after another in this process."""
    return [run_one(job, progress=progress) for job in jobs]


def pairing_jobs(a: Player | str, b: Player | str, deals: int, *, first_game: int = 0,
                 chunk: int | None = None) -> list[GameJob]:
    """The jobs of a duplicate-deal pairing: chunks of at most ``chunk`` deals (None: one chunk),
    chunk k as stream k, each played with a in seat 0 and with b in seat 0.

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
    """Score the outputs of a pairing's jobs (module docstring: scoring)."""
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


def play_pairing(a: Player | str, b: Player | str, deals: int, *, config: SpitConfig | None = None,
                 seed: int = 0, first_game: int = 0, batch_size: int = 256,
                 progress: Callable[[int], None] | None = None, chunk: int | None = None,
                 runner: Runner | None = None) -> PairingResult:
    """Duplicate deals: game ids first_game .. first_game + deals - 1, each with a in seat 0 then
    with b in seat 0, in chunks of ``chunk`` deals (None: one piece; :func:`pairing_jobs`) run
    by ``runner`` (None: here, one after another). See the module docstring for the scoring."""
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

    Returns:
        a JSON-serialisable dict: "players", "deals", "seed", "config", "pairings" (list of
        PairingResult dicts), "win_rate" / "ci_low" / "ci_high" ((K, K) nested lists, row
        against column, 0.5 and the vacuous interval on the diagonal) and "ratings" (Bradley-
        Terry, Elo scale).

    Raises:
        ValueError: fewer than 2 players, duplicate labels, or as :func:`play_pairing`.
    """
    from tqdm import tqdm

    players = [Player.parse(p) for p in players]
    labels = [p.label for p in players]
    if len(players) < 2 or len(set(labels)) != len(labels):
        raise ValueError(f"players must be at least 2 distinct names or profiles, got {labels}")
    config = config or SpitConfig()
    k = len(players)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    bar = tqdm(total=len(pairs) * 2 * deals, desc="tournament", unit="game", disable=not show_progress)
    jobs = [pairing_jobs(players[i], players[j], deals, chunk=chunk) for i, j in pairs]
    run_one = partial(_run_job, config=config, seed=seed, batch_size=batch_size)
    outputs = (runner or run_jobs_locally)([job for js in jobs for job in js], run_one, bar.update)
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
        "scoring": "win 1, loss 0, draw or truncation 1/2; 95% Wilson intervals over 2 x deals games",
        "pairings": [asdict(r) for r in results],
        "win_rate": rate.tolist(),
        "ci_low": lo.tolist(),
        "ci_high": hi.tolist(),
        "ratings": bradley_terry(labels, score, games),
    }


def write_csv(result: dict, path: str | Path) -> None:
    """One row per pairing (the PairingResult fields), plus each player's rating in a second table."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = list(result["pairings"][0])
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(result["pairings"])
    ratings = path.with_name(path.stem + "_ratings.csv")
    with ratings.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["player", "rating"])
        for name, r in sorted(result["ratings"].items(), key=lambda kv: -kv[1]):
            w.writerow([name, f"{r:.1f}"])


# --- latency study -----------------------------------------------------------------------------
def study_latency(mean_ms: float, cv: float = 0.2) -> Latency:
    """The varied seat's latency model: log-normal, sd = cv * mean, floored like the presets."""
    return Latency.lognormal(float(mean_ms), cv * float(mean_ms), PRESET_MIN_MS)


def latency_curve(bot: str, means_ms: Sequence[float], deals: int, *,
                  config: SpitConfig | None = None, reference: str | Latency = "club",
                  seed: int = 0, batch_size: int = 256, show_progress: bool = True,
                  runner: Runner | None = None) -> dict:
    """Win rate of ``bot`` with mean latency m against ``bot`` at ``reference``, for each m
    (each point's two seat orders run by ``runner``, as in :func:`round_robin`).

    Each point is a duplicate-deal pairing of ``deals`` deals (same deals at every m).

    Returns:
        a JSON-serialisable dict: "bot", "reference", "deals", "points": list of {"mean_ms",
        "win_rate", "ci_low", "ci_high", "games", "draws"}.
    """
    from tqdm import tqdm

    ref = Latency.parse(reference)
    bar = tqdm(total=len(means_ms) * 2 * deals, desc=f"latency study {bot}", unit="game",
               disable=not show_progress)
    points = []
    for m in means_ms:
        fast = Player(f"{bot}@{m:g}ms", bot, study_latency(m))
        base = Player(f"{bot}@{ref.label}", bot, ref)
        res = play_pairing(fast, base, deals, config=config, seed=seed, batch_size=batch_size,
                           progress=bar.update, runner=runner)
        points.append({"mean_ms": float(m), "win_rate": res.win_rate, "ci_low": res.ci_low,
                       "ci_high": res.ci_high, "games": res.games, "draws": res.draws})
    bar.close()
    return {"bot": bot, "reference": ref.label, "reference_mean_ms": ref.mean_ms,
            "deals": int(deals), "seed": int(seed), "cv": 0.2, "points": points}


# --- plots -------------------------------------------------------------------------------------
def plot_winrate_matrix(result: dict, path: str | Path | None = None):
    """Heatmap of the win rate of each row player against each column player, annotated with
    the rate and its 95% interval. Returns the matplotlib Figure (uses the current backend;
    the command line selects Agg); saves a PNG if ``path``."""
    import matplotlib.pyplot as plt

    labels = result["players"]
    rate, lo, hi = (np.asarray(result[k]) for k in ("win_rate", "ci_low", "ci_high"))
    k = len(labels)
    fig, ax = plt.subplots(figsize=(1.6 * k + 2, 1.3 * k + 1.5))
    im = ax.imshow(rate, vmin=0, vmax=1, cmap="RdBu")
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            dark = abs(rate[i, j] - 0.5) > 0.3
            ax.text(j, i, f"{rate[i, j]:.3f}\n[{lo[i, j]:.3f}, {hi[i, j]:.3f}]", ha="center",
                    va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(k), labels, rotation=30, ha="right")
    ax.set_yticks(range(k), labels)
    ax.set_xlabel("opponent")
    ax.set_ylabel("player")
    ax.set_title(f"win rate of row vs column, {result['deals']} duplicate deals per pairing\n"
                 "(draws count 1/2; 95% Wilson interval)", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.046)
    return save_figure(fig, path)


def plot_latency_curve(curve: dict, path: str | Path | None = None):
    """The latency study: win rate against the varied mean latency, with the 95% band."""
    import matplotlib.pyplot as plt

    pts = curve["points"]
    x = np.array([p["mean_ms"] for p in pts])
    y = np.array([p["win_rate"] for p in pts])
    lo = np.array([p["ci_low"] for p in pts])
    hi = np.array([p["ci_high"] for p in pts])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.fill_between(x, lo, hi, alpha=0.3, label="95% Wilson interval")
    ax.plot(x, y, "o-", label=f"{curve['bot']} vs {curve['bot']}@{curve['reference']}")
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.axvline(curve["reference_mean_ms"], color="grey", lw=0.8, ls=":")
    ax.set_xlabel("mean latency of the varied player (ms)")
    ax.set_ylabel("win rate of the varied player")
    ax.set_ylim(0, 1)
    ax.set_title(f"How much is speed worth? ({curve['deals']} duplicate deals per point)", fontsize=10)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def save_figure(fig, path: str | Path | None = None):
    """Lay out ``fig`` and, with a ``path``, write it there as PNG (120 dpi; folders made as
    needed). Returns the Figure."""
    fig.tight_layout()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
    return fig


# --- command line ------------------------------------------------------------------------------
def _parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m experiments.tournament",
        description="Round robin of Spit bots with duplicate deals (each deal played twice, seats "
        "swapped), win rates with 95%% Wilson intervals, Bradley-Terry ratings; optionally the "
        "latency study of one bot.",
    )
    p.add_argument("--players", default="random,greedy,chain,racer",
                   help="comma-separated policy names (ppo: the trained model shipped with the package), profiles name@latency, or paths of trained models (model.zip) (default: %(default)s)")
    p.add_argument("--games", type=int, default=200,
                   help="duplicate deals per pairing; each is played twice (default: %(default)s)")
    p.add_argument("--latency", default="club",
                   help="both seats' default latency: preset name or whole ms (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="game seed (default: %(default)s)")
    p.add_argument("--batch", type=int, default=512, help="games stepped at once (default: %(default)s)")
    p.add_argument("--json", type=Path, help="write the tournament result as JSON here")
    p.add_argument("--csv", type=Path, help="write one row per pairing as CSV here (+ _ratings.csv)")
    p.add_argument("--heatmap", type=Path, help="write the win-rate heatmap PNG here")
    p.add_argument("--latency-study", metavar="BOT",
                   help="also run the latency study of this bot against itself")
    p.add_argument("--latency-grid", default="300,350,400,450,500,550,600,650,700",
                   help="mean latencies (ms) of the varied seat (default: %(default)s)")
    p.add_argument("--latency-games", type=int, default=None,
                   help="duplicate deals per latency point (default: --games)")
    p.add_argument("--latency-json", type=Path, help="write the latency curve as JSON here")
    p.add_argument("--latency-plot", type=Path, help="write the latency curve PNG here")
    p.add_argument("--no-tournament", action="store_true", help="run only the latency study")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--chunk", type=int, default=1000,
                   help="deals per job (one task on Ray); the table depends on it, not on where "
                   "the jobs run (default: %(default)s)")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="run the jobs as Ray tasks: alone, on a local Ray started on 127.0.0.1 "
                   "for this run; 'auto' or HOST:PORT for a running cluster (needs the 'scale' "
                   "extra)")
    p.add_argument("--ray-cpus", type=int, default=None,
                   help="CPUs of the local Ray of a bare --ray (default: all)")
    args = p.parse_args(argv)
    if args.games < 1:
        p.error("--games must be >= 1")
    if args.chunk < 1:
        p.error("--chunk must be >= 1")
    if args.ray_cpus is not None and args.ray_cpus < 1:
        p.error("--ray-cpus must be >= 1")
    if args.ray is not None:
        from experiments.cluster.connect import parse_address

        try:
            parse_address(args.ray)
        except ValueError as err:
            p.error(f"--ray: {err}")
    if args.batch < 1:
        p.error("--batch must be >= 1")
    players = [s.strip() for s in args.players.split(",") if s.strip()]
    for spec in players + ([args.latency_study] if args.latency_study else []):
        try:
            Player.parse(spec).build(Latency.preset("club"))
        except (ValueError, OSError, ImportError) as err:  # ImportError: a broken bot plug-in
            p.error(f"--players / --latency-study: {spec!r}: {err}")
    if not args.no_tournament and len(set(players)) < 2:
        p.error(f"--players needs at least 2 distinct players, got {players}")
    try:
        Latency.parse(args.latency)
    except ValueError as err:
        p.error(f"--latency: {err}")
    return args


def _print_table(result: dict) -> None:
    print(f"{'player':>16} {'opponent':>16} {'win rate':>9} {'95% CI':>17} {'draws':>6}")
    for r in result["pairings"]:
        print(f"{r['a']:>16} {r['b']:>16} {r['win_rate']:9.3f} "
              f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] {r['draws']:6d}")
    print("ratings (Bradley-Terry, Elo scale):")
    for name, rating in sorted(result["ratings"].items(), key=lambda kv: -kv[1]):
        print(f"{name:>16} {rating:8.1f}")


def main(argv=None) -> dict:
    """Command-line entry point; returns {"tournament": ..., "latency": ...} (None if not run)."""
    args = _parse_args(argv)
    if args.ray is None:
        return _main(args, None)
    from experiments.cluster.connect import RayConnectError, RayMissingError, ray_session
    from experiments.cluster.tasks import run_jobs_on_ray

    try:
        with ray_session(args.ray, num_cpus=args.ray_cpus):
            return _main(args, run_jobs_on_ray)
    except (RayMissingError, RayConnectError) as err:
        sys.exit(f"python -m experiments.tournament: error: --ray: {err}")


def _main(args: argparse.Namespace, runner: Runner | None) -> dict:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    config = SpitConfig(latency=Latency.parse(args.latency))
    out: dict = {"tournament": None, "latency": None}
    if not args.no_tournament:
        players = [s.strip() for s in args.players.split(",") if s.strip()]
        result = round_robin(players, args.games, config=config, seed=args.seed,
                             batch_size=args.batch, show_progress=not args.quiet,
                             chunk=args.chunk, runner=runner)
        out["tournament"] = result
        _print_table(result)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=2))
        if args.csv:
            write_csv(result, args.csv)
        if args.heatmap:
            plot_winrate_matrix(result, args.heatmap)
    if args.latency_study:
        grid = [float(x) for x in args.latency_grid.split(",") if x.strip()]
        curve = latency_curve(args.latency_study, grid, args.latency_games or args.games,
                              config=config, reference=Latency.parse(args.latency), seed=args.seed,
                              batch_size=args.batch, show_progress=not args.quiet, runner=runner)
        out["latency"] = curve
        for pt in curve["points"]:
            print(f"{curve['bot']} at {pt['mean_ms']:.0f} ms vs {curve['reference']}: "
                  f"{pt['win_rate']:.3f} [{pt['ci_low']:.3f}, {pt['ci_high']:.3f}]")
        if args.latency_json:
            args.latency_json.parent.mkdir(parents=True, exist_ok=True)
            args.latency_json.write_text(json.dumps(curve, indent=2))
        if args.latency_plot:
            plot_latency_curve(curve, args.latency_plot)
    return out


if __name__ == "__main__":
    main()
