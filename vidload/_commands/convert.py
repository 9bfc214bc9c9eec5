"""`vidload convert`: its arguments and its run (the summary is `ConvertReport`'s own,
`vidload._convert.report.print_convert_summary`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from vidload._commands import EXIT_FAILED, EXIT_OK
from vidload._commands.args import (
    add_common,
    add_input,
    check_paths,
    crf,
    dask_executor,
    kind_help,
    kinds_described,
    official_files_for_the_shell,
    positive_int,
    quality,
    storage_options,
)
from vidload._convert import options as opts
from vidload._convert.report import print_convert_summary
from vidload._kinds import get_kind, kind_names
from vidload.errors import UsageError
from vidload.sources.jpeg_decode import SUBSAMPLINGS

__all__ = ["INTERRUPTED", "add_parser", "run"]

#: What an interrupted run adds to its message.
INTERRUPTED = "; run it again to resume"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The `convert` subcommand's parser (INPUT, OUTPUT, what to store), added to `sub`; its
    help and description name every kind of the table, the description each one's reader."""
    kinds = "; ".join(
        f"--to {n}: " + kind_help(n, "{described}, read by {reader}(OUTPUT)") for n in kind_names()
    )
    conv = sub.add_parser(
        "convert",
        help=f"build {kinds_described()} from videos or JPEG folders (--to)",
        description="Convert every video of INPUT into one container per video under OUTPUT, "
        f"laid out so that the kind's source reads them with the videos' ids ({kinds}). Writes "
        "OUTPUT/manifest.csv. A rerun skips videos already converted (resume).",
    )
    add_input(
        conv, "folder of videos and/or JPEG frame folders (searched recursively), one video file"
    )
    conv.add_argument(
        "output",
        metavar="OUTPUT",
        help="folder or URL (s3://bucket/prefix, gs://...) to write the containers into; "
        "a URL takes the standard configuration (AWS_ENDPOINT_URL, ~/.aws, ...)",
    )
    conv.add_argument(
        "--to",
        required=True,
        choices=kind_names(),
        help="the storage kind to write (video: H.264 re-encoded for random access)",
    )
    add_common(conv)
    conv.add_argument(
        "--short-side",
        type=positive_int,
        metavar="S",
        help="resize so the shorter side is S pixels, keeping the aspect ratio",
    )
    conv.add_argument(
        "--quality",
        type=quality,
        metavar="Q",
        help=f"JPEG quality 1-100 ({opts.DEFAULT_QUALITY})",
    )
    conv.add_argument(
        "--subsampling",
        choices=SUBSAMPLINGS,
        help=f"JPEG chroma subsampling ({opts.DEFAULT_SUBSAMPLING}; 444 keeps full colour "
        "resolution, see the docs' Benchmarks page)",
    )
    conv.add_argument(
        "--gop",
        type=positive_int,
        metavar="N",
        help=f"--to video: a keyframe every N frames ({opts.DEFAULT_GOP})",
    )
    conv.add_argument(
        "--crf",
        type=crf,
        metavar="Q",
        help="--to video: libx264 constant rate factor 0-51, lower is better "
        f"({opts.DEFAULT_CRF:g})",
    )
    conv.add_argument(
        "--preset", choices=opts.PRESETS, help=f"--to video: libx264 preset ({opts.DEFAULT_PRESET})"
    )
    conv.add_argument(
        "--tune", choices=opts.TUNES, help=f"--to video: libx264 tuning ({opts.DEFAULT_TUNE})"
    )
    conv.add_argument(
        "--overwrite", action="store_true", help="convert everything again, even videos done"
    )

    return conv


def run(args: argparse.Namespace) -> int:
    """Convert as `args` say; 0 when every video was converted, 1 when some failed."""
    check_paths(args, args.output)
    from vidload.convert import run_convert

    options = _options(args)
    with official_files_for_the_shell(args, "convert"), dask_executor(args) as (executor, workers):
        report = run_convert(
            options, args.input, args.output, executor=executor, workers=workers,
            progress=not args.quiet,
        )  # fmt: skip
    print_convert_summary(report, sys.stdout)
    if report.stopped is not None:
        print(f"vidload convert: stopped: {report.stopped}", file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_FAILED


def _options(args: argparse.Namespace) -> opts.ConvertOptions:
    """The options given, each to the `ConvertOptions` field of its name (left out: its
    default). `--quality` and `--subsampling` set the stored JPEGs: given with a kind that
    stores no JPEG (`--to video`) they would be ignored, so they are refused."""
    names = {f.name for f in fields(opts.ConvertOptions)}
    given = {k: v for k, v in vars(args).items() if k in names and v is not None}
    jpeg = [f"--{k}" for k in ("quality", "subsampling") if k in given]
    if jpeg and "quality" not in get_kind(args.to).option_names:
        raise UsageError(
            f"{' and '.join(jpeg)} set{'s' if len(jpeg) == 1 else ''} the "
            f"stored JPEG frames; --to {args.to} stores none: leave "
            f"{'it' if len(jpeg) == 1 else 'them'} out (--crf sets a re-encoded video's quality)"
        )
    return opts.ConvertOptions(**given, storage_options=storage_options(args.storage_option))
