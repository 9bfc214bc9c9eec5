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
import os
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Executor
from contextlib import AbstractContextManager, closing
from dataclasses import dataclass, replace
from typing import Any

from vidload._checks import check_bool, check_int
from vidload._convert.heads import write_output_heads
from vidload._convert.inputs import Inputs, convert_input_kinds, find_input
from vidload._convert.job import Job, Outcome
from vidload._convert.lists import check_list_manifest, write_list_manifest
from vidload._convert.options import DEFAULT_QUALITY, DEFAULT_SUBSAMPLING, ConvertOptions
from vidload._convert.output import Output, has_container, run_job, shard_stops
from vidload._convert.remote import shard_staging
from vidload._convert.report import ConvertFormat, ConvertReport
from vidload._convert.resume import part_bytes, read_part, read_parts
from vidload._kinds import get_kind
from vidload._layout import CLASSES_NAME, MANIFEST_NAME, PARTS_DIR
from vidload._parallel import parent_gone, prepare_task_process, run_parallel, shard_size_for
from vidload._storage import Location
from vidload.labels import classes_bytes, is_contiguous
from vidload.manifest import ManifestRow, keep_extra
from vidload.progress import Progress
from vidload.sources.jpeg_decode import Subsampling

__all__ = [
    "DEFAULT_SHARD_SIZE",
    "PARTS_DIR",
    "ConvertOptions",
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


@dataclass(frozen=True)
class ConvertShard:
    """One task of a conversion: a few videos, everything needed to convert them; picklable.

    Attributes:
        index: position in `ConvertPlan.shards`.
        jobs: the videos, each with its input, container and options.
        part: the shard's part manifest, relative to `output` (deterministic: a retry finds
            its predecessor's).
        output: OUTPUT (`vidload._convert.output.run_job`); where it has no local folder
            (a bucket prefix: `vidload._convert.remote`), the containers are written in a local
            staging folder and uploaded once complete.
    """

    index: int
    jobs: tuple[Job, ...]
    part: str
    output: Location

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
    to: ConvertFormat | None = None,
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
    storage_options: Mapping[str, Any] | None = None,
    threads: int = 1,
    options: ConvertOptions | None = None,
) -> ConvertPlan:
    """Plan converting `input_path` into `output` (module doc); holds OUTPUT's lock until
    `finish` or `close` (use it as a context manager).

    The options are the keywords of `vidload.convert.convert` (`to` required), or one
    `ConvertOptions` made beforehand (`options=`, with no option keyword: the one checked object
    that `vidload.convert.run_convert` and `vidload convert` pass along); either way they are
    checked once, into a `ConvertOptions` that the plan's jobs carry (`ConvertPlan.options`).

    Args:
        input_path: as for `vidload.convert.convert`.
        output: as for `convert`.
        to: as for `convert`; required unless `options` is given.
        short_side: as for `convert`.
        quality: as for `convert`.
        subsampling: as for `convert`.
        gop: as for `convert` (`to="video"` only).
        crf: as for `convert` (`to="video"` only).
        preset: as for `convert` (`to="video"` only).
        tune: as for `convert` (`to="video"` only).
        overwrite: as for `convert`.
        root: as for `convert`.
        labels: as for `convert`.
        shard_size: videos per shard (>= 1). None: `DEFAULT_SHARD_SIZE`, or fewer when there
            are not 4 shards per CPU of this machine, so that a small run still spreads.
        storage_options: for an OUTPUT URL, what its fsspec filesystem takes (credentials,
            `client_kwargs={"endpoint_url": ...}`); None uses the standard configuration.
        threads: decoding threads per task (>= 1; 1 when the engine runs a task per core).
        options: all of the above but `threads`, as one `ConvertOptions`; not with them.

    Raises:
        FileNotFoundError, ValueError, TypeError: as `convert` (bad arguments, overlap, options;
            `options` given with option keywords, or neither it nor `to`).
        OutputLockedError: another run is writing into `output`.
        DiskFullError: no room for the lock or the options file.
    """
    options = ConvertOptions.from_keywords(
        options, to=to, short_side=short_side, quality=quality, subsampling=subsampling,
        gop=gop, crf=crf, preset=preset, tune=tune, overwrite=overwrite, root=root,
        labels=labels, shard_size=shard_size, storage_options=storage_options,
    )  # fmt: skip
    threads = check_int("threads", threads, minimum=1)
    # an OUTPUT that is a file is refused before any work
    out = Output(Location(os.fspath(output), options.storage_options))
    get_kind(options.to).check_output(out.location)
    found = find_input(
        input_path,
        convert_input_kinds(),
        root=options.root,
        labels=options.labels,
        storage_options=options.storage_options,
    )
    names = found.container_names(options.to)
    found.check_no_overlap(input_path, out.location, names)
    return _plan(found, names, out, options, threads)


def _plan(
    found: Inputs, names: dict[str, str], out: Output, options: ConvertOptions, threads: int
) -> ConvertPlan:
    """Take OUTPUT's lock and plan (module doc): the rows on record, what is already done,
    the shards of what is left (each video's container named by `names`). The lock is held
    by the plan, released on any error here."""
    overwrite = options.overwrite
    out.lock.acquire()  # a local OUTPUT folder is made if missing
    try:
        out.record(options)
        if found.listed is not None:  # another list of the same name: refused before any work
            check_list_manifest(out.location, found.listed)
        previous = out.previous(names, options)
        plan = ConvertPlan(found, out, options, previous)
        jobs: list[Job] = []
        for item in found.items:
            name = names[item.video_id]
            prev = previous.get(item.video_id)
            exists = out.exists(name, options.to)
            if exists and not overwrite and prev is not None and prev.status in ("ok", "mismatch"):
                extra = {**prev.extra, **item.extra}
                plan.done[item.video_id] = replace(
                    prev, label=item.label, extra=extra, container=name
                )
                continue
            verify = exists and not overwrite and prev is None and out.verifies(options.to)
            jobs.append(Job(item, found.root, out.location, name, options, threads, verify))
        plan.shards = _shards(jobs, options.shard_size, out.location)
        if plan.shards:
            out.prepare(len(found.items))
        if found.class_map is not None and is_contiguous(found.class_map):
            (out.location / CLASSES_NAME).write_bytes(classes_bytes(found.class_map))
    except BaseException:
        out.lock.release()
        raise
    return plan


def _shards(jobs: list[Job], shard_size: int | None, output: Location) -> tuple[ConvertShard, ...]:
    """`jobs` in shards of `shard_size` (`shard_size_for`), each with its part manifest's name
    (deterministic: a retried shard finds its predecessor's)."""
    shard_size = shard_size_for(shard_size, len(jobs), DEFAULT_SHARD_SIZE)
    shards = []
    for index, start in enumerate(range(0, len(jobs), shard_size)):
        chunk = tuple(jobs[start : start + shard_size])
        digest = hashlib.sha1("\n".join(j.item.video_id for j in chunk).encode()).hexdigest()
        part = f"{PARTS_DIR}/part-{index:06d}-{digest[:8]}.json"
        shards.append(ConvertShard(index, chunk, part, output))
    return tuple(shards)


class ConvertPlan(AbstractContextManager["ConvertPlan"]):
    """A planned conversion (`plan_convert`): the shards to run, then `finish`; a context
    manager that `close`s.

    Attributes:
        input_root: the folder the input ids are relative to (local, or an INPUT URL's).
        output: the output folder; `manifest_path` its manifest (for an OUTPUT URL, the URLs
            without credentials).
        options: the conversion's options (`ConvertOptions`), checked.
        to: the container format (`options.to`).
        overwrite: `options.overwrite`.
        items: every input video, in input order.
        shards: the videos still to convert, grouped into tasks.
        done: rows of the videos whose container was already complete (not in any shard).
    """

    def __init__(
        self,
        found: Inputs,
        output: Output,
        options: ConvertOptions,
        previous: dict[str, ManifestRow],
    ) -> None:
        self.input_root = found.root
        self.output = output.folder
        self.manifest_path = output.shown(MANIFEST_NAME)
        self.options = options
        self.to: ConvertFormat = options.to
        self.items = tuple(found.items)
        self.previous = previous
        self.overwrite = options.overwrite
        self.done: dict[str, ManifestRow] = {}
        #: a list INPUT's entries, for its own manifest (`vidload._convert.lists`)
        self.listed = found.listed
        self.shards: tuple[ConvertShard, ...] = ()
        self.started = time.perf_counter()
        self._out = output  # holds OUTPUT's lock until `finish` or `close`
        self._finished = False

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release OUTPUT's lock without finishing (a later run resumes). Idempotent."""
        self._out.lock.release()

    def checkpoint(self, results: Iterable[ShardResult] = (), *, parts: bool = False) -> None:
        """Rewrite manifest.csv with the rows of `results` (the run goes on); with `parts`,
        also those the shards' part manifests hold (the videos of shards still running)."""
        outcomes = self._outcomes(results) if parts else _by_id(results)
        self._out.write_manifest(self._merged(outcomes))

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
            merged = self._merged(outcomes)
            not_written = self._out.finish(merged)
            stopped = stopped or not_written
            listed: tuple[int, str | None] = (0, None)
            if not_written is None:  # the containers' heads beside the manifest (issue 23)
                write_output_heads(self.to, self._out.location, merged)
                if self.listed is not None:  # and the list's own manifest (issue 31)
                    listed = write_list_manifest(self._out.location, self.listed, merged)
        finally:
            self._finished = True
            self.close()
        report = self._report(outcomes, stopped, not_written is None)
        if self.listed is None:
            return report
        return replace(
            report,
            manifest_rows=len(merged),
            list_manifest_path=self._out.shown(self.listed.manifest_name),
            list_entries=listed[0],
            list_total=len(self.listed.entries),
            list_name=self.listed.name,
            list_not_written=listed[1] if not_written is None else not_written,
        )

    def _outcomes(self, results: Iterable[ShardResult]) -> dict[str, Outcome]:
        """Every outcome on record: the parts in OUTPUT (`read_parts`), then what the driver
        received."""
        outcomes = read_parts(self._out.location / PARTS_DIR) or {}
        outcomes.update(_by_id(results))
        wanted = {job.item.video_id for shard in self.shards for job in shard.jobs}
        return {v: o for v, o in outcomes.items() if v in wanted}

    def _merged(self, outcomes: dict[str, Outcome]) -> dict[str, ManifestRow]:
        merged = dict(self.previous)
        merged.update(self.done)
        merged.update((vid, keep_extra(o.row, merged.get(vid))) for vid, o in outcomes.items())
        return merged

    def _report(
        self, outcomes: dict[str, Outcome], stopped: str | None, manifest_written: bool
    ) -> ConvertReport:
        done = {vid: Outcome(row, "skipped") for vid, row in self.done.items()}
        outcomes = {**outcomes, **done}  # a video found done is in no shard
        found = [(it.video_id, outcomes.get(it.video_id)) for it in self.items]
        handled = [o for _, o in found if o is not None]  # in input order
        new = [o for o in handled if o.action == "converted"]
        return ConvertReport(
            output=self.output,
            manifest_path=self.manifest_path,
            rows=tuple(o.row for o in handled),
            converted=tuple(o.row.video_id for o in new),
            skipped=tuple(o.row.video_id for o in handled if o.action == "skipped"),
            failed=tuple(o.row for o in handled if o.action == "failed"),
            bytes_in=sum(o.bytes_in for o in new),
            bytes_out=sum(o.row.bytes or 0 for o in new),
            frames=sum(o.frames for o in new),
            seconds=time.perf_counter() - self.started,
            unfinished=tuple(vid for vid, o in found if o is None),
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
    disk is full (or, for an OUTPUT URL, the bucket fails); raises RuntimeError when run by a
    local pool whose driver has died.
    """
    prepare_task_process()
    # a bucket's containers, and the inputs of an INPUT URL, go through a staging folder
    roots = [shard.output, *(job.root for job in shard.jobs)]
    with shard_staging(any(r.local_file() is None for r in roots)) as stage:
        prior = read_part(shard.output / shard.part)  # what a previous run of this shard recorded
        done: dict[str, Outcome] = {}
        for job in shard.jobs:
            if parent_gone():
                raise RuntimeError(
                    "the driver of this conversion is gone; no new container started"
                )
            vid = job.item.video_id
            old = prior.get(vid)
            if old is not None and (old.action == "failed" or has_container(job)):
                done[vid] = old
                continue
            try:
                done[vid] = run_job(job, stage)
                # the part, atomically, after each video
                (shard.output / shard.part).write_bytes(part_bytes(done.values()))
            except Exception as e:
                why = shard_stops(e, shard.output)
                if why is None:
                    raise
                done.pop(vid, None)  # its container may be in place, but no part row says so
                return ShardResult(shard.index, tuple(done.values()), stopped=why)
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
