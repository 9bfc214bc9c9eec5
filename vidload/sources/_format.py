"""A storage kind's one class: everything vidload does with a kind of container.

A format class (a `StorageFormat`) carries its kind whole: its name and suffix (what a
container's name adds to its id's stem), its reader (`source`), how `convert` writes one
container from an input's frames (`write`: a JPEG kind encodes frames, `video` re-encodes
them), its own options (`options`, a dataclass whose fields are `convert`'s keywords of the
same names: `quality`/`subsampling` for the JPEG kinds, `gop`/`crf`/`preset`/`tune` for
`video`), how a container found in place is verified (`verify`), the record kind of the heads
sidecar (`heads_kind`, the reader's own), how a batch of its reads is planned (the reader's
`prepare` / `fetch_plan` / `settle`, `vidload._dataset.batch`), and what `vidload bench` and
`vidload choose` measure of it. `vidload._kinds` maps a kind's name to its class, imported on
first use, as fsspec's `registry.py` maps a protocol to its filesystem class: convert, probe,
bench, choose and the CLI read that table and never a kind's name.

`Frames` is what `convert` hands a writer: one input's frames, decoded (`rgb`) or as JPEG
bytes (`jpeg`: a JPEG folder's own bytes where nothing is resized), with their timestamps.
A kind that is not JPEG bytes (`tests/raw_kind.py`: raw uint8 frames) fits the same class.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from vidload._layout import container_name, container_path
from vidload.sources.jpeg_decode import Subsampling

__all__ = [
    "BenchRow",
    "Frames",
    "NoOptions",
    "StorageFormat",
    "Written",
    "path_bytes",
]


@dataclass(frozen=True)
class BenchRow:
    """One row `vidload bench` measures on a kind: its name (`--only` takes it), the source's
    keyword options, and the row's description in the table."""

    name: str
    description: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Written:
    """What writing (or verifying) one container gave: its frames and their (height, width)."""

    count: int
    size: tuple[int, int]


@dataclass(frozen=True)
class NoOptions:
    """The options of a kind that has none of its own."""

    #: Fields an options file written before they existed means (`_convert.output.Output.record`).
    RECORDED_BEFORE: ClassVar[Mapping[str, Any]] = {}

    @classmethod
    def spec_parts(cls, values: Mapping[str, Any]) -> list[str]:
        """What a `vidload choose` storage name adds after the kind (`hdf5:q95`: ["q95"])."""
        return []

    @classmethod
    def spec_value(cls, part: str) -> tuple[str, Any]:
        """(option, value) of one part of a `vidload choose` storage name; ValueError."""
        raise ValueError(f"{part!r} is not an option of this storage")

    #: The form of a `vidload choose` name's options ("qQ"), for messages.
    SPEC_FORM: ClassVar[str] = ""
    #: The options a `vidload choose` candidate of the kind must give.
    SPEC_REQUIRED: ClassVar[tuple[str, ...]] = ()


def path_bytes(path: Path) -> int:
    """Size of a file, or of the files in a folder (not recursive)."""
    if path.is_dir():
        return sum(e.stat().st_size for e in os.scandir(path) if e.is_file())
    return path.stat().st_size


class Frames(Protocol):
    """One input's frames as `convert` hands them to `StorageFormat.write`
    (`vidload._convert.frames.InputFrames`). Iterating either stream raises
    `vidload._convert.frames.NoFrames` when not one frame decodes."""

    #: The input (errors name it), its id, its frame rate and the count its header reports.
    path: Path
    video_id: str
    fps: float | None
    reported: int | None
    #: The shorter side every frame is resized to, None for as decoded.
    short_side: int | None

    def rgb(self) -> Iterator[np.ndarray]:
        """uint8 (H, W, 3) RGB frames, upright, all of one size, resized to `short_side`."""
        ...

    def jpeg(self, quality: int, subsampling: Subsampling) -> Iterator[bytes]:
        """Complete JPEGs of the frames: a JPEG folder's own bytes where nothing is resized,
        else each frame of `rgb` encoded at `quality` and `subsampling`."""
        ...

    @property
    def encodes(self) -> bool:
        """`jpeg` encodes frames here (the quality applies), rather than repacking files."""
        ...

    def planned_timestamps(self) -> tuple[np.ndarray, Fraction | None] | None:
        """(float64 seconds, the stream's time base) the input's packets promise, before any
        decode (they may promise more frames than decode); None for an input with none."""
        ...

    def timestamps(self, count: int) -> np.ndarray | None:
        """float64 (count,) seconds of the `count` frames stored, once they were decoded;
        None for an input with none (a JPEG folder). VideoReadError where they disagree."""
        ...


class StorageFormat:
    """One storage kind (module doc). A subclass sets the class attributes and `write`; the
    rest has defaults that suit a kind of one file (or one folder) per video.

    Attributes:
        name: what `convert --to`, `probe`, `bench` and `choose` call it.
        suffix: what a container's name adds to its id's stem (`.h5`); "" for a folder.
        described: what a container of this kind is, in messages (".h5 files").
        source: the `FrameSource` class that reads it.
        options: its own options dataclass (`NoOptions` for none).
        open_options: the source's options where `convert` verifies and `probe` reads one
            container (no handle cache).
        heads_kind: the record kind of the heads sidecar its source reads
            (`vidload.sources._heads`), None where it keeps none.
        encoded_reads: its source's read is `read_encoded` followed by the shared JPEG
            decode (`vidload.sources.encoded`): bench times the two apart.
        takes_input: `convert` and `probe` take its containers as INPUT (found by suffix).
        local_only: it reads and writes local paths only (an OUTPUT URL is refused).
        bench: the rows `vidload bench` measures on it (none: not measured there).
        choose_options: the options `vidload choose` builds it at by default, one mapping
            per candidate.
    """

    name: ClassVar[str]
    suffix: ClassVar[str]
    described: ClassVar[str]
    source: ClassVar[type]
    options: ClassVar[type[Any]] = NoOptions
    open_options: ClassVar[Mapping[str, Any]] = {}
    heads_kind: ClassVar[str | None] = None
    encoded_reads: ClassVar[bool] = False
    takes_input: ClassVar[bool] = False
    local_only: ClassVar[bool] = False
    bench: ClassVar[tuple[BenchRow, ...]] = ()
    choose_options: ClassVar[tuple[Mapping[str, Any], ...]] = ()

    def __repr__(self) -> str:
        return f"<storage kind {self.name!r}: {self.described}>"

    @property
    def folder(self) -> bool:
        """A container of this kind is a folder (of frame files), not a file."""
        return self.suffix == ""

    @property
    def option_names(self) -> tuple[str, ...]:
        """`convert`'s keywords that are this kind's own options."""
        return tuple(f.name for f in fields(self.options))

    def open(self, root: str | os.PathLike[str], **options: Any) -> Any:
        """A source reading this kind's containers under `root`."""
        return self.source(root, **options)

    # -- where a container is

    def container_name(self, video_id: str, *, keep_extension: bool = False) -> str:
        """`video_id`'s container relative to the output folder (`vidload._layout`)."""
        return container_name(video_id, self.suffix, keep_extension=keep_extension)

    def exists(self, container: Path) -> bool:
        """Whether the container at `container` (OUTPUT / `container_name`) is there."""
        return container.exists()

    def nbytes(self, container: Path) -> int:
        """The bytes the container takes (the manifest's `bytes`)."""
        return path_bytes(container)

    def files(self, root: Path, video_id: str) -> list[Path]:
        """The files that hold `video_id`'s frames under the local `root` (bench's bytes on
        disk and cold reads): its container, or a folder's files."""
        path = container_path(root, video_id, self.suffix)
        return sorted(p for p in path.iterdir() if p.is_file()) if self.folder else [path]

    def video_bytes(self, root: Path, video_id: str) -> int:
        """The bytes on disk that hold `video_id` under the local `root` (`files`' sizes; a
        kind whose one file holds many videos counts each video's share)."""
        return sum(p.stat().st_size for p in self.files(root, video_id))

    def stored_fps(self, container: Path) -> float | None:
        """The frame rate a container stores (`probe` reports it), None when it keeps none."""
        return None

    # -- convert

    def check_output(self, output: Any) -> None:
        """Raise where `convert` cannot write this kind at OUTPUT `output` (a `Location`): a
        `local_only` kind at a URL (UsageError naming the URL)."""
        if self.local_only and output.local_file() is None:
            from vidload.errors import UsageError

            raise UsageError(
                f"{output}: storage {self.name!r} ({self.described}) is local only; "
                "give a local folder"
            )

    def write(self, container: Path, frames: Frames, options: Any) -> Written:
        """Write `frames` as the container at `container`, atomically (a container at its
        final name is complete), with the options `options` (an instance of `options`)."""
        raise NotImplementedError

    def verify(self, container: Path, frames: Frames) -> Written:
        """The frames and size of a container found at `container` without a manifest row (a
        run killed before writing it), read back through the source; VidloadError where it is
        not a valid container of this kind. `frames` (the input) is there to complete what a
        kill may have left out beside it, never decoded otherwise."""
        name = container.name[: len(container.name) - len(self.suffix)]  # the id
        return self.read_back(self.open(container.parent, **self.open_options), name, container)

    @staticmethod
    def read_back(src: Any, video_id: str, where: Path) -> Written:
        """(frames, (height, width)) of `video_id` in `src`: its count, then its first and
        last frames decoded."""
        from vidload.errors import VideoReadError

        actual = src.actual_frames(video_id)
        if actual == 0:
            raise VideoReadError(where, "holds no frames")
        _, height, width, _ = src.read(video_id, [0, actual - 1]).shape
        return Written(actual, (height, width))

    def input_source(self, root: Path, listed_frames: Mapping[str, int] | None) -> Any:
        """A source reading containers of this kind given as INPUT (`probe`), with the counts
        an annotation list gives where the kind reads them (frame folders)."""
        return self.open(root, **self.open_options)
