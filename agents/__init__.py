"""Bots for spit-env: the heuristic bots, the planners, and the players of trained networks.

Each is declared by name in the entry-point group ``spit_env.policies`` of this project's
pyproject.toml, so that ``spit_env.policy.make_policy`` finds it without importing this package
first. ``agents.make(name, **kwargs)`` builds one by name or profile ("greedy", "racer@pro");
it is :func:`spit_env.policy.make_policy`. The strategies are documented in
:mod:`agents.heuristics`.

=========  ==================================================================================
name       strategy
=========  ==================================================================================
random     uniformly random legal move, WAIT included
greedy     any legal play at once, else flip, else fill; slap the smaller pile
chain      greedy, preferring plays that uncover face-down cards and keep a chain of plays going
racer      chain, plus denial of the opponent's follow-ups, race-aware use of its move in flight
planner    determinized Monte-Carlo planning on the core (``agents.planner``); "planner-fast":
           a smaller budget. Reads the public table (``reads_public_table``)
expert     the planner with the shipped network as its reference move (``agents.expert``):
           the network's move unless a rollout shows another to pay, the moves it all but rules
           out pruned; "expert-fast": shorter rollouts valued by the shipped value network
           (``agents.value``), no pruning; ``rollout_policy="network"`` lets the network play
           the rollouts
network    a policy network of the package's model format (``agents.network``): the one
           shipped with the package, a policy network trained by expert iteration, or
           ``agents.make("network", path=...)``; "ppo": the older name of the same player
rllib      an RLlib PPO checkpoint (``agents.rllib``; ``agents.make("rllib", path=...)``)
=========  ==================================================================================
"""

from __future__ import annotations

from agents.expert import PROFILES as EXPERT_PROFILES
from agents.expert import ExpertBot
from agents.heuristics import ChainBot, GreedyBot, RacerBot, RandomBot, read_table
from agents.planner import PROFILES as PLANNER_PROFILES
from agents.planner import PlannerBot
from spit_env.policy import make_policy, registered_policies

__all__ = ["make", "BOTS", "RandomBot", "GreedyBot", "ChainBot", "RacerBot", "read_table",
           "registered_policies", "PlannerBot", "PLANNER_PROFILES", "ExpertBot",
           "EXPERT_PROFILES"]

#: The heuristic bots by registered name, weakest first (each also declared as an entry point).
BOTS = {"random": RandomBot, "greedy": GreedyBot, "chain": ChainBot, "racer": RacerBot}

make = make_policy
