"""Heuristic bots for spit-env, registered with :func:`spit_env.policy.register_policy` on import.

``agents.make(name, **kwargs)`` builds one by name or profile ("greedy", "racer@expert"); it is
:func:`spit_env.policy.make_policy`. The strategies are documented in :mod:`agents.heuristics`.

=========  ==================================================================================
name       strategy
=========  ==================================================================================
random     uniformly random legal move, WAIT included
greedy     any legal play at once, else flip, else fill; slap the smaller pile
chain      greedy, preferring plays that uncover face-down cards and keep a chain of plays going
racer      chain, plus denial of the opponent's follow-ups, race-aware use of its move in flight
planner    determinized Monte-Carlo planning on the core (``agents.planner``); "planner-fast":
           a smaller budget. Reads the public table (``reads_public_table``)
ppo        a trained MaskablePPO model (``agents.ppo``; ``agents.make("ppo", path=...)``)
=========  ==================================================================================
"""

from __future__ import annotations

from functools import partial

from spit_env.policy import make_policy, register_policy, registered_policies

from . import ppo  # noqa: F401  (registers "ppo"; torch is imported only when a model loads)
from .heuristics import ChainBot, GreedyBot, RacerBot, RandomBot, read_table
from .planner import PROFILES as PLANNER_PROFILES
from .planner import PlannerBot

__all__ = ["make", "BOTS", "RandomBot", "GreedyBot", "ChainBot", "RacerBot", "read_table",
           "registered_policies", "PlannerBot", "PLANNER_PROFILES"]

#: The heuristic bots by registered name, weakest first.
BOTS = {"random": RandomBot, "greedy": GreedyBot, "chain": ChainBot, "racer": RacerBot}

for _name, _factory in BOTS.items():
    register_policy(_name, _factory)
for _name, _budget in PLANNER_PROFILES.items():
    register_policy(_name, partial(PlannerBot, **_budget))

make = make_policy
