"""The candidate storages of `vidload choose`: what each is, how it is built, how it is read.

Every candidate is built with vidload's own `convert` from the sample's videos (never an
`ffmpeg` binary: `vidload._measure.build`, as bench builds its own) and read with vidload's own
sources, so what is measured is what a user gets.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from vidload._checks import check_choice, listed
from vidload._kinds import formats, kind_names
from vidload._measure.clips import ORIGINAL, Originals, storage_kind

__all__ = [
    "DEFAULT_STORAGES",
    "StorageSpec",
    "storage_forms",
]


def _kinds_in_order() -> list[Any]:
    """The originals and the kinds, those whose candidates need no option first (then table
    order: the originals first)."""
    return sorted([Originals(), *formats()], key=lambda k: bool(k.options.SPEC_REQUIRED))


def storage_forms() -> str:
    """The names `StorageSpec.parse` reads, for messages and `--help`."""
    return listed([f"{k.name}{k.options.SPEC_FORM}" for k in _kinds_in_order()])


@dataclass(frozen=True)
class StorageSpec:
    """One candidate storage.

    Attributes:
        to: "original" (the videos as they are, `VideoSource`), or a storage kind of
            `vidload._kinds`: "video" (`convert --to video`, `VideoSource`), "jpeg"
            (`JpegSource`), "hdf5" (`Hdf5Source`), "npy" (`NpySource`, mmap), ...
        quality: JPEG quality in [1, 100] (the JPEG kinds only, which need it).
        gop, crf, preset: keyframe interval, libx264 CRF and preset (video only; None takes
            `convert`'s default).

    Each option is checked by its kind's options dataclass (`StorageFormat.options`).
    """

    to: str
    quality: int | None = None
    gop: int | None = None
    crf: int | None = None
    preset: str | None = None

    def __post_init__(self) -> None:
        check_choice("to", self.to, (ORIGINAL, *kind_names()))
        given, kind = self.options(), storage_kind(self.to)
        for name in given:
            if name not in kind.option_names:
                takes = [k.name for k in formats() if name in k.option_names]
                raise ValueError(f"{name} applies to {'/'.join(takes)}, not {self.to!r}")
        for name in kind.options.SPEC_REQUIRED:
            if name not in given:
                example = ":".join(kind.options.spec_parts(kind.choose_options[0]))
                raise ValueError(f"{self.to} needs a {name} (e.g. {self.to}:{example})")
        kind.options(**given)  # checked as convert checks it

    def options(self) -> dict[str, Any]:
        """The options this candidate sets (its fields but `to`, those not None): each kind takes
        those of its own options dataclass (`StorageFormat.options`)."""
        return {k: v for k, v in asdict(self).items() if k != "to" and v is not None}

    @property
    def name(self) -> str:
        """`original`, `video:gop8:crf23[:PRESET]`, `hdf5:q95`: what `parse` reads back."""
        return ":".join([self.to, *storage_kind(self.to).options.spec_parts(self.options())])

    @classmethod
    def parse(cls, text: str) -> StorageSpec:
        """A spec from its `name`: `original`, `video[:gopN][:crfQ][:PRESET]`, `jpeg:qQ`,
        `hdf5:qQ`, `npy:qQ`, ... (`storage_forms()`).

        Raises:
            ValueError: anything else, naming the text and the form expected.
        """
        kind, *rest = text.strip().split(":")
        try:
            if kind not in (ORIGINAL, *kind_names()):
                raise ValueError("unknown form")
            options = storage_kind(kind).options
            opts: dict[str, Any] = {}
            for part in rest:
                key, value = options.spec_value(part)
                if key in opts:
                    raise ValueError(f"{part!r}: {key} given twice")
                opts[key] = value
            if any(name not in opts for name in options.SPEC_REQUIRED):
                raise ValueError("unknown form")
            return cls(kind, **opts)
        except ValueError as e:
            raise ValueError(f"storage {text!r}: {e}; expected {storage_forms()}") from e


def default_storages() -> tuple[StorageSpec, ...]:
    """The candidates `vidload choose` builds by default: the originals, then each kind at its
    `choose_options` (`vidload._kinds`), those that need no option first: re-encoded video for
    random access at four (GOP, CRF) points, from all-intra to a keyframe every 16 frames, at
    `convert`'s default preset; HDF5 at three JPEG qualities, npy at one, as its bytes are
    HDF5's plus padding."""
    return tuple(StorageSpec(k.name, **o) for k in _kinds_in_order() for o in k.choose_options)


#: `default_storages()` as the table had them when this module was imported.
DEFAULT_STORAGES: tuple[StorageSpec, ...] = default_storages()
