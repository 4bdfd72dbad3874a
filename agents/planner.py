"""A planning bot: determinized Monte-Carlo planning on the batched core.

``agents.make("planner")`` (and the cheaper profile ``"planner-fast"``). At each of its decisions
with more than one legal move, for every legal move ``a`` it plays ``rollouts`` simulated futures
of the game forward in the core and plays the move with the best mean outcome:

1. **Determinize.** The planner reads the *public table* (``spit_env.core.PublicTable``: the
   game as both players have seen it; the hidden cards - face-down stock cards and both spit
   packs - are placeholders, the opponent's move in flight is shown only where
   ``config.observe_opponent_move`` lets it be seen). For each rollout it draws a uniformly random
   arrangement of the hidden cards among the hidden places (``core.replace_hidden``: the cards
   not visible to it, in the places the table shows) and a fresh random stream
   (``core.reseed_rows``): future latency draws, tie coins and re-deal shuffles are the planner's
   own guesses, never the game's. It cannot see a hidden card or foresee the clock.
2. **Roll out.** Rollout k of move a starts with a played by the planner's seat; from then on a
   default policy plays both seats (``racer`` by default, each seat believing its own latency
   model: the game's own, D7), until the round is over (the next round has started after the
   re-deal or slap), the game is over, or ``horizon_ms`` of simulated time have passed. The
   same ``rollouts`` arrangements and streams serve every move of a decision (common random
   numbers: the moves are compared on the same futures).
3. **Score.** An outcome, from the planner's seat: ``win_weight`` for a game won in the rollout
   (minus for a lost one), plus the card difference (opponent's cards held minus its own,
   stock and spit cards, over 52; in the points variant also the score difference).
4. **Choose.** The reference move is the default policy's own move (what ``racer`` would play
   here; ``reference=`` names another policy). For every other move the planner takes its
   outcome minus the reference's on each of the ``rollouts`` shared futures; it plays the move
   whose mean difference minus ``confidence`` standard errors is highest, if that is above 0,
   else the reference move. So the planner is the reference policy plus the deviations its
   rollouts show to pay (one-step policy improvement): a few noisy rollouts cannot talk it into
   a worse move, and more rollouts let smaller gains through. :meth:`PlannerBot.plan` returns
   all of it (:class:`Plan`).

Every rollout of a decision, and of all games of the batch deciding at once, runs in one core
state: one ``core.step`` per simulated epoch for all of them, no Python loop per rollout or game.
The default policy is asked only where a seat has a choice (two or more legal moves), once per
epoch for all those rows; a seat that can only WAIT while the other's move is in flight jumps to
that landing at once (``core.fast_forward``: the same game to the millisecond).

**Randomness per game.** Everything the planner draws for row j comes from one key drawn for
it, ``rng.integers(..., size=B)``: the match library and the environments pass a
``spit_env.streams.RowStreams``, which draws that key from game j's own stream, so the
planner's move in a game does not depend on the other games of the batch nor on the batch size
(docs/ENVIRONMENTS.md, "Seeding").

**Thinking costs no game time.** The simulated clock is the game's only time: the planner's
computation, however long, happens between two decision epochs, and its move lands after its
seat's latency like anyone's. Its cost is wall-clock time only (``last_stats``; decisions per
second: ``python -m experiments.benchmark``).

Budget: ``rollouts`` per move and ``horizon_ms`` (``racing`` stages drop the moves that cannot
beat the reference early; ``leaf_value`` values a rollout stopped by the horizon). Profiles:
``"planner"`` (the default budget, sized so that a 1,000-deal tournament against racer fits in
about 20 minutes on 2 cores) and ``"planner-fast"`` (a quarter of the rollouts and a shorter
horizon).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from os import PathLike

import numpy as np

from agents.heuristics import TableView
from spit_env import core, rules, streams
from spit_env.checks import check_int, check_number
from spit_env.policy import apply_profile, make_policy, reads_public_table

__all__ = ["PlannerBot", "Plan", "PROFILES", "make_planner", "make_planner_fast"]

#: keyword arguments of the registered planner names
PROFILES = {
    "planner": dict(rollouts=16, horizon_ms=3000),
    "planner-fast": dict(rollouts=4, horizon_ms=2000),
}

_MAX_ROLLOUT_STEPS = 100_000  # every step advances the clock; more is a core bug
_KEY_HIGH = np.iinfo(np.int64).max
_DETERMINIZE, _STREAM, _REFERENCE = 0, 1, 2  # the parts of a row's streams.PLAN draws


def make_planner(**kwargs) -> PlannerBot:
    """The ``"planner"`` profile (entry point): :class:`PlannerBot` with PROFILES["planner"].

    Args:
        **kwargs: :class:`PlannerBot` arguments, each overriding the profile's.
    """
    return PlannerBot(**{**PROFILES["planner"], **kwargs})


def make_planner_fast(**kwargs) -> PlannerBot:
    """The ``"planner-fast"`` profile (entry point): PROFILES["planner-fast"].

    Args:
        **kwargs: :class:`PlannerBot` arguments, each overriding the profile's.
    """
    return PlannerBot(**{**PROFILES["planner-fast"], **kwargs})


def _paired_stats(values: np.ndarray, n: np.ndarray, ref: np.ndarray):
    """Mean and standard error of each candidate's value minus its reference's, paired.

    Args:
        values: (C, K) float64 values; candidate i's first ``n[i]`` are played.
        n: (C,) int64 rollouts of each candidate (its reference has at least as many).
        ref: (C,) int64 the candidate index of each candidate's reference move.

    Returns:
        ``(mean, se)``, (C,) float64 over the first ``n[i]`` rollouts; se is inf where
        ``n[i]`` < 2.
    """
    played = np.arange(values.shape[1]) < n[:, None]
    diff = np.where(played, values - values[ref], 0.0)
    count = np.maximum(n, 1)
    mean = diff.sum(axis=1) / count
    dev = np.where(played, diff - mean[:, None], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt((dev * dev).sum(axis=1) / (n - 1) / count)
    return mean, np.where(n >= 2, se, np.inf)


def _observation_policy(name: str, spec):
    """``spec`` as a policy of observations alone (checked now), or ValueError naming ``name``."""
    try:
        policy = make_policy(spec)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    if reads_public_table(policy):
        raise ValueError(f"{name} must be a policy of observations alone, not one that plans on "
                         f"the public table, got {spec!r}")
    return policy


@dataclass(eq=False)
class Plan:
    """What the planner found for a batch of B decisions (:meth:`PlannerBot.plan`).

    Candidates are the legal moves of the planned rows, C in all, in row order and, within a
    row, in increasing action id. Values are in the planner's units (module docstring, step 3:
    card difference in [-1, 1] plus ``win_weight`` for a game won or lost in the rollout, or
    ``leaf_value`` where a rollout stops at the horizon), from the row's seat.

    Attributes:
        actions: (B,) int64 the moves the bot plays (what calling the bot returns).
        reference: (B,) int64 the reference move of each row (the only legal move of an
            unplanned row).
        planned: (B,) bool rows with two or more legal moves (the others get no rollout).
        cand_row: (C,) int64 row index 0..B-1 of each evaluated candidate.
        cand_action: (C,) int64 its action id.
        mean_diff: (C,) float64 its mean value minus the reference move's over the shared
            futures (0 for the reference move itself).
        se: (C,) float64 the standard error of ``mean_diff`` (inf with fewer than 2 rollouts;
            0 for the reference move).
        n_rollouts: (C,) int64 the rollouts the candidate got.
        value: (B,) float64 the mean rollout value of the reference move from the row's seat
            (a value target); NaN for unplanned rows.
    """

    actions: np.ndarray
    reference: np.ndarray
    planned: np.ndarray
    cand_row: np.ndarray
    cand_action: np.ndarray
    mean_diff: np.ndarray
    se: np.ndarray
    n_rollouts: np.ndarray
    value: np.ndarray


class PlannerBot:
    """``"planner"``: determinized Monte-Carlo planning on the core (see the module docstring).

    A policy that reads the public table: call it as ``planner(obs, masks, rng, table=table)``
    with ``table = spit_env.core.public_table(state, idx, seats)`` of the same rows (the
    environments and the match library, agents.arena, do this for it); :meth:`plan` gives the
    whole search result (:class:`Plan`).

    Args:
        rollouts: simulated futures per legal move and decision, 1-4096.
        horizon_ms: how far a rollout looks ahead at most, in simulated ms, 1-600,000 (it also
            stops when the round or the game is over).
        rollout_policy: the default policy of both seats in the rollouts (a registered name or a
            batched Policy of observations, e.g. ``agents.make("ppo", model=...)``; "racer" by
            default). Each seat's copy takes its seat through ``spit_env.policy.apply_profile``
            with that game's latency models (D7): a bot with the latency hook (the racer)
            believes its own seat's latency. It is called once per simulated epoch on every
            rollout row whose seat has a choice (two or more legal moves), observations built
            for those rows only; the heuristic bots read the core state directly.
        win_weight: the value of a game won within a rollout, on top of the card difference
            (which lies in [-1, 1]), >= 0.
        confidence: how many standard errors a move's mean gain over the reference move
            must exceed before the planner plays it, >= 0 (0: the best mean wins).
        reference: the policy whose move is the reference of each decision (a name or a
            batched Policy of observations, seated as ``rollout_policy``); None: the rollout
            policy (module docstring, step 4).
        racing: rollout stages, 1-4096 (1: every legal move gets ``rollouts``; at most
            ``rollouts`` stages). With more, the rollouts run stage by stage, and after each
            stage but the last a move whose mean gain over the reference move plus ``race_z``
            standard errors is below 0 is dropped (it could hardly end up ``confidence``
            standard errors above it); a row whose moves are all dropped stops.
        race_z: the standard errors of that drop rule, >= 0.
        prior: None, or a callable ``(obs (n, D) float32, masks (n, A) bool) -> (n, A)``
            probabilities of the legal moves (a policy network's; the expert's is its own).
        prune: moves the prior gives less than this probability get no rollouts (the reference
            move always gets them), in [0, 1]; 0: none is pruned. A decision left with one
            move plays the reference move without a search.
        leaf_value: the value of a rollout that stops at the horizon, in the planner's units
            and from the observing seat: a callable ``(obs (n, D) float32) -> (n,) float64``
            (the observation is the planner's seat's, ``core.observe``), a value network's
            file (``agents.value.load_value``; ``"value"``: the one shipped with the package),
            or None: the card difference, as at every other stop.

    Attributes:
        last_stats: what the last call did: ``decisions`` (rows planned), ``candidates`` (moves
            compared), ``rollouts``, ``rollout_steps`` (core row-steps simulated, forced WAITs
            jumped over counted as one), ``max_simulated_ms`` (the longest rollout, in simulated
            ms; a rollout's last epoch starts before ``horizon_ms``: ``max_step_start_ms``) and
            ``deviations`` (moves played other than the reference).
        totals: the sums over every call since it was made: ``calls``, ``decisions``,
            ``rollouts``, ``rollout_steps`` and ``cpu_s`` (the process's CPU seconds inside
            :meth:`plan`): the search's cost per decision, ``cpu_s / decisions``, in a game.

    Raises:
        ValueError: a bad budget or weight, an unknown or table-reading rollout or reference
            policy, a ``leaf_value`` that is not callable nor a value network's file.
        FileNotFoundError: a ``leaf_value`` file that does not exist.
    """

    reads_public_table = True

    def __init__(self, rollouts: int = 16, horizon_ms: int = 3000, rollout_policy="racer",
                 win_weight: float = 2.0, confidence: float = 1.0, reference=None,
                 leaf_value=None, racing: int = 1, race_z: float = 1.0, prior=None,
                 prune: float = 0.0):
        self.rollouts = check_int("rollouts", rollouts, 1, 4096)
        self.horizon_ms = check_int("horizon_ms", horizon_ms, 1, 600_000)
        self.win_weight = check_number("win_weight", win_weight, 0)
        self.confidence = check_number("confidence", confidence, 0)
        self.racing = check_int("racing", racing, 1, 4096)
        self.race_z = check_number("race_z", race_z, 0)
        self.prune = check_number("prune", prune, 0, 1)
        if prior is not None and not callable(prior):
            raise ValueError(f"prior must be None or a callable (obs (n, D) float32, masks (n, "
                             f"A) bool) -> (n, A) probabilities, got {prior!r}")
        if self.prune > 0 and prior is None:
            raise ValueError("prune needs a prior (the probabilities it prunes by): the expert "
                             "has its network's; give the planner prior=")
        self.prior = prior
        if isinstance(leaf_value, (str, PathLike)):  # the shipped value network, or a file
            from agents.value import load_value

            leaf_value = load_value(leaf_value)
        if leaf_value is not None and not callable(leaf_value):
            raise ValueError(f"leaf_value must be None, a value network's file ('value': the "
                             f"shipped one) or a callable (obs (n, D) float32) -> (n,) "
                             f"float64, got {leaf_value!r}")
        self.rollout_policy = rollout_policy
        self.reference = reference
        self.leaf_value = leaf_value
        self._default = _observation_policy("rollout_policy", rollout_policy)  # checked now
        self._reference = (self._default if reference is None
                           else _observation_policy("reference", reference))
        self._seat_policies: dict = {}
        self.last_stats: dict = {}
        self.totals = dict(calls=0, decisions=0, rollouts=0, rollout_steps=0, cpu_s=0.0)

    def __repr__(self) -> str:
        extra = "" if self.reference is None else f", reference={self.reference!r}"
        extra += "" if self.leaf_value is None else f", leaf_value={self.leaf_value!r}"
        extra += "" if self.racing == 1 else f", racing={self.racing}, race_z={self.race_z}"
        extra += "" if self.prune == 0 else f", prune={self.prune}"
        return (f"PlannerBot(rollouts={self.rollouts}, horizon_ms={self.horizon_ms}, "
                f"rollout_policy={self.rollout_policy!r}, win_weight={self.win_weight}, "
                f"confidence={self.confidence}{extra})")

    # --- the seated policies ------------------------------------------------------------------
    def _policies(self, policy, config, latency: tuple) -> tuple:
        """``policy`` seated in seat 0 and seat 1 of games whose latency models are ``latency``.

        Args:
            policy: the rollout policy or the reference policy.
            config: the games' config (its other fields are kept).
            latency: a pair of Latency models, seat 0's and seat 1's.

        Returns:
            (policy of seat 0, policy of seat 1), one object if the two models agree; each
            seated through ``spit_env.policy.apply_profile``, so a bot that models its own
            latency believes its seat's.
        """
        key = (id(policy), latency)
        hit = self._seat_policies.get(key)
        if hit is None:
            # the pair the rows already play (as core.row_config gives a game's config), not a
            # player taking a seat: apply_profile then seats the policy in it
            config = config.replace(latency=tuple(latency))
            seat0 = apply_profile(policy, config, 0)[0]
            seat1 = seat0 if latency[0] == latency[1] else apply_profile(policy, config, 1)[0]
            hit = (seat0, seat1)
            if len(self._seat_policies) > 32:
                self._seat_policies.clear()
            self._seat_policies[key] = hit
        return hit

    def _by_latency(self, policy, state, idx: np.ndarray) -> list:
        """The rows ``idx`` of ``state`` grouped by their seats' latency models (D7).

        A list of (positions j into ``idx``, or None for all of them; ``policy`` seated in
        their two seats): one group unless the batch mixes games of different latencies.
        """
        lat = state.latency[idx].astype(np.int64)
        models = state.latency_models
        code = lat[:, 0] * len(models) + lat[:, 1]
        if code.size == 0 or (code == code[0]).all():
            pair = tuple(lat[0]) if code.size else (0, 0)
            return [(None, self._policies(policy, state.config,
                                          (models[pair[0]], models[pair[1]])))]
        n = len(models)
        return [(np.flatnonzero(code == c),
                 self._policies(policy, state.config, (models[c // n], models[c % n])))
                for c in np.unique(code)]

    def _seated_moves(self, policy, state, idx: np.ndarray, seats: np.ndarray, masks, keys,
                      data=None) -> np.ndarray:
        """(n,) int64 moves of ``policy`` for seat ``seats[j]`` of row ``idx[j]`` of ``state``.

        Each row draws from its own stream (``streams.RowStreams`` over ``keys``, (n,) uint64),
        so its move does not depend on the other rows. ``masks``: (n, A) bool legal moves;
        ``data``: (n, D) observations, or None to build them (or, for a heuristic bot, its table
        view) from the state.
        """
        groups = self._by_latency(policy, state, idx)
        out = np.empty(idx.size, np.int64)
        for j, pols in groups:
            for s in (None,) if pols[0] is pols[1] else (0, 1):
                k = j
                if s is not None:
                    k = np.flatnonzero(seats == s) if j is None else j[seats[j] == s]
                    if k.size == 0:
                        continue
                if k is None and len(groups) == 1:  # every row, one policy: no copies
                    k = slice(None)
                elif k is None:
                    k = np.arange(idx.size)
                pol, rng = pols[s or 0], streams.RowStreams(keys[k])
                if data is not None:
                    out[k] = pol(data[k], masks[k], rng)
                elif hasattr(pol, "act"):  # a heuristic bot: its table view, from the state
                    out[k] = pol.act(_view_of_state(state, idx[k], seats[k]), masks[k], rng)
                else:
                    out[k] = pol(core.observe(state, idx[k], seats[k]), masks[k], rng)
        return out

    # --- a decision ---------------------------------------------------------------------------
    def __call__(self, observations, action_masks, rng, table=None) -> np.ndarray:
        """(B,) int64 legal moves for a batch of decisions: ``plan(...).actions``.

        Args:
            observations: (B, D) float32, layout ``rules.OBSERVATION``.
            action_masks: (B, A) bool legal moves.
            rng: a ``spit_env.streams.RowStreams`` (what the environments and the match library
                pass: each row's decision then depends on that row alone) or a Generator.
            table: the ``spit_env.core.PublicTable`` of the same B rows, in the same order.

        Raises:
            ValueError: bad shapes, or a missing / mismatched ``table``.
        """
        return self.plan(observations, action_masks, rng, table).actions

    def plan(self, observations, action_masks, rng, table=None) -> Plan:
        """The whole search of a batch of decisions (:class:`Plan`; module docstring).

        Each call is counted in :attr:`totals`.

        Every random draw of row j (its determinizations, their game streams, the rollouts'
        moves, the reference move's tie-breaks) comes from one key drawn for row j:
        ``rng.integers(..., size=B)``, which a ``spit_env.streams.RowStreams`` draws from row
        j's own stream. So with the rng of the environments or the match library, row j's plan
        is the same whatever other rows share the batch and whatever its size.

        Args:
            observations: (B, D) float32, layout ``rules.OBSERVATION``.
            action_masks: (B, A) bool legal moves.
            rng: a ``spit_env.streams.RowStreams`` or a Generator (then one shared draw of B
                keys).
            table: the ``spit_env.core.PublicTable`` of the same B rows, in the same order.

        Raises:
            ValueError: bad shapes, or a missing / mismatched ``table``.
        """
        cpu = time.process_time()
        out = self._plan(observations, action_masks, rng, table)
        t = self.totals
        t["calls"] += 1
        t["cpu_s"] += time.process_time() - cpu
        for name in ("decisions", "rollouts", "rollout_steps"):
            t[name] += self.last_stats.get(name, 0)
        return out

    def _plan(self, observations, action_masks, rng, table=None) -> Plan:
        """The search of :meth:`plan`, uncounted."""
        obs = np.asarray(observations, dtype=np.float32)
        masks = np.asarray(action_masks)
        if obs.ndim != 2 or obs.shape[1] != rules.OBS_DIM:
            raise ValueError(f"observations must have shape (B, {rules.OBS_DIM}), got {obs.shape}")
        b = obs.shape[0]
        if masks.shape != (b, rules.N_ACTIONS) or masks.dtype != bool:
            raise ValueError(f"action_masks must be a ({b}, {rules.N_ACTIONS}) bool array, got "
                             f"shape {masks.shape} dtype {masks.dtype}")
        if not isinstance(table, core.PublicTable):
            raise ValueError("the planner reads the public table: call it with "
                             "table=spit_env.core.public_table(state, idx, seats) of the same "
                             f"rows, got {type(table).__name__}")
        if table.batch_size != b:
            raise ValueError(f"table must hold one row per observation ({b}), "
                             f"got {table.batch_size}")
        keys = np.asarray(rng.integers(0, _KEY_HIGH, size=b), np.int64).view(np.uint64)
        out = masks.argmax(axis=1).astype(np.int64)  # the only legal move, where there is one
        planned = masks.sum(axis=1) >= 2
        plan = np.flatnonzero(planned)
        self.last_stats = dict(decisions=int(plan.size), candidates=0, rollouts=0,
                               rollout_steps=0, max_simulated_ms=0, max_step_start_ms=0,
                               deviations=0)
        value = np.full(b, np.nan)
        if plan.size == 0:
            empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
            return Plan(out, out.copy(), planned, empty_i, empty_i.copy(), empty_f,
                        empty_f.copy(), empty_i.copy(), value)
        pm, pk = masks[plan], keys[plan]
        # The reference move: another move is played only when its rollouts beat the
        # reference's on the same futures by ``confidence`` standard errors.
        base = self._reference_moves(table, plan, obs[plan], pm, pk)
        if self.prune > 0:
            pm, searched = self._pruned(obs[plan], pm, base)
            out[plan[~searched]] = base[~searched]
            plan, pm, pk, base = plan[searched], pm[searched], pk[searched], base[searched]
            if plan.size == 0:
                empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
                return Plan(out, out.copy(), planned, empty_i, empty_i.copy(), empty_f,
                            empty_f.copy(), empty_i.copy(), value)
        cand_row, cand_action = np.nonzero(pm)
        legal = pm[np.arange(plan.size), base]
        values, n = self._evaluate(table, plan, pk, cand_row, cand_action,
                                   np.where(legal, base, -1))
        if not legal.all():  # a caller's mask narrower than the game's: the best mean instead
            mean = values.sum(axis=1) / n
            best = np.full(plan.size, -np.inf)
            np.maximum.at(best, cand_row, mean)
            top = np.flatnonzero(mean == best[cand_row])[::-1]
            first = np.empty(plan.size, np.int64)
            first[cand_row[top]] = cand_action[top]  # the lowest action id among the best
            base = np.where(legal, base, first)
        is_ref = cand_action == base[cand_row]
        ref = np.flatnonzero(is_ref)  # one per plan row, in row order
        mean, se = _paired_stats(values, n, ref[cand_row])
        mean[is_ref], se[is_ref] = 0.0, 0.0
        lower = np.where(is_ref, 0.0, mean - self.confidence * se)
        best = np.zeros(plan.size)
        np.maximum.at(best, cand_row, lower)
        better = (lower > 0) & (lower == best[cand_row])
        pick = base.copy()
        j = np.flatnonzero(better)
        pick[cand_row[j[::-1]]] = cand_action[j[::-1]]  # (the first best candidate wins a tie)
        out[plan] = pick
        reference = out.copy()
        reference[plan] = base
        value[plan] = values[ref].sum(axis=1) / n[ref]
        self.last_stats["deviations"] = int((pick != base).sum())
        return Plan(out, reference, planned, plan[cand_row].astype(np.int64),
                    cand_action.astype(np.int64), mean, se, n.astype(np.int64), value)

    def _pruned(self, obs: np.ndarray, masks: np.ndarray, base: np.ndarray):
        """The moves left to search after the prior's pruning, and the rows that search.

        Args:
            obs: (n, D) float32 the planned rows' observations.
            masks: (n, A) bool their legal moves.
            base: (n,) int64 their reference moves (never pruned).

        Returns:
            ``(masks, searched)``: (n, A) bool the moves kept (those the prior gives at least
            ``prune``, and the reference move); (n,) bool the rows left with two or more.
        """
        prior = np.asarray(self.prior(obs, masks), np.float64)
        if prior.shape != masks.shape or not np.isfinite(prior[masks]).all():
            raise ValueError(f"prior must return {masks.shape} finite probabilities, got "
                             f"shape {prior.shape}")
        keep = prior >= self.prune
        keep[np.arange(base.size), base] = True
        masks = masks & keep
        return masks, masks.sum(axis=1) >= 2

    def _reference_moves(self, table, plan, obs, masks, keys) -> np.ndarray:
        """(n,) int64 the reference policy's move for the planner's seat of each planned row.

        Its draws come from the row's key. It may lie outside the legal moves given (a
        caller's mask narrower than the game's, e.g. WAIT taken out): :meth:`plan` then takes
        the move with the best mean rollout value (the lowest action id among equals).
        """
        rng_keys = streams.draw(keys, streams.PLAN, 0, _REFERENCE)
        return self._seated_moves(self._reference, table.state, plan, table.seat[plan], masks,
                                  rng_keys, data=obs)

    def _evaluate(self, table, plan: np.ndarray, keys: np.ndarray, cand_row: np.ndarray,
                  cand_action: np.ndarray, base: np.ndarray):
        """The rollout values of the candidate moves of the ``plan`` rows.

        Determinization k of row j (its hidden cards and its game stream) is drawn from
        ``keys[j]`` and k alone (``streams.PLAN``) and serves every move of the row (common
        random numbers). With ``racing`` > 1 the K rollouts run in that many stages; after
        each stage but the last, a move whose mean gain over the reference plus ``race_z``
        standard errors is below 0 gets no more rollouts, and a row left with its reference
        alone stops.

        Args:
            table: the public table of the batch.
            plan: (n,) int64 indices of the rows to plan.
            keys: (n,) uint64 the rows' keys.
            cand_row: (C,) int64 index into ``plan`` of each candidate.
            cand_action: (C,) int64 its move.
            base: (n,) int64 the reference move of each row, -1 where it is not a candidate
                (then every candidate of the row gets every rollout).

        Returns:
            ``(values, n)``: (C, K) float64 the value of each candidate in each rollout (the
            first ``n[i]`` are played, the rest 0); (C,) int64 the rollouts each got.
        """
        K = self.rollouts
        C = cand_row.size
        start = core.copy_rows(table.state, plan, K)  # row j * K + k: determinization k of j
        every = np.arange(start.batch_size)
        k = np.arange(K, dtype=np.uint64)
        core.replace_hidden(start, every, rng=streams.RowStreams(
            streams.draw(keys[:, None], streams.PLAN, k, _DETERMINIZE).reshape(-1)))
        core.reseed_rows(start, every,
                         streams.draw(keys[:, None], streams.PLAN, k, _STREAM).reshape(-1))
        seat = table.seat[plan][cand_row]
        is_ref = cand_action == base[cand_row]
        ref = np.full(plan.size, -1)
        ref[cand_row[is_ref]] = np.flatnonzero(is_ref)
        values = np.zeros((C, K))
        n = np.zeros(C, np.int64)
        alive = np.ones(C, bool)
        bounds = np.unique(np.linspace(0, K, min(self.racing, K) + 1).round().astype(np.int64))
        for k0, k1 in zip(bounds[:-1], bounds[1:], strict=True):
            sel = np.flatnonzero(alive)
            ks = np.arange(k0, k1)
            sims = core.copy_rows(start, (cand_row[sel][:, None] * K + ks).reshape(-1))
            v = self.rollout(sims, np.repeat(seat[sel], ks.size),
                             np.repeat(cand_action[sel], ks.size))
            values[sel[:, None], ks] = v.reshape(sel.size, ks.size)
            n[sel] = k1
            if k1 == K:
                break
            # racing: drop the moves that cannot beat the reference (rows with one: keep all)
            judged = alive & ~is_ref & (ref[cand_row] >= 0)
            mean, se = _paired_stats(values, n, np.maximum(ref[cand_row], 0))
            with np.errstate(invalid="ignore"):  # 0 * inf standard errors: not beaten
                alive &= ~(judged & (mean + self.race_z * se < 0))
            rivals = np.zeros(plan.size, bool)
            rivals[cand_row[alive & ~is_ref]] = True
            alive &= rivals[cand_row]
            if not alive.any():
                break
        self.last_stats.update(candidates=int(C), rollouts=int(n.sum()))
        return values, n

    def rollout(self, sims, seat: np.ndarray, first: np.ndarray | None = None, *,
                horizon_ms: int | None = None, whole_game: bool = False) -> np.ndarray:
        """Play every row of ``sims`` forward to the end of its rollout; its value.

        Each seat with a choice moves by the rollout policy, drawing from the row's own game
        stream (keyed like an environment's policy: stream key, seat, decision index); a seat
        with one legal move plays it without a policy call, and a seat that can only WAIT while
        the other seat's move is in flight jumps over those epochs at once
        (``core.fast_forward``, the same game to the millisecond), never past the horizon. A
        rollout ends when the game is over, ``horizon_ms`` of simulated time have passed, or
        (unless ``whole_game``) the round is over. ``sims`` is stepped in place.

        Args:
            sims: the core state of the M rollouts (rows already determinized: a rollout
                plays the hidden cards it finds).
            seat: (M,) int64, the seat whose value is returned (the planner's).
            first: (M,) int64, the first move of rollout m, played by ``seat[m]`` (legal
                there); None: every seat with a choice moves by the rollout policy from the
                start.
            horizon_ms: the rollouts' horizon in simulated ms (default: the planner's).
            whole_game: play on over round ends, to the game's end or the horizon.

        Returns:
            (M,) float64 values from ``seat``'s side (module docstring, step 3; a rollout
            stopped by the horizon within its first round is valued by ``leaf_value`` when
            there is one).
        """
        for name in ("rollout_steps", "max_simulated_ms", "max_step_start_ms"):
            self.last_stats.setdefault(name, 0)  # a rollout outside plan() counts too
        M = sims.batch_size
        ids = np.arange(M)  # row of sims -> rollout index (sims is compacted as rollouts end)
        seat_now = np.asarray(seat, np.int64).copy()
        start = sims.clock.copy()
        end = start + (self.horizon_ms if horizon_ms is None else int(horizon_ms))
        rounds0 = sims.rounds.copy()
        wait_ms = sims.config.wait_ms
        values = np.zeros(M)
        steps = 0
        active = np.ones(M, bool)
        for n_step in range(_MAX_ROLLOUT_STEPS):
            B = sims.batch_size
            free = sims.free & active[:, None]
            acts = np.zeros((B, 2), np.int64)
            if n_step == 0 and first is not None:
                acts[np.arange(B), seat_now] = first
                free[np.arange(B), seat_now] = False
            r, s = np.nonzero(free)
            if r.size:
                m = core.legal_action_mask(sims, r, s)
                choice = m.sum(axis=1) >= 2
                move = m.argmax(axis=1)  # the only legal move, where there is one
                c = np.flatnonzero(choice)
                if c.size:
                    rc, sc = r[c], s[c]
                    keys = streams.draw(sims.key[rc], streams.POLICY, sc,
                                        sims.decisions[rc, sc].astype(np.int64))
                    move[c] = self._seated_moves(self._default, sims, rc, sc, m[c], keys)
                acts[r, s] = move
                # a seat that can only WAIT while the other's move is in flight
                w = np.flatnonzero(~choice & (move == rules.WAIT))
                if w.size:
                    rw, sw = r[w], s[w]
                    w = w[~sims.free[rw, 1 - sw]]
                    if w.size:
                        rw = r[w]
                        cap = (end[ids[rw]] - sims.clock[rw] - 1) // wait_ms  # stay < horizon
                        core.fast_forward(sims, rw, s[w], np.maximum(cap, 0))
            began = int((sims.clock[active] - start[ids[active]]).max())
            self.last_stats["max_step_start_ms"] = max(self.last_stats["max_step_start_ms"], began)
            sims, _ = core.step(sims, acts, rows=None if active.all() else active)
            steps += int(active.sum())
            over = sims.phase == rules.PHASE_OVER
            late = sims.clock >= end[ids]
            round_over = (sims.rounds > rounds0[ids]) & (sims.phase != rules.PHASE_SLAP)
            done = active & (over | late | (round_over & (not whole_game)))
            if done.any():
                d = np.flatnonzero(done)
                values[ids[d]] = self._value(sims, d, seat_now[d], late[d] & ~over[d]
                                             & (sims.rounds[d] == rounds0[ids[d]]))
                self.last_stats["max_simulated_ms"] = max(
                    self.last_stats["max_simulated_ms"], int((sims.clock[d] - start[ids[d]]).max()))
                active &= ~done
                n_active = int(active.sum())
                if n_active == 0:
                    break
                if n_active < 0.75 * B:  # drop the finished rollouts from the batch
                    keep = np.flatnonzero(active)
                    sims = core.copy_rows(sims, keep)
                    ids, seat_now, active = ids[keep], seat_now[keep], np.ones(keep.size, bool)
        else:  # pragma: no cover - only a core whose clock stands still gets here
            raise RuntimeError("a rollout did not end (core bug)")
        self.last_stats["rollout_steps"] += steps
        return values

    def _value(self, sims, idx: np.ndarray, seat: np.ndarray, horizon: np.ndarray) -> np.ndarray:
        """(n,) the outcome of rows ``idx`` ((n,) ints) from ``seat``'s side (step 3).

        ``horizon``: (n,) bool, the rollouts stopped by the horizon alone; ``leaf_value``
        values them, when given.
        """
        held = sims.height[idx].sum(axis=2, dtype=np.int64) + sims.spit_n[idx]  # (n, P)
        if sims.config.scoring == "points":
            held = held + sims.scores[idx]
        j = np.arange(idx.size)
        v = (held[j, 1 - seat] - held[j, seat]) / rules.N_CARDS
        w = sims.winner[idx]
        won = sims.terminated[idx] & (w >= 0)
        v = v + self.win_weight * np.where(won, np.where(w == seat, 1.0, -1.0), 0.0)
        if self.leaf_value is not None and horizon.any():
            h = np.flatnonzero(horizon)
            leaf = np.asarray(self.leaf_value(core.observe(sims, idx[h], seat[h])), np.float64)
            if leaf.shape != (h.size,) or not np.isfinite(leaf).all():
                raise ValueError(f"leaf_value must return ({h.size},) finite float values, got "
                                 f"shape {leaf.shape}")
            v[h] = leaf
        return v


_RANK = rules.CARD_RANK.astype(np.int64)  # index card + 1


def _view_of_state(st, idx: np.ndarray, seats: np.ndarray) -> TableView:
    """The heuristic bots' TableView of seat ``seats[j]`` in row ``idx[j]``, from the core state.

    The same values ``read_table(core.observe(st, idx, seats))`` decodes (the time to landing
    clipped at 1000 ms, the opponent's move hidden unless the config shows it), without building
    the observation vector (the rollouts' hot path).
    """
    me = idx * 2 + seats
    opp = me ^ 1
    top = st.top.reshape(-1, rules.N_STOCKS)
    up = st.face_up.reshape(-1, rules.N_STOCKS)
    height = st.height.reshape(-1, rules.N_STOCKS)
    rank = np.where(up, _RANK.take(top.astype(np.intp) + 1), 0)  # all places of the pairs below
    ct = _RANK.take(st.centre_top.reshape(-1).astype(np.intp) + 1)
    cn = st.centre_n.reshape(-1).astype(np.int64)
    fa = st.fl_action.reshape(-1).take(opp).astype(np.int64)
    busy = fa >= 0
    ttl = np.where(busy, np.minimum(st.fl_land.reshape(-1).take(opp) - st.clock.take(idx),
                                    1000), 0)
    shown = busy & st.config.observe_opponent_move
    return TableView(
        phase=st.phase.take(idx).astype(np.int64),
        self_stock_top_rank=rank.take(me, axis=0), opp_stock_top_rank=rank.take(opp, axis=0),
        self_stock_height=height.take(me, axis=0).astype(np.int64),
        opp_stock_height=height.take(opp, axis=0).astype(np.int64),
        centre_top_rank=np.stack([ct.take(me), ct.take(opp)], axis=1),
        centre_size=np.stack([cn.take(me), cn.take(opp)], axis=1),
        opp_busy=busy, opp_time_to_land=ttl.astype(np.float64),
        opp_move_in_flight=np.where(shown, fa, -1),
    )
