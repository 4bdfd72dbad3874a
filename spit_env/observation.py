"""Observations decoded into named fields: write a bot against names, not vector offsets.

``read_observation(obs)`` turns a (B, D) float32 batch of observations (layout
``rules.OBSERVATION``, egocentric) into an :class:`ObservationView` with one attribute per field
of that table, under the same name, decoded into plain units::

    from spit_env import read_observation
    view = read_observation(obs)              # obs: (B, D) float32
    view.self_stock_top_rank      # (B, 5) int64, rank 1-13 of each face-up top, 0 if none
    view.centre_top_rank          # (B, 2) int64, own pile first, 0 if empty

How each kind of field decodes (the full list, with shapes: ``ObservationView.__doc__`` or
``observation_view_markdown()``):

==================  ===========================================================================
kind                decoded as
==================  ===========================================================================
one-hot phase       (B,) int64, ``rules.PHASE_*`` (0 play, 1 slap, 2 over)
one-hot ranks       (B,) or (B, k) int64 rank 1-13 per slot, 0 where the slot is all zero
one-hot action      (B,) int64 action id 0-22, -1 where all zero (free, or not shown)
flag                (B,) or (B, k) bool
count               (B,) or (B, k) int64, the value times its scale (stock heights x 5, cards x 52)
rank counts         (B, 13) or (B, k, 13) int64, cards per rank (rank r at index r - 1), 0-4
time                (B,) float64 ms (clipped by the observation: ``time_to_land`` at 1,000 ms,
                    ``idle`` at 3,000 ms)
fraction            (B,) float64 as observed, in [0, 1] (clock, round, stall_timer, score)
==================  ===========================================================================

The decoding is exact (one-hot and counts are read back to integers), array-only and fast
enough to sit in a bot's hot path: the built-in bots (``agents.heuristics``) use it.

The legal moves can be read from an observation too: :func:`observed_masks` gives the seat's
(B, 23) mask from its observations and the few rules the observation does not show
(:data:`RULE_OPTIONS`, taken from a config by :func:`rule_options`), equal to the environment's
``action_masks()``. A model that reads its mask from the observation (the package's model
format, the RLlib module on ``Spit-v0``) keeps these options with it::

    from spit_env.observation import observed_masks, rule_options
    masks = observed_masks(obs, **rule_options(config))   # (B, 23) bool, as the env's mask
"""

from __future__ import annotations

from dataclasses import fields, make_dataclass

import numpy as np

from . import rules
from .config import SpitConfig, check_config

__all__ = ["ObservationView", "read_observation", "observation_view_markdown", "FIELD_KINDS",
           "RULE_OPTIONS", "rule_options", "observed_masks", "check_ranks"]

#: How each field of rules.OBSERVATION decodes; player fields are listed without their
#: ``self_`` / ``opp_`` prefix. (kind, scale, slot count): slot count k > 1 gives (B, k) arrays.
FIELD_KINDS: dict[str, tuple[str, float, int]] = {
    "phase": ("phase", 1, 1),
    "one_pile_round": ("flag", 1, 1),
    "clock": ("fraction", 1, 1),
    "round": ("fraction", 1, 1),
    "stall_timer": ("fraction", 1, 1),
    "stock_top_rank": ("ranks", 1, rules.N_STOCKS),
    "stock_top_face_down": ("flag", 1, rules.N_STOCKS),
    "stock_height": ("count", rules.MAX_STOCK_HEIGHT, rules.N_STOCKS),
    "spit_count": ("count", rules.N_CARDS, 1),
    "cards_held": ("count", rules.N_CARDS, 1),
    "score": ("fraction", 1, 1),
    "busy": ("flag", 1, 1),
    "time_to_land": ("time", rules.TIME_SCALE_MS, 1),
    "move_in_flight": ("action", 1, 1),
    "idle": ("time", rules.IDLE_SCALE_MS, 1),
    "unseen_rank": ("rank_counts", rules.RANK_COPIES, 1),
    "centre_top_rank": ("ranks", 1, 2),
    "centre_size": ("count", rules.N_CARDS, 2),
    "centre_rank_count": ("rank_counts", rules.RANK_COPIES, 2),
}

_DTYPE = {"phase": "int64", "flag": "bool", "fraction": "float64", "ranks": "int64",
          "count": "int64", "rank_counts": "int64", "time": "float64 ms", "action": "int64"}
_UNITS = {"phase": "rules.PHASE_* (0 play, 1 slap, 2 over)", "flag": "", "fraction": "in [0, 1]",
          "ranks": "rank 1-13, 0 if none", "count": "",
          "rank_counts": "cards of rank r at index r - 1, 0-4", "time": "",
          "action": "action id 0-22, -1 if none"}
_RANK_WEIGHTS = np.arange(1, rules.N_RANKS + 1, dtype=np.float32)
_ACTION_WEIGHTS = np.arange(1, rules.N_ACTIONS + 1, dtype=np.float32)
_PHASE_WEIGHTS = np.arange(3, dtype=np.float32)


def _kind(name: str) -> tuple[str, float, int]:
    base = name[5:] if name.startswith("self_") else name[4:] if name.startswith("opp_") else name
    # a field this module does not know yet (a newer observation table) stays raw floats
    return FIELD_KINDS.get(base, ("raw", 1, 1))


def _shape(field: rules.ObsField) -> str:
    kind, _, k = _kind(field.name)
    if kind == "raw":
        return f"(B, {field.size})" if field.size > 1 else "(B,)"
    if kind == "rank_counts":
        return f"(B, {k}, {rules.N_RANKS})" if k > 1 else f"(B, {rules.N_RANKS})"
    return f"(B, {k})" if k > 1 else "(B,)"


def _decoded_fields():
    """(field, decoded dtype, unit or "") for each field of rules.OBSERVATION, in order."""
    for f in rules.OBSERVATION:
        kind = _kind(f.name)[0]
        yield f, _DTYPE.get(kind, "float32"), _UNITS.get(kind, "")


def _docstring() -> str:
    lines = ["One batch of observations, decoded (made by :func:`read_observation`).", "",
             "Attributes (one per field of rules.OBSERVATION, same names; ``self_`` = the "
             "observing seat, ``opp_`` = its opponent, centre pile 0 = own):"]
    for f, dtype, unit in _decoded_fields():
        lines.append(f"    {f.name}: {_shape(f)} {dtype}"
                     f"{' - ' + unit if unit else ''}; {f.meaning}.")
    return "\n".join(lines)


ObservationView = make_dataclass(
    "ObservationView", [f.name for f in rules.OBSERVATION], frozen=True, eq=False,
    namespace={"__module__": __name__})
ObservationView.__doc__ = _docstring()


def _decode(obs: np.ndarray, field: rules.ObsField) -> np.ndarray:
    kind, scale, k = _kind(field.name)
    x = obs[:, field.slice]
    b = obs.shape[0]
    if kind == "phase":
        return (x @ _PHASE_WEIGHTS).astype(np.int64)
    if kind == "ranks":
        out = (x.reshape(b, k, rules.N_RANKS) @ _RANK_WEIGHTS).astype(np.int64)
    elif kind == "action":
        out = (x @ _ACTION_WEIGHTS).astype(np.int64) - 1
    elif kind == "flag":
        out = x > 0.5
    elif kind == "count":
        out = np.rint(x * scale).astype(np.int64)
    elif kind == "rank_counts":
        out = np.rint(x * scale).astype(np.int64)
        return out.reshape(b, k, rules.N_RANKS) if k > 1 else out
    elif kind == "time":
        out = x.astype(np.float64) * scale
    elif kind == "fraction":
        out = x.astype(np.float64)
    else:
        return x.copy()
    return out[:, 0] if k == 1 and out.ndim == 2 else out


def read_observation(observations) -> ObservationView:
    """Decode a batch of observations into named fields (see the module docstring).

    Args:
        observations: (B, D) float32 (or one (D,) observation, read as B = 1), layout
            ``rules.OBSERVATION``, as every environment of the package returns them.

    Returns:
        ObservationView: one (B, ...) array per field (``ObservationView.__doc__`` lists them).

    Raises:
        ValueError: an array of the wrong shape.
    """
    obs = np.asarray(observations, dtype=np.float32)
    if obs.ndim == 1:
        obs = obs[None]
    if obs.ndim != 2 or obs.shape[1] != rules.OBS_DIM:
        raise ValueError(f"observations must have shape (B, {rules.OBS_DIM}) or "
                         f"({rules.OBS_DIM},), got {np.shape(observations)}")
    return ObservationView(**{f.name: _decode(obs, f) for f in rules.OBSERVATION})


def observation_view_markdown() -> str:
    """The decoded fields as a Markdown table (name, shape, dtype and unit, meaning)."""
    rows = ["| field | shape | decoded as | meaning |", "|---|---|---|---|"]
    for f, dtype, unit in _decoded_fields():
        rows.append(f"| `{f.name}` | {_shape(f)} | {dtype}"
                    f"{', ' + unit if unit else ''} | {f.meaning} |")
    return "\n".join(rows)


# --- the legal moves, read from an observation ---------------------------------------------------
_DEFAULTS = {f.name: f.default for f in fields(SpitConfig)}

#: The ``SpitConfig`` fields the legal mask depends on beyond the observation, at the config's
#: defaults: ``wrap_ranks`` (D1: which ranks are adjacent) and ``auto_flip`` (D5: whether FLIP is
#: a move). They are :func:`observed_masks`' keyword arguments and the rule options a model that
#: reads its mask from the observation keeps (``agents.ppo_model.SpitPolicy``,
#: ``agents.rllib_modules.MaskedPPOModule``). Every other field either shows in the observation
#: or leaves legality alone (``tests/test_observed_masks.py`` toggles each to check it).
RULE_OPTIONS: dict[str, bool] = {name: _DEFAULTS[name] for name in ("auto_flip", "wrap_ranks")}


def rule_options(config: SpitConfig | None = None) -> dict[str, bool]:
    """The :data:`RULE_OPTIONS` of ``config`` (None: the defaults), as a new dict.

    Raises:
        ValueError: ``config`` is neither a SpitConfig nor None.
    """
    config = check_config(config)
    return {name: getattr(config, name) for name in RULE_OPTIONS}


def check_ranks(view) -> None:
    """Refuse a decoded batch whose one-hot ranks (stock tops, centre tops) are not ranks 0-13.

    Args:
        view: an :class:`ObservationView` (or any object with its rank attributes).

    Raises:
        ValueError: a rank outside 0-13: the array is not a Spit environment's observations
            (an all-ones row, say, decodes to rank 91).
    """
    for name in ("self_stock_top_rank", "opp_stock_top_rank", "centre_top_rank"):
        ranks = getattr(view, name)
        if ranks.size and not 0 <= ranks.min() <= ranks.max() <= 13:
            raise ValueError("observations: their one-hot stock and centre ranks do not decode to "
                             "ranks 0-13; the model needs a Spit environment's observations")


def observed_masks(observations, auto_flip: bool = RULE_OPTIONS["auto_flip"],
                   wrap_ranks: bool = RULE_OPTIONS["wrap_ranks"]) -> np.ndarray:
    """The legal moves of the observing seat, read from its observations and the rule options.

    Equal to the env's ``action_masks()`` (``spit_env.core.legal_action_mask``) for every
    observation of a game played under ``auto_flip`` and ``wrap_ranks``, whatever the config's
    other fields (:data:`RULE_OPTIONS`; tested on every config of the differential test). The
    rule decisions it implements, as the core's mask does (docs/RULES.md, the mask table): a free
    seat may WAIT, PLAY a face-up top onto a centre top adjacent to it (D1; only the piles that
    exist, D4), FILL an empty place from a face-up top over at least one more card (D6), FLIP a
    face-down top (D5, ``auto_flip`` off) in the play phase, and only SLAP in the slap phase
    (D11); a busy seat (D7) and a finished game only WAIT.

    Args:
        observations: (B, D) float32, layout ``rules.OBSERVATION``.
        auto_flip: the config's ``auto_flip`` (D5).
        wrap_ranks: the config's ``wrap_ranks`` (D1).

    Returns:
        (B, 23) bool, a new array.

    Raises:
        ValueError: observations not (B, D), or whose one-hot ranks do not decode to ranks 0-13
            (not a Spit environment's observations, :func:`check_ranks`).
    """
    obs = np.asarray(observations, dtype=np.float32)
    if obs.ndim != 2 or obs.shape[1] != rules.OBS_DIM:
        raise ValueError(f"observations must have shape (B, {rules.OBS_DIM}), got {obs.shape}")
    view = read_observation(obs)
    check_ranks(view)
    b, n_stocks = len(obs), rules.N_STOCKS
    rank, height = view.self_stock_top_rank, view.self_stock_height  # (B, S): rank 0 face down
    # D1, D4: a missing centre pile has top rank 0, adjacent to nothing
    play = rules.ADJACENT[bool(wrap_ranks)][rank[:, :, None], view.centre_top_rank[:, None, :]]
    fill = (rank > 0) & (height >= 2) & (height == 0).any(axis=1, keepdims=True)  # D6
    flip = view.self_stock_top_face_down & (not auto_flip)  # D5
    free = ~view.self_busy  # D7
    playing = (free & (view.phase == rules.PHASE_PLAY))[:, None]
    slapping = free & (view.phase == rules.PHASE_SLAP)  # D11: the slap is compulsory
    masks = np.zeros((b, rules.N_ACTIONS), bool)
    masks[:, rules.WAIT] = ~slapping
    masks[:, rules.PLAY_BASE:rules.FILL_BASE] = play.reshape(b, 2 * n_stocks) & playing
    masks[:, rules.FILL_BASE:rules.FLIP_BASE] = fill & playing
    masks[:, rules.FLIP_BASE:rules.SLAP_BASE] = flip & playing
    masks[:, rules.SLAP_BASE:] = slapping[:, None]
    return masks
