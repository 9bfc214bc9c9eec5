"""What a conversion stores: its options, checked once (for `convert` and
`vidload.shards.plan_convert` alike) and recorded in the output folder (`OPTIONS_NAME`, by
`vidload._convert.output.Output.record`), so that a resumed run stores every video the same way.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import MISSING, Field, asdict, dataclass, fields
from typing import Any

from vidload._checks import check_bool, check_choice, check_optional_int
from vidload._convert.report import ConvertFormat
from vidload._kinds import formats, get_kind, kind_names
from vidload.errors import UsageError
from vidload.sources._jpeg_kinds import DEFAULT_QUALITY, DEFAULT_SUBSAMPLING
from vidload.sources._video_format import (
    DEFAULT_CRF,
    DEFAULT_GOP,
    DEFAULT_PRESET,
    DEFAULT_TUNE,
    PRESETS,
    TUNES,
)
from vidload.sources.jpeg_decode import Subsampling

__all__ = [
    "DEFAULT_CRF",
    "DEFAULT_GOP",
    "DEFAULT_PRESET",
    "DEFAULT_QUALITY",
    "DEFAULT_SUBSAMPLING",
    "DEFAULT_TUNE",
    "PRESETS",
    "TUNES",
    "ConvertOptions",
]


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
    Python values, which go into the JSON options file). A kind's own options are checked by
    its options dataclass (`StorageFormat.options`): `gop`, `crf`, `preset` and `tune` are
    `to="video"`'s (`VideoOptions`: None there means the default, `DEFAULT_GOP`, ..., which
    the made object holds; for another kind they stay None), `quality` and `subsampling` the
    JPEG kinds' (`JpegOptions`).

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
        `plan_convert` passes, each by name: one left out is a KeyError here).

        Raises:
            TypeError: `options` is not a ConvertOptions, or given with option keywords, or
                neither it nor `to` is given.
        """
        if options is None:
            return cls(**keywords)  # `to` None: refused there
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
            raise TypeError(
                "to= is required: the format to convert into (or, where taken, "
                "options=ConvertOptions(...))"
            )
        check_choice("to", to, kind_names())
        put("short_side", check_optional_int("short_side", self.short_side, minimum=1))
        own = get_kind(to).option_names
        # another kind's option given (one whose default is None: not given): refused
        named = [
            f.name
            for f in fields(self)
            if f.name not in own
            and f.default is None
            and getattr(self, f.name) is not None
            and any(f.name in k.option_names for k in formats())
        ]
        if named:
            takes = [k.name for k in formats() if set(named) <= set(k.option_names)]
            where = "/".join(f"to={k!r}" for k in takes) or "another kind"
            flags = ", ".join(f"--{n}" for n in named)
            tos = "/".join(f"--to {k}" for k in takes)
            raise UsageError(
                f"{', '.join(named)} apply to {where} only ({flags} with {tos}), not to={to!r}: "
                f"leave {'them' if len(named) > 1 else 'it'} out, or convert to "
                + ("/".join(takes) or "another kind")
            )
        for name, value in asdict(self.format_options()).items():  # checked, defaults made
            put(name, value)
        put("overwrite", check_bool("overwrite", self.overwrite))
        put("shard_size", check_optional_int("shard_size", self.shard_size, minimum=1))

    def format_options(self) -> Any:
        """The kind's own options (`StorageFormat.options`: `VideoOptions`, `JpegOptions`,
        ...), made from the fields of the same names."""
        kind = get_kind(self.to)
        return kind.options(**{name: getattr(self, name) for name in kind.option_names})


def _default(f: Field[Any]) -> object:
    """A field's default (None for `to`, which has none: `plan_convert`'s default)."""
    return None if f.default is MISSING else f.default
