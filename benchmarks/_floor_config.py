"""The config of the floor with outputs (`_floor_run.py --outputs`): the run's YAML file read with PyYAML (libyaml's
loader when built) and validated minimally, as a minimal implementation of what `tracejudge run` does with it.

Read: the top level (`dataset`, `metrics`, `run`, and the sections tracejudge fills with defaults: their keys
checked, defaults filled), the dataset (`path`, `format: native`), and each of the six metrics: its type known, its
fields known to the type, each of its type (a bool, a text among the type's choices, a list of texts, a number in
range), the required ones present, defaults filled in tracejudge's order. Then the floor's own condition: the six
are the checks `_six_checks.py` hard-wires (keys, budgets, text, excluded tools), as the floor computes no other.
A fault raises `ValueError` naming the file, the line and the field (`metrics[3].max_calls`).

`config_hash`: the SHA-256 of the validated config as sorted compact JSON, as the manifest and configs.jsonl carry it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml

from _six_checks import CHECKS, CONTAINS, MAX_CALLS, MAX_REQUESTS, WRITE_EXCLUDE

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TOOLS = {"include_tools": None, "exclude_tools": [], "include_failed": False}
# Per metric type, its fields after `type` and their defaults, in tracejudge's order (`name`, `threshold` first).
FIELDS: dict[str, dict[str, Any]] = {
    "ToolCalls": {**_TOOLS, "arguments": "subset", "score": "f1", "pairing": "one_to_one", "order": "any_order"},
    "TrajectoryMatch": {**_TOOLS, "order": "in_order", "score": "f1", "expected_trajectory": None},
    "ToolCorrectness": {**_TOOLS, "allow_extra": False, "expected_tools": None},
    "MaxToolCalls": {**_TOOLS, "include_failed": True, "max_calls": None},
    "MaxModelRequests": {"max_requests": None},
    "Contains": {"value": None, "case_sensitive": False, "match": "substring", "require": "any"},
}
REQUIRED = {"MaxToolCalls": "max_calls", "MaxModelRequests": "max_requests", "Contains": "value"}
CHOICES = {"arguments": ("subset", "shallow", "exact", "ignore"), "score": ("f1", "precision", "recall", "min"),
           "pairing": ("one_to_one", "first_fit", "reuse"), "order": ("any_order", "in_order", "exact"),
           "match": ("substring", "bfcl"), "require": ("any", "all")}
_NAMES = ("include_tools", "exclude_tools", "expected_trajectory", "expected_tools")  # a list of texts (or null)
_COUNTS = ("max_calls", "max_requests")  # an integer >= 0
# The sections tracejudge fills with defaults, as its manifest shows them (values given in the file replace these).
SECTIONS: dict[str, Any] = {
    "judge": None, "target": None,
    "limits": {"rpm": 3000, "tpm": 1000000, "max_in_flight": 64, "window": "auto", "window_s": 60.0},
    "budget": {"max_judge_tokens": None, "max_cost_usd": None},
    "cache": {"dir": ".tracejudge/cache", "enabled": True, "explain": False},
    "run": {"dir": None, "workers": 1, "queue_size": 64, "chunk_size": 16, "trials": 1, "flush_every": 256,
            "max_resume_retries": 2, "executor": "processes", "processes": 2, "ray_address": None, "shard": None,
            "metric_timeout_s": 60.0},
    "aggregate": {"group_by": [], "by_tags": True, "seed": 0, "reservoir_size": 1000, "group_reservoir_size": 250,
                  "bootstrap_resamples": 1000, "max_groups": 100},
    "assertions": {"metrics": {}, "max_invalid_share": 0.0, "max_target_error_share": 0.0, "max_metric_error_share": 0.0,
                   "regression": None},
}


def _line(node: Any, path: tuple[Any, ...]) -> int:
    """The 1-based line of the node at `path` (keys and indices) under `node`, or of the deepest one found."""
    for step in path:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == step), node)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
    return node.start_mark.line + 1


def read_config(path: str) -> dict[str, Any]:
    """The validated config of the YAML file `path`, every section with its defaults (`SECTIONS`), metrics as tracejudge
    fills them. Raises `ValueError("FILE:LINE: FIELD: what")` for a fault, OSError when the file cannot be read."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ValueError(f"{path}:{mark.line + 1 if mark else 1}: not YAML: {getattr(exc, 'problem', exc)}") from None
    finally:
        loader.dispose()

    def fault(where: tuple[Any, ...], what: str) -> ValueError:
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where).lstrip(".") or "(the file)"
        return ValueError(f"{path}:{_line(node, where) if node is not None else 1}: {field}: {what}")

    if not isinstance(data, dict):
        raise fault((), "the config is a mapping of dataset, metrics, run, ...")
    if unknown := sorted(set(data) - {"dataset", "metrics", *SECTIONS}):
        raise fault((unknown[0],), "unknown section")
    config: dict[str, Any] = {}
    dataset = data.get("dataset")
    if not isinstance(dataset, dict) or not isinstance(dataset.get("path"), str) or not dataset["path"]:
        raise fault(("dataset",), "a mapping with a path (a text) is required")
    if dataset.get("format", "native") != "native" or set(dataset) - {"path", "format"}:
        raise fault(("dataset",), "the floor reads one native JSONL file: path and format native only")
    config["dataset"] = {"path": dataset["path"], "format": "native", "tasks": None, "options": {}, "limit": None}
    metrics = data.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        raise fault(("metrics",), "a list of metrics is required")
    config["metrics"] = [_metric(m, ("metrics", i), fault) for i, m in enumerate(metrics)]
    for name, default in SECTIONS.items():
        given = data.get(name)
        if default is None or given is None:
            if given is not None:
                raise fault((name,), "the floor runs no judge or target")
            config[name] = json.loads(json.dumps(default))  # (a copy: the defaults stay as they are)
            continue
        if not isinstance(given, dict) or (unknown := sorted(set(given) - set(default))):
            raise fault((name, *unknown[:1]) if isinstance(given, dict) else (name,), "unknown field" if isinstance(given, dict) else "a mapping")
        config[name] = {**default, **given}
    if not isinstance(config["run"]["dir"], str):
        raise fault(("run", "dir"), "the run's folder (a text) is required")
    _hard_wired(config["metrics"], fault)
    return config


def _metric(m: Any, where: tuple[Any, ...], fault: Any) -> dict[str, Any]:
    """One metric entry validated, its fields filled in tracejudge's order."""
    if not isinstance(m, dict) or m.get("type") not in FIELDS:
        raise fault(where, f"a metric with a type among {', '.join(FIELDS)}")
    kind = m["type"]
    fields = {"name": None, "threshold": None, **FIELDS[kind]}
    if unknown := sorted(set(m) - {"type", *fields}):
        raise fault((*where, unknown[0]), f"unknown field of {kind}")
    if (need := REQUIRED.get(kind)) and m.get(need) is None:
        raise fault(where, f"{kind} needs {need}")
    for key, value in m.items():
        ok = (key == "type" or value is None and fields[key] is None
              or key == "name" and isinstance(value, str) and value.strip() != ""
              or key == "threshold" and isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1
              or key in CHOICES and value in CHOICES[key]
              or key in _NAMES and isinstance(value, list) and all(isinstance(x, str) for x in value)
              or key in _COUNTS and isinstance(value, int) and not isinstance(value, bool) and value >= 0
              or key == "value" and isinstance(value, str)
              or type(fields[key]) is bool and isinstance(value, bool))
        if not ok:
            raise fault((*where, key), f"{value!r} is not a valid {key} of {kind}")
    return {"type": kind, **fields, **{k: v for k, v in m.items() if k != "type"}}


def _hard_wired(metrics: list[dict[str, Any]], fault: Any) -> None:
    """Refuse metrics other than the six checks the floor computes (`_six_checks.py`)."""
    keys = tuple(m["name"] or m["type"] for m in metrics)
    if keys != CHECKS:
        raise fault(("metrics",), f"the floor computes the six checks {', '.join(CHECKS)}, not {', '.join(keys)}")
    wanted = ({"arguments": "exact", "exclude_tools": list(WRITE_EXCLUDE), "include_failed": False}, {"order": "in_order"},
              {"allow_extra": True}, {"max_calls": MAX_CALLS}, {"max_requests": MAX_REQUESTS},
              {"value": CONTAINS, "case_sensitive": False, "match": "substring"})
    for i, (m, want) in enumerate(zip(metrics, wanted)):
        if off := [k for k, v in want.items() if m[k] != v]:
            raise fault(("metrics", i, off[0]), f"the floor's check has {off[0]} {want[off[0]]!r}")


def config_hash(config: dict[str, Any]) -> str:
    """The SHA-256 (hex) of `config` as sorted compact JSON."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
