"""`python -m tracejudge`: the same command line as the `tracejudge` script, through the same entry point.

`launch.console_main`, not the CLI's own: the CLI's imports take a second or more, and only `launch` has its Ctrl-C
handling in place before they start (exit 130 with one line, no traceback).
"""

from tracejudge.entrypoints.launch import console_main

if __name__ == "__main__":
    console_main()
