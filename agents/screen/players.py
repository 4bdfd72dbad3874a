"""The screen's players: what may be screened, and its moves at every position.

A player is what the match library takes (``agents.arena.Player``: a registered name, a profile
"name@latency", a trained model's path) with, optionally, keyword arguments for its factory
written after colons, ``"planner:rollouts=32:horizon_ms=2000"``; or a batched policy object
(``spit_env.policy.Policy``), one that plans on the public table included.
"""

from __future__ import annotations

import ast
import time

import numpy as np

from agents.arena import Player
from spit_env import streams
from spit_env.config import SpitConfig
from spit_env.policy import apply_profile, call_policy, make_policy, seat_profile

__all__ = ["parse_player", "player_label", "player_problem", "player_moves"]


def _value(text: str):
    """A factory argument's value: a Python literal (32, 0.5, True, "x"), else the text."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_player(spec):
    """A Player (or a policy object, returned as it is) from a spec (module docstring).

    Raises:
        ValueError: a bad profile or a factory argument not written ``key=value``.
    """
    if isinstance(spec, Player) or (callable(spec) and not isinstance(spec, str)):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a player must be a name, profile, model path or policy, got {spec!r}")
    head, *args = spec.strip().split(":")
    player = Player.parse(head)
    kwargs = dict(player.kwargs)
    for arg in args:
        key, sep, text = arg.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"{spec!r}: factory arguments are written NAME:key=value, got "
                             f"{arg!r}")
        kwargs[key] = _value(text)
    return Player(spec.strip(), player.policy, player.latency, kwargs)


def player_label(player) -> str:
    """The name a player is shown by."""
    if isinstance(player, str):
        return player
    if isinstance(player, Player):
        return player.label
    return getattr(player, "__name__", None) or repr(player)


def _seated(player, config: SpitConfig) -> tuple:
    """The player's policy in seat 0 and in seat 1 (one object if the two are the same)."""
    player = parse_player(player)
    if isinstance(player, Player):
        base = make_policy(player.policy, **player.kwargs)
        latency = player.latency
    else:
        base, latency = player, None
    seated = []
    for s in (0, 1):
        _, cfg = seat_profile(base, config, s, latency)  # the one writer of a seat's latency
        seated.append(apply_profile(base, cfg, s)[0])
    return tuple(seated)


def player_problem(player, config: SpitConfig | None = None) -> str | None:
    """Why ``player`` cannot be screened, or None (its policy is built once to find out)."""
    try:
        _seated(player, config or SpitConfig())
    except (ValueError, OSError, ImportError, TypeError) as err:  # TypeError: a bad argument
        return f"{player_label(player)!r}: {err}"
    return None


def player_moves(player, positions, keys: np.ndarray, *, chunk: int = 256):
    """The player's move at every position, each drawn from the position's own stream.

    The policy is built and seated (``spit_env.policy.apply_profile``, each position's seat)
    before the clock starts; then it is asked ``chunk`` positions at a time, those of one seat
    together (both seats together when they are one policy object), with the positions'
    observations and masks, a ``RowStreams`` over their keys, and their public table when it
    reads one (built only then).

    Args:
        player: a player spec (module docstring).
        positions: the positions (``agents.screen.positions.Positions``).
        keys: (N,) uint64 the positions' policy keys.
        chunk: positions per call, >= 1.

    Returns:
        ``(moves, cpu_s)``: (N,) int64 legal moves, and the CPU seconds of the calls (table
        building included, the policy's construction not).

    Raises:
        ValueError: an unknown player or a bad argument, or a policy's illegal answer.
    """
    pols = _seated(player, positions.state.config)
    n = positions.size
    moves = np.empty(n, np.int64)
    t0 = time.process_time()
    for a in range(0, n, chunk):
        block = np.arange(a, min(n, a + chunk))
        groups = ([block] if pols[0] is pols[1]
                  else [block[positions.seat[block] == s] for s in (0, 1)])
        for s, idx in enumerate(groups):
            if idx.size == 0:
                continue
            pol = pols[0] if len(groups) == 1 else pols[s]
            moves[idx] = call_policy(pol, positions.obs[idx], positions.masks[idx],
                                     streams.RowStreams(keys[idx]),
                                     table=lambda idx=idx: positions.table(idx))
    return moves, time.process_time() - t0
