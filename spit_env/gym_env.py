"""Gymnasium single-agent environment: a learner in one seat against an opponent policy.

``gymnasium.make("Spit-v0", opponent="greedy", ...)`` or ``SpitGymEnv(...)``. One game, a
batch-1 view of the batched core (``core.py``).

One env step = one learner decision. The learner's action goes into the next decision epoch with
the opponent's (chosen by the opponent policy); then, while the learner's move is in flight
(the learner is busy, D7), the core runs on with only the opponent deciding, until the learner is
free again or the episode ends. So every observation the learner gets is one where it may act.

Spaces: observation ``Box(0, 1, (D,), float32)`` (the learner's egocentric observation, layout
``rules.OBSERVATION``, docs/ENVIRONMENTS.md); action ``Discrete(23)`` (the egocentric action ids of
``rules.py``). ``action_masks()`` -> (23,) bool, the learner's legal moves, for sb3-contrib's
MaskablePPO. An illegal action follows ``config.illegal_action`` (default "wait": it is played
as WAIT and reported as an ``illegal`` event).

Rewards (``reward=``): "game" (default): +1 / -1 on the step the learner wins / loses the game,
0 for a draw or a truncation. "round": additionally +1 / -1 at every round end the learner /
the opponent wins: the player of the ``round_end`` event (emptied its stocks or counts first,
D10 / D12); for a two-pile stall-out, the one holding fewer cards (equal: 0). ``shaping`` adds
``shaping x (cards the learner played - cards the opponent played)`` at every step (default 0).

Episodes (``episode=``): "game" (default): the episode is the game, terminated when it is won or
drawn (D14 / D15), truncated at a limit (D16), never both. "round": the episode also ends,
terminated, at the first round end (the next reset deals a fresh game).

Auto-reset: none (Gymnasium's rules: call ``reset()`` after the end). ``info`` holds
``"events"`` (every event of the core steps this env step ran, docs/RULES.md "Events") and
``"learner_seat"``.

Opponents: a registered bot name ("greedy"), a profile "name@latency" ("greedy@expert": the
profile's latency replaces the opponent seat's ``config.latency``), or a Policy callable
(``spit_env.policy``). ``learner_seat``: 0, 1 or "random" (drawn at every reset).

Seeding: as ``spit_env.parallel_env``: ``reset(seed=s)`` plays game 0 of ``s``, each later
``reset()`` the next game id; the opponent's and the seat draws use a Generator seeded with ``s``.
"""

from __future__ import annotations

import math

import gymnasium
import numpy as np
from gymnasium import spaces

from . import core
from .config import SpitConfig, check_config
from .parallel_env import check_deal, check_render_mode, next_game
from .policy import apply_profile, call_policy
from .render import RENDER_MODES, render
from .rules import EV_PLAY, EV_ROUND_END, N_ACTIONS, OBS, OBS_DIM, WAIT, check_action

__all__ = ["SpitGymEnv", "Duel", "REWARDS", "EPISODES", "LEARNER_SEATS"]

REWARDS = ("game", "round")
EPISODES = ("game", "round")
LEARNER_SEATS = (0, 1, "random")
_MAX_INNER_STEPS = 1_000_000  # a busy learner must become free; more epochs than this is a core bug


def check_options(learner_seat, reward, shaping, episode) -> float:
    """Validate the learner options shared by SpitGymEnv and SpitVecEnv; returns shaping as float."""
    if isinstance(learner_seat, bool) or learner_seat not in LEARNER_SEATS:
        raise ValueError(f"learner_seat must be one of {list(LEARNER_SEATS)}, got {learner_seat!r}")
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {list(REWARDS)}, got {reward!r}")
    if episode not in EPISODES:
        raise ValueError(f"episode must be one of {list(EPISODES)}, got {episode!r}")
    if isinstance(shaping, bool) or not isinstance(shaping, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(shaping)):
        raise ValueError(f"shaping must be a finite number, got {shaping!r}")
    return float(shaping)


class Duel:
    """B games of the core, each with a learner seat and an opponent policy: the machinery shared
    by :class:`SpitGymEnv` (B = 1) and ``SpitVecEnv``.

    A profile opponent may give the two seats different latencies depending on where the learner
    sits; the core takes one config per batch, so with ``learner_seat="random"`` and such an
    asymmetric pair the rows live in two core states (one per learner seat, each row playing in
    the one of its current seat). Otherwise there is one state.

    Args:
        config: the base rules (a profile's latency replaces the opponent seat's latency).
        batch_size: B >= 1.
        opponent: a Policy callable, a registered name or a profile.
        learner_seat: 0, 1 or "random".
        reward, shaping, episode: see the ``gym_env`` module docstring.
        events: always collect the core's events (the Gymnasium env reports them in ``info``).

    Raises:
        ValueError: any bad argument.
    """

    def __init__(self, config, batch_size, opponent, learner_seat, reward, shaping, episode,
                 events=False):
        self.shaping = check_options(learner_seat, reward, shaping, episode)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {batch_size!r}")
        self.base_config = check_config(config)
        self.batch_size = int(batch_size)
        self.learner_seat, self.reward, self.episode = learner_seat, reward, episode
        self.states: list = []
        self.set_opponent(opponent)
        # Events cost time in the core; ask for them only when a reward or the episode end needs them.
        self.need_events = bool(events) or reward == "round" or episode == "round" or self.shaping != 0.0
        self.seat = np.zeros(self.batch_size, np.int64)
        self.owner = np.zeros(self.batch_size, np.int64)
        self._idx = np.arange(self.batch_size)

    def set_opponent(self, opponent) -> None:
        """Replace the opponent (a Policy, name or profile). The policy decides from the next
        epoch on; a profile's latency is part of the games' config, so it applies from the next
        :meth:`start` (running games keep the config they were dealt with).

        Raises:
            ValueError: an unknown name or bad profile.
        """
        seats = (0, 1) if self.learner_seat == "random" else (self.learner_seat,)
        configs = {}
        for s in seats:
            policy, configs[s] = apply_profile(opponent, self.base_config, 1 - s)
        distinct = []
        for s in seats:
            if configs[s] not in distinct:
                distinct.append(configs[s])
        self.policy = policy
        self.opponent = opponent
        # One core state per distinct config; seat -> index of its state.
        self._next_layout = (distinct, {s: distinct.index(configs[s]) for s in seats})
        if not getattr(self, "states", None):
            self.configs, self.state_of_seat = self._next_layout

    @property
    def config(self) -> SpitConfig:
        """The config of the first core state (the only one unless seats need different ones)."""
        return self.configs[0]

    # --- the core, seen through the row -> state map ------------------------------------------
    def start(self, seed: int, first_game: int, seats: np.ndarray, deals=None) -> None:
        """Start every row: row i plays game ``first_game + i`` of ``seed`` with learner seat
        ``seats[i]``."""
        self.configs, self.state_of_seat = self._next_layout
        self.states = [
            core.init(cfg, self.batch_size, seed, first_game=first_game, deals=deals) for cfg in self.configs
        ]
        self.seat = np.asarray(seats, np.int64).copy()
        self.owner = np.array([self.state_of_seat[int(s)] for s in self.seat], np.int64)

    def restart(self, rows: np.ndarray, game_ids: np.ndarray, seats: np.ndarray) -> None:
        """Re-start the ``rows`` ((B,) bool) as fresh games ``game_ids`` ((B,) int64) with the
        learner in ``seats`` ((B,) int)."""
        self.seat[rows] = seats[rows]
        self.owner[rows] = [self.state_of_seat[int(s)] for s in self.seat[rows]]
        for k, state in enumerate(self.states):
            rk = rows & (self.owner == k)
            if rk.any():
                core.reset(state, rk, game_ids)

    def _merge(self, per_state):
        if len(per_state) == 1:
            return per_state[0]
        sel = self.owner.reshape((-1,) + (1,) * (per_state[0].ndim - 1))
        return np.where(sel == 0, per_state[0], per_state[1])

    def _at(self, fn, idx: np.ndarray, seats: np.ndarray, width: int, dtype) -> np.ndarray:
        """(n, width): ``fn(state, rows, seats)`` of seat ``seats[j]`` in row ``idx[j]``, each row
        asked of the core state it lives in."""
        if len(self.states) == 1:
            return fn(self.states[0], idx, seats)
        out = np.empty((idx.size, width), dtype)
        own = self.owner[idx]
        for k, state in enumerate(self.states):
            j = np.flatnonzero(own == k)
            if j.size:
                out[j] = fn(state, idx[j], seats[j])
        return out

    def observe(self) -> np.ndarray:
        """(B, 2, D) float32 observations of both seats."""
        return self._merge([core.observe(s) for s in self.states])

    def observe_at(self, idx: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """(n, D) float32: the observation of seat ``seats[j]`` in row ``idx[j]`` ((n,) ints)."""
        return self._at(core.observe, idx, seats, OBS_DIM, np.float32)

    def learner_observe(self, rows=None) -> np.ndarray:
        """(R, D) float32: the learners' observations in ``rows`` (None: all, (B,) bool or indices)."""
        idx = self._idx if rows is None else _indices(rows)
        return self.observe_at(idx, self.seat[idx])

    def masks(self) -> np.ndarray:
        """(B, 2, 23) bool legal masks of both seats."""
        return self._merge([core.legal_action_mask(s) for s in self.states])

    def masks_at(self, idx: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """(n, 23) bool: the legal moves of seat ``seats[j]`` in row ``idx[j]``."""
        return self._at(core.legal_action_mask, idx, seats, N_ACTIONS, bool)

    def public_tables(self, idx: np.ndarray, seats: np.ndarray) -> list:
        """The public tables (``core.public_table``) of seat ``seats[j]`` in row ``idx[j]``, as
        ``spit_env.policy.call_policy`` takes them: a list of (positions j, PublicTable), one per
        core state the rows live in (usually one)."""
        if len(self.states) == 1:
            return [(np.arange(idx.size), core.public_table(self.states[0], idx, seats))]
        own = self.owner[idx]
        parts = []
        for k, state in enumerate(self.states):
            j = np.flatnonzero(own == k)
            if j.size:
                parts.append((j, core.public_table(state, idx[j], seats[j])))
        return parts

    def learner_masks(self) -> np.ndarray:
        """(B, 23) bool: the learners' legal moves."""
        return self.masks_at(self._idx, self.seat)

    def free(self) -> np.ndarray:
        """(B, 2) bool: no move in flight."""
        return self._merge([np.asarray(s.free) for s in self.states])

    def _fl_action(self) -> np.ndarray:
        if len(self.states) == 1:
            return self.states[0].fl_action
        return self._merge([s.fl_action for s in self.states])

    def snapshot(self, row: int) -> dict:
        return core.snapshot(self.states[self.owner[row]], row)

    # --- one learner decision -------------------------------------------------------------------
    def play(self, actions: np.ndarray, rows: np.ndarray, rng: np.random.Generator, obs=None, *,
             learner_only: bool = False):
        """Apply the learner's ``actions`` ((B,) int) in ``rows`` ((B,) bool) and run each row on
        while its learner is busy and its episode goes on.

        ``obs`` is not used (the opponent's observations are computed from the state; the
        argument stays for callers written against the earlier signature).

        Returns:
            (obs after: (B, 2, D) float32, or (B, D) the learners' with ``learner_only``,
            rewards (B,) float32, terminated (B,) bool, truncated (B,) bool,
            events: list of per-core-step lists of EventLogs or None).
        """
        b = self.batch_size
        idx = self._idx
        seat = self.seat
        opp = 1 - seat
        rewards = np.zeros(b, np.float64)
        terminated = np.zeros(b, bool)
        truncated = np.zeros(b, bool)
        logs = [] if self.need_events else None
        pending = np.array(rows, bool)
        first = True
        for _ in range(_MAX_INNER_STEPS):
            if not pending.any():
                break
            joint = np.full((b, 2), WAIT, np.int64)
            if first:
                joint[pending, seat[pending]] = actions[pending]
            # Only the opponent seats that decide now are observed (the policy's rows and order,
            # hence its random draws, are those of a full observe-then-select).
            deciding = np.flatnonzero(pending & (self._fl_action()[idx, opp] < 0))
            if deciding.size:
                od = opp[deciding]
                joint[deciding, od] = call_policy(
                    self.policy, self.observe_at(deciding, od), self.masks_at(deciding, od), rng,
                    table=lambda idx=deciding, seats=od: self.public_tables(idx, seats),
                )
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
            pending &= self._fl_action()[idx, seat] >= 0
            first = False
        else:  # pragma: no cover - only a core that never frees a busy learner gets here
            raise RuntimeError("the learner stayed busy for too many decision epochs (core bug)")
        obs = self.learner_observe() if learner_only else self.observe()
        return obs, rewards.astype(np.float32), terminated, truncated, logs

    def _step(self, joint, rows):
        """One core step of ``rows``: (terminated (B,), truncated (B,), the learners' game
        rewards (B,) float64, EventLogs)."""
        if len(self.states) == 1:
            # rows outside ``rows`` are untouched by the core: no flags, zero rewards
            _, out = core.step(self.states[0], joint, rows=rows, events=self.need_events)
            logs = [] if out.events is None else [out.events]
            return out.terminated, out.truncated, out.rewards[self._idx, self.seat], logs
        b = self.batch_size
        term = np.zeros(b, bool)
        trunc = np.zeros(b, bool)
        rew = np.zeros((b, 2), np.float64)
        logs = []
        for k, state in enumerate(self.states):
            rk = rows & (self.owner == k)
            if not rk.any():
                continue
            _, out = core.step(state, joint, rows=rk, events=self.need_events)
            term |= np.asarray(out.terminated) & rk
            trunc |= np.asarray(out.truncated) & rk
            rew += np.where(rk[:, None], out.rewards, 0.0)
            if out.events is not None:
                logs.append(out.events)
        return term, trunc, rew[self._idx, self.seat], logs

    def _event_rewards(self, logs, rewards) -> np.ndarray:
        """Add the round and shaping rewards of one core step's events to ``rewards``; return
        (B,) bool, rows where a round ended."""
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
                # Stocks and spit stay as they were until the slap, so the observation after the
                # step still shows the cards held at the round end.
                view = self.observe_at(r, learner)
                mine = view[:, OBS["self_cards_held"].start]
                theirs = view[:, OBS["opp_cards_held"].start]
                win = np.where(p < 0, np.sign(theirs - mine), win)
                np.add.at(rewards, r, win)
            if self.shaping != 0.0:
                pl = typ == EV_PLAY
                r, p = row[pl], player[pl]
                np.add.at(rewards, r, self.shaping * np.where(p == self.seat[r], 1.0, -1.0))
        return ended


def _indices(rows) -> np.ndarray:
    arr = np.asarray(rows)
    return arr.nonzero()[0] if arr.dtype == np.bool_ else arr.astype(np.intp, copy=False)


class SpitGymEnv(gymnasium.Env):
    """One game of Spit for a single learner against an opponent (see the module docstring).

    Args:
        opponent: a Policy callable, a registered bot name or a profile "name@latency"
            (default "greedy", from the ``agents`` plug-in).
        config: the rules and time model (default ``SpitConfig()``).
        learner_seat: 0, 1 or "random" (default, drawn at every reset).
        render_mode: None, "ansi" or "human".
        reward: "game" or "round". shaping: float. episode: "game" or "round".

    Raises:
        ValueError: any bad argument (the message names it and the allowed values).
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 2}

    def __init__(self, opponent="greedy", config: SpitConfig | None = None, learner_seat="random",
                 render_mode: str | None = None, reward: str = "game", shaping: float = 0.0,
                 episode: str = "game"):
        check_render_mode(render_mode)
        self.render_mode = render_mode
        self._duel = Duel(config, 1, opponent, learner_seat, reward, shaping, episode, events=True)
        self.observation_space = spaces.Box(0.0, 1.0, (OBS_DIM,), np.float32)
        self.action_space = spaces.Discrete(N_ACTIONS)
        self._seed: int | None = None
        self._game_id = -1
        self._rng: np.random.Generator | None = None
        self._obs = None
        self._done = True

    @property
    def config(self) -> SpitConfig:
        """The config of the current game (the opponent profile's latency applied)."""
        return self._duel.states[self._duel.owner[0]].config if self._duel.states else self._duel.config

    @property
    def learner_seat(self) -> int:
        """The learner's seat (0 or 1) in the current game."""
        return int(self._duel.seat[0])

    def set_opponent(self, opponent) -> None:
        """Replace the opponent (a Policy, name or profile) from the next reset on."""
        self._duel.set_opponent(opponent)

    def reset(self, *, seed=None, options=None):
        """Start a game (see the module docstring for seeds and ``options["deal"]``).

        Returns:
            (observation (D,) float32, info {"events": [], "learner_seat": int}).

        Raises:
            ValueError: a bad seed or deal; nothing is changed then.
        """
        deal = None
        if options is not None and "deal" in options:
            deal = check_deal(options["deal"])
        seed, game_id = next_game(seed, self._seed, self._game_id)
        super().reset(seed=seed)
        if game_id == 0:
            self._rng = np.random.default_rng(seed)
        ls = self._duel.learner_seat
        seat = int(self._rng.integers(0, 2)) if ls == "random" else ls
        self._duel.start(seed, game_id, np.array([seat]), deals=[deal])
        self._seed, self._game_id = seed, game_id
        self._obs = self._duel.learner_observe()  # (1, D), a fresh array
        self._done = False
        if self.render_mode == "human":
            self.render()
        return self._obs[0].copy(), {"events": [], "learner_seat": seat}

    def step(self, action):
        """One learner decision (the module docstring says what runs in between).

        Returns:
            (observation (D,) float32, reward float, terminated bool, truncated bool, info).

        Raises:
            ValueError: before reset / after the end, an action not an integer 0-22, or (with
                ``illegal_action="raise"``) an illegal action.
        """
        if self._obs is None or self._done:
            raise ValueError("step() called before reset() or after the episode ended; call reset()")
        a = check_action(action[()] if isinstance(action, np.ndarray) and action.shape == () else action)
        obs, rew, term, trunc, logs = self._duel.play(
            np.array([a], np.int64), np.ones(1, bool), self._rng, learner_only=True
        )
        self._obs = obs
        self._done = bool(term[0] or trunc[0])
        seat = self.learner_seat
        events = [e for step in (logs or []) for log in step for e in log.for_row(0)]
        info = {"events": events, "learner_seat": seat}
        if self.render_mode == "human":
            self.render()
        return obs[0].copy(), float(rew[0]), bool(term[0]), bool(trunc[0]), info

    def action_masks(self) -> np.ndarray:
        """(23,) bool: the learner's legal moves now (all False but WAIT once the game is over)."""
        if self._obs is None:
            raise ValueError("action_masks() called before reset()")
        return self._duel.learner_masks()[0]

    def snapshot(self) -> dict:
        """The whole public table as a JSON-serialisable dict (docs/ENVIRONMENTS.md)."""
        if self._obs is None:
            raise ValueError("snapshot() called before reset()")
        return self._duel.snapshot(0)

    def public_table(self):
        """The learner's public table (``spit_env.core.PublicTable``, one row), for a planning
        policy in the learner's seat: ``planner(obs[None], env.action_masks()[None], rng,
        table=env.public_table())``."""
        if self._obs is None:
            raise ValueError("public_table() called before reset()")
        ((_, table),) = self._duel.public_tables(np.zeros(1, np.intp), self._duel.seat[:1])
        return table

    def render(self):
        if self.render_mode is None or self._obs is None:
            return None
        names = ["opponent", "opponent"]
        names[self.learner_seat] = "learner"
        return render(self.snapshot(), tuple(f"player_{i} ({n})" for i, n in enumerate(names)),
                      self.render_mode)

    def close(self):
        pass
