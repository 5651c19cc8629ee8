"""The tracejudge version: the one place it is written (pyproject.toml reads it from here).

A literal, not a lookup in the installed distribution's metadata, which cost
every process (each worker included) about 50 ms of imports.
"""

__version__ = "0.1.0"
