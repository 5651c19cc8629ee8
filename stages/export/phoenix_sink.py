"""`tracejudge export RUN_DIR --to phoenix`: each score as a span annotation on its trace's root span.

The root span is the one format `phoenix` recorded (`metadata.phoenix.root_span_id`),
else the trace's root found in Phoenix (case id = trace id, `parent_id=null`). Each
annotation: name = metric, annotator kind `LLM` (a judge metric; `metadata.judge_model`)
or `CODE`, result = `{score: value, label: pass|fail, explanation: reason}`, metadata
`tracejudge.run` / `tracejudge.trial` / `tracejudge.status`, identifier
`tracejudge:<run>:<trial>`.

Idempotent and resumable: Phoenix keeps one annotation per (span, name, identifier),
and annotations already there are read first and not sent again, so exporting twice,
or after an interrupted export, leaves one per (span, metric, run, trial). Results are
sent a batch at a time (`BATCH` results); a Phoenix that is down or refuses a batch
raises `Unreachable` naming the URL, every batch before it being written whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracejudge.core.errors import Unreachable
from tracejudge.engine import store
from tracejudge.stages.export.mlflow_sink import run_key
from tracejudge.stages.extract.phoenix import client, get
from tracejudge.stages.extract.remote import safe_url

__all__ = ["BATCH", "export"]

BATCH = 100


def _roots(px: Any, url: str, project: str, trace_ids: list[str]) -> dict[str, str]:
    if not trace_ids:
        return {}
    page = get(px, url, f"v1/projects/{project}/spans", {"limit": len(trace_ids), "parent_id": "null", "trace_id": trace_ids})
    return {str(s["context"]["trace_id"]): str(s["context"]["span_id"]) for s in page.get("data") or []}


def _existing(px: Any, url: str, project: str, span_ids: list[str]) -> set[tuple[str, str, str]]:
    out: set[tuple[str, str, str]] = set()
    cursor = None
    while span_ids:
        page = get(px, url, f"v1/projects/{project}/span_annotations",
                   {"span_ids": span_ids, "limit": 1000, **({"cursor": cursor} if cursor else {})})
        out |= {(str(a["span_id"]), str(a["name"]), str(a.get("identifier") or "")) for a in page.get("data") or []}
        cursor = page.get("next_cursor")
        if not cursor:
            break
    return out


def _flush(px: Any, url: str, project: str, key: str, batch: list[dict[str, Any]], tally: dict[str, int]) -> None:
    meta = {str(r["case_id"]): (r.get("metadata") or {}).get("phoenix") or {} for r in batch}
    roots = {cid: m["root_span_id"] for cid, m in meta.items() if m.get("root_span_id")}
    roots |= _roots(px, url, project, [cid for cid in meta if cid not in roots])
    have = _existing(px, url, project, sorted(set(roots.values())))
    send = []
    for r in batch:
        span = roots.get(str(r["case_id"]))
        trial = str(r.get("trial") or 0)
        for name, score in (r.get("scores") or {}).items():
            if span is None:
                tally["missing"] += 1
                continue
            ident = f"tracejudge:{key}:{trial}"
            if (span, name, ident) in have:
                tally["skipped"] += 1
                continue
            judge = score.get("judge") or {}
            passed = score.get("passed")
            result: dict[str, Any] = {"explanation": score.get("reason") or ""}
            if score.get("value") is not None:
                result["score"] = float(score["value"])
            if passed is not None:
                result["label"] = "pass" if passed else "fail"
            send.append({"name": name, "span_id": span, "annotator_kind": "LLM" if judge.get("model") else "CODE", "identifier": ident,
                         "result": result, "metadata": {"tracejudge.run": key, "tracejudge.trial": trial, "tracejudge.status": r.get("status"),
                                                        **({"judge_model": judge["model"]} if judge.get("model") else {})}})
    if send:
        import httpx

        try:
            px.spans.log_span_annotations(span_annotations=send, sync=True)
        except httpx.HTTPStatusError as exc:
            raise Unreachable(f"{safe_url(url)} refused annotations after {tally['written']} written (HTTP {exc.response.status_code}); "
                              "the same command resumes") from None
        except httpx.HTTPError as exc:
            raise Unreachable(f"{safe_url(url)} cannot be reached after {tally['written']} annotations ({type(exc).__name__}); "
                              "the same command resumes") from None
        tally["written"] += len(send)


def export(run_dirs: Sequence[Path], url: str | None = None, project: str | None = None) -> dict[str, int]:
    """Annotate every score of `run_dirs` in Phoenix; returns `{"written", "skipped", "missing"}`.

    `project` defaults to the run's `dataset.options.project`, else `default`.
    Raises `Unreachable` (URL named, never the API key) when Phoenix is down or refuses a write.
    """
    px, url = client(url)
    tally = {"written": 0, "skipped": 0, "missing": 0}
    for run_dir in run_dirs:
        manifest = store.read_manifest(run_dir, strict=False) or {}
        options = ((manifest.get("config") or {}).get("dataset") or {}).get("options") or {}
        proj = project or options.get("project") or "default"
        key = run_key(run_dir)
        batch: list[dict[str, Any]] = []
        for result in store.iter_results(run_dir):
            if result.get("scores"):
                batch.append(result)
            if len(batch) >= BATCH:
                _flush(px, url, proj, key, batch, tally)
                batch = []
        if batch:
            _flush(px, url, proj, key, batch, tally)
    return tally
