"""The plumbing the single-agent views of a :class:`~spit_env.envs.duel.Duel` share.

``SpitGymEnv`` (one game), ``SpitVectorEnv`` and ``SpitVecEnv`` (``num_envs`` games) are each a
view of one Duel, over three APIs with base classes of their own (Gymnasium's ``Env`` and
``VectorEnv``, SB3's ``VecEnv``). What they share is written here once, as SB3 keeps its
VecEnvs' shared plumbing in their base class: :class:`DuelView` (the engine, the refusal before
the first reset, the learners' random streams and public table) and :class:`BatchView` for the
two batched views (their config, learner seats and one row's snapshot). Each view keeps only its
API's conventions: spaces, seeding, auto-reset, infos, rendering.
"""

from __future__ import annotations

import numpy as np

from .. import core, streams
from ..checks import check_int
from ..config import SpitConfig
from .duel import Duel

__all__ = ["DuelView", "BatchView"]


class DuelView:
    """What every single-agent view of a Duel has (mixed in before the API's base class).

    A view sets ``self._duel`` (its :class:`Duel`) and ``self._obs`` (the learners' last
    observations, None until the first reset) in its constructor.
    """

    _duel: Duel
    _obs: np.ndarray | None

    @property
    def duel(self) -> Duel:
        """The engine this env is a view of (read it, e.g. for ``testing``; do not step it)."""
        return self._duel

    def _ready(self, method: str) -> None:
        """Refuse ``method()`` before the first reset.

        Raises:
            ValueError: "<method>() called before reset(); call reset() first".
        """
        if self._obs is None:
            raise ValueError(f"{method}() called before reset(); call reset() first")

    def _learners(self) -> tuple[np.ndarray, np.ndarray]:
        """((B,) int64 row indices 0..B-1, (B,) int64 each row's learner seat, a copy)."""
        return np.arange(self._duel.batch_size), self._duel.seat.copy()

    def learner_rng(self) -> streams.RowStreams:
        """The learners' rng at their current decision (``spit_env.streams.RowStreams``).

        Row i's draws come from the stream of its game (seed, game id) for the learner's seat
        and its decision index, as the opponent's do for its seat: a policy that plays the
        learner's seat with it (``policy(obs, venv.action_masks(), venv.learner_rng())``, a
        teacher recording its moves; ``policy(obs[None], env.action_masks()[None],
        env.learner_rng())`` for ``Spit-v0``, one row) makes the same moves in a game whatever
        the other rows and the history of the process. A fresh object each call: two calls at
        one decision draw alike.

        Raises:
            ValueError: before reset.
        """
        self._ready("learner_rng")
        return self._duel.policy_rng(*self._learners())

    def _learner_table(self) -> core.PublicTable:
        """The learners' public table (``core.PublicTable``, row i: row i's learner's view).

        Raises:
            ValueError: before reset (naming ``public_table()``).
        """
        self._ready("public_table")
        return self._duel.public_table(*self._learners())


class BatchView(DuelView):
    """What the two batched views (``SpitVectorEnv``, ``SpitVecEnv``) add to :class:`DuelView`."""

    @property
    def config(self) -> SpitConfig:
        """The games' config (with an opponent profile's latency applied).

        With learner_seat="random" and such a profile, the config of the learner-in-seat-0 games.
        """
        return self._duel.config

    @property
    def learner_seats(self) -> np.ndarray:
        """The learner's seat in each row's current game, (num_envs,) int64."""
        return self._duel.seat.copy()

    def snapshot(self, index: int = 0) -> dict:
        """The public table of row ``index``'s game (format: docs/ENVIRONMENTS.md).

        Raises:
            ValueError: before reset, or an index that is not an integer 0..num_envs-1.
        """
        index = check_int("index", index, 0, self._duel.batch_size - 1)
        self._ready("snapshot")
        return self._duel.snapshot(index)
