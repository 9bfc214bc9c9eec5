"""The `vidload` command line: argument parsing and printing only; the work is in the library.

    vidload convert INPUT OUTPUT --to KIND [--workers N] [--short-side S]
                    [--quality Q] [--subsampling {420,422,444}]
                    [--gop N] [--crf Q] [--preset P] [--tune T] [--overwrite] [--root DIR]
                    [--labels FILE] [--quiet]
                    [--dask ADDRESS] [--shard-size N]
    vidload probe   INPUT [--write MANIFEST [--overwrite]] [--write-index] [--workers N]
                    [--root DIR] [--labels FILE] [--quiet]
                    [--dask ADDRESS] [--shard-size N]
    vidload choose  DATA [--sample K] [--short-side S] [--num-frames T] [--sampling MODE]
                    [--need R --cores C [--min-psnr DB]] [--storages LIST] [--json FILE]
                    [--plot FILE.png] [--workdir DIR] [--keep] [--quick] [--quiet]
    vidload bench   [DATA] [--work DIR] [--num-videos N] [--clips N] [--repeats R] [--workers W]
                    [--cold] [--json PATH] [--plot PATH] [--markdown] [--quick] ...

KIND is a storage kind of the table (`vidload._kinds`: `vidload --help` lists them).
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
import traceback
from collections.abc import Sequence
from typing import Protocol

import vidload
from vidload._checks import listed
from vidload._commands import EXIT_FAILED, EXIT_USAGE, bench, choose, convert, probe
from vidload._commands.args import kind_help
from vidload._convert.report import print_convert_summary
from vidload._kinds import kind_names
from vidload.errors import UsageError

__all__ = ["COMMANDS", "Command", "build_parser", "main", "print_convert_summary"]


class Command(Protocol):
    """A command: a module of `vidload._commands` (its doc says what each name is)."""

    INTERRUPTED: str

    def add_parser(self, sub: argparse._SubParsersAction) -> argparse.ArgumentParser: ...

    def run(self, args: argparse.Namespace) -> int: ...


#: The commands, in the order `vidload --help` lists them (`vidload._commands`).
COMMANDS: tuple[Command, ...] = (convert, probe, choose, bench)


def build_parser() -> argparse.ArgumentParser:
    """The `vidload` parser: one subcommand per module of `COMMANDS`."""
    parser = argparse.ArgumentParser(prog="vidload")
    parser.add_argument("--version", action="version", version=f"%(prog)s {vidload.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        # its usage line goes with its errors; its module runs it; -v is the error report's
        p = command.add_parser(sub)
        p.set_defaults(command_parser=p, command_module=command)
        p.add_argument(
            "-v", "--verbose", action="store_true", help="print the traceback of an error"
        )
    # named from the commands and the kinds table, so a command or kind added is in the help
    parser.description = (
        f"Fast, frame-exact video clip loading: {listed(list(sub.choices), 'and')}. "
        "Storage kinds (convert --to, probe): "
        + "; ".join(f"{n}: " + kind_help(n, "{described} ({reader})") for n in kind_names())
        + "."
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `vidload` command line with `argv` (default: sys.argv[1:]); return the exit code:
    the command's `run(args)`'s; a `UsageError` is a usage error (2, with the command's usage
    line, as argparse prints for its own errors), any other error a failure (1) named in one
    line, with its traceback under `--verbose`."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, --version (0), or a usage error (2, already printed)
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    command: Command = args.command_module
    try:
        return command.run(args)
    except KeyboardInterrupt:
        print(f"vidload {args.command}: interrupted{command.INTERRUPTED}", file=sys.stderr)
        return 130
    except UsageError as e:
        args.command_parser.print_usage(sys.stderr)
        print(f"vidload {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:
        if args.verbose:
            traceback.print_exc(file=sys.stderr)
        hint = "" if args.verbose else " (-v shows the traceback)"
        print(f"vidload {args.command}: error: {type(e).__name__}: {e}{hint}", file=sys.stderr)
        return EXIT_FAILED
