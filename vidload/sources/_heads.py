"""What a reader needs to open a container, kept beside the data: a cold batch in one round.

Read from a bucket, a container never opened in this process costs a round trip before its
frames can be asked for: HDF5's frame table (`offsets`, where `frames` starts), npy's header
(rows, row length, where the rows start). At 20 ms a round, a batch of cold containers then
waits two rounds, not one (issue 23). `vidload convert` therefore writes every container's
head into one sidecar beside `manifest.csv`, `HEADS_NAME`, which a source reads once per
process (one GET, the first batch); a batch's containers listed there are planned from it, and
their frames fetched in the batch's one round (`vidload._dataset.batch`).

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

Layout (`numpy.savez`'s, read with `allow_pickle=False`): `format` (2), `kind` ("hdf5", "npy",
"video", "jpeg"), `keys` (uint64, increasing: `name_key` of each container's name), `size` and
`digest` per container, `ints` (n, k) int64 with the field names in `int_fields`, `floats` (n,
m) float64 (NaN: none) with `float_fields`, and for HDF5 the frame table as frame lengths:
`lengths` uint32, container i's in `lengths[starts[i]:starts[i + 1]]`; for a video (kind
"video", `vidload convert --to video`) its persisted frame index's bytes (`raw`: where its
header and every packet lie, `_video_remote.from_record`), each zlib-compressed, `zblobs` uint8
with `blob_starts` as `starts`; for a frame folder (kind "jpeg", `vidload convert --to
jpeg`) the ints `frames` and `start_index`, with the size and digest of its last frame file
(the files' names then need no listing: `JpegSource`). Per container a few dozen bytes and 4
bytes a frame (HDF5; a video's index, ~15 compressed, 5 of them its frame digests (format 3):
~33 as JSON), read whole by every process: ~1.2 MB for 1,000 videos of 300 frames
(Kinetics-400's 240k videos: ~290 MB for HDF5, a few MB for npy or JPEG folders, ~1.1 GB for
`--to video`): over `HEADS_MAX_BYTES` (128 MiB,
each process holding its own copy) a sidecar is dropped once read, said by a `ResourceWarning`.
"""

from __future__ import annotations

import hashlib
import io
import math
import warnings
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vidload._storage import Location
from vidload._storage.batch import run_concurrently
from vidload.errors import VidloadError
from vidload.sources._video_ranges import span_digest

__all__ = [
    "CHECK_BYTES",
    "HEADS_MAX_BYTES",
    "HEADS_NAME",
    "HeadRecord",
    "Heads",
    "check_spans",
    "name_key",
    "head_record",
    "parse_heads",
    "read_heads",
    "record_digest",
    "render_heads",
    "write_heads",
]

#: The sidecar's name, in the root beside `manifest.csv`.
HEADS_NAME = "manifest-heads.npz"
FORMAT = 2
#: Formats read: 1 listed the names (`names`), 2 keys them by digest (`keys`).
_FORMATS = (1, 2)
#: Bytes at each end of a container that a head from the sidecar is checked by.
CHECK_BYTES = 4096


def check_spans(size: int) -> list[tuple[int, int]]:
    """The [start, stop) spans of an object of `size` bytes whose digest checks a head."""
    if size <= 2 * CHECK_BYTES:
        return [(0, size)]
    return [(0, CHECK_BYTES), (size - CHECK_BYTES, size)]


def record_digest(size: int, spans: Sequence[bytes]) -> str:
    """The digest of an object's `size` and the bytes of its `check_spans`."""
    return span_digest(size, spans)


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
        return record_digest(self.size, spans) == self.digest


def name_key(name: str) -> int:
    """The sidecar's key of the container `name` (relative to the root, `/`-separated): a
    stable 64-bit digest of it (module doc)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


class Heads:
    """A parsed sidecar: the record of a container by its name (`get`)."""

    def __init__(self, kind: str, arrays: Mapping[str, np.ndarray]) -> None:
        self.kind = kind
        self._a = arrays
        self._keys: np.ndarray | None = None
        self._row: dict[str, int] = {}
        if "keys" in arrays:
            self._keys = np.asarray(arrays["keys"], np.uint64)
        else:  # format 1: the names themselves
            self._row = {str(n): i for i, n in enumerate(arrays["names"].tolist())}

    def __len__(self) -> int:
        return len(self._row) if self._keys is None else int(self._keys.size)

    def _index(self, name: str) -> int | None:
        if self._keys is None:
            return self._row.get(name)
        key = np.uint64(name_key(name))  # a Python int over 2**63 would convert the array
        i = int(self._keys.searchsorted(key))
        return i if i < self._keys.size and self._keys[i] == key else None

    def get(self, name: str) -> HeadRecord | None:
        i = self._index(name)
        if i is None:
            return None
        a = self._a
        ints = {
            str(k): int(v)
            for k, v in zip(a["int_fields"].tolist(), a["ints"][i].tolist(), strict=True)
        }
        floats: dict[str, float | None] = {
            str(k): (None if math.isnan(v) else float(v))
            for k, v in zip(a["float_fields"].tolist(), a["floats"][i].tolist(), strict=True)
        }
        lengths = None
        if "lengths" in a:
            lengths = a["lengths"][int(a["starts"][i]) : int(a["starts"][i + 1])]
        raw = None
        if "zblobs" in a:
            blob = a["zblobs"][int(a["blob_starts"][i]) : int(a["blob_starts"][i + 1])]
            raw = zlib.decompress(blob.tobytes()) if blob.size else None
        return HeadRecord(int(a["size"][i]), str(a["digest"][i]), ints, floats, lengths, raw)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._index(name) is not None


def render_heads(kind: str, records: Mapping[str, HeadRecord]) -> bytes:
    """The sidecar's bytes for `records` by container name (see the module docstring)."""
    keyed = sorted((name_key(n), n) for n in records)
    if len({k for k, _ in keyed}) != len(keyed):  # 2**-64 a pair: never met, but said
        raise ValueError("two container names share a sidecar key")
    rows = [records[n] for _, n in keyed]
    int_fields = sorted({k for r in rows for k in r.ints})
    float_fields = sorted({k for r in rows for k in r.floats})
    arrays: dict[str, np.ndarray] = {
        "format": np.array(FORMAT),
        "kind": np.array(kind),
        "keys": np.array([k for k, _ in keyed], np.uint64),
        "size": np.array([r.size for r in rows], np.int64),
        "digest": np.array([r.digest for r in rows], dtype=str),
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
        arrays["lengths"] = np.concatenate(parts) if parts else np.empty(0, np.uint32)
        arrays["starts"] = np.concatenate([[0], np.cumsum([p.size for p in parts])]).astype(
            np.int64
        )
    if any(r.raw is not None for r in rows):
        blobs = [np.frombuffer(zlib.compress(r.raw) if r.raw else b"", np.uint8) for r in rows]
        arrays["zblobs"] = np.concatenate(blobs) if blobs else np.empty(0, np.uint8)
        arrays["blob_starts"] = np.concatenate([[0], np.cumsum([b.size for b in blobs])]).astype(
            np.int64
        )
    out = io.BytesIO()
    # `numpy.savez`'s layout, but each member dated 1980-01-01: the same heads give the same
    # bytes (a local run and one into a bucket write identical sidecars)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, arr in arrays.items():
            with z.open(zipfile.ZipInfo(f"{name}.npy"), "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(arr), allow_pickle=False)
    return out.getvalue()


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def parse_heads(raw: bytes, kind: str) -> Heads | None:
    """The sidecar in `raw`, or None when it is not one of `kind` in a format this reads."""
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        if int(arrays["format"]) not in _FORMATS or str(arrays["kind"]) != kind:
            return None
        return Heads(kind, arrays)
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None


#: The largest sidecar a process loads: every process (each DataLoader worker) holds its own
#: copy, so a sidecar for hundreds of thousands of videos (Kinetics-400 in HDF5: ~290 MB) would
#: cost that much memory per worker. A larger one is dropped once read, said once per process:
#: its containers' heads are read from the containers, a round before their frames.
HEADS_MAX_BYTES = 128 * 2**20


def read_heads(root: Location, kind: str) -> Heads | None:
    """The sidecar under `root` (one request, once per process), or None where there is none,
    it is over `HEADS_MAX_BYTES` (dropped once read; a `ResourceWarning` says so), or it is not
    readable as one of `kind` (the heads are then read from the containers, as without it)."""
    where = root / HEADS_NAME
    try:
        raw = where.read_bytes()  # once per process
    except VidloadError:
        return None
    if len(raw) > HEADS_MAX_BYTES:
        warnings.warn(
            f"{where}: {len(raw) / 2**20:.0f} MiB, over the {HEADS_MAX_BYTES // 2**20} MiB a "
            "process keeps (each DataLoader worker would hold a copy): not used; the "
            "containers' heads are read from the containers (a round before their frames)",
            ResourceWarning,
            stacklevel=2,
        )
        return None
    return parse_heads(raw, kind)


def head_record(location: Location, ints, floats, lengths=None) -> HeadRecord:
    """The record of the container at `location` with these fields: its size and the digest
    of its `check_spans` read now (local or remote alike)."""
    size = location.size()
    spans = location.read_ranges(check_spans(size))
    return HeadRecord(size, record_digest(size, spans), dict(ints), dict(floats), lengths)


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
