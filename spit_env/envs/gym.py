"""Gymnasium single-agent environment: a learner in one seat against an opponent policy.

``gymnasium.make("Spit-v0", opponent="greedy", ...)`` or ``SpitGymEnv(...)``. One game: a
:class:`spit_env.envs.duel.Duel` of batch size 1 over the batched core (``spit_env.core``).

One env step = one learner decision. The learner's action goes into the next decision epoch with
the opponent's (chosen by the opponent policy); then, while the learner's move is in flight
(the learner is busy, D7), the core runs on with only the opponent deciding, until the learner is
free again or the episode ends. So every observation the learner gets is one where it may act.

Spaces: observation ``Box(0, 1, (D,), float32)`` (the learner's egocentric observation, layout
``rules.OBSERVATION``, docs/ENVIRONMENTS.md); action ``Discrete(23)`` (the egocentric action ids of
``rules.py``). ``action_masks()`` -> (23,) bool, the learner's legal moves, for sb3-contrib's
MaskablePPO. An illegal action follows ``config.illegal_action`` (default "wait": it is played
as WAIT and reported as an ``illegal`` event).

Rewards (``reward=``, default "game"), episodes (``episode=``, default "game"), ``shaping``
(default 0), opponents (a registered policy name, a profile "name@latency" or a Policy callable)
and ``learner_seat`` (0, 1 or "random", drawn at every reset) are those of
:mod:`spit_env.envs.duel`, the same for ``SpitVecEnv``.

Auto-reset: none (Gymnasium's rules: call ``reset()`` after the end).

``info``, at every step and reset, has the same keys with values of the same type and shape:
``{"action_mask": (23,) bool, "learner_seat": np.int64, "clock_ms": np.int64, "illegal":
np.bool_}`` (NumPy values, as TorchRL's info readers want): the
learner's legal moves now (as ``action_masks()``, Gymnasium's convention for masked envs such as
Taxi), its seat, the game clock (ms) and whether its action this step was outside its mask
(False at reset). The events of the core steps an env step ran (docs/RULES.md "Events") are
``last_events()``.

Seeding: as ``spit_env.parallel_env``: ``reset(seed=s)`` plays game 0 of ``s``, each later
``reset()`` the next game id. Every draw of game ``g`` (the deal, latencies, the seat drawn for
``learner_seat="random"``, the opponent policy's draws) depends on ``(s, g)`` alone
(docs/ENVIRONMENTS.md "Seeding").

Errors: every misuse (``step`` before ``reset()`` or after the end, a bad seed, options or
action, an illegal action under ``illegal_action="raise"``, an unknown opponent) raises
``ValueError`` naming the problem and changes nothing: the same snapshot, and the same game from
then on (the opponent's random draws included). An opponent policy that fails part-way through a
step leaves the game half-stepped: every later ``step`` says so until ``reset()``.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from ..config import SpitConfig
from ..render import RENDER_FPS, RENDER_MODES, check_render_mode, render
from ..rules import N_ACTIONS, OBS_DIM, check_action, reset_deal
from ..streams import next_game
from .duel import Duel
from .view import DuelView

__all__ = ["SpitGymEnv"]


class SpitGymEnv(DuelView, gymnasium.Env):
    """One game of Spit for a single learner against an opponent (see the module docstring).

    Args:
        opponent: a Policy callable, a registered policy name or a profile "name@latency"
            (default "greedy").
        config: the rules and time model (default ``SpitConfig()``).
        learner_seat: 0, 1 or "random" (default, drawn at every reset).
        render_mode: None, "ansi", "human" or "rgb_array" (``render()``).
        reward: "game" or "round". shaping: float. episode: "game" or "round" (see
            :mod:`spit_env.envs.duel`).

    Raises:
        ValueError: any bad argument (the message names it and the allowed values).
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS}

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
        self._obs = None
        self._done = True
        self._events: list[dict] = []

    @property
    def config(self) -> SpitConfig:
        """The config of the current game (the opponent profile's latency applied)."""
        return self._duel.row_config(0)

    @property
    def learner_seat(self) -> int:
        """The learner's seat (0 or 1) in the current game."""
        return int(self._duel.seat[0])

    def set_opponent(self, opponent) -> None:
        """Replace the opponent (a Policy, name or profile).

        The policy plays from the next step on; a profile's latency applies from the next
        ``reset()`` (the running game keeps the config it was dealt with).

        Raises:
            ValueError: an unknown name or bad profile; nothing is changed then.
        """
        self._duel.set_opponent(opponent)

    def reset(self, *, seed=None, options=None):
        """Start a game (see the module docstring for seeds and ``options["deal"]``).

        Returns:
            (observation (D,) float32, info: the module docstring's keys).

        Raises:
            ValueError: a bad seed, options or deal; nothing is changed then.
        """
        deal = reset_deal(options)
        seed, game_id = next_game(seed, self._seed, self._game_id)
        super().reset(seed=seed)
        seat = int(self._duel.draw_seats(np.ones(1, bool), seed, np.array([game_id]))[0])
        self._duel.start(seed, game_id, np.array([seat]), deals=[deal])
        self._seed, self._game_id = seed, game_id
        self._obs = self._duel.learner_observe()  # (1, D), a fresh array
        self._done = False
        self._events = []
        if self.render_mode == "human":
            self.render()
        return self._obs[0].copy(), self._info(False)

    def step(self, action):
        """One learner decision (the module docstring says what runs in between).

        Returns:
            (observation (D,) float32, reward float, terminated bool, truncated bool, info).

        Raises:
            ValueError: before reset / after the end / after an opponent failure, an action not
                an integer 0-22, or (with ``illegal_action="raise"``) an illegal action; nothing
                is changed then.
        """
        if self._obs is None or self._done:
            raise ValueError(
                "step() called before reset() or after the episode ended; call reset()"
            )
        self._duel.need_start()
        a = check_action(action)
        one = np.ones(1, bool)
        self._duel.refuse_illegal(np.array([a], np.int64), one, lambda _: "action")
        obs, rew, term, trunc, logs = self._duel.play(np.array([a], np.int64), one)
        self._obs = obs
        self._done = bool(term[0] or trunc[0])
        seat = self.learner_seat
        self._events = [e for step in (logs or []) for log in step for e in log.for_row(0)]
        # the learner's action is its only one in the first core step (it is busy after it)
        illegal = any(e["type"] == "illegal" and e["player"] == seat for e in self._events)
        if self.render_mode == "human":
            self.render()
        return obs[0].copy(), float(rew[0]), bool(term[0]), bool(trunc[0]), self._info(illegal)

    def _info(self, illegal: bool) -> dict:
        """The fixed-shape info of the module docstring."""
        return {"action_mask": self._duel.learner_masks()[0],
                "learner_seat": np.int64(self._duel.seat[0]),
                "clock_ms": np.int64(self._duel.state.clock[0]), "illegal": np.bool_(illegal)}

    def last_events(self) -> list[dict]:
        """The events of every core step the last ``step`` ran (docs/RULES.md "Events").

        A fresh list of fresh dicts in the order they happened; [] after ``reset()``.

        Raises:
            ValueError: before the first reset.
        """
        self._ready("last_events")
        return [dict(e) for e in self._events]

    def action_masks(self) -> np.ndarray:
        """(23,) bool: the learner's legal moves now (all False but WAIT once the game is over)."""
        self._ready("action_masks")
        return self._duel.learner_masks()[0]

    def snapshot(self) -> dict:
        """The whole public table as a JSON-serialisable dict (docs/ENVIRONMENTS.md)."""
        self._ready("snapshot")
        return self._duel.snapshot(0)

    def public_table(self):
        """The learner's public table (``spit_env.core.PublicTable``, one row).

        For a planning policy in the learner's seat: ``planner(obs[None],
        env.action_masks()[None], rng, table=env.public_table())``.
        """
        return self._learner_table()

    def render(self):
        """The table in ``render_mode`` (``spit_env.render.render``); None before ``reset()``.

        "ansi": the table as text; "human": print it (returns None); "rgb_array": an RGB frame
        (576, 800, 3) uint8 (``spit_env.render_rgb``); None: returns None.
        """
        if self.render_mode is None or self._obs is None:
            return None
        return render(self.snapshot(), self._duel.render_names(0), self.render_mode)

    def close(self):
        """Nothing to release."""
