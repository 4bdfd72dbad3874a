"""The search player: the planner around a trained network (``"expert"``, ``"expert-fast"``).

``agents.make("expert")`` is :class:`ExpertBot`: the planner of :mod:`agents.planner`
(determinized Monte-Carlo planning on the batched core) whose **reference move** is the move of
a trained network (``agents.make("network")``: the policy network shipped with the package, or
``path=`` / ``model=`` another one). At each decision with two or more legal moves it plays the
network's move unless another legal move beats it, on the same ``rollouts`` simulated futures,
by ``confidence`` standard errors: the network plus the deviations its rollouts show to pay
(one-step policy improvement of the network).

The **rollout policy** plays both seats inside the simulated futures: ``"network"`` (the
expert's own network, as expert iteration does: the shipped one, as for the registered player
``"network"``, unless ``path=`` / ``model=`` gives another), or any registered bot of
observations (``"racer"`` by default: with the network in the rollouts a decision costs about
1.7 times the CPU time, and the shipped network plays no better than the racer;
docs/results/expert.md). With the network in the rollouts, each simulated epoch asks it once
for every rollout row whose seat has a choice, all games and rollouts of the batch in one
forward pass (one torch thread, ``threads=``), never a call per row.

**Pruning** (``prune``): the network's own probabilities are a prior; a legal move the network
gives less than ``prune`` gets no rollouts (its reference move always does), and a decision
left with one move plays it without a search. The moves the network all but rules out are
seldom the planner's departures, and their rollouts are about half the cost of a decision: the
same CPU buys more rollouts for the moves that may pay (docs/results/search.md).

Everything else is the planner's: it reads the public table (``reads_public_table``), draws
everything of game j from game j's own stream (a game's moves do not depend on the other games
of the batch: the network's forward pass gives a row the same bits in any batch,
``agents.network.FORWARD_BLOCK``), thinks in no game time, and returns its whole search with
:meth:`~agents.planner.PlannerBot.plan`. Its cost is wall-clock time per decision
(``python -m experiments.benchmark --only expert``).

Profiles, chosen from the measured curve of strength against CPU per decision
(docs/results/search.md): ``"expert"`` (28 rollouts per kept move, 3 s horizon, moves below 10%
pruned: the strongest search found at no more CPU per decision than ``"planner"``) and
``"expert-fast"`` (16 rollouts, a 1 s horizon valued by the shipped value network
``agents.value``, no pruning: the planner's strength for about two thirds of its CPU; at a 1 s
horizon pruning cost more strength than it saved). Any
budget argument overrides the profile's; the earlier budgets are
``agents.make("expert", rollouts=16, prune=0)`` and
``agents.make("expert-fast", rollouts=4, horizon_ms=2000, prune=0, leaf_value=None)``, and e.g.
``agents.make("expert", rollouts=32, rollout_policy="network", path="runs/x/model.zip")``.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from agents.planner import PlannerBot
from spit_env.checks import check_int
from spit_env.policy import make_policy

__all__ = ["ExpertBot", "PROFILES", "NETWORK", "make_expert", "make_expert_fast", "network_prior"]

#: the ``rollout_policy`` value that names the expert's own network
NETWORK = "network"

#: keyword arguments of the registered expert names
PROFILES = {
    "expert": dict(rollouts=28, horizon_ms=3000, rollout_policy="racer", prune=0.1),
    "expert-fast": dict(rollouts=16, horizon_ms=1000, rollout_policy="racer", prune=0.0,
                        leaf_value="value"),
}


def make_expert(**kwargs) -> ExpertBot:
    """The ``"expert"`` profile (entry point): :class:`ExpertBot` with PROFILES["expert"].

    Args:
        **kwargs: :class:`ExpertBot` arguments, each overriding the profile's.
    """
    return ExpertBot(**{**PROFILES["expert"], **kwargs})


def make_expert_fast(**kwargs) -> ExpertBot:
    """The ``"expert-fast"`` profile (entry point): PROFILES["expert-fast"].

    Args:
        **kwargs: :class:`ExpertBot` arguments, each overriding the profile's.
    """
    return ExpertBot(**{**PROFILES["expert-fast"], **kwargs})


class ExpertBot(PlannerBot):
    """``"expert"``: the planner with a trained network as its reference move (module docstring).

    Called like the planner: ``expert(obs (B, D) float32, masks (B, 23) bool, rng,
    table=core.public_table(...))`` -> (B,) int64 legal moves; :meth:`plan` gives the whole
    search (``agents.planner.Plan``; its ``reference`` holds the network's moves).

    Args:
        rollouts: simulated futures per legal move and decision, 1-4096 (with 1 no move can
            pass the confidence test, so the expert plays the network's moves).
        horizon_ms: how far a rollout looks ahead at most, in simulated ms, 1-600,000.
        rollout_policy: ``"network"`` (:data:`NETWORK`: the expert's own network), or a
            registered name or batched Policy of observations (as the planner's).
        path: a saved MaskablePPO model (``agents.network.load_model``); None (and no
            ``model``): the shipped network.
        model: a MaskablePPO model or its policy (not with ``path``).
        threads: torch threads of the network's forward passes, an integer >= 1 (1: a batch of
            game rows gains nothing from more on a shared machine;
            ``agents.network.NetworkPolicy``).
        **planner_kwargs: the planner's other arguments (``win_weight``, ``confidence``,
            ``racing``, ``race_z``, ``leaf_value``, ``prune``;
            :class:`agents.planner.PlannerBot`); ``prune`` drops the moves the network gives
            less than that probability (its ``prior``: :func:`network_prior`, unless given).

    Raises:
        ValueError: a bad budget, an unknown or table-reading rollout policy, both ``path`` and
            ``model``, a file that is not a Spit model, ``threads`` not an integer >= 1, or a
            ``reference`` (the network is the reference).
        FileNotFoundError: no ``path`` / ``model`` and the shipped network is missing.
    """

    def __init__(self, rollouts: int = 16, horizon_ms: int = 3000, rollout_policy=NETWORK,
                 path=None, model=None, threads: int = 1, **planner_kwargs):
        if "reference" in planner_kwargs:
            raise ValueError("reference: the expert's reference move is its network's; give "
                             "path= or model= for another network, or use the planner "
                             "(agents.make('planner', reference=...))")
        threads = check_int("threads", threads, 1)
        # the budget is checked before the network is loaded (a bad value costs no file read)
        own_prior = planner_kwargs.get("prior") is None
        PlannerBot(rollouts=rollouts, horizon_ms=horizon_ms, rollout_policy="random",
                   **dict(planner_kwargs, prior=_uniform if own_prior else planner_kwargs["prior"]))
        network = make_policy("network", path=path, model=model, threads=threads)
        if own_prior:  # pruning by the network's own probabilities
            planner_kwargs["prior"] = partial(network_prior, network)
        rollout = network if _names_network(rollout_policy) else rollout_policy
        super().__init__(rollouts=rollouts, horizon_ms=horizon_ms, rollout_policy=rollout,
                         reference=network, **planner_kwargs)
        self.network = network
        self.path = path
        self._given_model = model is not None
        self.threads = threads
        self.rollout_policy = NETWORK if rollout is network else rollout_policy

    def __repr__(self) -> str:
        where = (repr(str(self.path)) if self.path is not None
                 else "given" if self._given_model else "shipped")
        return (f"ExpertBot(rollouts={self.rollouts}, horizon_ms={self.horizon_ms}, "
                f"rollout_policy={self.rollout_policy!r}, network={where}, "
                f"win_weight={self.win_weight}, confidence={self.confidence}"
                + (f", prune={self.prune}" if self.prune else "")
                + ("" if self.leaf_value is None else f", leaf_value={self.leaf_value!r}")
                + (f", racing={self.racing}, race_z={self.race_z}" if self.racing > 1 else "")
                + ")")


def network_prior(network, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """(n, A) float64 the network's probabilities of the legal moves (softmax of its logits).

    Args:
        network: an ``agents.network.NetworkPolicy``.
        obs: (n, D) float32 observations.
        masks: (n, A) bool legal moves (a row with none gets zeros).
    """
    logits = np.where(masks, network.logits(obs).astype(np.float64), -np.inf)
    top = logits.max(axis=1, keepdims=True)
    p = np.exp(logits - np.where(np.isfinite(top), top, 0.0))
    return p / np.maximum(p.sum(axis=1, keepdims=True), 1e-300)


def _uniform(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    return masks / np.maximum(masks.sum(axis=1, keepdims=True), 1)


def _names_network(spec) -> bool:
    return isinstance(spec, str) and spec == NETWORK
