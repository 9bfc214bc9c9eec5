"""A video file's frame index, persisted beside it (`<file>.vidload-index`), so that a fresh
process's first read neither scans nor decodes the file.

`VideoSource` builds a `FrameIndex` once per process and file: a demux-only packet scan where
the container stores pts, one full decode elsewhere (AVI pays that in every DataLoader worker).
`vidload convert --to video` writes the exact index (from the decode that verifies the converted
file) beside each file, and `vidload probe --write-index` (`VideoSource.write_index`) beside
original videos. A reader takes it as the exact index of the file: its count is the actual
count, its orientation the display orientation, its keys and keyframes what seeking needs.

The index says which file it describes by content, not by name or mtime (a copy keeps it valid,
a rewrite does not): the file's size and a SHA-1 of its first and last 64 KiB (where MP4's
`moov`, Matroska's cues and AVI's `idx1` live, and every header), plus the index of the stream
it describes among the file's video streams. Hashing 128 KiB costs ~0.1 ms, against a packet
scan's or a decode's milliseconds. An index that does not match (or cannot be read) is never
used: the reader warns with the reason, once per file version, and builds the index as it would
without one. Reads stay checked against the decoder either way (`_video_seek`): a frame that does
not carry the index's timestamp makes the reader fall back to sequential decoding.

Format: one JSON object (`"format": 1`), ~25 bytes a frame.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

from vidload._atomic import write_bytes_atomic
from vidload._layout import index_path
from vidload.errors import VideoReadError
from vidload.sources._orientation import Orientation
from vidload.sources._video_index import FrameIndex, SeekPoint
from vidload.sources.base import open_regular_file

__all__ = ["PersistedIndex", "file_digest", "load_index", "write_index"]

FORMAT = 1
#: Bytes hashed at each end of the file.
_SPAN = 64 << 10


class PersistedIndex:
    """What the sidecar holds: the exact index and the display orientation of one stream."""

    def __init__(self, index: FrameIndex, orientation: Orientation, stream_index: int) -> None:
        self.index = index
        self.orientation = orientation
        self.stream_index = stream_index


def file_digest(path: Path) -> tuple[int, str]:
    """(size, SHA-1 hex of the first and last `_SPAN` bytes) of the file at `path`."""
    fd = open_regular_file(path)
    try:
        size = os.fstat(fd).st_size
        h = hashlib.sha1(size.to_bytes(8, "little"))
        h.update(os.pread(fd, _SPAN, 0))
        if size > _SPAN:
            h.update(os.pread(fd, _SPAN, max(_SPAN, size - _SPAN)))
    finally:
        os.close(fd)
    return size, h.hexdigest()


def write_index(
    video_file: Path,
    persisted: PersistedIndex,
    *,
    digest_of: Path | None = None,
) -> Path:
    """Write `persisted` as the index of `video_file` (`<file>.vidload-index`), atomically and
    durably; the digest is that of `digest_of` (default `video_file`: a converter hashes the
    finished temporary file before renaming it into place). Returns the sidecar's path."""
    index = persisted.index
    if not index.exact:
        raise ValueError("only an exact index (from a full decode) is persisted")
    size, digest = file_digest(digest_of or video_file)
    o = persisted.orientation
    doc = {
        "format": FORMAT,
        "size": size,
        "sha1_ends": digest,
        "stream_index": persisted.stream_index,
        "num_frames": index.num_frames,
        "keys": None if index.keys is None else list(index.keys),
        "seek_points": [[sp.pos, sp.pts, sp.dts] for sp in index.seek_points],
        "orientation": [o.transpose, o.flip_rows, o.flip_cols],
    }
    path = index_path(video_file)
    write_bytes_atomic(path, json.dumps(doc, separators=(",", ":")).encode())
    return path


def load_index(video_file: Path, stream_index: int) -> PersistedIndex | None:
    """The persisted index of `video_file`'s video stream `stream_index`, or None when there is
    no sidecar; a sidecar that does not describe this file and stream (or cannot be read) warns
    with the reason and gives None."""
    path = index_path(video_file)
    if not os.path.lexists(path):
        return None
    try:
        fd = open_regular_file(path)
    except VideoReadError as e:
        return _unused(path, f"cannot be opened ({e.reason})")
    try:
        with os.fdopen(fd, "rb") as f:
            doc = json.loads(f.read())
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            return _unused(path, f"format {doc.get('format') if isinstance(doc, dict) else doc!r}")
        size, digest = file_digest(video_file)
        if doc["size"] != size or doc["sha1_ends"] != digest:
            return _unused(
                path,
                f"it describes another file (size {doc['size']}, digest {doc['sha1_ends'][:12]}; "
                f"{video_file.name} now has {size}, {digest[:12]}): rewritten since",
            )
        if doc["stream_index"] != stream_index:
            return _unused(
                path, f"it is for video stream {doc['stream_index']}, not {stream_index}"
            )
        keys = doc["keys"]
        points = [SeekPoint(int(p), _opt_int(t), _opt_int(d)) for p, t, d in doc["seek_points"]]
        num = int(doc["num_frames"])
        if keys is not None and len(keys) != num:
            return _unused(path, f"{len(keys)} keys for {num} frames")
        index = FrameIndex(num, [int(k) for k in keys] if keys is not None else None, True, points)
        transpose, flip_rows, flip_cols = (bool(b) for b in doc["orientation"])
        return PersistedIndex(index, Orientation(transpose, flip_rows, flip_cols), stream_index)
    except (OSError, ValueError, TypeError, KeyError, VideoReadError) as e:
        return _unused(path, f"unreadable ({type(e).__name__}: {e})")


def _opt_int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def _unused(path: Path, reason: str) -> PersistedIndex | None:
    warnings.warn(
        f"{path}: frame index not used: {reason}; building it from the video instead "
        f"(rewrite it with `vidload probe --write-index`, or delete it)",
        stacklevel=4,
    )
    return None
