"""`tracejudge export RUN_DIR --to phoenix`: each score as a span annotation on its trace's root span.

The root span is the one format `phoenix` recorded (`metadata.phoenix.root_span_id`),
else the trace's root found in Phoenix (case id = trace id, `parent_id=null`, the
earliest of two). Each annotation: name = metric, annotator kind `LLM` (a judge metric;
`metadata.judge_model`) or `CODE`, result = `{score: value, label: pass|fail,
explanation: reason}`, metadata `tracejudge.run` / `tracejudge.trial` /
`tracejudge.status`, identifier `tracejudge:<run>:<trial>` (`<run>`: `mlflow_sink.run_key`, the
same across a resume with `--force`). An annotation already there under an older key of the
same run directory (`mlflow_sink.run_keys`: an export before that rule, after a `--force`) is
the score's: compared and replaced under its own identifier, never written a second time.
The project is URL-escaped in every path (`demo#staging`, `team/agents`). Phoenix reserves the
annotation name `note` for its notes and refuses a whole batch holding one: a metric named `note`
is not sent (`reserved`, scores, said in the log), and the others are annotated.

An export brings Phoenix to what `results.jsonl` says now. Phoenix keeps one annotation
per (span, name, identifier) and replaces it when one of the same key is sent again; the
annotations already there are read first, one saying the same is not sent (`skipped`) and
one saying something else (a resumed run redid a `judge_error`) is sent again
(`updated`). So exporting twice, or after an interrupted export, leaves one per (span,
metric, run, trial), each as the results say.

Results are sent a batch at a time (`BATCH` results). Phoenix refuses a whole batch (404)
when one of its spans is gone (a trace deleted since the run): the batch is then split
until the spans it does not hold are found; their traces are counted as not found
(`missing`, traces not scores) and the rest is annotated. A Phoenix that is down or
refuses a batch otherwise raises `Unreachable` naming the URL, every batch before it
being written whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracejudge.core.errors import Unreachable
from tracejudge.core.log import get_logger
from tracejudge.engine import store
from tracejudge.stages.export import OnBad, run_results
from tracejudge.stages.export.mlflow_sink import run_keys
from tracejudge.stages.extract.phoenix import Refused, client, get, project_path, project_ref
from tracejudge.stages.extract.remote import answer_line, safe_url

__all__ = ["BATCH", "RESERVED", "export"]

log = get_logger(__name__)

BATCH = 100
RESERVED = frozenset({"note"})  # names Phoenix keeps for itself: `POST v1/span_annotations` answers 400 to the whole batch


def _roots(px: Any, url: str, project: str, trace_ids: list[str]) -> dict[str, str]:
    if not trace_ids:
        return {}
    out: dict[str, tuple[str, str]] = {}
    cursor = None
    while True:  # a trace may have two roots: every page, the earliest root kept (as format `phoenix` picks it)
        page = get(px, url, project_path(project, "spans"), {"limit": 1000, "parent_id": "null", "trace_id": trace_ids,
                                                              **({"cursor": cursor} if cursor else {})})
        for s in page.get("data") or []:
            trace, start = str(s["context"]["trace_id"]), str(s.get("start_time") or "")
            if trace not in out or start < out[trace][0]:
                out[trace] = (start, str(s["context"]["span_id"]))
        cursor = page.get("next_cursor")
        if not cursor or not page.get("data"):
            return {t: span for t, (_, span) in out.items()}


def _existing(px: Any, url: str, project: str, span_ids: list[str]) -> dict[tuple[str, str, str], dict[str, Any]] | None:
    """The annotations on `span_ids` by (span, name, identifier); None when Phoenix holds none of the spans."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    cursor = None
    while span_ids:
        try:
            page = get(px, url, project_path(project, "span_annotations"),
                       {"span_ids": span_ids, "limit": 1000, **({"cursor": cursor} if cursor else {})})
        except Refused as exc:
            # 404 when none of the spans is left (their traces deleted). Unless the project itself is unknown: that GET
            # fails too, and ends the export.
            if exc.status != 404:
                raise
            get(px, url, project_path(project), {})
            return None
        out |= {(str(a["span_id"]), str(a["name"]), str(a.get("identifier") or "")): a for a in page.get("data") or []}
        cursor = page.get("next_cursor")
        if not cursor:
            break
    return out


def _same(have: dict[str, Any], want: dict[str, Any]) -> bool:
    """Whether annotation `have` (as Phoenix lists it) says what `want` (as it is sent) would."""
    got, sent = have.get("result") or {}, want["result"]
    score = got.get("score")
    return ((None if score is None else float(score)) == sent.get("score") and got.get("label") == sent.get("label")
            and (got.get("explanation") or "") == sent["explanation"] and have.get("annotator_kind") == want["annotator_kind"]
            and all((have.get("metadata") or {}).get(k) == v for k, v in want["metadata"].items()))


def _annotation(r: dict[str, Any], name: str, score: dict[str, Any], span: str, key: str, trial: str) -> dict[str, Any]:
    judge = score.get("judge") or {}
    passed = score.get("passed")
    result: dict[str, Any] = {"explanation": score.get("reason") or ""}
    if score.get("value") is not None:
        result["score"] = float(score["value"])
    if passed is not None:
        result["label"] = "pass" if passed else "fail"
    return {"name": name, "span_id": span, "annotator_kind": "LLM" if judge.get("model") else "CODE", "identifier": f"tracejudge:{key}:{trial}",
            "result": result, "metadata": {"tracejudge.run": key, "tracejudge.trial": trial, "tracejudge.status": r.get("status"),
                                           **({"judge_model": judge["model"]} if judge.get("model") else {})}}


def _send(px: Any, url: str, send: list[dict[str, Any]], tally: dict[str, int]) -> set[str]:
    """POST `send`; returns the span ids Phoenix does not hold (their annotations not written), splitting a refused batch."""
    import httpx

    try:
        px.spans.log_span_annotations(span_annotations=send, sync=True)
        return set()
    except httpx.HTTPStatusError as exc:
        spans = list(dict.fromkeys(a["span_id"] for a in send))
        code = exc.response.status_code
        if code != 404:
            # A 4xx (other than a timeout or a rate limit) is Phoenix refusing what was sent: said as it said it, since sending it
            # again will not help.
            again = "; the same command resumes" if code >= 500 or code in (408, 429) else ""
            raise Unreachable(f"{safe_url(url)} refused annotations after {tally['written'] + tally['updated']} written "
                              f"(HTTP {code}{': ' + said if (said := answer_line(exc.response.text)) else ''}){again}") from None
        if len(spans) == 1:
            return set(spans)
        # Phoenix checks every span before writing any: a 404 wrote nothing, and each half is sent again.
        half = set(spans[: len(spans) // 2])
        return (_send(px, url, [a for a in send if a["span_id"] in half], tally)
                | _send(px, url, [a for a in send if a["span_id"] not in half], tally))
    except httpx.HTTPError as exc:
        raise Unreachable(f"{safe_url(url)} cannot be reached after {tally['written'] + tally['updated']} annotations "
                          f"({type(exc).__name__}); the same command resumes") from None


def _flush(px: Any, url: str, project: str, keys: list[str], batch: list[dict[str, Any]], tally: dict[str, int], missing: set[str]) -> None:
    """Annotate `batch`'s scores under the run key `keys[0]`, or the older key of the run (`keys[1:]`) one is there under
    (replaced in place there, so a run exported before and after a `--force` keeps one per score). `project` is the
    project's path segment (`phoenix.project_ref`: escaped, or its id), as in `_roots` and `_existing`."""
    meta = {str(r["case_id"]): (r.get("metadata") or {}).get("phoenix") or {} for r in batch}
    roots = {cid: m["root_span_id"] for cid, m in meta.items() if m.get("root_span_id")}
    roots |= _roots(px, url, project, [cid for cid in meta if cid not in roots])
    have = _existing(px, url, project, sorted(set(roots.values())))
    if have is None:
        missing |= set(meta)
        return
    send, changed = [], set()
    for r in batch:
        cid, trial = str(r["case_id"]), str(r.get("trial") or 0)
        span = roots.get(cid)
        if span is None:
            missing.add(cid)
            continue
        for name, score in (r.get("scores") or {}).items():
            if name in RESERVED:
                tally["reserved"] += 1
                continue
            key = next((k for k in keys if (span, name, f"tracejudge:{k}:{trial}") in have), keys[0])
            want = _annotation(r, name, score, span, key, trial)
            old = have.get((span, name, want["identifier"]))
            if old is not None and _same(old, want):
                tally["skipped"] += 1
                continue
            if old is not None:
                changed.add((span, name, want["identifier"]))
            send.append(want)
    if not send:
        return
    gone = _send(px, url, send, tally)
    missing |= {cid for cid, span in roots.items() if span in gone}
    for a in send:
        if a["span_id"] not in gone:
            tally["updated" if (a["span_id"], a["name"], a["identifier"]) in changed else "written"] += 1


def export(run_dirs: Sequence[Path], url: str | None = None, project: str | None = None, on_bad: OnBad | None = None) -> dict[str, int]:
    """Bring Phoenix to the scores of `run_dirs`; returns `{"written", "updated", "skipped", "missing", "traces", "reserved"}`
    (`missing` of the `traces` looked up were not there; `reserved`: scores of a metric named as Phoenix forbids, not sent).
    A line of results.jsonl that holds no result is not exported: `on_bad(file, line number, "field: what is wrong")`.

    `project` defaults to the run's `dataset.options.project`, else `default`.
    Raises `Unreachable` (URL named, never the API key) when Phoenix is down or refuses a write.
    """
    px, url = client(url)
    tally = {"written": 0, "updated": 0, "skipped": 0, "missing": 0, "traces": 0, "reserved": 0}
    for run_dir in run_dirs:
        manifest = store.read_manifest(run_dir, strict=False) or {}
        options = ((manifest.get("config") or {}).get("dataset") or {}).get("options") or {}
        proj = project_ref(px, url, project or options.get("project") or "default")  # (escaped: the paths' own)
        keys = run_keys(run_dir)
        batch: list[dict[str, Any]] = []
        traces: set[str] = set()
        missing: set[str] = set()  # traces, not scores: a trace of three trials and two metrics is one not found
        for result in run_results(run_dir, on_bad):
            if result.get("scores"):
                batch.append(result)
                traces.add(str(result["case_id"]))
            if len(batch) >= BATCH:
                _flush(px, url, proj, keys, batch, tally, missing)
                batch = []
        if batch:
            _flush(px, url, proj, keys, batch, tally, missing)
        tally["traces"] += len(traces)
        tally["missing"] += len(missing)
    if tally["reserved"]:
        log.warning(f"{safe_url(url)}: Phoenix reserves the annotation name(s) {', '.join(sorted(RESERVED))} for its notes: "
                    f"{tally['reserved']} score(s) of a metric so named not exported (give the metric another `name:`)",
                    reserved=tally["reserved"])
    return tally
