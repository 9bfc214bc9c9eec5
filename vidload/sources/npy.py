"""One padded npy file per video: `root/<id>.npy` holding the encoded JPEG bytes of every frame.

Layout: a plain 2-D uint8 npy array of shape (num_frames, 4 + longest encoded frame), C order,
loadable with `numpy.load`. Row i is frame i:

    bytes [0, 4)        little-endian uint32 length L of frame i's JPEG
    bytes [4, 4 + L)    the JPEG, exactly as written
    bytes [4 + L, ...)  zero padding

The length prefix makes the stored bytes recoverable exactly: "last non-zero byte + 1" would
drop a JPEG's own trailing zero bytes, and would force reading all of a row's padding. Plain
numpy: `a = np.load(p); n = int(a[i, :4].view("<u4")[0]); jpeg = a[i, 4 : 4 + n].tobytes()`.

Read modes, the bytes of 8 random frames of a 300-frame 340x256 video (q95, ~30 KB a frame,
9.8 MB file, warm page cache; CPU time per clip on the shared 2-core machine; `python
tools/read_paths.py --only npy` reproduces them):

    "mmap": map the file, decode straight from the mapped rows   74 us   (default)
    "read": one sequential read of the whole file per clip      245 us
    (np.load(mmap_mode="r") per clip: 121 us; np.load of the whole file: 464 us)

against 2,100-3,100 us to decode the 8 frames (`--only decode`). "read" suits storage where one
big read beats several small ones (some network filesystems). No file handle or map is kept
between calls, so nothing crosses a DataLoader fork; the parsed npy header is cached per process
and re-parsed when the file's inode, size or mtime changes.

Counts: `reported_frames` and `actual_frames` are both the number of rows (the writer stores
exactly the frames it was given); a file whose size disagrees with its header is corrupt and
raises `VideoReadError`.
"""

from __future__ import annotations

import io
import mmap
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vidload._checks import check_choice
from vidload._lru import ProcessLRU
from vidload._storage import Location, SourceRoot
from vidload._storage.batch import Request
from vidload.errors import VideoReadError
from vidload.sources._docs import shared_docs
from vidload.sources._heads import HeadRecord
from vidload.sources._heads_file import read_array_header
from vidload.sources._spill import BLOCK_BYTES, spilled_container
from vidload.sources.base import (
    Indices,
    as_index_array,
    open_regular,
)
from vidload.sources.encoded import ContainerSource, EncodedFrames, distinct_frames, read_spans

__all__ = ["NpySource", "read_npy_frame_bytes", "write_npy"]

LENGTH_BYTES = 4
_HEADER_CACHE_SIZE = 4096
#: First request for an object's header: numpy's headers are 128 bytes (64-byte aligned).
_HEAD_BYTES = 4096


def _header_bytes(head: bytes) -> int:
    """The length of the npy magic + header that `head` starts (0 when it is not npy)."""
    if len(head) < 12 or head[:6] != b"\x93NUMPY":
        return 0
    if head[6] == 1:
        return 10 + int.from_bytes(head[8:10], "little")
    return 12 + int.from_bytes(head[8:12], "little")


@dataclass(frozen=True)
class _Header:
    """An npy file's head (`ContainerSource._head`): its rows are its frames, counted and
    reported alike; no frame rate."""

    stamp: tuple[int, int, int]  # (st_ino, st_size, st_mtime_ns) of the file it was read from
    data_offset: int
    rows: int
    cols: int
    fps = None

    @property
    def actual(self) -> int:
        return self.rows

    reported = actual

    def spans(self, frames: np.ndarray) -> list[tuple[int, int]]:
        """The [start, stop) of the rows `frames` in the file."""
        base, cols = self.data_offset, self.cols
        return [(base + i * cols, base + (i + 1) * cols) for i in frames.tolist()]


#: The header numpy (and so `write_npy`) writes for a 2-D uint8 array, matched without `ast`.
_HEADER_RE = re.compile(
    r"\{'descr': '[|<>=]?u1', 'fortran_order': (False|True), 'shape': \((\d+), (\d+)\), \} *\n?"
)


def _read_header(path: str, f, stamp: tuple[int, int, int], noun: str) -> _Header:
    """The header of a 2-D C-order uint8 npy file (or object: `noun`) of `stamp[1]` bytes,
    checked against that size (an empty or truncated file is a VideoReadError naming it).

    The header numpy writes for such an array is matched by `_HEADER_RE`. numpy's parser
    (`ast.literal_eval`) is the fallback for any other header, one thread at a time
    (`_heads_file.read_array_header`).
    """
    if stamp[1] == 0:
        raise VideoReadError(path, "empty file (0 bytes)")
    try:
        version = np.lib.format.read_magic(f)
        start = f.tell()
        size_bytes = 2 if version == (1, 0) else 4
        match = None
        raw = f.read(size_bytes)
        if len(raw) == size_bytes:
            length = int.from_bytes(raw, "little")
            text = f.read(length).decode("utf8" if version == (3, 0) else "latin1")
            match = _HEADER_RE.fullmatch(text) if len(text) == length else None
            if match is not None:
                shape: tuple[int, ...] = (int(match[2]), int(match[3]))
                fortran, dtype = match[1] == "True", np.dtype(np.uint8)
        if match is None:
            f.seek(start)
            shape, fortran, dtype = read_array_header(f, version)
    except Exception as e:  # numpy's header parser: ValueError, SyntaxError, TokenError, ...
        raise VideoReadError(path, f"not a valid npy file: {type(e).__name__}: {e}") from e
    if dtype != np.uint8 or len(shape) != 2 or fortran:
        raise VideoReadError(
            path,
            f"not a vidload npy file: needs a 2-D C-order uint8 array, got {dtype} {shape}"
            f"{' (Fortran order)' if fortran else ''}",
        )
    rows, cols = shape
    if rows and cols <= LENGTH_BYTES:
        raise VideoReadError(path, f"rows of {cols} bytes cannot hold a length and a JPEG")
    offset = f.tell()
    if stamp[1] != offset + rows * cols:
        raise VideoReadError(
            path,
            f"{noun} has {stamp[1]} bytes but its header ({rows} x {cols}) "
            f"needs {offset + rows * cols}: truncated or corrupt",
        )
    return _Header(stamp, offset, rows, cols)


@shared_docs
class NpySource(ContainerSource):
    """Frames stored as length-prefixed JPEG rows in one npy file per video (`root/<id>.npy`).

    Args:
        root: folder of `.npy` files, or a URL (`s3://bucket/k400_npy`); a video id's
            extension is replaced by `.npy`.
        mode: "mmap" maps the file and decodes the needed rows where they are mapped (default,
            fastest measured); "read" reads the whole file sequentially on every call. In a
            bucket "mmap" reads the needed rows as byte ranges, "read" the whole object.
        <<decode_size>>
        <<fps>>
            None raises instead.
        <<storage>>

    In a bucket a video costs a size request and one for its header when a process first
    reads it (kept per process), then one round of concurrent range requests per clip, one
    per row (adjacent rows coalesced).

    `read` returns uint8 (k, H, W, 3) RGB. Picklable: holds the root and mode only.
    """

    suffix = ".npy"

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        mode: Literal["mmap", "read"] = "mmap",
        decode_size: tuple[int, int] | None = None,
        fps: float | None = None,
        storage_options: Mapping[str, Any] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_max_bytes: int | None = None,
    ) -> None:
        store = SourceRoot(root, storage_options, cache_dir, cache_max_bytes)
        super().__init__(store, decode_size=decode_size, fps=fps)
        self._heads: ProcessLRU[str, _Header] = ProcessLRU(_HEADER_CACHE_SIZE)
        self.mode: Literal["mmap", "read"] = check_choice("mode", mode, ("mmap", "read"))

    def __repr__(self) -> str:
        return f"NpySource({str(self.root)!r}, mode={self.mode!r})"

    def _read_ahead(self, video_id: str, idx: np.ndarray) -> list[Request]:
        """In "mmap" mode the header and each wanted row (`_plan`); in "read" mode the whole
        file, which that mode reads per clip."""
        location = self._container(video_id)
        if self.mode == "read":
            return [(location, None)]
        header = self._head(video_id)
        return [(location, [(0, header.data_offset)]), *self._plan(video_id, idx, header)]

    def _open(self, path: str | Path) -> tuple[int, _Header]:
        """An open file descriptor and the validated header of `path` (caller closes the fd)."""
        fd, st = open_regular(path)
        try:
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
            key = str(path)  # `SourceRoot.handle_key` of a local root's
            header = self._heads.get(key)
            if header is None or header.stamp != stamp:
                with os.fdopen(os.dup(fd), "rb") as f:
                    header = _read_header(key, f, stamp, "file")
                self._heads.put(key, header)
            return fd, header
        except BaseException:
            os.close(fd)
            raise

    def _head(self, video_id: str) -> _Header:
        """The header, kept per object in a bucket; a local file's (`_open_head`) checked
        against the file on every call."""
        if self.store.reads_wait:
            return super()._head(video_id)
        return self._open_container(video_id, self._open_head)

    def _open_head(self, location: Location) -> _Header:
        """The validated header of a local file (`local_file()`), or of an object (its size
        and its first bytes, in one round)."""
        path = location.local_file()
        if path is None:
            return _read_remote_header(location)
        fd, header = self._open(path)
        os.close(fd)
        return header

    heads_kind = "npy"

    def _head_fields(self, video_id: str) -> tuple[dict, dict, np.ndarray | None] | None:
        header = self._head(video_id)
        ints = {"data_offset": header.data_offset, "rows": header.rows, "cols": header.cols}
        return ints, {}, None

    def _head_of_record(self, location: Location, record: HeadRecord) -> _Header | None:
        f = record.ints
        if not {"data_offset", "rows", "cols"} <= f.keys():
            return None
        return _Header((0, record.size, 0), f["data_offset"], f["rows"], f["cols"])

    def _plan(self, video_id: str, idx: np.ndarray, head: _Header | None) -> list[Request]:
        """Each wanted row ("mmap"), or the whole file ("read", which that mode reads)."""
        if self.mode == "mmap":
            return super()._plan(video_id, idx, head)
        h = head or self._heads.get(self.store.handle_key(video_id, self.suffix))
        return [] if h is None else [(self._container(video_id), [(0, h.stamp[1])])]

    def read_encoded(self, video_id: str, indices: Indices) -> EncodedFrames:
        """<<read_encoded>>

        Here a VideoReadError names a missing, empty, truncated or corrupt file, or a row whose
        length prefix does not fit it. The buffers are read-only views of the file's rows: of
        its mapping in "mmap" mode, which the views keep alive (nothing is copied, and the
        pages are read as they are decoded); of one whole-file read in "read" mode.
        """
        idx = as_index_array(indices)
        local = self.store.local_container(video_id, self.suffix)
        if local is not None:  # the per-clip path: no `Location` made
            return self._read_rows(local, video_id, idx, *self._open(local))

        def read_at(location: Location) -> EncodedFrames:
            path = location.local_file()
            if path is None:  # kept per object, as `_head` keeps it
                header = self._head_at(self.store.handle_key(video_id, self.suffix), location)
                return self._read_rows(location, video_id, idx, None, header)
            return self._read_rows(os.fspath(path), video_id, idx, *self._open(path))

        return self._open_container(video_id, read_at)

    def _read_rows(
        self, where: str | Location, video_id: str, idx: np.ndarray, fd: int | None, header: _Header
    ) -> EncodedFrames:
        """The rows of `idx` of the local file open at `fd` (closed here), or (`fd` None) of
        the object `where` in a bucket, whose header is `header`."""
        try:
            frames, order = distinct_frames(idx, header.rows, video_id, header.rows)
            if frames.size == 0:
                return EncodedFrames([], frames, order, str(where), 0)
            data, at = self._matrix(fd, where, header, frames)
        finally:
            if fd is not None:
                os.close(fd)
        buffers = _rows_bytes(str(where), data, frames, at)
        if self.mode == "read":
            nbytes = header.data_offset + data.nbytes
        elif fd is None:  # whole rows fetched
            nbytes = data.nbytes
        else:
            nbytes = sum(map(len, buffers)) + LENGTH_BYTES * len(buffers)
        return EncodedFrames(buffers, frames, order, str(where), nbytes)

    def _matrix(
        self, fd: int | None, where: str | Location, header: _Header, frames: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(uint8 matrix of rows, where each of `frames` is among them): the file's whole
        (rows, cols) matrix, a read-only view of a private mapping ("mmap") or of one sequential
        read of the whole file or object ("read"); in a bucket in "mmap" mode, the rows of
        `frames` alone, fetched as concurrent ranges.

        The JPEGs are decoded straight from these rows, without copying them first. A mapping
        is released when the last view of it goes (the file descriptor can be closed at once),
        so nothing outlives the call or crosses a fork."""
        base, rows, cols = header.data_offset, header.rows, header.cols
        size = base + rows * cols
        if fd is None:
            assert not isinstance(where, str)  # an object in a bucket
            if self.mode == "read":
                whole = np.frombuffer(where.read_range(0, size), np.uint8)
                if whole.shape[0] != size:
                    raise VideoReadError(where, "object changed size while being read")
                return whole[base:].reshape(rows, cols), frames
            got = read_spans(where, header.spans(frames), frames.tolist())
            return np.frombuffer(b"".join(got), np.uint8).reshape(-1, cols), np.arange(len(got))
        try:
            if self.mode == "read":
                whole = np.empty(size, np.uint8)
                _read_exact(fd, whole, str(where))
                return whole[base:].reshape(rows, cols), frames
            mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
            matrix = np.frombuffer(mm, np.uint8, count=rows * cols, offset=base)
            return matrix.reshape(rows, cols), frames
        except VideoReadError:
            raise
        except (OSError, ValueError) as e:
            raise VideoReadError(where, f"cannot read the frames: {e}") from e


def _read_remote_header(location: Location) -> _Header:
    """The validated header of an object in a bucket: its size and its first bytes, in one
    round (`Location.read_ends`)."""
    st, head, _ = location.read_ends(_HEAD_BYTES, 0)
    need = _header_bytes(head)
    if need > len(head) and need <= st.size:
        head = location.read_range(0, need)
    return _read_header(str(location), io.BytesIO(head), (0, st.size, 0), "object")


def _read_exact(fd: int, buf: np.ndarray, path: str) -> None:
    """Fill `buf` from the start of file `fd` with sequential reads."""
    view = buf.data.cast("B")
    done = 0
    os.lseek(fd, 0, os.SEEK_SET)
    while done < len(view):
        got = os.readv(fd, [view[done:]])
        if got == 0:
            raise VideoReadError(path, f"file ended after {done} of {len(view)} bytes")
        done += got


def _rows_bytes(
    path: str, data: np.ndarray, frames: np.ndarray, at: np.ndarray
) -> list[np.ndarray]:
    """The JPEGs of `frames` stored in rows `at` of `data` (views), each checked against its
    row's length prefix (read as an int from the bytes: ~20 us a clip less than by numpy)."""
    cols, flat = data.shape[1], data.reshape(-1)  # C-order rows: a view
    room, view, buffers = cols - LENGTH_BYTES, flat.data, []
    for i, row in zip(frames.tolist(), at.tolist(), strict=True):
        start = row * cols + LENGTH_BYTES
        length = int.from_bytes(view[start - LENGTH_BYTES : start], "little")
        if length == 0 or length > room:
            raise VideoReadError(path, f"corrupt row: length prefix {length} not in [1, {room}]", i)
        buffers.append(flat[start : start + length])
    return buffers


def read_npy_frame_bytes(path: str | os.PathLike[str]) -> list[bytes]:
    """Every frame's stored bytes, exactly as written, from a vidload npy file."""
    path = Path(path)
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise VideoReadError(path, f"cannot load the npy file: {e}") from e
    if arr.dtype != np.uint8 or arr.ndim != 2:
        raise VideoReadError(path, f"not a vidload npy file: {arr.dtype} {arr.shape}")
    rows = np.arange(arr.shape[0])
    return [b.tobytes() for b in _rows_bytes(str(path), arr, rows, rows)]


def write_npy(path: str | os.PathLike[str], frames: Sequence[bytes] | Iterable[bytes]) -> int:
    """Write encoded JPEG frames as length-prefixed, zero-padded rows of one npy file, atomically.

    The file is written under a temporary name beside `path`, fsynced and renamed over it when
    complete (an existing file is replaced; parent folders are made). Each frame must be a
    complete JPEG (SOI ... EOI; trailing zero bytes are kept exactly). Returns the number of
    frames (>= 1).

    Memory does not grow with the number of frames: the frames are consumed one at a time and
    spilled to a temporary file beside `path` (finding the longest, which sets the row width,
    in the same pass), then copied into the rows block by block (`spill_frames`).
    """
    path = Path(path)
    with spilled_container(path, frames) as (tmp, spill):
        if max(spill.lengths) >= 2**32:
            raise ValueError(
                f"{path}: a frame of {max(spill.lengths)} bytes exceeds the 4 GiB row limit"
            )
        n, cols = len(spill.lengths), LENGTH_BYTES + max(spill.lengths)
        with open(tmp, "wb") as f:
            # header, then the rows through Python's file object: np.save's `tofile` reports
            # a full disk as "N requested and M written", with no errno to tell it apart
            header = {"descr": "|u1", "fortran_order": False, "shape": (n, cols)}
            np.lib.format.write_array_header_1_0(f, header)
            rows_per_block = max(1, BLOCK_BYTES // cols)
            block = np.empty((min(n, rows_per_block), cols), np.uint8)
            for start in range(0, n, rows_per_block):
                lengths = spill.lengths[start : start + rows_per_block]
                rows = block[: len(lengths)]
                rows.fill(0)
                rows[:, :LENGTH_BYTES] = (
                    np.asarray(lengths, "<u4").view(np.uint8).reshape(-1, LENGTH_BYTES)
                )
                for row, length in zip(rows, lengths, strict=True):
                    spill.read_into(row[LENGTH_BYTES : LENGTH_BYTES + length])
                f.write(rows.data.cast("B"))
    return n
