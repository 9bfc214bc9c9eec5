"""Exit statuses of the `vidload` commands: below `vidload.cli`, which imports the commands
(`vidload._commands`) that return them."""

from __future__ import annotations

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
