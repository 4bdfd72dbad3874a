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

Auto-reset: none (Gymnasium's rules: call ``reset()`` after the end). ``info`` holds
``"events"`` (every event of the core steps this env step ran, docs/RULES.md "Events") and
``"learner_seat"``.

Seeding: as ``spit_env.parallel_env``: ``reset(seed=s)`` plays game 0 of ``s``, each later
``reset()`` the next game id; the opponent's and the seat draws use a Generator seeded with ``s``.

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
from ..render import RENDER_MODES, check_render_mode, render
from ..rules import N_ACTIONS, OBS_DIM, check_action, reset_deal
from ..streams import next_game
from .duel import Duel

__all__ = ["SpitGymEnv"]


class SpitGymEnv(gymnasium.Env):
    """One game of Spit for a single learner against an opponent (see the module docstring).

    Args:
        opponent: a Policy callable, a registered policy name or a profile "name@latency"
            (default "greedy").
        config: the rules and time model (default ``SpitConfig()``).
        learner_seat: 0, 1 or "random" (default, drawn at every reset).
        render_mode: None, "ansi" or "human".
        reward: "game" or "round". shaping: float. episode: "game" or "round" (see
            :mod:`spit_env.envs.duel`).

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
        return self._duel.row_config(0)

    @property
    def duel(self) -> Duel:
        """The engine this env is a view of (read it, e.g. for ``testing``; do not step it)."""
        return self._duel

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
            (observation (D,) float32, info {"events": [], "learner_seat": int}).

        Raises:
            ValueError: a bad seed, options or deal; nothing is changed then.
        """
        deal = reset_deal(options)
        seed, game_id = next_game(seed, self._seed, self._game_id)
        super().reset(seed=seed)
        if game_id == 0:
            self._rng = np.random.default_rng(seed)
        seat = int(self._duel.draw_seats(np.ones(1, bool), self._rng)[0])
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
        obs, rew, term, trunc, logs = self._duel.play(np.array([a], np.int64), one, self._rng)
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
        """The learner's public table (``spit_env.core.PublicTable``, one row).

        For a planning policy in the learner's seat: ``planner(obs[None],
        env.action_masks()[None], rng, table=env.public_table())``.
        """
        if self._obs is None:
            raise ValueError("public_table() called before reset()")
        return self._duel.public_table(np.zeros(1, np.intp), self._duel.seat[:1])

    def render(self):
        """"ansi": the table as text; "human": print it (returns None); None: returns None."""
        if self.render_mode is None or self._obs is None:
            return None
        return render(self.snapshot(), self._duel.render_names(0), self.render_mode)

    def close(self):
        """Nothing to release."""
