"""`vidload convert` in three steps, for any executor or engine: plan, convert shards, finish.

`vidload.convert.convert` is these three steps with a local process pool (or the
`concurrent.futures.Executor` you pass). Engines that are not Executors (Ray Data, Spark, a batch
system) call them directly:

    from vidload.shards import plan_convert, convert_shard

    with plan_convert("videos/", "/shared/out", to="hdf5", shard_size=16) as plan:
        results = engine.map(convert_shard, plan.shards)   # anywhere, in any order, retried
        report = plan.finish(results)                       # manifest.csv, clean-up, unlock

* `plan_convert` runs on the driver: it finds the inputs, names every container (the rule that
  keeps a video extension in a name needs every id, so it cannot be decided per shard), checks
  the options and that OUTPUT does not overlap INPUT, takes OUTPUT's lock (one run per output
  folder, `vidload._lock`), removes temporaries that killed runs left, and groups the videos
  still to do into `ConvertShard`s of `shard_size`.
* `convert_shard(shard)` is a picklable, top-level function: it needs vidload installed where it
  runs and OUTPUT on a file system it shares with the driver. It decodes on `plan_convert`'s
  `threads` (1 by default: the engine spreads shards over cores), sets its process's allocator
  (`vidload._parallel.prepare_task_process`: Dask's `MALLOC_TRIM_THRESHOLD_=65536` costs CPU
  otherwise, the docs' "memory allocator" table), and after each video rewrites the shard's
  part manifest (`OUTPUT/.vidload-convert.parts/part-<index>-<digest>.json`, atomically and
  durably; `vidload._convert.resume`). A retried or duplicated shard reads that part first and
  does no video twice: a video with a row there whose container exists is taken as it is, and
  (without `overwrite`) a container that exists without a row is validated instead of converted
  again.
* `plan.finish(results)` merges the parts (and the results the driver received) with the rows
  already in `manifest.csv` into a new `manifest.csv`, the same file a local run writes; removes
  the temporaries of killed tasks and the parts; releases the lock. Videos whose shard never
  finished are listed in `ConvertReport.unfinished` and left out of the manifest: a rerun does
  them.

Containers and manifests are fsynced before they are renamed into place and their folder after
(`vidload._atomic`), so a power loss on a node-local disk never leaves a complete-looking, empty
container. A full disk stops the run: the shard that hit it returns `stopped` naming the file,
the driver cancels the rest and `finish` writes the manifest of what finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from vidload._atomic import is_disk_full
from vidload._checks import check_bool, check_int, check_optional_int
from vidload._convert.inputs import (
    InputItem,
    check_no_overlap,
    find_inputs,
    label_inputs,
    sharing_a_name,
)
from vidload._convert.job import Job, Outcome
from vidload._convert.options import DEFAULT_QUALITY, DEFAULT_SUBSAMPLING, ConvertOptions
from vidload._convert.remote import (
    download_manifest,
    fetch,
    find_remote_inputs,
    folder_labels,
    is_folder_format,
    publish,
    publish_sidecar,
    read_remote_parts,
    remote_container_exists,
    run_job,
    staging,
    write_remote_manifest,
)
from vidload._convert.report import ConvertFormat, ConvertReport
from vidload._convert.resume import (
    parse_part,
    part_bytes,
    previous_rows,
    read_part,
    read_parts,
    remove_stale_temporaries,
    write_manifest_rows,
    write_part,
)
from vidload._layout import (
    CLASSES_NAME,
    FIRST_FRAME_NAME,
    MANIFEST_NAME,
    PARTS_DIR,
    output_container_path,
    sidecar_path,
)
from vidload._lock import OutputLock, RemoteOutputLock
from vidload._parallel import parent_gone, prepare_task_process, run_parallel, shard_size_for
from vidload._storage import Location
from vidload.errors import DiskFullError, UsageError, VideoReadError
from vidload.labels import is_contiguous, label_by_folder, write_classes
from vidload.manifest import ManifestRow, keep_extra
from vidload.progress import Progress
from vidload.sources.jpeg_decode import Subsampling

__all__ = [
    "DEFAULT_SHARD_SIZE",
    "PARTS_DIR",
    "ConvertPlan",
    "ConvertShard",
    "ShardResult",
    "convert_shard",
    "plan_convert",
    "run_plan",
]

#: Videos per shard for an executor: a 300-frame 340x256 video is ~0.25 s of CPU (`/usr/bin/time
#: vidload convert ../shared/videos OUT --to hdf5 --workers 1 -q`: ~0.63 s user+sys for the 464
#: frames of its two clips, ~0.25 s of that the imports), so 16 keep the scheduler's per-task
#: overhead (about 1 ms a task, Dask's "best practices" docs) far below the work.
DEFAULT_SHARD_SIZE = 16
#: How often the driver rewrites manifest.csv while a run goes on.
_CHECKPOINT_S = 30.0
#: Disk space held back for the final manifest (`_reserve`): bytes per video, and bounds.
_RESERVE_PER_VIDEO, _RESERVE_MIN, _RESERVE_MAX = 256, 64 << 10, 64 << 20
_RESERVE_NAME = "reserve"


@dataclass(frozen=True)
class ConvertShard:
    """One task of a conversion: a few videos, everything needed to convert them; picklable.

    Attributes:
        index: position in `ConvertPlan.shards`.
        jobs: the videos, each with its input, container path and options.
        part: the shard's part manifest (deterministic: a retry finds its predecessor's).
        overwrite: convert even when a container exists (the part still prevents doing a video
            twice within one run).
        output: an OUTPUT URL (`vidload._convert.remote`): then `part` and the jobs' containers
            are relative to it, the containers are written in a local staging folder and
            uploaded once complete. None for a local OUTPUT.
    """

    index: int
    jobs: tuple[Job, ...]
    part: Path
    overwrite: bool
    output: Location | None = None

    @property
    def video_ids(self) -> tuple[str, ...]:
        return tuple(job.item.video_id for job in self.jobs)


@dataclass(frozen=True)
class ShardResult:
    """What `convert_shard` returns.

    Attributes:
        index: the shard's index.
        outcomes: one per video handled, in the shard's order (all of them unless `stopped`).
        stopped: why the shard stopped before its end (e.g. "no space left on device writing
            ..."), None when it finished.
    """

    index: int
    outcomes: tuple[Outcome, ...]
    stopped: str | None = None


def plan_convert(
    input_path: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    to: ConvertFormat,
    short_side: int | None = None,
    quality: int = DEFAULT_QUALITY,
    subsampling: Subsampling = DEFAULT_SUBSAMPLING,
    gop: int | None = None,
    crf: float | None = None,
    preset: str | None = None,
    tune: str | None = None,
    overwrite: bool = False,
    root: str | os.PathLike[str] | None = None,
    labels: str | os.PathLike[str] | None = None,
    shard_size: int | None = None,
    threads: int = 1,
    storage_options: Mapping[str, Any] | None = None,
) -> ConvertPlan:
    """Plan converting `input_path` into `output` (module doc); holds OUTPUT's lock until
    `finish` or `close` (use it as a context manager).

    Args:
        input_path: as for `vidload.convert.convert`.
        output: as for `convert`.
        to: as for `convert`.
        short_side: as for `convert`.
        quality: as for `convert`.
        subsampling: as for `convert`.
        overwrite: as for `convert`.
        root: as for `convert`.
        labels: as for `convert`.
        gop: as for `convert` (`to="video"` only).
        crf: as for `convert` (`to="video"` only).
        preset: as for `convert` (`to="video"` only).
        tune: as for `convert` (`to="video"` only).
        shard_size: videos per shard (>= 1). None: `DEFAULT_SHARD_SIZE`, or fewer when there
            are not 4 shards per CPU of this machine, so that a small run still spreads.
        threads: decoding threads per task (>= 1; 1 when the engine runs a task per core).
        storage_options: for an OUTPUT URL, what its fsspec filesystem takes (credentials,
            `client_kwargs={"endpoint_url": ...}`); None uses the standard configuration.

    Raises:
        FileNotFoundError, ValueError, TypeError: as `convert` (bad arguments, overlap, options).
        OutputLockedError: another run is writing into `output`.
        DiskFullError: no room for the lock or the options file.
    """
    options = ConvertOptions.checked(
        to=to,
        short_side=short_side,
        quality=quality,
        subsampling=subsampling,
        gop=gop,
        crf=crf,
        preset=preset,
        tune=tune,
    )
    overwrite = check_bool("overwrite", overwrite)
    shard_size = check_optional_int("shard_size", shard_size, minimum=1)
    threads = check_int("threads", threads, minimum=1)
    target = Location(os.fspath(output), storage_options)
    source = Location(os.fspath(input_path), storage_options)
    if not target.is_local or not source.is_local:
        return _plan_urls(source, target, options, overwrite, root, labels, shard_size, threads)
    out = target.local_path
    if out.exists() and not out.is_dir():
        raise UsageError(f"OUTPUT ({str(out)!r}) exists and is not a folder")
    base, items = find_inputs(input_path, root=root, kinds=("video", "jpeg"))
    items, class_map = label_inputs(input_path, items, labels)
    full_names = sharing_a_name(items)
    check_no_overlap(Path(input_path), base, out, items, options.to, full_names)

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        if is_disk_full(e):
            raise DiskFullError(out) from e
        raise
    lock = OutputLock(out)
    lock.acquire()
    try:
        plan = _plan_locked(base, out, items, full_names, options, overwrite, shard_size, threads)
        if class_map is not None and is_contiguous(class_map):
            write_classes(out / CLASSES_NAME, class_map)
    except BaseException:
        lock.release()
        raise
    plan._lock = lock
    return plan


def _plan_locked(
    base: Path,
    out: Path,
    items: list[InputItem],
    full_names: frozenset[str],
    options: ConvertOptions,
    overwrite: bool,
    shard_size: int | None,
    threads: int,
    source: Location | None = None,
) -> ConvertPlan:
    manifest_path = out / MANIFEST_NAME
    options.record(out, overwrite=overwrite)
    remove_stale_temporaries(out)  # safe: the lock says no other run is writing here
    parts = out / PARTS_DIR
    previous = previous_rows(manifest_path, overwrite=overwrite)
    if parts.exists():
        if not overwrite:  # a killed run's finished videos: keep them in the manifest
            leftover = {o.row.video_id: o.row for o in read_parts(parts).values()}
            if leftover:
                previous.update((v, keep_extra(r, previous.get(v))) for v, r in leftover.items())
                write_manifest_rows(manifest_path, previous)
        shutil.rmtree(parts)

    plan = ConvertPlan(base, out, options.to, items, previous, overwrite)
    jobs: list[Job] = []
    for item in items:
        container = output_container_path(
            out, item.video_id, options.to, keep_extension=item.video_id in full_names
        )
        prev = previous.get(item.video_id)
        exists = container.exists()
        if exists and not overwrite and prev is not None and prev.status in ("ok", "mismatch"):
            plan.done[item.video_id] = replace(
                prev, label=item.label, extra={**prev.extra, **item.extra}
            )
            continue
        verify = exists and not overwrite and prev is None
        jobs.append(Job(item, base, container, options, threads, verify, source))
    plan.shards = _shards(jobs, shard_size, parts, overwrite)
    if plan.shards:
        parts.mkdir()
        size = len(items) * _RESERVE_PER_VIDEO
        _reserve(parts / _RESERVE_NAME, min(_RESERVE_MAX, max(_RESERVE_MIN, size)))
    return plan


def _plan_urls(
    source: Location,
    target: Location,
    options: ConvertOptions,
    overwrite: bool,
    root: str | os.PathLike[str] | None,
    labels: str | os.PathLike[str] | None,
    shard_size: int | None,
    threads: int,
) -> ConvertPlan:
    """`plan_convert` where INPUT or OUTPUT (or both) is a URL (`vidload._convert.remote`)."""
    src: Location | None = None
    if source.is_local:
        base, items = find_inputs(source.local_path, root=root, kinds=("video", "jpeg"))
        items, class_map = label_inputs(source.local_path, items, labels)
    else:
        if root is not None:
            raise UsageError(f"root ({str(root)!r}) does not apply to an INPUT URL")
        with tempfile.TemporaryDirectory(prefix="vidload-convert-") as scratch:
            src, items = find_remote_inputs(source, ("video", "jpeg"), Path(scratch))
        if not target.is_local:
            a, b = src.url.rstrip("/") + "/", target.url.rstrip("/") + "/"
            if a.startswith(b) or b.startswith(a):
                raise UsageError(
                    f"OUTPUT ({target}) and the INPUT folder ({src}) overlap: the containers "
                    "would be written among the inputs; choose an OUTPUT outside it"
                )
        base = Path()
        class_map = folder_labels(items, labels) if src == source else None
        if labels is not None and class_map is None:
            raise UsageError(f"labels ({str(labels)!r}) applies to a folder INPUT only")
        if class_map is not None:
            found = label_by_folder([it.video_id for it in items], class_map, where="labels")
            items = [replace(it, label=lab) for it, lab in zip(items, found, strict=True)]
    if not target.is_local:
        return _plan_remote(
            base, target, items, sharing_a_name(items), class_map, options, overwrite,
            shard_size, threads, src,
        )  # fmt: skip
    out = target.local_path
    if out.exists() and not out.is_dir():
        raise UsageError(f"OUTPUT ({str(out)!r}) exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    lock = OutputLock(out)
    lock.acquire()
    try:
        plan = _plan_locked(
            base, out, items, sharing_a_name(items), options, overwrite, shard_size, threads, src
        )
        if class_map is not None and is_contiguous(class_map):
            write_classes(out / CLASSES_NAME, class_map)
    except BaseException:
        lock.release()
        raise
    plan._lock = lock
    return plan


def _plan_remote(
    base: Path,
    out: Location,
    items: list[InputItem],
    full_names: frozenset[str],
    class_map: dict[str, int] | None,
    options: ConvertOptions,
    overwrite: bool,
    shard_size: int | None,
    threads: int,
    source: Location | None = None,
) -> ConvertPlan:
    """`plan_convert` for an OUTPUT URL (`vidload._convert.remote`): the same plan, with the
    bucket's lock object, manifest, options and parts, and one listing of what is there."""
    lock = RemoteOutputLock(out)
    lock.acquire()
    scratch = Path(tempfile.mkdtemp(prefix="vidload-convert-"))
    try:
        options.record(out, overwrite=overwrite)
        local_manifest = download_manifest(out, scratch) or scratch / MANIFEST_NAME
        previous = previous_rows(local_manifest, overwrite=overwrite)
        leftover_parts = read_remote_parts(out)
        if leftover_parts:
            if not overwrite:  # a killed run's finished videos: keep them in the manifest
                leftover = {
                    vid: o.row
                    for entries in leftover_parts.values()
                    for vid, o in parse_part(entries).items()
                }
                previous.update((v, keep_extra(r, previous.get(v))) for v, r in leftover.items())
                write_remote_manifest(out, previous, scratch)
            (out / PARTS_DIR).delete(recursive=True)
        present = set(out.walk_files())
        plan = ConvertPlan(base, Path(str(out)), options.to, items, previous, overwrite)
        plan.remote, plan._scratch = out, scratch
        folders = is_folder_format(options.to)
        jobs: list[Job] = []
        for item in items:
            rel = output_container_path(
                Path(), item.video_id, options.to, keep_extension=item.video_id in full_names
            )
            key = (rel / FIRST_FRAME_NAME if folders else rel).as_posix()
            exists, prev = key in present, previous.get(item.video_id)
            if exists and not overwrite and prev is not None and prev.status in ("ok", "mismatch"):
                plan.done[item.video_id] = replace(
                    prev, label=item.label, extra={**prev.extra, **item.extra}
                )
                continue
            verify = exists and not overwrite and prev is None and not folders
            jobs.append(Job(item, base, rel, options, threads, verify, source))
        plan.shards = _shards(jobs, shard_size, Path(PARTS_DIR), overwrite, out)
        if class_map is not None and is_contiguous(class_map):
            write_classes(scratch / CLASSES_NAME, class_map)
            (out / CLASSES_NAME).put_file(scratch / CLASSES_NAME)
    except BaseException:
        lock.release()
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    plan._lock = lock
    return plan


def _shards(
    jobs: list[Job],
    shard_size: int | None,
    parts: Path,
    overwrite: bool,
    output: Location | None = None,
) -> tuple[ConvertShard, ...]:
    """`jobs` in shards of `shard_size` (`shard_size_for`), each with its part manifest's name
    (deterministic: a retried shard finds its predecessor's)."""
    shard_size = shard_size_for(shard_size, len(jobs), DEFAULT_SHARD_SIZE)
    shards = []
    for index, start in enumerate(range(0, len(jobs), shard_size)):
        chunk = tuple(jobs[start : start + shard_size])
        digest = hashlib.sha1("\n".join(j.item.video_id for j in chunk).encode()).hexdigest()
        part = parts / f"part-{index:06d}-{digest[:8]}.json"
        shards.append(ConvertShard(index, chunk, part, overwrite, output))
    return tuple(shards)


def _reserve(path: Path, size: int) -> None:
    """Hold `size` bytes of disk in `path` so that the manifest of what finished can still be
    written when the containers fill the disk (`finish` deletes it first)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        try:
            try:
                os.posix_fallocate(fd, 0, size)
            except (AttributeError, OSError) as e:
                if is_disk_full(e):
                    raise
                os.write(fd, bytes(size))  # no fallocate on this file system
        finally:
            os.close(fd)
    except OSError as e:
        path.unlink(missing_ok=True)
        if is_disk_full(e):
            raise DiskFullError(path) from e
        raise


class ConvertPlan:
    """A planned conversion (`plan_convert`): the shards to run, then `finish`.

    Attributes:
        input_root: the folder the input ids are relative to.
        output: the output folder; `manifest_path` its manifest.
        to: the container format.
        items: every input video, in input order.
        shards: the videos still to convert, grouped into tasks.
        done: rows of the videos whose container was already complete (not in any shard).
    """

    def __init__(
        self,
        input_root: Path,
        output: Path,
        to: ConvertFormat,
        items: Sequence[InputItem],
        previous: dict[str, ManifestRow],
        overwrite: bool,
    ) -> None:
        self.input_root = input_root
        self.output = output
        self.manifest_path = output / MANIFEST_NAME
        self.to = to
        self.items = tuple(items)
        self.previous = previous
        self.overwrite = overwrite
        self.done: dict[str, ManifestRow] = {}
        self.shards: tuple[ConvertShard, ...] = ()
        self.started = time.perf_counter()
        self._lock: OutputLock | RemoteOutputLock | None = None
        self._finished = False
        #: an OUTPUT URL (`_plan_remote`); then `_scratch` is the driver's local folder for
        #: the manifest it uploads, and `output`/`manifest_path` name the URLs (no credentials)
        self.remote: Location | None = None
        self._scratch: Path | None = None

    def __enter__(self) -> ConvertPlan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release OUTPUT's lock without finishing (a later run resumes). Idempotent."""
        if self._lock is not None:
            try:
                self._lock.release()
            finally:
                self._lock = None
                if self._scratch is not None:
                    shutil.rmtree(self._scratch, ignore_errors=True)

    def checkpoint(self, results: Iterable[ShardResult] = (), *, parts: bool = False) -> None:
        """Rewrite manifest.csv with the rows of `results` (the run goes on); with `parts`,
        also those the shards' part manifests hold (the videos of shards still running)."""
        outcomes = self._outcomes(results) if parts else _by_id(results)
        self._write_manifest(self._merged(outcomes))

    def _write_manifest(self, rows: dict[str, ManifestRow]) -> None:
        if self.remote is not None and self._scratch is not None:
            write_remote_manifest(self.remote, rows, self._scratch)
        else:
            write_manifest_rows(self.manifest_path, rows)

    def finish(self, results: Iterable[ShardResult] = (), *, stopped: str | None = None):
        """Merge the parts (and `results`) into manifest.csv, remove the temporaries of killed
        tasks and the parts, release the lock; return a ConvertReport.

        A full disk while writing the manifest does not raise: the report's `stopped` says so
        and the parts stay, so a rerun still knows what finished.
        """
        if self._finished:
            raise RuntimeError("this ConvertPlan has already been finished")
        try:
            outcomes = self._outcomes(results)
            if self.remote is not None:  # an upload that fails raises: the parts stay
                self._write_manifest(self._merged(outcomes))
                (self.remote / PARTS_DIR).delete(recursive=True)
                manifest_written = True
            else:
                (self.output / PARTS_DIR / _RESERVE_NAME).unlink(missing_ok=True)
                try:
                    write_manifest_rows(self.manifest_path, self._merged(outcomes))
                    manifest_written = True
                except DiskFullError as e:
                    stopped = stopped or str(e)
                    manifest_written = False
                remove_stale_temporaries(self.output)
                if manifest_written:
                    shutil.rmtree(self.output / PARTS_DIR, ignore_errors=True)
        finally:
            self._finished = True
            self.close()
        return self._report(outcomes, stopped, manifest_written)

    def _outcomes(self, results: Iterable[ShardResult]) -> dict[str, Outcome]:
        """Every outcome on record: the parts on disk, then what the driver received."""
        if self.remote is not None:
            outcomes = {}
            for entries in read_remote_parts(self.remote).values():
                outcomes.update(parse_part(entries))
        else:
            outcomes = read_parts(self.output / PARTS_DIR)
        outcomes.update(_by_id(results))
        wanted = {job.item.video_id for shard in self.shards for job in shard.jobs}
        return {vid: o for vid, o in outcomes.items() if vid in wanted}

    def _merged(self, outcomes: dict[str, Outcome]) -> dict[str, ManifestRow]:
        merged = dict(self.previous)
        merged.update(self.done)
        merged.update((vid, keep_extra(o.row, merged.get(vid))) for vid, o in outcomes.items())
        return merged

    def _report(
        self, outcomes: dict[str, Outcome], stopped: str | None, manifest_written: bool
    ) -> ConvertReport:
        rows, converted, skipped, failed, unfinished = [], [], [], [], []
        bytes_in = bytes_out = frames = 0
        for item in self.items:
            vid = item.video_id
            if vid in self.done:
                rows.append(self.done[vid])
                skipped.append(vid)
                continue
            outcome = outcomes.get(vid)
            if outcome is None:
                unfinished.append(vid)
                continue
            rows.append(outcome.row)
            if outcome.action == "failed":
                failed.append(outcome.row)
            elif outcome.action == "skipped":
                skipped.append(vid)
            else:
                converted.append(vid)
                bytes_in += outcome.bytes_in
                bytes_out += outcome.row.bytes or 0
                frames += outcome.frames
        return ConvertReport(
            output=self.output if self.remote is None else str(self.remote),  # type: ignore[arg-type]
            manifest_path=(
                self.manifest_path if self.remote is None else str(self.remote / MANIFEST_NAME)  # type: ignore[arg-type]
            ),
            rows=tuple(rows),
            converted=tuple(converted),
            skipped=tuple(skipped),
            failed=tuple(failed),
            bytes_in=bytes_in,
            bytes_out=bytes_out,
            frames=frames,
            seconds=time.perf_counter() - self.started,
            unfinished=tuple(unfinished),
            stopped=stopped,
            manifest_written=manifest_written,
        )


def _by_id(results: Iterable[ShardResult]) -> dict[str, Outcome]:
    return {o.row.video_id: o for result in results for o in result.outcomes}


# --------------------------------------------------------------------------- one shard


def convert_shard(shard: ConvertShard) -> ShardResult:
    """Convert one shard's videos (module doc); failures are rows, never raised.

    Safe to run more than once, at the same time or after a kill: videos recorded in the shard's
    part with an existing container are not converted again. Stops early (`stopped`) when the
    disk is full; raises RuntimeError when run by a local pool whose driver has died.
    """
    prepare_task_process()
    if shard.output is not None:
        return _convert_shard_remote(shard, shard.output)
    if any(job.source is not None for job in shard.jobs):  # an INPUT URL
        with staging() as stage:
            return _convert_shard_local(shard, stage)
    return _convert_shard_local(shard, None)


def _convert_shard_local(shard: ConvertShard, stage: Path | None) -> ShardResult:
    prior = read_part(shard.part)
    done: dict[str, Outcome] = {}
    for job in shard.jobs:
        if parent_gone():
            raise RuntimeError("the driver of this conversion is gone; no new container started")
        vid = job.item.video_id
        old = prior.get(vid)
        if old is not None and (old.action == "failed" or job.container.exists()):
            done[vid] = old
            continue
        live = replace(job, verify=not shard.overwrite and job.container.exists())
        try:
            done[vid] = run_job(live, stage)
            write_part(shard.part, done.values())
        except DiskFullError as e:
            done.pop(vid, None)  # its container may be in place, but no part row says so
            return ShardResult(shard.index, tuple(done.values()), stopped=str(e))
    return ShardResult(shard.index, tuple(done.values()))


def _convert_shard_remote(shard: ConvertShard, out: Location) -> ShardResult:
    """`convert_shard` into a bucket (`vidload._convert.remote`): each container is written
    in this shard's staging folder, uploaded once complete, then deleted here; the part
    manifest is one object, rewritten after each video. A failed upload stops the shard
    (`stopped`): it is the bucket's fault, not the video's."""
    part = out / shard.part.as_posix()
    try:
        prior = parse_part(json.loads(part.read_bytes()))
    except (VideoReadError, ValueError):
        prior = {}
    done: dict[str, Outcome] = {}
    with staging() as stage:
        for job in shard.jobs:
            if parent_gone():
                raise RuntimeError(
                    "the driver of this conversion is gone; no new container started"
                )
            vid, to = job.item.video_id, job.options.to
            remote = out / job.container.as_posix()
            old = prior.get(vid)
            if old is not None and (old.action == "failed" or remote_container_exists(remote, to)):
                done[vid] = old
                continue
            local = stage / job.container
            local.parent.mkdir(parents=True, exist_ok=True)
            try:
                # the plan listed the bucket: a container that appeared since (a duplicate of
                # this task) is converted again and replaced whole, which costs no reader
                verify = job.verify and not shard.overwrite and not is_folder_format(to)
                if verify:
                    fetch(remote, local)
                outcome = run_job(replace(job, container=local, verify=verify), stage)
                if outcome.action == "converted":
                    publish(local, remote, to)
                elif outcome.action == "skipped" and sidecar_path(local).exists():
                    publish_sidecar(local, remote)  # the verified container had none
                if outcome.row.error:
                    row = replace(
                        outcome.row, error=outcome.row.error.replace(str(local), str(remote))
                    )
                    outcome = replace(outcome, row=row)
                done[vid] = outcome
                part.write_bytes(part_bytes(done.values()))
            except DiskFullError as e:  # the staging disk
                done.pop(vid, None)
                return ShardResult(shard.index, tuple(done.values()), stopped=str(e))
            except VideoReadError as e:  # the bucket: an upload, a part, a check
                done.pop(vid, None)
                return ShardResult(
                    shard.index, tuple(done.values()), stopped=f"writing into {out}: {e}"
                )
            finally:
                for p in (local, sidecar_path(local)):
                    if p.is_dir():
                        shutil.rmtree(p, ignore_errors=True)
                    else:
                        p.unlink(missing_ok=True)
    return ShardResult(shard.index, tuple(done.values()))


# --------------------------------------------------------------------------- driver


def run_plan(
    plan: ConvertPlan,
    *,
    executor: Executor | None = None,
    workers: int = 1,
    progress: bool = True,
) -> ConvertReport:
    """Run every shard of `plan` on `executor` (default: `workers` local processes that die
    with this one), then `plan.finish`. A full disk, or a task that fails (a worker process
    killed by the OOM killer breaks a local pool; Dask gives a task up after it killed
    `allowed-failures` workers), stops the run: the shards not started are cancelled, and the
    report's `stopped` says why, its `unfinished` what is left. Ctrl-C (any BaseException)
    writes the manifest of what finished, releases the lock and propagates."""
    workers = check_int("workers", workers, minimum=1)
    progress = check_bool("progress", progress)
    total = sum(len(s.jobs) for s in plan.shards)
    bar = Progress(total, desc="convert", unit="video", enabled=progress and total > 0)
    results: list[ShardResult] = []
    stopped: str | None = None
    frames = 0
    last_checkpoint = time.perf_counter()
    try:
        with closing(run_parallel(convert_shard, plan.shards, workers, executor=executor)) as it:
            for result in it:
                results.append(result)
                frames += sum(o.frames for o in result.outcomes)
                bar.set_postfix(f"{frames / max(bar.elapsed, 1e-9):.0f} frames/s")
                bar.update(len(result.outcomes))
                if result.stopped is not None:
                    stopped = result.stopped
                    break
                if time.perf_counter() - last_checkpoint > _CHECKPOINT_S:
                    plan.checkpoint(results)
                    last_checkpoint = time.perf_counter()
    except Exception as e:  # the executor lost a task: stop, keep what finished
        stopped = f"a conversion task failed ({type(e).__name__}: {e})"
    except BaseException:
        bar.close()
        try:
            plan.checkpoint(results, parts=True)
        finally:
            plan.close()
        raise
    bar.close()
    return plan.finish(results, stopped=stopped)
