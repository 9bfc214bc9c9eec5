"""The candidate storages of `vidload choose`: what each is, how it is built, how it is read.

Every candidate is built with vidload's own `convert` from the sample's videos (never an
`ffmpeg` binary) and read with vidload's own sources, so what is measured is what a user gets.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vidload._checks import check_choice, check_int, check_optional_int
from vidload._convert.options import PRESETS
from vidload._kinds import container_kinds, get_kind, kind_names

__all__ = ["DEFAULT_STORAGES", "StorageSpec", "build_storage", "open_storage"]


def _jpeg_kinds() -> tuple[str, ...]:
    """The storage kinds that hold JPEG frames (`vidload._kinds`): a quality applies."""
    return tuple(k.name for k in container_kinds())


@dataclass(frozen=True)
class StorageSpec:
    """One candidate storage.

    Attributes:
        to: "original" (the videos as they are, `VideoSource`), "video" (`convert --to video`,
            `VideoSource`), or a JPEG container kind of `vidload._kinds`: "jpeg"
            (`JpegSource`), "hdf5" (`Hdf5Source`), "npy" (`NpySource`, mmap), ...
        quality: JPEG quality in [1, 100] (JPEG containers only).
        gop, crf, preset: keyframe interval, libx264 CRF and preset (video only; None takes
            `convert`'s default).
    """

    to: str
    quality: int | None = None
    gop: int | None = None
    crf: int | None = None
    preset: str | None = None

    def __post_init__(self) -> None:
        check_choice("to", self.to, ("original", *kind_names()))
        jpeg = self.to in _jpeg_kinds()
        if self.quality is not None:
            if not jpeg:
                raise ValueError(f"quality applies to {'/'.join(_jpeg_kinds())}, not {self.to!r}")
            q = check_int("quality", self.quality)
            if not 1 <= q <= 100:
                raise ValueError(f"quality ({q}) must be in [1, 100]")
        elif jpeg:
            raise ValueError(f"{self.to} needs a quality (e.g. {self.to}:q95)")
        if self.to != "video" and (self.gop, self.crf, self.preset) != (None, None, None):
            raise ValueError(f"gop, crf and preset apply to 'video', not {self.to!r}")
        check_optional_int("gop", self.gop, minimum=1)
        check_optional_int("crf", self.crf, minimum=0)
        if self.preset is not None:
            check_choice("preset", self.preset, PRESETS)

    @property
    def name(self) -> str:
        """`original`, `video:gop8:crf23[:PRESET]`, `hdf5:q95`: what `parse` reads back."""
        if self.to == "original":
            return "original"
        if self.to == "video":
            parts = ["video"]
            if self.gop is not None:
                parts.append(f"gop{self.gop}")
            if self.crf is not None:
                parts.append(f"crf{self.crf}")
            if self.preset is not None:
                parts.append(self.preset)
            return ":".join(parts)
        return f"{self.to}:q{self.quality}"

    @classmethod
    def parse(cls, text: str) -> StorageSpec:
        """A spec from its `name`: `original`, `video[:gopN][:crfQ][:PRESET]`, `jpeg:qQ`,
        `hdf5:qQ`, `npy:qQ`.

        Raises:
            ValueError: anything else, naming the text and the form expected.
        """
        kind, *rest = text.strip().split(":")
        *jpegs, last = (f"{k}:qQ" for k in _jpeg_kinds())
        form = f"original, video[:gopN][:crfQ][:PRESET], {', '.join(jpegs)} or {last}"
        try:
            if kind == "original" and not rest:
                return cls("original")
            if kind == "video":
                opts: dict[str, Any] = {}
                for part in rest:
                    if part.startswith("gop") and part[3:].isdigit():
                        opts["gop"] = int(part[3:])
                    elif part.startswith("crf") and part[3:].isdigit():
                        opts["crf"] = int(part[3:])
                    elif part in PRESETS and "preset" not in opts:
                        opts["preset"] = part
                    else:
                        raise ValueError(
                            f"{part!r} is not gopN, crfQ or a preset ({', '.join(PRESETS)})"
                        )
                return cls("video", **opts)
            if kind in _jpeg_kinds() and len(rest) == 1 and rest[0][:1] == "q":
                if rest[0][1:].isdigit():
                    return cls(kind, quality=int(rest[0][1:]))
            raise ValueError("unknown form")
        except ValueError as e:
            raise ValueError(f"storage {text!r}: {e}; expected {form}") from e

    def convert_options(self) -> dict[str, Any]:
        """The keyword arguments of `vidload.convert.convert` that build this storage."""
        if self.to == "video":
            opts = {"gop": self.gop, "crf": self.crf, "preset": self.preset}
            return {"to": "video", **{k: v for k, v in opts.items() if v is not None}}
        return {"to": self.to, "quality": self.quality}


def default_storages() -> tuple[StorageSpec, ...]:
    """The candidates `vidload choose` builds by default: the originals; re-encoded video for
    random access at four (GOP, CRF) points, from all-intra to a keyframe every 16 frames, at
    `convert`'s default preset (GOP 8 / CRF 20 is `convert --to video`'s default); then each
    JPEG container kind at its `choose_qualities` (`vidload._kinds`: HDF5 at three JPEG
    qualities, npy at one, as its bytes are HDF5's plus padding)."""
    return (
        StorageSpec("original"),
        StorageSpec("video", gop=1, crf=18),
        StorageSpec("video", gop=8, crf=20),
        StorageSpec("video", gop=8, crf=23),
        StorageSpec("video", gop=16, crf=23),
        *(StorageSpec(k.name, quality=q) for k in container_kinds() for q in k.choose_qualities),
    )


#: `default_storages()` as the table had them when this module was imported.
DEFAULT_STORAGES: tuple[StorageSpec, ...] = default_storages()


@dataclass(frozen=True)
class BuildJob:
    """Build `spec` from the videos in `sample` into `out` (picklable: a pool job)."""

    spec: StorageSpec
    sample: Path
    out: Path
    short_side: int | None


@dataclass(frozen=True)
class Built:
    """What building one storage gave: the CPU seconds of the whole conversion (this process,
    all its threads: decode, resize, encode, write), the videos converted, and those that
    failed with why."""

    spec: StorageSpec
    out: Path
    cpu_s: float
    converted: tuple[str, ...]
    failed: dict[str, str]


def build_storage(job: BuildJob) -> Built:
    """Convert the sample into `job.out` in this process (`workers=1`), timing its CPU.

    One conversion per process, so `time.process_time` is exactly its cost; `vidload choose`
    runs several of these jobs side by side (`vidload._parallel.run_parallel`)."""
    from vidload.convert import convert

    if job.out.exists():
        shutil.rmtree(job.out)
    start = time.process_time()
    report = convert(
        job.sample,
        job.out,
        workers=1,
        short_side=job.short_side,
        overwrite=True,
        progress=False,
        **job.spec.convert_options(),
    )
    cpu = time.process_time() - start
    failed = {r.video_id: str(r.error) for r in report.failed}
    return Built(job.spec, job.out, cpu, tuple(report.converted), failed)


def open_storage(spec: StorageSpec, root: Path) -> Any:
    """The vidload source that reads `spec`'s files under `root`."""
    return get_kind("video" if spec.to == "original" else spec.to).open(root)
