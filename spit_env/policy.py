"""Policies: their one signature, the registry of names, and player profiles.

Every bot, trained model and opponent of the adapters has the one signature: a **policy** maps a
batch of observations to a batch of actions::

    policy(observations, action_masks, rng) -> actions
        observations: (B, D) float32, layout rules.OBSERVATION (egocentric, one row per game)
        action_masks: (B, A) bool, A = 23, the legal moves (every row has at least one legal move)
        rng:          numpy.random.Generator, the only randomness a policy may use
        returns:      (B,) int64 action ids 0-22, each legal in its row

A policy that **plans** may also read the *public table* (``core.PublicTable``: everything both
players have seen, as a core state with the hidden cards replaced by placeholders and no random
stream): it declares ``reads_public_table = True`` and is then called as
``policy(observations, action_masks, rng, table=table)``, ``table`` holding the same rows in the
same order. The runners of the package (the environments' opponents, the match library
``agents.arena``, the behaviour-cloning teacher of ``train_ppo``) pass it through
:func:`call_policy`; anywhere else, build it with ``core.public_table(state, idx, seats)`` or
ask an environment for it (``public_table()`` of SpitGymEnv, the ParallelEnv and SpitVecEnv).

A **profile** is ``"name@latency"``: a registered policy name plus the latency of the seat it plays
(D7), a latency preset name ("pro", "club", "novice") or a whole number of ms (fixed). E.g.
"greedy@pro", "random@250". A profile's latency replaces that seat's ``config.latency``; a bare
name keeps the config's latency. :func:`apply_profile` is the one place a policy takes a seat:
the environments' opponents, the match library's players (``agents.arena``), the planner's
rollout seats and the RLlib bot module all go through it; :func:`seat_profile`, which it calls,
is the one place a profile's latency is written into a seat of a config.

A policy that **models its own latency** (the ``racer`` bot: its race predictions depend on how
fast its moves land) declares the optional hook::

    policy.with_latency(latency: Latency) -> Policy
        latency:  the latency model (D7) of the seat the policy plays
        returns:  a policy that believes it plays at ``latency`` (a new object; the original is
                  left as it was)

:func:`apply_profile` calls it every time it seats such a policy, with the seat's latency in the
config it returns (the profile's latency where there is one, else the config's), so the bot's
belief and the latency its moves land with are the same. Only the seat's own latency is told: what
the bot believes of its opponent's latency stays its own (a player knows its own speed).

Plug-ins: a policy name is found in :func:`register_policy`'s run-time registry, else in the
entry-point group ``spit_env.policies`` (:data:`ENTRY_POINT_GROUP`) of the installed
distributions, read with ``importlib.metadata``. Each entry maps a name to a factory, the
callable ``factory(**kwargs) -> Policy``; this project declares its bots in its pyproject.toml::

    [project.entry-points."spit_env.policies"]
    greedy = "agents.heuristics:GreedyBot"

An entry's module is imported only when its name is first asked for, so ``spit_env`` names no
bot package and imports nothing above itself (import direction rules <- core <- adapters <-
agents). Entry points are part of a distribution's installed metadata: after adding one, install
the package again (``pip install -c constraints.txt -e .``). A plug-in that fails to import, for
example because another installed package of the same top-level name shadows its module, raises
:class:`PolicyPluginError` saying which entry point failed and where its module was found. An
entry that needs an optional extra of its distribution names it after the factory
(``rllib = "agents.rllib:make_rllib [scale]"``): :func:`missing_extras` tells whether it is
installed here, and :func:`available_policies` (which the unknown-name error lists) leaves out
the names whose extras are not.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import warnings
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from . import core
from .checks import did_you_mean
from .config import SpitConfig
from .latency import DEPRECATED_PRESETS, PRESETS, Latency
from .rules import N_ACTIONS

__all__ = [
    "ENTRY_POINT_GROUP",
    "Policy",
    "PolicyPluginError",
    "register_policy",
    "registered_policies",
    "available_policies",
    "missing_extras",
    "parse_profile",
    "make_policy",
    "seat_profile",
    "apply_profile",
    "call_policy",
    "reads_public_table",
    "uniform_legal",
    "uniform_legal_actions",
]

#: The entry-point group in which installed distributions declare policies by name.
ENTRY_POINT_GROUP = "spit_env.policies"


@runtime_checkable
class Policy(Protocol):
    """``(observations (B, D) float32, action_masks (B, 23) bool, rng Generator) -> (B,) int64``.

    Optional members (module docstring): ``reads_public_table = True`` for a policy that plans on
    the public table (called with ``table=``), and the latency hook
    ``with_latency(latency: Latency) -> Policy``, which :func:`apply_profile` calls with the
    latency of the seat the policy takes.
    """

    def __call__(
        self, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Choose one legal action per row (module docstring)."""


class PolicyPluginError(ImportError):
    """A policy declared by an entry point could not be loaded (the message says which and why)."""


_REGISTRY: dict[str, Callable[..., Policy]] = {}


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
        raise ValueError(
            f"policy name must be a non-empty string without '@' or spaces, got {name!r}"
        )
    if name in PRESETS:
        raise ValueError(f"policy name {name!r} is a latency preset ({sorted(PRESETS)}): "
                         "\"name@latency\" would read two ways; choose another name")
    if not callable(factory):
        raise ValueError(f"factory for policy {name!r} must be callable, got {factory!r}")
    if not overwrite and _REGISTRY.get(name, factory) is not factory:
        raise ValueError(
            f"policy {name!r} is already registered (pass overwrite=True to replace it)"
        )
    declared = {} if overwrite or name in _REGISTRY else _entry_points()
    if name in declared:
        ep = declared[name][0]
        raise ValueError(f"policy {name!r} is already registered by the entry point "
                         f"'{ep.name} = {ep.value}' (pass overwrite=True to replace it)")
    _REGISTRY[name] = factory


def registered_policies() -> list[str]:
    """The known policy names, sorted: registered at run time or declared by an entry point.

    Entry points are listed without importing their modules.
    """
    return sorted(set(_REGISTRY) | set(_entry_points()))


def available_policies() -> list[str]:
    """The :func:`registered_policies` that can be built here, sorted.

    Those but the entry points whose extras are not installed (:func:`missing_extras`); nothing
    is imported.
    """
    return [name for name in registered_policies() if not missing_extras(name)]


def missing_extras(name: str) -> list[str]:
    """The extras that policy ``name`` needs and that are not installed here, as "dist[extra]".

    An entry point names its extras after the factory (``"agents.rllib:make_rllib [scale]"``); an
    extra counts as installed when every distribution it requires is installed and importable
    (one of its top-level modules is found; the distribution's own other extras are followed).
    A name registered at run time, unknown, or declared without extras needs none: [].
    """
    if name in _REGISTRY:
        return []
    missing = []
    for ep in _entry_points().get(name, []):
        if not ep.extras:
            continue
        dist = getattr(ep, "dist", None) or _owner(ep.module)
        for extra in ep.extras:
            if dist is None or not _extra_installed(dist, extra, set()):
                owner = dist.metadata["Name"] if dist is not None else "its distribution"
                missing.append(f"{owner}[{extra}]")
    return missing


def _owner(module: str) -> importlib.metadata.Distribution | None:
    """The installed distribution of ``module``'s top-level package, or None."""
    names = importlib.metadata.packages_distributions().get(module.partition(".")[0], [])
    try:
        return importlib.metadata.distribution(names[0]) if names else None
    except importlib.metadata.PackageNotFoundError:
        return None


def _unavailable_note() -> str:
    """The names that cannot be built here, for an error: "; not installed here: ...", or ""."""
    needs = {n: missing_extras(n) for n in registered_policies()}
    parts = [f"{n!r} (needs {', '.join(m)})" for n, m in needs.items() if m]
    return f"; not installed here: {', '.join(parts)}" if parts else ""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _extra_installed(dist: importlib.metadata.Distribution, extra: str, seen: set) -> bool:
    """Whether every requirement of ``dist``'s ``extra`` is installed and importable."""
    own = _canonical(dist.metadata["Name"])
    seen.add(extra)
    for req in dist.requires or []:
        body, _, marker = req.partition(";")
        if not re.search(rf"""extra\s*==\s*["']{re.escape(extra)}["']""", marker):
            continue
        found = re.match(r"\s*([A-Za-z0-9._-]+)\s*(?:\[([^\]]*)\])?", body)
        if found is None:
            continue
        req_name, req_extras = found.group(1), (found.group(2) or "").split(",")
        if _canonical(req_name) == own:  # "spit-env[train]": the same distribution's extras
            if not all(_extra_installed(dist, e.strip(), seen)
                       for e in req_extras if e.strip() and e.strip() not in seen):
                return False
            continue
        try:
            needed = importlib.metadata.distribution(req_name)
        except importlib.metadata.PackageNotFoundError:
            return False
        top = (needed.read_text("top_level.txt") or "").split() or [req_name.replace("-", "_")]
        if not any(_importable(module) for module in top):
            return False
    return True


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, or no spec
        return False


def _entry_points() -> dict[str, list[importlib.metadata.EntryPoint]]:
    """The installed entry points of :data:`ENTRY_POINT_GROUP` by name, distinct values only.

    Read afresh at each call (a name that loads is then kept in the registry, so this runs once
    per name, not per policy built).
    """
    found: dict[str, list[importlib.metadata.EntryPoint]] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if all(ep.value != other.value for other in found.get(ep.name, [])):
            found.setdefault(ep.name, []).append(ep)
    return found


def _describe(ep: importlib.metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    where = f" of the distribution {dist.name!r}" if dist is not None else ""
    return f"the entry point '{ep.name} = {ep.value}'{where} (group {ENTRY_POINT_GROUP!r})"


def _load_entry_point(name: str, eps: list) -> Callable[..., Policy]:
    """Import the factory that the entry points ``eps`` of ``name`` declare and register it.

    Raises:
        PolicyPluginError: two distributions declare the name differently, its module does not
            import (missing, broken or shadowed by another package of the same name), or the
            object it names is missing or not callable.
    """
    if len(eps) > 1:
        raise PolicyPluginError(
            f"policy {name!r} is declared by more than one entry point: "
            + "; ".join(_describe(ep) for ep in eps) + ". Uninstall one of them.")
    ep = eps[0]
    try:
        factory = ep.load()
    except (ImportError, AttributeError) as err:
        top = ep.value.split(":")[0].split(".")[0]
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        found = "is not installed" if spec is None else f"is found at {spec.origin or spec.name}"
        raise PolicyPluginError(
            f"policy {name!r} is declared by {_describe(ep)}, but it could not be loaded: {err}. "
            f"The top-level module {top!r} {found}; if that is another package of the same "
            f"name, it shadows the plug-in (uninstall or rename one of them). After changing "
            f"entry points, install the package again "
            f"(pip install -c constraints.txt -e .).") from err
    if not callable(factory):
        raise PolicyPluginError(f"policy {name!r}: {_describe(ep)} names {factory!r}, which is "
                                f"not callable (a factory(**kwargs) -> Policy is needed)")
    _REGISTRY[name] = factory
    return factory


def parse_profile(spec: str) -> tuple[str, Latency | None]:
    """Split a profile "name@latency" into the policy name and its Latency (None if no "@").

    The latency is a preset name or a whole number of ms (``Latency.parse``). The policy is
    always left of "@" and the latency right of it: "expert@club" is the ``expert`` bot at the
    club latency, "racer@pro" the ``racer`` bot at the pro preset. No policy takes a preset's name
    (:func:`register_policy` refuses it); "expert", the pro preset's old name, still reads as a
    latency right of "@" (a FutureWarning).

    Raises:
        ValueError: not a string, an empty name, more than one "@", or a bad latency (when the
            two parts look swapped, e.g. "expert@racer", the message names the profile meant).
    """
    if not isinstance(spec, str):
        raise ValueError(f"profile must be a string 'name' or 'name@latency', got {spec!r}")
    name, sep, lat = spec.partition("@")
    if not name or "@" in lat or (sep and not lat):
        raise ValueError(
            "profile must be 'name' or 'name@latency' (latency a preset name or whole ms), "
            f"got {spec!r}"
        )
    if not sep:
        return name, None
    try:
        return name, Latency.parse(lat)
    except ValueError as err:
        raise ValueError(f"profile {spec!r}: {err}{_swapped_hint(name, lat)}") from None


def _is_latency(text: str) -> bool:
    try:
        with warnings.catch_warnings():  # a hint only: an old preset name is still a latency
            warnings.simplefilter("ignore", FutureWarning)
            Latency.parse(text)
    except ValueError:
        return False
    return True


def _swapped_hint(name: str, latency: str) -> str:
    """A hint for a profile written latency first ("club@racer"), else ""."""
    if not _is_latency(name):
        return ""
    if latency in registered_policies():
        return (f"; a profile is 'name@latency', the policy first: did you mean "
                f"'{latency}@{DEPRECATED_PRESETS.get(name, name)}'?")
    return f"; {name!r} is a latency: a profile is 'name@latency', the policy first"


def make_policy(spec, **kwargs) -> Policy:
    """A policy from a Policy object / callable (returned as is) or a registered name or profile.

    For a profile "name@latency" the latency part is parsed and checked but not applied here: it
    belongs to the seat's config (see :func:`apply_profile`).

    Args:
        spec: a callable policy, a name ("greedy") or a profile ("greedy@pro").
        **kwargs: passed to the registered factory (not allowed with a callable ``spec``).

    Raises:
        ValueError: an unknown name (the message lists the known names), a bad profile, keyword
            arguments given with a callable, or a spec that is neither a string nor callable.
        PolicyPluginError: the name's entry point does not load (see :func:`registered_policies`).
    """
    if isinstance(spec, str):
        return _from_name(parse_profile(spec)[0], spec, kwargs)
    if callable(spec):
        if kwargs:
            raise ValueError(
                f"keyword arguments {sorted(kwargs)} are only for a policy given by name, "
                "not a callable"
            )
        return spec
    raise ValueError(
        "policy must be a callable Policy, a registered name or a 'name@latency' profile, "
        f"got {spec!r}"
    )


def _from_name(name: str, spec: str, kwargs: dict) -> Policy:
    """The registered policy ``name`` (the policy part of the profile ``spec``), built."""
    factory = _REGISTRY.get(name)
    if factory is None:
        declared = _entry_points().get(name)
        factory = None if declared is None else _load_entry_point(name, declared)
    if factory is None:
        known = available_policies()
        swapped = _swapped_hint(name, spec.partition("@")[2]) if "@" in spec else ""
        raise ValueError(
            f"unknown policy {name!r}{did_you_mean(name, known)}{swapped}; known policies: "
            f"{known} (registered with register_policy or declared by an installed "
            f"distribution in the entry-point group {ENTRY_POINT_GROUP!r}){_unavailable_note()}")
    return factory(**kwargs)


def seat_profile(spec, config: SpitConfig, seat: int,
                 latency: Latency | None = None) -> tuple[object, SpitConfig]:
    """Parse a profile and seat it: its latency becomes that seat's in the config.

    The one writer of a player's latency into a seat of a config: :func:`apply_profile` seats
    every policy through it, and so do the match library's players (``agents.arena.Player``,
    whose latency was parsed from their profile before, or given as a model) and a person
    playing a bot (``experiments/realtime``: a name, and the latency of their hand).

    Args:
        spec: a profile "name@latency", a bare name or a callable policy.
        config: the games' config before the profile.
        seat: 0 or 1, the seat the player takes.
        latency: the seat's Latency model, for a ``spec`` without one of its own (a player's
            latency kept apart from its name); None: the profile's, if any.

    Returns:
        (the policy part: the name of a string ``spec``, else ``spec`` itself; the config with
        the seat's latency replaced, or ``config`` itself when there is no latency to seat).

    Raises:
        ValueError: a bad profile (:func:`parse_profile`), a seat other than 0 / 1, or a
            ``latency`` given for a profile that has one.
    """
    if isinstance(seat, bool) or seat not in (0, 1):
        raise ValueError(f"seat must be 0 or 1, got {seat!r}")
    name = spec
    if isinstance(spec, str):
        name, own = parse_profile(spec)
        if own is not None and latency is not None:
            raise ValueError(f"profile {spec!r} has a latency of its own; latency must be None, "
                             f"got {latency!r}")
        latency = own if own is not None else latency
    if latency is not None:
        pair = list(config.latency)
        pair[seat] = latency
        config = config.replace(latency=tuple(pair))
    return name, config


def apply_profile(spec, config: SpitConfig, seat: int, **kwargs) -> tuple[Policy, SpitConfig]:
    """Seat the policy of ``spec`` in ``seat``: the one route by which a policy takes a seat.

    Puts a profile's latency into that seat of the config (:func:`seat_profile`; a bare name or
    a callable keeps the config's), builds the policy (:func:`make_policy`) and, for a policy
    with the latency hook (``with_latency``, module docstring), returns the policy the hook
    gives for the seat's latency in the returned config.

    Args:
        spec: a callable policy, a registered name ("racer") or a profile ("racer@pro").
        config: the games' config before the profile.
        seat: 0 or 1, the seat the policy plays.
        **kwargs: passed to the registered factory (as :func:`make_policy`).

    Returns:
        (policy, config): the seated policy, and ``config`` with the seat's latency replaced by
        the profile's.

    Raises:
        ValueError: as :func:`make_policy`, or a seat other than 0 / 1.
    """
    name, config = seat_profile(spec, config, seat)
    if isinstance(spec, str):  # parsed once, by seat_profile
        policy = _from_name(name, spec, kwargs)
    else:
        policy = make_policy(spec, **kwargs)
    hook = getattr(policy, "with_latency", None)
    if callable(hook):
        policy = hook(config.latency[seat])
    return policy, config


def reads_public_table(policy) -> bool:
    """Whether ``policy`` plans on the public table.

    Such a policy declares ``reads_public_table = True`` and takes a ``table=`` keyword (see the
    module docstring).
    """
    return bool(getattr(policy, "reads_public_table", False))


def call_policy(
    policy: Policy, observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator,
    table=None,
) -> np.ndarray:
    """Call ``policy`` and check its answer: (B,) int64 action ids, each legal in its row.

    Args:
        policy: the policy to call.
        observations: (B, D) float32.
        action_masks: (B, 23) bool.
        rng: the policy's generator.
        table: for a policy that :func:`reads_public_table` (ignored for the others): the
            ``core.PublicTable`` of the same B rows, or a zero-argument callable returning it
            (built only when the policy reads it).

    Raises:
        ValueError: a wrong shape, a non-integer dtype, an action outside its row's mask, or a
            table-reading policy given no table (or not a PublicTable of its B rows).
    """
    b = action_masks.shape[0]
    if reads_public_table(policy):
        out = _call_with_table(policy, observations, action_masks, rng, table)
    else:
        out = np.asarray(policy(observations, action_masks, rng))
    if out.shape != (b,) or out.dtype.kind not in "iu":
        raise ValueError(
            f"policy {policy!r} must return ({b},) integer actions, got shape {out.shape} "
            f"dtype {out.dtype}"
        )
    out = out.astype(np.int64)
    if ((out < 0) | (out >= N_ACTIONS)).any() or not action_masks[np.arange(b), out].all():
        bad = np.flatnonzero(
            (out < 0)
            | (out >= N_ACTIONS)
            | ~action_masks[np.arange(b), np.clip(out, 0, N_ACTIONS - 1)]
        )
        raise ValueError(
            f"policy {policy!r} returned illegal actions in rows {bad[:10].tolist()}: "
            f"{out[bad[:10]].tolist()}"
        )
    return out


def _call_with_table(policy, observations, action_masks, rng, table) -> np.ndarray:
    b = action_masks.shape[0]
    if table is None:
        raise ValueError(
            f"policy {policy!r} plans on the public table (reads_public_table = True) but was "
            "given none; pass table=spit_env.core.public_table(state, idx, seats)"
        )
    if callable(table):
        table = table()
    if not isinstance(table, core.PublicTable) or table.batch_size != b:
        got = (f"a table of batch size {table.batch_size}" if isinstance(table, core.PublicTable)
               else type(table).__name__)
        raise ValueError(f"table must be the core.PublicTable of the policy's rows (batch size "
                         f"{b}) or a callable returning it, got {got}")
    return np.asarray(policy(observations, action_masks, rng, table=table))


def uniform_legal_actions(action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per mask row: the one helper for "any legal move".

    Args:
        action_masks: (..., A) bool, at least one True per row.
        rng: the only randomness: one ``rng.random(action_masks.shape)`` draw per call.

    Returns:
        (...) int64 action ids.
    """
    masks = np.asarray(action_masks, dtype=bool)
    u = rng.random(masks.shape)
    return np.argmax(np.where(masks, u, -1.0), axis=-1).astype(np.int64)


def uniform_legal(
    observations: np.ndarray, action_masks: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """The Policy of :func:`uniform_legal_actions`: (B,) int64, the observations unread.

    A policy that needs no bot plug-in, for the adapters' checks and tests.
    """
    return uniform_legal_actions(action_masks, rng)
