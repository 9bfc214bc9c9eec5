"""`vidload bench`: how fast every frame source reads the same clips, and what it costs on disk.

    vidload bench [DATA] [--work DIR] [--num-videos N] [--clips N] [--repeats R] [--workers W]
                  [--cold] [--json PATH] [--plot PATH] [--markdown] [--quick] ...

Without DATA it generates UCF101-like sample videos (`vidload.synth`); with DATA (a folder of
videos) it takes the first `--num-videos` of them. Either way the videos are converted into every
format (`vidload.convert`) in a work folder that later runs reuse. Then, on the same sampled
clips (a fixed seed; TSN segment clips; the same video ids and index arrays for every row) it
measures each source and some reference loaders:

* clips/s and frames/s in one process, and through a DataLoader (batches of `--batch-size`,
  `--workers` persistent workers, pin_memory only when CUDA is available);
* where the time goes: reading the bytes only, decoding the same bytes already in memory, and
  the rest (container overhead, tensor building, collate);
* bytes read per clip and bytes on disk per video against the source video;
* with `--cold`, the first epoch after evicting the files from the page cache against a warm one;
* reduced-size (DCT-scaled) JPEG decode against full decode + resize.

Every figure is the best of `--repeats` repeats, interleaved round-robin over the rows; in one
process the rows take turns batch by batch, and a row's figure adds up each batch's best (on a
shared machine the CPU's speed drifts within one row's pass). A row's whole read, raw read and
decode are timed in the same pass, clip by clip, and one-process times leave out what the
benchmark waited for a CPU held by another process (Linux run-queue delay), so a burst of load
from other processes does not shift time from one part to another.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from vidload import cli
from vidload._bench.config import BenchConfig
from vidload._bench.run import run_benchmark

__all__ = ["BenchConfig", "main", "run_benchmark"]


def main(argv: Sequence[str] | None = None) -> int:
    """`vidload bench` with the arguments `argv` (default: sys.argv[1:]): prints the report and
    returns 0; 2 for a bad argument (`UsageError`: the usage line and the rule broken), 1 for
    any other error (one line naming it; `-v` adds the traceback)."""
    return cli.main(["bench", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
