"""The batched NumPy core: B games of Spit stepped together as a state of arrays.

Every user-facing API (PettingZoo, Gymnasium, SB3 VecEnv) is a view of this package. It follows
docs/RULES.md (decisions D1-D17 and "The time model, exactly") to the millisecond and to the random
draw, and is tested step for step against the scalar reference game (``reference.py``).

Functions (each takes a :class:`CoreState`; ``reset``, ``step`` and ``fast_forward`` update it in
place)::

    state = init(config, batch_size, seed=0, *, first_game=0, deals=None, latency=None)
    state = reset(state, rows, game_ids, deals=None, latency=None)
    state, out = step(state, actions, *, rows=None, events=False, latency_ms=None)
    legal_action_mask(state, idx=None, seat=None) -> (B, 2, 23) bool (or a part of it)
    observe(state, idx=None, seat=None) -> (B, 2, D) float32, layout rules.OBSERVATION, egocentric
    snapshot(state, row)     -> dict (the snapshot format of the reference game)
    row_config(state, row)   -> SpitConfig of that game (the config with its seats' latencies)
    fast_forward(state, idx, seat, max_epochs=None) -> (R,) epochs of forced WAITs skipped
    check_caches(state)      -> None, or AssertionError naming the first row with a stale cache

For planning (rollouts on copies of games, never seeing a hidden card or a game's own stream)::

    copy_rows(state, idx, repeats=1) -> CoreState   (n copies of row b: copy_rows(state, [b], n))
    hidden_cards(state, idx=None) -> (R, N) int8
    replace_hidden(state, idx, cards=None, *, rng=None) -> state
    reseed_rows(state, idx, keys) -> state
    public_table(state, idx=None, seat=None) -> PublicTable

Names: ``rows`` is a (B,) bool mask of games (``reset``, ``step``); ``idx`` is (R,) integer row
indices (the partial views and the planning functions: their results follow its order), normalised
once (``arguments.select``). Those functions take ``rows=`` too for one release, as a deprecated
name of ``idx`` that also takes a bool mask (a DeprecationWarning). Each seat of each game has its
own latency model (D7): the config's ``latency`` unless ``init`` / ``reset`` were given others
(``latency=``), so one batch can mix players of different speeds.

Dimension letters (rules.py): B games, P players (2), S stock places (5), H stock height (5),
A actions (23), D observation length, N cards (52).

The modules, in the order they build on each other (each imports only modules before it):
``tables`` (constants, place codes, legal-move bits, the streams inlined), ``events``,
``arguments`` (argument checks), ``latencies`` (the seats' latency models), ``state``
(CoreState, StepOutput), ``mask`` (the legal-move bits and the action mask), ``rounds`` (layouts,
spits, round ends, slaps, re-deals, the stall check), ``deal`` (init, reset), ``step`` (step,
fast_forward), ``obs_build`` (the observation's layout, built from scratch or updated from a
cache of what a move changes), ``observe`` (observations, snapshots), ``planning``, ``caches``
(the check of every cache against the arrays it is made of).
"""

from __future__ import annotations

from .caches import check_caches
from .deal import init, reset
from .events import EventLog
from .latencies import row_config
from .mask import legal_action_mask
from .observe import observe, snapshot
from .planning import (
    PublicTable,
    copy_rows,
    hidden_cards,
    public_table,
    replace_hidden,
    reseed_rows,
)
from .state import CoreState, StepOutput
from .step import fast_forward, step
from .tables import NO_LAND, OVER, PLAY, SLAP, A, H, N, P, S

__all__ = [
    "CoreState",
    "StepOutput",
    "EventLog",
    "init",
    "reset",
    "step",
    "legal_action_mask",
    "observe",
    "snapshot",
    "row_config",
    "copy_rows",
    "hidden_cards",
    "replace_hidden",
    "reseed_rows",
    "PublicTable",
    "public_table",
    "fast_forward",
    "check_caches",
    "NO_LAND",
    "PLAY",
    "SLAP",
    "OVER",
    "P",
    "S",
    "H",
    "A",
    "N",
]
