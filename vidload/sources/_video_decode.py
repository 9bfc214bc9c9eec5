"""A video's sequential decode: every frame of the chosen stream that a single-threaded decode
gives, up to where the data goes bad (what `VideoSource.iter_frames` yields, what
`actual_frames` counts and what an exact frame index records).

Damaged files. The frames of a video are those a single-threaded sequential decode gives, up
to where it stops: the decoder's own error concealment included, stopping at a corrupt packet,
a demux error or a decode error. `read`, `iter_frames` and `actual_frames` all give these frames,
whatever `threads`:

* Seek-and-decode reads run the decoder with `err_detect=explode`, so that any error (also one
  the decoder would conceal) stops them (where a persisted index has each frame's digest, the
  digests check every frame returned instead: `_video_digest`); a read that meets one marks
  the file damaged, and every read of it from then on is a single-threaded sequential decode
  (no seeking, no skipped frames: concealment depends on the frames decoded before). Without
  an error the two modes give the same pixels.
* A sequential decode with threads (`threads` 0 or > 1) also runs with `err_detect=explode`:
  threaded decoders stop at a different frame than a single-threaded one (frames in flight,
  errors reported late). At an error it carries on from a single-threaded decode of the file,
  so the frames and the count are those of the single-threaded decode (`decode_all`).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any, Protocol

import av
import av.error

from vidload.errors import VideoReadError
from vidload.sources._video_file import VideoHandle, ffmpeg_words
from vidload.sources._video_index import IndexRecorder, decode_packets

__all__ = ["Fresh", "decode_all"]


class Fresh(Protocol):
    """Opens a handle of its own on the video, positioned at its start (`VideoSource._fresh`)."""

    def __call__(self, *, threads: int | None = None, explode: bool) -> VideoHandle: ...


def decode_all(
    fresh: Fresh, where: object, threads: int, recorder: IndexRecorder | None = None
) -> Iterator[av.VideoFrame]:
    """Every frame of the chosen stream that a single-threaded sequential decode gives, from
    freshly opened files (`fresh`; `where` names the file in errors), in output order (see the
    module docstring); `recorder` sees every packet decoded and every frame. A recorder of
    digests (`IndexRecorder(digests=True)`) is given a single-threaded decode: the digests are
    those of the frames a seek read must match."""
    yielded = 0
    if threads != 1 and (recorder is None or recorder.digests is None):
        fast = IndexRecorder()  # sees every frame yielded
        went_bad = yield from _decode_file(fresh, where, threads, fast, on_error="stop")
        yielded = len(fast.keys)
        if not went_bad:
            if recorder is not None:
                recorder.packets, recorder.keys = fast.packets, fast.keys
            return
    frames = _decode_file(fresh, where, 1, recorder, on_error="flush")
    try:
        for pos, frame in enumerate(frames):
            if pos >= yielded:
                yield frame
    finally:
        frames.close()
    if recorder is not None and len(recorder.keys) < yielded:
        raise VideoReadError(
            where,
            f"a {threads}-thread decode gave {yielded} frames before it met bad data, "
            f"a single-threaded one only {len(recorder.keys)}",
        )


def _decode_file(
    fresh: Fresh, where: object, threads: int, recorder: IndexRecorder | None, on_error: Any
) -> Generator[av.VideoFrame, None, bool]:
    """decode_packets on a fresh handle with `threads` (explode unless single-threaded);
    returns whether the data went bad."""
    handle = fresh(threads=threads, explode=threads != 1)
    try:
        on_packet = recorder.on_packet if recorder is not None else None
        packets = handle.container.demux(handle.stream)
        ctx = handle.stream.codec_context
        frames = decode_packets(ctx, packets, on_packet, on_error=on_error)
        try:
            while True:
                try:
                    frame = next(frames)
                except StopIteration as stop:
                    return stop.value
                if recorder is not None:
                    recorder.on_frame(frame)
                yield frame
        finally:
            frames.close()
    except av.error.FFmpegError as e:
        raise VideoReadError(where, f"decoding failed: {ffmpeg_words(e)}") from e
    finally:
        handle.close()
