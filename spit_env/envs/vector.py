"""Gymnasium vector env over B games of the batched core: ``gymnasium.make_vec("Spit-v0", N)``.

``gymnasium.make_vec("Spit-v0", num_envs=N, vectorization_mode="vector_entry_point")`` (or
``SpitVectorEnv(N, ...)``) returns one :class:`gymnasium.vector.VectorEnv` whose N sub-envs are
the rows of one core state (``spit_env.core``), stepped with one call, the opponent's moves
chosen in one batched policy call: a :class:`spit_env.envs.duel.Duel` of N games, as
``SpitVecEnv``, not N Python environments as ``vectorization_mode="sync"`` builds. It takes the
keyword arguments of ``Spit-v0`` (``opponent``, ``config``, ``learner_seat``, ``reward``,
``shaping``, ``episode``, ``render_mode``), and each row is the game ``Spit-v0`` would play:
one step = one learner decision (the core runs on while the learner's move is in flight, D7).

Spaces: ``single_observation_space`` ``Box(0, 1, (D,), float32)`` and ``single_action_space``
``Discrete(23)``, as ``Spit-v0``; ``observation_space`` ``Box(0, 1, (N, D), float32)`` and
``action_space`` ``MultiDiscrete([23] * N)``, Gymnasium's batched forms (``batch_space``).

Infos (fixed shape, at every reset and step; what Gymnasium's vector envs give over ``Spit-v0``,
docs/ENVIRONMENTS.md "Infos, masks and events"): a dict of arrays ``{"action_mask": (N, 23)
bool, "learner_seat": (N,) int64, "clock_ms": (N,) int64, "illegal": (N,) bool}``, each with its
``"_<key>"`` (N,) bool presence array, all True: row i's legal moves (those of the observation
returned with them; Gymnasium's masked-env convention), its learner's seat, its game clock (ms)
and whether its learner's action this step was outside its mask (played as WAIT,
``illegal_action="wait"``; False at reset and at a restart). ``action_masks()`` returns the same
(N, 23) masks (sb3-contrib's convention). No events (speed; ``Spit-v0``'s ``last_events()``
has them).

Auto-reset: ``metadata["autoreset_mode"] = AutoresetMode.NEXT_STEP``, Gymnasium's default (and
what RLlib's env runners expect): the step that ends a row's episode returns its last
observation with ``terminated`` or ``truncated`` True; the next ``step`` ignores that row's action
and restarts it as a fresh game (reward 0, both flags False, the new game's observation and mask).

Seeding: ``reset(seed=s)`` plays games 0..N-1 of ``s`` in rows 0..N-1; every restart takes the
next unused game id of ``s`` (N, N + 1, ... in row order within a step); ``reset()`` without a
seed starts the next N unused game ids (the first unseeded reset draws a seed from the operating
system). The opponent's and the seat draws use a Generator seeded with the seed, as
``SpitVecEnv``'s. ``reset(options={"deal": [pack0, pack1]})`` deals every row's first game from
that deal (lists of card ids laid out by D3); restarts deal by the seed.

Errors: ``num_envs`` not an integer >= 1 and every other bad argument raise ``ValueError``
naming it (Gymnasium itself refuses an unknown ``vectorization_mode`` and ``vector_kwargs`` or
``wrappers`` with ``"vector_entry_point"``; its ``"sync"`` and ``"async"`` modes take
``num_envs < 1`` to an IndexError of their own, out of this env's reach); so does a step before
``reset()``, actions not (N,) integers 0-22, an illegal action under ``illegal_action="raise"``,
a bad seed or options, and nothing is changed then. An opponent policy that fails part-way
through a step leaves the games half-stepped: every later step says so until ``reset()``.

Gymnasium 1.0 (the lowest version the package admits) has no ``AutoresetMode``: there the
metadata has no ``"autoreset_mode"`` key, and the env resets on the next step all the same.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from ..checks import check_int
from ..config import SpitConfig
from ..render import RENDER_MODES, check_render_mode, render
from ..rules import N_ACTIONS, OBS_DIM, check_actions, reset_deal
from ..streams import next_game
from .duel import Duel
from .view import BatchView

__all__ = ["SpitVectorEnv"]

try:  # Gymnasium >= 1.1 declares the mode in metadata; 1.0's vector envs all reset on the next step
    from gymnasium.vector import AutoresetMode

    _AUTORESET = {"autoreset_mode": AutoresetMode.NEXT_STEP}
except ImportError:  # pragma: no cover - Gymnasium 1.0, the floor pyproject.toml admits
    _AUTORESET = {}


class SpitVectorEnv(BatchView, VectorEnv):
    """``num_envs`` Spit games against an opponent as one Gymnasium VectorEnv (module docstring).

    Args:
        num_envs: N >= 1.
        opponent: a Policy callable, a registered policy name or a profile "name@latency"
            (default "greedy").
        config: the rules and time model (default ``SpitConfig()``).
        learner_seat: 0, 1 or "random" (default, drawn per row at every start).
        render_mode: None or one of ``spit_env.render.RENDER_MODES``; ``render()`` returns a
            tuple of the rows' frames.
        reward: "game" or "round". shaping: float. episode: "game" or "round" (see
            :mod:`spit_env.envs.duel`).
        max_episode_steps: None only (``gymnasium.make_vec`` passes the registration's; the
            games end by the config's limits, D16).

    Raises:
        ValueError: any bad argument (the message names it and the allowed values).
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 2, **_AUTORESET}

    def __init__(self, num_envs: int = 1, opponent="greedy", config: SpitConfig | None = None,
                 learner_seat="random", render_mode: str | None = None, reward: str = "game",
                 shaping: float = 0.0, episode: str = "game", max_episode_steps=None):
        self.num_envs = check_int("num_envs", num_envs, 1)
        if max_episode_steps is not None:
            raise ValueError("max_episode_steps must be None: a game ends by its config's "
                             f"max_rounds and max_game_ms (D16), got {max_episode_steps!r}")
        check_render_mode(render_mode)
        self.render_mode = render_mode
        self._duel = Duel(config, self.num_envs, opponent, learner_seat, reward, shaping,
                          episode)
        self.single_observation_space = spaces.Box(0.0, 1.0, (OBS_DIM,), np.float32)
        self.single_action_space = spaces.Discrete(N_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._seed: int | None = None
        self._game_id = -1  # the last game id started
        self._obs = None
        self._masks = None  # the learners' masks of the current state
        self._ended = np.zeros(self.num_envs, bool)  # rows restarted by the next step

    def set_opponent(self, opponent, indices=None) -> None:
        """Replace the opponent of every row, or of the rows ``indices`` (as ``SpitVecEnv``).

        Raises:
            ValueError: an unknown name, a bad profile or bad indices; nothing is changed then.
        """
        self._duel.set_opponent(opponent, None if indices is None else np.asarray(indices))

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start every row (module docstring: game ids and ``options["deal"]``).

        Returns:
            (observations (N, D) float32, infos with ``action_mask`` and ``learner_seat``).

        Raises:
            ValueError: a seed that is not None or an integer >= 0, or bad options; nothing is
                changed then.
        """
        deal = reset_deal(options)
        if seed is None and self._seed is not None:
            seed, first = self._seed, self._game_id + 1
        else:
            seed, first = next_game(seed, None, -1)
        super().reset(seed=seed)
        n = self.num_envs
        ids = first + np.arange(n)
        self._duel.start(seed, first, self._duel.draw_seats(np.ones(n, bool), seed, ids),
                         deals=None if deal is None else [deal] * n)
        self._seed, self._game_id = seed, first + n - 1
        self._obs = self._duel.learner_observe()
        self._ended[:] = False
        return self._obs.copy(), self._infos(np.zeros(n, bool))

    def step(self, actions):
        """One learner decision in every live row; rows that ended last step restart instead.

        Returns:
            (observations (N, D) float32, rewards (N,) float64, terminations (N,) bool,
            truncations (N,) bool, infos with ``action_mask`` and ``learner_seat``).

        Raises:
            ValueError: before reset, after an opponent failure, actions not (N,) integers 0-22,
                or (with ``illegal_action="raise"``) an illegal action in a live row; nothing is
                changed then.
        """
        self._ready("step")
        self._duel.need_start()
        a = check_actions(actions, self.num_envs)
        live = ~self._ended
        self._duel.refuse_illegal(a, live, lambda i: f"actions[{i}]")
        illegal = live & ~self._masks[np.arange(self.num_envs), a]
        restart = self._ended.copy()
        rewards = np.zeros(self.num_envs, np.float64)
        term = np.zeros(self.num_envs, bool)
        trunc = np.zeros(self.num_envs, bool)
        if restart.any():
            ids = np.zeros(self.num_envs, np.int64)
            ids[restart] = self._game_id + 1 + np.arange(int(restart.sum()))
            self._game_id += int(restart.sum())
            self._duel.restart(restart, ids, self._duel.draw_seats(restart, self._seed, ids))
            self._obs[restart] = self._duel.learner_observe(restart)
        if live.any():
            obs, rew, t, tr, _ = self._duel.play(a, live)
            self._obs[live] = obs
            rewards[live], term[live], trunc[live] = rew[live], t[live], tr[live]
        self._ended = term | trunc
        return self._obs.copy(), rewards, term, trunc, self._infos(illegal)

    def _infos(self, illegal: np.ndarray) -> dict:
        """The fixed-shape infos of the module docstring (and the masks kept for the next step)."""
        self._masks = self._duel.learner_masks()
        infos = {"action_mask": self._masks.copy(), "learner_seat": self._duel.seat.copy(),
                 "clock_ms": self._duel.state.clock.astype(np.int64), "illegal": illegal}
        for key in list(infos):
            infos["_" + key] = np.ones(self.num_envs, bool)
        return infos

    def action_masks(self) -> np.ndarray:
        """(num_envs, 23) bool: the learners' legal moves now (``infos["action_mask"]``).

        Raises:
            ValueError: before reset.
        """
        self._ready("action_masks")
        return self._masks.copy()

    def render(self):
        """Each row's table in the render mode: a tuple of N frames ("human": printed, None)."""
        if self.render_mode is None or self._obs is None:
            return None
        mode = "ansi" if self.render_mode == "human" else self.render_mode
        frames = tuple(render(self.snapshot(i), self._duel.render_names(i), mode)
                       for i in range(self.num_envs))
        if self.render_mode == "human":
            print("\n\n".join(f"[env {i}]\n{f}" for i, f in enumerate(frames)))
            return None
        return frames

    def close_extras(self, **kwargs) -> None:
        """Nothing to release."""
