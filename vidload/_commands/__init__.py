"""The `vidload` commands, one module each: `add_parser(sub)` adds its arguments, `run(args)`
does it and returns the exit status; `INTERRUPTED` is what an interrupted run adds to its
message (convert's: how to resume), and `FORWARDS` whether the arguments after the command go
to `run` unparsed (bench's). `vidload.cli` is the table of them (`COMMANDS`, each a
`vidload.cli.Command`) and `main`."""
