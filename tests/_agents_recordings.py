"""What the tests of OpenAI Agents SDK runs recorded at once by OpenInference (`oi-<s>.jsonl`, format `otel`) and the SDK's
own export (`export-<s>.jsonl`, format `openai-agents`) share (`tests/data/agents-guardrail-cancel`,
`tests/data/agents-tool-guards`): the two kinds, a scenario's `<s>.truth.json` and the one case a recording holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import extract_path
from tracejudge.core.records import Case

KINDS = [("export", "openai-agents"), ("oi", "otel")]  # (recording `<kind>-<s>.jsonl`, its format)


def truth_in(folder: Path, scenario: str) -> dict[str, Any]:
    """`folder/<scenario>.truth.json`: what the application saw."""
    return json.loads((folder / f"{scenario}.truth.json").read_text())


def only_case(path: Path, fmt: str) -> Case:
    """The one case `path` reads as under format `fmt`, with a trace."""
    (case,) = extract_path(path, fmt)
    assert isinstance(case, Case) and case.trace is not None, case
    return case
