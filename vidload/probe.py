"""Reported vs actual frame counts of videos or containers: the library behind `vidload probe`.

`probe(input_path)` reads every video of `input_path` (a folder or an annotation list, found as
`vidload.convert.find_inputs` finds them, containers included) and returns one `ManifestRow`
each:

* a video file: `reported_frames` from its header (`VideoSource.info`, no decoding),
  `actual_frames` from a full decode of the same stream (`VideoSource.actual_frames`),
  `rotation` its display orientation (`VideoSource.orientation`); width and height are those
  of the upright frames `VideoSource` returns.
* a JPEG frame folder: `reported_frames` is the list's `total_frames` when an annotation list
  gives one, else the number of frame files; `actual_frames` the contiguous run of frames.
* an `.h5` / `.npy` container: the counts its source gives; the first and last frames are
  decoded to check the container and find the frame size.

Status "mismatch" when reported and actual differ, "failed" (with `error`) when the video cannot
be read or no frame decodes. The rows make a manifest `ClipDataset` accepts (`write_manifest`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from vidload._checks import check_bool, check_optional_int
from vidload._convert.inputs import VIDEO_INPUT, InputItem, find_input, input_copy
from vidload._convert.job import count_status, failure_reason, path_bytes
from vidload._convert.remote import shard_staging
from vidload._convert.report import print_failures
from vidload._kinds import get_kind, input_kinds
from vidload._measure.tables import Column, table
from vidload._parallel import prepare_task_process, resolve_workers, run_parallel, shard_size_for
from vidload._storage import Location
from vidload.errors import VideoReadError, VidloadError
from vidload.manifest import ManifestRow
from vidload.progress import Progress
from vidload.sources.base import FrameSource
from vidload.sources.video import VideoSource

__all__ = ["print_probe_table", "probe"]


@dataclass(frozen=True)
class _ProbeJob:
    item: InputItem
    root: Location  # an INPUT URL's: the item is downloaded and probed locally (`input_copy`)
    threads: int
    write_index: bool = False


def probe(
    input_path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    workers: int | None = None,
    labels: str | os.PathLike[str] | None = None,
    progress: bool = True,
    executor: Executor | None = None,
    shard_size: int | None = None,
    write_index: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> list[ManifestRow]:
    """One ManifestRow per video of `input_path`, in input order (sorted ids for a folder).

    Args:
        input_path: a folder of videos, JPEG frame folders, `.h5` or `.npy` containers (searched
            recursively), one video file or container, or an annotation list / manifest.
        root: folder the entries of an annotation list are relative to (default: its folder).
        workers: local processes (spawned, they die with this process; default: the CPUs this
            process may use, `vidload._cpus.default_workers`; 1 reads in this process).
            Not with `executor`.
        labels: class map for a folder `input_path` (as `convert`'s): a folder's videos are
            labelled by their top-level class folder (`vidload.convert.label_inputs`).
        progress: draw a progress bar on stderr.
        executor: any `concurrent.futures.Executor` to run the reads on (e.g. a Dask
            cluster's `client.get_executor()`); it must reach the input files.
        shard_size: videos per task; default 16, fewer for small runs so every worker gets
            some (as `vidload.shards.plan_convert`).
        write_index: also write each video file's frame index beside it
            (`<file>.vidload-index`, `VideoSource.write_index`, from the decode that counts
            it: single-threaded then, as it records each frame's digest, which seek reads
            are checked against), so that a fresh `VideoSource` (every DataLoader worker)
            reads it without a packet scan or, for AVI, a full decode. Writes into the input
            folder.
        storage_options: for an INPUT URL (a bucket folder, one object, or a list), what its
            fsspec filesystem takes; None uses the standard configuration. Each video is
            downloaded into a local staging folder, probed there, and deleted.

    Failures are rows with status "failed", never raised.

    Raises:
        FileNotFoundError: `input_path` does not exist.
        ValueError / TypeError: a bad argument or nothing to read.
    """
    from vidload.shards import DEFAULT_SHARD_SIZE

    workers, threads = resolve_workers(workers, executor)
    shard_size = check_optional_int("shard_size", shard_size, minimum=1)  # before any work
    progress = check_bool("progress", progress)
    write_index = check_bool("write_index", write_index)
    kinds = (VIDEO_INPUT, *(k.name for k in input_kinds()))  # originals and every container
    found = find_input(input_path, kinds, root=root, labels=labels, storage_options=storage_options)
    items = found.items
    jobs = [_ProbeJob(item, found.root, threads, write_index) for item in items]
    shard_size = shard_size_for(shard_size, len(jobs), DEFAULT_SHARD_SIZE)
    shards = [tuple(jobs[i : i + shard_size]) for i in range(0, len(jobs), shard_size)]
    rows: dict[str, ManifestRow] = {}
    with Progress(len(jobs), desc="probe", unit="video", enabled=progress) as bar:
        with closing(run_parallel(_probe_shard, shards, workers, executor=executor)) as results:
            for shard_rows in results:
                rows.update((row.video_id, row) for row in shard_rows)
                bar.update(len(shard_rows))
    return [rows[item.video_id] for item in items]


def _probe_shard(jobs: tuple[_ProbeJob, ...]) -> list[ManifestRow]:
    prepare_task_process()
    with shard_staging(any(job.root.local_file() is None for job in jobs)) as stage:
        return [_probe_job(job, stage) for job in jobs]


def _probe_job(job: _ProbeJob, stage: Path | None) -> ManifestRow:
    """The row of `job`'s input, read as convert's (`vidload._convert.job.convert_job`): an
    INPUT URL's from a copy in `stage`, the row naming the URL."""
    known: dict[str, Any] = {"extra": job.item.extra}  # row fields known before a failure
    with input_copy(job.item, job.root, stage) as (root, item):
        try:
            return _probe_item(item, root, job, known)
        except (VidloadError, OSError) as e:
            error = failure_reason(e, item, root, job.root)
            return ManifestRow(item.video_id, item.label, status="failed", error=error, **known)


def _probe_item(item: InputItem, root: Path, job: _ProbeJob, known: dict[str, Any]) -> ManifestRow:
    vid = item.video_id
    if item.is_video:
        video = VideoSource(root, threads=job.threads, cache_size=0)
        info = video.info(vid)
        known.update(
            reported_frames=info.reported_frames, fps=info.fps, width=info.width, height=info.height
        )
        if job.write_index:  # its decode (single-threaded, with digests) counts the frames too
            video.exact_frame_index(vid)
        actual = video.actual_frames(vid)  # raises when no frame decodes
        orientation = video.orientation(vid)  # frames come back upright: report that size
        height, width = orientation.displayed_size(info.height, info.width)
        known.update(width=width, height=height, rotation=str(orientation))
        if job.write_index:
            video.write_index(vid)  # the index and orientation just found: no decode more
    else:
        kind = get_kind(item.kind)
        listed = None if item.listed_frames is None else {vid: item.listed_frames}
        src: FrameSource = kind.input_source(root, listed)
        known["fps"] = kind.stored_fps(item.path)
        known["reported_frames"] = src.reported_frames(vid)
        actual = src.actual_frames(vid)
        if actual == 0:
            known["actual_frames"] = 0
            raise VideoReadError(item.path, "no frame decodes (0 frames)")
        _, height, width, _ = src.read(vid, [0, actual - 1]).shape
        known.update(width=width, height=height)
    return ManifestRow(
        vid,
        item.label,
        actual_frames=actual,
        bytes=path_bytes(item.path),
        status=count_status(known["reported_frames"], actual),
        **known,
    )


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _size(r: ManifestRow) -> str:
    return f"{r.width}x{r.height}" if r.width is not None and r.height is not None else "-"


#: The probe table's columns; the counts and fps right-aligned (`_RIGHT`).
_COLUMNS: tuple[Column, ...] = (
    ("", lambda r: {"mismatch": "!", "failed": "x"}.get(r.status, " ")),
    ("video_id", lambda r: r.video_id),
    ("reported", lambda r: _cell(r.reported_frames)),
    ("actual", lambda r: _cell(r.actual_frames)),
    ("size", _size),
    ("fps", lambda r: _cell(r.fps)),
    ("rotation", lambda r: _cell(r.rotation)),
    ("status", lambda r: r.status if r.error is None else f"{r.status}: {r.error}"),
)
_RIGHT = (2, 3, 5)


def print_probe_table(rows: Sequence[ManifestRow], out: TextIO) -> None:
    """A table of reported vs actual counts: `!` marks a mismatch, `x` a failure."""
    for line in table(_COLUMNS, rows, rule=False, right=_RIGHT):
        print(line.rstrip(), file=out)
    total = len(rows)
    mismatched = sum(r.status == "mismatch" for r in rows)
    print(f"{mismatched} of {total} videos: reported != actual", file=out)
    print_failures([r for r in rows if r.status == "failed"], total, out)
