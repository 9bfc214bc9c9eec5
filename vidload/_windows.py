"""Windows of long videos: an entry that is seconds [start, end) of its file.

Untrimmed datasets (EPIC-KITCHENS-100, Charades, ActivityNet, AVA) label stretches of long
videos. A window is given in seconds from the video's first frame (whose timestamp counts as 0,
whatever the container's start time: a stream starting at pts 1.4 s has its first frame at 0), so
that one list serves the original files and every converted container (which store the
originals' timestamps). The window is the run of frames whose time lies in [start, end); the
dataset samples inside it with its own frame count, exactly as it samples a whole video.

A list's window columns are `start` and `end`, both or neither (`check_window_columns`). An
open side is asked for explicitly: both columns present and that row's cell left empty (a JSON
list: both keys, that one `null`; a tuple: None). The columns other window datasets use for
something else (EPIC-KITCHENS' `stop`, `start_timestamp`, `start_frame`, ...; Charades'
`actions`) are refused naming the reader that reads them: read as extra columns they once made
`video_id,label,start,stop` the window [start, end of video) and `start_frame,stop_frame` whole
videos, without a word (issue 31).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from vidload.sampling import TIE_S

_EPIC = "vidload.datasets.epic_kitchens(CSV)"
_SECONDS = "give each window as `start`,`end` in seconds from the video's first frame"
#: Columns other datasets use for a window, never read as one: {column: what to do instead}.
FOREIGN_WINDOW_COLUMNS: dict[str, str] = {
    "stop": f"EPIC-KITCHENS calls a window's end `stop`: rename it to `end` if it holds seconds; "
    f"an EPIC-KITCHENS-100 annotation CSV is read by {_EPIC}",
    **{
        name: f"It holds EPIC-KITCHENS-100's `HH:MM:SS.ff` times: read its annotation CSV with "
        f"{_EPIC}; for another list, {_SECONDS}"
        for name in ("start_timestamp", "stop_timestamp", "narration_timestamp")
    },
    **{
        name: f"It holds EPIC-KITCHENS-100's 1-based frame numbers: read its annotation CSV "
        f"with vidload.datasets.epic_kitchens(CSV, window='frames'); for another list, {_SECONDS}"
        for name in ("start_frame", "stop_frame", "end_frame")
    },
    "actions": "It holds Charades' action windows (`c092 11.90 21.20;...`): read its CSV with "
    "vidload.datasets.charades(CSV)",
    **{
        name: f"Rename it to `{'start' if name.startswith('start') else 'end'}` if it holds "
        f"seconds from the video's first frame"
        for name in ("start_time", "end_time", "stop_time")
    },
}


def check_window_columns(columns: Iterable[str], where: str) -> None:
    """Refuse a list's columns (a CSV header, a JSON entry's keys) unless its window columns
    are `start` and `end`, both or neither, and none is another dataset's (see the module doc).

    Raises:
        ValueError: naming `where` (the file), the column and the reader or rename to use.
    """
    names = {str(c).strip() for c in columns}
    for name, instead in FOREIGN_WINDOW_COLUMNS.items():
        if name in names:
            raise ValueError(
                f"{where}: column {name!r} is not read as a window: a list's window columns are "
                f"`start` and `end` (seconds from the video's first frame). {instead}"
            )
    half = ({"start", "end"} & names) and not {"start", "end"} <= names
    if half:
        given, lacking = ("start", "end") if "start" in names else ("end", "start")
        raise ValueError(
            f"{where}: column {given!r} without {lacking!r}: a window list has both `start` and "
            f"`end` (seconds from the video's first frame); leave a cell empty for a window "
            f"open on that side"
        )


def check_window(start: object, end: object) -> tuple[float | None, float | None]:
    """(start, end) as floats (None kept): finite, start >= 0, start < end.

    Raises:
        TypeError: not a number (a bool, a string).
        ValueError: a value that is not finite, negative, or an empty window.
    """
    lo, hi = _seconds("start", start), _seconds("end", end)
    if lo is not None and hi is not None and not lo < hi:
        raise ValueError(f"window [{lo}, {hi}) is empty: start must be < end")
    return lo, hi


def _seconds(name: str, value: object) -> float | None:
    """One side of a window as a float (None kept), checked as `check_window` says."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"window {name} ({value!r}) must be a number of seconds or None")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"window {name} ({seconds}) must be finite and >= 0 seconds")
    return seconds


def parse_window(start: str, end: str) -> tuple[float | None, float | None]:
    """A window from two text cells (CSV columns), an empty cell meaning None."""
    return check_window(parse_number("window start", start), parse_number("window end", end))


def parse_number(name: str, text: str) -> float | None:
    """The float a CSV cell spells (a window's side, a manifest's fps), None for an empty
    cell; ValueError naming `name` otherwise."""
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{name} ({text!r}) is not a number") from None


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
    first = 0 if start is None else int(np.searchsorted(rel, start - TIE_S, side="left"))
    stop = ts.size if end is None else int(np.searchsorted(rel, end - TIE_S, side="left"))
    return first, max(0, stop - first)


def describe(start: float | None, end: float | None) -> str:
    """`[12.5, 17.0) s` for messages."""
    lo = "0" if start is None else f"{start:g}"
    hi = "end" if end is None else f"{end:g}"
    return f"[{lo}, {hi}) s"
