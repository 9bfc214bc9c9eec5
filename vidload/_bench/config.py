"""The settings of one benchmark run (`BenchConfig`): what `vidload bench`'s options set, checked
when made; every step of a run (`run`, `geometry`, ...) reads them by name. With the names of
the rows (`source_names`, `REFERENCE_NAMES`): light, so that the command's parser (its `--only`
help) is built without the measuring code (and torch)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from vidload._checks import check_int, check_positive_int, check_real
from vidload._cpus import default_workers
from vidload._kinds import formats

__all__ = ["REFERENCE_NAMES", "VIDEO_ROW", "BenchConfig", "container_rows", "source_names"]

#: The row of the original video files, read by `VideoSource` (the `video` kind's own row,
#: `convert --to video`'s files, is "video-reencoded").
VIDEO_ROW = "video"
REFERENCE_NAMES = ("memory", "pil", "pyav-from-start", "torchcodec", "decord")


def container_rows() -> tuple[str, ...]:
    """The rows of the storage kinds: each kind's bench rows
    (`vidload.sources._format.StorageFormat.bench`), in table order."""
    return tuple(row.name for kind in formats() for row in kind.bench)


def source_names() -> tuple[str, ...]:
    """The rows that read through a vidload source: the videos, then the kinds' rows."""
    return (VIDEO_ROW, *container_rows())


@dataclass
class BenchConfig:
    """Settings of one benchmark run (the command line's options)."""

    data: Path | None = None
    work: Path | None = None
    num_videos: int = 8
    clips: int = 64
    repeats: int = 3
    frames: int = 8
    batch_size: int = 16
    workers: int = field(default_factory=default_workers)
    seed: int = 0
    quality: int = 95
    short_side: int | None = None
    min_time: float = 0.3
    cold: bool = False
    bucket: str | None = None  # --bucket URL: only the bucket-against-local-disk rows
    dataloader: bool = True
    only: tuple[str, ...] | None = None
    synth_seconds: float = 7.0
    synth_size: tuple[int, int] = (320, 240)
    convert_workers: int | None = None  # None: default_workers()
    progress: bool = True
    geometry_short_side: int | None = 128  # None: no geometry rows
    geometry_hd: tuple[int, int] | None = (1920, 1080)  # None: no high-resolution sample
    geometry_hd_seconds: float = 1.0

    def __post_init__(self) -> None:
        for name in ("num_videos", "clips", "repeats", "frames", "batch_size"):
            setattr(self, name, check_positive_int(name, getattr(self, name)))
        self.workers = check_int("workers", self.workers, minimum=0)
        self.min_time = check_real("min_time", self.min_time, minimum=0)
        if self.only is not None:
            unknown = sorted(set(self.only) - set(source_names()) - set(REFERENCE_NAMES))
            if unknown:
                raise ValueError(
                    f"--only names unknown loaders {unknown}; choose from "
                    f"{', '.join(source_names() + REFERENCE_NAMES)}"
                )
