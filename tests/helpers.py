"""Small builders for cases used across the metric tests."""

from __future__ import annotations

import copy
import importlib.util
import subprocess
from pathlib import Path
from typing import Any

from tracejudge.core.records import Case

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
GONE = object()  # `edited`'s value for a key to delete


def edited(record: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A deep copy of `record` with the value at `path` (keys and indexes) set to `value`, or deleted when it is `GONE`."""
    record = copy.deepcopy(record)
    node = record
    for key in path[:-1]:
        node = node[key]
    if value is GONE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return record


def call(name: str, error: str | None = None, **arguments: Any) -> dict[str, Any]:
    """One actual tool call record."""
    return {"name": name, "arguments": arguments, "error": error}


def exp(name: str, **arguments: Any) -> dict[str, Any]:
    """One expected call with arguments."""
    return {"name": name, "arguments": arguments}


def make_case(expected: list[Any] | None, calls: list[Any], **extra: Any) -> Case:
    """A case whose trace puts each call in its own step.

    `expected` items and `calls` items may be bare names (no arguments).
    """
    expected_calls = None if expected is None else [e if isinstance(e, dict) else {"name": e} for e in expected]
    steps = [{"tool_calls": [c if isinstance(c, dict) else {"name": c}]} for c in calls]
    trace = {"steps": steps, **extra.pop("trace", {})}
    return Case.model_validate({"id": "c", "expected_tool_calls": expected_calls, "trace": trace, **extra})


def extract_path(path: Path, fmt_name: str, options: dict[str, Any] | None = None) -> list[Any]:
    """What format `fmt_name` reads from `path`: each record's `Case`, or its `(case_id, ErrorInfo)` when it does not read."""
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig
    from tracejudge.stages.extract import extract_record

    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=path, format=fmt_name, options=options or {})
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


def write_flight_cases(path: Path, n: int) -> Path:
    """`n` native cases `c00`, `c01`, … at `path`: a booking request, one `search` call and its result, an answer; tags odd/even."""
    import json

    with open(path, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"name": "search", "arguments": {"day": i}, "result": f"flights {i}"}]}, {"output": f"booked {i}"}]
            fh.write(json.dumps({"id": f"c{i:02d}", "input": f"Book a flight on day {i}", "tags": ["odd" if i % 2 else "even"],
                                 "trace": {"steps": steps}}) + "\n")
    return path


def rewrite_spans(src: Path, dst: Path, edit: Any) -> Path:
    """Copy OTLP/JSON `src` to `dst` with `edit(span, attrs)` applied to every span (attributes as a key -> value dict)."""
    import json

    lines = []
    for line in src.read_text().splitlines():
        doc = json.loads(line)
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = {a["key"]: a["value"] for a in span["attributes"]}
                    edit(span, attrs)
                    span["attributes"] = [{"key": k, "value": v} for k, v in attrs.items()]
        lines.append(json.dumps(doc))
    dst.write_text("\n".join(lines) + "\n")
    return dst


def installed(module: str) -> bool:
    """True when `module` can be imported here (its parent packages too), without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def recorded(live: tuple[Path, dict[str, subprocess.Popen[str]]], name: str, modules: Any) -> Path:
    """The folder of live recording `name` (a `live` fixture's folder and its recorder processes) once its process ended;
    the test is skipped when one of `modules` is not installed, and fails with the end of its stderr when it failed."""
    import pytest

    for module in modules:
        if not installed(module):
            pytest.skip(f"not installed: {module}")
    out, procs = live
    proc = procs[name]
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    return out


def start_recordings(out: Path, record: Path, names: Any, modules: Any) -> tuple[Path, dict[str, subprocess.Popen[str]]]:
    """Start recorder `record` on each scenario of `names` at once, each into `out` in a process of its own, for a module
    `live` fixture (`recorded` waits for one); none when one of `modules` is not installed."""
    import os
    import sys

    import _forkserver

    if not all(installed(m) for m in modules):
        return out, {}
    env = {**os.environ, "RECORD_IN_PROCESS": "1"}  # the scenario runs in this process of its own (`common.record_each_in_subprocess`)
    return out, {name: _forkserver.popen([sys.executable, str(record), str(out), name], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         text=True, env=env) for name in names}


# What a pydantic-ai recording `<scenario>-<instrumentation>` needs installed to be made again: `v5`, pydantic-ai's own
# instrumentation; `oi`, the same under OpenInference's span processor.
PYDANTIC_AI_NEEDS = {"v5": ("pydantic_ai",), "oi": ("pydantic_ai", "openinference.instrumentation.pydantic_ai")}


def truth_of(folder: Path, name: str) -> dict[str, Any]:
    """`folder/<name>.truth.json`, read."""
    import json

    return json.loads((folder / f"{name}.truth.json").read_text())


def start_each(out: Path, record: Path, names: Any, needs: dict[str, Any]) -> tuple[Path, dict[str, subprocess.Popen[str]]]:
    """`start_recordings` for recordings named `<scenario>-<instrumentation>` whose modules differ by instrumentation:
    `needs[instrumentation]` the modules one needs (a recording whose are not installed is not started)."""
    procs: dict[str, subprocess.Popen[str]] = {}
    for name in names:
        procs.update(start_recordings(out, record, [name], needs[name.rsplit("-", 1)[1]])[1])
    return out, procs


def live_recordings(folder: str, record: Path, names: Any, modules: Any) -> Any:
    """A module-scoped `live` fixture: `names` re-recorded by `record` at once into a temporary folder named after
    `folder` (`start_recordings`), as `(folder, scenario -> its process)`."""
    import pytest

    @pytest.fixture(scope="module")
    def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, subprocess.Popen[str]]]:
        return start_recordings(tmp_path_factory.mktemp(folder), record, names, modules)

    return live


def live_truth(live: tuple[Path, dict[str, subprocess.Popen[str]]], name: str, modules: Any, data: Path) -> tuple[Path, list[Any]]:
    """`(its file, its truth's cases)` of live recording `name` once recorded (`recorded`), having checked that the
    application did and got what the committed recording's did (`data/<name>.truth.json`)."""
    import json

    out = recorded(live, name, modules)
    want = json.loads((out / f"{name}.truth.json").read_text())["cases"]
    assert want == json.loads((data / f"{name}.truth.json").read_text())["cases"]
    return out / f"{name}.jsonl", want


def calls(case: Case) -> list[tuple[Any, ...]]:
    """Each call of `case` as (id, name, arguments, result, error), in the trace's order."""
    assert case.trace is not None
    return [(c.id, c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()]


def layout(case: Case) -> list[tuple[list[str], str | None]]:
    """Each step of `case` as (the names of its calls, its output)."""
    assert case.trace is not None
    return [([c.name for c in s.tool_calls], s.output) for s in case.trace.steps]
