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

Every figure is the best of `--repeats` repeats, interleaved round-robin over the rows. A row's
whole read, raw read and decode are timed in the same pass, clip by clip, and one-process times
leave out what the benchmark waited for a CPU held by another process (Linux run-queue delay),
so a burst of load from other processes does not shift time from one part to another.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vidload._bench import report
from vidload._bench.run import REFERENCE_NAMES, BenchConfig, run_benchmark, source_names
from vidload._bench.workdir import log
from vidload._cpus import default_workers
from vidload._exit import report_error
from vidload._kinds import kind_names
from vidload.errors import UsageError

__all__ = ["BenchConfig", "main", "run_benchmark"]


# --------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="vidload bench",
        description=(
            "Speed of every frame source (the videos as they are and every storage kind: "
            f"{', '.join(kind_names())}) on the same clips, against reference loaders; bytes "
            "on disk and read per clip. Without DATA, UCF101-like sample videos are generated. "
            "Figures are the best of the interleaved repeats."
        ),
    )
    add = p.add_argument
    add("data", nargs="?", type=Path, metavar="DATA", help="folder of videos (default: generate)")
    add(
        "--work",
        type=Path,
        metavar="DIR",
        help="work folder for the videos and their conversions, reused across runs "
        "(default: under the system temp folder)",
    )
    add(
        "--num-videos",
        type=int,
        metavar="N",
        help="videos to generate, or to take from DATA (the first N by path); 8 (quick: 2)",
    )
    add("--clips", type=int, metavar="N", help="clips read per pass; 64 (quick: 16)")
    add("--repeats", type=int, metavar="R", help="interleaved repeats; 3 (quick: 1)")
    add("--frames", type=int, default=8, metavar="T", help="frames per clip; 8")
    add("--batch-size", type=int, default=16, metavar="B", help="clips per batch; 16")
    add(
        "--workers",
        type=int,
        metavar="W",
        help=f"DataLoader workers; the CPUs this process may use ({default_workers()} here)",
    )
    add("--seed", type=int, default=0, metavar="S", help="seed of the clip sampling; 0")
    add("--quality", type=int, default=95, metavar="Q", help="JPEG quality when converting; 95")
    add("--short-side", type=int, metavar="S", help="resize frames when converting; off")
    add(
        "--min-time",
        type=float,
        metavar="SEC",
        help="a timed unit repeats its pass until it lasts this long; 0.3 (quick: 0)",
    )
    add("--cold", action="store_true", help="also time a cold-cache first epoch vs a warm one")
    add(
        "--bucket",
        metavar="URL",
        help="only the bucket rows: upload the conversions under URL (once) and time the "
        "container sources reading from there against the local work folder, with requests "
        "and bytes per clip (reached as the AWS configuration says: AWS_ENDPOINT_URL, ...; "
        "tools/bucket_latency.py measures every storage against nginx with added latency)",
    )
    add("--no-dataloader", action="store_true", help="skip the DataLoader timing")
    add(
        "--only",
        metavar="ROWS",
        help=f"comma-separated rows to run, from: {', '.join(source_names() + REFERENCE_NAMES)}",
    )
    add("--json", type=Path, metavar="PATH", help="write the results as JSON")
    add("--plot", type=Path, metavar="PATH", help="draw a PNG bar chart (needs matplotlib)")
    add("--markdown", action="store_true", help="print the tables in Markdown (for a README)")
    add(
        "--quick",
        action="store_true",
        help="smoke run: 2 short 160x120 videos converted in this process, 16 clips, "
        "1 repeat, no calibration",
    )
    add(
        "--geometry-short-side",
        type=int,
        default=128,
        metavar="S",
        help="geometry rows: each source's fused resize to short side S against a full-size "
        "read + cv2.resize, on the benchmark's videos and a 1080p sample; 0 leaves them out "
        "(default 128)",
    )
    add(
        "--no-geometry-hd",
        action="store_true",
        help="geometry rows without the generated 1080p sample (quick: 640x360)",
    )
    add("--no-progress", action="store_true", help="no progress bars (status lines stay)")
    add("-v", "--verbose", action="store_true", help="print the traceback of an error")
    return p


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    from vidload._commands.args import quick_or

    quick, pick, normal = args.quick, quick_or(args.quick), BenchConfig  # its defaults

    only = None
    if args.only:
        only = tuple(s.strip() for s in args.only.split(",") if s.strip())
    return BenchConfig(
        data=args.data,
        work=args.work,
        num_videos=pick(args.num_videos, normal.num_videos, 2),
        clips=pick(args.clips, normal.clips, 16),
        repeats=pick(args.repeats, normal.repeats, 1),
        frames=args.frames,
        batch_size=args.batch_size,
        workers=args.workers if args.workers is not None else default_workers(),
        seed=args.seed,
        quality=args.quality,
        short_side=args.short_side,
        min_time=pick(args.min_time, normal.min_time, 0.0),
        cold=args.cold,
        bucket=args.bucket,
        dataloader=not args.no_dataloader,
        only=only,
        synth_seconds=2.0 if quick else normal.synth_seconds,
        synth_size=(160, 120) if quick else normal.synth_size,
        convert_workers=1 if quick else None,
        progress=not args.no_progress,
        geometry_short_side=args.geometry_short_side or None,
        geometry_hd=None if args.no_geometry_hd else ((640, 360) if quick else normal.geometry_hd),
        geometry_hd_seconds=0.6 if quick else normal.geometry_hd_seconds,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from command-line arguments; prints the report and returns 0; 2 for a
    bad argument (`UsageError`: the usage line and the rule broken), 1 for any other error
    (one line naming it; `-v` adds the traceback)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        try:
            cfg = config_from_args(args)
            if args.plot is not None:
                if cfg.bucket is not None:  # its result has no loader rows to draw
                    raise ValueError("--plot draws the loader rows; --bucket measures none")
                report.check_plotting()
        except (ValueError, TypeError, RuntimeError) as e:  # only the arguments are looked at
            raise UsageError(str(e)) from e
        result = run_benchmark(cfg)
    except Exception as e:
        return report_error(parser, "bench", e, verbose=args.verbose)
    if "bucket" in result:
        from vidload._bench import bucket

        print(bucket.render(result["bucket"], workers=cfg.workers, markdown=args.markdown))
        print("\n".join(f"- {n}" for n in result["notes"]))
    else:
        print(report.render(result, markdown=args.markdown))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2, default=_json_default) + "\n")
        log(f"wrote {args.json}")
    if args.plot is not None:
        report.plot(result, args.plot)
        log(f"wrote {args.plot}")
    return 0


def _json_default(value: object) -> object:
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


if __name__ == "__main__":
    raise SystemExit(main())
