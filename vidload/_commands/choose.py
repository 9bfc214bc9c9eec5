"""`vidload choose`: its arguments and its run (the table is `vidload._choose.report`'s)."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
from typing import Any

from vidload._commands import EXIT_OK
from vidload._commands.args import (
    add_storage_option,
    positive_int,
    positive_number,
    storage_options,
)
from vidload.errors import UsageError

__all__ = ["INTERRUPTED", "QUICK", "add_parser", "run"]

INTERRUPTED = ""

#: `--quick`'s settings where an option does not say otherwise: a smoke run (2 videos, 4 clips,
#: 1 round, no calibration, 4 PSNR frames, built in this process).
QUICK = {"sample": 2, "clips": 4, "rounds": 1, "min_time": 0.0, "psnr_frames": 4, "jobs": 1}


def _storages(text: str) -> tuple[Any, ...]:
    from vidload._choose.storages import StorageSpec

    try:
        return tuple(StorageSpec.parse(t) for t in text.split(",") if t.strip())
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The `choose` subcommand's parser, added to `sub`."""
    # the light modules only: `vidload.choose` imports the timing code, and torch with it
    from vidload._choose.storages import default_storages, storage_forms
    from vidload.sampling import SAMPLING_MODES

    ch = sub.add_parser(
        "choose",
        help="which storage meets your speed at the least disk, measured on your own videos",
        description=(
            "Take K videos spread over DATA, build every candidate storage from them in a "
            "scratch folder (the originals, video re-encoded for random access at several "
            "GOP/CRF points, JPEG containers at several qualities) and measure each on the same "
            "clips: bytes per video, clips/s per core (warm, one process, CPU time), a cold "
            "first pass, and PSNR against the original decode. Prints one table marking the "
            "frontier (rows no other row beats on size, speed and PSNR together) and DATA's "
            "size in each storage; with --need and --cores, the smallest storage that meets "
            "the need. DATA may be a folder in a bucket (s3://bucket/videos): the sample is "
            "copied to local disk and measured there. Progress goes to stderr."
        ),
    )
    ch.add_argument(
        "input",
        metavar="DATA",
        help="folder of videos (searched recursively), local or in a bucket (s3://bucket/videos)",
    )
    add_storage_option(ch)
    ch.add_argument(
        "--sample", type=positive_int, metavar="K", help="videos to measure, spread over DATA (8)"
    )
    ch.add_argument(
        "--short-side",
        type=positive_int,
        metavar="S",
        help="the short side you train at: every storage is built and read at it (full size)",
    )
    ch.add_argument("--num-frames", type=positive_int, metavar="T", help="frames per clip (8)")
    ch.add_argument("--sampling", choices=SAMPLING_MODES, help="clip sampling (segment)")
    ch.add_argument("--stride", type=positive_int, metavar="N", help="frame gap, consecutive (1)")
    ch.add_argument("--seed", type=int, metavar="S", help="clip sampling seed (0)")
    ch.add_argument(
        "--need", type=positive_number, metavar="R", help="clips/s you need per GPU (with --cores)"
    )
    ch.add_argument("--cores", type=positive_int, metavar="C", help="CPU cores per GPU for loading")
    ch.add_argument(
        "--min-psnr",
        type=float,
        metavar="DB",
        help="with --need: only storages of at least this mean PSNR qualify",
    )
    ch.add_argument(
        "--storages",
        type=_storages,
        default=default_storages(),
        metavar="LIST",
        help="comma-separated candidates (default: "
        + ",".join(s.name for s in default_storages())
        + "); forms: "
        + storage_forms(),
    )
    ch.add_argument("--clips", type=positive_int, metavar="N", help="clips per timed pass (64)")
    ch.add_argument("--rounds", type=positive_int, metavar="R", help="interleaved rounds (3)")
    ch.add_argument(
        "--no-cold", dest="cold", action="store_false", help="skip the cold-read timing"
    )
    ch.add_argument("--cold-rounds", type=positive_int, metavar="R", help="cold passes (1)")
    ch.add_argument(
        "--workdir",
        metavar="DIR",
        help="scratch folder, new or empty (default: a temporary folder); removed after "
        "unless --keep",
    )
    ch.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ch.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help="storages built at once (default: the CPUs this process may use)",
    )
    ch.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    ch.add_argument(
        "--plot",
        metavar="FILE.png",
        help='size vs clips/s with the frontier (pip install "vidload[plot]")',
    )
    ch.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 2 videos, 4 clips, 1 round, 4 PSNR frames, built in this process",
    )
    ch.add_argument(
        "-q", "--quiet", dest="progress", action="store_false", help="no progress lines"
    )
    return ch


def run(args: argparse.Namespace) -> int:
    """Measure the storages as `args` say; 0 when done."""
    import json

    from vidload._choose import report
    from vidload._choose.options import ChooseOptions
    from vidload._measure.videos import UserVideos
    from vidload.choose import choose

    if (args.need is None) != (args.cores is None):
        raise UsageError("--need and --cores go together (clips/s needed per GPU, cores per GPU)")
    if args.min_psnr is not None and args.need is None:
        raise UsageError("--min-psnr applies to the choice: give --need and --cores with it")
    options = storage_options(args.storage_option)
    UserVideos(args.input, options).check_usage()
    if args.plot is not None:
        try:
            report.check_plotting()
        except RuntimeError as e:
            raise UsageError(str(e)) from e
    # each option given reaches the `choose` keyword of its name (a `ChooseOptions` field)
    names = {f.name for f in fields(ChooseOptions)}
    given = {k: v for k, v in vars(args).items() if k in names and v is not None}
    result = choose(
        args.input,
        storage_options=options,
        storages=args.storages,
        workdir=args.workdir,
        **{**(QUICK if args.quick else {}), **given},
    )
    data = result.to_json()
    print(report.render(data))
    if args.json is not None:
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        print(f"json: {args.json}")
    if args.plot is not None:
        report.plot(data, Path(args.plot))
        print(f"plot: {args.plot}")
    return EXIT_OK
