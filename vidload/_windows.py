"""Windows of long videos: an entry that is seconds [start, end) of its file.

Untrimmed datasets (EPIC-KITCHENS-100, Charades, ActivityNet, AVA) label stretches of long
videos. A window is given in seconds from the video's first frame (whose timestamp counts as 0,
whatever the container's start time: a stream starting at pts 1.4 s has its first frame at 0), so
that one list serves the original files and every converted container (which store the
originals' timestamps). The window is the run of frames whose time lies in [start, end); the
dataset samples inside it with its own frame count, exactly as it samples a whole video.
"""

from __future__ import annotations

import math

import numpy as np

#: A time within 1 ns of a frame's timestamp counts as reaching it (timestamps are pts x time
#: base in floating point: 1380 x 0.001 is 1.3800000000000001), as `vidload.sampling` does.
_TIE_S = 1e-9


def check_window(start: object, end: object) -> tuple[float | None, float | None]:
    """(start, end) as floats (None kept): finite, start >= 0, start < end.

    Raises:
        TypeError: not a number (a bool, a string).
        ValueError: a value that is not finite, negative, or an empty window.
    """
    out: list[float | None] = []
    for name, value in (("start", start), ("end", end)):
        if value is None:
            out.append(None)
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"window {name} ({value!r}) must be a number of seconds or None")
        value = float(value)
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"window {name} ({value}) must be finite and >= 0 seconds")
        out.append(value)
    lo, hi = out
    if lo is not None and hi is not None and not lo < hi:
        raise ValueError(f"window [{lo}, {hi}) is empty: start must be < end")
    return lo, hi


def parse_window(start: str, end: str) -> tuple[float | None, float | None]:
    """A window from two text cells (CSV columns), an empty cell meaning None."""
    values: list[float | None] = []
    for name, text in (("start", start), ("end", end)):
        text = text.strip()
        if not text:
            values.append(None)
            continue
        try:
            values.append(float(text))
        except ValueError:
            raise ValueError(f"window {name} ({text!r}) is not a number of seconds") from None
    return check_window(*values)


def window_frames(
    timestamps: np.ndarray, start: float | None, end: float | None
) -> tuple[int, int]:
    """(first, count): the frames of a video whose time from its first frame lies in
    [start, end), as the index of the first one and their number (0 when none does).

    Args:
        timestamps: float64 (n,) seconds of every frame, increasing (`source.timestamps`).
        start, end: the window in seconds from the first frame; None: open on that side.
    """
    ts = np.asarray(timestamps, np.float64)
    if ts.size == 0:
        return 0, 0
    rel = ts - ts[0]
    first = 0 if start is None else int(np.searchsorted(rel, start - _TIE_S, side="left"))
    stop = ts.size if end is None else int(np.searchsorted(rel, end - _TIE_S, side="left"))
    return first, max(0, stop - first)


def describe(start: float | None, end: float | None) -> str:
    """`[12.5, 17.0) s` for messages."""
    lo = "0" if start is None else f"{start:g}"
    hi = "end" if end is None else f"{end:g}"
    return f"[{lo}, {hi}) s"
