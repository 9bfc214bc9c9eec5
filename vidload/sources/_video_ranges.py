"""Where a video file's bytes lie: what FFmpeg reads to open it, and each packet of one stream,
so that a reader over a URL fetches only the byte ranges a clip needs.

A `ByteLayout` is recorded from the finished file when its frame index is persisted
(`_video_persist.write_index`: `vidload convert --to video`, `vidload probe --write-index`):

* `opened`: the byte ranges `av.open` reads from a Python file object (the MP4's `ftyp`, the
  `moov` wherever it lies, the first packets `avformat_find_stream_info` probes), recorded by
  opening the file through a file object that notes every read, and what a first seek reads
  besides packets (Matroska's Cues, which the demuxer loads only then). FFmpeg reads through a
  32 KiB buffer, so these are its reads as they happen, not the boxes' exact extents.
* `digest`: a SHA-1 of the file's size and those `opened` bytes (`span_digest`): they hold an
  MP4's `moov`, every sample's size and offset, so a reader over a URL checks that the object is
  the one the layout describes from bytes it fetches anyway.
* `packets`: the chosen stream's packets in decode order, each `(key, pos, size)`: the packet's
  key (`_video_index.packet_key`, what the frame index names frames and seek points by), its
  byte offset in the file and its size, from a demux-only scan (no decoding).

`clip_ranges` turns wanted frames into byte ranges with the same plan `_video_seek.read_seeking`
follows: for each wanted frame, from the packet of the seek point before it (where decoding
resumes) to the wanted frame's own packet, plus `reorder + 1` packets for a decoder that holds
frames back (B-frames; 1 packet with none), from `SEEK_LEAD` bytes before the seek point's packet
(where a demuxer may land: a Matroska cluster's start). Ranges closer than `SHORT_GAP` are joined
(`vidload._storage.coalesce`): FFmpeg reads across a short gap instead of seeking (`avio_seek`
reads forward up to its buffer plus its short-seek threshold, 32 + 32 KiB), so the gap bytes
must be there too.

A converted file (closed GOPs of `gop` frames, no B-frames, no audio) needs, for a clip of k
frames in k different GOPs, at most k GOPs of bytes, and nothing else once it is open.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import av
import av.error
import numpy as np

from vidload._storage import coalesce
from vidload.sources._video_index import FrameIndex, packet_key, scanned_packets

__all__ = ["SHORT_GAP", "ByteLayout", "clip_ranges", "record_layout", "span_digest"]

#: Byte ranges closer than this are fetched as one (see the module docstring).
SHORT_GAP = 128 << 10
#: Bytes fetched before a seek point's packet: a demuxer may land a little before it (a
#: Matroska cue names its cluster, whose header, and any audio block first, precede the
#: keyframe by a few hundred bytes).
SEEK_LEAD = 4 << 10


def span_digest(size: int, spans: Iterable[bytes]) -> str:
    """SHA-1 hex of a file's `size` and the bytes of some of its spans, in order."""
    h = hashlib.sha1(size.to_bytes(8, "little"))
    for data in spans:
        h.update(data)
    return h.hexdigest()


class ByteLayout:
    """What FFmpeg reads to open a file (`opened`), their `digest`, and where each packet of its
    chosen stream lies (`keys`, `pos`, `size`: int64 arrays in decode order). See the module
    docstring."""

    def __init__(
        self,
        opened: Sequence[tuple[int, int]],
        digest: str,
        keys: Sequence[int],
        pos: Sequence[int],
        size: Sequence[int],
    ) -> None:
        self.opened = [(int(a), int(b)) for a, b in opened]
        self.digest = digest
        self.keys = np.asarray(keys, dtype=np.int64)
        self.pos = np.asarray(pos, dtype=np.int64)
        self.end = self.pos + np.asarray(size, dtype=np.int64)
        if not (len(self.keys) == len(self.pos) == len(self.end)):
            raise ValueError(f"{len(keys)} keys, {len(pos)} positions, {len(size)} sizes")
        self._number = {int(k): i for i, k in enumerate(self.keys.tolist())}
        # frames a decoder may hold back: how far a packet's output rank (the inverse of the
        # order that sorts the keys) runs ahead of its decode number (0 without B-frames)
        rank = np.argsort(np.argsort(self.keys, kind="stable"), kind="stable")
        self.reorder = int((rank - np.arange(len(rank))).max(initial=0))

    def to_json(self) -> dict[str, Any]:
        return {
            "opened": [list(r) for r in self.opened],
            "sha1_opened": self.digest,
            "keys": self.keys.tolist(),
            "pos": self.pos.tolist(),
            "size": (self.end - self.pos).tolist(),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ByteLayout:
        return cls(doc["opened"], str(doc["sha1_opened"]), doc["keys"], doc["pos"], doc["size"])

    def packet_number(self, key: int | None) -> int | None:
        """Decode-order number of the packet with this key; None if none has it."""
        return None if key is None else self._number.get(int(key))

    def bytes_of(self, first: int, last: int) -> tuple[int, int]:
        """[start, stop) spanning packets first..last (decode-order numbers, inclusive)."""
        return int(self.pos[first : last + 1].min()), int(self.end[first : last + 1].max())


def clip_ranges(
    layout: ByteLayout, index: FrameIndex, wanted: Iterable[int]
) -> list[tuple[int, int]] | None:
    """The byte ranges a seek-and-decode read of the `wanted` frames reads (module docstring),
    joined; None when the layout cannot place a frame (its key is in no packet: an index from
    elsewhere, guessed pts), and the reader then fetches what FFmpeg asks for as it asks."""
    n = len(layout.keys)
    if index.keys is None or not index.seekable or n == 0:
        return None
    spans: list[tuple[int, int]] = []
    for target in sorted(set(wanted)):
        if target < 0 or target >= index.num_frames:
            continue  # the read raises for it before decoding
        sp = index.seek_point(index.seek_point_before(target))
        first = layout.packet_number(packet_key(sp.pts, sp.dts))
        last = layout.packet_number(index.keys[target])
        if first is None or last is None or last < first:
            return None
        start, stop = layout.bytes_of(first, min(last + layout.reorder + 1, n - 1))
        spans.append((max(0, start - SEEK_LEAD), stop))
    return coalesce(spans, SHORT_GAP)


class _Recording(io.FileIO):
    """A local file read through Python, noting each [start, stop) range read."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, "rb")
        self.reads: list[tuple[int, int]] = []

    def read(self, n: int | None = -1, /) -> bytes:
        start = self.tell()
        data = super().read(n)
        if data:
            self.reads.append((start, start + len(data)))
        return data


def record_layout(path: Path, stream_index: int) -> ByteLayout | None:
    """The `ByteLayout` of `path`'s video stream `stream_index` (an index among its video
    streams); None where the demuxer does not say where packets lie (no byte positions)."""
    with _Recording(path) as rec:
        with av.open(rec, "r") as container:
            opened = coalesce(rec.reads, 0)
            stream = list(container.streams.video)[stream_index]
            keys: list[int] = []
            pos: list[int] = []
            size: list[int] = []
            for packet in scanned_packets(container.demux(stream)):
                key = packet_key(packet.pts, packet.dts)
                if key is None or packet.pos is None or packet.pos < 0:
                    return None
                keys.append(key)
                pos.append(packet.pos)
                size.append(packet.size)
        opened = coalesce(opened + _seek_index_reads(path, stream_index, pos, size), 0)
        size_of_file = os.fstat(rec.fileno()).st_size
        digest = span_digest(size_of_file, (os.pread(rec.fileno(), b - a, a) for a, b in opened))
    return ByteLayout(opened, digest, keys, pos, size)


def _seek_index_reads(
    path: Path, stream_index: int, pos: Sequence[int], size: Sequence[int]
) -> list[tuple[int, int]]:
    """What a first seek reads besides packets: an index the demuxer loads only then
    (Matroska's Cues, often at the end of the file), which a reader over a URL would otherwise
    fetch as a miss, one more round, at its first clip. Recorded by opening the file again and
    seeking to its start; the reads that touch no packet are kept."""
    order = np.argsort(np.asarray(pos, np.int64), kind="stable")
    starts = np.asarray(pos, np.int64)[order]
    stops = np.maximum.accumulate(starts + np.asarray(size, np.int64)[order])
    with _Recording(path) as rec:
        with av.open(rec, "r") as container:
            stream = list(container.streams.video)[stream_index]
            before = len(rec.reads)
            try:
                container.seek(stream.start_time or 0, backward=True, stream=stream)
            except av.error.FFmpegError:  # a file that cannot seek is read without seeking
                return []
            seeking = rec.reads[before:]
    kept = []
    for a, b in seeking:
        i = int(np.searchsorted(starts, b)) - 1  # the last packet starting before b
        if i < 0 or stops[i] <= a:  # no packet in [a, b)
            kept.append((a, b))
    return kept
