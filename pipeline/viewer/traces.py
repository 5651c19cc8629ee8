"""Where the case page finds a case's trace: results hold scores, not traces.

Looked up lazily, only for the case page (and, once per run, in the
background for the search text):

1. `RUN_DIR/traces.jsonl` — a live target recorded each (case, trial)'s
   case with its trace there (`tracejudge.stages.target.traces`);
2. otherwise the dataset the run's `manifest.json` names, re-read with the
   built-in input format of the run's config (`dataset.format` and its
   `options`), keeping the records whose id is the one asked for.

Reading a run directory never executes code: a config whose format is a user
adapter (`module:function`) gets no trace from the dataset, with a note saying
why. A dataset changed since the run (`engine.dataset_fingerprint.changed_since`: a
folder's files added, removed or changed, a file's size or content) is still
read, with a note.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from tracejudge.core import registry, suggest
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.core.regular_file import open_regular
from tracejudge.engine.dataset_fingerprint import changed_since, listing
from tracejudge.viewer.masking import shown_case, shown_text

__all__ = ["CaseSource", "case_snippet", "case_text", "read_object"]

_CACHE = 64


def read_object(path: Path) -> tuple[dict[str, Any], str | None]:
    """A run file holding one JSON object (`summary.json`, `manifest.json`): `(its object, None)`; `({}, None)` when it is
    not there; `({}, why)` when it is there but cannot be read (`not JSON (…)`, `not a JSON object`), so a page can say
    the file is damaged rather than not written yet."""
    try:
        # (opened without waiting: a FIFO put in its place, as an unpacked artifact may hold, hung every page reading it)
        with open_regular(path) as fh:
            data: Any = json.loads(fh.read().decode("utf-8"))
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return {}, f"cannot be read ({exc.strerror or type(exc).__name__})"
    except ValueError as exc:  # (a UnicodeDecodeError too)
        return {}, f"not JSON ({str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__})"
    return (data, None) if isinstance(data, dict) else ({}, "not a JSON object")


def case_text(case: Case) -> str:
    """The searchable text of a case: input, the user's turns, expected and actual output, tool names, each call's
    arguments (as JSON) and error; credentials masked (`shown_text`, before lower-casing: key shapes are
    case-sensitive), then lower-cased. Results are left out: a tool's output can be megabytes, and the case page shows it."""
    parts = [_plain(case.input), _plain(case.expected_output)]
    if case.trace is not None:
        parts.append(case.trace.output or "")
        parts += [_plain(m.content) for m in case.trace.user_messages]
        for step in case.trace.steps:
            for call in step.tool_calls:
                parts += [call.name, _arguments(call.arguments), call.error or ""]
            parts.append(step.output or "")
    parts += [e.name for e in case.expected_tool_calls or []]
    return shown_text("\n".join(p for p in parts if p)).lower()


def case_snippet(case: Case, limit: int = 160) -> str:
    """The case's first request on one line (whitespace collapsed), cut to `limit` characters: what the Cases table shows."""
    users = case.trace.user_messages if case.trace else []
    text = shown_text(" ".join(_plain(users[0].content if users else case.input).split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _arguments(arguments: Any) -> str:
    # Non-ASCII as written, so a search for "zürich" finds `{"city": "Zürich"}`.
    if not arguments:
        return ""
    try:
        return json.dumps(arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # (a value JSON cannot hold, a circular structure: its text still searchable)
        return str(arguments)


def _plain(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _masked(got: tuple[Case | None, str]) -> tuple[Case | None, str]:
    case, note = got
    if case is None:
        return got
    shown = shown_case(case)
    return (shown, note) if shown is not None else (None, f"{note}; not shown: its credentials could not be masked")


class CaseSource:
    """Finds the `Case` (with its trace) of a (case, trial) of one run; thread-safe, with a small LRU cache.

    `get(case_id, trial)` returns `(case or None, note)`; `note` says where the
    trace came from or why there is none. It never raises on bad data: a
    record that cannot be read gives `None` and a note naming the problem.
    """

    def __init__(self, run_dir: Path, manifest: dict[str, Any] | None) -> None:
        self.run_dir = Path(run_dir)
        self.manifest = manifest or {}
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, int], tuple[Case | None, str]] = OrderedDict()
        self._traces: Any = None
        self._traces_size = -1
        self._changed_memo: tuple[dict[str, tuple[int, int]], bool] | None = None

    def get(self, case_id: str, trial: int) -> tuple[Case | None, str]:
        """The case of (case_id, trial), its credentials masked (`viewer.masking`), and a note on its source."""
        with self._lock:
            live = self._from_traces(case_id, trial)
            if live is not None:
                return _masked(live)
            key = (case_id, trial)
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            got = _masked(self._from_dataset(case_id))
            self._cache[key] = got
            if len(self._cache) > _CACHE:
                self._cache.popitem(last=False)
            return got

    def _from_traces(self, case_id: str, trial: int) -> tuple[Case | None, str] | None:
        from tracejudge.stages.target.traces import TRACES, TraceIndex

        path = self.run_dir / TRACES
        if not path.exists():
            return None
        if not path.is_file():  # (a FIFO in its place waits for a writer forever: never opened)
            return None, f"{TRACES} is not a regular file (a FIFO, a device or a socket), so it is not read"
        size = path.stat().st_size
        if self._traces is None or size != self._traces_size:  # a live run appends: re-open
            if self._traces is not None:
                self._traces.close()
            self._traces, self._traces_size = TraceIndex(path), size
        record = self._traces.get(case_id, trial)
        if record is None:
            return None, f"{TRACES} has no trace for {case_id!r} trial {trial}"
        try:
            return Case.model_validate(record.get("case") or {}), f"live trace from {TRACES}"
        except ValidationError as exc:
            return None, f"{TRACES}: the trace of {case_id!r} trial {trial} is not a valid case ({suggest.message(exc.errors()[0])})"

    def dataset(self) -> tuple[DatasetConfig | None, registry.Format | None, str]:
        """The run's dataset config and built-in format, or `None`s and the reason there are none."""
        cfg = (self.manifest.get("config") or {}).get("dataset")
        if not isinstance(cfg, dict):
            if (why := read_object(self.run_dir / "manifest.json")[1]) is not None:  # (damaged, not missing: said so)
                return None, None, f"the run's manifest.json is {why}, so the viewer cannot tell which dataset holds the trace"
            return None, None, "the run has no manifest.json naming its dataset"
        name = str(cfg.get("format", "native"))
        if ":" in name or name not in registry.formats():
            return None, None, f"dataset.format {name!r} is a user adapter; the viewer does not run code, so it shows no trace"
        try:
            ds = DatasetConfig.model_validate(cfg)
        except ValidationError as exc:
            return None, None, f"manifest.json: dataset config is not valid ({suggest.message(exc.errors()[0])})"
        if ds.path is None:
            return None, None, f"the traces are in the store dataset.format {name!r} reads; the viewer does not query it"
        if not Path(ds.path).exists():
            return None, None, f"the dataset {ds.path} is not there any more"
        return ds, registry.format_for(name), self._changed_note(ds)

    def _changed_note(self, ds: DatasetConfig) -> str:
        recorded = (self.manifest.get("dataset") or {}).get("path")
        if isinstance(recorded, dict) and self._changed(recorded, Path(ds.path)):
            return f"trace from {ds.path} (changed since the run: it may differ from what was scored)"
        return f"trace from {ds.path}"

    def _changed(self, recorded: dict[str, Any], path: Path) -> bool:
        # A stat per page; files are hashed only when their listing moved since the last look (an edit, a checkout).
        try:
            now = listing(path)
            if self._changed_memo is None or self._changed_memo[0] != now:
                self._changed_memo = (now, changed_since(recorded, path, now))
        except OSError:
            return True  # unreadable now: it is not what the run read
        return self._changed_memo[1]

    def iter_cases(self, want: str | None = None) -> Iterator[Case]:
        """Every case of the dataset (or only those with id `want`), adapted with the run's format; unreadable records are skipped."""
        from tracejudge.stages.extract import extract_record

        ds, fmt, _ = self.dataset()
        if ds is None or fmt is None:
            return
        ctx = fmt.prepare(ds)
        for raw in fmt.read(ds):
            if want is not None and fmt.peek_id is not None and raw.error is None:
                pid = fmt.peek_id(raw.payload)
                if pid is not None and pid != want:
                    continue  # skipped unparsed
            got = extract_record(raw, fmt, ctx)
            if isinstance(got, Case) and (want is None or got.id == want):
                yield got

    def _from_dataset(self, case_id: str) -> tuple[Case | None, str]:
        ds, fmt, note = self.dataset()
        if ds is None:
            return None, note
        try:
            for case in self.iter_cases(case_id):
                return case, note
        except Exception as exc:  # a broken dataset costs the trace, not the page
            return None, f"reading {ds.path} failed: {type(exc).__name__}: {exc}"
        return None, f"{ds.path} has no readable record with id {case_id!r}"

    def iter_texts(self) -> Iterator[tuple[str, str, str]]:
        """`(case_id, case_text, case_snippet)` for every case the run's traces come from: `traces.jsonl` if any, else the dataset.

        A record that cannot be read is skipped; a dataset that cannot be read at all yields nothing.
        """
        from tracejudge.engine.store import iter_result_lines
        from tracejudge.stages.target.traces import TRACES

        live = self.run_dir / TRACES
        if live.exists():
            if not live.is_file():  # (not read: `_from_traces`)
                return
            for line in iter_result_lines(live):
                try:
                    case = Case.model_validate(json.loads(line).get("case") or {})
                except (ValueError, TypeError, AttributeError):
                    continue
                yield case.id, case_text(case), case_snippet(case)
            return
        try:
            for case in self.iter_cases():
                yield case.id, case_text(case), case_snippet(case)
        except Exception:  # an unreadable dataset: search keeps to ids, tags and reasons
            return
