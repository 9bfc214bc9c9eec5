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
from collections.abc import Callable, Sequence
from typing import TypeVar

import torch

from vidload.errors import FrameCountError, VideoReadError
from vidload.manifest import VideoEntry
from vidload.sources.base import FrameSource

T = TypeVar("T")

#: Where a count came from, when the source reported it (`known` treats it apart).
_REPORTED = "reported by the source"
_UNKNOWN = -1


class FrameCountWarning(UserWarning):
    """A video has fewer frames than the count its clips were sampled from (warned once)."""


class SharedCounts:
    """Learned frame counts and broken flags of a video list's entries, shared by processes.

    One slot per (video, offset): a rawframes list may cut several videos from one folder, and
    a video listed twice shares its slot. Methods take the entry's position `v` in the list and
    the source to ask (a read-ahead thread passes its own copy: sources are not thread-safe).
    """

    def __init__(self, entries: Sequence[VideoEntry]) -> None:
        keys = sorted({(e.video_id, e.offset) for e in entries})
        slot_of = {key: k for k, key in enumerate(keys)}
        self._keys = keys  # (video_id, offset) of each slot
        self._ids = [vid for vid, _ in keys]
        self._slot = [slot_of[(e.video_id, e.offset)] for e in entries]
        self._learned = torch.full((len(keys),), _UNKNOWN, dtype=torch.int64).share_memory_()
        self._broken = torch.zeros(len(keys), dtype=torch.bool).share_memory_()

    def learned_frames(self) -> dict[str, int]:
        """Frame counts learned from reads so far, by video id, in any process."""
        learned = self._learned.tolist()
        return {vid: int(n) for vid, n in zip(self._ids, learned, strict=True) if n >= 0}

    def broken_videos(self) -> list[str]:
        """Videos found broken so far, in any process."""
        return [vid for vid, bad in zip(self._ids, self._broken.tolist(), strict=True) if bad]

    def state(self) -> dict[str, list]:
        """What was learned, as plain lists (for torch.save): `learned` `[video_id, offset,
        frames]` and `broken` `[video_id, offset]`, each slot once."""
        learned, broken = self._learned.tolist(), self._broken.tolist()
        pairs = list(zip(self._keys, learned, broken, strict=True))
        return {
            "learned": [[vid, off, n] for (vid, off), n, _ in pairs if n >= 0],
            "broken": [[vid, off] for (vid, off), _, bad in pairs if bad],
        }

    def load_state(self, state: dict[str, list]) -> None:
        """Publish what `state()` saved (to every worker: the arrays are shared).

        Raises:
            ValueError: the state names a video (and offset) this list does not hold, or a
                count below 1.
        """
        slot_of = {key: k for k, key in enumerate(self._keys)}

        def slot(vid: object, offset: object) -> int:
            key = (vid, offset)
            if key not in slot_of:
                raise ValueError(
                    f"ClipDataset state names video {vid!r} (offset {offset}), which is not in "
                    f"this dataset's video list: a state from another list?"
                )
            return slot_of[key]

        for vid, offset, frames in state.get("learned", []):
            if not isinstance(frames, int) or frames < 1:
                raise ValueError(f"ClipDataset state: {vid!r} has {frames!r} frames (must be >= 1)")
            self._learned[slot(vid, offset)] = frames
        for vid, offset in state.get("broken", []):
            self._broken[slot(vid, offset)] = True

    def is_broken(self, v: int) -> bool:
        return bool(self._broken[self._slot[v]])

    def mark_broken(self, v: int) -> None:
        self._broken[self._slot[v]] = True

    def _without_decoding(
        self, source: FrameSource, entry: VideoEntry, v: int
    ) -> tuple[int, str] | None:
        """(count, where it came from) from what is known without decoding, frames from the
        entry's start: learned, else listed, else reported by the source; None if none is."""
        learned = int(self._learned[self._slot[v]])
        if learned != _UNKNOWN:
            return learned, "learned from an earlier read"
        if entry.known_frames is not None:
            return entry.known_frames, "from the video list"
        reported = source.reported_frames(entry.video_id)
        if reported:
            return reported - entry.offset, _REPORTED
        return None

    def best(self, source: FrameSource, entry: VideoEntry, v: int) -> tuple[int, str]:
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

    def known(self, source: FrameSource, entry: VideoEntry, v: int) -> int:
        """The count `best` gives, without decoding (for planning reads).

        Raises:
            LookupError: no learned, listed or reported count (or a reported one that leaves
                no frame after the entry's offset).
        """
        found = self._without_decoding(source, entry, v)
        if found is None or (found[1] == _REPORTED and found[0] <= 0):
            raise LookupError(f"{entry.video_id}: frame count unknown without decoding")
        return found[0]

    def learn(self, v: int, actual: int, warn: str | None) -> None:
        """Publish `actual` to every worker; warn (`warn` starts the message) unless some
        process already learned it."""
        if actual <= 0:
            raise VideoReadError(self._ids[self._slot[v]], "no frames decode")
        slot = self._slot[v]
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
        source: FrameSource,
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
            actual -= entry.offset  # frames from the entry's start
            if strict:
                raise FrameCountError(
                    vid,
                    count,
                    actual,
                    e.index,
                    message=f"{vid}: clip sampled from {count} frames ({origin}) but only "
                    f"{actual} frames exist (on_mismatch='error')",
                ) from e
            if actual >= count:
                raise FrameCountError(
                    vid,
                    count,
                    actual,
                    e.index,
                    message=f"{vid}: {type(source).__name__} raised FrameCountError for "
                    f"frame {e.index} although it says {actual} frames exist",
                ) from e
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
