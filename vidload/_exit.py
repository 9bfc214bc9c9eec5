"""Exit statuses of the `vidload` commands and the one way a command reports its failure.

A home below both `vidload.cli` (which dispatches to `vidload bench`) and `vidload.bench`
(which reports its own errors the same way): in either module it made an import cycle.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from vidload.errors import UsageError

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "report_error"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def report_error(
    parser: argparse.ArgumentParser, command: str, error: Exception, *, verbose: bool
) -> int:
    """Say on stderr why `vidload COMMAND` failed and return its exit status: a `UsageError`
    prints the usage line and the rule broken (2); any other error is a failure named in one
    line (1), with its traceback when `verbose`. Call it from the `except` block."""
    if isinstance(error, UsageError):
        parser.print_usage(sys.stderr)
        print(f"vidload {command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if verbose:
        traceback.print_exc(file=sys.stderr)
    hint = "" if verbose else " (-v shows the traceback)"
    print(f"vidload {command}: error: {type(error).__name__}: {error}{hint}", file=sys.stderr)
    return EXIT_FAILED
