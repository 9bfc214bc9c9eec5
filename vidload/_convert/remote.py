"""Converting into a bucket: every container is written locally, then uploaded once complete.

An OUTPUT URL (`s3://bucket/k400_h5`) is never written in place. Each shard makes its own
staging folder on the machine it runs on (`staging`: a fresh temporary folder, removed when the
shard ends; one a killed shard left on this host is removed by the next shard here), converts
each video into it exactly as into a local OUTPUT (`vidload._convert.job`, whatever the format),
then `publish`es the finished container and deletes the local copy. So a bucket only ever
holds whole objects, and no temporary object is ever written there:

* a file container (`.h5`, `.npy`, a re-encoded video: any format whose container is one file)
  is one upload, and S3 makes an object visible only once its upload (single or multipart)
  completes: the object's existence is the commit point. Its timestamps file
  (`<container>.timestamps`) is uploaded first, so a container in the bucket always has them.
* a JPEG frame folder is many objects and no store can make them appear at once; there the
  **manifest row is the commit point**: a reader that goes by `manifest.csv` (ClipDataset with
  the manifest, as the docs recommend) sees a video only once all its frames are uploaded. A
  folder with frames but no row (a run killed while uploading it) is never trusted: the next
  run deletes it and converts that video again.

The manifest, the options file, `classes.txt` and the shards' part manifests are single objects,
each written whole (one PUT). The output lock is `vidload._lock.RemoteOutputLock`.

A run killed before `finish` leaves its lock (taken over by the next run on this host), its
part manifests (`PARTS_DIR/`, read and removed by the next run: they are how it knows which
videos finished) and, for a multipart upload cut short, an incomplete upload the store keeps
out of any listing (an S3 lifecycle rule `AbortIncompleteMultipartUpload` removes those).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from vidload._layout import (
    CONTAINER_SUFFIX,
    FIRST_FRAME_NAME,
    MANIFEST_NAME,
    PARTS_DIR,
    sidecar_path,
)
from vidload._storage import Location
from vidload.errors import VideoReadError
from vidload.manifest import ManifestRow, write_manifest

__all__ = [
    "is_folder_format",
    "download_manifest",
    "fetch",
    "publish",
    "publish_sidecar",
    "read_remote_parts",
    "remote_container_exists",
    "staging",
    "write_remote_manifest",
]

_STAGING_PREFIX = "vidload-staging-"


def is_folder_format(to: str) -> bool:
    """Whether a `to` container is a folder of files (JPEG frames) rather than one file."""
    return CONTAINER_SUFFIX.get(to, ".") == ""


@contextlib.contextmanager
def staging() -> Iterator[Path]:
    """A fresh local folder for one shard's containers (module doc), removed at the end.
    Its name holds the pid, so that folders of killed shards on this host are removed here."""
    _remove_dead_staging()
    path = Path(tempfile.mkdtemp(prefix=f"{_STAGING_PREFIX}{os.getpid()}-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _remove_dead_staging() -> None:
    from vidload._lock import _alive

    base = Path(tempfile.gettempdir())
    try:
        entries = list(base.glob(f"{_STAGING_PREFIX}*"))
    except OSError:
        return
    for entry in entries:
        pid = entry.name[len(_STAGING_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid), None):
            shutil.rmtree(entry, ignore_errors=True)


def remote_container_exists(container: Location, to: str) -> bool:
    """Whether `container` is in the bucket: the object, or a folder's first frame."""
    return (container / FIRST_FRAME_NAME if is_folder_format(to) else container).exists()


def publish(local: Path, remote: Location, to: str) -> None:
    """Upload the finished container `local` (and its timestamps) to `remote`; see the module
    doc for the order that makes a half-uploaded container never look complete."""
    side_local, side_remote = sidecar_path(local), remote.with_name(remote.name + ".timestamps")
    if is_folder_format(to):
        remote.delete(recursive=True)  # frames of an earlier, unrecorded attempt
        for name in sorted(os.listdir(local)):
            (remote / name).put_file(local / name)
        if side_local.exists():
            side_remote.put_file(side_local)
        else:
            side_remote.delete()
        return
    if side_local.exists():
        side_remote.put_file(side_local)
    else:
        side_remote.delete()
    remote.put_file(local)


def publish_sidecar(local: Path, remote: Location) -> None:
    """Upload the timestamps file of `local` beside `remote`."""
    remote.with_name(remote.name + ".timestamps").put_file(sidecar_path(local))


def fetch(remote: Location, local: Path) -> None:
    """Download a file container and, when there is one, its timestamps file."""
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_bytes(remote.read_bytes())
    side = remote.with_name(remote.name + ".timestamps")
    try:
        sidecar_path(local).write_bytes(side.read_bytes())
    except VideoReadError as e:
        if e.reason != "not found":
            raise


def download_manifest(out: Location, scratch: Path) -> Path | None:
    """`out/manifest.csv` downloaded into `scratch`; None when there is none."""
    try:
        data = (out / MANIFEST_NAME).read_bytes()
    except VideoReadError as e:
        if e.reason == "not found":
            return None
        raise
    path = scratch / MANIFEST_NAME
    path.write_bytes(data)
    return path


def write_remote_manifest(out: Location, rows: Mapping[str, ManifestRow], scratch: Path) -> None:
    """Write `rows` (sorted by id) as `out/manifest.csv`: locally, then one upload."""
    path = scratch / MANIFEST_NAME
    write_manifest(path, [rows[k] for k in sorted(rows)])
    (out / MANIFEST_NAME).put_file(path)


def read_remote_parts(out: Location) -> dict[str, object]:
    """{name: parsed JSON} of the part manifests under `out/PARTS_DIR` ({} when none)."""
    parts = out / PARTS_DIR
    try:
        names = parts.walk_files()
    except VideoReadError as e:
        if e.reason in ("not found", "folder not found"):
            return {}
        raise
    found: dict[str, object] = {}
    for name in sorted(n for n in names if n.startswith("part-") and n.endswith(".json")):
        try:
            found[name] = json.loads((parts / name).read_bytes())
        except (VideoReadError, ValueError):
            continue  # written whole or not at all: another run's garbage
    return found
