"""`vidload bench`: its arguments and its run (the measuring is `vidload._bench.run`'s, the
tables `vidload._bench.report`'s; `vidload.bench.main` runs this command too)."""

from __future__ import annotations

import argparse
import json
from dataclasses import fields
from pathlib import Path

import numpy as np

from vidload._bench import report
from vidload._bench.config import REFERENCE_NAMES, BenchConfig, source_names
from vidload._commands import EXIT_OK
from vidload._cpus import default_workers
from vidload._kinds import kind_names
from vidload.errors import UsageError

__all__ = ["HELP", "INTERRUPTED", "QUICK", "add_parser", "config_from_args", "run"]

INTERRUPTED = ""

#: `--quick`'s settings where an option does not say otherwise: a smoke run (2 short 160x120
#: videos converted in this process, 16 clips, 1 repeat, no calibration, a 640x360 sample).
QUICK = {
    "num_videos": 2,
    "clips": 16,
    "repeats": 1,
    "min_time": 0.0,
    "synth_seconds": 2.0,
    "synth_size": (160, 120),
    "convert_workers": 1,
    "geometry_hd": (640, 360),
    "geometry_hd_seconds": 0.6,
}

#: What `vidload --help` says the command does.
HELP = "speed of every source on the same clips (see `vidload bench --help`)"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The `bench` subcommand's parser, added to `sub`."""
    # named from the kinds table when the parser is built: a kind registered since is in it
    description = (
        "Speed of every frame source (the videos as they are and every storage kind: "
        f"{', '.join(kind_names())}) on the same clips, against reference loaders; bytes "
        "on disk and read per clip. Without DATA, UCF101-like sample videos are generated. "
        "Figures are the best of the interleaved repeats."
    )
    p = sub.add_parser("bench", help=HELP, description=description)
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
    add(
        "--no-dataloader",
        dest="dataloader",
        action="store_false",
        help="skip the DataLoader timing",
    )
    add(
        "--only",
        type=_row_names,
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
    add(
        "--no-progress",
        dest="progress",
        action="store_false",
        help="no progress bars (status lines stay)",
    )
    return p


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    """The run `args` ask for: each option given reaches the `BenchConfig` field of its name;
    `--quick`'s smaller settings (`QUICK`) where an option is not given."""
    names = {f.name for f in fields(BenchConfig)}
    given = {k: v for k, v in vars(args).items() if k in names and v is not None}
    if args.no_geometry_hd:
        given["geometry_hd"] = None
    given["geometry_short_side"] = args.geometry_short_side or None  # 0: no geometry rows
    return BenchConfig(**{**(QUICK if args.quick else {}), **given})


def run(args: argparse.Namespace) -> int:
    """Benchmark as `args` say and print the report (and write --json, --plot); 0."""
    try:
        cfg = config_from_args(args)
        if args.plot is not None:
            if cfg.bucket is not None:  # its result has no loader rows to draw
                raise ValueError("--plot draws the loader rows; --bucket measures none")
            report.check_plotting()
    except (ValueError, TypeError, RuntimeError) as e:  # only the arguments are looked at
        raise UsageError(str(e)) from e
    from vidload._bench.run import run_benchmark  # the measuring code, and torch
    from vidload._bench.workdir import log

    result = run_benchmark(cfg)
    print(report.render(result, markdown=args.markdown))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2, default=_json_default) + "\n")
        log(f"wrote {args.json}")
    if args.plot is not None:
        report.plot(result, args.plot)
        log(f"wrote {args.plot}")
    return EXIT_OK


def _row_names(text: str) -> tuple[str, ...] | None:
    """`--only`'s comma-separated rows (None for an empty ROWS: every row)."""
    return tuple(s.strip() for s in text.split(",") if s.strip()) if text else None


def _json_default(value: object) -> object:
    """A numpy number as its Python number (the results' paths are strings already)."""
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")
