"""`tracejudge init`, `list` and `explain`: a starter config per input format, and what each metric and format is.

The starter configs are YAML text with comments: a dataset section for the
format, deterministic metrics that score without extra data, commented LLM
judges, a run directory named after the config, and assertions. Each runs
as written once its dataset path points at data of that format.
"""

from __future__ import annotations

import os
import re
import shlex
import typing
from pathlib import Path
from typing import Any

__all__ = ["FORMATS", "LIVE_EXAMPLES", "LIVE_ONLY_FORMATS", "describe_metric", "format_summaries", "format_summary", "metric_summaries", "starter_config"]

_HEAD = """\
# tracejudge starter config for format `{format}`: {summary}
# Run it with:   tracejudge run {config}
# Relative paths resolve from this file's folder. `tracejudge list metrics` lists every metric,
# `tracejudge explain METRIC` prints one's options and where its definition comes from.
"""

_JUDGE = """\
  # LLM judges (need the judge: section below; `tracejudge estimate {config}` prices them first):
  # - {{type: TaskCompletion}}
  # - {{type: ToolCallNecessity}}
# judge: {{provider: openai, model: gpt-4o-mini}}    # key from OPENAI_API_KEY; or provider: anthropic
cache: {{dir: {cachedir}}}   # the judge's answers, in the folder init ran in: the same wherever the run starts
"""

_TAIL = """\
run:
  dir: {rundir}            # runs/{stem} of the folder init ran in (`tracejudge view` there lists it); the same command resumes
assertions:                   # the CI gate: the run exits 1 when one fails
  metrics:
    {gate}: {{min_mean: 0.0}}   # raise the bar once you know your numbers
    "*": {{max_error_share: 0.05}}   # at most 5% of results may be unscorable
"""

# format → (dataset section, metrics lines, the metric the gate names, default dataset path)
# Formats that hold only the questions (and expected answers), no model output: a starter config for
# recorded traces would score nothing. They need a live target that answers them.
LIVE_ONLY_FORMATS = ("bfcl", "tau-bench-tasks")
LIVE_EXAMPLES = {"tau-bench-tasks": "examples/agents/airline.yaml", "bfcl": "examples/agents/bfcl.yaml"}

# Metrics for recorded traces that carry no expectations.
_LIMITS = """\
  # Traces carry no expectations, so these limits need none; add expected_tools to check the calls:
  - {type: MaxToolCalls, max_calls: 20}
  - {type: MaxModelRequests, max_requests: 20}
  # - {type: ToolCorrectness, expected_tools: [search, book], allow_extra: true}
"""


def _native_export(fmt: str, what: str, placeholder: str) -> tuple[str, str, str, str]:
    """The starter of a framework's own JSONL export (`what` says what one line holds)."""
    return (f"dataset:\n  # JSONL: {what}\n  path: {{path}}\n  format: {fmt}\n", _LIMITS, "MaxToolCalls", placeholder)


FORMATS: dict[str, tuple[str, str, str, str]] = {
    "native": (
        """\
dataset:
  # one case per JSONL line: {{"id", "input", "trace": {{"steps": [...]}}, "expected_tool_calls": [...]}}
  path: {path}
  format: native
""",
        """\
  - {type: ToolCalls, arguments: subset}    # expected calls (name + arguments) paired with the calls made
  - {type: TrajectoryMatch, order: in_order}
""", "ToolCalls", "cases.jsonl"),
    "tau-bench": (
        """\
dataset:
  # a tau-bench trajectory file (historical_trajectories/*.json)
  path: {path}
  format: tau-bench
  # the tasks file those trajectories ran on (their expected actions)
  tasks: {tasks}
""",
        """\
  - {type: ToolCalls, arguments: exact, name: actions_exact}   # the expected actions, exact arguments
  - {type: TrajectoryMatch, order: in_order}
""", "actions_exact", "gpt-4o-airline.json"),
    "tau2-bench": (
        """\
dataset:
  # a tau2-bench results file (its simulations and task actions)
  path: {path}
  format: tau2-bench
""",
        """\
  - {type: ToolCalls, arguments: shallow, pairing: reuse, score: recall, name: action_recall}   # tau2's own action check
  - {type: ToolCallAccuracy}
""", "action_recall", "results.json"),
    "inspect": (
        """\
dataset:
  # inspect-ai eval logs: one .eval / .json log, or the folder `inspect eval` writes to (logs/)
  path: {path}
  format: inspect
  options: {{id_prefix: task}}   # a folder of several tasks' logs repeats sample ids: prefix them with the task
""",
        """\
  - {type: includes}          # inspect's includes(): the target in the completion
  - {type: MaxToolCalls, max_calls: 20}
""", "includes", "logs/"),
    "openai-messages": (
        """\
dataset:
  # JSONL: {{"id", "messages": [...Chat Completions or Responses items], "expected_tool_calls": [...]}}
  path: {path}
  format: openai-messages
  options: {{messages_field: messages, error_prefixes: ["Error:"]}}   # a tool result starting so is a failed call
""",
        """\
  - {type: ToolCalls, arguments: subset}
""", "ToolCalls", "chats.jsonl"),
    "anthropic-messages": (
        """\
dataset:
  # JSONL: {{"id", "system", "messages": [...tool_use / tool_result blocks], "expected_tool_calls": [...]}}
  path: {path}
  format: anthropic-messages
  options: {{messages_field: messages}}
""",
        """\
  - {type: ToolCalls, arguments: subset}
  - {type: ToolCorrectness, allow_extra: true}   # the expected tool names were all called
""", "ToolCalls", "claude_runs.jsonl"),
    "otel": (
        """\
dataset:
  # an OTLP/JSON export file, JSON Lines of exports or of spans, or a folder of them
  path: {path}
  format: otel
  options: {{group_by: conversation, exclude: ["*.truth.json"]}}   # one case per conversation (or: trace, run)
""",
        _LIMITS, "MaxToolCalls", "traces/"),
    "smolagents": _native_export("smolagents", "one run per line, agent.memory.get_full_steps() or {{\"id\", \"steps\": [...]}}", "runs.jsonl"),
    "openai-agents": _native_export("openai-agents", "the Agents SDK's exported traces and spans (one trace per line, or the item stream)", "traces.jsonl"),
    "langfuse": _native_export("langfuse", "one trace per line as GET /api/public/traces/{{id}} returns it", "langfuse_traces.jsonl"),
    "mlflow": _native_export("mlflow", "one trace per line as MLflow's Trace.to_json() writes it", "mlflow_traces.jsonl"),
    "multivon": (
        """\
dataset:
  # JSONL of multivon-eval EvalCases: {{"input", "agent_trace": [...], "expected_tool_calls": [names]}}
  path: {path}
  format: multivon
  options: {{error_prefixes: ["Error:"]}}
""",
        """\
  - {type: ToolCallAccuracy}                 # threshold 0.7, as in multivon-eval
""", "ToolCallAccuracy", "multivon_cases.jsonl"),
    "json-path": (
        """\
dataset:
  # any JSONL; each option below is a dotted path into one record (a.b, list index a.0, * maps a list)
  path: {path}
  format: json-path
  options:
    id: run_id
    input: question
    output: answer
    tool_calls: "steps.*.calls"
    call: {{name: tool, arguments: args, result: output}}
    expected_tool_calls: gold
""",
        """\
  - {type: ToolCalls, arguments: subset}
""", "ToolCalls", "runs.jsonl"),
}


def _module_summary(obj: Any) -> str:
    import inspect  # here, not at the top: building the CLI's parser imports this module for `init --format`

    doc = (inspect.getmodule(obj).__doc__ or "") if inspect.getmodule(obj) else ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    # "Format `x`: what it reads." → "what it reads."
    return first.split(":", 1)[1].strip() if first.startswith("Format `") and ":" in first else first


def format_summaries() -> dict[str, str]:
    """Every registered input format with its one-line summary (from its module's docstring), by name."""
    from tracejudge.core import registry

    return {name: _module_summary(fmt.adapt) for name, fmt in sorted(registry.formats().items())}


def format_summary(name: str) -> str:
    """The one-line summary of format `name` (its module is imported, no other), or `""` for a name of no built-in format."""
    from tracejudge.core import registry

    return _module_summary(registry.format_for(name).adapt) if name in registry.FORMAT_MODULES else ""


def _first_line(cls: type) -> str:
    import inspect

    doc = inspect.getdoc(cls) or ""
    return doc.splitlines()[0] if doc else ""


def metric_summaries() -> dict[str, tuple[str, bool]]:
    """Every built-in metric type: `{name: (one-line summary, is an LLM judge)}`, sorted by name."""
    from tracejudge.core import registry
    from tracejudge.stages.judge.base import JudgeMetric

    return {name: (_first_line(cls), issubclass(cls, JudgeMetric)) for name, cls in sorted(registry.metric_types().items())}


def describe_metric(name: str) -> str:
    """The docstring of metric type `name` and its options (field, type, default).

    Raises `KeyError` with the closest names when `name` is not a metric type.
    """
    import inspect

    from tracejudge.core import registry, suggest
    from tracejudge.stages.judge.base import JudgeMetric

    types = registry.metric_types()
    lowered = {k.lower(): k for k in types}
    if name not in types and name.lower() not in lowered:
        hint = suggest.did_you_mean(name, types) or "`tracejudge list metrics` lists them"
        raise KeyError(f"no metric type {name!r}; {hint}")
    cls = types[name if name in types else lowered[name.lower()]]
    kind = "LLM judge (needs a judge: section)" if issubclass(cls, JudgeMetric) else "deterministic"
    lines = [f"{cls.__name__} — {kind}", "", inspect.getdoc(cls) or "(no docstring)", "", "options (config keys, with their defaults):"]
    refused = getattr(cls, "refused_options", ())  # (fields a metric inherits and refuses: promptfoo's `threshold`)
    if not getattr(cls, "shows_trace", True):  # (a judge metric shown no trace has no system prompt to show: `JudgeMetric`)
        refused = (*refused, "include_system_prompt", "system_prompt_chars")
    for field, info in cls.model_fields.items():  # type: ignore[attr-defined]
        if field == "type" or field in refused:
            continue
        default = "required" if info.is_required() else repr(info.get_default(call_default_factory=True))
        ann = info.annotation
        annotation = str(ann).replace("typing.", "") if typing.get_origin(ann) is not None else getattr(ann, "__name__", str(ann))
        if field in getattr(cls, "null_is_default", ()):  # (null is taken and means the default: as threshold's None does)
            annotation, default = f"{annotation} | None", f"{default} (null: the default)"
        lines.append(f"  {field}: {annotation} = {default}")
    return "\n".join(lines)


def tau_tasks_beside(dataset: Path) -> Path | None:
    """The τ-bench tasks file of trajectory file `dataset` where the upstream layout puts it, or None.

    Upstream keeps `historical_trajectories/<model>-<domain>.json` beside `tasks/tasks_<domain>_test.json`.
    """
    domain = dataset.stem.rsplit("-", 1)[-1]
    for folder in (dataset.parent.parent / "tasks", dataset.parent):
        found = folder / f"tasks_{domain}_test.json"
        if found.is_file():
            return found
    return None


# The characters YAML reads as a line break: a scalar holding one is written double-quoted, where it is an escape.
YAML_BREAKS = re.compile("[\n\r\x85\u2028\u2029]")


def _yaml_string(text: str) -> str:
    """`text` as a YAML scalar that reads back as this same string, in a block mapping or a flow one (`{dir: …}`).

    PyYAML's own emitter decides whether the text may stay plain: a hand-made rule let `yes`, `null`, `1.0` and
    `2024-01-01` through, and the config read them as a boolean, null, a number or a date. One line always.
    """
    import yaml  # (here: building the CLI's parser imports this module)

    def dump(**style: Any) -> str:
        # Inside a flow sequence, so that `,`, `[` or `{` are quoted as a flow mapping of the template needs.
        return yaml.safe_dump([text], default_flow_style=True, width=float("inf"), allow_unicode=True, **style).strip()[1:-1]

    out = dump()
    return dump(default_style='"') if YAML_BREAKS.search(out) else out


def starter_config(fmt: str, config_path: Path, dataset: Path | None = None, tasks: Path | None = None) -> str:
    """The commented starter config for format `fmt`, to be written at `config_path`.

    `dataset` / `tasks` (paths as the user gave them) are written relative to
    the config's folder, but for one given absolute that lies outside that
    folder, which stays absolute; without them a placeholder path names what
    to put there. Raises `KeyError` for a format without a starter.
    """
    section, metrics, gate, placeholder = FORMATS[fmt]
    base = os.path.dirname(os.path.abspath(config_path))
    if fmt == "tau-bench" and dataset is not None and tasks is None:
        # A placeholder tasks path beside real data made the config an error; without `tasks` the format
        # takes each run's expected actions from the task embedded in the run, so the line is left commented.
        section = section.replace("  tasks: {tasks}\n", "  # tasks: {tasks}   # not given: each run's own task (info.task) gives its expected actions\n")

    def rel(path: Path | None, default: str) -> str:
        if path is None:
            return default
        full = os.path.abspath(path)  # abspath, not resolve: a symlinked folder keeps its name
        text = os.path.relpath(full, base)
        if path.is_absolute() and (text == os.pardir or text.startswith(os.pardir + os.sep)):
            # Given absolute and outside the config's folder: `../../../data/x.jsonl` would only say the same thing longer
            # and break when the config moves, so it stays as given. Inside that folder, or given relative, it is relative.
            text = full
        text += "/" if path.is_dir() and not text.endswith("/") else ""
        # A config reads a leading `~` as the home folder: a folder really named `~` here is written `./~/…`.
        return _yaml_string("./" + text if text.startswith("~") else text)

    # The config's path as a shell word: the header's command is pasted into a shell (a path with a space split in two).
    names = {"format": fmt, "summary": format_summary(fmt), "config": shlex.quote(str(config_path)), "stem": config_path.stem,
             "rundir": rel(Path("runs") / config_path.stem, f"runs/{config_path.stem}"),
             # (Written out: left to its default, `.tracejudge/cache` is of the folder a run starts in, and a run started
             # from another one asks the judge again for every answer it already paid for.)
             "cachedir": rel(Path(".tracejudge") / "cache", ".tracejudge/cache"),
             "path": rel(dataset, placeholder), "tasks": rel(tasks, "tasks_airline_test.json"), "gate": gate}
    return (_HEAD.format(**names) + section.format(**names) + "metrics:\n" + metrics + _JUDGE.format(**names) + _TAIL.format(**names))
