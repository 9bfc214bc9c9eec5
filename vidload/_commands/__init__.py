"""The `vidload` commands, one module each: `add_parser(sub)` adds its arguments, `run(args)`
does it and returns the exit status (one of these); `INTERRUPTED` is what an interrupted run adds
to its message (convert's: how to resume). `vidload.cli` is the table of them (`COMMANDS`, each
a `vidload.cli.Command`), `main` and the error report."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
