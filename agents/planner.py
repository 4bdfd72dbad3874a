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
4. **Choose.** The default policy's own move (what ``racer`` would play here) is the reference.
   For every other move the planner takes its outcome minus the reference's on each of the
   ``rollouts`` shared futures; it plays the move whose mean difference minus ``confidence``
   standard errors is highest, if that is above 0, else the reference move. So the planner is
   the default policy plus the deviations its rollouts show to pay (one-step policy
   improvement): a few noisy rollouts cannot talk it into a worse move, and more rollouts let
   smaller gains through.

Every rollout of a decision, and of all games of the batch deciding at once, runs in one core
state: one ``core.step`` per simulated epoch for all of them, no Python loop per rollout or game.

**Thinking costs no game time.** The simulated clock is the game's only time: the planner's
computation, however long, happens between two decision epochs, and its move lands after its
seat's latency like anyone's. Its cost is wall-clock time only (``last_stats``; decisions per
second: ``python -m experiments.benchmark``).

Budget: ``rollouts`` per move and ``horizon_ms``. Profiles: ``"planner"`` (the default budget,
sized so that a 1,000-deal tournament against racer fits in about 20 minutes on 2 cores) and
``"planner-fast"`` (a quarter of the rollouts and a shorter horizon).
"""

from __future__ import annotations

import numpy as np

from agents.heuristics import TableView
from spit_env import core, rules
from spit_env.policy import apply_profile, make_policy, reads_public_table

__all__ = ["PlannerBot", "PROFILES", "make_planner", "make_planner_fast"]

#: keyword arguments of the registered planner names
PROFILES = {
    "planner": dict(rollouts=16, horizon_ms=3000),
    "planner-fast": dict(rollouts=4, horizon_ms=2000),
}

_MAX_ROLLOUT_STEPS = 100_000  # every step advances the clock; more is a core bug


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


def _check_int(name: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in {lo}..{hi}, got {value!r}")
    return int(value)


def _check_weight(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


class PlannerBot:
    """``"planner"``: determinized Monte-Carlo planning on the core (see the module docstring).

    A policy that reads the public table: call it as ``planner(obs, masks, rng, table=table)``
    with ``table = spit_env.core.public_table(state, rows, seats)`` of the same rows (the
    environments and the match library, agents.arena, do this for it).

    Args:
        rollouts: simulated futures per legal move and decision, 1-4096.
        horizon_ms: how far a rollout looks ahead at most, in simulated ms, 1-600,000 (it also
            stops when the round or the game is over).
        rollout_policy: the default policy of both seats in the rollouts (a registered name or a
            Policy; "racer" by default). Each seat's copy takes its seat through
            ``spit_env.policy.apply_profile`` with that game's latency models (D7): a bot with
            the latency hook (the racer) believes its own seat's latency.
        win_weight: the value of a game won within a rollout, on top of the card difference
            (which lies in [-1, 1]), >= 0.
        confidence: how many standard errors a move's mean gain over the default policy's own
            move must exceed before the planner plays it, >= 0 (0: the best mean wins).

    Attributes:
        last_stats: what the last call did: ``decisions`` (rows planned), ``candidates`` (moves
            compared), ``rollouts``, ``rollout_steps`` (core row-steps simulated),
            ``max_simulated_ms`` (the longest rollout, in simulated ms; a rollout's last epoch
            starts before ``horizon_ms``: ``max_step_start_ms``) and ``deviations`` (moves
            played other than the default policy's own).

    Raises:
        ValueError: a bad budget or weight, an unknown rollout policy.
    """

    reads_public_table = True

    def __init__(self, rollouts: int = 16, horizon_ms: int = 3000, rollout_policy="racer",
                 win_weight: float = 2.0, confidence: float = 1.0):
        self.rollouts = _check_int("rollouts", rollouts, 1, 4096)
        self.horizon_ms = _check_int("horizon_ms", horizon_ms, 1, 600_000)
        self.win_weight = _check_weight("win_weight", win_weight)
        self.confidence = _check_weight("confidence", confidence)
        self.rollout_policy = rollout_policy
        self._default = make_policy(rollout_policy)  # checks the name now
        if reads_public_table(self._default):
            raise ValueError(f"rollout_policy must be a policy of observations alone, not one "
                             f"that plans on the public table, got {rollout_policy!r}")
        self._seat_policies: dict = {}
        self.last_stats: dict = {}

    def __repr__(self) -> str:
        return (f"PlannerBot(rollouts={self.rollouts}, horizon_ms={self.horizon_ms}, "
                f"rollout_policy={self.rollout_policy!r}, win_weight={self.win_weight}, "
                f"confidence={self.confidence})")

    # --- the default policy of the rollouts --------------------------------------------------
    def _policies(self, config, latency: tuple) -> tuple:
        """The rollout policy of seat 0 and seat 1 whose latency models are ``latency``.

        Args:
            config: the games' config (its other fields are kept).
            latency: a pair of Latency models, seat 0's and seat 1's.

        Returns:
            (policy of seat 0, policy of seat 1), one object if the two models agree; each
            seated through ``spit_env.policy.apply_profile``, so a bot that models its own
            latency believes its seat's.
        """
        key = latency
        hit = self._seat_policies.get(key)
        if hit is None:
            config = config.replace(latency=tuple(latency))
            seat0 = apply_profile(self._default, config, 0)[0]
            hit = (seat0, seat0 if key[0] == key[1] else apply_profile(self._default, config, 1)[0])
            if len(self._seat_policies) > 16:
                self._seat_policies.clear()
            self._seat_policies[key] = hit
        return hit

    def _by_latency(self, state, idx: np.ndarray) -> list:
        """The rows ``idx`` of ``state`` grouped by their seats' latency models (D7).

        A list of (positions j into ``idx``, or None for all of them; the rollout policies of
        their two seats): one group unless the batch mixes games of different latencies.
        """
        lat = state.latency[idx].astype(np.int64)
        models = state.latency_models
        code = lat[:, 0] * len(models) + lat[:, 1]
        if code.size == 0 or (code == code[0]).all():
            pair = tuple(lat[0]) if code.size else (0, 0)
            return [(None, self._policies(state.config, (models[pair[0]], models[pair[1]])))]
        n = len(models)
        return [(np.flatnonzero(code == c),
                 self._policies(state.config, (models[c // n], models[c % n])))
                for c in np.unique(code)]

    def _default_moves(self, sims, idx: np.ndarray, seats: np.ndarray, rng) -> np.ndarray:
        """(n,) the default policy's moves for seat ``seats[j]`` of row ``idx[j]``."""
        groups = self._by_latency(sims, idx)
        if len(groups) == 1:
            return self._moves(sims, idx, seats, groups[0][1], rng)
        out = np.empty(idx.size, np.int64)
        for j, pols in groups:
            out[j] = self._moves(sims, idx[j], seats[j], pols, rng)
        return out

    def _moves(self, sims, idx: np.ndarray, seats: np.ndarray, pols, rng) -> np.ndarray:
        """(n,) int64 moves of the rollout policies ``pols`` (seat 0's, seat 1's).

        Seat ``seats[j]`` of row ``idx[j]`` of ``sims`` moves; a heuristic bot reads its table
        view straight from the state, any other policy an observation.
        """
        masks = core.legal_action_mask(sims, idx, seats)
        by_view = hasattr(pols[0], "act")
        data = _view_of_state(sims, idx, seats) if by_view else core.observe(sims, idx, seats)
        if pols[0] is pols[1]:
            return np.asarray(pols[0].act(data, masks, rng) if by_view
                              else pols[0](data, masks, rng), np.int64)
        out = np.empty(idx.size, np.int64)
        for s in range(2):
            j = np.flatnonzero(seats == s)
            if j.size:
                out[j] = pols[s].act(_subview(data, j), masks[j], rng) if by_view else \
                    pols[s](data[j], masks[j], rng)
        return out

    # --- a decision ---------------------------------------------------------------------------
    def __call__(self, observations, action_masks, rng: np.random.Generator,
                 table=None) -> np.ndarray:
        """(B,) int64 legal moves for a batch of decisions (see the class docstring).

        Args:
            observations: (B, D) float32, layout ``rules.OBSERVATION``.
            action_masks: (B, A) bool legal moves.
            rng: the only randomness used (determinizations, streams, the rollouts' moves).
            table: the ``spit_env.core.PublicTable`` of the same B rows, in the same order.

        Raises:
            ValueError: bad shapes, or a missing / mismatched ``table``.
        """
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
                             "table=spit_env.core.public_table(state, rows, seats) of the same "
                             f"rows, got {type(table).__name__}")
        if table.batch_size != b:
            raise ValueError(f"table must hold the {b} rows of the observations, "
                             f"got {table.batch_size}")
        out = masks.argmax(axis=1).astype(np.int64)  # the only legal move, where there is one
        plan = np.flatnonzero(masks.sum(axis=1) >= 2)
        self.last_stats = dict(decisions=int(plan.size), candidates=0, rollouts=0,
                               rollout_steps=0, max_simulated_ms=0, max_step_start_ms=0,
                               deviations=0)
        if plan.size == 0:
            return out
        values, cand_row, cand_action = self._evaluate(table, plan, masks[plan], rng)
        # The default policy's own move is the reference: another move is played only when its
        # rollouts beat the reference's on the same futures by ``confidence`` standard errors.
        base = self._reference(table, plan, obs[plan], masks[plan], values, cand_row,
                               cand_action, rng)
        ref = np.flatnonzero(cand_action == base[cand_row])  # one per plan row, in row order
        diff = values - values[ref[cand_row]]
        K = values.shape[1]
        mean = diff.mean(axis=1)
        se = diff.std(axis=1, ddof=1) / np.sqrt(K) if K > 1 else np.full(mean.size, np.inf)
        lower = np.where(cand_action == base[cand_row], 0.0, mean - self.confidence * se)
        best = np.zeros(plan.size)
        np.maximum.at(best, cand_row, lower)
        better = (lower > 0) & (lower == best[cand_row])
        pick = base.copy()
        j = np.flatnonzero(better)
        pick[cand_row[j[::-1]]] = cand_action[j[::-1]]  # (the first best candidate wins a tie)
        out[plan] = pick
        self.last_stats["deviations"] = int((pick != base).sum())
        return out

    def _reference(self, table, plan, obs, masks, values, cand_row, cand_action, rng) -> np.ndarray:
        """(n,) int64 reference move of each planned row (module docstring, step 4).

        The default policy's own move for the planner's seat; where that is not among the legal
        moves given (a caller's mask narrower than the game's, e.g. WAIT taken out), the move
        with the best mean rollout value (the lowest action id among equals).
        """
        base = np.empty(plan.size, np.int64)
        for rows, pols in self._by_latency(table.state, plan):
            rows = np.arange(plan.size) if rows is None else rows
            seat = table.seat[plan[rows]]
            for s in (0, 1) if pols[0] is not pols[1] else (None,):
                j = rows if s is None else rows[seat == s]
                if j.size:
                    base[j] = pols[s or 0](obs[j], masks[j], rng)
        legal = masks[np.arange(plan.size), base]
        if not legal.all():
            mean = values.mean(axis=1)
            best = np.full(plan.size, -np.inf)
            np.maximum.at(best, cand_row, mean)
            top = np.flatnonzero(mean == best[cand_row])[::-1]
            first = np.empty(plan.size, np.int64)
            first[cand_row[top]] = cand_action[top]  # the lowest action id among the best
            base = np.where(legal, base, first)
        return base

    def _evaluate(self, table, plan: np.ndarray, masks: np.ndarray, rng: np.random.Generator):
        """The rollout values of every legal move of the ``plan`` rows.

        Args:
            table: the public table of the batch.
            plan: (n,) int64 indices of the rows to plan.
            masks: (n, A) bool legal moves of those rows.
            rng: draws the determinizations, the streams and the rollouts' moves.

        Returns:
            ``(values, cand_row, cand_action)``: (C, K) float64, the value of each of the C
            candidate moves in each of its K rollouts; (C,) int64 index into ``plan``; (C,)
            int64 action id.
        """
        K = self.rollouts
        cand_row, cand_action = np.nonzero(masks)
        C = cand_row.size
        # K determinizations per deciding row, shared by its moves (common random numbers)
        base = core.copy_rows(table.state, plan, K)
        every = np.arange(base.batch_size)
        core.replace_hidden(base, every, rng=rng)
        core.reseed_rows(base, every, rng.integers(0, np.iinfo(np.int64).max, base.batch_size))
        sims = core.copy_rows(base, (cand_row[:, None] * K + np.arange(K)).reshape(-1))
        M = sims.batch_size  # row i * K + k: move i, determinization k
        seat = np.repeat(table.seat[plan][cand_row], K)
        first = np.repeat(cand_action, K)
        values = self._rollouts(sims, seat, first, rng)
        self.last_stats.update(candidates=int(C), rollouts=int(M))
        return values.reshape(C, K), cand_row, cand_action

    def _rollouts(self, sims, seat: np.ndarray, first: np.ndarray, rng) -> np.ndarray:
        """Play every row of ``sims`` forward to the end of its rollout.

        Args:
            sims: the core state of the M rollouts.
            seat: (M,) int64, the planner's seat in each rollout.
            first: (M,) int64, the first move of rollout m, played by ``seat[m]``.
            rng: draws the default policy's moves.

        Returns:
            (M,) float64 values from ``seat``'s side (module docstring, step 3).
        """
        M = sims.batch_size
        ids = np.arange(M)  # row of sims -> rollout index (sims is compacted as rollouts end)
        seat_now = seat.copy()
        start = sims.clock.copy()
        end = start + self.horizon_ms
        rounds0 = sims.rounds.copy()
        values = np.zeros(M)
        steps = 0
        active = np.ones(M, bool)
        for n_step in range(_MAX_ROLLOUT_STEPS):
            B = sims.batch_size
            free = sims.free & active[:, None]
            acts = np.zeros((B, 2), np.int64)
            if n_step == 0:
                acts[np.arange(B), seat_now] = first
                free[np.arange(B), seat_now] = False
            r, s = np.nonzero(free)
            if r.size:
                acts[r, s] = self._default_moves(sims, r, s, rng)
            began = int((sims.clock[active] - start[ids[active]]).max())
            self.last_stats["max_step_start_ms"] = max(self.last_stats["max_step_start_ms"], began)
            sims, _ = core.step(sims, acts, rows=None if active.all() else active)
            steps += int(active.sum())
            done = active & ((sims.phase == rules.PHASE_OVER) | (sims.clock >= end[ids])
                             | ((sims.rounds > rounds0[ids]) & (sims.phase != rules.PHASE_SLAP)))
            if done.any():
                d = np.flatnonzero(done)
                values[ids[d]] = self._value(sims, d, seat_now[d])
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

    def _value(self, sims, rows: np.ndarray, seat: np.ndarray) -> np.ndarray:
        """(n,) the outcome of rows ``rows`` from ``seat``'s side (module docstring, step 3)."""
        held = sims.height[rows].sum(axis=2, dtype=np.int64) + sims.spit_n[rows]  # (n, P)
        if sims.config.scoring == "points":
            held = held + sims.scores[rows]
        j = np.arange(rows.size)
        v = (held[j, 1 - seat] - held[j, seat]) / rules.N_CARDS
        w = sims.winner[rows]
        won = sims.terminated[rows] & (w >= 0)
        return v + self.win_weight * np.where(won, np.where(w == seat, 1.0, -1.0), 0.0)


_RANK = rules.CARD_RANK.astype(np.int64)  # index card + 1


def _view_of_state(st, rows: np.ndarray, seats: np.ndarray) -> TableView:
    """The heuristic bots' TableView of seat ``seats[j]`` in row ``rows[j]``, from the core state.

    The same values ``read_table(core.observe(st, rows, seats))`` decodes (the time to landing
    clipped at 1000 ms, the opponent's move hidden unless the config shows it), without building
    the observation vector (the rollouts' hot path).
    """
    me = rows * 2 + seats
    opp = me ^ 1
    top = st.top.reshape(-1, rules.N_STOCKS)
    up = st.face_up.reshape(-1, rules.N_STOCKS)
    height = st.height.reshape(-1, rules.N_STOCKS)
    rank = np.where(up, _RANK.take(top.astype(np.intp) + 1), 0)  # all places of the pairs below
    ct = _RANK.take(st.centre_top.reshape(-1).astype(np.intp) + 1)
    cn = st.centre_n.reshape(-1).astype(np.int64)
    fa = st.fl_action.reshape(-1).take(opp).astype(np.int64)
    busy = fa >= 0
    ttl = np.where(busy, np.minimum(st.fl_land.reshape(-1).take(opp) - st.clock.take(rows),
                                    1000), 0)
    shown = busy & st.config.observe_opponent_move
    return TableView(
        phase=st.phase.take(rows).astype(np.int64),
        self_stock_top_rank=rank.take(me, axis=0), opp_stock_top_rank=rank.take(opp, axis=0),
        self_stock_height=height.take(me, axis=0).astype(np.int64),
        opp_stock_height=height.take(opp, axis=0).astype(np.int64),
        centre_top_rank=np.stack([ct.take(me), ct.take(opp)], axis=1),
        centre_size=np.stack([cn.take(me), cn.take(opp)], axis=1),
        opp_busy=busy, opp_time_to_land=ttl.astype(np.float64),
        opp_move_in_flight=np.where(shown, fa, -1),
    )


def _subview(view: TableView, j: np.ndarray) -> TableView:
    return TableView(**{k: v[j] for k, v in vars(view).items()})
