"""What `vidload choose` returns: one `StorageRow` per storage and the `ChooseResult` around
them (re-exported by `vidload.choose`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from vidload._choose.frontier import Pick

__all__ = ["ChooseResult", "StorageRow"]


@dataclass(frozen=True)
class StorageRow:
    """The measurements of one storage (one row of the table, one entry of the JSON `rows`).

    Attributes:
        storage: its name (`StorageSpec.name`: `original`, `video:gop8:crf23`, `hdf5:q95`).
        frontier: no other row beats it on size, speed and quality together.
        bytes_per_video: mean bytes on disk per sample video.
        size_ratio: bytes against the originals of the same videos.
        data_bytes: DATA's total bytes times `size_ratio`.
        clips_per_s_per_core: warm clips per CPU-second, one process.
        cold_clips_per_s: clips per wall-clock second of a cold first pass (None: not measured).
        psnr_db: mean PSNR (dB) against the original decode; None for the originals (exact).
        psnr_min_db: the worst frame's PSNR.
        convert_cpu_s_per_video: CPU seconds per video to build it (None for the originals).
        data_convert_core_h: core-hours to build it for all of DATA (scaled by bytes).
        spec: what it is (`StorageSpec` fields).
    """

    storage: str
    frontier: bool
    bytes_per_video: float
    size_ratio: float
    data_bytes: float
    clips_per_s_per_core: float
    cold_clips_per_s: float | None
    psnr_db: float | None
    psnr_min_db: float | None
    convert_cpu_s_per_video: float | None
    data_convert_core_h: float | None
    spec: dict[str, Any]


@dataclass(frozen=True)
class ChooseResult:
    """What `choose` measured and concluded.

    Attributes:
        rows: one per storage, in the order asked.
        pick: the answer to `need`/`cores`, or None when no need was given.
        data: DATA's path, number of videos and total bytes.
        sample: the sample videos measured (ids relative to DATA).
        left_out: sample videos left out of every row, with why (a damaged video).
        config: the settings of the run.
        notes: what the figures mean and what disturbed them.
        workdir: the scratch folder, when it was kept (`keep=True`), else None.
    """

    rows: tuple[StorageRow, ...]
    pick: Pick | None
    data: dict[str, Any]
    sample: tuple[str, ...]
    left_out: dict[str, str]
    config: dict[str, Any]
    notes: tuple[str, ...] = ()
    workdir: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The dictionary `vidload choose --json` writes: {"rows": [...], "recommendation",
        "data", "sample", "left_out", "config", "notes", "workdir"}."""
        fields = dataclasses.asdict(self).items()  # the rows and the pick as dicts too
        out = {k: list(v) if isinstance(v, tuple) else v for k, v in fields}
        return {"rows": out.pop("rows"), "recommendation": out.pop("pick"), **out}
