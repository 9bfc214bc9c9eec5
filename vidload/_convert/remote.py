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
each written whole (one PUT). The output lock is `vidload._lock.OutputLock`.

A run killed before `finish` leaves its lock (taken over by the next run on this host), its
part manifests (`PARTS_DIR/`, read and removed by the next run: they are how it knows which
videos finished) and, for a multipart upload cut short, an incomplete upload the store keeps
out of any listing (an S3 lifecycle rule `AbortIncompleteMultipartUpload` removes those).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from vidload._kinds import get_kind
from vidload._layout import FIRST_FRAME_NAME, TIMESTAMPS_SUFFIX, sidecar_path
from vidload._storage import Location, put_many

__all__ = [
    "commit_name",
    "fetch",
    "publish",
    "publish_sidecar",
    "shard_staging",
]

_STAGING_PREFIX = "vidload-staging-"


@contextlib.contextmanager
def shard_staging(needed: bool) -> Iterator[Path | None]:
    """A fresh local folder for a shard that needs one (a bucket OUTPUT's containers, an INPUT
    URL's copies: module doc), removed at the end; else None. Its name holds the pid, so that
    folders of killed shards on this host are removed here."""
    if not needed:
        yield None
        return
    _remove_dead_staging()
    prefix = f"{_STAGING_PREFIX}{os.getpid()}-"
    with tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True) as path:
        yield Path(path)


def _remove_dead_staging() -> None:
    from vidload._lock import process_alive

    base = Path(tempfile.gettempdir())
    try:
        entries = list(base.glob(f"{_STAGING_PREFIX}*"))
    except OSError:
        return
    for entry in entries:
        pid = entry.name[len(_STAGING_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not process_alive(int(pid), None):
            shutil.rmtree(entry, ignore_errors=True)


def commit_name(name: str, to: str) -> str:
    """What says the container `name` is complete in the bucket (module doc): the object
    itself, or a frame folder's first frame (relative to OUTPUT, as `name`)."""
    return f"{name}/{FIRST_FRAME_NAME}" if get_kind(to).folder else name


def publish(local: Path, remote: Location, to: str) -> None:
    """Upload the finished container `local` (and its timestamps) to `remote`; see the module
    doc for the order that makes a half-uploaded container never look complete."""
    side_local, side_remote = sidecar_path(local), _sidecar(remote)
    folder = get_kind(to).folder
    if folder:
        remote.delete(recursive=True)  # frames of an earlier, unrecorded attempt
        put_many([(local / name, remote / name) for name in sorted(os.listdir(local))])
    if side_local.exists():
        side_remote.put_file(side_local)
    else:
        side_remote.delete()
    if not folder:  # the container last: its existence says the upload is complete
        remote.put_file(local)


def publish_sidecar(local: Path, remote: Location) -> None:
    """Upload the timestamps file of `local` beside `remote`."""
    _sidecar(remote).put_file(sidecar_path(local))


def _sidecar(container: Location) -> Location:
    """The timestamps file beside `container` in the bucket (`vidload._layout.sidecar_path`)."""
    return container.with_name(container.name + TIMESTAMPS_SUFFIX)


def fetch(remote: Location, local: Path) -> None:
    """Download a file container (into an existing folder) and, when there is one, its
    timestamps file."""
    local.write_bytes(remote.read_bytes())
    side = _sidecar(remote).read_optional()
    if side is not None:
        sidecar_path(local).write_bytes(side)
