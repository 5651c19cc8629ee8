"""Recordings sent to a real Phoenix over OTLP/HTTP and read back both ways, for the tests that compare the two readings.

`send_recording(url, project, exports)` posts OTLP/JSON export documents (hex ids, as the file exporters write them) as
protobuf, as an exporter sends them, and waits until Phoenix has stored every span; `file_and_server(url, project,
path)` reads a recording with format `otel` (a case per trace) and, sent to Phoenix, with format `phoenix`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

__all__ = ["file_and_server", "held_spans", "send_recording"]


def held_spans(url: str, project: str = "agents") -> int:
    """Spans Phoenix holds in the project (0 before its first span made it)."""
    import httpx
    from phoenix.client import Client

    try:
        return len(Client(base_url=url).spans.get_spans(project_identifier=project, limit=10_000))
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code == 404:
            return 0
        raise


def send_recording(url: str, project: str, exports: list[dict]) -> None:
    """POST OTLP/JSON export documents (hex ids, as the file exporters write them) to Phoenix's OTLP/HTTP endpoint as
    protobuf, as an exporter sends them, into `project`; wait until Phoenix has stored every span."""
    import base64
    import copy

    import httpx
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    sent = set()
    for doc in exports:
        doc = copy.deepcopy(doc)
        for rs in doc.get("resourceSpans") or []:
            attrs = [a for a in (rs.setdefault("resource", {}).get("attributes") or []) if a.get("key") != "openinference.project.name"]
            rs["resource"]["attributes"] = [*attrs, {"key": "openinference.project.name", "value": {"stringValue": project}}]
            for ss in rs.get("scopeSpans") or []:
                for s in ss.get("spans") or []:
                    sent.add(s["spanId"])
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if s.get(key):
                            s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
        body = ParseDict(doc, ExportTraceServiceRequest(), ignore_unknown_fields=True).SerializeToString()
        assert httpx.post(f"{url}/v1/traces", content=body, headers={"content-type": "application/x-protobuf"}).status_code == 200
    deadline = time.monotonic() + 60
    while held_spans(url, project) < len(sent):
        assert time.monotonic() < deadline, f"Phoenix holds {held_spans(url, project)} spans of {project}, {len(sent)} were sent"
        time.sleep(0.2)


def file_and_server(url: str, project: str, path: Path) -> tuple[dict, dict]:
    """The cases of one recording read by format `otel` (a case per trace) and, sent to Phoenix, by format `phoenix`:
    `{case id: case dump}` each, without what only a server read has (`metadata.phoenix`, the root span's latency)."""
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig
    from tracejudge.core.records import Case
    from tracejudge.stages.extract import extract_record

    send_recording(url, project, [json.loads(x) for x in path.read_text().splitlines() if x.strip()])

    def read(fmt: str, **options) -> dict:
        format_ = registry.format_for(fmt)
        ds = DatasetConfig(path=path if fmt == "otel" else None, format=fmt, options=options)
        got = [extract_record(raw, format_, format_.prepare(ds)) for raw in format_.read(ds)]
        assert all(isinstance(c, Case) for c in got), got
        dumps = {c.id: c.model_dump(mode="json") for c in got}
        for d in dumps.values():
            d["metadata"].pop("phoenix", None)
            d["trace"]["usage"]["latency_s"] = None
        return dumps

    return read("otel", group_by="trace"), read("phoenix", url=url, project=project)
