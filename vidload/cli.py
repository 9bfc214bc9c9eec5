"""The `vidload` command line: argument parsing and printing only; the work is in the library.

    vidload convert INPUT OUTPUT --to {jpeg,hdf5,npy,video} [--workers N] [--short-side S]
                    [--quality Q] [--subsampling {420,422,444}]
                    [--gop N] [--crf Q] [--preset P] [--tune T] [--overwrite] [--root DIR]
                    [--labels FILE] [--quiet]
                    [--dask ADDRESS] [--shard-size N]
    vidload probe   INPUT [--write MANIFEST] [--write-index] [--workers N] [--root DIR]
                    [--labels FILE] [--quiet]
                    [--dask ADDRESS] [--shard-size N]
    vidload choose  DATA [--sample K] [--short-side S] [--num-frames T] [--sampling MODE]
                    [--need R --cores C [--min-psnr DB]] [--storages LIST] [--json FILE]
                    [--plot FILE.png] [--workdir DIR] [--keep] [--quick] [--quiet]
    vidload bench   ...   (vidload.bench's own arguments)

`--dask tcp://scheduler:8786` runs the work on a Dask cluster (`pip install "vidload[dask]"`);
`--dask local` starts a local one of `--workers` processes.

Exit status: 0 when every video was handled; 2 for bad arguments (`UsageError`: the usage
line and the rule broken); 1 for every other problem: some videos failed (listed with
reasons), the disk filled up (the manifest lists what finished), another run holds OUTPUT, or
any error raised while working, printed as one line naming it (`-v` adds the traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from vidload._convert.options import (
    DEFAULT_CRF,
    DEFAULT_GOP,
    DEFAULT_PRESET,
    DEFAULT_QUALITY,
    DEFAULT_SUBSAMPLING,
    DEFAULT_TUNE,
    PRESETS,
    TUNES,
)
from vidload._cpus import default_workers
from vidload._exit import EXIT_FAILED, EXIT_OK, EXIT_USAGE, report_error
from vidload._kinds import kind_names
from vidload.errors import UsageError
from vidload.manifest import ManifestRow
from vidload.sources.jpeg_decode import SUBSAMPLINGS

_LIST_LIMIT = 20  # mismatches listed in the convert summary before "... and N more"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vidload")
    except PackageNotFoundError:
        import vidload

        return vidload.__version__


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def _quality(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{value} must be in [1, 100]")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vidload",
        description="Fast, frame-exact video clip loading: convert, probe and benchmark datasets.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    conv = sub.add_parser(
        "convert",
        help="build JPEG folders, HDF5 or npy containers from videos or JPEG folders",
        description=(
            "Convert every video of INPUT into one container per video under OUTPUT, laid out "
            "so JpegSource/Hdf5Source/NpySource(OUTPUT) read them with the videos' ids. Writes "
            "OUTPUT/manifest.csv. A rerun skips videos already converted (resume)."
        ),
    )
    _add_input(
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
        help="format (video: H.264 re-encoded for random access, read by VideoSource(OUTPUT))",
    )
    _add_common(conv)
    conv.add_argument(
        "--short-side",
        type=_positive_int,
        metavar="S",
        help="resize so the shorter side is S pixels, keeping the aspect ratio",
    )
    conv.add_argument(
        "--quality",
        type=_quality,
        default=DEFAULT_QUALITY,
        metavar="Q",
        help=f"JPEG quality 1-100 ({DEFAULT_QUALITY})",
    )
    conv.add_argument(
        "--subsampling",
        choices=SUBSAMPLINGS,
        default=DEFAULT_SUBSAMPLING,
        help=f"JPEG chroma subsampling ({DEFAULT_SUBSAMPLING}; 444 keeps full colour resolution, "
        "see the docs' Benchmarks page)",
    )
    conv.add_argument(
        "--gop",
        type=_positive_int,
        metavar="N",
        help=f"--to video: a keyframe every N frames ({DEFAULT_GOP})",
    )
    conv.add_argument(
        "--crf",
        type=float,
        metavar="Q",
        help=f"--to video: libx264 constant rate factor 0-51, lower is better ({DEFAULT_CRF:g})",
    )
    conv.add_argument(
        "--preset", choices=PRESETS, help=f"--to video: libx264 preset ({DEFAULT_PRESET})"
    )
    conv.add_argument("--tune", choices=TUNES, help=f"--to video: libx264 tuning ({DEFAULT_TUNE})")
    conv.add_argument(
        "--overwrite", action="store_true", help="convert everything again, even videos done"
    )
    conv.set_defaults(command_parser=conv)  # its usage line goes with its errors

    prb = sub.add_parser(
        "probe",
        help="reported vs actual frame counts of videos or containers",
        description=(
            "Print each video's frame count as its metadata reports it and as it really "
            "decodes, marking mismatches with '!' and failures with 'x'."
        ),
    )
    _add_input(prb, "folder of videos, JPEG frame folders, .h5 or .npy files, one such file")
    prb.add_argument("--write", metavar="MANIFEST", help="also write the counts as a manifest CSV")
    prb.add_argument(
        "--write-index",
        action="store_true",
        help="also write each video's frame index beside it (FILE.vidload-index), so that "
        "every fresh VideoSource/worker reads it without a scan or decode",
    )
    _add_common(prb)
    prb.set_defaults(command_parser=prb)

    _add_choose(sub)

    sub.add_parser(
        "bench",
        help="speed of every source on the same clips (see `vidload bench --help`)",
        add_help=False,
    )
    return parser


def _positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value} must be > 0")
    return value


def _storages(text: str) -> tuple[Any, ...]:
    from vidload._choose.storages import StorageSpec

    try:
        return tuple(StorageSpec.parse(t) for t in text.split(",") if t.strip())
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _add_choose(sub: Any) -> None:
    # the light modules only: `vidload.choose` imports the timing code, and torch with it
    from vidload._choose.storages import default_storages
    from vidload._kinds import container_kinds
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
            "the need. Progress goes to stderr."
        ),
    )
    ch.add_argument("input", metavar="DATA", help="folder of videos (searched recursively)")
    ch.add_argument(
        "--sample", type=_positive_int, metavar="K", help="videos to measure, spread over DATA (8)"
    )
    ch.add_argument(
        "--short-side",
        type=_positive_int,
        metavar="S",
        help="the short side you train at: every storage is built and read at it (full size)",
    )
    ch.add_argument(
        "--num-frames", type=_positive_int, default=8, metavar="T", help="frames per clip (8)"
    )
    ch.add_argument(
        "--sampling", choices=SAMPLING_MODES, default="segment", help="clip sampling (segment)"
    )
    ch.add_argument(
        "--stride", type=_positive_int, default=1, metavar="N", help="frame gap, consecutive (1)"
    )
    ch.add_argument(
        "--need", type=_positive_number, metavar="R", help="clips/s you need per GPU (with --cores)"
    )
    ch.add_argument(
        "--cores", type=_positive_int, metavar="C", help="CPU cores per GPU for loading"
    )
    ch.add_argument(
        "--min-psnr",
        type=float,
        metavar="DB",
        help="with --need: only storages of at least this mean PSNR qualify",
    )
    ch.add_argument(
        "--storages",
        type=_storages,
        metavar="LIST",
        help="comma-separated candidates (default: "
        + ",".join(s.name for s in default_storages())
        + "); forms: original, video[:gopN][:crfQ][:PRESET], "
        + ", ".join(f"{k.name}:qQ" for k in container_kinds()),
    )
    ch.add_argument("--clips", type=_positive_int, metavar="N", help="clips per timed pass (64)")
    ch.add_argument("--rounds", type=_positive_int, metavar="R", help="interleaved rounds (3)")
    ch.add_argument("--no-cold", action="store_true", help="skip the cold-read timing")
    ch.add_argument(
        "--cold-rounds", type=_positive_int, default=1, metavar="R", help="cold passes (1)"
    )
    ch.add_argument(
        "--workdir",
        metavar="DIR",
        help="scratch folder, new or empty (default: a temporary folder); removed after "
        "unless --keep",
    )
    ch.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ch.add_argument(
        "--jobs",
        type=_positive_int,
        metavar="N",
        help="storages built at once (default: the CPUs this process may use)",
    )
    ch.add_argument("--seed", type=int, default=0, metavar="S", help="clip sampling seed (0)")
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
    ch.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    ch.add_argument("-v", "--verbose", action="store_true", help="print the traceback of an error")
    ch.set_defaults(command_parser=ch, labels=None, root=None)


def _add_input(p: argparse.ArgumentParser, kinds: str) -> None:
    """The INPUT argument: `kinds` (what a folder or file INPUT may be), or a list."""
    p.add_argument(
        "input",
        metavar="INPUT",
        help=f"{kinds}, or an annotation list (mmaction2 `path label` / `frame_dir total_frames "
        "label`) or manifest; any of these may be a URL (s3://bucket/videos)",
    )


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        help="processes to use (default: the CPUs this process may use)",
    )
    p.add_argument(
        "--root",
        metavar="DIR",
        help="folder the entries of an annotation list are relative to (default: the list's "
        "folder)",
    )
    p.add_argument(
        "--labels",
        metavar="FILE",
        help="for a folder INPUT: the class map (class names one per line, line k = label k, "
        "or an annotation list) instead of the sorted names of its top-level folders",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="store_true", help="print the traceback of an error")
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786), or "
        "'local' for a local cluster of --workers processes; needs `pip install "
        '"vidload[dask]"`',
    )
    p.add_argument(
        "--shard-size",
        type=_positive_int,
        metavar="N",
        help="videos per task (default 16, fewer for small runs)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `vidload` command line with `argv` (default: sys.argv[1:]); return the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["bench"]:
        from vidload.bench import main as bench_main

        try:
            return bench_main(args_list[1:])
        except SystemExit as e:  # bench's own --help or usage error
            return _exit_code(e)
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except SystemExit as e:  # --help, --version, or a usage error (already printed)
        return _exit_code(e)
    work = {"convert": _convert, "probe": _probe, "choose": _choose}[args.command]
    return _run(args.command_parser, args, lambda: work(args))


def _exit_code(e: SystemExit) -> int:
    if e.code is None:
        return EXIT_OK
    return e.code if isinstance(e.code, int) else EXIT_USAGE


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace, work: Callable[[], int]) -> int:
    """`work()`'s exit status; a `UsageError` is a usage error (2, with `parser`'s usage line:
    the command's, as argparse prints for its own errors), any other error a failure (1) named
    in one line, with its traceback under `--verbose`."""
    command = args.command
    try:
        _check_paths(args)
        return work()
    except KeyboardInterrupt:
        hint = "; run it again to resume" if command == "convert" else ""
        print(f"vidload {command}: interrupted{hint}", file=sys.stderr)
        return 130
    except Exception as e:
        return report_error(parser, command, e, verbose=args.verbose)


def _check_paths(args: argparse.Namespace) -> None:
    """The paths given on the command line exist: a missing one is a usage error. An INPUT
    URL of convert/probe is checked where it is read (a missing one names the URL)."""
    from vidload._storage import is_url

    name = "DATA" if args.command == "choose" else "INPUT"
    remote = args.command in ("convert", "probe") and is_url(args.input)
    if not remote and not Path(args.input).exists():
        raise UsageError(f"{name} ({args.input!r}) does not exist")
    if args.labels is not None and not Path(args.labels).is_file():
        raise UsageError(f"--labels ({args.labels!r}) is not a file")
    if args.root is not None and not Path(args.root).is_dir():
        raise UsageError(f"--root ({args.root!r}) is not a folder")


@contextmanager
def _executor(args: argparse.Namespace) -> Iterator[tuple[Executor | None, int | None]]:
    """(executor, workers) for `--dask`: a Dask cluster's executor, or (None, --workers)."""
    if args.dask is None:
        yield None, args.workers
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:
        raise UsageError(
            f'--dask needs Dask\'s distributed package: pip install "vidload[dask]" ({e})'
        ) from e
    if args.dask == "local":
        n = args.workers or default_workers()
        cluster = LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        with cluster:
            with Client(cluster) as client:
                yield client.get_executor(pure=False), None
        return
    if args.workers is not None:
        raise UsageError(
            "--workers applies to the local pool or --dask local; a cluster has its own"
        )
    try:
        client = Client(args.dask, timeout="30s")
    except OSError as e:
        raise OSError(f"--dask {args.dask}: cannot reach the scheduler ({e})") from e
    with client:
        yield client.get_executor(pure=False), None


def _convert(args: argparse.Namespace) -> int:
    from vidload.convert import convert

    with _executor(args) as (executor, workers):
        report = convert(
            args.input,
            args.output,
            to=args.to,
            workers=workers,
            short_side=args.short_side,
            quality=args.quality,
            subsampling=args.subsampling,
            gop=args.gop,
            crf=args.crf,
            preset=args.preset,
            tune=args.tune,
            overwrite=args.overwrite,
            root=args.root,
            labels=args.labels,
            progress=not args.quiet,
            executor=executor,
            shard_size=args.shard_size,
        )
    print_convert_summary(report, sys.stdout)
    if report.stopped is not None:
        print(f"vidload convert: stopped: {report.stopped}", file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_FAILED


def print_convert_summary(report, out: TextIO) -> None:
    """The end-of-run summary of a ConvertReport."""
    from vidload.progress import format_bytes

    total = len(report.rows) + len(report.unfinished)
    print(
        f"converted {len(report.converted)}, skipped {len(report.skipped)} (already done), "
        f"failed {len(report.failed)} of {total} videos in {report.seconds:.1f} s "
        f"({report.frames} frames stored)",
        file=out,
    )
    ratio = report.size_ratio
    ratio_text = f", size ratio {ratio:.2f}x" if ratio is not None else ""
    print(
        f"bytes in {format_bytes(report.bytes_in)}, bytes out {format_bytes(report.bytes_out)}"
        f"{ratio_text}",
        file=out,
    )
    mismatches = report.mismatches
    if mismatches:
        print(
            f"frame counts: {len(mismatches)} of {total} videos: reported != actual "
            f"(stored what decoded; the manifest keeps both)",
            file=out,
        )
        for row in mismatches[:_LIST_LIMIT]:
            print(
                f"  ! {row.video_id}: reported {row.reported_frames}, actual {row.actual_frames}",
                file=out,
            )
        if len(mismatches) > _LIST_LIMIT:
            print(f"  ... and {len(mismatches) - _LIST_LIMIT} more", file=out)
    else:
        done = total - len(report.failed)
        print(f"frame counts: reported == actual for all {done} videos stored", file=out)
    _print_failures(report.failed, total, out)
    if report.unfinished:
        print(
            f"unfinished: {len(report.unfinished)} of {total} videos (the run stopped; run it "
            f"again to convert them)",
            file=out,
        )
    if report.manifest_written:
        print(f"manifest: {report.manifest_path}", file=out)
    else:
        print(f"manifest: NOT written ({report.manifest_path}); a rerun recovers it", file=out)


def _print_failures(failed: Sequence[ManifestRow], total: int, out: TextIO) -> None:
    if not failed:
        return
    print(f"failed: {len(failed)} of {total} videos", file=out)
    for row in failed:
        print(f"  x {row.video_id}: {row.error}", file=out)


def _probe(args: argparse.Namespace) -> int:
    from vidload.labels import CLASSES_NAME, input_class_map, is_contiguous, write_classes
    from vidload.manifest import write_manifest
    from vidload.probe import probe

    with _executor(args) as (executor, workers):
        rows = probe(
            args.input,
            root=args.root,
            labels=args.labels,
            workers=workers,
            progress=not args.quiet,
            executor=executor,
            shard_size=args.shard_size,
            write_index=args.write_index,
        )
    class_map = input_class_map(args.input, [r.video_id for r in rows], args.labels)
    print_probe_table(rows, sys.stdout)
    if args.write:
        write_manifest(args.write, rows)
        print(f"manifest: {args.write}", file=sys.stdout)
        if class_map is not None and is_contiguous(class_map):
            classes = Path(args.write).with_name(CLASSES_NAME)
            write_classes(classes, class_map)
            print(f"classes: {classes}", file=sys.stdout)
    return EXIT_FAILED if any(r.status == "failed" for r in rows) else EXIT_OK


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def print_probe_table(rows: Sequence[ManifestRow], out: TextIO) -> None:
    """A table of reported vs actual counts: `!` marks a mismatch, `x` a failure."""
    header = ("", "video_id", "reported", "actual", "size", "fps", "rotation", "status")
    table = [header]
    for r in rows:
        mark = {"mismatch": "!", "failed": "x"}.get(r.status, " ")
        size = f"{r.width}x{r.height}" if r.width is not None and r.height is not None else "-"
        status = r.status if r.error is None else f"{r.status}: {r.error}"
        table.append(
            (
                mark,
                r.video_id,
                _cell(r.reported_frames),
                _cell(r.actual_frames),
                size,
                _cell(r.fps),
                _cell(r.rotation),
                status,
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    right = {2, 3, 5}  # numbers
    for row in table:
        cells = [
            row[i].rjust(widths[i]) if i in right else row[i].ljust(widths[i])
            for i in range(len(widths))
        ]
        print("  ".join([*cells, row[-1]]).rstrip(), file=out)
    total = len(rows)
    mismatched = sum(r.status == "mismatch" for r in rows)
    print(f"{mismatched} of {total} videos: reported != actual", file=out)
    _print_failures([r for r in rows if r.status == "failed"], total, out)


def _choose(args: argparse.Namespace) -> int:
    import json

    from vidload._choose import report
    from vidload._choose.storages import default_storages
    from vidload.choose import choose

    if (args.need is None) != (args.cores is None):
        raise UsageError("--need and --cores go together (clips/s needed per GPU, cores per GPU)")
    if args.min_psnr is not None and args.need is None:
        raise UsageError("--min-psnr applies to the choice: give --need and --cores with it")
    if not Path(args.input).is_dir():
        raise UsageError(f"DATA ({args.input!r}) must be a folder of videos")
    if args.plot is not None:
        try:
            report.check_plotting()
        except RuntimeError as e:
            raise UsageError(str(e)) from e
    quick = args.quick

    def pick(value, normal, fast):
        return value if value is not None else (fast if quick else normal)

    result = choose(
        args.input,
        sample=pick(args.sample, 8, 2),
        storages=args.storages if args.storages is not None else default_storages(),
        short_side=args.short_side,
        num_frames=args.num_frames,
        sampling=args.sampling,
        stride=args.stride,
        clips=pick(args.clips, 64, 4),
        rounds=pick(args.rounds, 3, 1),
        min_time=0.0 if quick else 0.3,
        cold=not args.no_cold,
        cold_rounds=args.cold_rounds,
        psnr_frames=4 if quick else 16,
        need=args.need,
        cores=args.cores,
        min_psnr=args.min_psnr,
        workdir=args.workdir,
        keep=args.keep,
        jobs=pick(args.jobs, None, 1),
        seed=args.seed,
        progress=not args.quiet,
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
