"""`vidload choose`'s options, held once: a frozen dataclass, checked when made.

`choose(...)` lists them in its signature (the one listing users see) and builds one
`ChooseOptions`, passing each by name; every step of the run reads its fields, and the
result's `config` is the same object as a dict (`as_config`).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from vidload._checks import check_bool, check_choice, check_int, check_optional_int, check_real
from vidload._cpus import default_workers
from vidload.sampling import SAMPLING_MODES, SamplingMode

__all__ = ["ChooseOptions"]

_POSITIVE = (
    "sample", "num_frames", "stride", "clips", "batch_size", "rounds", "cold_rounds",
    "psnr_frames",
)  # fmt: skip


@dataclass(frozen=True)
class ChooseOptions:
    """What one `choose` run measures and how (the arguments of `vidload.choose.choose`, which
    documents each). Made checked: ints are plain ints (NumPy integers accepted, bools not),
    `jobs` None becomes the CPUs this process may use.

    Raises:
        TypeError / ValueError: a value of the wrong type or out of its range, naming it.
    """

    sample: int = 8
    short_side: int | None = None
    num_frames: int = 8
    sampling: SamplingMode = "segment"
    stride: int = 1
    clips: int = 64
    batch_size: int = 16
    rounds: int = 3
    min_time: float = 0.3
    cold: bool = True
    cold_rounds: int = 1
    psnr_frames: int = 16
    need: float | None = None
    cores: int | None = None
    min_psnr: float | None = None
    keep: bool = False
    jobs: int | None = None
    seed: int = 0
    progress: bool = True

    def __post_init__(self) -> None:
        put = functools.partial(object.__setattr__, self)  # frozen: set once, here

        for name in _POSITIVE:
            put(name, check_int(name, getattr(self, name), minimum=1))
        put("short_side", check_optional_int("short_side", self.short_side, minimum=1))
        put("seed", check_int("seed", self.seed))
        check_choice("sampling", self.sampling, SAMPLING_MODES)
        if self.sampling == "segment" and self.stride != 1:
            raise ValueError(f"stride ({self.stride}) must be 1 for sampling='segment'")
        put("min_time", check_real("min_time", self.min_time, minimum=0))
        for name in ("cold", "keep", "progress"):
            put(name, check_bool(name, getattr(self, name)))
        if (self.need is None) != (self.cores is None):
            raise ValueError("need and cores go together: clips/s needed per GPU, cores per GPU")
        if self.need is not None:
            put("need", check_real("need", self.need))
            if not self.need > 0:
                raise ValueError(f"need ({self.need}) must be > 0 clips/s")
            put("cores", check_int("cores", self.cores, minimum=1))
        if self.min_psnr is not None:
            if self.need is None:
                raise ValueError("min_psnr applies to the choice: give need and cores with it")
            put("min_psnr", check_real("min_psnr", self.min_psnr))
        put(
            "jobs",
            default_workers() if self.jobs is None else check_int("jobs", self.jobs, minimum=1),
        )

    def as_config(self) -> dict[str, Any]:
        """The options as the result's `config` records them (all but `progress`)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "progress"}
