"""Shared test helpers: where the real data lives, and a one-call extractor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# The real data sits next to the repository (never inside it).
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real data not present: {path}")
    return path


def extract_lines(tmp_path: Path, fmt_name: str, records: list[Any], options: dict[str, Any] | None = None) -> list[Any]:
    """Write `records` as JSONL (dicts are dumped, str/bytes written as is) and extract every line."""
    from pipeline import registry
    from pipeline.config import DatasetConfig
    from stages.extract import extract_record

    path = tmp_path / "data.jsonl"
    with open(path, "wb") as fh:
        for rec in records:
            line = rec if isinstance(rec, bytes) else (rec.encode() if isinstance(rec, str) else json.dumps(rec).encode())
            fh.write(line + b"\n")
    ds = DatasetConfig(path=path, format=fmt_name, options=options or {})
    fmt = registry.format_for(fmt_name)
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
