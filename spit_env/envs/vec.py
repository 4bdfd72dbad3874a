"""Stable-Baselines3 VecEnv over B games of the batched core: ``SpitVecEnv(num_envs, ...)``.

Not a list of single envs: the B games are rows of one core state (``spit_env.core``), stepped with
one call, and the opponent's moves are chosen in one batched policy call for all rows (one per
opponent when rows play different ones: :meth:`SpitVecEnv.set_opponent` with ``indices``).

One VecEnv step = one learner decision in every row. The learner's actions go into the next
decision epoch; then, in the rows where the learner is busy (its move in flight, D7), the core
steps only those rows (``core.step(rows=...)``) with the opponent deciding, until every live
row has its learner free again (or its episode ended): a :class:`spit_env.envs.duel.Duel` of
``num_envs`` games. Rewards, episodes and the options ``opponent``, ``learner_seat``, ``reward``,
``shaping``, ``episode`` are the Duel's (``spit_env.envs.duel``), as in ``SpitGymEnv``; the learner
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
``s``; ``reset()`` without a new seed starts the next unused game ids. Every draw of game ``g``
(the deal, latencies, the seat drawn for ``learner_seat="random"``, the opponent policy's draws)
depends on ``(s, g)`` alone, not on the row it is played in or the other rows
(docs/ENVIRONMENTS.md "Seeding").

Options (SB3's ``set_options``): ``set_options({"deal": [pack0, pack1]})`` or a list of
``num_envs`` option dicts (None for none) is used by the next ``reset()`` only: row i's first
game is dealt from its "deal" (lists of card ids laid out by D3, together exactly the 52 cards);
rows without one, and every auto-reset, deal by the seed. Other keys are ignored.

The SB3 plumbing acts on this one object (the rows share it), except for the opponent, which
each row may have of its own: ``get_attr(name)`` returns the attribute once per index (for
"opponent", each index's row's); ``env_method`` calls the per-row methods (``action_masks``,
``snapshot``, ``render``: text, or a frame under "rgb_array"; no arguments) row by row,
``set_opponent`` for the rows of ``indices``,
and any other method once, with ``indices`` addressing every env, its result repeated per index;
``set_attr`` sets "opponent" for the rows of ``indices`` (``set_opponent``), and otherwise must
address every env: it checks "skip_forced_waits", refuses the VecEnv's own
structure (``num_envs``, the spaces, ``render_mode``, methods, private names) and sets any other
name as an attribute of your own. ``env_is_wrapped`` is False. An unknown name in ``get_attr``
or ``env_method`` raises AttributeError, as in SB3's own VecEnvs (``has_attr`` relies on it).

Errors: every other misuse (a step before ``reset()``, actions of the wrong shape, type or
range, an illegal action under ``illegal_action="raise"``, bad seeds, options, indices or
attribute values, ``step_wait()`` without ``step_async()``) raises ``ValueError`` naming the
problem and changes nothing: the same games in every row, and the same run from then on. Actions
are checked by ``step_async``, the call that submits them. An opponent policy that fails part-way
through a step leaves the games half-stepped: every later step says so until ``reset()``.
``close()`` releases nothing; the VecEnv stays usable.

Rendering (``render_mode``): "ansi" / "human" every row's table as text (printed); "rgb_array"
``render()`` tiles the rows' frames into one image as SB3's VecEnvs do, for ``VecVideoRecorder``;
``get_images()`` returns each row's (576, 800, 3) uint8 frame under any render mode.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, tile_images

from ..checks import check_int, is_int
from ..config import SpitConfig
from ..render import RENDER_FPS, RENDER_MODES, check_render_mode, render_text
from ..render_rgb import render_rgb
from ..rules import N_ACTIONS, OBS_DIM, check_actions, reset_deal
from ..streams import check_seed, os_seed
from .duel import Duel
from .view import BatchView

__all__ = ["SpitVecEnv"]

_PER_ROW_METHODS = ("action_masks", "snapshot", "render")
_SETTABLE = ("opponent", "skip_forced_waits")


class SpitVecEnv(BatchView, VecEnv):
    """SB3 VecEnv of ``num_envs`` Spit games against an opponent (see the module docstring).

    Args:
        num_envs: B >= 1.
        opponent: a Policy callable, a registered policy name or a profile "name@latency".
        config: the rules and time model (default ``SpitConfig()``).
        seed: the seed of the games (integer >= 0).
        learner_seat: 0, 1 or "random".
        reward: "game" or "round". shaping: float. episode: "game" or "round".
        render_mode: None, "ansi", "human" or "rgb_array" (module docstring).
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
        num_envs = check_int("num_envs", num_envs, 1)
        self._duel = Duel(config, num_envs, opponent, learner_seat, reward, shaping, episode)
        self._seed = check_seed(seed)
        self._next_seed: int | None = self._seed
        self._next_game = 0
        self._obs = None
        self._masks = None  # the learners' masks of the current state, once asked for
        self._actions = None
        self._own_attrs: set[str] = set()  # names set_attr created
        super().__init__(
            self._duel.batch_size,
            spaces.Box(0.0, 1.0, (OBS_DIM,), np.float32),
            spaces.Discrete(N_ACTIONS),
        )
        self.metadata = {"render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS}

    # --- options --------------------------------------------------------------------------------
    @property
    def opponent(self):
        """The opponent as given (a Policy, name or profile); set it with :meth:`set_opponent`.

        With rows playing different opponents, a list of each row's (``get_attr("opponent",
        indices)`` gives the rows' own).
        """
        return self._duel.opponent

    def set_opponent(self, opponent, indices=None) -> None:
        """Replace the opponent (a Policy, name or profile) of every env, or of ``indices`` only.

        Rows may play different opponents (a league, a mix of bots and frozen snapshots): the
        core still steps all rows at once, and each opponent is asked once per decision epoch
        for the rows it plays. The policy acts from the next step on; a profile's latency
        applies to games started from then on (a row's next game, after its auto-reset or the
        next ``reset()``). Also ``set_attr("opponent", opponent, indices)`` and
        ``env_method("set_opponent", opponent, indices=indices)``.

        Args:
            opponent: the new opponent.
            indices: None (every env), an env index or a list of env indices.

        Raises:
            ValueError: an unknown name, a bad profile or bad indices; nothing is changed then.
        """
        idx = None if indices is None else np.asarray(self._indices(indices), np.int64)
        self._duel.set_opponent(opponent, idx)

    def seed(self, seed: int | None = None) -> list[int]:
        """Set the seed used by the next ``reset()`` (which restarts from game 0 of it).

        None draws a seed from the operating system. Returns [seed] * num_envs.

        Raises:
            ValueError: a seed that is not None or an integer >= 0; nothing is changed then.
        """
        seed = os_seed() if seed is None else check_seed(seed)
        self._next_seed = seed
        return [seed] * self.num_envs

    def set_options(self, options: list[dict] | dict | None = None) -> None:
        """Set the options of the next ``reset()`` (module docstring), as SB3's VecEnvs do.

        Args:
            options: None, one dict for every env, or a list of ``num_envs`` dicts (or None),
                one per env; ``"deal": [pack0, pack1]`` fixes that row's first deal.

        Raises:
            ValueError: options of another form or length, or a bad deal (naming its index);
                nothing is changed then.
        """
        n = self.num_envs
        if options is None or isinstance(options, Mapping):
            reset_deal(options)
            per_env = [options] * n
        elif isinstance(options, (list, tuple)) and len(options) == n:
            per_env = list(options)
            for i, o in enumerate(per_env):
                reset_deal(o, f"options[{i}]")
        else:
            raise ValueError(
                f"options must be None, one dict for every env or a list of {n} "
                f"dict{'' if n == 1 else 's'} (one per env), got {options!r}"
            )
        self._options = [{} if o is None else copy.deepcopy(dict(o)) for o in per_env]

    # --- VecEnv ---------------------------------------------------------------------------------
    def reset(self):
        """Start every row (see the module docstring for the game ids). Returns (B, D) float32.

        Uses (then forgets) the seed of :meth:`seed` and the options of :meth:`set_options`, and
        cancels actions given to ``step_async`` and not yet stepped.
        """
        b = self.num_envs
        deals = [reset_deal(o, f"options[{i}]") for i, o in enumerate(self._options)]
        if self._next_seed is not None:
            self._seed, self._next_game = self._next_seed, 0
            self._next_seed = None
        ids = self._next_game + np.arange(b)
        self._duel.start(
            self._seed, self._next_game, self._duel.draw_seats(np.ones(b, bool), self._seed, ids),
            deals=deals if any(d is not None for d in deals) else None,
        )
        self._next_game += b
        self._obs = self._duel.learner_observe()
        self._actions = None
        self._masks = None
        self.reset_infos = [{} for _ in range(b)]
        self._reset_seeds()
        self._reset_options()
        return self._obs.copy()

    def step_async(self, actions) -> None:
        """Check the actions and keep them for :meth:`step_wait`.

        Args:
            actions: (num_envs,) (or (num_envs, 1)) integer action ids 0-22.

        Raises:
            ValueError: before reset, after an opponent failure, actions not (num_envs,)
                integers 0-22, or (with ``illegal_action="raise"``) an illegal action; nothing
                is changed then (actions given before and not yet stepped stay pending).
        """
        self._ready("step")
        self._duel.need_start()
        b = self.num_envs
        a = check_actions(actions, b)  # a copy: the caller's array may change before step_wait
        self._duel.refuse_illegal(a, np.ones(b, bool), lambda i: f"actions[{i}]")
        self._actions = a

    def step_wait(self):
        """Step every row with the actions of :meth:`step_async`.

        Returns:
            (obs (B, D) float32, rewards (B,) float32, dones (B,) bool, infos list[dict]).

        Raises:
            ValueError: no actions pending (``step_async`` was not called since the last step
                or reset); nothing is changed then.
        """
        if self._actions is None:
            raise ValueError(
                "step_wait() called without actions pending; call step_async(actions) first "
                "(or step(actions))"
            )
        self._duel.need_start()
        b = self.num_envs
        a, self._actions = self._actions, None
        infos: list[dict] = [{} for _ in range(b)]
        rewards, dones = self._advance(a.astype(np.int64, copy=False), np.ones(b, bool), infos)
        return self._obs.copy(), rewards.astype(np.float32), dones, infos

    def _advance(self, actions: np.ndarray, rows: np.ndarray, infos: list[dict]):
        """One learner decision in ``rows`` ((B,) bool), with the same-step auto-reset.

        The rows whose episode ends are reset (their ``infos`` get ``terminal_observation`` and,
        on truncation only, ``TimeLimit.truncated``). Updates ``self._obs``.

        Returns:
            (rewards (B,) float64, 0 outside ``rows``; ended (B,) bool).
        """
        self._masks = None
        learner_obs, rewards, term, trunc, _ = self._duel.play(
            actions, rows, skip_forced=self.skip_forced_waits)
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
            self._duel.restart(ended, game_ids,
                               self._duel.draw_seats(ended, self._seed, game_ids))
            obs[ended] = self._duel.learner_observe(ended)  # only the restarted rows changed
        return np.where(rows, rewards, 0.0).astype(np.float64), ended

    def action_masks(self) -> np.ndarray:
        """(num_envs, 23) bool: the learner's legal moves in each row's current game."""
        self._ready("action_masks")
        if self._masks is None:  # computed once per state of the games
            self._masks = self._duel.learner_masks()
        return self._masks.copy()

    def public_table(self):
        """The learners' public table (``spit_env.core.PublicTable``, row i: env i's learner).

        For a planning policy in the learner's seat: ``spit_env.policy.call_policy(planner, obs,
        venv.action_masks(), rng, table=venv.public_table())``.

        Raises:
            ValueError: before reset.
        """
        return self._learner_table()

    def _render_row(self, i: int) -> str:
        return f"[env {i}]\n" + render_text(self.snapshot(i), self._duel.render_names(i))

    def render(self, mode: str | None = None):
        """Render every row's table in the constructor's ``render_mode``.

        "ansi": every row's table as text; "human": print it; "rgb_array": the rows' frames
        (:meth:`get_images`) tiled into one image, as SB3's VecEnvs do. None before ``reset()``.

        Raises:
            ValueError: a mode other than the constructor's render_mode.
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
        if mode == "rgb_array":
            return tile_images(self.get_images())
        text = "\n\n".join(self._render_row(i) for i in range(self.num_envs))
        if mode == "human":
            print(text)
            return None
        return text

    def get_images(self) -> list[np.ndarray]:
        """Each row's table as an RGB frame (576, 800, 3) uint8 (``spit_env.render_rgb``).

        Drawn whatever the ``render_mode`` (SB3's ``VecVideoRecorder`` wants "rgb_array").

        Raises:
            ValueError: before ``reset()``.
        """
        self._ready("get_images")
        return [self._frame(i) for i in range(self.num_envs)]

    def _frame(self, i: int) -> np.ndarray:
        return render_rgb(self.snapshot(i), self._duel.render_names(i))

    def close(self) -> None:
        """Nothing to release; the VecEnv stays usable."""

    # --- attribute plumbing ---------------------------------------------------------------------
    def _indices(self, indices) -> list[int]:
        n = self.num_envs
        items = [indices] if is_int(indices) else indices
        if items is None:
            return list(range(n))
        ok = isinstance(items, Iterable) and not isinstance(items, (str, bytes, Mapping))
        out = list(items) if ok else []
        if not ok or not all(is_int(i) and 0 <= i < n for i in out):
            raise ValueError(
                f"indices must be None, an env index or a list of env indices in 0..{n - 1}, "
                f"got {indices!r}"
            )
        return [int(i) for i in out]

    def _all_envs(self, indices, what: str) -> None:
        if sorted(set(self._indices(indices))) != list(range(self.num_envs)):
            raise ValueError(
                f"{what} acts on the whole SpitVecEnv (its rows share one object), so indices "
                f"must address all envs (None), got {indices!r}"
            )

    def get_attr(self, attr_name: str, indices=None) -> list:
        """This object's attribute, once per index (the rows share one object).

        Raises:
            AttributeError: an unknown name (as SB3's VecEnvs); ValueError: bad indices.
        """
        idx = self._indices(indices)
        value = getattr(self, attr_name)
        if attr_name == "opponent" and isinstance(value, list):  # rows with their own
            return [value[i] for i in idx]
        return [value for _ in idx]

    def set_attr(self, attr_name: str, value, indices=None) -> None:
        """Set an attribute of this object; ``indices`` must address every row (module docstring).

        Raises:
            ValueError: indices that leave out an env, a name that is not settable (the
                VecEnv's own structure, methods, private names) or a bad value; nothing is
                changed then.
        """
        if not isinstance(attr_name, str):
            raise ValueError(f"attr_name must be a string, got {attr_name!r}")
        if attr_name == "opponent":
            self.set_opponent(value, indices)
            return
        self._all_envs(indices, "set_attr")
        if attr_name == "skip_forced_waits":
            self.skip_forced_waits = check_int("skip_forced_waits", value, 0, 16)
        elif attr_name in self._own_attrs or not (
            attr_name.startswith("_") or hasattr(self, attr_name)
        ):
            setattr(self, attr_name, value)
            self._own_attrs.add(attr_name)
        else:
            raise ValueError(
                f"set_attr cannot set {attr_name!r} (part of the SpitVecEnv itself); settable: "
                f"{list(_SETTABLE)} and new attributes of your own"
            )

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list:
        """Call a method: the per-row ones row by row, any other once (module docstring).

        Raises:
            AttributeError: an unknown name (as SB3's VecEnvs); ValueError: bad indices,
                arguments given to a per-row method, a subset of envs for a whole-object
                method, or a name that is not a method; and whatever the method raises.
        """
        idx = self._indices(indices)
        if method_name in _PER_ROW_METHODS and (method_args or method_kwargs):
            raise ValueError(
                f"env_method({method_name!r}) takes no arguments: the rows are given by indices"
            )
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in idx]
        if method_name == "snapshot":
            return [self.snapshot(i) for i in idx]
        if method_name == "render":
            if self.render_mode == "rgb_array":
                return [None if self._obs is None else self._frame(i) for i in idx]
            out = [self._render_row(i) if self._obs is not None else None for i in idx]
            if self.render_mode == "human":
                for text in out:
                    print(text)
                return [None for _ in idx]
            return out
        method = getattr(self, method_name)
        if not callable(method):
            raise ValueError(f"env_method({method_name!r}): {method_name!r} is not a method")
        if method_name == "set_opponent":  # for the rows of indices
            given = list(method_args) + list(method_kwargs.values())
            if len(given) != 1 or set(method_kwargs) - {"opponent"}:
                raise ValueError(
                    "env_method('set_opponent') takes one argument, the opponent (the rows are "
                    f"given by indices), got args {method_args!r} and kwargs {method_kwargs!r}"
                )
            self.set_opponent(given[0], indices=indices)
            return [None for _ in idx]
        self._all_envs(indices, f"env_method({method_name!r})")
        result = method(*method_args, **method_kwargs)
        return [result for _ in idx]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        """False per index: no row is a gymnasium env that a wrapper could wrap."""
        return [False for _ in self._indices(indices)]
