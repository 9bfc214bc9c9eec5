"""An open video file: the PyAV container, the chosen video stream, what its header says.

Open files and forks. A decoder opened with threads (`threads` 0 or > 1) must never be freed in
a forked child: its worker threads exist only in the parent, and `avcodec_free_context` in the
child waits forever for them (`pthread_cond_destroy`): a DataLoader worker would hang. Two
rules keep every decoder freed in the process that opened it:

* In the opening process a file is closed explicitly (`VideoHandle.close`) whenever it is dropped:
  evicted from the cache, replaced, closed by `VideoSource.close`, or left behind by a source
  that is garbage collected (`VideoHandle.__del__`). An unclosed PyAV container is cyclic garbage
  (container <-> stream) that only the garbage collector frees, perhaps in a child forked later;
  a closed one is freed at once, its threads joined, before any fork.
* In any other process (a fork child) a handle inherited from the parent is never freed nor
  used: dropping it moves it to `VideoHandle.inherited`, a list never cleared. This is a
  deliberate, bounded leak: at most `cache_size` handles per source (memory and file
  descriptors of the child, no I/O). The child opens files of its own.

Handles are not closed before a fork (`os.register_at_fork`): another thread may be reading
through them. Frames are converted to RGB on one thread (`_video_seek.converter`), so no
swscale threads outlive a conversion either.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar

import av
import av.error

from vidload._storage.location import Location
from vidload.errors import VideoReadError

__all__ = ["VideoHandle", "VideoInfo", "ffmpeg_words", "open_video", "video_info"]

#: Containers that store each packet's pts. Elsewhere (AVI, elementary streams) pts are
#: guessed, frames may come out of the decoder in another order than the guessed pts (packed
#: B-frames, open GOPs), and only an index from a full decode is trusted.
PTS_CONTAINERS = frozenset({"mov", "matroska", "mpegts"})
#: Decoders that honour skip_frame=NONREF frame by frame (libdav1d reads it once, at open).
SKIP_NONREF_CODECS = frozenset({"h264", "hevc", "vp8", "vp9", "mpeg4", "mpeg1video", "mpeg2video"})


@dataclass(frozen=True)
class VideoInfo:
    """What a video's header says about the chosen stream (nothing is decoded).

    Attributes:
        reported_frames: frame count from the header (see `VideoSource.reported_frames`).
        fps: average frame rate, None when the header has none.
        width, height: coded frame size in pixels.
        codec: decoder name, e.g. "h264".
        stream_index: index of the chosen stream among the file's video streams.
        duration_s: stream (else container) duration in seconds, None when unknown.
        time_base: the stream's time base (seconds per pts tick), None when it has none.
    """

    reported_frames: int | None
    fps: float | None
    width: int
    height: int
    codec: str
    stream_index: int
    duration_s: float | None
    time_base: Fraction | None = None


@dataclass(eq=False)
class VideoHandle:
    """One open file: the container, the chosen stream and the file's (mtime, size).

    Closed in the process that opened it (`pid`), kept forever in any other (see the module
    docstring): `close` runs however the handle is dropped, garbage collection included.
    `stores_pts` and `can_skip_nonref` say what the stream allows a reader to assume.
    """

    container: av.container.InputContainer
    stream: av.VideoStream
    stat: tuple[int, int]
    at_start: bool = True  # nothing demuxed yet
    explode: bool = True  # opened with err_detect=explode (see `open_video`)
    pid: int = field(default_factory=os.getpid)
    closed: bool = False

    #: Handles inherited through a fork and dropped in the child: never freed (a decoder with
    #: threads cannot be freed outside the process that opened it).
    inherited: ClassVar[list[VideoHandle]] = []
    # bound here so that __del__ still finds them while the interpreter shuts down
    _getpid: ClassVar = staticmethod(os.getpid)

    @property
    def stores_pts(self) -> bool:
        """Whether the container stores real pts, so that a packet scan may stand in for a
        full decode (frame i = the packet with the i-th smallest pts)."""
        return self.container.format.name.split(",")[0] in PTS_CONTAINERS

    @property
    def can_skip_nonref(self) -> bool:
        return self.stream.codec_context.name in SKIP_NONREF_CODECS

    def close(self) -> None:
        """Close the file (its decoder threads are joined); in a process other than the one
        that opened it, keep it in `VideoHandle.inherited` instead, untouched."""
        if self.closed:
            return
        self.closed = True
        if self._getpid() == self.pid:
            self.container.close()  # breaks the container <-> stream cycle: freed right away
        else:
            self.inherited.append(self)

    def __del__(self) -> None:
        self.close()


#: What FFmpeg's errors mean for a file, in words: its own text (`[Errno 1094995529] Invalid
#: data found when processing input`) names an error number and neither the cause nor the fix.
_MEANING: dict[type, tuple[str, str]] = {
    # (where the file is opened, where it is decoded)
    av.error.InvalidDataError: (
        "truncated or not a video file",
        "the data is damaged or the file truncated",
    ),
    av.error.EOFError: ("truncated or not a video file", "the file ends early (truncated)"),
    av.error.DecoderNotFoundError: ("no decoder for its codec", "no decoder for its codec"),
    av.error.DemuxerNotFoundError: ("not a video file", "not a video file"),
}


def ffmpeg_words(e: av.error.FFmpegError, *, opening: bool = False) -> str:
    """`e` for a VideoReadError's reason: what it means for the file (where known), then
    FFmpeg's own words and the file it names, without the error number: "truncated or not a
    video file (FFmpeg: Invalid data found when processing input: 'x.mp4')" (a manifest's
    error column, which leaves out the error's path, names the file through it)."""
    said = getattr(e, "strerror", None) or str(e)
    if getattr(e, "filename", None) and str(e.filename) not in said:
        said = f"{said}: {str(e.filename)!r}"
    for kind, (at_open, at_decode) in _MEANING.items():
        if isinstance(e, kind):
            return f"{at_open if opening else at_decode} (FFmpeg: {said})"
    return f"FFmpeg: {said}"


def open_video(
    path: Location,
    stat: tuple[int, int],
    *,
    stream: int | None,
    threads: int,
    explode: bool,
    file: io.RawIOBase | None = None,
) -> VideoHandle:
    """Open `path` and pick its video stream (`stream`: an index among the file's video
    streams, None for FFmpeg's best); errors become VideoReadError naming the file.

    `stat` is the file's (st_mtime_ns, st_size), kept to notice a changed file; `threads` are
    the decoder's (0: FFmpeg chooses); `explode` makes every decode error stop decoding
    (FFmpeg's err_detect=explode) instead of being concealed. With `file` (a video at a URL:
    `_video_remote.RangeReader`), FFmpeg reads that file object, and `path` names it in errors.
    """
    try:
        container = av.open(str(path) if file is None else file, "r")
    except av.error.FFmpegError as e:
        if stat[1] == 0:
            reason = "empty file (0 bytes)"
        else:
            reason = f"not a readable video: {ffmpeg_words(e, opening=True)}"
        raise VideoReadError(path, reason) from e
    except OSError as e:
        raise VideoReadError(path, f"cannot open file: {e}") from e
    try:
        chosen = _choose_stream(path, container, stream)
        ctx = chosen.codec_context
        if ctx is None:
            raise VideoReadError(path, f"no decoder for video codec of stream {chosen.index}")
        ctx.thread_count = threads
        if threads != 1:
            ctx.thread_type = "AUTO"
        if explode:
            ctx.options = {**ctx.options, "err_detect": "explode"}
    except BaseException:
        container.close()
        raise
    return VideoHandle(container, chosen, stat, explode=explode)


def _choose_stream(path: Location, container, stream: int | None) -> av.VideoStream:
    videos = list(container.streams.video)
    if not videos and not container.streams.audio:  # e.g. an MP4 cut inside its header (moov)
        reason = "no video stream (truncated or not a video file)"
        raise VideoReadError(path, f"not a readable video: {reason}")
    if not videos:
        raise VideoReadError(path, "no video stream")
    if stream is None:
        try:
            return container.streams.best("video") or videos[0]
        except av.error.FFmpegError:
            return videos[0]
    if stream >= len(videos):
        raise VideoReadError(
            path, f"video stream {stream} requested but the file has {len(videos)}"
        )
    return videos[stream]


def video_info(handle: VideoHandle) -> VideoInfo:
    """What the header of `handle`'s file says about its chosen stream (nothing decoded)."""
    stream = handle.stream
    ctx = stream.codec_context
    rate = stream.average_rate or stream.guessed_rate
    fps = float(rate) if rate else None
    duration_s: float | None = None
    if stream.duration is not None and stream.time_base is not None:
        duration_s = float(stream.duration * stream.time_base)
    elif handle.container.duration is not None:
        duration_s = handle.container.duration / av.time_base
    reported: int | None = stream.frames or None
    if reported is None and duration_s is not None and fps:
        reported = int(round(duration_s * fps)) or None
    videos = list(handle.container.streams.video)
    return VideoInfo(
        reported_frames=reported,
        fps=fps,
        width=ctx.width,
        height=ctx.height,
        codec=ctx.name,
        stream_index=videos.index(stream),
        duration_s=duration_s,
        time_base=Fraction(stream.time_base) if stream.time_base is not None else None,
    )
