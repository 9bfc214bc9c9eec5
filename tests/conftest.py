"""Session-wide test media: the cases where video loaders go wrong (B-frames and long GOPs,
open GOPs, VFR, a non-zero start time, a second video stream, missing or wrong header counts,
truncated, empty and non-video files, every codec below), generated once per test session.

Fixtures for every test module:

* `hard_video_dir`: a folder holding every file of `hard_videos` and `bad_videos`.
* `hard_videos`: {video_id: HardCase} of files that decode (some only partly).
* `bad_videos`: {video_id: reason regex} of files that cannot be read at all (zero-byte, not a
  video, no video stream), plus "missing.mp4", which does not exist.

Frames are painted with `media.paint`, so `media.frame_number` tells which frame came back.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
from media import (
    encode_frames,
    make_audio_only,
    make_two_stream_video,
    make_video,
    truncate_copy,
)
from servers import http_dir, http_server, s3_bucket, s3_server  # noqa: F401 (fixtures)

W, H = 96, 64


@pytest.fixture(autouse=True, scope="session")
def _session_temporary_cache(tmp_path_factory):
    """This session's own temporary cache (`vidload._storage.temporary_cache`: copies of
    bucket objects and the sidecars of heads, `node_copy`), not the user's: no copy from an
    earlier run is found, and none is left in it."""
    from vidload._storage import cache

    folder = tmp_path_factory.mktemp("vidload-cache")
    cache._TEMPORARY[:] = [cache.LocalCache(folder, cache.TEMPORARY_CACHE_BYTES)]


X265 = {"x265-params": "log-level=error"}


@dataclass(frozen=True)
class HardCase:
    """One generated video.

    Attributes:
        video_id: file name inside `hard_video_dir`.
        frames: frames that really decode from the stream vidload picks; None when only the
            decoder can tell (truncated files: fewer than `encoded`).
        encoded: frames written to that stream.
        stream_index: index among video streams of the stream vidload picks by default.
        painted_offset: frame i of that stream shows `paint(painted_offset + i)`.
    """

    video_id: str
    frames: int | None
    encoded: int
    stream_index: int = 0
    painted_offset: int = 0


def _vfr_pts(n: int) -> list[int]:
    """Irregular millisecond timestamps: gaps of 20, 40, 60 and 100 ms in turn."""
    gaps = [20, 40, 60, 100]
    out, t = [], 0
    for i in range(n):
        out.append(t)
        t += gaps[i % len(gaps)]
    return out


def _build(folder: Path) -> dict[str, HardCase]:
    cases: dict[str, HardCase] = {}

    def video(video_id: str, n: int, **kwargs) -> None:
        make_video(folder / video_id, n, width=W, height=H, **kwargs)
        cases[video_id] = HardCase(video_id, n, n)

    long_gop = {"g": "60", "bf": "3", "x264-params": "scenecut=0"}  # keyframes at 0 and 60 only
    video("h264_bframes_long_gop.mp4", 90, options=long_gop)
    video("h264_gop1.mp4", 30, options={"g": "1"})
    video("h264_open_gop.mkv", 60, options={"g": "20", "bf": "3", "x264-params": "open-gop=1"})
    video("mpeg4_bframes.avi", 60, codec="mpeg4", options={"g": "24", "bf": "2"})
    # AVI stores no pts: frames come out of the decoder labelled in decode order
    video("h264_open_gop.avi", 40, options={"g": "5", "bf": "1", "x264-params": "open-gop=1"})
    video("mpeg2.mpg", 40, codec="mpeg2video", options={"g": "12", "bf": "2"})
    video("vp9.webm", 50, codec="libvpx-vp9", options={"g": "20"})
    video("hevc.mp4", 50, codec="libx265", options={"g": "20", **X265})
    video("av1.mkv", 40, codec="libsvtav1", options={"g": "16"})
    video("h264_10bit.mkv", 40, pix_fmt="yuv420p10le", options={"g": "16", "bf": "2"})
    video("hevc_10bit.mp4", 40, codec="libx265", pix_fmt="yuv420p10le", options={"g": "16", **X265})
    video("no_count.mkv", 50, options={"g": "16", "bf": "2"})  # Matroska stores no frame count
    video("raw.h264", 40, options={"g": "12", "bf": "2"})  # elementary stream: no timestamps
    video("h264.ts", 60, options={"g": "16", "bf": "3"})  # MPEG-TS: seeks land only roughly
    video("short.mp4", 5, options={"g": "2"})

    ms = Fraction(1, 1000)
    pts = _vfr_pts(60)
    encode_frames(folder / "vfr.mp4", range(60), pts=pts, time_base=ms, width=W, height=H,
                  options={"g": "24", "bf": "2"})  # fmt: skip
    cases["vfr.mp4"] = HardCase("vfr.mp4", 60, 60)
    start = [5000 + 40 * i for i in range(50)]
    for name in ("start_offset.mp4", "start_offset.mkv"):
        encode_frames(folder / name, range(50), pts=start, time_base=ms, width=W, height=H,
                      options={"g": "16", "bf": "2"})  # fmt: skip
        cases[name] = HardCase(name, 50, 50)

    make_two_stream_video(folder / "two_streams.mp4", (40, 60), sizes=((W, H), (128, 96)))
    # FFmpeg's "best" video stream here is stream 0 (40 frames); stream 1 has 60, painted from 1000
    cases["two_streams.mp4"] = HardCase("two_streams.mp4", 40, 40, 0, 0)

    # header says 60 frames (moov first), the data stops part-way
    full = make_video(folder / "_full.mp4", 60, width=W, height=H, options={"g": "12"},
                      container_options={"movflags": "faststart"})  # fmt: skip
    truncate_copy(full, folder / "count_too_large.mp4", 0.5)
    cases["count_too_large.mp4"] = HardCase("count_too_large.mp4", None, 60)
    full.unlink()
    for ext, codec in ((".mkv", "libx264"), (".avi", "mpeg4")):
        full = make_video(folder / f"_full{ext}", 60, codec=codec, width=W, height=H,
                          options={"g": "12"})  # fmt: skip
        truncate_copy(full, folder / f"truncated{ext}", 0.6)
        cases[f"truncated{ext}"] = HardCase(f"truncated{ext}", None, 60)
        full.unlink()
    return cases


@pytest.fixture(scope="session")
def hard_video_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hard_videos")


@pytest.fixture(scope="session")
def hard_videos(hard_video_dir) -> dict[str, HardCase]:
    return _build(hard_video_dir)


@pytest.fixture(scope="session")
def bad_videos(hard_video_dir) -> dict[str, str]:
    (hard_video_dir / "empty.mp4").write_bytes(b"")
    (hard_video_dir / "not_a_video.mp4").write_text("this is a text file, not a video\n" * 20)
    make_audio_only(hard_video_dir / "audio_only.wav")
    return {
        "empty.mp4": "empty file",
        "not_a_video.mp4": "not a readable video",
        "audio_only.wav": "no video stream",
        "missing.mp4": "file not found",
    }
