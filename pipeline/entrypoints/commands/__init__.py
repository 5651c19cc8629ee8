"""The `tracejudge` subcommands, one module each, behind `tracejudge.entrypoints.cli`.

`cli` parses the arguments (`parser`), imports the one command module the
user asked for, and turns what escapes it into an exit status (`exits`,
`failures`). A command module imports its heavy dependencies inside its
function, so `tracejudge --help` and every short-lived subprocess pay only
for the command they run.
"""
