"""tracejudge's engine: records, config, runner, run-directory store, CLI.

Users import the public API from the top-level module `tracejudge`.
"""
