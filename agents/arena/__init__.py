"""The match library: players, the game loop, duplicate-deal pairings, intervals and ratings.

Everything in the project that plays policies against each other goes through it: the tournament
(``python -m experiments.tournament``), the replay, the real-time game, the evaluations of
``train_ppo`` and ``train_rllib``, the planner study and the notebooks::

    from agents import arena

    res = arena.play_pairing("racer", "greedy@pro", 500)      # 500 duplicate deals
    print(res.win_rate, res.ci_low, res.ci_high)
    table = arena.round_robin(["random", "greedy", "chain", "racer"], 200)

**Players and profiles** (:class:`Player`). A player is a registered policy name, a profile
"name@latency" (``spit_env.policy.parse_profile``), or the path of a trained model
("runs/x/model.zip" or an RLlib checkpoint folder, optionally "@latency"). The player's latency
replaces its seat's latency in the config of the games it plays; the policy takes its seat
through ``spit_env.policy.apply_profile``, so a bot that models its own latency (the racer)
believes the seat's latency, as it does as an environment's opponent.

**The game loop** (:class:`Match`, :func:`run_games`): two seated policies over a batch of games
on the core, finished rows re-started with the next game ids; steppable for callers that play a
seat themselves (the real-time game's human) or record every step (the replay).
:meth:`Match.of_pairings` runs several pairings in one batch (:func:`play_jobs`,
:func:`play_pairings`): a batch lasts as long as its longest game, so pairings that share one
pay for one long tail instead of one each.

**Duplicate deals.** Every pairing (A, B) plays each deal twice: game id g of ``seed`` with A in
seat 0 and B in seat 1, then the same game id with the seats swapped. A game id fixes the deal
and every random stream of the game (latency draws per seat and decision, tie coins, re-deal
shuffles; ``spit_env/streams.py``), and each seat's policy draws from that game's stream for the
seat (keyed by the game, the seat and the seat's decision index), so the two games differ only
in which policy sits where. Luck of the deal then cancels out of the pairing's result.

**Scoring.** A game's winner gets 1, the loser 0; a draw or a truncated game (D16) counts half
to each (``draws`` are also reported separately). The win rate of A against B is its score over
the pairing's 2 x deals games, with a 95% Wilson score interval (:func:`wilson_interval`). The
interval treats games as independent; the two games of a deal are negatively correlated (a deal
that favours a seat helps each player once), so for duplicate deals it is conservative.

**Ratings** (:func:`bradley_terry`). A Bradley-Terry fit of all pairings (draws as half a win
each), by maximum likelihood with scipy, on the Elo scale (400 points = 10:1 odds), centred on a
mean of 0. A tiny ridge term keeps the fit finite when a player wins every game.

**Jobs and runners** (:class:`GameJob`, :data:`Runner`). A pairing's games are split into jobs:
chunks of at most ``chunk`` deals, each played in both seat orders. A game's moves depend only on
its game id, its two players, the config and the seed: not on its job, the chunk size, the batch
size or the other games of its batch. A runner plays the jobs: here all in one batch
(:func:`run_jobs_locally`), or one Ray task each (``experiments.cluster.tasks.run_jobs_on_ray``),
with the same table, game for game.

**Latency study** (:func:`latency_curve`): one bot against itself, one seat's mean latency
varied over a grid, the other at a reference latency. Figures: :func:`plot_winrate_matrix`,
:func:`plot_latency_curve`, :func:`save_figure`.
"""

from __future__ import annotations

from agents.arena.latency_study import latency_curve, study_latency
from agents.arena.match import Match, Player, Trace, player_error, run_games
from agents.arena.pairings import (
    GameJob,
    PairingResult,
    Runner,
    pairing_jobs,
    pairing_result,
    play_jobs,
    play_pairing,
    play_pairings,
    round_robin,
    run_jobs_locally,
)
from agents.arena.plots import plot_latency_curve, plot_winrate_matrix, save_figure
from agents.arena.stats import bradley_terry, wilson_interval

__all__ = [
    "Player",
    "player_error",
    "Match",
    "Trace",
    "run_games",
    "PairingResult",
    "GameJob",
    "Runner",
    "run_jobs_locally",
    "play_jobs",
    "pairing_jobs",
    "pairing_result",
    "play_pairings",
    "play_pairing",
    "round_robin",
    "wilson_interval",
    "bradley_terry",
    "study_latency",
    "latency_curve",
    "plot_winrate_matrix",
    "plot_latency_curve",
    "save_figure",
]
