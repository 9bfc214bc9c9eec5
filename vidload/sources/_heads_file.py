"""The arrays of an uncompressed `.npz` in a local file, read by rows: what a process holds of
a sidecar of heads is the rows it asked for.

A sidecar of heads (`vidload.sources._heads`) for Kinetics-700 is hundreds of MB; each of a
machine's processes (ranks, DataLoader workers) reading it whole would hold its own copy, and
each worker mapping it would count the pages it touched as its own (a worker's USS: a page of
a file mapped by one process only is private to it). So the file, written by `numpy.savez`'s
layout with every member stored (not deflated), is read where it lies: the zip's directory
tells where each member's `.npy` starts, its header the dtype and shape, and a row is one
`os.pread` at its offset (thread-safe, and safe across a fork: no shared file position). The
page cache holds the file once for the whole machine; a process keeps an open descriptor and
the few small members it reads whole.

`StoredArrays(path)` raises ValueError for a file that is not such an `.npz` (a deflated
member, an object dtype, a Fortran-ordered array, a truncated file), OSError where it cannot
be read; `LoadedArrays` offers the same reads over arrays in memory (a sidecar of format 1, or
where `os.pread` does not exist).
"""

from __future__ import annotations

import os
import struct
import threading
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["LoadedArrays", "StoredArrays", "read_array_header"]

_LOCAL_HEADER = struct.Struct("<I22xHH")  # signature, ..., name length, extra length
_LOCAL_SIGNATURE = 0x04034B50


class LoadedArrays:
    """Named arrays in memory, read as `StoredArrays` reads them."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self._arrays = dict(arrays)

    def __contains__(self, name: object) -> bool:
        return name in self._arrays

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._arrays[name].shape)

    def whole(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of the array `name` (along its first axis)."""
        return self._arrays[name][start:stop]

    def close(self) -> None:
        self._arrays.clear()


class StoredArrays(LoadedArrays):
    """The members of the stored `.npz` at `path`, each read by rows (module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__({})
        self.path = Path(path)
        self._columns: dict[str, tuple[int, np.dtype, tuple[int, ...]]] = {}
        self._fd = -1
        with open(self.path, "rb") as f, zipfile.ZipFile(f) as z:
            for info in z.infolist():
                if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
                    raise ValueError(f"{info.filename}: not a stored .npy member")
                f.seek(info.header_offset)
                sig, n_name, n_extra = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
                if sig != _LOCAL_SIGNATURE:
                    raise ValueError(f"{info.filename}: no local header where the zip says")
                f.seek(info.header_offset + _LOCAL_HEADER.size + n_name + n_extra)
                version = np.lib.format.read_magic(f)
                if version not in ((1, 0), (2, 0)):
                    raise ValueError(f"{info.filename}: .npy format {version} not read")
                shape, fortran, dtype = read_array_header(f, version)
                if fortran or dtype.hasobject:
                    raise ValueError(f"{info.filename}: a Fortran-ordered or object array")
                data_at = f.tell()
                header = data_at - info.header_offset - _LOCAL_HEADER.size - n_name - n_extra
                if _nbytes(dtype, shape) != info.file_size - header:
                    raise ValueError(f"{info.filename}: its size is not its header's")
                self._columns[info.filename[:-4]] = (data_at, dtype, tuple(shape))
        end = max((at + _nbytes(dt, sh) for at, dt, sh in self._columns.values()), default=0)
        if os.path.getsize(self.path) < end:
            raise ValueError(f"{self.path}: truncated")
        self._fd = os.open(self.path, os.O_RDONLY)

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def shape(self, name: str) -> tuple[int, ...]:
        return self._columns[name][2]

    def whole(self, name: str) -> np.ndarray:
        """The array `name` whole (kept: for the small members)."""
        got = self._arrays.get(name)
        if got is None:
            shape = self.shape(name)
            got = self.rows(name, 0, shape[0] if shape else 1).reshape(shape)
            self._arrays[name] = got
        return got

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        at, dtype, shape = self._columns[name]
        inner = shape[1:]
        width = _nbytes(dtype, inner)
        n = max(0, min(stop, shape[0] if shape else 1) - start)
        want = n * width
        data = os.pread(self._fd, want, at + start * width) if want else b""
        while len(data) < want:  # a regular file answers whole; loop all the same
            more = os.pread(self._fd, want - len(data), at + start * width + len(data))
            if not more:
                raise ValueError(f"{self.path}: truncated in {name}")
            data += more
        return np.frombuffer(data, dtype).reshape((n, *inner))


#: numpy's header parser runs under this lock (`read_array_header`).
_NUMPY_PARSER_LOCK = threading.Lock()


def read_array_header(f: Any, version: tuple[int, int]) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran order, dtype) of the `.npy` header of `version` at `f`'s position (after
    its magic), parsed by numpy one thread at a time: CPython 3.11's AST constructor can fail
    with a spurious "SystemError: AST constructor recursion depth mismatch" when two threads
    build ASTs at once (cpython gh-106905), which happened when the read-ahead thread and a
    0-worker DataLoader opened npy files together."""
    with _NUMPY_PARSER_LOCK:
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(f)
        return np.lib.format.read_array_header_2_0(f)


def _nbytes(dtype: np.dtype, shape: tuple[int, ...]) -> int:
    return dtype.itemsize * int(np.prod(shape, dtype=np.int64))
