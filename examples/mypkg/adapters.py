"""A custom input adapter: one decoded JSONL record of a LangSmith-like export → a native case mapping.

Named in a config as `dataset.format: mypkg.adapters:from_langsmith`; the module is
found because it sits in the config's folder.
"""

from __future__ import annotations

from typing import Any


def from_langsmith(record: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Map one run to `{id, input, expected_tool_calls, trace}`; `options["project"]` keeps only that project's tag.

    Raises `KeyError` for a record without `run_id` (that record becomes one `invalid_input` result).
    """
    calls = [{"name": run["name"], "arguments": run.get("inputs") or {}, "result": run.get("outputs")}
             for run in record.get("child_runs", []) if run.get("run_type") == "tool"]
    return {
        "id": record["run_id"],
        "input": (record.get("inputs") or {}).get("question"),
        "tags": [options["project"]] if record.get("project") == options.get("project") else [],
        "expected_tool_calls": (record.get("reference") or {}).get("tools", []),
        "trace": {"steps": [{"tool_calls": [call]} for call in calls], "output": (record.get("outputs") or {}).get("answer")},
    }
