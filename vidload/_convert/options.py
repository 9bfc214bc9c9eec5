"""What a conversion stores: its options, checked once (for `convert` and
`vidload.shards.plan_convert` alike) and recorded in the output folder (`OPTIONS_NAME`), so that
a resumed run stores every video the same way.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from vidload._atomic import write_bytes_atomic
from vidload._checks import check_choice, check_int, check_optional_int, check_real
from vidload._kinds import kind_names
from vidload._layout import OPTIONS_NAME
from vidload._storage import Location
from vidload.errors import UsageError, VideoReadError
from vidload.sources.jpeg_decode import SUBSAMPLINGS, Subsampling

__all__ = [
    "DEFAULT_CRF",
    "DEFAULT_GOP",
    "DEFAULT_PRESET",
    "DEFAULT_QUALITY",
    "DEFAULT_SUBSAMPLING",
    "DEFAULT_TUNE",
    "PRESETS",
    "TUNES",
    "VIDEO_OPTIONS",
    "ConvertOptions",
]

#: The defaults of `convert`, `plan_convert` and `vidload convert` (the docs'
#: "JPEG quality and subsampling" benchmark says why).
DEFAULT_QUALITY = 95
DEFAULT_SUBSAMPLING: Subsampling = "420"

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
#: The options that apply to `to="video"` only (and JPEG's, `quality` and `subsampling`, to
#: the JPEG formats only): each format records and checks only its own.
VIDEO_OPTIONS: tuple[str, ...] = ("gop", "crf", "preset", "tune")
_JPEG_OPTIONS: tuple[str, ...] = ("quality", "subsampling")


@dataclass(frozen=True)
class ConvertOptions:
    """How every video of a run is stored (`vidload.convert.convert`'s arguments of the same
    names); build it with `checked`.

    Attributes:
        to: the container format.
        short_side: the frames' shorter side after resizing; None keeps the size.
        quality: JPEG quality in [1, 100] of the frames encoded.
        subsampling: chroma subsampling of the frames encoded.
        gop: `to="video"` only: the keyframe interval in frames.
        crf: `to="video"` only: libx264's constant rate factor.
        preset: `to="video"` only: libx264's preset.
        tune: `to="video"` only: libx264's tuning ("none" for none).
    """

    to: str
    short_side: int | None = None
    quality: int = DEFAULT_QUALITY
    subsampling: Subsampling = DEFAULT_SUBSAMPLING
    gop: int = DEFAULT_GOP
    crf: float = DEFAULT_CRF
    preset: str = DEFAULT_PRESET
    tune: str = DEFAULT_TUNE

    @classmethod
    def checked(
        cls,
        *,
        to: object,
        short_side: object,
        quality: object,
        subsampling: object,
        gop: object = None,
        crf: object = None,
        preset: object = None,
        tune: object = None,
    ) -> ConvertOptions:
        """The options, checked (`vidload._checks`: NumPy integers are ints, bools are not;
        stored as plain Python values, which go into the JSON options file). `gop`, `crf`,
        `preset` and `tune` are for `to="video"` only (None: the defaults).

        Raises:
            TypeError: short_side, quality or gop is not an int, crf not a number.
            ValueError: a value out of its range or not one of its choices, or a video option
                given for another format.
        """
        check_choice("to", to, kind_names())
        side = check_optional_int("short_side", short_side, minimum=1)
        q = check_int("quality", quality)
        if not 1 <= q <= 100:
            raise ValueError(f"quality ({q}) must be in [1, 100]")
        check_choice("subsampling", subsampling, SUBSAMPLINGS)
        given = {"gop": gop, "crf": crf, "preset": preset, "tune": tune}
        if to != "video":
            named = [k for k, v in given.items() if v is not None]
            if named:
                raise UsageError(
                    f"{', '.join(named)} apply to to='video' only (--to video), not to={to!r}"
                )
            return cls(to, side, q, subsampling)  # type: ignore[arg-type]  # checked above
        g = DEFAULT_GOP if gop is None else check_int("gop", gop, minimum=1)
        c = DEFAULT_CRF if crf is None else check_real("crf", crf)
        if not 0 <= c <= 51:
            raise ValueError(f"crf ({c}) must be in [0, 51]")
        p = DEFAULT_PRESET if preset is None else check_choice("preset", preset, PRESETS)
        t = DEFAULT_TUNE if tune is None else check_choice("tune", tune, TUNES)
        return cls(to, side, q, subsampling, g, float(c), p, t)  # type: ignore[arg-type]

    def recorded(self) -> dict[str, object]:
        """What the options file holds: `to`, `short_side` and the format's own options."""
        options = dataclasses.asdict(self)
        other = _JPEG_OPTIONS if self.to == "video" else VIDEO_OPTIONS
        return {k: v for k, v in options.items() if k not in other}

    def record(self, out: Path | Location, *, overwrite: bool) -> None:
        """Refuse to resume into `out` converted with other options (UsageError, unless
        `overwrite`); else record these ones in `out/OPTIONS_NAME`. An options file without
        `subsampling` (written before it existed) means "420". `out` may be an OUTPUT URL's
        `Location` (the file is then one object, written whole)."""
        path = out / OPTIONS_NAME
        options = self.recorded()
        if path.exists() and not overwrite:
            try:
                old = json.loads(path.read_bytes())
            except (OSError, ValueError, VideoReadError) as e:
                raise ValueError(f"{path}: unreadable ({e}); remove it or pass overwrite") from e
            if isinstance(old, dict) and self.to != "video":
                old = {"subsampling": "420", **old}
            if old != options:
                changed = (
                    [k for k in options if old.get(k) != options[k]]
                    if isinstance(old, dict)
                    else []
                )
                differ = (
                    ", ".join(
                        f"--{k.replace('_', '-')} {old.get(k)} before, {options[k]} now"
                        for k in changed
                    )
                    or f"recorded {old}"
                )
                raise UsageError(
                    f"OUTPUT {str(out)!r} was converted with other options ({differ}; recorded "
                    f"in {path.name}): use the same options to resume, or --overwrite "
                    f"(overwrite=True) to convert everything again"
                )
            return
        data = (json.dumps(options) + "\n").encode()
        if isinstance(path, Location):
            path.write_bytes(data)
        else:
            write_bytes_atomic(path, data)
