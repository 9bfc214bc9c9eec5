"""Argument checks shared by the public functions (messages name the value and the rule).

The one home for "is this an int / bool / number / choice": every public function checks its
arguments through these, so the rules agree everywhere. NumPy integers count as ints (a count read
from an array is an `np.int64`), bools do not (`True` is not a frame count); the functions that
return a value return it as a plain Python `int`/`float`, so nothing downstream keeps a NumPy
scalar.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def _as_int(name: str, value: object, kind: str = "an int") -> int:
    """`value` as a Python int; TypeError unless it is an int or a NumPy integer (not a bool),
    saying the value must be `kind`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be {kind}, got {value!r}")
    return int(value)


def check_int(name: str, value: object, *, minimum: int | None = None, kind: str = "an int") -> int:
    """`value` as an int; TypeError unless an int (not a bool: the message says `kind`),
    ValueError if below `minimum`."""
    as_int = _as_int(name, value, kind)
    if minimum is not None and as_int < minimum:
        raise ValueError(f"{name} ({value}) must be >= {minimum}")
    return as_int


def check_optional_int(name: str, value: object, *, minimum: int | None = None) -> int | None:
    """`check_int`, with None allowed (and returned)."""
    if value is None:
        return None
    return check_int(name, value, minimum=minimum, kind="an int or None")


def check_positive_int(name: str, value: object) -> int:
    """`value` as an int; TypeError unless an int; ValueError unless it is > 0."""
    as_int = _as_int(name, value)
    if as_int <= 0:
        raise ValueError(f"{name} ({value}) must be > 0")
    return as_int


def check_bool(name: str, value: object, kind: str = "a bool") -> bool:
    """`value`; TypeError unless it is a bool (0/1 and NumPy bools are refused: the message
    says `kind`)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be {kind}, got {value!r}")
    return value


def check_optional_bool(name: str, value: object) -> bool | None:
    """`check_bool`, with None allowed (and returned): "decide for me"."""
    return None if value is None else check_bool(name, value, "a bool or None")


def check_real(name: str, value: object, *, minimum: float | None = None) -> float:
    """`value` as a float; TypeError unless a real number (not a bool); ValueError if below
    `minimum` (NaN too). Without `minimum` any value, NaN included: for data fields (a
    manifest's fps) whose range the caller checks, if at all."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    as_float = float(value)
    if minimum is not None and not as_float >= minimum:
        raise ValueError(f"{name} ({as_float}) must be >= {minimum:g}")
    return as_float


def check_positive_number(name: str, value: object) -> float:
    """`value` as a float; TypeError unless a real number (not a bool); ValueError unless > 0."""
    as_float = check_real(name, value)
    if not (math.isfinite(as_float) and as_float > 0):
        raise ValueError(f"{name} ({value}) must be a finite number > 0")
    return as_float


def check_choice(name: str, value: T, choices: tuple[str, ...]) -> T:
    """`value`; ValueError unless it is one of `choices`."""
    if value not in choices:
        raise ValueError(f"{name} ({value!r}) must be one of {choices}")
    return value


def listed(words: Sequence[str], conjunction: str = "or") -> str:
    """The words as a message lists them: "a, b or c" ("a" alone)."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


def qualname(fn: object) -> str:
    """A callable's name for messages."""
    return getattr(fn, "__qualname__", None) or type(fn).__name__
