"""Writing the HDF5 container `Hdf5Source` reads (`vidload.sources.hdf5` re-exports
`write_hdf5`): the layout is defined here, by the writer (`FORMAT_VERSION`, `LAYOUT`), and
the reader checks files against it.

Apart from the reader because writing is a different job with its own hazards: HDF5 must never
write the frame bytes itself (a full disk would leave it unable to close the file), so it only
lays out the structure and plain `os.pwrite` fills in the frames (`_write_structure` says why).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import h5py
import numpy as np

from vidload._atomic import temp_path
from vidload.sources._spill import BLOCK_BYTES, spilled_container

__all__ = ["FORMAT_VERSION", "LAYOUT", "write_hdf5"]

FORMAT_VERSION = 1
LAYOUT = "jpeg-concat-offsets"


#: Room kept free while HDF5 writes a new file's metadata (a few KiB; see `_write_structure`).
_METADATA_RESERVE = 256 << 10


def _write_structure(
    tmp: Path, total: int, offsets: np.ndarray, attrs: Mapping[str, object]
) -> int:
    """Create `tmp` as an HDF5 file with a contiguous `frames` dataset of `total` bytes whose
    space is allocated but not written, `offsets` and the attributes; return the byte offset of
    `frames` in the file, where `_write_frame_bytes` then writes the frames.

    Why not let h5py write the frames: when the disk fills up while HDF5 is writing, HDF5
    cannot close the file (H5Fclose fails with ENOSPC and leaves its objects half-closed), and
    the process then crashes at exit, in HDF5's own clean-up. So HDF5 only writes the small
    metadata, with `_METADATA_RESERVE` bytes reserved beforehand (a full disk fails here, before
    HDF5 is involved) and released just before; the frame bytes go through plain os.pwrite,
    whose ENOSPC is an ordinary OSError. (Building the whole file in memory with HDF5's core
    driver also keeps HDF5 away from the disk, but holds every frame in memory: an hour of
    1080p is gigabytes per worker.)
    """
    reserve = temp_path(tmp)
    fd = os.open(reserve, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.posix_fallocate(fd, 0, _METADATA_RESERVE)
    except BaseException:
        os.close(fd)
        os.unlink(reserve)
        raise
    try:
        with h5py.File(tmp, "w") as f:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.CONTIGUOUS)
            dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
            dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
            dcpl.set_obj_track_times(False)  # as h5py does: equal inputs give equal files
            space = h5py.h5s.create_simple((total,))
            dsid = h5py.h5d.create(f.id, b"frames", h5py.h5t.NATIVE_UINT8, space, dcpl=dcpl)
            offset = dsid.get_offset()
            dsid.close()
            f.create_dataset("offsets", data=offsets)
            for key, value in attrs.items():
                f.attrs[key] = value
            os.close(fd)  # release the reserve: HDF5 writes its metadata when it closes
            fd = -1
            os.unlink(reserve)
    finally:
        if fd >= 0:
            os.close(fd)
            os.unlink(reserve)
    if offset is None:
        raise RuntimeError(f"{tmp}: HDF5 did not allocate the frames dataset")
    return int(offset)


def _write_frame_bytes(tmp: Path, offset: int, spill) -> None:
    """Copy the spilled frames into `tmp` at `offset`, in blocks of `BLOCK_BYTES`."""
    fd = os.open(tmp, os.O_WRONLY)
    try:
        block = np.empty(min(spill.total, BLOCK_BYTES), np.uint8)
        for start in range(0, spill.total, BLOCK_BYTES):
            chunk = block[: min(BLOCK_BYTES, spill.total - start)]
            spill.read_into(chunk)
            view = chunk.data.cast("B")
            done = 0
            while done < len(view):
                done += os.pwrite(fd, view[done:], offset + start + done)
    finally:
        os.close(fd)


_COMPUTED_ATTRS = frozenset({"num_frames", "width", "height", "format_version", "layout"})


def write_hdf5(
    path: str | os.PathLike[str],
    frames: Sequence[bytes] | Iterable[bytes],
    *,
    attrs: Mapping[str, object] | None = None,
) -> int:
    """Write encoded JPEG frames to one HDF5 file, atomically and durably (`vidload._atomic`).

    Args:
        path: the `.h5` file to write; an existing file is replaced, parent folders are made.
        frames: complete JPEGs (SOI ... EOI), all of one size.
        attrs: stored as root attributes (e.g. `fps`, `source`); values must be str, int,
            float or bool, and None values are left out. `num_frames`, `width`, `height`,
            `format_version` and `layout` are computed from the frames; giving one that
            disagrees raises ValueError.

    Returns:
        the number of frames written (>= 1).

    Memory does not grow with the number of frames: they are consumed one at a time, spilled
    to an anonymous temporary file beside `path` (`sources._spill`), then copied into the
    dataset's space in blocks of 8 MiB (`_write_structure` says why by os.pwrite).
    """
    path = Path(path)
    extra: dict[str, object] = {}
    for key, value in (attrs or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"attrs keys must be str, got {key!r}")
        if key in _COMPUTED_ATTRS or value is None:
            continue  # computed ones are checked against the frames below
        if not isinstance(value, (str, int, float, bool, np.integer, np.floating, np.bool_)):
            raise TypeError(
                f"attrs[{key!r}] must be str, int, float or bool, got {type(value).__name__}"
            )
        extra[key] = value
    with spilled_container(path, frames, one_size=True) as (tmp, spill):
        n = len(spill.lengths)
        height, width = spill.size
        computed: dict[str, object] = {
            "num_frames": n,
            "width": width,
            "height": height,
            "format_version": FORMAT_VERSION,
            "layout": LAYOUT,
        }
        for key, value in (attrs or {}).items():
            if key in computed and value != computed[key]:
                raise ValueError(
                    f"attrs[{key!r}] ({value!r}) disagrees with the frames ({computed[key]!r})"
                )
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(np.frombuffer(spill.lengths, np.int64), out=offsets[1:])
        offset = _write_structure(tmp, spill.total, offsets, {**computed, **extra})
        _write_frame_bytes(tmp, offset, spill)
    return n
