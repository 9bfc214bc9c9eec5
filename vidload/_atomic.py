"""Durable atomic writes: the one home for temporary names, fsync and rename-into-place.

A file written under a temporary name and renamed into place is atomic for readers, but not
durable: after a power loss on a node-local disk the rename can survive while the data blocks
did not, leaving a complete-looking, empty container. So every writer here fsyncs the data
before the rename and the folder after it. What that costs is the disk's: measure it where the
output goes with `python tools/fsync_cost.py DIR` (0.25 ms per 20 KB file, best of 3, on this
project's shared virtio ext4 disk), against ~0.8 ms of CPU to convert a frame (`/usr/bin/time
vidload convert ../shared/videos OUT --to hdf5 --workers 1 -q`: ~0.63 s user+sys for 464 frames,
~0.25 s of that the imports). An HDF5 or npy container is one file a video, so its fsync is
lost in the noise; a JPEG container is a file a frame, so on such a disk its fsyncs add about a
third of the conversion's CPU time in waiting (not CPU).

Temporary names are `.<name>.tmp-<pid>-<8 hex>` beside the target (`TEMP_RE`): hidden, so
folder walks skip them, and recognisable, so the driver of a conversion can remove those a
killed writer left behind.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from vidload.errors import DiskFullError

__all__ = [
    "TEMP_RE",
    "fsync_dir",
    "fsync_file",
    "fsync_tree",
    "is_disk_full",
    "is_temporary",
    "remove_temporary",
    "replace_durably",
    "replace_folder_durably",
    "temp_path",
    "write_bytes_atomic",
    "writing",
]

#: Temporary names of `temp_path` (`tmp`) and of folders moved aside before removal (`old`).
TEMP_RE = re.compile(r"^\..+\.(tmp|old)-\d+-[0-9a-f]{8}$")
#: The temporary names `vidload.manifest.write_manifest` used before it wrote through
#: `write_bytes_atomic` (`tempfile.mkstemp`'s `.manifest.csv.<random>.tmp`): a run killed by an
#: older vidload may have left one in an output folder that a new run resumes.
_LEGACY_MANIFEST_TEMP_RE = re.compile(r"^\.manifest\.csv\..+\.tmp$")

#: errno values meaning the file system has no room for what is being written.
_FULL = {errno.ENOSPC, errno.EDQUOT}


def temp_path(path: str | os.PathLike[str], kind: str = "tmp") -> Path:
    """A fresh temporary name beside `path`: `.<name>.<kind>-<pid>-<8 hex>`."""
    path = Path(path)
    return path.with_name(f".{path.name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def fsync_file(path: str | os.PathLike[str]) -> None:
    """Flush a written file's data and metadata to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (names created, renamed or removed in it) to disk.

    Some file systems refuse fsync on a folder (EINVAL, EBADF); there the entries are as durable
    as the file system makes them and nothing more can be done, so that error is ignored."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def fsync_tree(path: str | os.PathLike[str]) -> None:
    """fsync every file directly in folder `path`, then the folder itself."""
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False):
                fsync_file(entry.path)
    fsync_dir(path)


def replace_durably(tmp: str | os.PathLike[str], path: str | os.PathLike[str]) -> None:
    """Rename the written file `tmp` over `path` durably: fsync it, rename, fsync the folder."""
    fsync_file(tmp)
    os.replace(tmp, path)
    fsync_dir(Path(path).parent)


@contextmanager
def writing(
    path: str | os.PathLike[str], *, folder: bool = False, exclusive: bool = False
) -> Iterator[Path]:
    """A temporary name beside `path` (its parent folders made) to write one file (or, with
    `folder`, one folder, made here) at: renamed over `path` durably (`replace_durably`,
    `replace_folder_durably`) when the block completes, removed where it fails, so nothing but
    a complete file or folder is ever at `path`. `exclusive` (a file): hard-linked into place
    instead, which raises FileExistsError where something is at `path` (the lock,
    `vidload._lock`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        if folder:
            tmp.mkdir()
        yield tmp
        if exclusive:
            fsync_file(tmp)
            os.link(tmp, path)
            tmp.unlink()
            fsync_dir(path.parent)
        else:
            (replace_folder_durably if folder else replace_durably)(tmp, path)
    except BaseException:
        remove_temporary(tmp)
        raise


def replace_folder_durably(tmp: str | os.PathLike[str], path: str | os.PathLike[str]) -> None:
    """Rename the written folder `tmp` over `path` durably: fsync its files and itself, rename
    (an existing folder at `path` is moved aside to a temporary name first, and removed once
    `tmp` is in place; put back if that rename fails), fsync the parent folder."""
    tmp, path = Path(tmp), Path(path)
    fsync_tree(tmp)
    try:
        os.replace(tmp, path)
    except OSError:
        if not path.is_dir():
            raise
        old = temp_path(path, "old")
        os.replace(path, old)
        try:
            os.replace(tmp, path)
        except BaseException:
            os.replace(old, path)
            raise
        shutil.rmtree(old, ignore_errors=True)
    fsync_dir(path.parent)


def write_bytes_atomic(
    path: str | os.PathLike[str], data: bytes, *, exclusive: bool = False
) -> bool:
    """Write `data` to `path` atomically and durably (`writing`: its parent folders made); the
    temporary is removed on any failure, so nothing but the complete file is ever left. A full
    disk raises DiskFullError naming `path`. `exclusive`: only where nothing is at `path` yet
    (`writing`'s hard link); False when something was. Returns True when written."""
    try:
        with writing(path, exclusive=exclusive) as tmp, open(tmp, "wb") as f:
            f.write(data)
    except FileExistsError:
        if not exclusive:  # a file where a parent folder should be
            raise
        return False
    except BaseException as e:
        if is_disk_full(e):
            raise DiskFullError(path) from e
        raise
    return True


def is_temporary(name: str) -> bool:
    """True for the name of a temporary file or folder a vidload writer makes (`TEMP_RE`, and
    an older `write_manifest`'s): what a killed writer leaves behind."""
    return bool(TEMP_RE.match(name) or _LEGACY_MANIFEST_TEMP_RE.match(name))


def is_disk_full(e: BaseException) -> bool:
    """True when `e` (or an error it was raised from) says the disk or quota is full."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, DiskFullError) or (isinstance(e, OSError) and e.errno in _FULL):
            return True
        text = str(e)
        if "No space left on device" in text or "errno = 28" in text:
            return True  # h5py reports HDF5's write errors with the errno only in the text
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return False


def remove_temporary(path: str | os.PathLike[str]) -> None:
    """Remove a temporary file or folder, ignoring one already gone."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
