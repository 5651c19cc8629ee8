"""Stage `export`: a finished run's verdicts written where analysts and observability stores read them.

- `table`: one row per (case, trial, metric) to Parquet or CSV (`rows`, `write_parquet`, `write_csv`);
- `mlflow_sink`: each score as an MLflow assessment on its trace;
- `phoenix_sink`: each score as a Phoenix span annotation on its trace's root span.

Every sink reads `results.jsonl` streaming (`tracejudge.engine.store.iter_results`) and
never writes a credential anywhere. `SinkError` is a store that cannot be reached or
refused a write: the CLI prints it as one line and exits 3.
"""

from __future__ import annotations

from tracejudge.core.errors import TracejudgeError

__all__ = ["MissingExtra", "SinkError", "require"]


class SinkError(TracejudgeError):
    """A store could not be reached, or answered an error; the message names its URL, never a credential."""


class MissingExtra(TracejudgeError):
    """An optional dependency is not installed; the message names the extra that installs it."""


def require(module: str, extra: str = "stores") -> object:
    """Import `module`, or raise `MissingExtra` naming `pip install 'tracejudge[EXTRA]'`."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(f"{module} is not installed ({exc.name or module} missing): pip install 'tracejudge[{extra}]'") from None
