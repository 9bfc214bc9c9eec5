"""`vidload probe`: its arguments and its run (the table is `vidload.probe`'s own,
`print_probe_table`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vidload._commands import EXIT_FAILED, EXIT_OK
from vidload._commands.args import (
    add_common,
    add_input,
    check_paths,
    dask_executor,
    inputs_described,
    official_files_for_the_shell,
    storage_options,
)
from vidload.errors import UsageError

__all__ = ["DESCRIPTION", "HELP", "INTERRUPTED", "add_parser", "run"]

INTERRUPTED = ""

#: What `vidload --help` and `vidload probe --help` say the command does.
HELP = "reported vs actual frame counts of videos or containers"
DESCRIPTION = (
    "Print each video's frame count as its metadata reports it and as it really decodes, "
    "marking mismatches with '!' and failures with 'x'."
)


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The `probe` subcommand's parser, added to `sub`."""
    prb = sub.add_parser("probe", help=HELP, description=DESCRIPTION)
    add_input(prb, f"folder of {inputs_described()} (searched recursively), or one such file")
    prb.add_argument("--write", metavar="MANIFEST", help="also write the counts as a manifest CSV")
    prb.add_argument(
        "--write-index",
        action="store_true",
        help="also write each video's frame index beside it (FILE.vidload-index), so that "
        "every fresh VideoSource/worker reads it without a scan or decode",
    )
    add_common(prb)
    prb.add_argument(
        "--overwrite",
        action="store_true",
        help="with --write: replace files there that probe did not write (a MANIFEST that is "
        "not a vidload manifest, a classes.txt that names other classes)",
    )

    return prb


def run(args: argparse.Namespace) -> int:
    """Probe as `args` say; 0 when every video was read, 1 when some failed."""
    check_paths(args)
    from vidload._convert.inputs import input_class_map
    from vidload._storage import Location
    from vidload.labels import CLASSES_NAME, is_contiguous, write_classes
    from vidload.manifest import write_manifest
    from vidload.probe import print_probe_table, probe

    if args.write:
        _check_not_theirs(Path(args.write), None, args.overwrite)

    with official_files_for_the_shell(args, "probe"), dask_executor(args) as (executor, workers):
        rows = probe(
            args.input,
            root=args.root,
            labels=args.labels,
            workers=workers,
            progress=not args.quiet,
            executor=executor,
            shard_size=args.shard_size,
            write_index=args.write_index,
            storage_options=storage_options(args.storage_option),
        )
    ids = [r.video_id for r in rows]
    folder = Path(args.input).is_dir()
    class_map = input_class_map(Location(args.input), folder, ids, args.labels)
    print_probe_table(rows, sys.stdout)
    if args.write:
        classes = Path(args.write).with_name(CLASSES_NAME)
        if class_map is not None and is_contiguous(class_map):
            _check_not_theirs(classes, class_map, args.overwrite)
        write_manifest(args.write, rows)
        print(f"manifest: {args.write}", file=sys.stdout)
        if class_map is not None and is_contiguous(class_map):
            write_classes(classes, class_map)
            print(f"classes: {classes}", file=sys.stdout)
    return EXIT_FAILED if any(r.status == "failed" for r in rows) else EXIT_OK


def _check_not_theirs(path: Path, class_map: dict[str, int] | None, overwrite: bool) -> None:
    """probe never replaces a file it did not write without `--overwrite`: the MANIFEST must
    be a vidload manifest (its header says so), `classes.txt` (`class_map` given) must hold
    these classes already (what probe writes, byte for byte)."""
    from vidload.labels import classes_bytes
    from vidload.manifest import is_manifest

    if class_map is None and not path.parent.is_dir():
        raise UsageError(f"--write ({str(path)!r}): folder {str(path.parent)!r} does not exist")
    if overwrite or not path.exists():
        return
    if class_map is None:
        if path.is_file() and is_manifest(path):
            return
        what = "is not a vidload manifest"
    else:
        if path.is_file() and path.read_bytes() == classes_bytes(class_map):
            return
        what = "names other classes than this INPUT's (probe writes it beside --write)"
    raise UsageError(
        f"{path} exists and {what}: pass --overwrite to replace it, or --write elsewhere"
    )
