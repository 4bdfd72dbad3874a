"""The learner-versus-opponent engine shared by the single-agent views of the core.

:class:`Duel` holds B games of the batched core (one core state), each with a learner seat and an
opponent policy, and plays one learner decision at a time: the learner's action goes into the
next decision epoch with the opponent's (chosen by the opponent policy in one batched call); then,
while the learner's move is in flight (it is busy, D7), the core runs on with only the opponent
deciding, until the learner is free again or the episode ends. So every observation the learner
gets is one where it may act. ``SpitGymEnv`` is a Duel of one game, ``SpitVectorEnv`` and
``SpitVecEnv`` one of ``num_envs`` games; each adds only its API's conventions (seeding,
auto-reset, spaces) to the plumbing they share (``view.py``).

What needs no decision costs (almost) nothing: the opponent policy is asked only for decisions
with a choice (a seat whose only legal move is WAIT waits without a call, so the policy's
random draws are those of its decisions with a choice), and a seat's forced WAITs while the
other seat's move is in flight are jumped over at once (``core.fast_forward``: the same game as
stepping through them, to the millisecond and the random draw).

Rewards (``reward=``): "game": +1 / -1 on the step the learner wins / loses the game, 0 for a
draw or a truncation. "round": additionally +1 / -1 at every round end the learner / the
opponent wins: the player of the ``round_end`` event (emptied its stocks or counts first, D10 /
D12); for a two-pile stall-out, the one holding fewer cards (equal: 0). ``shaping`` adds
``shaping x (cards the learner played - cards the opponent played)`` at every step.

Episodes (``episode=``): "game": the episode is the game, terminated when it is won or drawn
(D14 / D15), truncated at a limit (D16), never both. "round": the episode also ends, terminated,
at the first round end.

Opponents: a registered policy name ("greedy"), a profile "name@latency" ("greedy@pro": the
profile's latency is the opponent seat's in the games dealt against it, instead of the seat's
``config.latency``; the core carries each game's seat latencies), or a Policy callable
(``spit_env.policy``); one for every row, or one per row (a league, a mix of bots and frozen
snapshots: the core steps every row at once and each opponent is asked once per decision epoch
for the rows it plays). ``learner_seat``: 0, 1 or "random" (drawn per row at every start).

Errors: under ``illegal_action="raise"`` the views call :meth:`Duel.refuse_illegal` before
:meth:`Duel.play`, so an illegal learner action is refused with nothing run (not even the
opponent's policy, whose random draws would change the game to come). An opponent policy that
fails (raises, or breaks the Policy contract) can only be found out while a decision is being
played, when some core steps may already be done: the Duel then records the failure
(:attr:`Duel.failure`) and the views refuse to step until the next start.
"""

from __future__ import annotations

import numpy as np

from .. import core, streams
from ..checks import check_choice, check_int, check_number
from ..config import SpitConfig, check_config
from ..policy import apply_profile, call_policy
from ..rules import EV_PLAY, EV_ROUND_END, WAIT, check_legal

__all__ = ["Duel", "REWARDS", "EPISODES", "LEARNER_SEATS", "check_options"]

REWARDS = ("game", "round")
EPISODES = ("game", "round")
LEARNER_SEATS = (0, 1, "random")
_MAX_INNER_STEPS = 1_000_000  # a busy learner must become free; more epochs than this is a core bug


def check_options(learner_seat, reward, shaping, episode) -> float:
    """Validate the learner options of a Duel (module docstring); return ``shaping`` as a float.

    Raises:
        ValueError: naming the first bad option and its allowed values.
    """
    check_choice("learner_seat", learner_seat, LEARNER_SEATS)
    check_choice("reward", reward, REWARDS)
    check_choice("episode", episode, EPISODES)
    return check_number("shaping", shaping)


def _seated_copies(policies: dict) -> list:
    """(seat, policy) pairs to ask, from an opponent's seated copies ``{seat: policy}``.

    One pair (seat None: every seat) when the copies are one object, else one per seat.
    """
    first = next(iter(policies.values()))
    if all(p is first for p in policies.values()):
        return [(None, first)]
    return sorted(policies.items())


class Duel:
    """B games of the core, each with a learner seat and an opponent policy (module docstring).

    The B games are the rows of one core state. Rows may play opponents of different profiles
    (:meth:`set_opponent` with ``idx``), and a profile's latency is the opponent seat's: each
    game's seats carry their own latency models in the core state (``core.init`` /
    ``core.reset`` with ``latency=``), set when the game starts.

    Args:
        config: the base rules (a profile's latency replaces the opponent seat's latency).
        batch_size: B >= 1.
        opponent: a Policy callable, a registered name or a profile.
        learner_seat: 0, 1 or "random".
        reward, shaping, episode: see the module docstring.
        events: always collect the core's events (the Gymnasium env reports them in ``info``).

    Attributes:
        state: the core state of the B games (None before the first :meth:`start`).
        seat: (B,) int64 the learner's seat in each row's current game.
        policy, opponent: the opponent's Policy, and the spec it was made from (rows playing
            different opponents: lists of each row's).
        row_opponent: (B,) int64, which of the opponents set each row plays (0 with one).
        failure: None, or the text of the error that stopped the last :meth:`play` part-way
            (the games are then half-stepped until the next :meth:`start`).

    Raises:
        ValueError: any bad argument (the batch size is named ``batch_size``).
    """

    def __init__(self, config, batch_size, opponent, learner_seat, reward, shaping, episode,
                 events=False):
        self.shaping = check_options(learner_seat, reward, shaping, episode)
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.base_config = check_config(config)
        self.learner_seat, self.reward, self.episode = learner_seat, reward, episode
        self.state: core.CoreState | None = None
        self.set_opponent(opponent)
        # Events cost time in the core: ask for them only when a reward or the episode end needs
        # them, and only the types it needs (all of them for ``events``).
        wanted = ({"round_end"} if reward == "round" or episode == "round" else set()) | (
            {"play"} if self.shaping != 0.0 else set())
        self.event_types = True if events else tuple(sorted(wanted))
        self.need_events = bool(events) or bool(wanted)
        self.seat = np.zeros(self.batch_size, np.int64)
        self._idx = np.arange(self.batch_size)
        self.failure: str | None = None

    def set_opponent(self, opponent, idx=None) -> None:
        """Replace the opponent (a Policy, name or profile) of every row, or of rows ``idx`` only.

        The policy decides from the next epoch on; a profile's latency is the opponent seat's
        from the games started then on (running games keep the latencies they were dealt with).
        Rows may play different opponents: each decision epoch asks every opponent once, for the
        rows it plays (in the order the opponents were set), while the core steps all rows at
        once.

        Args:
            opponent: the new opponent.
            idx: None (every row), or the integer indices of the rows that play it.

        Raises:
            ValueError: an unknown name or bad profile, or bad indices; nothing is changed then.
        """
        seats = (0, 1) if self.learner_seat == "random" else (self.learner_seat,)
        configs, policies = {}, {}
        for s in seats:
            # seated once per seat: a bot with the latency hook believes the latency of the seat
            # it plays, which differs by seat when the base config's seats differ
            policies[1 - s], configs[s] = apply_profile(opponent, self.base_config, 1 - s)
        if len(policies) == 2 and configs[0].latency[1] == configs[1].latency[0]:
            policies[0] = policies[1]  # the same belief: one object, asked once per epoch
        entry = (opponent, policies, configs)
        if idx is None:
            self._opponents = [entry]
            self.row_opponent = np.zeros(self.batch_size, np.int64)
        else:
            sel = np.zeros(self.batch_size, bool)
            sel[_check_idx(idx, self.batch_size)] = True
            # an opponent already playing other rows (the same name, or the same object) is
            # asked in the same call for these rows too
            same = [k for k, (spec, _, _) in enumerate(self._opponents)
                    if spec is opponent or isinstance(spec, str) and spec == opponent]
            entries = self._opponents + ([] if same else [entry])
            assign = np.where(sel, same[0] if same else len(self._opponents), self.row_opponent)
            kept = [k for k in range(len(entries)) if (assign == k).any()]
            self._opponents = [entries[k] for k in kept]
            remap = np.zeros(len(entries), np.int64)
            remap[kept] = np.arange(len(kept))
            self.row_opponent = remap[assign]
        self._latency = self._latency_table()

    def _latency_table(self) -> np.ndarray | None:
        """The seats' latency models by opponent and learner seat, as the core takes them.

        (K, 2, 2) Latency: [k, s] the two seats' models of a game against opponent k with the
        learner in seat s; None when every game plays the base config's (no profile latency).
        """
        base = self.base_config.latency
        table = np.empty((len(self._opponents), 2, 2), object)
        for k, (_, _, configs) in enumerate(self._opponents):
            for s in (0, 1):
                table[k, s] = configs.get(s, self.base_config).latency
        return None if all(tuple(pair) == base for pair in table.reshape(-1, 2)) else table

    def _row_latency(self, seats: np.ndarray) -> np.ndarray | None:
        """The ``latency`` of ``core.init`` / ``core.reset`` for games with learners in ``seats``.

        (B, 2) Latency by each row's opponent and learner seat, or None (the config's).
        """
        return None if self._latency is None else self._latency[self.row_opponent, seats]

    @property
    def opponent(self):
        """The opponent as given (a Policy, name or profile).

        With rows playing different opponents, a list of each row's.
        """
        if len(self._opponents) == 1:
            return self._opponents[0][0]
        return [self._opponents[k][0] for k in self.row_opponent]

    @property
    def policy(self):
        """The opponent's Policy (rows playing different opponents: a list of each row's).

        The policy as seated in the opponent's seat of :attr:`config`'s game (with a random
        learner seat and seats of different latencies, each seat has its own seated copy).
        """
        seat = 1 - min(self._opponents[0][2])
        if len(self._opponents) == 1:
            return self._opponents[0][1][seat]
        return [self._opponents[k][1][seat] for k in self.row_opponent]

    @property
    def config(self) -> SpitConfig:
        """The config of a game dealt now in row 0 with the learner in seat 0 (or its fixed seat).

        The base config with row 0's opponent's profile latency applied: the config of every game
        unless rows play different profiles or a profile gives the seats different latencies.
        """
        configs = self._opponents[self.row_opponent[0]][2]
        return configs[min(configs)]

    def row_config(self, row: int) -> SpitConfig:
        """The config of row ``row``'s current game, its seats' latencies included.

        ``core.row_config``; before any start, the config of a game dealt now in row 0
        (:attr:`config`).
        """
        return self.config if self.state is None else core.row_config(self.state, row)

    def draw_seats(self, rows: np.ndarray, seed: int, game_ids: np.ndarray) -> np.ndarray:
        """The learner seats of games started in ``rows``.

        (B,) int64: the learner seats for games ``game_ids`` ((B,) int, read in ``rows``) of
        ``seed`` started in ``rows`` ((B,) bool), the current seats elsewhere: ``learner_seat``,
        or with "random" the game's own draw (``streams.seat_draws``: a function of (seed, game
        id) alone).
        """
        seats = self.seat.copy()
        if self.learner_seat == "random":
            ids = np.broadcast_to(np.asarray(game_ids, np.int64), rows.shape)[rows]
            seats[rows] = streams.seat_draws(streams.game_key(seed, ids))
        else:
            seats[rows] = self.learner_seat
        return seats

    def render_names(self, row: int) -> tuple[str, str]:
        """The two seats' display names in row ``row``: ("player_0 (learner)", ...)."""
        learner = int(self.seat[row])
        return tuple(f"player_{p} ({'learner' if p == learner else 'opponent'})" for p in (0, 1))

    # --- the core -------------------------------------------------------------------------------
    def start(self, seed: int, first_game: int, seats: np.ndarray, deals=None) -> None:
        """Start every row as a fresh game.

        Row i plays game ``first_game + i`` of ``seed`` with the learner in ``seats[i]``.
        """
        self.seat = np.asarray(seats, np.int64).copy()
        self.state = core.init(self.base_config, self.batch_size, seed, first_game=first_game,
                               deals=deals, latency=self._row_latency(self.seat))
        self.failure = None

    def restart(self, rows: np.ndarray, game_ids: np.ndarray, seats: np.ndarray) -> None:
        """Re-start some rows as fresh games.

        Re-start the ``rows`` ((B,) bool) as fresh games ``game_ids`` ((B,) int64) with the learner
        in ``seats`` ((B,) int).
        """
        self.seat[rows] = seats[rows]
        core.reset(self.state, rows, game_ids, latency=self._row_latency(self.seat))

    def observe(self) -> np.ndarray:
        """(B, 2, D) float32 observations of both seats."""
        return core.observe(self.state)

    def observe_at(self, idx: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """(n, D) float32: the observation of seat ``seats[j]`` in row ``idx[j]`` ((n,) ints)."""
        return core.observe(self.state, idx, seats)

    def learner_observe(self, rows=None) -> np.ndarray:
        """(R, D) float32: the learners' observations in ``rows`` ((B,) bool; None: every row)."""
        idx = self._idx if rows is None else np.flatnonzero(rows)
        return self.observe_at(idx, self.seat[idx])

    def masks(self) -> np.ndarray:
        """(B, 2, 23) bool legal masks of both seats."""
        return core.legal_action_mask(self.state)

    def masks_at(self, idx: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """(n, 23) bool: the legal moves of seat ``seats[j]`` in row ``idx[j]``."""
        return core.legal_action_mask(self.state, idx, seats)

    def public_table(self, idx: np.ndarray, seats: np.ndarray) -> core.PublicTable:
        """The public table (``core.public_table``) of seat ``seats[j]`` in row ``idx[j]``."""
        return core.public_table(self.state, idx, seats)

    def learner_masks(self) -> np.ndarray:
        """(B, 23) bool: the learners' legal moves."""
        return self.masks_at(self._idx, self.seat)

    def snapshot(self, row: int) -> dict:
        """The public table of row ``row``'s game (``core.snapshot``)."""
        return core.snapshot(self.state, row)

    # --- one learner decision -------------------------------------------------------------------
    def refuse_illegal(self, actions: np.ndarray, rows: np.ndarray, name) -> None:
        """Under ``illegal_action="raise"``, refuse illegal learner actions before anything runs.

        Args:
            actions: (B,) int action ids 0-22 (range already checked).
            rows: (B,) bool, the rows that would play.
            name: ``name(row) -> str``, how the caller calls row ``row``'s action in messages.

        Raises:
            ValueError: naming the first row whose action is outside its learner's mask, the
                action and the legal ids (:func:`rules.check_legal`).
        """
        if self.base_config.illegal_action != "raise":
            return
        masks = self.learner_masks()
        bad = rows & ~masks[self._idx, actions]
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            check_legal(name(r), int(actions[r]), masks[r])

    def need_start(self) -> None:
        """ValueError if the last :meth:`play` stopped part-way (see :attr:`failure`)."""
        if self.failure is not None:
            raise ValueError(
                "an earlier step stopped part-way when the opponent policy failed "
                f"({self.failure}); the games cannot go on: call reset()"
            )

    def play(self, actions: np.ndarray, rows: np.ndarray, rng=None, skip_forced: int = 0):
        """One learner decision in ``rows``.

        Apply the learner's ``actions`` ((B,) int) in ``rows`` ((B,) bool) and run each row on while
        its learner is busy and its episode goes on. The opponent policy draws from the games' own
        streams (:meth:`policy_rng`); ``rng`` is ignored (the argument stays for callers). With
        ``skip_forced`` k > 0, a learner that becomes free with WAIT as its only legal move plays
        WAIT for itself, up to k times per row, and its row runs on (SpitVecEnv's
        ``skip_forced_waits``).

        The opponent policy is asked only for decisions with a choice: an opponent whose only
        legal move is WAIT waits without a policy call, and while the learner's move is in
        flight its forced WAITs are jumped over at once (``core.fast_forward``, the same game
        as stepping through them).

        Returns:
            (learner observations after, of the rows in ``rows`` (the others did not change):
            (R, D) float32 in row order; rewards (B,) float32, terminated (B,) bool, truncated
            (B,) bool, events: one list of EventLogs per core step, or None when no events were
            collected).

        Raises:
            whatever the opponent policy raises, or ValueError from :func:`policy.call_policy`
            for an answer that breaks the Policy contract; :attr:`failure` records it.
        """
        self.need_start()
        try:
            return self._play(actions, rows, skip_forced)
        except BaseException as err:  # even an interrupt leaves the games half-stepped
            self.failure = f"{type(err).__name__}: {err}"
            raise

    def _play(self, actions: np.ndarray, rows: np.ndarray, skip_forced: int):
        b = self.batch_size
        idx = self._idx
        seat = self.seat
        opp = 1 - seat
        rewards = np.zeros(b, np.float64)
        terminated = np.zeros(b, bool)
        truncated = np.zeros(b, bool)
        logs = [] if self.need_events else None
        rows = np.asarray(rows, bool)
        pending = rows.copy()
        skips = np.where(rows, skip_forced, 0) if skip_forced else None  # forced WAITs left
        first = True
        for _ in range(_MAX_INNER_STEPS):
            if not pending.any():
                break
            joint = np.full((b, 2), WAIT, np.int64)  # a learner asked nothing waits (forced)
            if first:
                joint[pending, seat[pending]] = actions[pending]
            # Only the opponent seats that decide now and have a choice are observed and asked.
            deciding = np.flatnonzero(pending & (self.state.fl_action[idx, opp] < 0))
            if deciding.size:
                od = opp[deciding]
                masks = self.masks_at(deciding, od)
                forced = ~masks[:, 1:].any(axis=1)  # WAIT is the only move: no policy needed
                if forced.any():
                    core.fast_forward(self.state, deciding[forced], od[forced])
                    choose = ~forced
                    deciding, od, masks = deciding[choose], od[choose], masks[choose]
                if deciding.size:
                    joint[deciding, od] = self._opponent_actions(deciding, od, masks)
            term, trunc, game_rew, step_logs = self._step(joint, pending)
            rewards += game_rew
            if logs is not None:
                logs.append(step_logs)
                ended_round = self._event_rewards(step_logs, rewards)
                if self.episode == "round":
                    term = term | (ended_round & pending)
                    trunc = trunc & ~term
            terminated |= term
            truncated |= trunc
            pending &= ~(term | trunc)
            free = pending & (self.state.fl_action[idx, seat] < 0)
            if skips is not None:
                cand = np.flatnonzero(free & (skips > 0))
                if cand.size:
                    m = self.masks_at(cand, seat[cand])
                    wait = cand[m[:, WAIT] & ~m[:, 1:].any(axis=1)]  # WAIT the only move
                    # its forced WAITs while the opponent's move is in flight, at once
                    skips[wait] -= core.fast_forward(self.state, wait, seat[wait], skips[wait])
                    wait = wait[skips[wait] > 0]
                    skips[wait] -= 1
                    free[wait] = False  # it waits in the next epoch (joint's WAIT)
            pending &= ~free
            first = False
        else:  # pragma: no cover - only a core that never frees a busy learner gets here
            raise RuntimeError("the learner stayed busy for too many decision epochs (core bug)")
        return self.learner_observe(rows), rewards.astype(np.float32), terminated, truncated, logs

    def policy_rng(self, idx: np.ndarray, seats: np.ndarray) -> streams.RowStreams:
        """The rng of a policy deciding for seat ``seats[j]`` of row ``idx[j]`` ((n,) ints).

        Row j's draws come from its own stream, keyed by (seed, game id, seat, decision index)
        (``streams.RowStreams``): the same in any batch and after any history.
        """
        st = self.state
        return streams.RowStreams(streams.draw(st.key[idx], streams.POLICY, seats,
                                               st.decisions[idx, seats].astype(np.int64)))

    def _opponent_actions(self, idx: np.ndarray, seats: np.ndarray,
                          masks: np.ndarray) -> np.ndarray:
        """(n,) int64: the opponents' choices for seat ``seats[j]`` of row ``idx[j]``.

        ``masks``: (n, 23) bool, their legal moves. One call of each opponent for the rows it
        plays, in the order of the opponents, with :meth:`policy_rng`.
        """
        obs = self.observe_at(idx, seats)
        out = np.empty(idx.size, np.int64)
        who = self.row_opponent[idx]
        for k in (0,) if len(self._opponents) == 1 else np.unique(who):
            for seat, policy in _seated_copies(self._opponents[k][1]):
                sel = who == k if seat is None else (who == k) & (seats == seat)
                if not sel.any():
                    continue
                j = slice(None) if sel.all() else np.flatnonzero(sel)  # all rows: no copies
                out[j] = call_policy(policy, obs[j], masks[j], self.policy_rng(idx[j], seats[j]),
                                     table=lambda j=j: self.public_table(idx[j], seats[j]))
        return out

    def _cards_held(self, idx: np.ndarray) -> np.ndarray:
        """(n, 2) int64: the stock and spit cards each seat holds in rows ``idx`` ((n,) ints)."""
        st = self.state
        return st.height[idx].sum(axis=2, dtype=np.int64) + st.spit_n[idx]

    def _step(self, joint, rows):
        """One core step of ``rows`` ((B,) bool; the other rows are untouched).

        Returns (terminated (B,), truncated (B,), the learners' game rewards (B,), EventLogs);
        no flags and zero rewards outside ``rows``.
        """
        events = self.need_events and self.event_types
        _, out = core.step(self.state, joint, rows=rows, events=events)
        logs = [] if out.events is None else [out.events]
        return out.terminated, out.truncated, out.rewards[self._idx, self.seat], logs

    def _event_rewards(self, logs, rewards) -> np.ndarray:
        """Add the round and shaping rewards of one core step's events to ``rewards``.

        Returns:
            (B,) bool, the rows where a round ended.
        """
        b = self.batch_size
        ended = np.zeros(b, bool)
        for log in logs:
            row = np.asarray(log.row, np.int64)
            typ = np.asarray(log.type)
            player = np.asarray(log.player, np.int64)
            re = typ == EV_ROUND_END
            ended[row[re]] = True
            if self.reward == "round" and re.any():
                r, p = row[re], player[re]
                learner = self.seat[r]
                win = np.where(p == learner, 1.0, np.where(p == 1 - learner, -1.0, 0.0))
                # Two-pile stall-out (player -1): the one holding fewer cards wins the round.
                # Stocks and spit stay as they were until the slap, so the table after the step
                # still shows the cards held at the round end.
                held = self._cards_held(r)
                win = np.where(p < 0, np.sign(held[np.arange(r.size), 1 - learner]
                                              - held[np.arange(r.size), learner]), win)
                np.add.at(rewards, r, win)
            if self.shaping != 0.0:
                pl = typ == EV_PLAY
                r, p = row[pl], player[pl]
                np.add.at(rewards, r, self.shaping * np.where(p == self.seat[r], 1.0, -1.0))
        return ended


def _check_idx(idx, batch_size: int) -> np.ndarray:
    """``idx`` as (n,) int64 row indices, if they are integers in 0..B-1 (one or a 1-D array).

    Raises:
        ValueError: anything else, naming ``idx`` and what is allowed.
    """
    arr = np.asarray(idx)
    if arr.ndim <= 1 and arr.dtype.kind in "iu" and ((arr >= 0) & (arr < batch_size)).all():
        return arr.reshape(-1).astype(np.int64)
    raise ValueError(
        f"idx must be None or integer row indices in 0..{batch_size - 1}, got {idx!r}"
    )
