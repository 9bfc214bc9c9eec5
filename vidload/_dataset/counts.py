"""ClipDataset's frame counts: which count to sample from, and what a short read teaches.

Containers lie about their frame counts (the "Broken videos and frame counts" guide,
docs/guides/broken-videos.md). A clip is sampled from the best count known: one learned from an
earlier read, else the video list's, else the source's `reported_frames` (cheap, may be wrong),
else `actual_frames` (decodes). When a read shows fewer frames, the real count is learned, the clip
resampled inside it, and a `FrameCountWarning` given once per video.

What is learned (the counts, the videos found broken) lives in shared-memory tensors created in
the main process, so a count learned by one DataLoader worker is used by every worker, in this
epoch and later ones, including non-persistent workers re-created each epoch. Two workers that
discover the same video at the same moment may both warn about it; otherwise each video is
warned about once. A shallow copy of the dataset (read-ahead's) shares them too.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import numpy as np
import torch

from vidload._dataset.entries import VideoEntries
from vidload._shared_arrays import SharedArrays
from vidload._windows import describe, window_frames
from vidload.errors import FrameCountError, VideoReadError
from vidload.manifest import VideoEntry
from vidload.sources.base import FrameSourceBase

T = TypeVar("T")

#: Where a count came from, when the source reported it (`known` treats it apart).
_REPORTED = "reported by the source"
_UNKNOWN = -1


class FrameCountWarning(UserWarning):
    """A video has fewer frames than the count its clips were sampled from (warned once)."""


class SharedCounts:
    """Learned frame counts and broken flags of a video list's entries, shared by processes.

    One slot per (video, offset, window): a rawframes list may cut several videos from one
    folder, a list of windows (`VideoEntry.start`/`end`) many stretches from one file, and
    each stretch learns its own count and is found broken on its own; a video listed twice
    shares its slot. A window's first frame and count are found once from the source's
    timestamps (`vidload._windows`) and shared too. Methods take the entry's position `v` in
    the list and the source to ask (a read-ahead thread passes its own copy: sources are not
    thread-safe).

    Per video it holds arrays only (`vidload._dataset.entries`: Python objects per video are copied
    by every worker that reads them): when some slot has several entries, `slot` int64 (n,), each
    entry's slot, and `rep` int64 (slots,), a slot's first entry (whose id, offset and window name
    it); none when every entry is its own slot. Beside them the shared-memory tensors (`learned`,
    `broken`, a window's `first` frame). Slots are numbered in list order; what is reported
    (`state`, `learned_frames`, `broken_videos`) is sorted by slot key, as before.
    """

    def __init__(self, entries: VideoEntries) -> None:
        ids = entries.video_ids()
        offsets, windows = entries.offsets(), entries.windows()
        keys: Sequence[object] = ids  # the common list: no offset, no window
        if offsets is not None or windows is not None:
            n = len(ids)
            offs = [0] * n if offsets is None else offsets.tolist()
            start, end = (np.full(n, np.nan), np.full(n, np.nan)) if windows is None else windows
            starts = np.where(np.isnan(start), -1.0, start).tolist()  # `state_key`'s values
            ends = np.where(np.isnan(end), np.inf, end).tolist()
            keys = list(zip(ids, offs, starts, ends, strict=True))
        slot_of: dict[object, int] = {}
        slot = np.fromiter(
            (slot_of.setdefault(key, len(slot_of)) for key in keys), np.int64, len(keys)
        )
        num_slots = len(slot_of)
        del ids, keys, slot_of
        self._entries = entries
        #: None when every entry is its own slot (no video listed twice): slot v is entry v
        self._index: SharedArrays | None = None
        if num_slots < len(slot):
            rep = np.unique(slot, return_index=True)[1].astype(np.int64)
            self._index = SharedArrays({"slot": slot, "rep": rep})
        self._learned = torch.full((num_slots,), _UNKNOWN, dtype=torch.int64).share_memory_()
        self._broken = torch.zeros(num_slots, dtype=torch.bool).share_memory_()
        # a window's first frame in its video, found from the timestamps (-1: not yet)
        self._first = torch.full((num_slots,), _UNKNOWN, dtype=torch.int64).share_memory_()

    def _slot(self, v: int) -> int:
        return v if self._index is None else int(self._index["slot"][v])

    def _key(self, slot: int) -> tuple[str, int, float, float]:
        """(video_id, offset, start, end) of a slot, the window as `state_key` gives it."""
        entry = self._entries[slot if self._index is None else int(self._index["rep"][slot])]
        return state_key(entry.video_id, entry.offset, (entry.start, entry.end))

    def _sorted(self, slots: np.ndarray) -> list[tuple[tuple[str, int, float, float], int]]:
        """(key, slot) of `slots`, sorted by key (video_id, offset, window)."""
        return sorted((self._key(s), s) for s in slots.tolist())

    def learned_frames(self) -> dict[str, int]:
        """Frame counts learned from reads so far, by video id (a window's: `id [start, end)
        s`), in any process: `state()`'s, named."""
        return {_slot_name(e[0], e[3:]): e[2] for e in self.state()["learned"]}

    def broken_videos(self) -> list[str]:
        """Videos (windows: `id [start, end) s`) found broken so far, in any process:
        `state()`'s, named."""
        return [_slot_name(e[0], e[2:]) for e in self.state()["broken"]]

    def state(self) -> dict[str, list]:
        """What was learned, as plain lists (for torch.save): `learned` `[video_id, offset,
        frames]` and `broken` `[video_id, offset]`, each slot once; a window's slot adds its
        `start, end` (`[video_id, offset, frames, start, end]`, `[video_id, offset, start,
        end]`)."""
        learned = self._learned.numpy()
        found = self._sorted(np.flatnonzero(learned >= 0))
        broken = self._sorted(np.flatnonzero(self._broken.numpy()))
        return {
            "learned": [[*key[:2], int(learned[s]), *_window_of(key)] for key, s in found],
            "broken": [[*key[:2], *_window_of(key)] for key, _ in broken],
        }

    def load_state(self, state: dict[str, list]) -> None:
        """Publish what `state()` saved (to every worker: the arrays are shared).

        Raises:
            ValueError: the state names a video (and offset, window) this list does not
                hold, or a count below 1.
        """
        if not state.get("learned") and not state.get("broken"):
            return
        slot_of = {self._key(k): k for k in range(len(self._learned))}

        def slot(vid: str, offset: int, window: list) -> int:
            key = state_key(vid, offset, window)
            if key not in slot_of:
                where = f" window {describe(*window)}" if window else ""
                raise ValueError(
                    f"ClipDataset state names video {vid!r} (offset {offset}{where}), which is "
                    f"not in this dataset's video list: a state from another list?"
                )
            return slot_of[key]

        for vid, offset, frames, *window in state.get("learned", []):
            if not isinstance(frames, int) or frames < 1:
                raise ValueError(f"ClipDataset state: {vid!r} has {frames!r} frames (must be >= 1)")
            self._learned[slot(vid, offset, window)] = frames
        for vid, offset, *window in state.get("broken", []):
            self._broken[slot(vid, offset, window)] = True

    def offset(self, entry: VideoEntry, v: int) -> int:
        """Where the entry starts in its source's video: its offset, or for a window the
        first frame inside it (found by `best`/`known` first)."""
        if entry.start is None and entry.end is None:
            return entry.offset
        first = int(self._first[self._slot(v)])
        if first == _UNKNOWN:
            raise RuntimeError(f"{entry.video_id}: window not resolved before use")
        return first

    def is_broken(self, v: int) -> bool:
        return bool(self._broken[self._slot(v)])

    def mark_broken(self, v: int) -> None:
        self._broken[self._slot(v)] = True

    def _without_decoding(
        self, source: FrameSourceBase, entry: VideoEntry, v: int, *, resolve: bool = True
    ) -> tuple[int, str] | None:
        """(count, where it came from) from what is known without decoding, frames from the
        entry's start: learned, else listed, else reported by the source; None if none is.
        A window's count is its frames by the source's timestamps (found here once, unless
        `resolve` is False: None then)."""
        slot = self._slot(v)
        if entry.start is not None or entry.end is not None:
            if int(self._first[slot]) == _UNKNOWN:
                if not resolve:
                    return None
                self._resolve_window(source, entry, v)
            return int(self._learned[slot]), f"in the window {describe(entry.start, entry.end)}"
        learned = int(self._learned[slot])
        if learned != _UNKNOWN:
            if entry.known_frames is not None and entry.known_frames < learned:
                # a slot is shared by the entries of one (video, offset): EPIC's frame windows
                # from one start_frame list their own lengths, which a longer one's count must
                # not stretch (issue 31)
                return entry.known_frames, "from the video list"
            return learned, "learned from an earlier read"
        if entry.known_frames is not None:
            return entry.known_frames, "from the video list"
        reported = source.reported_frames(entry.video_id)
        if reported:
            return reported - entry.offset, _REPORTED
        return None

    def _resolve_window(self, source: FrameSourceBase, entry: VideoEntry, v: int) -> None:
        """Find the window's first frame and count from `source.timestamps` and share them.

        Raises:
            VideoReadError: no frame of the video lies in the window.
        """
        vid = entry.video_id
        times = source.timestamps
        assert times is not None, "a window with no timestamps: refused when the dataset is built"
        ts = np.asarray(times(vid), np.float64)
        first, count = window_frames(ts, entry.start, entry.end)
        if count <= 0:
            span = f"{ts[-1] - ts[0]:.3f} s" if ts.size else "no time"
            raise VideoReadError(
                vid,
                f"no frame in the window {describe(entry.start, entry.end)}: its {ts.size} "
                f"frames span {span} from the first one",
            )
        slot = self._slot(v)
        learned = int(self._learned[slot])
        if learned == _UNKNOWN or learned > count:
            self._learned[slot] = count
        self._first[slot] = first

    def best(self, source: FrameSourceBase, entry: VideoEntry, v: int) -> tuple[int, str]:
        """(count, where it came from): the count to sample entry `v` from, frames from the
        entry's start. Counts by decoding when nothing cheaper is known.

        Raises:
            VideoReadError: the best count is 0.
        """
        found = self._without_decoding(source, entry, v)
        if found is None:
            found = source.actual_frames(entry.video_id) - entry.offset, "counted by decoding"
            self.learn(v, found[0], warn=None)
        count, origin = found
        if count <= 0:
            raise VideoReadError(entry.video_id, f"no frames to sample (0 frames {origin})")
        return count, origin

    def known(self, source: FrameSourceBase, entry: VideoEntry, v: int) -> int:
        """The count `best` gives, without decoding (for planning reads).

        Raises:
            LookupError: no learned, listed or reported count (or a reported one that leaves
                no frame after the entry's offset); a window not yet found in its video.
        """
        found = self._without_decoding(source, entry, v, resolve=False)
        if found is None or (found[1] == _REPORTED and found[0] <= 0):
            raise LookupError(f"{entry.video_id}: frame count unknown without decoding")
        return found[0]

    def learn(self, v: int, actual: int, warn: str | None) -> None:
        """Publish `actual` to every worker; warn (`warn` starts the message) unless some
        process already learned it."""
        if actual <= 0:
            key = self._key(self._slot(v))
            raise VideoReadError(_slot_name(key[0], _window_of(key)), "no frames decode")
        slot = self._slot(v)
        if int(self._learned[slot]) == actual:
            return
        self._learned[slot] = actual
        if warn is not None:
            warnings.warn(
                f"{warn} but only {actual} frames decode; sampling within {actual} from now on "
                f"(warned once per video)",
                FrameCountWarning,
                stacklevel=6,  # the caller of ClipDataset.__getitem__
            )

    def read(
        self,
        source: FrameSourceBase,
        entry: VideoEntry,
        v: int,
        read_from: Callable[[int], T],
        *,
        strict: bool,
    ) -> T:
        """`read_from(count)`, a clip sampled from and read within `count` frames, with the best
        known count. On FrameCountError: with `strict` raise it (naming both counts); else learn
        the real count (warning once) and call `read_from` once more with it, from the same
        random stream, so the clip is resampled inside the frames that exist.
        """
        vid = entry.video_id
        count, origin = self.best(source, entry, v)
        try:
            return read_from(count)
        except FrameCountError as e:
            actual = e.actual if e.actual is not None else source.actual_frames(vid)
            actual -= self.offset(entry, v)  # frames from the entry's start
            if strict or actual >= count:
                why = (
                    f"clip sampled from {count} frames ({origin}) but only {actual} frames "
                    f"exist (on_mismatch='error')"
                    if strict
                    else f"{type(source).__name__} raised FrameCountError for frame {e.index} "
                    f"although it says {actual} frames exist"
                )
                raise FrameCountError(vid, count, actual, e.index, message=f"{vid}: {why}") from e
            self.learn(v, actual, warn=f"{vid}: {count} frames {origin},")
        try:
            return read_from(actual)
        except FrameCountError as e:
            raise FrameCountError(
                vid,
                count,
                e.actual,
                e.index,
                message=f"{vid}: frame {e.index} is still out of range after resampling "
                f"within the {actual} frames the source reported: {e}",
            ) from e


def state_key(video_id: str, offset: int, window: Sequence) -> tuple[str, int, float, float]:
    """The sortable key of a slot: (video_id, offset, start, end), a window's open side (or no
    `window`: `[]`) as the widest one, from -1 to infinity."""
    start, end = window if window else (None, None)
    return video_id, offset, (-1.0 if start is None else start), (_INF if end is None else end)


def merge_learned(states: Iterable[dict[str, list] | None]) -> dict[str, list]:
    """One `SharedCounts.state()` holding every entry of `states`, the ranks' states: every
    entry once, broken if any rank found it broken, the smallest count where two ranks learned
    two (both are reads of the same stream; the smaller is the one a read proved). A run
    resumed on another number of ranks deals the items out otherwise, so rank 0's saved state
    must hold what every rank learned (`vidload._loader.stateful`). Sorted by slot key, as one
    dataset's state is."""
    frames: dict[tuple, list] = {}
    broken: dict[tuple, list] = {}
    for state in states:
        for entry in (state or {}).get("learned", []):
            key = state_key(entry[0], entry[1], entry[3:])
            if key not in frames or entry[2] < frames[key][2]:
                frames[key] = list(entry)
        for entry in (state or {}).get("broken", []):
            broken.setdefault(state_key(entry[0], entry[1], entry[2:]), list(entry))
    return {
        "learned": [frames[k] for k in sorted(frames)],
        "broken": [broken[k] for k in sorted(broken)],
    }


_INF = float("inf")


def _window_of(key: tuple[str, int, float, float]) -> list[float | None]:
    """[start, end] of a windowed slot's key (None for an open side); [] without a window."""
    _, _, start, end = key
    if start == -1.0 and end == _INF:
        return []
    return [None if start == -1.0 else start, None if end == _INF else end]


def _slot_name(video_id: str, window: Sequence[float | None]) -> str:
    """How messages and `learned_frames` name a slot: its video id, and its window if any."""
    return video_id if not window else f"{video_id} {describe(*window)}"
