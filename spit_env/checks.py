"""Argument checks shared by the whole package, one per idea.

Each check returns the value in its plain Python type, or raises ``ValueError`` whose message
names the argument and what is allowed, in one wording everywhere::

    check_int("max_rounds", 0, 1, 10_000)  # max_rounds must be an integer in 1..10000, got 0
    check_bool("auto_flip", 1)             # auto_flip must be True or False, got 1
    check_number("shaping", float("nan"))  # shaping must be a finite number, got nan
    check_choice("reward", "win", REWARDS) # reward must be one of ['game', 'round'], got 'win'

Booleans are never integers or numbers here (``True`` is not a batch size), and NumPy scalars
count as Python ones.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["is_int", "check_int", "check_bool", "check_number", "check_choice", "did_you_mean"]


def is_int(value) -> bool:
    """Whether ``value`` is a Python or NumPy integer (not a bool)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _range_text(lo, hi) -> str:
    if lo is not None and hi is not None:
        return f"in {lo}..{hi}"
    if lo is not None:
        return f">= {lo}"
    if hi is not None:
        return f"<= {hi}"
    return ""


def check_int(name: str, value, lo: int | None = None, hi: int | None = None, *,
              none_ok: bool = False) -> int | None:
    """``value`` as an int, if it is an integer within ``lo``..``hi`` (each bound optional).

    With ``none_ok``, None is allowed too (and returned).

    Raises:
        ValueError: "<name> must be an integer [in lo..hi | >= lo | <= hi][ or None], got <value>".
    """
    if none_ok and value is None:
        return None
    rng = _range_text(lo, hi)
    if not is_int(value) or (lo is not None and value < lo) or (hi is not None and value > hi):
        allowed = "an integer" + (" " + rng if rng else "") + (" or None" if none_ok else "")
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return int(value)


def check_bool(name: str, value) -> bool:
    """``value`` if it is ``True`` or ``False`` (a Python bool, so configs stay JSON-friendly).

    Raises:
        ValueError: "<name> must be True or False, got <value>".
    """
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def check_number(name: str, value, lo: float | None = None, hi: float | None = None) -> float:
    """``value`` as a float, if it is a finite real number within ``lo``..``hi`` (inclusive).

    Raises:
        ValueError: "<name> must be a finite number [in lo..hi | >= lo | <= hi], got <value>".
    """
    rng = _range_text(lo, hi)
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))
    ok = ok and math.isfinite(float(value))
    if not ok or (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ValueError(f"{name} must be a finite number{' ' + rng if rng else ''}, got {value!r}")
    return float(value)


def _same(choice, value) -> bool:
    if isinstance(choice, bool) or isinstance(value, (bool, np.bool_)):
        return choice is value  # True is a choice of its own, not the integer 1
    try:
        return bool(choice == value)
    except (TypeError, ValueError):  # e.g. an array compared with a string
        return False


def did_you_mean(value, known) -> str:
    """" (did you mean 'greedy'?)" for the known name nearest a mistyped one (difflib), or "".

    Args:
        value: the name given.
        known: the names allowed (only strings are compared).
    """
    import difflib

    if not isinstance(value, str):
        return ""
    names = [k for k in known if isinstance(k, str)]
    near = difflib.get_close_matches(value, names, n=1, cutoff=0.6)
    if not near:  # a case slip ("Greedy") is near too
        near = [k for k in names if k.lower() == value.lower()][:1]
    return f" (did you mean {near[0]!r}?)" if near else ""


def check_choice(name: str, value, choices):
    """``value`` if it equals one of ``choices`` (a bool only matches a bool choice).

    Raises:
        ValueError: "<name> must be one of [...], got <value>", with the nearest choice
            suggested (:func:`did_you_mean`).
    """
    if not any(_same(c, value) for c in choices):
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}"
                         f"{did_you_mean(value, choices)}")
    return value
