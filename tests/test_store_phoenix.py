"""Phoenix as a source and a sink, against a real `phoenix serve` (SQLite) on 127.0.0.1.

Traces are made by the plain OpenAI loop under OpenInference (OTLP/HTTP into Phoenix), read by
`dataset.format: phoenix`, judged, and written back as span annotations on each trace's root span,
read back through `arize-phoenix-client`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

from stores.phoenix_recordings import file_and_server, held_spans
from stores.servers import FlakyJudge, free_port, phoenix_installed, run_loader, sweep_config

if not phoenix_installed():
    pytest.skip("arize-phoenix (the stores extra) is not installed", allow_module_level=True)
pytest.importorskip("openinference.instrumentation.openai")

LOADER = Path(__file__).resolve().parent / "stores" / "load_phoenix.py"


def _load(url: str, *tasks: str, project: str = "agents") -> list[str]:
    """Trace `tasks` into Phoenix and wait until it has stored every span: it takes OTLP in and inserts in the background."""
    before = held_spans(url, project)
    sent = json.loads(run_loader(LOADER, url, project, *tasks).strip().splitlines()[-1])
    deadline = time.monotonic() + 120
    while (held := held_spans(url, project)) < before + sent["spans"]:
        assert time.monotonic() < deadline, f"Phoenix holds {held} spans, {before + sent['spans']} were sent"
        time.sleep(0.2)
    return sent["ids"]


@pytest.fixture(scope="module")
def server(phoenix_url):
    """The session's Phoenix server (tests/conftest.py) and three traces in its project `agents`."""
    return phoenix_url, _load(phoenix_url, "sequence", "failing", "parallel")


def _config(tmp_path: Path, url: str, **options) -> Path:
    return sweep_config(tmp_path, "phoenix", {"url": url, "project": "agents", **options}, max_calls=1)


def test_spans_in_annotations_back_on_the_root_spans_once(server, tmp_path, capsys):
    from phoenix.client import Client

    url, ids = server
    assert main(["run", str(_config(tmp_path, url, page_size=2)), "--no-progress"]) in (0, 1)  # two pages of roots
    results = {json.loads(x)["case_id"]: json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()}
    assert sorted(results) == sorted(ids)
    calls = {cid: r["scores"]["MaxToolCalls"]["details"]["count"] for cid, r in results.items()}
    assert [calls[i] for i in ids] == [2, 1, 2]  # sequence, failing, parallel: read from the tool spans
    capsys.readouterr()
    assert main(["export", str(tmp_path / "run"), "--to", "phoenix", "--url", url]) == 0
    assert "exported 6 annotations to Phoenix (6 new, 0 updated, 0 already there, 0 traces not found)" in capsys.readouterr().err
    px = Client(base_url=url)
    roots = {s["context"]["trace_id"]: s["context"]["span_id"] for s in px.spans.get_spans(project_identifier="agents", parent_id="null", limit=100)}
    for cid, r in results.items():
        got = {a["name"]: a for a in px.spans.get_span_annotations(span_ids=[roots[cid]], project_identifier="agents")}
        assert set(got) == {"MaxToolCalls", "TaskCompletion"}
        for name, score in r["scores"].items():
            assert got[name]["result"]["score"] == score["value"]
            assert got[name]["result"]["label"] == ("pass" if score["passed"] else "fail")
            assert got[name]["result"]["explanation"] == score["reason"]
        assert got["TaskCompletion"]["annotator_kind"] == "LLM" and got["MaxToolCalls"]["annotator_kind"] == "CODE"
    assert main(["export", str(tmp_path / "run"), "--to", "phoenix", "--url", url]) == 0
    assert "exported 0 annotations to Phoenix (0 new, 0 updated, 6 already there" in capsys.readouterr().err
    assert len(px.spans.get_span_annotations(span_ids=list(roots.values()), project_identifier="agents")) == 6


def test_nightly_sweep_reads_only_what_is_new(server, tmp_path):
    url, ids = server
    cfg = _config(tmp_path, url, start="last_run", overlap_s=0)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    new = _load(url, "multiturn")
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    segments = json.loads((tmp_path / "run" / "summary.json").read_text())["segments"]
    assert [s["results"] for s in segments] == [len(ids), 1]
    assert json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[-1])["case_id"] == new[0]


def test_a_down_phoenix_is_one_line_and_exit_3(server, tmp_path, capsys, monkeypatch):
    url, _ = server
    monkeypatch.setenv("PHOENIX_API_KEY", "px-secret-key")
    dead = f"http://127.0.0.1:{free_port()}"
    assert main(["run", str(_config(tmp_path, dead)), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert f"{dead} cannot be reached" in err and "px-secret-key" not in err
    assert main(["run", str(_config(tmp_path, url, project="no-such-project")), "--no-progress"]) == 3  # an error answer, not zero cases
    assert "answered HTTP 404" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "run"), "--to", "phoenix", "--url", dead]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "px-secret-key" not in err
    assert not any("px-secret-key" in p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())


def test_a_span_listed_twice_is_read_once(server):
    # As the `otel` format reads a span exported twice (an exporter's retry, an export copied): once, not two calls.
    # Phoenix's own store holds a span id once, so the copy is made here, in the listing `read` groups (`trace_group`).
    from tracejudge.stages.extract import otel, phoenix

    url, ids = server
    px, _ = phoenix.client(url)
    listed = phoenix.get(px, url, "v1/projects/agents/spans", {"limit": 1000, "trace_id": [ids[0]]})["data"]  # as `read` lists them
    where = f"{url}/projects/agents"
    single = phoenix.adapt(phoenix.trace_group(ids[0], [phoenix.to_span(s, where, 1) for s in listed], 1), otel.Options())
    twice = phoenix.adapt(phoenix.trace_group(ids[0], [phoenix.to_span(s, where, 1) for s in listed * 2], 1), otel.Options())
    assert [c.name for c in twice.trace.tool_calls()] == ["get_weather", "convert_temperature"]  # the `sequence` recording's
    assert twice.model_dump() == single.model_dump()
    assert "duplicates" not in twice.metadata["otel"]


def _results(run_dir: Path) -> dict:
    from tracejudge.engine import store

    return {r["case_id"]: r for r in store.iter_results(run_dir)}


def _annotations(url: str, project: str, trace_ids: list[str]) -> dict[str, dict[str, dict]]:
    """trace id → annotation name → the annotation, on each trace's root span."""
    from phoenix.client import Client

    px = Client(base_url=url)
    roots = {s["context"]["span_id"]: s["context"]["trace_id"]
             for s in px.spans.get_spans(project_identifier=project, parent_id="null", limit=1000) if s["context"]["trace_id"] in trace_ids}
    out: dict[str, dict[str, dict]] = {t: {} for t in trace_ids}
    for a in px.spans.get_span_annotations(span_ids=list(roots), project_identifier=project):
        assert a["name"] not in out[roots[a["span_id"]]], a  # one per (span, metric, run, trial): one run, one trial here
        out[roots[a["span_id"]]][a["name"]] = a
    return out


def test_a_resumed_run_replaces_what_it_exported(server, tmp_path, capsys):
    # A night whose judge failed was exported (no score), then resumed to verdicts: exporting again must bring the
    # annotations to the verdicts, not count the stale ones as "already there".
    url, _ = server
    ids = _load(url, "sequence", "failing", project="resume")
    run = tmp_path / "run"
    with FlakyJudge() as judge:
        cfg = sweep_config(tmp_path, "phoenix", {"url": url, "project": "resume"}, max_calls=1, judge_url=judge.url)
        assert main(["run", str(cfg), "--no-progress"]) == 1
        assert main(["export", str(run), "--to", "phoenix", "--url", url]) == 0
        assert all(got["TaskCompletion"]["result"]["score"] is None for got in _annotations(url, "resume", ids).values())
        judge.fixed = True
        assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    results = _results(run)
    assert {r["status"] for r in results.values()} == {"ok"}
    capsys.readouterr()
    assert main(["export", str(run), "--to", "phoenix", "--url", url]) == 0
    assert "exported 4 annotations to Phoenix (0 new, 4 updated, 0 already there, 0 traces not found)" in capsys.readouterr().err
    for tid, got in _annotations(url, "resume", ids).items():
        score = results[tid]["scores"]["TaskCompletion"]
        assert got["TaskCompletion"]["result"]["score"] == score["value"] is not None
        assert got["TaskCompletion"]["result"]["label"] == ("pass" if score["passed"] else "fail")
        assert got["MaxToolCalls"]["metadata"]["tracejudge.status"] == "ok"
    assert main(["export", str(run), "--to", "phoenix", "--url", url]) == 0
    assert "exported 0 annotations to Phoenix (0 new, 0 updated, 4 already there" in capsys.readouterr().err


def test_a_deleted_trace_is_not_found_once_and_the_others_are_annotated(server, tmp_path, capsys):
    # Phoenix answers 404 to a whole batch when one of its spans is gone: that used to fail every export, for good.
    import httpx

    url, _ = server
    ids = _load(url, "sequence", "failing", "parallel", project="gone")
    run = tmp_path / "run"
    assert main(["run", str(sweep_config(tmp_path, "phoenix", {"url": url, "project": "gone"}, max_calls=1)), "--no-progress"]) in (0, 1)
    assert httpx.delete(f"{url}/v1/traces/{ids[1]}").status_code == 204
    capsys.readouterr()
    assert main(["export", str(run), "--to", "phoenix", "--url", url]) == 0
    assert "exported 4 annotations to Phoenix (4 new, 0 updated, 0 already there, 1 traces not found)" in capsys.readouterr().err
    got = _annotations(url, "gone", [ids[0], ids[2]])
    assert all(set(g) == {"MaxToolCalls", "TaskCompletion"} for g in got.values())
    assert main(["export", str(run), "--to", "phoenix", "--url", url]) == 0
    assert "exported 0 annotations to Phoenix (0 new, 0 updated, 4 already there, 1 traces not found)" in capsys.readouterr().err
    # None of the run's traces there: the wrong project or server, most likely; said, and not exit 0.
    for tid in (ids[0], ids[2]):
        assert httpx.delete(f"{url}/v1/traces/{tid}").status_code == 204
    assert main(["export", str(run), "--to", "phoenix", "--url", url]) == 2
    assert "holds none of the run's 3 traces" in capsys.readouterr().err


def test_a_capped_nightly_sweep_reads_oldest_first_and_every_trace_over_the_nights(server, tmp_path, capsys):
    # max_traces 1 with the default overlap (600 s): Phoenix listed newest first, so the older traces were never read.
    url, _ = server
    ids = _load(url, "sequence", "failing", "parallel", project="capped")
    cfg = sweep_config(tmp_path, "phoenix", {"url": url, "project": "capped", "start": "last_run", "max_traces": 1}, max_calls=1)
    warned = []
    for _ in range(4):
        assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
        warned.append("cut the window" in capsys.readouterr().err)
    assert [json.loads(x)["case_id"] for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()] == ids
    assert warned == [True, True, False, False]  # the third night read the last one: nothing was left


def _two_roots(url: str, project: str) -> str:
    """One trace holding two agent runs (two root spans, each calling a tool), sent over OTLP/HTTP; its trace id."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    trace_id = RandomIdGenerator().generate_trace_id()

    class OneTrace(RandomIdGenerator):
        def generate_trace_id(self) -> int:
            return trace_id

    provider = TracerProvider(resource=Resource.create({"service.name": "agent", "openinference.project.name": project}), id_generator=OneTrace())
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    tracer = provider.get_tracer("agent")
    for question, tool in (("look up p", "lookup"), ("store q", "store")):
        with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT", "input.value": question}) as root:
            with tracer.start_as_current_span(tool, attributes={"openinference.span.kind": "TOOL", "tool.name": tool, "input.value": "{}"}) as call:
                call.set_attribute("output.value", "done")
            root.set_attribute("output.value", f"{tool} done")
        time.sleep(0.01)
    provider.shutdown()
    return format(trace_id, "032x")


def test_a_trace_with_two_root_spans_is_one_case_whatever_the_page_size(server, tmp_path):
    url, _ = server
    trace_id = _two_roots(url, "tworoots")
    deadline = time.monotonic() + 60
    while held_spans(url, "tworoots") < 4:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    got = {}
    for size in (1, 50):
        where = tmp_path / f"page{size}"
        where.mkdir()
        assert main(["run", str(sweep_config(where, "phoenix", {"url": url, "project": "tworoots", "page_size": size}, max_calls=1)),
                     "--no-progress"]) in (0, 1)
        got[size] = [json.loads(x) for x in (where / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["case_id"] for r in got[1]] == [trace_id] and got[1][0]["status"] == "ok", got[1]
    assert got[1][0]["scores"]["MaxToolCalls"]["details"] == got[50][0]["scores"]["MaxToolCalls"]["details"]
    assert got[1][0]["scores"]["MaxToolCalls"]["details"]["count"] == 2


def test_a_quiet_night_extracts_no_cases_and_says_so(server, tmp_path, capsys):
    url, _ = server
    cfg = sweep_config(tmp_path, "phoenix", {"url": url, "project": "agents", "start": "2099-01-01T00:00:00Z"}, max_calls=1)
    assert main(["extract", str(cfg), "-o", str(tmp_path / "cases.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "wrote 0 cases" in err and "no traces were in the window" in err and url in err, err
    assert (tmp_path / "cases.jsonl").read_text() == ""


def test_extract_with_start_last_run_reads_what_the_next_run_would(server, tmp_path, capsys):
    # `start: last_run` in extract said "not an ISO 8601 time": extract has no run of its own. It reads what the
    # config's next run would: everything before a first run, then only the traces that came after it; and it leaves
    # the run directory as it was (its sweep record is the run's to write).
    url, ids = server
    cfg = sweep_config(tmp_path, "phoenix", {"url": url, "project": "lastrun", "start": "last_run", "overlap_s": 0,
                                             "max_traces": 50}, max_calls=1)
    first = _load(url, "sequence", project="lastrun")
    out = tmp_path / "cases.jsonl"
    assert main(["extract", str(cfg), "-o", str(out)]) == 0, capsys.readouterr().err
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == first
    assert not (tmp_path / "run").exists()
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    later = _load(url, "failing", project="lastrun")
    assert main(["extract", str(cfg), "-o", str(out), "--force"]) == 0, capsys.readouterr().err
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == later
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before


DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("recording", [
    "langgraph-retry/oi-retry.jsonl",  # LangGraph's node metadata (JSON text Phoenix stores parsed): nodes were agent runs
    "frameworks/traceloop-langchain/booking.jsonl",  # OpenLLMetry: Phoenix's made-up OpenInference keys; a set-up trace was a case
    "frameworks/traceloop-openai/parallel.jsonl",
    "pydantic-ai-raised-deferrals/mixed-oi.jsonl",  # a deferral's metadata (JSON text) was read flattened
    "langgraph-lost-root/oi-lg-checkpoint.noroot.jsonl",  # roots lost (a dropped batch): such a trace was never listed
    "value-limit/pai-v5-1000.jsonl",  # histories cut at the length limit: the requests beside them were not read for the rest
    "value-limit/lg-oi-400.jsonl",  # a tool's cut `ToolMessage`: its history copy, by call id
])
def test_a_recording_sent_to_phoenix_reads_as_its_file(server, recording):
    url, _ = server
    project = "rec-" + recording.replace("/", "-")
    from_file, from_phoenix = file_and_server(url, project, DATA / recording)
    assert sorted(from_phoenix) == sorted(from_file)
    for case_id, case in from_file.items():
        assert from_phoenix[case_id] == case, case_id


def test_a_history_cut_at_the_length_limit_that_nothing_else_holds_is_refused_as_in_its_file(server):
    """The second pydantic-ai run's question is only in its first request's cut `gen_ai.input.messages`: read from
    Phoenix as from the file, its trace is one invalid_input saying the text was cut at 1000 characters, never a case
    read without that question; the first run's trace reads."""
    from stores.phoenix_recordings import send_recording
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig
    from tracejudge.core.records import Case
    from tracejudge.stages.extract import extract_record

    url, _ = server
    path = DATA / "value-limit" / "pai-v5-1000-two.jsonl"
    send_recording(url, "rec-value-limit-two", [json.loads(x) for x in path.read_text().splitlines() if x.strip()])
    fmt = registry.format_for("phoenix")
    ds = DatasetConfig(format="phoenix", options={"url": url, "project": "rec-value-limit-two"})
    got = [extract_record(raw, fmt, fmt.prepare(ds)) for raw in fmt.read(ds)]
    cases, refused = [g for g in got if isinstance(g, Case)], [g for g in got if not isinstance(g, Case)]
    assert [[m.content for m in c.trace.user_messages] for c in cases] == [["Weather in Paris and Tokyo, then Lima?"]]
    [(_, error)] = refused
    assert "gen_ai.input.messages was cut at 1000 characters" in error.message and "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT" in error.message


def test_a_span_whose_parent_never_reached_phoenix_hangs_from_the_root_as_in_its_file(server, tmp_path):
    # A LangGraph `tools` node span lost (a dropped batch): its tool span hangs from the trace's root, as `otel` hangs it.
    url, _ = server
    export = json.loads((DATA / "langgraph-retry/oi-retry.jsonl").read_text().splitlines()[0])
    for rs in export["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            ss["spans"] = [s for s in ss["spans"] if s["spanId"] != "5cf227be43754e6a"]
            for s in ss["spans"]:  # ids of its own (every bit flipped): Phoenix keys them store-wide, and the recording is sent above
                for key in ("traceId", "spanId", "parentSpanId"):
                    s[key] = f"{int(s[key], 16) ^ (16 ** len(s[key]) - 1):0{len(s[key])}x}" if s.get(key) else ""
    (tmp_path / "orphaned.jsonl").write_text(json.dumps(export) + "\n")
    from_file, from_phoenix = file_and_server(url, "orphaned", tmp_path / "orphaned.jsonl")
    assert from_phoenix == from_file


def test_a_rootless_trace_whose_last_span_just_ended_is_held_then_read(server, tmp_path, caplog):
    # No root span yet and a span that ended just now: most likely a run still going (spans are exported as they end, the
    # root last). Not scored on half a trace: skipped, said, and read once its last span is `overlap_s` old.
    url, _ = server
    lines = (DATA / "smolagents-raised/code.oi.jsonl").read_text().splitlines()
    export = json.loads(lines[0])
    spans = [s for rs in export["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    shift = time.time_ns() - 1_000_000_000 - max(int(s["endTimeUnixNano"]) for s in spans)
    for s in spans:
        s["startTimeUnixNano"], s["endTimeUnixNano"] = str(int(s["startTimeUnixNano"]) + shift), str(int(s["endTimeUnixNano"]) + shift)
    (tmp_path / "running.jsonl").write_text(json.dumps(export) + "\n")
    from_file, _ = file_and_server(url, "running", tmp_path / "running.jsonl")
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig

    def cases(**options) -> list:
        format_ = registry.format_for("phoenix")
        return list(format_.read(DatasetConfig(path=None, format="phoenix", options={"url": url, "project": "running", **options})))

    with caplog.at_level("WARNING"):
        assert cases() == []
    assert "skipped 1 trace(s) still in progress" in caplog.text
    assert [r.payload.key for r in cases(overlap_s=0)] == list(from_file)
