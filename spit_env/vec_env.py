"""Stable-Baselines3 VecEnv over B games of the batched core: ``SpitVecEnv(num_envs, ...)``.

Not a list of single envs: the B games are rows of one core state (``core.py``), stepped with
one call, and the opponent's moves are chosen in one batched policy call for all rows.

One VecEnv step = one learner decision in every row. The learner's actions go into the next
decision epoch; then, in the rows where the learner is busy (its move in flight, D7), the core
steps only those rows (``core.step(rows=...)``) with the opponent deciding, until every live
row has its learner free again (or its episode ended): a :class:`spit_env.duel.Duel` of
``num_envs`` games. Rewards, episodes and the options ``opponent``, ``learner_seat``, ``reward``,
``shaping``, ``episode`` are the Duel's (``spit_env.duel``), as in ``SpitGymEnv``; the learner
seat "random" is drawn per row at every reset.

Spaces: observation ``Box(0, 1, (D,), float32)``, action ``Discrete(23)``; ``action_masks()`` ->
(num_envs, 23) bool for MaskablePPO (also through ``env_method("action_masks")``, one (23,) row
per env, which is what ``sb3_contrib.common.maskable.utils.get_action_masks`` calls).

Auto-reset: same step, SB3 style. A row whose episode ends in a step is restarted at once as a
fresh game: the returned observation and ``action_masks()`` are the new game's,
``infos[i]["terminal_observation"]`` holds the last observation of the ended episode, and
``infos[i]["TimeLimit.truncated"] = True`` is set only when the episode was truncated (D16).
``dones[i]`` is True for both endings. The ``"episode"`` info is VecMonitor's job, not ours.

Game ids: row i first plays game i of ``seed``; each auto-reset takes the next unused game id
(num_envs, num_envs + 1, ... in row order within a step), so a run is reproducible from
(seed, num_envs, opponent). ``seed(s)`` makes the next ``reset()`` start over from game 0 of
``s``; ``reset()`` without a new seed starts the next unused game ids. The opponent's and the
seat draws use a Generator seeded with the seed.

``get_attr``/``set_attr``/``env_method`` act on this one object: ``get_attr(name)`` returns its
attribute once per index; ``env_method`` calls per-row methods (``action_masks``, ``snapshot``,
``render``) row by row and any other method once, its result repeated per index; ``set_attr``
must address all envs ("opponent" goes through ``set_opponent``). ``env_is_wrapped`` is False.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from .checks import check_int
from .config import SpitConfig
from .duel import Duel
from .render import check_render_mode, render_text
from .rules import N_ACTIONS, OBS_DIM
from .streams import check_seed, os_seed

__all__ = ["SpitVecEnv"]

_PER_ROW_METHODS = ("action_masks", "snapshot", "render")


class SpitVecEnv(VecEnv):
    """SB3 VecEnv of ``num_envs`` Spit games against an opponent (see the module docstring).

    Args:
        num_envs: B >= 1.
        opponent: a Policy callable, a registered policy name or a profile "name@latency".
        config: the rules and time model (default ``SpitConfig()``).
        seed: the seed of the games (integer >= 0).
        learner_seat: 0, 1 or "random".
        reward: "game" or "round". shaping: float. episode: "game" or "round".
        render_mode: None, "ansi" or "human".
        skip_forced_waits: after the learner's decision, up to this many further decisions whose
            only legal move is WAIT are played for it within the same step (their rewards add
            up; the game is unchanged). 0 (default): every decision is the learner's.

    Raises:
        ValueError: any bad argument (the message names it and the allowed values).
    """

    def __init__(self, num_envs: int, opponent="greedy", config: SpitConfig | None = None,
                 seed: int = 0, learner_seat="random", reward: str = "game", shaping: float = 0.0,
                 episode: str = "game", render_mode: str | None = None, skip_forced_waits: int = 0):
        check_render_mode(render_mode)
        self.skip_forced_waits = check_int("skip_forced_waits", skip_forced_waits, 0, 16)
        self.render_mode = render_mode
        self._duel = Duel(config, num_envs, opponent, learner_seat, reward, shaping, episode)
        self._seed = check_seed(seed)
        self._next_seed: int | None = self._seed
        self._next_game = 0
        self._rng = np.random.default_rng(self._seed)
        self._obs = None
        self._masks = None  # the learners' masks of the current state, once asked for
        self._actions = None
        super().__init__(
            self._duel.batch_size,
            spaces.Box(0.0, 1.0, (OBS_DIM,), np.float32),
            spaces.Discrete(N_ACTIONS),
        )

    # --- options --------------------------------------------------------------------------------
    @property
    def config(self) -> SpitConfig:
        """The games' config (with an opponent profile's latency applied).

        The games' config (with an opponent profile's latency applied; with learner_seat="random"
        and such a profile, the config of the learner-in-seat-0 games).
        """
        return self._duel.config

    @property
    def opponent(self):
        """The opponent as given (a Policy, name or profile); set it with :meth:`set_opponent`."""
        return self._duel.opponent

    @property
    def duel(self) -> Duel:
        """The engine this VecEnv is a view of (read it, e.g. for ``testing``; do not step it)."""
        return self._duel

    @property
    def learner_seats(self) -> np.ndarray:
        """(num_envs,) int64: the learner's seat in each row's current game."""
        return self._duel.seat.copy()

    def set_opponent(self, opponent) -> None:
        """Replace the opponent (a Policy, name or profile), e.g. for self-play.

        The policy acts from the next step on; a profile's latency applies to games started from
        then on (so a latency change takes effect at the next ``reset()``).

        Raises:
            ValueError: an unknown name or bad profile.
        """
        self._duel.set_opponent(opponent)

    def seed(self, seed: int | None = None) -> list[int]:
        """Set the seed used by the next ``reset()`` (which restarts from game 0 of it).

        None draws a seed from the operating system. Returns [seed] * num_envs.
        """
        seed = os_seed() if seed is None else check_seed(seed)
        self._next_seed = seed
        return [seed] * self.num_envs

    # --- VecEnv ---------------------------------------------------------------------------------
    def reset(self):
        """Start every row (see the module docstring for the game ids). Returns (B, D) float32."""
        b = self.num_envs
        if self._next_seed is not None:
            self._seed, self._next_game = self._next_seed, 0
            self._rng = np.random.default_rng(self._seed)
            self._next_seed = None
        self._duel.start(
            self._seed, self._next_game, self._duel.draw_seats(np.ones(b, bool), self._rng)
        )
        self._next_game += b
        self._obs = self._duel.learner_observe()
        self._masks = None
        self.reset_infos = [{} for _ in range(b)]
        self._reset_seeds()
        self._reset_options()
        return self._obs.copy()

    def step_async(self, actions) -> None:
        """Store the actions for :meth:`step_wait` (checked there)."""
        self._actions = actions

    def step_wait(self):
        """Returns (obs (B, D) float32, rewards (B,) float32, dones (B,) bool, infos list[dict]).

        Raises:
            ValueError: before reset, actions not (num_envs,) integers 0-22, or (with
                ``illegal_action="raise"``) an illegal action.
        """
        if self._obs is None:
            raise ValueError("step() called before reset(); call reset() first")
        actions, self._actions = self._actions, None
        b = self.num_envs
        a = np.asarray(actions)
        if a.shape == (b, 1):
            a = a[:, 0]
        if a.shape != (b,) or a.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be ({b},) integer action ids 0-{N_ACTIONS - 1}, got shape {a.shape} "
                f"dtype {a.dtype}"
            )
        bad = np.flatnonzero((a < 0) | (a >= N_ACTIONS))
        if bad.size:
            raise ValueError(
                f"actions must be action ids 0-{N_ACTIONS - 1}, got actions[{bad[0]}] = {a[bad[0]]}"
            )
        infos: list[dict] = [{} for _ in range(b)]
        rewards, dones = self._advance(a.astype(np.int64, copy=False), np.ones(b, bool), infos)
        return self._obs.copy(), rewards.astype(np.float32), dones, infos

    def _advance(self, actions: np.ndarray, rows: np.ndarray, infos: list[dict]):
        """One learner decision in ``rows``, with the same-step auto-reset.

        One learner decision in ``rows`` ((B,) bool), with the same-step auto-reset of the rows
        whose episode ends (their ``infos`` get ``terminal_observation`` and, on truncation only,
        ``TimeLimit.truncated``). Updates ``self._obs``.

        Returns:
            (rewards (B,) float64, 0 outside ``rows``; ended (B,) bool).
        """
        self._masks = None
        learner_obs, rewards, term, trunc, _ = self._duel.play(actions, rows, self._rng,
                                                               self.skip_forced_waits)
        ended = rows & (term | trunc)
        obs = self._obs  # only the rows played changed (a copy goes out of step_wait)
        obs[rows] = learner_obs
        if ended.any():
            idx = np.flatnonzero(ended)
            for i in idx:
                infos[i]["terminal_observation"] = obs[i].copy()
                if trunc[i]:
                    infos[i]["TimeLimit.truncated"] = True
            game_ids = np.zeros(self.num_envs, np.int64)
            game_ids[ended] = self._next_game + np.arange(idx.size)
            self._next_game += idx.size
            self._duel.restart(ended, game_ids, self._duel.draw_seats(ended, self._rng))
            obs[ended] = self._duel.learner_observe(ended)  # only the restarted rows changed
        return np.where(rows, rewards, 0.0).astype(np.float64), ended

    def action_masks(self) -> np.ndarray:
        """(num_envs, 23) bool: the learner's legal moves in each row's current game."""
        if self._obs is None:
            raise ValueError("action_masks() called before reset()")
        if self._masks is None:  # computed once per state of the games
            self._masks = self._duel.learner_masks()
        return self._masks.copy()

    def snapshot(self, index: int = 0) -> dict:
        """The public table of row ``index``'s game (format: docs/ENVIRONMENTS.md)."""
        if self._obs is None:
            raise ValueError("snapshot() called before reset()")
        return self._duel.snapshot(int(index))

    def _render_row(self, i: int) -> str:
        return f"[env {i}]\n" + render_text(self.snapshot(i), self._duel.render_names(i))

    def render(self, mode: str | None = None):
        """Render every row's table ("ansi": as text; "human": printed).

        "ansi": every row's table as text; "human": print it. Other modes, or a mode other than the
        constructor's render_mode: ValueError.
        """
        mode = mode or self.render_mode
        if mode is None:
            return None
        if mode != self.render_mode:
            raise ValueError(
                f"render mode must be the constructor's render_mode {self.render_mode!r}, "
                f"got {mode!r}"
            )
        if self._obs is None:
            return None
        text = "\n\n".join(self._render_row(i) for i in range(self.num_envs))
        if mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release."""

    # --- attribute plumbing ---------------------------------------------------------------------
    def _indices(self, indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, (int, np.integer)):
            indices = [indices]
        if not isinstance(indices, Iterable):
            raise ValueError(f"indices must be None, an int or a list of ints, got {indices!r}")
        out = [int(i) for i in indices]
        bad = [i for i in out if not 0 <= i < self.num_envs]
        if bad:
            raise ValueError(f"indices must be in 0..{self.num_envs - 1}, got {bad}")
        return out

    def get_attr(self, attr_name: str, indices=None) -> list:
        """This object's attribute, once per index (the rows share one object)."""
        idx = self._indices(indices)
        value = getattr(self, attr_name)
        return [value for _ in idx]

    def set_attr(self, attr_name: str, value, indices=None) -> None:
        """Set an attribute of this object; ``indices`` must address every row."""
        if sorted(set(self._indices(indices))) != list(range(self.num_envs)):
            raise ValueError(
                "set_attr must address all envs of a SpitVecEnv (they share one object)"
            )
        if attr_name == "opponent":
            self.set_opponent(value)
        else:
            setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list:
        """Call a method: the per-row ones row by row, any other once (module docstring)."""
        idx = self._indices(indices)
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in idx]
        if method_name == "snapshot":
            return [self.snapshot(i) for i in idx]
        if method_name == "render":
            out = [self._render_row(i) if self._obs is not None else None for i in idx]
            if self.render_mode == "human":
                for text in out:
                    print(text)
                return [None for _ in idx]
            return out
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in idx]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        """False per index: no row is a gymnasium env that a wrapper could wrap."""
        return [False for _ in self._indices(indices)]
