"""One video's conversion, as a worker runs it: decode (or read), encode, write its container
atomically with its timestamps beside it, and return its manifest row; or, for a container
that exists without a manifest row (a run killed before writing it), validate it instead.

A `Job` is picklable and self-contained, so it runs in any process (`vidload.shards`). Failures
become a failed row, never an exception, except a full disk (DiskFullError), which is no
video's fault and stops the run.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from vidload._atomic import is_disk_full
from vidload._convert.frames import (
    ByteCounter,
    decoded_jpeg_folder,
    encoded_frames,
    jpeg_folder_bytes,
)
from vidload._convert.inputs import InputItem
from vidload._convert.options import ConvertOptions
from vidload._convert.video import write_video
from vidload._kinds import get_kind
from vidload._layout import FIRST_FRAME_NAME, index_path, sidecar_path
from vidload._storage import Location
from vidload.errors import DiskFullError, VideoReadError, VidloadError
from vidload.manifest import ManifestRow
from vidload.sources._timestamps import write_timestamps
from vidload.sources.jpeg import JpegSource
from vidload.sources.jpeg_decode import jpeg_size
from vidload.sources.video import VideoSource

__all__ = ["Job", "Outcome", "convert_job", "count_status", "failure_reason", "path_bytes"]


@dataclass(frozen=True)
class Job:
    """What a worker needs to convert (or verify) one video; picklable.

    Attributes:
        item: the input; `root` the folder its id is relative to.
        container: where its container goes (`vidload._layout.output_container_path`).
        options: what to store.
        threads: decoding threads.
        verify: the container exists without a manifest row: validate it, else convert.
        source: an INPUT URL the item's path is relative to (`vidload._convert.remote`): the
            shard downloads the item into its staging folder first. None for a local INPUT.
    """

    item: InputItem
    root: Path
    container: Path
    options: ConvertOptions
    threads: int
    verify: bool
    source: Location | None = None


@dataclass(frozen=True)
class Outcome:
    """What became of one job: its manifest row, and this run's bytes read and frames stored."""

    row: ManifestRow
    action: Literal["converted", "skipped", "failed"]
    bytes_in: int = 0
    frames: int = 0


def path_bytes(path: Path) -> int:
    """Size of a file, or of the files in a folder (not recursive)."""
    if path.is_dir():
        return sum(e.stat().st_size for e in os.scandir(path) if e.is_file())
    return path.stat().st_size


def failure_reason(e: BaseException, item: InputItem) -> str:
    """A short reason for the manifest: the error without the item's own path, except for a
    missing file, whose message names the path tried and how to change the root."""
    if isinstance(e, VideoReadError) and e.path == str(item.path):
        if isinstance(e.__cause__, FileNotFoundError) or not item.path.exists():
            return (
                f"file not found: {item.path} (annotation list entries are relative to the "
                f"list's folder unless --root DIR is given)"
            )
        where = f" (frame {e.index})" if e.index is not None else ""
        return f"{e.reason}{where}"
    return str(e) or type(e).__name__


def count_status(reported: int | None, actual: int) -> Literal["ok", "mismatch"]:
    return "mismatch" if reported is not None and reported != actual else "ok"


def _input_header(job: Job) -> tuple[int | None, float | None]:
    """(reported frames, fps) of the input, without decoding."""
    item = job.item
    if item.kind == "video":
        info = VideoSource(job.root, threads=1, cache_size=0).info(item.video_id)
        return info.reported_frames, info.fps
    if item.listed_frames is not None:
        return item.listed_frames, None
    return JpegSource(item.path.parent).reported_frames(item.path.name), None


class NoFrames(VideoReadError):
    """The input opened but not one frame decodes."""


def convert_job(job: Job) -> Outcome:
    """Convert one video (or accept its existing container); failures become a failed row."""
    item = job.item
    reported: int | None = None
    fps: float | None = None
    try:
        reported, fps = _input_header(job)
        if job.verify:
            try:
                return _verified(job, reported, fps)
            except VidloadError as e:
                # vidload renames a container into place only once it is complete, so what
                # fails here was not written by this conversion (or was damaged since): it may
                # be the user's data (a list converted into its own root), so it is never
                # replaced without --overwrite
                raise VideoReadError(
                    job.container,
                    f"already exists and is not a valid {job.options.to} container ({e}); "
                    "vidload replaces only its own containers: move it away, or pass "
                    "--overwrite (overwrite=True) to replace it",
                ) from e
        return _convert_video(job, reported, fps)
    except (VidloadError, OSError) as e:
        if is_disk_full(e):  # not this video's fault: the run must stop (vidload.shards)
            raise DiskFullError(job.container) from e
        row = ManifestRow(
            item.video_id,
            item.label,
            reported_frames=reported,
            actual_frames=0 if isinstance(e, NoFrames) else None,
            fps=fps,
            status="failed",
            error=failure_reason(e, item),
            extra=item.extra,
        )
        return Outcome(row, "failed")


def _convert_video(job: Job, reported: int | None, fps: float | None) -> Outcome:
    """Decode (or read), encode and write one video's container."""
    item, options = job.item, job.options
    if options.to == "video":
        return _convert_to_video(job, reported, fps)
    if item.kind == "video":
        src = VideoSource(job.root, threads=job.threads, cache_size=0)
        frames = src.iter_frames(item.video_id)
        encoded = encoded_frames(
            item.path, frames, options.short_side, options.quality, options.subsampling
        )
        raw = None
    else:
        raw = ByteCounter(jpeg_folder_bytes(item))
        encoded = iter(raw)
        if options.short_side is not None:
            decoded = decoded_jpeg_folder(item.path, raw)
            encoded = encoded_frames(
                item.path, decoded, options.short_side, options.quality, options.subsampling
            )

    first = next(encoded, None)
    if first is None:
        what = (
            f"no frame files ({FIRST_FRAME_NAME}, ...)" if raw is not None else "no frame decodes"
        )
        raise NoFrames(item.path, what)
    data = itertools.chain([first], encoded)  # streamed: the writers spill frames to disk
    encoded_here = item.kind == "video" or options.short_side is not None
    attrs = {  # kept by the formats that keep attributes (`StorageKind.keeps_attrs`)
        "fps": fps,
        "reported_frames": reported,
        "source": item.video_id,
        "quality": options.quality if encoded_here else None,
        "subsampling": options.subsampling if encoded_here else None,
        "short_side": options.short_side,
    }
    count = get_kind(options.to).write(job.container, data, attrs)
    _store_timestamps(job, src if item.kind == "video" else None, count)
    height, width = jpeg_size(first, path=str(job.container), index=0)
    bytes_in = path_bytes(item.path) if raw is None else raw.bytes
    row = _stored_row(job, reported, count, (height, width), fps)
    return Outcome(row, "converted", bytes_in, count)


def _convert_to_video(job: Job, reported: int | None, fps: float | None) -> Outcome:
    """Re-encode one video for random access (`vidload._convert.video`), at the source's
    timestamps; the converted file must decode exactly the source's actual frames."""
    item = job.item
    if item.kind != "video":
        raise VideoReadError(
            item.path, "a JPEG frame folder has no timestamps to keep: --to video takes videos"
        )
    src = VideoSource(job.root, threads=job.threads, cache_size=0)
    try:
        guessed = src.timestamps(item.video_id)  # a packet scan where the container stores pts
        count, size, _ = write_video(
            job.container,
            src.iter_frames(item.video_id),
            guessed,
            src.info(item.video_id).time_base,
            fps,
            job.options,
            source=item.path,
            exact_timestamps=lambda: src.timestamps(item.video_id),  # after the full decode
        )
    except VideoReadError as e:
        if "no frame" in (e.reason or "") and "decodes" in (e.reason or ""):
            raise NoFrames(item.path, "no frame decodes") from e
        raise
    row = _stored_row(job, reported, count, size, fps)
    return Outcome(row, "converted", path_bytes(item.path), count)


def _store_timestamps(job: Job, src: VideoSource | None, count: int) -> None:
    """Write the stored frames' timestamps beside the container (`sources._timestamps`): a
    video's presentation times (`VideoSource.timestamps`); a JPEG folder input has none, and
    any stale file is removed (its source then uses a frame rate)."""
    if src is None:
        sidecar_path(job.container).unlink(missing_ok=True)
        return
    ts = src.timestamps(job.item.video_id)
    if ts.shape[0] != count:  # the packets promised more than decoded: count them, exactly
        src.actual_frames(job.item.video_id)
        ts = src.timestamps(job.item.video_id)
    if ts.shape[0] != count:
        raise VideoReadError(job.item.path, f"{ts.shape[0]} timestamps for {count} frames stored")
    write_timestamps(job.container, ts)


def _verified(job: Job, reported: int | None, fps: float | None) -> Outcome:
    """The row of an existing, valid container (a run killed before writing its manifest)."""
    kind = get_kind(job.options.to)
    if not kind.holds_jpeg:
        return _verified_video(job, reported, fps)
    name = job.container.name[: len(job.container.name) - len(kind.suffix)]  # the id
    src = kind.open(job.container.parent, **kind.open_options)
    actual = src.actual_frames(name)
    if actual == 0:
        raise VideoReadError(job.container, "holds no frames")
    _, height, width, _ = src.read(name, [0, actual - 1]).shape
    if job.item.kind == "video" and not sidecar_path(job.container).exists():
        _store_timestamps(job, VideoSource(job.root, cache_size=0), actual)
    return Outcome(_stored_row(job, reported, actual, (height, width), fps), "skipped")


def _verified_video(job: Job, reported: int | None, fps: float | None) -> Outcome:
    """The row of an existing converted video: decoded in full, its index written if missing."""
    src = VideoSource(job.container.parent, cache_size=0, rotation="ignore")
    name = job.container.name
    actual = src.actual_frames(name)
    _, height, width, _ = src.read(name, [0, actual - 1]).shape
    if not index_path(job.container).exists():
        src.write_index(name)
    return Outcome(_stored_row(job, reported, actual, (height, width), fps), "skipped")


def _stored_row(
    job: Job, reported: int | None, actual: int, size: tuple[int, int], fps: float | None
) -> ManifestRow:
    """The manifest row of `job`'s written container: `actual` frames of (height, width).
    A video's `rotation` is the display orientation `VideoSource` applied to the frames."""
    height, width = size
    rotation = None
    if job.item.kind == "video":  # one more decoded frame: PyAV shows the matrix on frames only
        rotation = str(VideoSource(job.root, cache_size=0).orientation(job.item.video_id))
    return ManifestRow(
        job.item.video_id,
        job.item.label,
        reported_frames=reported,
        actual_frames=actual,
        width=width,
        height=height,
        fps=fps,
        bytes=path_bytes(job.container),
        status=count_status(reported, actual),
        rotation=rotation,
        extra=job.item.extra,
    )
