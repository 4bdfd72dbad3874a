"""Policies: the one signature every bot, trained model and opponent of the adapters has, a name
registry, and player profiles ("name@latency").

A **policy** maps a batch of observations to a batch of actions::

    policy(observations, action_masks, rng) -> actions
        observations: (B, D) float32, layout rules.OBSERVATION (egocentric, one row per game)
        action_masks: (B, A) bool, A = 23, the legal moves (every row has at least one legal move)
        rng:          numpy.random.Generator, the only randomness a policy may use
        returns:      (B,) int64 action ids 0-22, each legal in its row

A **profile** is ``"name@latency"``: a registered policy name plus the latency of the seat it plays
(D7), a latency preset name ("expert", "club", "novice") or a whole number of ms (fixed). E.g.
"greedy@expert", "random@250". A profile's latency replaces that seat's ``config.latency``
(:func:`apply_profile`); a bare name keeps the config's latency.

Plug-in hook, the one upward import of the package: bots live in the top-level ``agents``
package, which registers them here with :func:`register_policy` when it is imported. The
adapters never import ``agents`` at module level (import direction rules <- core <- adapters <-
agents); instead, the first time :func:`make_policy` is asked for a name that is not registered,
it imports ``agents`` once, lazily, and looks again.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from .config import SpitConfig
from .latency import Latency
from .rules import N_ACTIONS

__all__ = [
    "Policy",
    "register_policy",
    "registered_policies",
    "parse_profile",
    "make_policy",
    "apply_profile",
    "call_policy",
    "uniform_legal",
]


@runtime_checkable
class Policy(Protocol):
    """``(observations (B, D) float32, action_masks (B, 23) bool, rng Generator) -> (B,) int64``."""

    def __call__(
        self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray: ...


_REGISTRY: dict[str, Callable[..., Policy]] = {}
_PLUGINS_MODULE = "agents"
_plugins_loaded = False


def register_policy(name: str, factory: Callable[..., Policy], *, overwrite: bool = False) -> None:
    """Register ``factory(**kwargs) -> Policy`` under ``name``, for :func:`make_policy`.

    Args:
        name: a non-empty string without "@" (that character separates a profile's latency).
        factory: a callable building a policy from keyword arguments.
        overwrite: allow replacing an existing name (default: refuse).

    Raises:
        ValueError: a bad name, a non-callable factory, or a name already registered.
    """
    if not isinstance(name, str) or not name or "@" in name or name != name.strip():
        raise ValueError(f"policy name must be a non-empty string without '@' or spaces, got {name!r}")
    if not callable(factory):
        raise ValueError(f"factory for policy {name!r} must be callable, got {factory!r}")
    if name in _REGISTRY and not overwrite and _REGISTRY[name] is not factory:
        raise ValueError(f"policy {name!r} is already registered (pass overwrite=True to replace it)")
    _REGISTRY[name] = factory


def registered_policies() -> list[str]:
    """The registered policy names, sorted (after loading the ``agents`` plug-in if present)."""
    _load_plugins()
    return sorted(_REGISTRY)


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    try:
        importlib.import_module(_PLUGINS_MODULE)
    except ModuleNotFoundError as err:
        # Only a missing ``agents`` package is tolerated (spit_env used on its own); an import
        # error inside agents is a real bug and must surface.
        if err.name != _PLUGINS_MODULE:
            raise


def parse_profile(spec: str) -> tuple[str, Latency | None]:
    """Split a profile "name@latency" into the policy name and its Latency (None if no "@").

    The latency is a preset name or a whole number of ms (``Latency.parse``).

    Raises:
        ValueError: not a string, an empty name, more than one "@", or a bad latency.
    """
    if not isinstance(spec, str):
        raise ValueError(f"profile must be a string 'name' or 'name@latency', got {spec!r}")
    name, sep, lat = spec.partition("@")
    if not name or "@" in lat or (sep and not lat):
        raise ValueError(
            f"profile must be 'name' or 'name@latency' (latency a preset name or whole ms), got {spec!r}"
        )
    if not sep:
        return name, None
    try:
        return name, Latency.parse(lat)
    except ValueError as err:
        raise ValueError(f"profile {spec!r}: {err}") from None


def make_policy(spec, **kwargs) -> Policy:
    """A policy from a Policy object / callable (returned as is) or a registered name or profile.

    For a profile "name@latency" the latency part is parsed and checked but not applied here: it
    belongs to the seat's config (see :func:`apply_profile`).

    Args:
        spec: a callable policy, a name ("greedy") or a profile ("greedy@expert").
        **kwargs: passed to the registered factory (not allowed with a callable ``spec``).

    Raises:
        ValueError: an unknown name (the message lists the known names), a bad profile, keyword
            arguments given with a callable, or a spec that is neither a string nor callable.
    """
    if isinstance(spec, str):
        name, _ = parse_profile(spec)
        if name not in _REGISTRY:
            _load_plugins()
        if name not in _REGISTRY:
            raise ValueError(f"unknown policy {name!r}; known policies: {sorted(_REGISTRY)}")
        return _REGISTRY[name](**kwargs)
    if callable(spec):
        if kwargs:
            raise ValueError(
                f"keyword arguments {sorted(kwargs)} are only for a policy given by name, not a callable"
            )
        return spec
    raise ValueError(
        f"policy must be a callable Policy, a registered name or a 'name@latency' profile, got {spec!r}"
    )


def apply_profile(spec, config: SpitConfig, seat: int, **kwargs) -> tuple[Policy, SpitConfig]:
    """Build the policy of ``spec`` for ``seat`` and the config with that seat's latency replaced
    by the profile's (unchanged for a callable or a bare name).

    Raises:
        ValueError: as :func:`make_policy`, or a seat other than 0 / 1.
    """
    if seat not in (0, 1):
        raise ValueError(f"seat must be 0 or 1, got {seat!r}")
    policy = make_policy(spec, **kwargs)
    if isinstance(spec, str):
        _, latency = parse_profile(spec)
        if latency is not None:
            pair = list(config.latency)
            pair[seat] = latency
            config = config.replace(latency=tuple(pair))
    return policy, config


def call_policy(
    policy: Policy, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Call ``policy`` and check its answer: (B,) int64 action ids, each legal in its row.

    Raises:
        ValueError: a wrong shape, a non-integer dtype, or an action outside its row's mask.
    """
    out = np.asarray(policy(observations, action_masks, rng))
    b = action_masks.shape[0]
    if out.shape != (b,) or out.dtype.kind not in "iu":
        raise ValueError(
            f"policy {policy!r} must return ({b},) integer actions, got shape {out.shape} dtype {out.dtype}"
        )
    out = out.astype(np.int64)
    if ((out < 0) | (out >= N_ACTIONS)).any() or not action_masks[np.arange(b), out].all():
        bad = np.flatnonzero(
            (out < 0) | (out >= N_ACTIONS) | ~action_masks[np.arange(b), np.clip(out, 0, N_ACTIONS - 1)]
        )
        raise ValueError(
            f"policy {policy!r} returned illegal actions in rows {bad[:10].tolist()}: {out[bad[:10]].tolist()}"
        )
    return out


def uniform_legal(
    observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """A policy choosing uniformly among each row's legal actions (used by the adapters' checks,
    which must not depend on the ``agents`` plug-in). Returns (B,) int64."""
    masks = np.asarray(action_masks, dtype=bool)
    u = rng.random(masks.shape)
    return np.argmax(np.where(masks, u, -1.0), axis=1).astype(np.int64)
