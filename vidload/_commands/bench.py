"""`vidload bench`: the benchmark has its own parser (`vidload.bench.main`, which also runs as
`python -m vidload.bench`); the command line hands it every argument after `bench`."""

from __future__ import annotations

import argparse

__all__ = ["FORWARDS", "INTERRUPTED", "add_parser", "run"]

#: The arguments after the command go to `run` as `args.forwarded`, unparsed here.
FORWARDS = True
INTERRUPTED = ""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The `bench` subcommand's parser, added to `sub`: no arguments of its own."""
    return sub.add_parser(
        "bench",
        help="speed of every source on the same clips (see `vidload bench --help`)",
        add_help=False,
    )


def run(args: argparse.Namespace) -> int:
    """`vidload.bench.main` on the forwarded arguments; its own `--help` and usage errors exit
    through SystemExit, which `vidload.cli.main` turns into the exit status."""
    from vidload.bench import main

    return main(args.forwarded)
