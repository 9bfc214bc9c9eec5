"""One video's conversion, as a worker runs it: decode (or read), encode, write its container
atomically with its timestamps beside it, and return its manifest row; or, for a container
that exists without a manifest row (a run killed before writing it), validate it instead.

A `Job` is picklable and self-contained, so it runs in any process (`vidload.shards`). Failures
become a failed row, never an exception, except a full disk (DiskFullError), which is no
video's fault and stops the run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from vidload._atomic import is_disk_full
from vidload._convert.frames import InputFrames, NoFrames
from vidload._convert.inputs import InputItem, input_copy
from vidload._convert.options import ConvertOptions
from vidload._kinds import get_kind
from vidload._storage import Location
from vidload.errors import DiskFullError, VideoReadError, VidloadError
from vidload.manifest import ManifestRow
from vidload.sources._format import Written, path_bytes

__all__ = ["Job", "Outcome", "convert_job", "count_status", "failure_reason", "path_bytes"]


@dataclass(frozen=True)
class Job:
    """What a worker needs to convert (or verify) one video; picklable.

    Attributes:
        item: the input; `root` the folder its id is relative to: local, or an INPUT URL's
            (the shard downloads the item into its staging folder first:
            `vidload._convert.inputs.input_copy`).
        output: OUTPUT (a bucket's job is run with its local staging folder instead:
            `vidload._convert.output.run_job`).
        name: its container's name relative to OUTPUT (`vidload._layout.container_name`),
            which its manifest row records.
        options: what to store.
        threads: decoding threads.
        verify: the container exists without a manifest row: validate it, else convert.
    """

    item: InputItem
    root: Location
    output: Location
    name: str
    options: ConvertOptions
    threads: int
    verify: bool

    @property
    def container(self) -> Location:
        return self.output / self.name

    @property
    def path(self) -> Path:
        """The local file or folder its container is written into."""
        local = self.container.local_file()
        assert local is not None, "a bucket's container is staged first"
        return local


@dataclass(frozen=True)
class Outcome:
    """What became of one job: its manifest row, and this run's bytes read and frames stored."""

    row: ManifestRow
    action: Literal["converted", "skipped", "failed"]
    bytes_in: int = 0
    frames: int = 0


def failure_reason(e: BaseException, item: InputItem, local: Path, root: Location) -> str:
    """A short reason for the manifest: the error without the item's own path, except for a
    missing file, whose message names the path tried and how to change the root. `item` was
    read under `local` (`input_copy`): the reason names `root`, where the input is."""
    if isinstance(e, VideoReadError) and e.path == str(item.path):
        if isinstance(e.__cause__, FileNotFoundError) or not item.path.exists():
            reason = (
                f"file not found: {item.path} (annotation list entries are relative to the "
                f"list's folder unless --root DIR is given)"
            )
        else:
            where = f" (frame {e.index})" if e.index is not None else ""
            reason = f"{e.reason}{where}"
    else:
        reason = str(e) or type(e).__name__
    return reason.replace(str(local), str(root))


def count_status(reported: int | None, actual: int) -> Literal["ok", "mismatch"]:
    return "mismatch" if reported is not None and reported != actual else "ok"


def convert_job(job: Job, stage: Path | None) -> Outcome:
    """Convert one video (or accept its existing container); failures become a failed row.
    An INPUT URL's item is read from a copy in `stage` (`input_copy`), its row naming the URL."""
    frames: InputFrames | None = None
    with input_copy(job.item, job.root, stage) as (root, item):
        job = replace(job, item=item)
        try:
            frames = InputFrames(item, root, threads=job.threads, short_side=job.options.short_side)
            if not job.verify:
                return _convert_video(job, frames)
            try:  # the row of an existing, valid container (a run killed before its row)
                written = get_kind(job.options.to).verify(job.path, frames)
                return Outcome(_stored_row(job, frames, written), "skipped")
            except VidloadError as e:
                # vidload renames a container into place only once it is complete, so what
                # fails here was not written by this conversion (or was damaged since): it may
                # be the user's data (a list converted into its own root), so it is never
                # replaced without --overwrite
                raise VideoReadError(
                    job.path,
                    f"already exists and is not a valid {job.options.to} container ({e}); "
                    "vidload replaces only its own containers: move it away, or pass "
                    "--overwrite (overwrite=True) to replace it",
                ) from e
        except (VidloadError, OSError) as e:
            if is_disk_full(e):  # not this video's fault: the run must stop (vidload.shards)
                raise DiskFullError(job.path) from e
            row = ManifestRow(
                item.video_id,
                item.label,
                reported_frames=None if frames is None else frames.reported,
                actual_frames=0 if isinstance(e, NoFrames) else None,
                fps=None if frames is None else frames.fps,
                status="failed",
                error=failure_reason(e, item, root, job.root),
                extra=item.extra,
            )
            return Outcome(row, "failed")


def _convert_video(job: Job, frames: InputFrames) -> Outcome:
    """Decode (or read) the input and write its container: the kind's class writes it
    (`vidload.sources._format.StorageFormat.write`: a JPEG kind encodes frames, `video`
    re-encodes them), from the input's `frames`."""
    written = get_kind(job.options.to).write(job.path, frames, job.options.format_options())
    return Outcome(_stored_row(job, frames, written), "converted", frames.bytes_read, written.count)


def _stored_row(job: Job, frames: InputFrames, written: Written) -> ManifestRow:
    """The manifest row of `job`'s container, `written` from its input `frames`."""
    height, width = written.size
    return ManifestRow(
        job.item.video_id,
        job.item.label,
        reported_frames=frames.reported,
        actual_frames=written.count,
        width=width,
        height=height,
        fps=frames.fps,
        bytes=get_kind(job.options.to).nbytes(job.path),
        status=count_status(frames.reported, written.count),
        rotation=frames.rotation(),
        extra=job.item.extra,
        container=job.name,
    )
