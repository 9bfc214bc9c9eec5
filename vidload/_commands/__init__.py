"""The `vidload` commands, one module each: `add_parser(sub)` adds its arguments, `run(args)`
does it and returns the exit status; `INTERRUPTED` (if any) is what an interrupted run adds to
its message, and `FORWARDS` (bench) hands the arguments after the command to `run` unparsed.
`vidload.cli` is the table of them (`COMMANDS`) and `main`."""
