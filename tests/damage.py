"""Damage the decoder does not report, generated: bytes changed inside a video's slice data.

Each kind of damage (`KINDS`) writes a copy of a clean video with bytes changed where the
packets' own positions (PyAV's `packet.pos` and `packet.size`) say a frame's data lies, never in
the container's structures, so demuxing still works and FFmpeg reports nothing, even with
`err_detect=explode`; the decoder conceals it. For H.264 in MP4 or Matroska (NAL units behind
4-byte lengths) the bytes are put inside a slice NAL unit past its first bytes (the slice
header), so the slice data itself is hit; elsewhere, the middle of the packet.

`silent_damage` tries positions and seeds in a fixed order and keeps the first copy whose seek
reads (a fresh `VideoSource` without a persisted index, one frame at a time) give another
picture than the single-threaded sequential decode (`media.decode_until_bad`, vidload's
definition) for some frame, or return a frame past where that decode stops: the damage a test
must show vidload catches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
from media import decode_until_bad, paint

from vidload.errors import FrameCountError, VideoReadError

#: Bytes of a slice NAL unit left alone at its start (NAL header and slice header).
SLICE_HEADER = 6


@dataclass(frozen=True)
class Packet:
    """A video packet: where its bytes lie in the file, and whether it is a keyframe."""

    pos: int
    size: int
    key: bool
    #: [start, stop) file offsets of its slice data (H.264 AVCC), else its middle half.
    slices: tuple[tuple[int, int], ...]


def packets(path: str | Path) -> list[Packet]:
    """The video packets of the first video stream of `path`, in file order of demuxing."""
    data = Path(path).read_bytes()
    out = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        avcc = stream.codec_context.name == "h264" and bool(stream.codec_context.extradata)
        for p in container.demux(stream):
            if not p.size or p.pos is None or p.pos < 0:
                continue
            spans = _avcc_slices(data, p.pos, p.size) if avcc else ()
            if not spans:
                spans = ((p.pos + p.size // 4, p.pos + 3 * p.size // 4),)
            out.append(Packet(p.pos, p.size, p.is_keyframe, spans))
    return out


def _avcc_slices(data: bytes, pos: int, size: int) -> tuple[tuple[int, int], ...]:
    """File spans of the slice data of the coded-slice NAL units (types 1 and 5) of the AVCC
    packet at [pos, pos + size)."""
    spans = []
    at, end = pos, pos + size
    while at + 5 <= end:
        length = int.from_bytes(data[at : at + 4], "big")
        nal = at + 4
        if length <= 0 or nal + length > end:
            break
        if data[nal] & 0x1F in (1, 5) and length > 2 * SLICE_HEADER:
            spans.append((nal + SLICE_HEADER, nal + length))
        at = nal + length
    return tuple(spans)


def _write(src: Path, dst: Path, change: Callable[[bytearray], None]) -> Path:
    data = bytearray(src.read_bytes())
    change(data)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(bytes(data))
    return dst


def change_slice_bytes(src: Path, dst: Path, packet: Packet, *, nbytes: int, seed: int) -> Path:
    """`dst`: `src` with `nbytes` random bytes written into `packet`'s slice data, at an offset
    from the seed."""
    rng = np.random.default_rng(seed)
    start, stop = packet.slices[0]
    nbytes = min(nbytes, stop - start)
    at = start + int(rng.integers(0, stop - start - nbytes + 1))
    noise = rng.integers(0, 256, nbytes, np.uint8).tobytes()

    def change(data: bytearray) -> None:
        data[at : at + nbytes] = noise

    return _write(src, dst, change)


def random_run(src: Path, dst: Path, all_packets: list[Packet], *, nbytes: int, seed: int):
    """`dst`: `src` with a run of `nbytes` random bytes mid-file: from a point in the slice
    data of a packet near the middle of the file (from the seed), over the packets after it,
    the bytes between packets (container structures) left alone."""
    rng = np.random.default_rng(seed)
    middle = sorted(all_packets, key=lambda p: p.pos)
    first = len(middle) // 3 + int(rng.integers(0, max(1, len(middle) // 3)))
    spans = [s for p in middle[first:] for s in p.slices]
    start, stop = spans[0]
    at = start + int(rng.integers(0, max(1, (stop - start) // 2)))
    noise = rng.integers(0, 256, nbytes, np.uint8)

    def change(data: bytearray) -> None:
        left, k = nbytes, 0
        for a, b in [(at, stop), *spans[1:]]:
            n = min(left, b - a)
            data[a : a + n] = noise[k : k + n].tobytes()
            left, k = left - n, k + n
            if not left:
                break

    return _write(src, dst, change)


def flip_bit(src: Path, dst: Path, packet: Packet, *, seed: int) -> Path:
    """`dst`: `src` with one bit of `packet`'s slice data flipped (which one from the seed)."""
    rng = np.random.default_rng(seed)
    start, stop = packet.slices[0]
    at = start + int(rng.integers(0, stop - start))
    bit = int(rng.integers(0, 8))

    def change(data: bytearray) -> None:
        data[at] ^= 1 << bit

    return _write(src, dst, change)


def _candidates(kind: str, src: Path, dst: Path) -> Iterator[Path]:
    """Damaged copies of `src` of `kind`, in a fixed order (see `KINDS`)."""
    found = packets(src)
    inter = [p for p in found[1:] if not p.key]
    keys = [p for p in found[1:] if p.key]
    for seed in range(40):
        if kind == "p-slice":
            packet = inter[(len(inter) // 3 + 7 * seed) % len(inter)]
            yield change_slice_bytes(src, dst, packet, nbytes=16, seed=seed)
        elif kind == "keyframe":
            yield flip_bit(src, dst, keys[seed % len(keys)], seed=seed)
        elif kind in ("run-256", "run-4096"):
            yield random_run(src, dst, found, nbytes=int(kind.split("-")[1]), seed=seed)
        elif kind == "bit":
            packet = found[1:][(5 * seed) % (len(found) - 1)]
            yield flip_bit(src, dst, packet, seed=seed)
        else:
            raise ValueError(f"unknown kind of damage {kind!r}; known: {KINDS}")


#: The kinds of damage `silent_damage` makes.
KINDS = ("p-slice", "keyframe", "run-256", "run-4096", "bit")


def seek_reads_differ(path: Path, reference: list[np.ndarray], read) -> str | None:
    """How seek reads of `path` (`read(i)`: frame i, each call a read of its own) differ from the
    sequential decode `reference`, or None where they do not: the first frame that differs,
    or one past the end that comes back (of the frames the packets promise; `FrameCountError`
    is the right answer there)."""
    promised = len(packets(path))
    for i in range(max(promised, len(reference) + 1)):
        try:
            got = read(i)
        except FrameCountError:
            if i < len(reference):
                return f"frame {i} is refused"
            continue
        except VideoReadError:
            return None  # the decoder reported it: not the silent kind
        if i >= len(reference):
            return f"frame {i} (past the {len(reference)} that decode) comes back"
        want = reference[i]
        if got.shape != want.shape or np.any(got != want):
            return f"frame {i} differs"
    return None


def silent_damage(
    kind: str, src: Path, dst: Path, read: Callable[[Path, int], np.ndarray]
) -> tuple[Path, list[np.ndarray], str]:
    """(damaged copy of `src` at `dst`, its sequential decode, how seek reads differ) for the
    first candidate of `kind` whose seek reads without an index (`read(path, i)`) differ from
    its sequential decode. AssertionError where none of the candidates does."""
    for path in _candidates(kind, src, dst):
        reference = decode_until_bad(path)
        if not reference:
            continue
        why = seek_reads_differ(path, reference, lambda i, p=path: read(p, i))
        if why is not None:
            return path, reference, why
    raise AssertionError(f"no silent {kind} damage of {src} found")


def textured_video(
    path: Path,
    num_frames: int,
    *,
    width: int = 320,
    height: int = 240,
    pix_fmt: str = "yuv420p",
    options: dict[str, str] | None = None,
) -> Path:
    """A video whose frames are `media.paint`'s with a moving texture of noise over them, so
    its slices hold as much data as a camera's (flat painted frames code into a few bytes a
    slice, where changed bytes are almost always reported)."""
    rng = np.random.default_rng(0)
    noise = rng.integers(-40, 41, (height // 4 + num_frames, width // 4 + num_frames), np.int16)
    noise = np.kron(noise, np.ones((4, 4), np.int16))  # blocks of 4 x 4: detail a codec keeps
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        stream.options = dict(options or {})
        for i in range(num_frames):
            shift = noise[2 * i : 2 * i + height, i : i + width, None]
            img = np.clip(paint(i, width, height).astype(np.int16) + shift, 0, 255)
            frame = av.VideoFrame.from_ndarray(img.astype(np.uint8), format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path
