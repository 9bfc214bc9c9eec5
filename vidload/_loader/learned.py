"""What the ranks learned, merged into one state: a loader state that any rank may load.

Each rank's `ClipDataset` learns frame counts from short reads and finds broken videos among the
items it reads, which are its share of the epoch. A run resumed on another number of ranks deals
the items out otherwise, so a rank may meet a video another rank already found broken; rank 0's
saved state must therefore hold what every rank learned. `StatefulLoader.state_dict()` gathers
the ranks' `learned_state()` (`vidload._dist.gather_objects`, a collective) and merges them
here: every entry once, broken if any rank found it broken, the smallest count where two ranks
learned two (both are reads of the same stream; the smaller is the one a read proved).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["merge_learned"]


def merge_learned(states: Iterable[dict[str, list] | None]) -> dict[str, list]:
    """One `ClipDataset.learned_state()` holding every entry of `states` (see the module).

    An entry is `[video_id, offset, frames, *window]` in "learned" and `[video_id, offset,
    *window]` in "broken"; the result is sorted by (video_id, offset, window), as one dataset's
    state is."""
    frames: dict[tuple, list] = {}
    broken: dict[tuple, list] = {}
    for state in states:
        if not state:
            continue
        for entry in state.get("learned", []):
            key = _key(entry[0], entry[1], entry[3:])
            if key not in frames or entry[2] < frames[key][2]:
                frames[key] = list(entry)
        for entry in state.get("broken", []):
            broken.setdefault(_key(entry[0], entry[1], entry[2:]), list(entry))
    return {
        "learned": [frames[k] for k in sorted(frames)],
        "broken": [broken[k] for k in sorted(broken)],
    }


def _key(video_id: str, offset: int, window: list) -> tuple[str, int, float, float]:
    """A sortable key: no window, or an open side, as the widest one."""
    start, end = window if window else (None, None)
    low = -1.0 if start is None else float(start)
    high = float("inf") if end is None else float(end)
    return video_id, offset, low, high
