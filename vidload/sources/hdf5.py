"""One HDF5 file per video: `root/<id>.h5` holding the encoded JPEG bytes of every frame.

Layout (format_version 1), no chunking and no compression (JPEG is already compressed):
- `frames`: uint8 (total_bytes,) -- every frame's JPEG bytes, concatenated in frame order;
- `offsets`: int64 (num_frames + 1,) -- frame i is `frames[offsets[i]:offsets[i + 1]]`;
- root attributes: `num_frames`, `width`, `height`, `format_version`, `layout`, plus what the
  writer was given (`fps`, `source`, ...).

Why this layout: the bytes of 8 random frames of a 300-frame 340x256 video (q95, ~30 KB a
frame; CPU time per clip, h5py 3.16, shared 2-core machine; `python tools/read_paths.py --only
hdf5` reproduces them):

    concatenated bytes + offsets, open per clip          212 us
    vlen bytes (h5py.vlen_dtype(uint8)), open per clip   463 us
    concatenated bytes + offsets, kept open, h5py slices  95 us
    vlen bytes, kept open                                377 us
    this source: kept open, one os.pread a frame          38 us

against 2,100-3,100 us to decode the 8 frames (`--only decode`). So the concatenated layout, read
by `os.pread` where the layout allows (`_opened`), and handles kept open in a small
per-process LRU (`cache_size`, `vidload._lru.ProcessLRU`): a clip usually asks for counts and
then frames of the same file. Handles are opened lazily, dropped (never used) when the process
id changes, so a handle opened before a DataLoader forks is never shared, and are excluded from
pickling.

Counts: `reported_frames` is the `num_frames` attribute; `actual_frames` is the number of frames
in the data (`len(offsets) - 1`). If the two disagree the file is inconsistent and every call
raises `VideoReadError` naming it.

The writer (`write_hdf5`, re-exported here) is `vidload.sources._hdf5_write`, which defines the
layout above.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import h5py
import numpy as np

from vidload._checks import check_int
from vidload._lru import ProcessLRU
from vidload._storage import Location, SourceRoot, open_prefetched
from vidload._storage.batch import Request
from vidload.errors import VideoReadError
from vidload.sources._docs import shared_docs
from vidload.sources._hdf5_write import FORMAT_VERSION, write_hdf5
from vidload.sources._heads import HeadRecord
from vidload.sources.base import (
    Indices,
    as_index_array,
    check_regular_file,
)
from vidload.sources.encoded import ContainerSource, EncodedFrames, distinct_frames, read_spans

__all__ = ["FORMAT_VERSION", "Hdf5Source", "stored_fps", "write_hdf5"]


@dataclass
class _Handle:
    file: h5py.File | None  # None: an object in a bucket, its frames read by ranges
    frames: h5py.Dataset
    offsets: np.ndarray  # int64 (n + 1,)
    reported: int | None
    # Where `frames` starts in the file, when its bytes can be read directly (one contiguous,
    # unfiltered, allocated block and the default sec2 driver): then a frame is one os.pread
    # on HDF5's own file descriptor instead of an h5py slice (see `_opened`).
    data_offset: int | None = None
    # An object in a bucket: where it is; frames are byte ranges of it (`_frame_bytes`).
    location: Location | None = None
    fps: float | None = None  # the file's `fps` attribute (kept for a closed remote file)
    name: str = ""  # the file or object, as errors name it

    @property
    def actual(self) -> int:
        """Frames stored in the file (`len(offsets) - 1`)."""
        return self.offsets.shape[0] - 1

    def spans(self, frames: np.ndarray) -> list[tuple[int, int]] | None:
        """The [start, stop) of `frames` in the file, None where its frames are read through
        h5py (chunked, filtered)."""
        bounds = self._bounds
        return None if bounds is None else [(bounds[i], bounds[i + 1]) for i in frames.tolist()]

    @cached_property
    def _bounds(self) -> list[int] | None:
        """Where each frame starts in the file, and where the last ends: `spans` by list
        look-ups (~10 us a clip less than numpy's fancy indexing), made once per handle."""
        base = self.data_offset
        return None if base is None else (base + self.offsets).tolist()

    @cached_property
    def fd(self) -> int:
        """HDF5's own descriptor of the open local file (asked of h5py once per handle)."""
        assert self.file is not None
        return self.file.id.get_vfd_handle()


def _block_offset(frames: h5py.Dataset) -> int | None:
    """Where `frames` starts in its file when it is one contiguous, unfiltered, allocated
    block; None otherwise (chunked or filtered: read through h5py)."""
    try:
        if frames.chunks is not None or frames.compression is not None:
            return None
        plist = frames.id.get_create_plist()
        if plist.get_layout() != h5py.h5d.CONTIGUOUS or plist.get_nfilters() != 0:
            return None
        offset = frames.id.get_offset()
        if offset is None or frames.id.get_storage_size() != frames.shape[0]:
            return None
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    return int(offset)


def _open_at(location: Location) -> _Handle:
    """Open and validate one video's HDF5 file (`local_file()`; any failure is a
    VideoReadError naming it), or its object in a bucket: its size, then its first and last
    64 KiB in one round of concurrent requests (superblock, object headers, attributes and
    the `offsets` table of a file `write_hdf5` wrote lie there), h5py reading the structure
    from those bytes (`vidload._storage.RangeFile`; any other part it needs costs one more
    range). An object's frame table is kept and the file closed: the frames are read as byte
    ranges. A chunked or filtered `frames` dataset (another writer) keeps the file open, read
    through h5py."""
    path = location.local_file()
    if path is None:
        raw = open_prefetched(location)
        return _opened(str(location), raw, raw.size, location)
    return _opened(os.fspath(path), os.fspath(path), check_regular_file(path).st_size, None)


def _opened(where: str, file: Any, size: int, location: Location | None) -> _Handle:
    """`file` (a local path, or a remote object's `RangeFile`) of `size` bytes opened and
    validated, with where its frame bytes lie when they can be read directly (one contiguous,
    unfiltered, allocated block; in a local file, HDF5's default sec2 driver): then a frame is
    one `os.pread` on HDF5's own file descriptor, or a byte range of the object, instead of an
    h5py slice (selection, type conversion, a new array: 8 frames of an open file took 95 us
    through slices and 38 us by `os.pread`, see the module docstring). Files whose dataset is
    chunked or filtered (written by other tools) are read through h5py.

    h5py reports damaged metadata with whatever its C library met first (OSError, KeyError,
    RuntimeError "Unable to synchronously check link existence", ...): every exception from
    opening and validating becomes a VideoReadError, chained to it.
    """
    if size == 0:
        raise VideoReadError(where, "empty file (0 bytes)")
    try:
        f = h5py.File(file, "r")
    except Exception as e:
        raise VideoReadError(where, f"cannot open as HDF5: {_what(e)}") from e
    try:
        handle = _validate(where, f)
        handle.location = location
        offset = _block_offset(handle.frames) if location or f.driver == "sec2" else None
        if offset is not None:
            if offset + handle.frames.shape[0] > size:
                raise VideoReadError(
                    where,
                    f"truncated: 'frames' needs bytes up to {offset + handle.frames.shape[0]} "
                    f"but the file has {size}",
                )
            handle.data_offset = offset
            if location is not None:  # the frames are byte ranges of the object
                f.close()
                handle.file = None
    except BaseException as e:  # closed; a failure but a VideoReadError becomes one
        f.close()
        if isinstance(e, Exception) and not isinstance(e, VideoReadError):
            raise VideoReadError(where, f"cannot read the HDF5 structure: {_what(e)}") from e
        raise
    return handle


def _what(e: BaseException) -> str:
    """An exception as "Type: message" for a reason (h5py's messages alone can be cryptic)."""
    return f"{type(e).__name__}: {e}"


def _int_attr(path: str, f: h5py.File, name: str) -> int | None:
    """Root attribute `name` as an int (None when absent); anything but one integer is a
    VideoReadError naming the attribute."""
    value = f.attrs.get(name)
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "iu":
        raise VideoReadError(
            path, f"attribute {name!r} must be one integer, is {arr.dtype} {arr.shape}: {value!r}"
        )
    return int(arr)


def _dataset(path: str, f: h5py.File, name: str) -> h5py.Dataset:
    obj = f[name]
    if not isinstance(obj, h5py.Dataset):
        raise VideoReadError(path, f"{name!r} must be a dataset, is a {type(obj).__name__}")
    return obj


def _validate(path: str, f: h5py.File) -> _Handle:
    version = _int_attr(path, f, "format_version")
    if version is not None and version > FORMAT_VERSION:
        raise VideoReadError(
            path, f"format_version {version} is newer than supported ({FORMAT_VERSION})"
        )
    if "frames" not in f or "offsets" not in f:
        raise VideoReadError(
            path,
            f"not a vidload HDF5 file: needs datasets 'frames' and 'offsets', has {list(f)}",
        )
    frames, offsets_ds = _dataset(path, f, "frames"), _dataset(path, f, "offsets")
    if frames.dtype != np.uint8 or frames.ndim != 1:
        raise VideoReadError(path, f"'frames' must be 1-D uint8, is {frames.dtype} {frames.shape}")
    if offsets_ds.ndim != 1 or offsets_ds.dtype.kind not in "iu" or offsets_ds.shape[0] < 1:
        raise VideoReadError(
            path, f"'offsets' must be 1-D integers, is {offsets_ds.dtype} {offsets_ds.shape}"
        )
    offsets = offsets_ds[()].astype(np.int64)
    reported = _int_attr(path, f, "num_frames")
    for name in ("width", "height"):  # checked, not kept: a read needs the frame table alone
        _int_attr(path, f, name)
    if offsets[0] != 0 or offsets[-1] != frames.shape[0] or np.any(np.diff(offsets) <= 0):
        raise VideoReadError(
            path,
            f"corrupt 'offsets': must rise strictly from 0 to the {frames.shape[0]} bytes of "
            f"'frames' (first {offsets[0]}, last {offsets[-1]})",
        )
    actual = offsets.shape[0] - 1
    if reported is not None and reported != actual:
        raise VideoReadError(
            path, f"num_frames attribute says {reported} frames but the data holds {actual}"
        )
    fps_attr = f.attrs.get("fps")
    fps = None if fps_attr is None else float(fps_attr)
    return _Handle(f, frames, offsets, reported, fps=fps, name=path)


def _close_handle(head: _Handle) -> None:
    if head.file is not None:
        head.file.close()


@shared_docs
class Hdf5Source(ContainerSource):
    """Frames stored as JPEG bytes in one HDF5 file per video (`root/<id>.h5`).

    Args:
        root: folder of `.h5` files, or a URL (`s3://bucket/k400_h5`); a video id's
            extension is replaced by `.h5`.
        cache_size: open files kept per process (LRU, >= 0; 0 opens and closes every call).
        <<decode_size>>
        <<fps>>
            None takes the file's `fps` attribute, else raises.
        <<storage>>

    In a bucket a video costs one round of two concurrent requests (its first and last 64
    KiB, whose answers say its size) when a process first reads it (its frame table, kept
    per process like an open file; in a batch, none where the root has the heads sidecar
    convert writes, `vidload.sources._heads`), then one round of concurrent range requests
    per clip (nearby frames coalesced).

    `read` returns uint8 (k, H, W, 3) RGB. Picklable: holds the root; handles are per process
    (`vidload._lru.ProcessLRU`).
    """

    suffix = ".h5"

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        cache_size: int = 32,
        decode_size: tuple[int, int] | None = None,
        fps: float | None = None,
        storage_options: Mapping[str, Any] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_max_bytes: int | None = None,
    ) -> None:
        store = SourceRoot(root, storage_options, cache_dir, cache_max_bytes)
        super().__init__(store, decode_size=decode_size, fps=fps)
        self.cache_size = check_int("cache_size", cache_size, minimum=0)
        self._heads: ProcessLRU[str, _Handle] = ProcessLRU(self.cache_size, _close_handle)

    def __repr__(self) -> str:
        return f"Hdf5Source({str(self.root)!r}, cache_size={self.cache_size})"

    _NO_FPS = "pass fps= (the file has no fps attribute)"

    def _read_ahead(self, video_id: str, idx: np.ndarray) -> list[Request]:
        """The metadata before and after the frame data (superblock, object headers,
        `offsets`: a few KiB) and each wanted frame's bytes (`_plan`); a file whose frames are
        not one plain block (chunked or filtered, read through h5py) is read whole."""
        handle = self._head(video_id)
        location, base = Location(handle.name), handle.data_offset
        if base is None:
            return [(location, None)]
        around = [(0, base), (base + int(handle.offsets[-1]), os.path.getsize(handle.name))]
        return [(location, around), *self._plan(video_id, idx, handle)]

    def close(self) -> None:
        """Close this process's open files (they reopen on the next call)."""
        self._heads.clear()

    # -- a batch in one round (`ContainerSource.prepare`, `fetch_plan`): remote roots only

    _open_head = staticmethod(_open_at)
    _close_head = staticmethod(_close_handle)

    heads_kind = "hdf5"

    def _head_fields(self, video_id: str) -> tuple[dict, dict, np.ndarray | None] | None:
        # opened apart from the cache of handles: `write_heads` runs this in threads
        handle = self._fetch_head(video_id)
        try:
            if handle.data_offset is None:
                return None  # chunked or filtered: read through h5py, nothing to record
            ints = {
                "data_offset": handle.data_offset,
                "reported": -1 if handle.reported is None else handle.reported,
            }
            lengths = np.diff(handle.offsets)
        finally:
            _close_handle(handle)
        if lengths.size and int(lengths.max()) >= 1 << 32:
            return None  # a frame of 4 GiB or more: not in the sidecar's uint32 lengths
        return ints, {"fps": handle.fps}, lengths.astype(np.uint32)

    def _head_of_record(self, location: Location, record: HeadRecord) -> _Handle | None:
        if record.lengths is None or "data_offset" not in record.ints:
            return None
        offsets = np.zeros(record.lengths.size + 1, np.int64)
        np.cumsum(record.lengths, out=offsets[1:])
        reported = record.ints.get("reported", -1)
        return _Handle(
            None,
            None,  # the file is not opened: its frames are byte ranges
            offsets,
            None if reported < 0 else reported,
            record.ints["data_offset"],
            location,
            record.floats.get("fps"),
            str(location),
        )

    def read_encoded(self, video_id: str, indices: Indices) -> EncodedFrames:
        """<<read_encoded>>

        Here a VideoReadError names a missing, empty or inconsistent file, or a frame whose
        bytes cannot be read. One `os.pread` per distinct frame on the open file (through h5py
        for a chunked or filtered `frames` dataset, see `_opened`).
        """
        idx = as_index_array(indices)
        key = self.store.handle_key(video_id, self.suffix)
        handle = self._heads.get(key)
        if handle is not None:  # the per-clip path: a cached handle, no pathlib
            return _read_frames(handle, video_id, idx)
        handle = self._fetch_head(video_id)
        try:
            return _read_frames(handle, video_id, idx)
        finally:  # kept, or closed where the cache keeps none (`cache_size=0`)
            self._keep(key, handle)


def _read_frames(handle: _Handle, video_id: str, idx: np.ndarray) -> EncodedFrames:
    """`read_encoded` on an open handle."""
    actual = handle.actual
    frames, order = distinct_frames(idx, actual, video_id, handle.reported)
    buffers = _frame_bytes(handle, frames)
    return EncodedFrames(buffers, frames, order, handle.name, sum(map(len, buffers)))


def _frame_bytes(handle: _Handle, frames: np.ndarray) -> list:
    """The stored bytes of `frames` (one buffer each), read directly where the layout allows:
    `os.pread` on a local file, concurrent byte ranges of an object in a bucket."""
    path = handle.name  # the file or object, as errors name it
    rows, ranges = frames.tolist(), handle.spans(frames)
    if ranges is None:  # chunked or filtered: through h5py
        buffers = []
        for i in rows:
            try:
                buffers.append(handle.frames[handle.offsets[i] : handle.offsets[i + 1]])
            except Exception as e:  # h5py: OSError, RuntimeError, ... on damaged data
                raise VideoReadError(path, f"cannot read the frame's bytes: {_what(e)}", i) from e
        return buffers
    if handle.location is not None:
        return read_spans(handle.location, ranges, rows)
    fd = handle.fd  # a local file's handle keeps it open
    return [_pread(fd, a, b, path, i) for i, (a, b) in zip(rows, ranges, strict=True)]


def _pread(fd: int, start: int, stop: int, path: str, index: int) -> bytes:
    try:
        data = os.pread(fd, stop - start, start)
    except OSError as e:
        raise VideoReadError(path, f"cannot read the frame's bytes: {e}", index) from e
    if len(data) != stop - start:
        raise VideoReadError(
            path, f"file ended after {len(data)} of the frame's {stop - start} bytes", index
        )
    return data


def stored_fps(path: str | os.PathLike[str]) -> float | None:
    """The `fps` attribute `vidload convert` stores (`vidload probe` reports it), None when
    absent or unreadable (`Hdf5Source` then says why the file cannot be read)."""
    try:
        with h5py.File(path, "r") as f:
            value = f.attrs.get("fps")
        return None if value is None else float(value)
    except Exception:  # h5py raises OSError, RuntimeError, ... on damaged files
        return None
