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

Format 3: two lines, each a JSON object. The first is the index (`"format": 3`, ~25 bytes a
frame, plus the digests: `_video_index.frame_digest` of every frame of the single-threaded
sequential decode, 4 bytes each as little-endian uint32, in base64 under `"digests"`, ~5.4
characters a frame; null where not recorded), whose `num_frames` is the sequential decode's
count: a seek read checks the frames it returns against the digests, and a frame past the count
raises (`VideoSource.read`, docs/guides/broken-videos.md). The second says where the file's
bytes lie (~20 bytes a frame: `_video_ranges.ByteLayout`, what FFmpeg reads to open the file
and each packet's offset and size), for a reader over a URL
(`_video_remote`), which then fetches a clip's packets instead of the whole object. A local
reader parses the first line only (the second is parsed on first use), so it costs what format 1
did. Formats 1 and 2 are still read, without digests (seek reads then rely on the decoder's
errors alone, as before). Format 2 is format 3 without `"digests"`. Format 1 (the first line
alone): its index serves local reads as before, and a reader over a URL, which needs the byte
positions, says so and downloads the object whole.
"""

from __future__ import annotations

import base64
import json
import os
import warnings
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np

from vidload._atomic import write_bytes_atomic
from vidload._layout import index_path
from vidload.errors import VideoReadError
from vidload.sources._orientation import Orientation
from vidload.sources._video_index import DIGEST_BYTES, FrameIndex, SeekPoint
from vidload.sources._video_ranges import ByteLayout, record_layout, span_digest
from vidload.sources.base import open_regular_file

__all__ = [
    "PersistedIndex",
    "UnusableIndex",
    "file_digest",
    "load_index",
    "parse_index",
    "write_index",
]

FORMAT = 3
#: Formats a reader takes (1: without byte positions; 1 and 2: without digests).
READ_FORMATS = (1, 2, 3)
#: Bytes hashed at each end of the file.
_SPAN = 64 << 10


@dataclass(eq=False)
class PersistedIndex:
    """What the sidecar holds: the exact index and the display orientation of one stream, and
    (format 2) where the file's bytes lie (the sidecar's second line, parsed on first use:
    `layout`), None where they could not be recorded."""

    index: FrameIndex
    orientation: Orientation
    stream_index: int
    _layout: ByteLayout | bytes | None = None

    @property
    def layout(self) -> ByteLayout | None:
        """Where the file's bytes lie (parsed from the sidecar's second line on first use);
        None where it was not recorded (format 1, or a demuxer without byte positions).

        Raises:
            UnusableIndex: the second line cannot be read."""
        if isinstance(self._layout, bytes):
            try:
                doc = json.loads(self._layout)
                self._layout = None if doc is None else ByteLayout.from_json(doc)
            except (ValueError, TypeError, KeyError) as e:
                raise UnusableIndex(f"unreadable byte layout ({type(e).__name__}: {e})") from None
        return self._layout

    def for_stream(self, stream_index: int, where: object) -> PersistedIndex | None:
        """This index where it describes video stream `stream_index` (an index among the
        file's video streams), else None, said in a warning naming the sidecar `where`."""
        if self.stream_index == stream_index:
            return self
        return _unused(where, f"it is for video stream {self.stream_index}, not {stream_index}")


class UnusableIndex(Exception):
    """A sidecar that cannot be used (internal); the message is the reason."""


def file_digest(path: Path) -> tuple[int, str]:
    """(size, SHA-1 hex of the first and last `_SPAN` bytes) of the file at `path`."""
    with os.fdopen(open_regular_file(path), "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        spans = [os.pread(fd, _SPAN, 0)]
        if size > _SPAN:
            start = max(_SPAN, size - _SPAN)
            spans.append(os.pread(fd, size - start, start))
    return size, span_digest(size, spans)


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
    layout = persisted.layout or record_layout(digest_of or video_file, persisted.stream_index)
    doc = {
        "format": FORMAT,
        "size": size,
        "sha1_ends": digest,
        "stream_index": persisted.stream_index,
        "num_frames": index.num_frames,
        "keys": None if index.keys is None else list(index.keys),
        "seek_points": [[sp.pos, sp.pts, sp.dts] for sp in index.seek_points],
        "orientation": list(astuple(persisted.orientation)),  # transpose, flip_rows, flip_cols
        "digests": _digests_text(index),
    }
    path = index_path(video_file)
    lines = [doc, None if layout is None else layout.to_json()]
    write_bytes_atomic(
        path, "\n".join(json.dumps(d, separators=(",", ":")) for d in lines).encode()
    )
    return path


def load_index(video_file: Path, stream_index: int) -> PersistedIndex | None:
    """The persisted index of `video_file`'s video stream `stream_index`, or None when there is
    no sidecar; a sidecar that does not describe this file and stream (or cannot be read) warns
    with the reason and gives None."""
    path = index_path(video_file)
    if not os.path.lexists(path):
        return None
    try:
        with os.fdopen(open_regular_file(path), "rb") as f:
            persisted, size, digest = parse_index(f.read())
        now = file_digest(video_file)
        if (size, digest) != now:
            raise UnusableIndex(
                f"it describes another file (size {size}, digest {digest[:12]}; "
                f"{video_file.name} now has {now[0]}, {now[1][:12]}): rewritten since"
            )
        return persisted.for_stream(stream_index, path)
    except UnusableIndex as e:
        return _unused(path, str(e))
    except (OSError, VideoReadError) as e:
        return _unused(path, f"unreadable ({type(e).__name__}: {e})")


def parse_index(raw: bytes) -> tuple[PersistedIndex, int, str]:
    """(the index, the size and digest of the file it describes) from a sidecar's bytes;
    UnusableIndex with the reason when they are not a sidecar vidload reads."""
    first, _, second = raw.partition(b"\n")
    try:
        doc = json.loads(first)
        if not isinstance(doc, dict) or doc.get("format") not in READ_FORMATS:
            raise UnusableIndex(f"format {doc.get('format') if isinstance(doc, dict) else doc!r}")
        keys = doc["keys"]
        points = [SeekPoint(int(p), _opt_int(t), _opt_int(d)) for p, t, d in doc["seek_points"]]
        num = int(doc["num_frames"])
        if keys is not None and len(keys) != num:
            raise UnusableIndex(f"{len(keys)} keys for {num} frames")
        digests = _digests_of(doc.get("digests") if doc["format"] >= 3 else None, num)
        keys = [int(k) for k in keys] if keys is not None else None
        index = FrameIndex(num, keys, True, points, digests)
        persisted = PersistedIndex(
            index,
            Orientation(*(bool(b) for b in doc["orientation"])),
            int(doc["stream_index"]),
            second if doc["format"] >= 2 and second.strip() else None,
        )
        return persisted, int(doc["size"]), str(doc["sha1_ends"])
    except UnusableIndex:
        raise
    except (ValueError, TypeError, KeyError) as e:
        raise UnusableIndex(f"unreadable ({type(e).__name__}: {e})") from None


def _digests_text(index: FrameIndex) -> str | None:
    """The index's digests as the sidecar keeps them (see the module docstring)."""
    if index.digests is None:
        return None
    return base64.b64encode(np.asarray(index.digests, "<u4").tobytes()).decode("ascii")


def _digests_of(text: object, num_frames: int) -> list[int] | None:
    """The digests of a sidecar's `"digests"` (None: not recorded); UnusableIndex when they
    are not `num_frames` of them."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise UnusableIndex(f"digests are a {type(text).__name__}, not text")
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError as e:
        raise UnusableIndex(f"unreadable digests ({e})") from None
    if len(raw) != DIGEST_BYTES * num_frames:
        raise UnusableIndex(f"{len(raw)} bytes of digests for {num_frames} frames")
    return np.frombuffer(raw, "<u4").tolist()


def _opt_int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def _unused(path: object, reason: str) -> PersistedIndex | None:
    warnings.warn(
        f"{path}: frame index not used: {reason}; building it from the video instead "
        f"(rewrite it with `vidload probe --write-index`, or delete it)",
        stacklevel=4,
    )
    return None
