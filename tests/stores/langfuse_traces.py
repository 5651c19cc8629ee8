"""The Langfuse API JSON the trace-store label tests read: `tests/frameworks/langfuse_api.py` (traces built from recorded
OTLP, `score_v1` scores) imported once from its folder, and `DATA`, the recordings' folder. A test module importing this
is skipped where the `langfuse` package is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("langfuse.api")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frameworks"))
try:
    from langfuse_api import score_v1, trace_with_full_details
finally:
    sys.path.pop(0)

__all__ = ["DATA", "score_v1", "trace_with_full_details"]

DATA = Path(__file__).resolve().parents[1] / "data"
