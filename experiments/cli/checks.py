"""The trainers' argument checks: one error type, one wording, one check per idea.

Every trainer (``train_ppo``, ``train_rllib``, ``expert_iteration``, ...) checks its whole
command line before any work starts and reports the first bad value as an
:class:`ArgumentError` whose message starts with the flag::

    check_positive("--num-envs", 0)            # --num-envs must be > 0, got 0
    check_latency("--eval-latency", "fast")    # --eval-latency: latency must be a Latency, ...
    check_game_ms("--eval-max-game-ms", 5)     # --eval-max-game-ms: max_game_ms must be ...
    check_players("--eval-opponents", ["gredy"])  # ... unknown player 'gredy'; did you mean ...

The checks of one trainer alone live beside its arguments (``experiments/ppo/checks.py``,
``experiments/expert/args.py``, ...).
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

__all__ = ["ArgumentError", "flag", "check_positive", "check_at_least", "check_fraction",
           "check_layers",
           "check_latency", "check_game_ms", "check_players", "check_out_folder",
           "check_json_file", "check_model_zip"]


class ArgumentError(ValueError):
    """A bad command-line value; the message starts with the argument's flag."""


def flag(name: str) -> str:
    """The flag of a dataclass field: ``"eval_games"`` -> ``"--eval-games"``."""
    return "--" + name.replace("_", "-")


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_positive(name: str, value) -> None:
    """``value`` > 0 and finite.

    Raises:
        ArgumentError: "<name> must be > 0, got <value>".
    """
    if not (_finite(value) and value > 0):
        raise ArgumentError(f"{name} must be > 0, got {value}")


def check_at_least(name: str, value, lo) -> None:
    """``value`` >= ``lo`` and finite.

    Raises:
        ArgumentError: "<name> must be >= <lo>, got <value>".
    """
    if not (_finite(value) and value >= lo):
        raise ArgumentError(f"{name} must be >= {lo}, got {value}")


def check_fraction(name: str, value, *, low_open: bool = True, high_open: bool = False) -> None:
    """``value`` in the interval from 0 to 1, each end open or closed as given.

    Raises:
        ArgumentError: "<name> must be in (0, 1], got <value>" (the interval as checked).
    """
    ok = _finite(value) and (value > 0 if low_open else value >= 0) \
        and (value < 1 if high_open else value <= 1)
    if not ok:
        interval = f"{'(' if low_open else '['}0, 1{')' if high_open else ']'}"
        raise ArgumentError(f"{name} must be in {interval}, got {value}")


def check_layers(name: str, layers) -> tuple[int, ...]:
    """``layers`` as hidden-layer widths: integers >= 1, a sequence or text ``"256,256"``.

    Raises:
        ArgumentError: "<name> must be one or more positive layer sizes (e.g. 256,256), got
            <layers>".
    """
    try:
        sizes = (tuple(int(n) for n in layers.split(",")) if isinstance(layers, str)
                 else tuple(int(n) for n in layers))
    except (TypeError, ValueError):
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise ArgumentError(f"{name} must be one or more positive layer sizes (e.g. 256,256), "
                            f"got {layers!r}")
    return sizes


def check_latency(name: str, spec):
    """``spec`` as a ``spit_env.Latency`` (a preset name or whole ms: ``Latency.parse``).

    Raises:
        ArgumentError: "<name>: <what Latency.parse says>".
    """
    from spit_env.latency import Latency

    try:
        return Latency.parse(spec)
    except ValueError as err:
        raise ArgumentError(f"{name}: {err}") from None


def check_game_ms(name: str, ms) -> int:
    """``ms`` as a game length in simulated ms that ``SpitConfig(max_game_ms=...)`` accepts.

    Raises:
        ArgumentError: "<name>: <what SpitConfig says>".
    """
    from spit_env.config import SpitConfig

    try:
        return SpitConfig(max_game_ms=ms).max_game_ms
    except ValueError as err:
        raise ArgumentError(f"{name}: {err}") from None


def check_players(name: str, specs, allowed=None, extra=()) -> list[tuple[str, object]]:
    """Each of ``specs`` as a player profile ``name[@latency]`` of a known player.

    Args:
        name: the flag, for the message.
        specs: player profiles (``"greedy"``, ``"racer@pro"``, ...).
        allowed: the player names allowed (default: every policy that can be built here,
            ``spit_env.policy.available_policies``).
        extra: more names allowed beside those (``"self"``, ``"strongest"``, ...).

    Returns:
        [(player name, Latency or None)], one per spec.

    Raises:
        ArgumentError: "<name>: ..." for a bad profile, a player whose extra is not installed
            (naming it), or an unknown player, with the nearest known name and the list of those
            allowed.
    """
    from spit_env.checks import did_you_mean
    from spit_env.policy import available_policies, missing_extras, parse_profile

    known = list(available_policies() if allowed is None else allowed) + list(extra)
    out = []
    for spec in specs:
        try:
            player, latency = parse_profile(spec)
        except ValueError as err:
            raise ArgumentError(f"{name}: {err}") from None
        if player not in known and missing_extras(player):
            raise ArgumentError(f"{name}: player {player!r} needs "
                                f"{', '.join(missing_extras(player))}, not installed here")
        if player not in known:
            raise ArgumentError(f"{name}: unknown player {player!r}{did_you_mean(player, known)}; "
                                f"allowed: {', '.join(known)}")
        out.append((player, latency))
    return out


def check_out_folder(name: str, path) -> None:
    """``path`` is None, a folder, or does not exist yet.

    Raises:
        ArgumentError: "<name>: '<path>' exists and is not a folder".
    """
    if path is not None and Path(path).exists() and not Path(path).is_dir():
        raise ArgumentError(f"{name}: {str(path)!r} exists and is not a folder")


def check_json_file(name: str, path) -> None:
    """``path`` is None or can be a file (not an existing folder).

    Raises:
        ArgumentError: "<name>: '<path>' is a folder, not a file path".
    """
    if path is not None and Path(path).is_dir():
        raise ArgumentError(f"{name}: {str(path)!r} is a folder, not a file path")


def check_model_zip(name: str, path) -> Path:
    """``path`` as a Path to an existing ``.zip`` file (a saved SB3 model's container).

    Raises:
        ArgumentError: "<name>: no model file at '<path>'" or "... is not a .zip model file".
    """
    path = Path(path)
    if not path.is_file():
        raise ArgumentError(f"{name}: no model file at {str(path)!r}")
    if not zipfile.is_zipfile(path):
        raise ArgumentError(f"{name}: {str(path)!r} is not a .zip model file saved by SB3")
    return path
