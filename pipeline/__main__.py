"""`python -m tracejudge`: the same command line as the `tracejudge` script."""

from tracejudge.entrypoints.cli import console_main

if __name__ == "__main__":
    console_main()
