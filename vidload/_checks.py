"""Argument checks shared by the public functions (messages name the value and the rule)."""

from __future__ import annotations

import math
import numbers

import numpy as np


def _as_int(name: str, value: object) -> int:
    """`value` as a Python int; TypeError unless it is an int or a NumPy integer (not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return int(value)


def check_int(name: str, value: object, *, minimum: int | None = None) -> None:
    """TypeError unless `value` is an int (not a bool); ValueError if it is below `minimum`."""
    as_int = _as_int(name, value)
    if minimum is not None and as_int < minimum:
        raise ValueError(f"{name} ({value}) must be >= {minimum}")


def check_positive_int(name: str, value: object) -> None:
    """TypeError unless `value` is an int; ValueError unless it is > 0."""
    if _as_int(name, value) <= 0:
        raise ValueError(f"{name} ({value}) must be > 0")


def check_positive_number(name: str, value: object) -> None:
    """TypeError unless `value` is a real number (not a bool), ValueError unless finite, > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not (math.isfinite(float(value)) and float(value) > 0):
        raise ValueError(f"{name} ({value}) must be a finite number > 0")


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    """ValueError unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(f"{name} ({value!r}) must be one of {choices}")


def qualname(fn: object) -> str:
    """A callable's name for messages."""
    return getattr(fn, "__qualname__", None) or type(fn).__name__
