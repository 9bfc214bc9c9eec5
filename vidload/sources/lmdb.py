"""LMDB: every video's JPEG frames in one LMDB environment per dataset, read lock-free.

Layout: `OUTPUT/frames.lmdb/` (LMDB's `data.mdb` and `lock.mdb`), one key per frame, keyed by
the video's container name (what the manifest records: `frames.lmdb#a/x1`, the name within the
environment after `#`; `a/x1.mp4` where two inputs share a stem, as the other kinds name them)
and the frame:

    <name> 0x00 <frame, uint32 big-endian>   the frame's JPEG bytes, exactly as encoded
    <name> 0x01                              JSON: count, height, width, fps, bytes, ...
    <name> 0x02                              float64 little-endian timestamps (seconds), one a frame

Why one environment per dataset, not one per convert shard: a video is one write transaction
(its frames, timestamps and meta key committed together, fsynced, or not at all: LMDB is
copy-on-write, so `kill -9` mid-write leaves the last committed state), so a container is
atomic without a temporary name, and a resumed run finds a video done without a manifest row
by its meta key, whatever shards the last run had. Environments per shard would make a
video's name depend on the shard that wrote it (a rerun re-plans shards) and every reader
open many maps. Writers in several processes of one machine are serialised by LMDB's lock
file (each transaction is only the copy of a spilled video: frames are encoded before the
lock is taken, `sources._spill`); convert shards writing one OUTPUT from several machines
over a network filesystem are not supported (LMDB's locks do not cross machines).

Reads: `LmdbSource` opens the environment once per process, lazily (never across a fork:
a forked DataLoader worker opens its own), `readonly=True, lock=False` (no reader table, no
lock: nothing is written while a dataset is read), `readahead=False` (random frames of a
dataset larger than memory); each clip is one read transaction of its frames' keys, decoded
by the shared JPEG decode (`EncodedFrames`). LMDB maps a local file: a URL root is refused,
naming the URL (`pip install 'vidload[lmdb]'` installs `lmdb`).
"""

from __future__ import annotations

import errno
import json
import os
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vidload._layout import container_name
from vidload._lru import ProcessLRU
from vidload._storage import Location, MissingExtraError, SourceRoot
from vidload.errors import UsageError, VideoReadError
from vidload.sources._docs import shared_docs
from vidload.sources._format import BenchRow, Frames, Written
from vidload.sources._jpeg_kinds import JpegFramesFormat
from vidload.sources._spill import spill_frames
from vidload.sources.base import Indices, as_index_array, normalize_video_id
from vidload.sources.encoded import ContainerSource, EncodedFrames, distinct_frames

try:
    import lmdb
except ImportError as e:  # the table (`vidload._kinds`) and the export name the extra
    raise MissingExtraError(
        "LMDB storage needs lmdb: pip install 'vidload[lmdb]'", name="lmdb"
    ) from e

__all__ = ["ENV_NAME", "LmdbFormat", "LmdbSource"]

#: The environment's folder under OUTPUT (the source's root).
ENV_NAME = "frames.lmdb"
#: What a video's container name adds to its name within the environment: `frames.lmdb#a/x1`.
_MARK = ENV_NAME + "#"
#: The map a writer reserves (address space, not disk: the file grows as it is written).
MAP_SIZE = 1 << 40
#: LMDB's page: a value larger than a page's share lies in whole overflow pages.
_PAGE = 4096


def _frame_key(name: bytes, index: int) -> bytes:
    return name + b"\x00" + struct.pack(">I", index)


def _meta_key(name: bytes) -> bytes:
    return name + b"\x01"


def _times_key(name: bytes) -> bytes:
    return name + b"\x02"


def _stored(n: int) -> int:
    """The bytes a value of `n` bytes takes on disk: whole pages, with their 16-byte header."""
    return -(-(n + 16) // _PAGE) * _PAGE


# -- this process's environments (one per path, shared by every source and writer here)

#: path (as a source or writer names it) -> (pid, environment, opened for writing, its data
#: file's identity). LMDB allows one open of an environment per process (its fcntl locks are
#: the process's): every reader and writer here shares it, whatever path names it (`_ALIASES`).
_OPEN: dict[str, tuple[int, Any, bool, tuple[int, int] | None]] = {}
#: realpath -> the path `_OPEN` keeps it under (a realpath costs ~27 us: once per spelling).
_ALIASES: dict[str, str] = {}


def _environment(path: str, *, write: bool, fresh: bool = False) -> Any:
    """This process's environment at `path`: opened lock-free read-only for reading, or for
    writing (which serves reads too); a read-only one is reopened for writing. A writer, and a
    reader asked for a `fresh` one (convert's checks), first compare its data file with the one
    opened (one stat): an environment removed and made again is reopened.

    One a forked child finds open in its parent is closed there, never used: the child's close
    unmaps and closes only its own copies (the parent's map, descriptors and locks are
    untouched), and py-lmdb refuses a second open while the inherited one is registered."""
    key = path if path in _OPEN else _ALIASES.get(os.path.realpath(path), path)
    got = _OPEN.get(key)
    if got is not None:
        pid, env, writable, files = got
        same = not (write or fresh) or _files(path) == files
        if pid == os.getpid() and (writable or not write) and same:
            return env
        env.close()  # forked, to be reopened for writing, or removed and made again since
        del _OPEN[key]
    try:
        if write:
            env = lmdb.open(path, map_size=MAP_SIZE, subdir=True, readahead=False)
        else:
            env = lmdb.open(path, readonly=True, lock=False, readahead=False, subdir=True)
    except lmdb.Error as e:
        if not write and not os.path.isdir(path):
            raise VideoReadError(path, "no LMDB environment here (not found)") from e
        raise VideoReadError(path, f"cannot open the LMDB environment: {e}") from e
    _OPEN[key] = (os.getpid(), env, write, _files(path))
    _ALIASES[os.path.realpath(path)] = key
    return env


def _files(path: str) -> tuple[int, int] | None:
    """(device, inode) of the environment's data file (one stat): an environment removed and
    made again at the same path is another environment."""
    try:
        st = os.stat(os.path.join(path, "data.mdb"))
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _forget(path: str) -> None:
    """Close this process's environment at `path` (the next use reopens it)."""
    got = _OPEN.pop(_ALIASES.get(os.path.realpath(path), path), None)
    if got is not None and got[0] == os.getpid():
        got[1].close()


def _split(container: Path | str) -> tuple[str, str]:
    """(environment path, name within it) of a container path `OUTPUT/frames.lmdb#a/x1`."""
    text = os.fspath(container)
    head, mark, name = text.rpartition(_MARK)
    if not mark or not name or head[-1:] not in ("", os.sep):  # the mark starts a path part
        raise ValueError(f"{text!r} is not an LMDB container name ({_MARK}<name>)")
    return head + ENV_NAME, name


@dataclass(frozen=True)
class _Meta:
    """A video's meta key: its name in the environment and what a read takes of it (the key
    also holds the frames' size and how they were encoded: `LmdbFormat.write`)."""

    name: bytes
    count: int
    fps: float | None
    nbytes: int
    timed: bool


def _find_meta(txn: Any, names: Iterable[str]) -> _Meta | None:
    """A video's meta key, by the first of its `names` in the environment (`_names`) that
    has one, None where none has."""
    return next(filter(None, (_read_meta(txn, n) for n in names)), None)


def _read_meta(txn: Any, name: str) -> _Meta | None:
    raw = txn.get(_meta_key(name.encode()))
    if raw is None:
        return None
    meta = json.loads(bytes(raw))
    return _Meta(
        name.encode(),
        int(meta["count"]),
        meta.get("fps"),
        int(meta["bytes"]),
        bool(meta.get("timed")),
    )


@shared_docs
class LmdbSource(ContainerSource):
    """Frames of the videos `vidload convert --to lmdb` stored in `root/frames.lmdb` (module
    doc), by the videos' ids (`a/x1.mp4`: its name `a/x1`, or `a/x1.mp4` where convert kept the
    extension).

    Args:
        root: the local folder `convert` wrote (a URL is refused: LMDB is local only).
        <<decode_size>>
        <<fps>>
            None reads the timestamps convert stored, else the input's frame rate.
        storage_options: taken as every source takes them, for a root that is a URL: which
            is refused.

    `read` returns uint8 (k, H, W, 3) RGB. Picklable: holds the root; the environment is
    opened per process (`readonly=True, lock=False`), never shared across a fork.

    Raises:
        UsageError: `root` is a URL (naming it).
    """

    suffix = ""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        decode_size: tuple[int, int] | None = None,
        fps: float | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        location = Location(os.fspath(root), storage_options)
        if location.local_file() is None:
            raise UsageError(
                f"LmdbSource root {str(location)!r} is a URL: LMDB is local only (an "
                "environment is a memory map of a local file); copy it to a local folder"
            )
        super().__init__(SourceRoot(root, None, None, None), decode_size=decode_size, fps=fps)
        self.environment = os.path.join(str(self.root), ENV_NAME)
        self._metas: ProcessLRU[str, _Meta] = ProcessLRU(None)

    def __repr__(self) -> str:
        return f"LmdbSource({str(self.root)!r})"

    def path(self, video_id: str) -> Path:
        """The environment holding every video (`root/frames.lmdb`)."""
        return Path(self.environment)

    def files(self, video_id: str) -> list[Path]:
        """None: one file holds every video, so a read-ahead hint would read the dataset."""
        return []

    def close(self) -> None:
        """Close this process's environment (the next read reopens it)."""
        _forget(self.environment)
        self._metas.clear()

    def _meta(self, video_id: str) -> _Meta:
        got = self._metas.get(video_id)
        if got is None:
            with _environment(self.environment, write=False).begin() as txn:
                got = _find_meta(txn, _names(video_id))
            if got is None:
                raise VideoReadError(
                    f"{self.environment}#{normalize_video_id(video_id)}", "not found"
                )
            self._metas.put(video_id, got)
        return got

    def actual_frames(self, video_id: str) -> int:
        return self._meta(video_id).count

    def reported_frames(self, video_id: str) -> int | None:
        return self._meta(video_id).count

    def missing_videos(self, video_ids: Sequence[str]) -> list[str]:
        """The ids of `video_ids` with no video in the environment, in list order (one read
        transaction; every id when there is no environment)."""
        if not os.path.isdir(self.environment):
            return list(video_ids)
        with _environment(self.environment, write=False).begin() as txn:
            return [v for v in video_ids if _find_meta(txn, _names(v)) is None]

    def timestamps(self, video_id: str) -> np.ndarray:
        """float64 (actual_frames,) seconds: those convert stored, else frame i at i / fps
        (`fps`, else the input's frame rate)."""
        meta = self._meta(video_id)
        where = f"{self.environment}#{meta.name.decode()}"
        if meta.timed and self.fps is None:
            with _environment(self.environment, write=False).begin() as txn:
                raw = txn.get(_times_key(meta.name))
            if raw is not None and len(raw) == 8 * meta.count:
                return np.frombuffer(bytes(raw), "<f8").astype(np.float64)
            raise VideoReadError(where, "its stored timestamps are missing or not one a frame")
        fps = self.fps if self.fps is not None else meta.fps
        if fps is None:
            raise VideoReadError(where, "no stored timestamps and no frame rate: pass fps=")
        return np.arange(meta.count, dtype=np.float64) / float(fps)

    def read_encoded(self, video_id: str, indices: Indices) -> EncodedFrames:
        """<<read_encoded>>"""
        idx = as_index_array(indices)
        meta = self._meta(video_id)
        frames, order = distinct_frames(idx, meta.count, video_id, meta.count)
        where = f"{self.environment}#{meta.name.decode()}"
        with _environment(self.environment, write=False).begin() as txn:
            buffers = [txn.get(_frame_key(meta.name, f)) for f in frames.tolist()]
        for f, data in zip(frames.tolist(), buffers, strict=True):
            if data is None:
                raise VideoReadError(where, "the frame's key is missing", f)
        return EncodedFrames(buffers, frames, order, where, sum(map(len, buffers)))


def _names(video_id: str) -> Iterator[str]:
    """A video's names in the environment: the full id's first (convert kept the extension
    where two inputs shared a stem), then without the video extension."""
    full = container_name(video_id, "", keep_extension=True)
    yield full
    short = container_name(video_id, "")
    if short != full:
        yield short


class LmdbFormat(JpegFramesFormat):
    """`lmdb`: JPEG frames in one LMDB environment per dataset (module doc), `LmdbSource`;
    the JPEG kinds' options (quality, subsampling); local only."""

    name = "lmdb"
    suffix = ".lmdb"
    described = "LMDB environments of JPEG frames"
    source = LmdbSource
    takes_input = False
    local_only = True
    bench = (BenchRow("lmdb", "LmdbSource: JPEG frames in one LMDB environment, lock-free"),)
    choose_options = ({"quality": 95},)

    def container_name(self, video_id: str, *, keep_extension: bool = False) -> str:
        return _MARK + container_name(video_id, "", keep_extension=keep_extension)

    def exists(self, container: Path) -> bool:
        environment, name = _split(container)
        if not os.path.isfile(os.path.join(environment, "data.mdb")):
            return False
        with _environment(environment, write=False, fresh=True).begin() as txn:
            return _read_meta(txn, name) is not None

    @staticmethod
    def _stored_bytes(environment: str, *names: str) -> int:
        """The bytes on disk of the video stored by the first of `names` that has a meta key
        in the environment (whole pages, as LMDB stores a large value)."""
        with _environment(environment, write=False, fresh=True).begin() as txn:
            meta = _find_meta(txn, names)
        if meta is None:
            raise VideoReadError(f"{environment}#{names[0]}", "not found")
        return meta.nbytes

    def nbytes(self, container: Path) -> int:
        """Its values' bytes on disk (`_stored_bytes`)."""
        return self._stored_bytes(*_split(container))

    def files(self, root: Path, video_id: str) -> list[Path]:
        return [root / ENV_NAME / "data.mdb"]

    def video_bytes(self, root: Path, video_id: str) -> int:
        return self._stored_bytes(str(root / ENV_NAME), *_names(video_id))

    def write(self, container: Path, frames: Frames, options: Any) -> Written:
        """Encode `frames` (spilled to disk, outside the lock), then store them as the
        container's name in the environment in one write transaction (module doc); an earlier
        video of that name is replaced in the same transaction."""
        environment, name = _split(container)
        encoded = frames.jpeg(options.quality, options.subsampling)
        with spill_frames(Path(environment), encoded, one_size=True) as spill:
            count = len(spill.lengths)
            times = frames.timestamps(count)
            key = name.encode()
            nbytes = sum(_stored(n) for n in spill.lengths)
            meta = {
                **self.attrs(frames, options),
                "count": count,
                "height": spill.size[0],
                "width": spill.size[1],
                "timed": times is not None,
                "bytes": nbytes + (0 if times is None else _stored(8 * count)),
            }
            buf = bytearray(max(spill.lengths))
            try:
                env = _environment(environment, write=True)
                with env.begin(write=True) as txn:
                    old = _read_meta(txn, name)
                    for i in range(0 if old is None else old.count):
                        txn.delete(_frame_key(key, i))
                    txn.delete(_times_key(key))
                    for i, n in enumerate(spill.lengths):
                        view = memoryview(buf)[:n]
                        spill.read_into(view)
                        txn.put(_frame_key(key, i), view)
                    if times is not None:
                        txn.put(_times_key(key), np.ascontiguousarray(times, "<f8").tobytes())
                    txn.put(_meta_key(key), json.dumps(meta).encode())
            except lmdb.Error as e:
                if "No space left" in str(e):
                    raise OSError(errno.ENOSPC, f"{environment}: {e}") from e
                raise VideoReadError(environment, f"cannot write {name!r}: {e}") from e
        return Written(count, spill.size)

    def verify(self, container: Path, frames: Frames) -> Written:
        environment, name = _split(container)
        with closing(LmdbSource(os.path.dirname(environment) or ".")) as src:
            return self.read_back(src, name, container)
