"""What a conversion stores: its options, checked once (for `convert` and
`vidload.shards.plan_convert` alike) and recorded in the output folder (`OPTIONS_NAME`), so that
a resumed run stores every video the same way.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import MISSING, Field, dataclass, fields
from pathlib import Path
from typing import Any

from vidload._checks import check_bool, check_choice, check_int, check_optional_int, check_real
from vidload._convert.report import ConvertFormat
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
    """A conversion's options, held once: `vidload.convert.convert`'s and
    `vidload.shards.plan_convert`'s arguments of the same names (`convert` documents each),
    checked when made; `convert`, `plan_convert`, the jobs and `vidload convert` pass this one
    object along.

    `to`, `short_side` and the format's own options say how every video is stored (`recorded`
    in the output folder, so that a resumed run stores every video the same way); the rest say
    where from and how (`overwrite`, `root`, `labels`, `shard_size`, `storage_options`). How the
    run is spread (`workers`, `executor`, `progress`, decoding `threads`) is not an option of
    what is converted: `run_convert` and `plan_convert` take those beside it.

    Made checked (`vidload._checks`: NumPy integers are ints, bools are not; stored as plain
    Python values, which go into the JSON options file). `gop`, `crf`, `preset` and `tune` are
    for `to="video"` only: None there means the default (`DEFAULT_GOP`, ...), which the made
    object holds; for another format they stay None.

    Raises:
        TypeError: short_side, quality, gop or shard_size is not an int, crf not a number,
            overwrite not a bool.
        ValueError: a value out of its range or not one of its choices, or a video option
            given for another format (UsageError).
    """

    to: ConvertFormat
    short_side: int | None = None
    quality: int = DEFAULT_QUALITY
    subsampling: Subsampling = DEFAULT_SUBSAMPLING
    gop: int | None = None
    crf: float | None = None
    preset: str | None = None
    tune: str | None = None
    overwrite: bool = False
    root: str | os.PathLike[str] | None = None
    labels: str | os.PathLike[str] | None = None
    shard_size: int | None = None
    storage_options: Mapping[str, Any] | None = None

    @classmethod
    def from_keywords(cls, options: ConvertOptions | None, /, **keywords: Any) -> ConvertOptions:
        """`vidload.shards.plan_convert`'s options: `options` where given (not None), when
        every field's keyword is left at its default (the keywords or one object, not both);
        else the options made of `keywords`, checked. `keywords` names every field (what
        `plan_convert` passes, each by name).

        Raises:
            TypeError: `options` is not a ConvertOptions, or given with option keywords, or
                neither it nor `to` is given.
        """
        names = [f.name for f in fields(cls)]
        if sorted(keywords) != sorted(names):
            raise TypeError(f"from_keywords takes every field by name: {', '.join(names)}")
        if options is None:
            if keywords["to"] is None:
                raise TypeError("to= is required (or options=ConvertOptions(...))")
            return cls(**keywords)
        if not isinstance(options, ConvertOptions):
            raise TypeError(f"options must be a ConvertOptions, got {type(options).__name__}")
        both = [f.name for f in fields(cls) if keywords[f.name] != _default(f)]
        if both:
            raise TypeError(
                f"pass options= or the option keywords, not both ({', '.join(both)} given)"
            )
        return options

    def __post_init__(self) -> None:
        put = functools.partial(object.__setattr__, self)  # frozen: set once, here
        to = self.to
        if to is None:
            raise TypeError("to is required: the format to convert into")
        check_choice("to", to, kind_names())
        put("short_side", check_optional_int("short_side", self.short_side, minimum=1))
        q = check_int("quality", self.quality)
        if not 1 <= q <= 100:
            raise ValueError(f"quality ({q}) must be in [1, 100]")
        put("quality", q)
        check_choice("subsampling", self.subsampling, SUBSAMPLINGS)
        given = {k: getattr(self, k) for k in VIDEO_OPTIONS}
        if to != "video":
            named = [k for k, v in given.items() if v is not None]
            if named:
                flags = ", ".join(f"--{k}" for k in named)
                raise UsageError(
                    f"{', '.join(named)} apply to to='video' only ({flags} with --to video), "
                    f"not to={to!r}: leave {'them' if len(named) > 1 else 'it'} out, or "
                    "convert to video"
                )
        else:
            gop, crf, preset, tune = given.values()
            put("gop", DEFAULT_GOP if gop is None else check_int("gop", gop, minimum=1))
            c = DEFAULT_CRF if crf is None else check_real("crf", crf)
            if not 0 <= c <= 51:
                raise ValueError(f"crf ({c}) must be in [0, 51] (--crf)")
            put("crf", float(c))
            put(
                "preset",
                DEFAULT_PRESET if preset is None else check_choice("preset", preset, PRESETS),
            )
            put("tune", DEFAULT_TUNE if tune is None else check_choice("tune", tune, TUNES))
        put("overwrite", check_bool("overwrite", self.overwrite))
        put("shard_size", check_optional_int("shard_size", self.shard_size, minimum=1))

    def recorded(self) -> dict[str, object]:
        """What the options file holds: `to`, `short_side` and the format's own options."""
        own = VIDEO_OPTIONS if self.to == "video" else _JPEG_OPTIONS
        return {k: getattr(self, k) for k in ("to", "short_side", *own)}

    def to_record(self, out: Path | Location, *, overwrite: bool) -> bytes | None:
        """Refuse to resume into `out` converted with other options (UsageError, unless
        `overwrite`); else what to record in `out/OPTIONS_NAME` (the output writes it, as it
        writes: `vidload._convert.output`), None when these options are recorded there
        already. An options file without `subsampling` (written before it existed) means
        "420". `out` is a local folder or an OUTPUT URL's `Location`: it is only read here."""
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
            return None
        return (json.dumps(options) + "\n").encode()


def _default(f: Field[Any]) -> object:
    """A field's default (None for `to`, which has none: `plan_convert`'s default)."""
    return None if f.default is MISSING else f.default
