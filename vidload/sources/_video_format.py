"""The `video` kind (`convert --to video`): one video re-encoded for random access, verified,
with its frame index beside it; its options (`VideoOptions`) and its class (`VideoFormat`).

What the file is (each choice measured in docs/benchmarks.md, `python tools/video_sweep.py`):

* H.264 (libx264, in PyAV's wheel) in MP4, yuv420p, no audio. A keyframe every `gop` frames
  exactly (keyint = min-keyint = gop, scene-cut keyframes off), closed GOPs and no B-frames, so
  a read decodes at most `gop` frames from the keyframe before the frame it wants and never
  looks past it; `crf`, `preset` and `tune` are libx264's.
* The frames are the input's (`Frames.rgb`, `VideoSource.iter_frames`'): the frames that
  really decode, upright (the display rotation applied, none left in the file), resized like
  the other formats when a `short_side` is asked for. H.264 in 4:2:0 needs even sides: an odd
  height or width loses its last row or column (never resampled).
* Each frame keeps the source's presentation time exactly: the MP4's track time base is the
  source stream's denominator (`video_track_timescale`), the movie's too (`movie_timescale`, so
  the edit list that keeps a non-zero start time is exact), and pts = the source's time in it.
  Variable frame rate stays variable; a video that starts at 1.4 s still starts at 1.4 s.
* After encoding, the file is decoded in full (`VideoSource.exact_frame_index`): it must give
  exactly the frames written, at the source's timestamps, or the video fails and nothing is
  left at its name. That decode's index is written beside the file
  (`vidload.sources._video_persist`) before the file is renamed into place (durably,
  `vidload._atomic`), so a converted file at its final name always has its index.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import av
import av.error
import numpy as np

from vidload._atomic import writing
from vidload._checks import check_choice, check_int, check_real
from vidload._layout import index_path
from vidload.errors import VideoReadError
from vidload.sources._format import BenchRow, Frames, NoOptions, StorageFormat, Written
from vidload.sources._video_file import ffmpeg_words
from vidload.sources._video_persist import PersistedIndex, write_index
from vidload.sources._video_root import CONVERTED_SUFFIX
from vidload.sources.video import VideoSource

__all__ = [
    "DEFAULT_CRF",
    "DEFAULT_GOP",
    "DEFAULT_PRESET",
    "DEFAULT_TUNE",
    "PRESETS",
    "TUNES",
    "VideoFormat",
    "VideoOptions",
    "even_crop",
    "output_pts",
]

#: The defaults of `--to video` (libx264): a keyframe every `DEFAULT_GOP` frames, CRF
#: `DEFAULT_CRF`, `DEFAULT_PRESET`, tuned `DEFAULT_TUNE` ("none": no tuning). Chosen by the sweep
#: in docs/benchmarks.md (`python tools/video_sweep.py --videos ../shared/videos --synth 4`, CPU
#: time, best of 3): on the real clips 5.4x the clips/s per core of VideoSource on the
#: originals at 1.27x their bytes and 38.6 dB; on generated footage 3.1x at 1.52x, 38.9 dB.
#: fastdecode (no CABAC, no deblocking, no weighted prediction) is what buys the speed: 2.9x
#: without it, same GOP and CRF; libx265 and SVT-AV1 decode slower than x264 at any size here.
DEFAULT_GOP = 8
DEFAULT_CRF = 20.0
DEFAULT_PRESET = "fast"
DEFAULT_TUNE = "fastdecode"
#: libx264's presets, fastest first, and the tunings `--tune` accepts ("none": no tuning).
PRESETS: tuple[str, ...] = (
    "ultrafast",
    "superfast",
    "veryfast",
    "faster",
    "fast",
    "medium",
    "slow",
    "slower",
    "veryslow",
)
TUNES: tuple[str, ...] = ("none", "fastdecode", "film", "animation", "grain", "psnr", "ssim")


@dataclass(frozen=True)
class VideoOptions(NoOptions):
    """The options of `--to video`, checked when made: None takes the default (`DEFAULT_GOP`,
    ...), which the made object holds. None were added since the first (`NoOptions`' empty
    `RECORDED_BEFORE`), and a `vidload choose` name may give none of them.

    Raises:
        TypeError: gop is not an int, crf not a number.
        ValueError: a value out of its range or not one of its choices.
    """

    gop: int | None = None
    crf: float | None = None
    preset: str | None = None
    tune: str | None = None

    SPEC_FORM: ClassVar[str] = "[:gopN][:crfQ][:PRESET]"

    def __post_init__(self) -> None:
        put = functools.partial(object.__setattr__, self)  # frozen: set once, here
        put("gop", DEFAULT_GOP if self.gop is None else check_int("gop", self.gop, minimum=1))
        c = DEFAULT_CRF if self.crf is None else check_real("crf", self.crf)
        if not 0 <= c <= 51:
            raise ValueError(f"crf ({c}) must be in [0, 51]")
        put("crf", float(c))
        preset, tune = self.preset, self.tune
        put("preset", DEFAULT_PRESET if preset is None else check_choice("preset", preset, PRESETS))
        put("tune", DEFAULT_TUNE if tune is None else check_choice("tune", tune, TUNES))

    @classmethod
    def spec_parts(cls, values: Mapping[str, Any]) -> list[str]:
        """`vidload choose`'s name: `video:gop8:crf23[:PRESET]` (the options given)."""
        parts = [f"{k}{values[k]}" for k in ("gop", "crf") if values.get(k) is not None]
        return parts + ([values["preset"]] if values.get("preset") is not None else [])

    @classmethod
    def spec_value(cls, part: str) -> tuple[str, Any]:
        for key in ("gop", "crf"):
            if part.startswith(key) and part[len(key) :].isdigit():
                return key, int(part[len(key) :])
        if part in PRESETS:
            return "preset", part
        raise ValueError(f"{part!r} is not gopN, crfQ or a preset ({', '.join(PRESETS)})")


def even_crop(rgb: np.ndarray) -> np.ndarray:
    """uint8 (H, W, 3) with an odd H or W cut to the even size below (its last row/column)."""
    h, w = rgb.shape[:2]
    return rgb[: h - h % 2, : w - w % 2]


def output_pts(timestamps: np.ndarray, time_base: Fraction | None) -> tuple[np.ndarray, int]:
    """(int64 pts, ticks per second) of float64 `timestamps` (seconds) in a time base of
    1 / the source's denominator: exact for pts the source stored (time = pts x num / den)."""
    den = time_base.denominator if time_base is not None and time_base > 0 else 90000
    pts = np.rint(np.asarray(timestamps, np.float64) * den).astype(np.int64)
    return pts, den


def _encode(
    tmp: Path,
    frames: Iterable[np.ndarray],
    pts: np.ndarray,
    den: int,
    fps: float | None,
    options: VideoOptions,
    source: Path,
) -> tuple[int, tuple[int, int]]:
    """Encode into `tmp`; returns (frames, (height, width))."""
    timescale = str(den)
    mux_options = {"movie_timescale": timescale, "video_track_timescale": timescale}
    with av.open(str(tmp), "w", format="mp4", options=mux_options) as out:
        stream = None
        for count, rgb in enumerate(frames):
            shape = rgb.shape
            rgb = even_crop(rgb)
            if stream is None:
                if min(rgb.shape[:2]) < 2:
                    raise VideoReadError(source, f"frames of {shape[1]}x{shape[0]} are too small")
                stream = _add_stream(out, rgb.shape[:2], den, fps, options)
            if count >= len(pts):
                raise VideoReadError(source, f"more frames decode than the {len(pts)} timestamps")
            if count and pts[count] <= pts[count - 1]:
                raise VideoReadError(
                    source, "timestamps do not increase (in the time base kept)", count
                )
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
            # on this thread, as reads convert (`_video_seek.converter`)
            frame = frame.reformat(format="yuv420p", threads=1)
            frame.pts = int(pts[count])
            frame.time_base = Fraction(1, den)
            for packet in stream.encode(frame):
                out.mux(packet)
        if stream is None:
            raise VideoReadError(source, "no frame decodes")
        for packet in stream.encode(None):
            out.mux(packet)
    return count + 1, (stream.height, stream.width)


def _add_stream(out, size: tuple[int, int], den: int, fps: float | None, options):
    stream = out.add_stream("libx264")
    stream.height, stream.width = size
    stream.pix_fmt = "yuv420p"
    stream.time_base = Fraction(1, den)
    ctx = stream.codec_context
    ctx.time_base = Fraction(1, den)
    if fps:
        ctx.framerate = Fraction(fps).limit_denominator(1001000)
    gop = options.gop
    ctx.gop_size = gop
    ctx.max_b_frames = 0
    ctx.thread_count = 1  # see the module doc: the same bytes on any machine or engine
    assert options.preset is not None and options.tune is not None  # made: set
    params = f"keyint={gop}:min-keyint={gop}:scenecut=0:bframes=0:open-gop=0"
    x264 = {"crf": f"{options.crf:g}", "preset": options.preset, "x264-params": params}
    if options.tune != "none":
        x264["tune"] = options.tune
    stream.options = x264
    return stream


def _verify(tmp: Path, count: int, pts: np.ndarray, den: int, source: Path) -> PersistedIndex:
    """Decode `tmp` in full: its exact persisted index, checked to be `count` frames at
    `pts` / `den`."""
    src = VideoSource(tmp.parent, cache_size=0, rotation="ignore")
    try:
        persisted = src.exact_frame_index(tmp.name)
        times = src.timestamps(tmp.name)
    except (VideoReadError, av.error.FFmpegError) as e:
        said = ffmpeg_words(e) if isinstance(e, av.error.FFmpegError) else str(e)
        raise VideoReadError(source, f"the converted file does not decode: {said}") from e
    got = persisted.index.num_frames
    if got != count:
        raise VideoReadError(
            source, f"the converted file decodes {got} frames, not the {count} written"
        )
    want = pts.astype(np.float64) / den
    if times.shape != want.shape or not np.allclose(times, want, rtol=0, atol=0.5 / den):
        bad = int(np.argmax(np.abs(times - want) > 0.5 / den)) if times.shape == want.shape else 0
        raise VideoReadError(
            source,
            f"the converted file's timestamps differ from the source's (frame {bad}: "
            f"{times[bad] if times.size > bad else None} s, not {want[bad]} s)",
        )
    return persisted


class VideoFormat(StorageFormat):
    """`video`: the input re-encoded for random access (module doc), read by `VideoSource`
    with the originals' ids."""

    name = "video"
    suffix = CONVERTED_SUFFIX
    described = "video files"
    source = VideoSource
    options = VideoOptions
    open_options = {"cache_size": 0, "rotation": "ignore"}
    heads_kind = VideoSource.heads_kind
    bench = (
        BenchRow(
            "video-reencoded",
            "VideoSource(threads=1) on `convert --to video` (H.264, a keyframe every "
            f"{DEFAULT_GOP} frames, no B-frames, CRF {DEFAULT_CRF:g}, preset {DEFAULT_PRESET}, "
            f"tune {DEFAULT_TUNE})",
            {"threads": 1},
        ),
    )
    #: Re-encoded video at four (GOP, CRF) points, from all-intra to a keyframe every 16
    #: frames, at `convert`'s default preset (GOP 8 / CRF 20 is `convert --to video`'s default).
    choose_options = (
        {"gop": 1, "crf": 18},
        {"gop": 8, "crf": 20},
        {"gop": 8, "crf": 23},
        {"gop": 16, "crf": 23},
    )

    def files(self, root: Path, video_id: str) -> list[Path]:
        return [VideoSource(root).path(video_id)]

    def write(self, container: Path, frames: Frames, options: Any) -> Written:
        """Encode the input's frames (`Frames.rgb`: uint8 (H, W, 3) RGB, one size, resized as
        stored) into `container` at the input's own timestamps, verify it and put it in place
        with its frame index (module doc). The timestamps are those its packets promise, a
        guess made before decoding (which may promise more frames than decode); the input's
        true ones, once its frames are consumed, must be the first of them.

        Raises:
            VideoReadError: the input has no timestamps (a JPEG folder), a frame changes size,
                there are more frames than timestamps, the timestamps do not increase, or the
                written file does not decode to exactly what was written (naming the input and
                the reason). `container` is then left untouched.
        """
        source = frames.path
        planned = frames.planned_timestamps()  # a packet scan where the container stores pts
        if planned is None:
            raise VideoReadError(
                source, "a JPEG frame folder has no timestamps to keep: --to video takes videos"
            )
        timestamps, time_base = planned
        pts, den = output_pts(timestamps, time_base)
        with writing(container) as tmp:
            count, size = _encode(tmp, frames.rgb(), pts, den, frames.fps, options, source)
            exact = frames.planned_timestamps()  # after the full decode: the true ones
            assert exact is not None
            if exact[0].shape[0] != count or not np.array_equal(exact[0], timestamps[:count]):
                raise VideoReadError(
                    source,
                    f"{count} frames decoded, but the decode's {exact[0].shape[0]} timestamps "
                    f"are not the first of the {len(timestamps)} the packets promised",
                )
            write_index(container, _verify(tmp, count, pts[:count], den, source), digest_of=tmp)
        return Written(count, size)

    def verify(self, container: Path, frames: Frames) -> Written:
        """Decoded in full, its index written if missing."""
        src = VideoSource(container.parent, **self.open_options)
        written = self.read_back(src, container.name, container)
        if not index_path(container).exists():
            src.write_index(container.name)
        return written
