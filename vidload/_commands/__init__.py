"""The `vidload` commands, one module each: `add_parser(sub)` adds its arguments, `run(args)`
does it and returns the exit status; `INTERRUPTED` is what an interrupted run adds to its
message (convert's: how to resume). `vidload.cli` is the table of them (`COMMANDS`, each a
`vidload.cli.Command`) and `main`."""
