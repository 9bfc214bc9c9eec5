"""What a reader needs to open a container, kept beside the data: a cold batch in one round.

Read from a bucket, a container never opened in this process costs a round trip before its
frames can be asked for: HDF5's frame table (`offsets`, where `frames` starts), npy's header
(rows, row length, where the rows start). At 20 ms a round, a batch of cold containers then
waits two rounds, not one (issue 23). `vidload convert` therefore writes every container's
head into one sidecar beside `manifest.csv`, `HEADS_NAME`; a batch's containers listed there
are planned from it, and their frames fetched in the batch's one round
(`vidload._dataset.batch`).

Once per machine, shared: a bucket's sidecar is fetched by the first process that needs it
into a local folder (the source's `cache_dir`, else this user's temporary cache) and every
other process of the machine (ranks, DataLoader workers, later runs) finds it there with no
request (`vidload._storage.node_copy`). No process reads it whole: a record is a few
`os.pread`s of its own rows (`_heads_file`), so a worker holds what it asked for, and a
Kinetics-size sidecar (hundreds of MB) costs the page cache one copy per machine. The copy is
named by the sidecar's version (ETag); a process that sees it stale (a head that fails its
check, a container it does not list) asks the version once and fetches a rewritten sidecar
again (`Heads.current`).

A head from the sidecar is checked before it is used: the round also fetches the container's
first and last `CHECK_BYTES` (`check_spans`, coalesced with nearby frames), and their digest
with the size the writer saw (`_video_ranges.span_digest`, as the persisted video index does)
must be the one recorded. A container rewritten since (another size, header, frame table or
last frame) fails the check, and its items open its head themselves (the round before its
frames, as without a sidecar); a container the sidecar does not list, or no sidecar, too.

Keyed by the manifest's names: the manifest is the one list of container names (its
`container` column, `vidload._layout`), so the sidecar keeps no second one: each record is
found by `name_key(name)`, a 64-bit digest of its container's name relative to the root
(`/`-separated), sorted (`keys`). A reader asks by the name the manifest records (or, without
one, by the name its rules find); a name the sidecar does not hold finds no record. A sidecar
of format 1 (before the column) lists the names themselves (`names`) and is read as well.

Layout (`numpy.savez`'s, every member stored, not deflated, read with `allow_pickle=False`):
`format` (3), `kind` ("hdf5", "npy", "video", "jpeg"), `keys` (uint64, increasing: `name_key`
of each container's name) with `fence` (every `FENCE`th key), `size` and `digest` (uint8 (n,
20): the SHA-1) per container, `ints` (n, k) int64 with the field names in `int_fields`,
`floats` (n, m) float64 (NaN: none) with `float_fields`, and for HDF5 the frame table as frame
lengths: `lengths` uint32, container i's in `lengths[starts[i]:starts[i + 1]]`; for a video
(kind "video", `vidload convert --to video`) its persisted frame index's bytes (`raw`: where its
header and every packet lie, `_video_remote.from_record`), each zlib-compressed on its own (one
container's read decompresses its own), `zblobs` uint8 with `blob_starts` as `starts`; for a
frame folder (kind "jpeg", `vidload convert --to jpeg`) the ints `frames` and `start_index`,
with the size and digest of its last frame file (the files' names then need no listing:
`JpegSource`). Per container ~70 bytes and 4 bytes a frame (HDF5; a video's index, ~15
compressed, 5 of them its frame digests (the index's format 3): ~33 as JSON): ~1.3 MB for
1,000 videos of 300 frames (Kinetics-400's 240k videos: ~290 MB for HDF5, ~20 MB for npy or
JPEG folders, ~1.1 GB for `--to video`), with no cap. Format 2 (digests
as a unicode column, no fence) is read the same way, its fence taken from its keys at open.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vidload._lru import ProcessLRU
from vidload._storage import Location
from vidload._storage.batch import run_concurrently
from vidload._storage.cache import temporary_cache
from vidload._storage.node_copy import node_copy
from vidload.errors import VidloadError
from vidload.sources._heads_file import LoadedArrays, StoredArrays
from vidload.sources._video_ranges import span_digest

__all__ = [
    "CHECK_BYTES",
    "HEADS_NAME",
    "HeadRecord",
    "Heads",
    "RootHeads",
    "check_spans",
    "name_key",
    "head_record",
    "open_heads",
    "read_heads",
    "render_heads",
    "write_heads",
]

#: The sidecar's name, in the root beside `manifest.csv`.
HEADS_NAME = "manifest-heads.npz"
FORMAT = 3
#: Formats read: 1 listed the names (`names`), 2 keys them by digest (`keys`), 3 stores the
#: digests as bytes (not a unicode column, 8x the size) with the `fence` of the keys.
_FORMATS = (1, 2, 3)
#: Every FENCE'th key is held in memory (`fence`): a lookup reads one block of FENCE keys
#: (4 KiB) of the file, so a process holds n / FENCE keys, not n.
FENCE = 512
#: Bytes at each end of a container that a head from the sidecar is checked by.
CHECK_BYTES = 4096


def check_spans(size: int) -> list[tuple[int, int]]:
    """The [start, stop) spans of an object of `size` bytes whose digest checks a head."""
    if size <= 2 * CHECK_BYTES:
        return [(0, size)]
    return [(0, CHECK_BYTES), (size - CHECK_BYTES, size)]


@dataclass
class HeadRecord:
    """One container's head: its `size` and `digest` (the check), its scalar fields, and for
    HDF5 its frame lengths."""

    size: int
    digest: str
    ints: dict[str, int] = field(default_factory=dict)
    floats: dict[str, float | None] = field(default_factory=dict)
    lengths: np.ndarray | None = None
    #: Bytes of the container's own (a video's persisted frame index: `_video_remote`).
    raw: bytes | None = None

    def checks(self, spans: Sequence[bytes]) -> bool:
        """Whether the object's bytes at `check_spans(self.size)` are the recorded ones."""
        want = check_spans(self.size)
        if len(spans) != len(want) or any(
            len(s) != b - a for s, (a, b) in zip(spans, want, strict=True)
        ):
            return False  # the object ends before them: it changed
        return span_digest(self.size, spans) == self.digest


def name_key(name: str) -> int:
    """The sidecar's key of the container `name` (relative to the root, `/`-separated): a
    stable 64-bit digest of it (module doc)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


class Heads:
    """A sidecar: the record of a container by its name (`get`), read by rows from its local
    file (`_heads_file`); where it came from a bucket, `current` fetches it again once a
    process has seen it is stale."""

    def __init__(
        self, kind: str, table: LoadedArrays, origin: tuple[Location, Any, str] | None = None
    ) -> None:
        self.kind = kind
        self._t = table
        #: (the sidecar in the bucket, the `LocalCache` its copy is in, the copy's version)
        self._origin = origin
        self._rechecked = origin is None
        self._suspect = False
        self._row: dict[str, int] = {}
        self._fence: np.ndarray | None = None
        if "keys" in table:
            self._n = table.shape("keys")[0]
            fence = table.whole("fence") if "fence" in table else table.whole("keys")[::FENCE]
            self._fence = np.asarray(fence, np.uint64)  # format 2 had none: every FENCE'th key
        else:  # format 1: the names themselves
            self._row = {str(n): i for i, n in enumerate(table.whole("names").tolist())}
            self._n = len(self._row)
        self._int_fields = [str(k) for k in table.whole("int_fields").tolist()]
        self._float_fields = [str(k) for k in table.whole("float_fields").tolist()]

    def __len__(self) -> int:
        return self._n

    def _index(self, name: str) -> int | None:
        if self._fence is None:
            return self._row.get(name)
        key = np.uint64(name_key(name))  # a Python int over 2**63 would convert the array
        block = int(self._fence.searchsorted(key, "right")) - 1
        if block < 0:
            return None
        keys = self._t.rows("keys", block * FENCE, (block + 1) * FENCE)
        i = int(keys.searchsorted(key))
        return block * FENCE + i if i < keys.size and keys[i] == key else None

    def get(self, name: str) -> HeadRecord | None:
        i = self._index(name)
        if i is None:
            return None
        t = self._t
        ints = dict(zip(self._int_fields, t.rows("ints", i, i + 1)[0].tolist(), strict=True))
        floats: dict[str, float | None] = {
            k: (None if math.isnan(v) else float(v))
            for k, v in zip(self._float_fields, t.rows("floats", i, i + 1)[0].tolist(), strict=True)
        }
        lengths = None
        if "lengths" in t:
            a, b = t.rows("starts", i, i + 2).tolist()
            lengths = t.rows("lengths", a, b)
        raw = None
        if "zblobs" in t:
            a, b = t.rows("blob_starts", i, i + 2).tolist()
            raw = zlib.decompress(t.rows("zblobs", a, b).tobytes()) if b > a else None
        digest = t.rows("digest", i, i + 1)[0]
        text = digest.tobytes().hex() if digest.dtype == np.uint8 else str(digest)
        return HeadRecord(int(t.rows("size", i, i + 1)[0]), text, ints, floats, lengths, raw)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._index(name) is not None

    def suspect(self) -> None:
        """Note that this copy may be stale (a head from it failed its check, or it does not
        list a container asked for): the next `current` asks."""
        self._suspect = True

    def current(self) -> Heads | None:
        """This sidecar (no request), or where it was noted suspect (`suspect`: a head that
        failed its check, a container it does not list) the sidecar as it is in the bucket
        now: once per process, the version is asked (one request) and a rewritten sidecar
        fetched again, once per machine (`node_copy`); this copy where it is the store's, or
        the sidecar is local."""
        if self._rechecked or not self._suspect:
            return self
        self._rechecked = True
        assert self._origin is not None
        where, cache, version = self._origin
        try:
            path, now = node_copy(where, cache, stale=version)
        except VidloadError:
            return self  # the copy stands: each head is checked before it is used
        if now == version:
            return self
        heads = open_heads(path, self.kind, (where, cache, now))
        if heads is not None:
            heads._rechecked = True
        return heads


def render_heads(kind: str, records: Mapping[str, HeadRecord]) -> bytes:
    """The sidecar's bytes for `records` by container name (see the module docstring)."""
    keyed = sorted((name_key(n), n) for n in records)
    if len({k for k, _ in keyed}) != len(keyed):  # 2**-64 a pair: never met, but said
        raise ValueError("two container names share a sidecar key")
    rows = [records[n] for _, n in keyed]
    keys = np.array([k for k, _ in keyed], np.uint64)
    int_fields = sorted({k for r in rows for k in r.ints})
    float_fields = sorted({k for r in rows for k in r.floats})
    arrays: dict[str, np.ndarray] = {
        "format": np.array(FORMAT),
        "kind": np.array(kind),
        "keys": keys,
        "fence": keys[::FENCE],
        "size": np.array([r.size for r in rows], np.int64),
        "digest": _digests([r.digest for r in rows]),
        "int_fields": np.array(int_fields, dtype=str),
        "ints": np.array([[r.ints.get(k, -1) for k in int_fields] for r in rows], np.int64).reshape(
            len(rows), len(int_fields)
        ),
        "float_fields": np.array(float_fields, dtype=str),
        "floats": np.array(
            [[_nan(r.floats.get(k)) for k in float_fields] for r in rows], np.float64
        ).reshape(len(rows), len(float_fields)),
    }
    if any(r.lengths is not None for r in rows):
        parts = [np.asarray(r.lengths if r.lengths is not None else [], np.uint32) for r in rows]
        arrays["lengths"], arrays["starts"] = _ragged(parts, np.uint32)
    if any(r.raw is not None for r in rows):
        blobs = [np.frombuffer(zlib.compress(r.raw) if r.raw else b"", np.uint8) for r in rows]
        arrays["zblobs"], arrays["blob_starts"] = _ragged(blobs, np.uint8)
    out = io.BytesIO()
    # `numpy.savez`'s layout, but each member dated 1980-01-01: the same heads give the same
    # bytes (a local run and one into a bucket write identical sidecars)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, arr in arrays.items():
            with z.open(zipfile.ZipInfo(f"{name}.npy"), "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(arr), allow_pickle=False)
    return out.getvalue()


def _ragged(parts: list[np.ndarray], dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """(every row's part, end to end; int64 (rows + 1,) where each row's part starts): a
    column of one part a row (`Heads.get` reads row i's as [starts[i], starts[i + 1]))."""
    values = np.concatenate(parts) if parts else np.empty(0, dtype)
    return values, np.cumsum([0, *(p.size for p in parts)], dtype=np.int64)


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _digests(digests: Sequence[str]) -> np.ndarray:
    """uint8 (n, w): each hex digest's bytes (20 for SHA-1, not 160 as a unicode column)."""
    raw = [bytes.fromhex(d) for d in digests]
    width = len(raw[0]) if raw else 0
    if any(len(r) != width for r in raw):
        raise ValueError("the records' digests are not all of one length")
    return np.frombuffer(b"".join(raw), np.uint8).reshape(len(raw), width)


def open_heads(
    path: str | os.PathLike[str], kind: str, origin: tuple[Location, Any, str] | None = None
) -> Heads | None:
    """The sidecar in the local file `path`, or None when it is not one of `kind` in a format
    this reads. Read by rows where it lies (`_heads_file.StoredArrays`); a format 1 sidecar,
    or one whose members are deflated, is loaded whole."""
    try:
        table: LoadedArrays
        try:
            table = StoredArrays(path) if hasattr(os, "pread") else _loaded(path)
        except ValueError:
            table = _loaded(path)
        if "keys" not in table:  # format 1: the names, held whole
            table.close()
            table = _loaded(path)
        if int(table.whole("format")) not in _FORMATS or str(table.whole("kind")) != kind:
            table.close()
            return None
        return Heads(kind, table, origin)
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
        return None


def _loaded(path: str | os.PathLike[str]) -> LoadedArrays:
    with np.load(path, allow_pickle=False) as z:
        return LoadedArrays({k: z[k] for k in z.files})


def read_heads(root: Location, kind: str, cache: Any = None) -> Heads | None:
    """The sidecar under `root`, or None where there is none or it is not readable as one of
    `kind` (the heads are then read from the containers, as without it). A local root's is
    read where it lies; a bucket's from this machine's copy (`node_copy`: in `cache`, a
    `LocalCache`, else this user's temporary cache), fetched by the first process that needs
    it and found by the others with no request."""
    where = root / HEADS_NAME
    local = where.local_file()
    if local is not None:
        return open_heads(local, kind) if local.is_file() else None
    if cache is None:
        cache = temporary_cache()
    try:
        path, version = node_copy(where, cache)
    except VidloadError:
        return None
    return open_heads(path, kind, (where, cache, version))


class RootHeads:
    """A source's sidecar of heads of its root, as this process holds it: read once
    (`read_heads`: this machine's copy, fetched by the first process that needs it), asked
    again where this process noted it suspect (`Heads.current`). Picklable: a copy, or a
    forked child, reads it again (`ProcessLRU`)."""

    def __init__(self) -> None:
        self._held: ProcessLRU[str, tuple[Heads | None]] = ProcessLRU(1)

    def held(self) -> Heads | None:
        """The sidecar as read so far, without reading it (None: not read, or none there)."""
        got = self._held.get("heads")
        return None if got is None else got[0]

    def get(self, root: Location, kind: str, cache: Any) -> Heads | None:
        """The sidecar of `kind` under `root` (`read_heads`), None where there is none."""
        got = self._held.get("heads")
        if got is None:
            got = (read_heads(root, kind, cache),)
        elif got[0] is not None:
            got = (got[0].current(),)  # noted suspect: asked again (`Heads.current`)
        self._held.put("heads", got)
        return got[0]

    def suspect(self) -> None:
        """Note that the sidecar held may be stale (`Heads.suspect`)."""
        heads = self.held()
        if heads is not None:
            heads.suspect()


def head_record(location: Location, ints, floats, lengths=None) -> HeadRecord:
    """The record of the container at `location` with these fields: its size and the digest
    of its `check_spans` read now (local or remote alike)."""
    size = location.size()
    spans = location.read_ranges(check_spans(size))
    return HeadRecord(size, span_digest(size, spans), dict(ints), dict(floats), lengths)


def write_heads(source: Any, video_ids: Sequence[str]) -> int:
    """Write the sidecar of `source`'s root (an `Hdf5Source`, `NpySource`, `VideoSource` or
    `JpegSource`, local or in a bucket) for the containers of `video_ids` that open
    (`source.head_record`; the others are left out: their readers open them as without a
    sidecar); the number recorded. What `vidload convert` runs when it has written the
    manifest."""
    got = run_concurrently(source.head_record, list(dict.fromkeys(video_ids)))
    records = {name: rec for item in got if item is not None for name, rec in [item]}
    (source.store.location / HEADS_NAME).write_bytes(render_heads(source.heads_kind, records))
    return len(records)
