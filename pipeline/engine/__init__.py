"""The run engine: the staged runner, the run directory (store, manifest, checkpoint), progress."""
