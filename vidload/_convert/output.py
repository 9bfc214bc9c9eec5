"""Where a conversion writes: one `Output` written against OUTPUT's `Location` (a local folder
or a bucket prefix, as fsspec's `LocalFileSystem` is just another `AbstractFileSystem`). The
planner and `ConvertPlan` (`vidload.shards`) never ask which one they hold, and `Output` asks
its `Location` only where the two truly differ: where OUTPUT has a local folder
(`Location.local_file`) the containers are written in place and stat-ed, a disk reserve is held
for the final manifest and killed writers' temporaries are swept; elsewhere the containers are
staged by the shards and what is there is known from one listing.

What an output does for the driver: hold OUTPUT's lock (`vidload._lock`), record
the options, read the rows already there (the manifest, and the part manifests a killed run
left, merged into it), say whether a container is there, name a job's container, prepare the
parts, write the manifest (one `Location.write_bytes`: atomic and
durable on a disk, one PUT in a bucket), and finish (the manifest of what
finished, then the parts and temporaries removed).
"""

from __future__ import annotations

import json
from collections.abc import Container, Mapping
from dataclasses import asdict, replace
from pathlib import Path

from vidload._atomic import remove_temporary, write_bytes_atomic
from vidload._convert.job import Job, Outcome, convert_job
from vidload._convert.options import ConvertOptions
from vidload._convert.remote import commit_name, fetch, publish, publish_sidecar
from vidload._convert.resume import (
    previous_rows,
    read_parts,
    remove_stale_temporaries,
)
from vidload._kinds import get_kind
from vidload._layout import (
    MANIFEST_NAME,
    OPTIONS_NAME,
    PARTS_DIR,
    sidecar_path,
)
from vidload._lock import OutputLock
from vidload._storage import Location
from vidload.errors import DiskFullError, UsageError, VideoReadError
from vidload.manifest import ManifestRow, keep_extra, render_manifest

__all__ = ["Output", "has_container", "run_job", "shard_stops"]

#: Disk space held back for the final manifest (`Output.prepare`): bytes per video, and bounds.
_RESERVE_PER_VIDEO, _RESERVE_MIN, _RESERVE_MAX = 256, 64 << 10, 64 << 20
_RESERVE_NAME = "reserve"


class Output:
    """OUTPUT (module doc). `folder` names it as `ConvertPlan.output` and the report do (a
    local path; for a URL, the URL without credentials, a str).

    Raises:
        UsageError: a local OUTPUT that exists and is not a folder.
    """

    def __init__(self, target: Location) -> None:
        #: OUTPUT's local folder; None where it has none (the shards then stage containers)
        self._disk = target.local_file()
        #: The OUTPUT as storage (what its readers will open: the heads sidecar's writer reads
        #: it); a local folder's without the storage_options given for an INPUT URL
        self.location = target if self._disk is None else Location(self._disk)
        if self._disk is not None and self._disk.exists() and not self._disk.is_dir():
            raise UsageError(f"OUTPUT ({str(self._disk)!r}) exists and is not a folder")
        #: OUTPUT as `ConvertPlan.output` and the report name it: the local folder, else the
        #: URL, a str without credentials (a Path would fold "s3://" into "s3:/")
        self.folder: Path = self._disk if self._disk is not None else str(target)  # type: ignore[assignment]
        #: OUTPUT's lock (one run per output, `vidload._lock`): taken by the plan, held until
        #: it finishes or closes
        self.lock = OutputLock(self.location)
        self._present: set[str] | None = None

    def shown(self, name: str) -> Path:
        """The file `name` in OUTPUT, named as `folder` is (a Path, or a URL's str)."""
        if self._disk is None:
            return str(self.location / name)  # type: ignore[return-value]
        return self.folder / name

    def record(self, options: ConvertOptions) -> None:
        """Record what says how every video is stored (`to`, `short_side`, the kind's own
        options) in `OPTIONS_NAME`; where a file there (a resumed run) records other options,
        refuse (UsageError) unless `overwrite`. A file written before an option existed means
        its `RECORDED_BEFORE` value (no `subsampling`: "420")."""
        path = self.location / OPTIONS_NAME
        kind_options = asdict(options.format_options())
        recorded = {"to": options.to, "short_side": options.short_side, **kind_options}
        if options.overwrite or not path.exists():
            path.write_bytes((json.dumps(recorded) + "\n").encode())  # a full disk: DiskFullError
        else:
            try:
                old = json.loads(path.read_bytes())
            except (OSError, ValueError, VideoReadError) as e:
                raise ValueError(f"{path}: unreadable ({e}); remove it or pass overwrite") from e
            if isinstance(old, dict):  # what a file written before an option existed means
                old = {**get_kind(options.to).options.RECORDED_BEFORE, **old}
            if old != recorded:
                changed = (
                    f"--{k.replace('_', '-')} {old.get(k)} before, {value} now"
                    for k, value in recorded.items()
                    if old.get(k) != value
                )
                shown = ", ".join(changed) if isinstance(old, dict) else ""
                differ = shown or f"recorded {old}"
                raise UsageError(
                    f"OUTPUT {str(self.location)!r} was converted with other options ({differ}; "
                    f"recorded in {path.name}): use the same options to resume, or --overwrite "
                    f"(overwrite=True) to convert everything again"
                )
        if self._disk is not None:  # safe: the lock says no other run is writing
            remove_stale_temporaries(self._disk)

    def previous(self, planned: Container[str], options: ConvertOptions) -> dict[str, ManifestRow]:
        """The rows already on record: the manifest, with what the parts of a killed run
        finished merged into it (and written back), the parts removed.

        The manifest names every container (its `container` column: the one list of names a
        reader takes, `vidload._layout.ContainerNames`, and the heads sidecar is keyed by): a
        rerun into an output written before the column fills it in without converting
        anything. The videos of this run (`planned`) are named by the plan; a row outside it
        that names no container here is given the name of the one there (the stem's, else the
        full id's: `exists`, a stat or the plan's one listing); one whose container is not
        there names none.
        """
        overwrite, to = options.overwrite, options.to
        previous = previous_rows(self.location / MANIFEST_NAME, overwrite=overwrite)
        parts = self.location / PARTS_DIR
        found = read_parts(parts)
        if found is not None:  # a killed run's parts (a disk's reserve alone stays for `prepare`)
            if found and not overwrite:  # a killed run's finished videos: kept in the manifest
                previous.update((v, keep_extra(o.row, previous.get(v))) for v, o in found.items())
                self.write_manifest(previous)
            parts.delete(recursive=True)
        for vid, row in list(previous.items()):
            if vid in planned or row.container is not None or row.status not in ("ok", "mismatch"):
                continue
            for keep in (False, True):
                name = get_kind(to).container_name(vid, keep_extension=keep)
                if self.exists(name, to):
                    previous[vid] = replace(row, container=name)
                    break
        return previous

    def exists(self, name: str, to: str) -> bool:
        """Whether the container `name` (relative to OUTPUT) is there: a stat on a disk, else
        one listing, when the plan first asks."""
        if self._disk is not None:
            return get_kind(to).exists(self._disk / name)
        if self._present is None:
            self._present = set(self.location.walk_files())
        return commit_name(name, to) in self._present

    def verifies(self, to: str) -> bool:
        """Whether a container there without a row is validated (else converted again): not
        a frame folder in a bucket."""
        return self._disk is not None or not get_kind(to).folder

    def prepare(self, num_items: int) -> None:
        """Make ready for the shards' parts: on a disk, the reserve for the final manifest
        (which makes the parts folder); a bucket's parts are objects, with no disk to hold
        back."""
        if self._disk is not None:
            # bytes held so that the manifest of what finished can still be written when the
            # containers fill the disk (`finish` deletes them first); DiskFullError: no room
            size = min(_RESERVE_MAX, max(_RESERVE_MIN, num_items * _RESERVE_PER_VIDEO))
            write_bytes_atomic(self._disk / PARTS_DIR / _RESERVE_NAME, bytes(size))

    def write_manifest(self, rows: Mapping[str, ManifestRow]) -> None:
        """Write the manifest (a checkpoint: the run goes on); a full disk: DiskFullError."""
        manifest = self.location / MANIFEST_NAME
        manifest.write_bytes(render_manifest([rows[k] for k in sorted(rows)], str(manifest)))

    def finish(self, rows: Mapping[str, ManifestRow]) -> str | None:
        """Write the final manifest and remove the parts (and temporaries); None when the
        manifest is written, else why not (a full disk, the reserve freed first: the parts
        stay for a rerun). A failed upload raises: the parts stay."""
        if self._disk is not None:
            (self._disk / PARTS_DIR / _RESERVE_NAME).unlink(missing_ok=True)
        try:
            self.write_manifest(rows)
            stopped = None
        except DiskFullError as e:
            stopped = str(e)
        if self._disk is not None:
            remove_stale_temporaries(self._disk)
        if stopped is None:
            (self.location / PARTS_DIR).delete(recursive=True)
        return stopped


# --------------------------------------------------------------------------- the shard side


# A job's container is written where `Location.local_file` names it, committed by an atomic
# rename; OUTPUT without a local folder (a bucket prefix) has no atomic rename: there each
# container is written in the shard's staging folder, uploaded once complete, then deleted
# there. A failed upload stops the shard: it is the bucket's fault, not the video's.


def has_container(job: Job) -> bool:
    """Whether `job`'s container is in place."""
    local = job.container.local_file()
    if local is not None:
        return get_kind(job.options.to).exists(local)
    return (job.output / commit_name(job.name, job.options.to)).exists()


def run_job(job: Job, stage: Path | None) -> Outcome:
    """Convert (or verify) `job` and put its container in place (a shard's side of OUTPUT,
    `vidload.shards.convert_shard`)."""
    remote = job.container
    if remote.local_file() is not None:
        return convert_job(
            replace(job, verify=not job.options.overwrite and has_container(job)), stage
        )
    assert stage is not None  # convert_shard stages every bucket shard
    local = stage / "out" / job.name
    local.parent.mkdir(parents=True, exist_ok=True)
    try:
        # the plan listed the bucket (`Output.verifies`): a container that appeared since
        # (a duplicate of this task) is converted again and replaced whole, which costs no
        # reader
        if job.verify:
            fetch(remote, local)
        outcome = convert_job(replace(job, output=Location(stage / "out")), stage)
        if outcome.action == "converted":
            publish(local, remote, job.options.to)
        elif outcome.action == "skipped" and sidecar_path(local).exists():
            publish_sidecar(local, remote)  # the verified container had none
        if outcome.row.error:
            row = replace(outcome.row, error=outcome.row.error.replace(str(local), str(remote)))
            outcome = replace(outcome, row=row)
        return outcome
    finally:
        for p in (local, sidecar_path(local)):
            remove_temporary(p)


def shard_stops(e: Exception, output: Location) -> str | None:
    """Why an error writing into OUTPUT `output` stops the shard (None: it does not): a full
    disk, or an error of the bucket (an upload, a part, a check)."""
    if isinstance(e, DiskFullError):
        return str(e)
    if output.local_file() is None and isinstance(e, VideoReadError):
        return f"writing into {output}: {e}"
    return None
