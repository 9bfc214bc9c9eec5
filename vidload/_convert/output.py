"""Where a conversion writes, as one interface with two implementations: a local folder
(`LocalOutput`) and a bucket prefix (`BucketOutput`), as fsspec's `LocalFileSystem` is just
another `AbstractFileSystem`. The planner and `ConvertPlan` (`vidload.shards`) are written once
against it and never ask which one they hold; `open_output` is the one place that picks.

What an output does for the driver: take and release OUTPUT's lock (`vidload._lock`), record
the options, read the rows already there (the manifest, and the part manifests a killed run
left, merged into it), say whether a container is there (a local stat; one listing of the
bucket), name a job's container, prepare the parts, write `classes.txt` and the manifest, read
the parts back, and finish (the manifest of what finished, then the parts and temporaries
removed).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from vidload._atomic import is_disk_full, write_bytes_atomic
from vidload._convert.inputs import Inputs, check_no_overlap
from vidload._convert.job import Job, Outcome
from vidload._convert.options import ConvertOptions
from vidload._convert.remote import (
    download_manifest,
    fetch,
    is_folder_format,
    publish,
    publish_sidecar,
    read_remote_parts,
    remote_container_exists,
    run_job,
    write_remote_manifest,
)
from vidload._convert.resume import (
    parse_part,
    part_bytes,
    previous_rows,
    read_parts,
    remove_stale_temporaries,
    write_manifest_rows,
)
from vidload._kinds import get_kind
from vidload._layout import (
    CLASSES_NAME,
    FIRST_FRAME_NAME,
    MANIFEST_NAME,
    OPTIONS_NAME,
    PARTS_DIR,
    sidecar_path,
)
from vidload._lock import OutputLock
from vidload._storage import Location
from vidload.errors import DiskFullError, UsageError, VideoReadError
from vidload.labels import write_classes
from vidload.manifest import ManifestRow, keep_extra

__all__ = [
    "BucketOutput",
    "LocalOutput",
    "Output",
    "ShardOutput",
    "open_output",
]

#: Disk space held back for the final manifest (`LocalOutput.prepare`): bytes per video, and
#: bounds.
_RESERVE_PER_VIDEO, _RESERVE_MIN, _RESERVE_MAX = 256, 64 << 10, 64 << 20
_RESERVE_NAME = "reserve"


class Output(ABC):
    """An OUTPUT folder or prefix (module doc). `folder` names it as `ConvertPlan.output` and
    the report do (a local path; for a URL, the URL without credentials as a path)."""

    folder: Path
    #: The OUTPUT as storage (what its readers will open: the heads sidecar's writer reads it)
    location: Location
    _lock: OutputLock | None = None

    @property
    def manifest_path(self) -> Path:
        return self.folder / MANIFEST_NAME

    def report_paths(self) -> tuple[Path, Path]:
        """(output, manifest path) as `ConvertReport` gives them."""
        return self.folder, self.manifest_path

    def lock(self) -> None:
        """Take OUTPUT's lock (one run per output), held until `release`."""
        lock = self._new_lock()
        lock.acquire()
        self._lock = lock

    def release(self) -> None:
        """Release the lock and what the driver kept for the run. Idempotent."""
        if self._lock is not None:
            try:
                self._lock.release()
            finally:
                self._lock = None
                self._released()

    @abstractmethod
    def _new_lock(self) -> OutputLock:
        """OUTPUT's lock, not yet taken."""

    def _released(self) -> None:  # noqa: B027 (a hook: most outputs keep nothing)
        """What to clean up once the lock is released."""

    @abstractmethod
    def record(self, options: ConvertOptions, *, overwrite: bool) -> None:
        """Check the options against those recorded (a resumed run), then record them."""

    def check_local_input(self, input_path: Path, found: Inputs, to: str) -> None:  # noqa: B027
        """UsageError where a container would land on or around a local input
        (`vidload._convert.source.Input.check_output`); a bucket cannot overlap one."""

    def check_url_input(self, source: Location) -> None:  # noqa: B027
        """UsageError where this output overlaps the INPUT URL folder `source`; a local
        folder cannot overlap one."""

    @abstractmethod
    def previous(self, *, overwrite: bool) -> dict[str, ManifestRow]:
        """The rows already on record: the manifest, with what the parts of a killed run
        finished merged into it (and written back), the parts removed."""

    @abstractmethod
    def container(self, video_id: str, to: str, *, keep_extension: bool) -> Path:
        """The container a job writes (`vidload._convert.job.Job.container`)."""

    @abstractmethod
    def exists(self, container: Path, to: str) -> bool:
        """Whether `container` (as `container` names it) is there."""

    @abstractmethod
    def verifies(self, to: str) -> bool:
        """Whether a container there without a row is validated (else converted again)."""

    @property
    @abstractmethod
    def parts(self) -> Path:
        """The parts folder as the shards name their part manifests."""

    @property
    @abstractmethod
    def shard_target(self) -> Location | None:
        """What a shard writes into when not its local paths (`ConvertShard.output`)."""

    @abstractmethod
    def prepare(self, num_items: int) -> None:
        """Make ready for the shards' parts (there are shards to run)."""

    @abstractmethod
    def write_classes(self, class_map: Mapping[str, int]) -> None:
        """Write `classes.txt` beside the manifest."""

    @abstractmethod
    def write_manifest(self, rows: Mapping[str, ManifestRow]) -> None:
        """Write the manifest (a checkpoint: the run goes on)."""

    @abstractmethod
    def outcomes(self) -> dict[str, Outcome]:
        """Every outcome the shards' part manifests hold."""

    @abstractmethod
    def finish(self, rows: Mapping[str, ManifestRow]) -> str | None:
        """Write the final manifest and remove the parts (and temporaries); None when the
        manifest is written, else why not (a full disk: the parts stay for a rerun)."""


def open_output(target: Location) -> Output:
    """The output for OUTPUT `target`: a `LocalOutput` for a local path, else a
    `BucketOutput`. A local folder is made if missing.

    Raises:
        UsageError: a local OUTPUT that exists and is not a folder.
        DiskFullError: no room to make it.
    """
    folder = target.local_file()
    return BucketOutput(target) if folder is None else LocalOutput(folder)


class LocalOutput(Output):
    """A local folder: containers written in place (atomically), a lock file, part manifests
    in `PARTS_DIR` beside a disk reserve for the final manifest."""

    def __init__(self, folder: Path) -> None:
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"OUTPUT ({str(folder)!r}) exists and is not a folder")
        self.folder = folder
        self.location = Location(folder)

    def _new_lock(self) -> OutputLock:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            if is_disk_full(e):
                raise DiskFullError(self.folder) from e
            raise
        return OutputLock(self.location)

    def check_local_input(self, input_path: Path, found: Inputs, to: str) -> None:
        check_no_overlap(input_path, found.base, self.folder, found.items, to, found.full_names)

    def record(self, options: ConvertOptions, *, overwrite: bool) -> None:
        data = options.to_record(self.location, overwrite=overwrite)
        if data is not None:
            write_bytes_atomic(self.folder / OPTIONS_NAME, data)  # a full disk: DiskFullError
        remove_stale_temporaries(self.folder)  # safe: the lock says no other run is writing

    def previous(self, *, overwrite: bool) -> dict[str, ManifestRow]:
        previous = previous_rows(self.manifest_path, overwrite=overwrite)
        parts = self.folder / PARTS_DIR
        if parts.exists():
            if not overwrite:  # a killed run's finished videos: kept in the manifest
                leftover = {o.row.video_id: o.row for o in read_parts(parts).values()}
                if leftover:
                    update = ((v, keep_extra(r, previous.get(v))) for v, r in leftover.items())
                    previous.update(update)
                    self.write_manifest(previous)
            shutil.rmtree(parts)
        return previous

    def container(self, video_id: str, to: str, *, keep_extension: bool) -> Path:
        return get_kind(to).container_path(self.folder, video_id, keep_extension=keep_extension)

    def exists(self, container: Path, to: str) -> bool:
        return get_kind(to).exists(container)

    def verifies(self, to: str) -> bool:
        return True

    @property
    def parts(self) -> Path:
        return self.folder / PARTS_DIR

    @property
    def shard_target(self) -> Location | None:
        return None

    def prepare(self, num_items: int) -> None:
        self.parts.mkdir()
        size = num_items * _RESERVE_PER_VIDEO
        _reserve(self.parts / _RESERVE_NAME, min(_RESERVE_MAX, max(_RESERVE_MIN, size)))

    def write_classes(self, class_map: Mapping[str, int]) -> None:
        write_classes(self.folder / CLASSES_NAME, class_map)

    def write_manifest(self, rows: Mapping[str, ManifestRow]) -> None:
        write_manifest_rows(self.manifest_path, rows)

    def outcomes(self) -> dict[str, Outcome]:
        return read_parts(self.parts)

    def finish(self, rows: Mapping[str, ManifestRow]) -> str | None:
        (self.parts / _RESERVE_NAME).unlink(missing_ok=True)
        try:
            write_manifest_rows(self.manifest_path, rows)
            stopped = None
        except DiskFullError as e:
            stopped = str(e)
        remove_stale_temporaries(self.folder)
        if stopped is None:
            shutil.rmtree(self.parts, ignore_errors=True)
        return stopped


class BucketOutput(Output):
    """A bucket prefix (`vidload._convert.remote`): the lock, options, manifest and parts are
    objects; the driver keeps a local scratch folder for the manifest it uploads; what is
    there is known from one listing when the plan is made."""

    def __init__(self, target: Location) -> None:
        self.target = self.location = target
        self.folder = Path(str(target))
        self._scratch: Path | None = None
        self._present: set[str] | None = None

    def report_paths(self) -> tuple[Path, Path]:
        # the URLs as str, without credentials (a Path would fold "s3://" into "s3:/")
        return str(self.target), str(self.target / MANIFEST_NAME)  # type: ignore[return-value]

    def lock(self) -> None:
        super().lock()
        self._scratch = Path(tempfile.mkdtemp(prefix="vidload-convert-"))

    def _new_lock(self) -> OutputLock:
        return OutputLock(self.target)

    def _released(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def check_url_input(self, source: Location) -> None:
        a, b = source.url.rstrip("/") + "/", self.target.url.rstrip("/") + "/"
        if a.startswith(b) or b.startswith(a):
            raise UsageError(
                f"OUTPUT ({self.target}) and the INPUT folder ({source}) overlap: the "
                "containers would be written among the inputs; choose an OUTPUT outside it"
            )

    def record(self, options: ConvertOptions, *, overwrite: bool) -> None:
        data = options.to_record(self.target, overwrite=overwrite)
        if data is not None:
            (self.target / OPTIONS_NAME).write_bytes(data)  # one object, written whole

    def _scratch_folder(self) -> Path:
        if self._scratch is None:
            raise RuntimeError(f"{self.target}: the output is not locked")
        return self._scratch

    def previous(self, *, overwrite: bool) -> dict[str, ManifestRow]:
        scratch = self._scratch_folder()
        local_manifest = download_manifest(self.target, scratch) or scratch / MANIFEST_NAME
        previous = previous_rows(local_manifest, overwrite=overwrite)
        leftover_parts = read_remote_parts(self.target)
        if leftover_parts:
            if not overwrite:  # a killed run's finished videos: kept in the manifest
                leftover = {
                    vid: o.row
                    for entries in leftover_parts.values()
                    for vid, o in parse_part(entries).items()
                }
                previous.update((v, keep_extra(r, previous.get(v))) for v, r in leftover.items())
                self.write_manifest(previous)
            (self.target / PARTS_DIR).delete(recursive=True)
        return previous

    def container(self, video_id: str, to: str, *, keep_extension: bool) -> Path:
        return get_kind(to).container_path(Path(), video_id, keep_extension=keep_extension)

    def exists(self, container: Path, to: str) -> bool:
        if self._present is None:  # one listing, when the plan first asks
            self._present = set(self.target.walk_files())
        key = container / FIRST_FRAME_NAME if is_folder_format(to) else container
        return key.as_posix() in self._present

    def verifies(self, to: str) -> bool:
        return not is_folder_format(to)

    @property
    def parts(self) -> Path:
        return Path(PARTS_DIR)

    @property
    def shard_target(self) -> Location | None:
        return self.target

    def prepare(self, num_items: int) -> None:
        pass  # the parts are objects: nothing to make, no disk to hold back

    def write_classes(self, class_map: Mapping[str, int]) -> None:
        scratch = self._scratch_folder()
        write_classes(scratch / CLASSES_NAME, class_map)
        (self.target / CLASSES_NAME).put_file(scratch / CLASSES_NAME)

    def write_manifest(self, rows: Mapping[str, ManifestRow]) -> None:
        write_remote_manifest(self.target, rows, self._scratch_folder())

    def outcomes(self) -> dict[str, Outcome]:
        outcomes: dict[str, Outcome] = {}
        for entries in read_remote_parts(self.target).values():
            outcomes.update(parse_part(entries))
        return outcomes

    def finish(self, rows: Mapping[str, ManifestRow]) -> str | None:
        self.write_manifest(rows)  # an upload that fails raises: the parts stay
        (self.target / PARTS_DIR).delete(recursive=True)
        return None


# --------------------------------------------------------------------------- the shard side


class ShardOutput:
    """What one shard writes into (`vidload.shards.convert_shard`), written once against its
    `Location`: its part manifest (rewritten whole after each video by `Location.write_bytes`:
    atomic on a disk, one PUT in a bucket; a part that cannot be read is another run's
    garbage), whether a job's container is there, and one job run into place.

    `output` is `ConvertShard.output`: None where OUTPUT is a local folder (the jobs'
    containers and parts are then its paths, and a container is written in place, committed
    by an atomic rename), else a bucket prefix, which has no atomic rename: each container is
    written in the shard's staging folder, uploaded once complete, then deleted there. A
    failed upload stops the shard: it is the bucket's fault, not the video's.
    """

    def __init__(self, output: Location | None) -> None:
        self.target = output
        #: Whether its containers are written in the shard's staging folder first (then moved).
        self.stages = output is not None

    def _at(self, rel: Path) -> Location:
        return Location(rel) if self.target is None else self.target / rel.as_posix()

    def read_part(self, part: Path) -> dict[str, Outcome]:
        """The outcomes a previous run of this shard recorded ({} when none)."""
        try:
            return parse_part(json.loads(self._at(part).read_bytes()))
        except (VideoReadError, ValueError):
            return {}

    def write_part(self, part: Path, outcomes: Iterable[Outcome]) -> None:
        """Record the shard's outcomes so far (atomically: a kill leaves the last one)."""
        self._at(part).write_bytes(part_bytes(outcomes))

    def has_container(self, job: Job) -> bool:
        """Whether `job`'s container is in place."""
        if self.target is None:
            return get_kind(job.options.to).exists(job.container)
        return remote_container_exists(self._at(job.container), job.options.to)

    def run(self, job: Job, stage: Path | None, *, overwrite: bool) -> Outcome:
        """Convert (or verify) `job` and put its container in place."""
        if self.target is None:
            return run_job(replace(job, verify=not overwrite and self.has_container(job)), stage)
        assert stage is not None  # convert_shard stages every bucket shard
        to, remote = job.options.to, self._at(job.container)
        local = stage / job.container
        local.parent.mkdir(parents=True, exist_ok=True)
        try:
            # the plan listed the bucket: a container that appeared since (a duplicate of this
            # task) is converted again and replaced whole, which costs no reader
            verify = job.verify and not overwrite and not is_folder_format(to)
            if verify:
                fetch(remote, local)
            outcome = run_job(replace(job, container=local, verify=verify), stage)
            if outcome.action == "converted":
                publish(local, remote, to)
            elif outcome.action == "skipped" and sidecar_path(local).exists():
                publish_sidecar(local, remote)  # the verified container had none
            if outcome.row.error:
                row = replace(outcome.row, error=outcome.row.error.replace(str(local), str(remote)))
                outcome = replace(outcome, row=row)
            return outcome
        finally:
            for p in (local, sidecar_path(local)):
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)

    def stops(self, e: Exception) -> str | None:
        """Why an error writing into this output stops the shard (None: it does not): an
        error of the bucket (an upload, a part, a check)."""
        if self.target is not None and isinstance(e, VideoReadError):
            return f"writing into {self.target}: {e}"
        return None


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
