"""Format `mlflow` joins a paused LangGraph run and its resume into one case, as `otel` does with MLflow's OTLP export.

Recording: `tests/data/langgraph-interrupt/mlflow-ask-date.mlflow.jsonl` (`record_langgraph_interrupt.py`, mlflow 3.17.2
`mlflow.langchain.autolog()`): two traces, one per invoke, both with `mlflow.trace.session` `thread-dates` (the run
config's `thread_id`); the second's root input is `Command(resume="June 3")`. Before, each trace was a case: the
judge saw a paused run ending on a question and a run starting with a bare "June 3".
"""

from __future__ import annotations

import json
from pathlib import Path

from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
from tracejudge.stages.judge.metrics import TaskCompletion

DATA = Path(__file__).parent / "data" / "langgraph-interrupt"
MLFLOW = DATA / "mlflow-ask-date.mlflow.jsonl"
REQUEST, QUESTION, ANSWER, FINAL = "Book me the cheapest JFK to SFO flight.", "Which date do you want?", "June 3", "Booked HAT170 on June 3 for $320."


def extract(path: Path, fmt_name: str, **options: str) -> list[Case | tuple]:
    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=path, format=fmt_name, options=options)
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


def facts(case: Case) -> dict:
    t = case.trace
    return {"input": case.input, "turns": case.turns, "said": [(m.step, m.content) for m in t.user_messages], "output": t.output,
            "steps": [(len(s.tool_calls), s.output, s.error) for s in t.steps],
            "calls": [(c.name, c.arguments, c.result, c.error) for c in t.tool_calls()],
            "tokens": (t.usage.input_tokens, t.usage.output_tokens, t.usage.requests),
            "turn_texts": [(x["user_text"], x["final_text"], x["steps"]) for x in case.metadata["otel"]["turns"]]}


def test_the_paused_run_and_its_resume_are_one_case_as_under_otel() -> None:
    got = extract(MLFLOW, "mlflow")
    assert len(got) == 1 and isinstance(got[0], Case), got
    (case,) = got
    (otel,) = extract(DATA / "mlflow-ask-date.otlp.jsonl", "otel")  # the same run's OTLP export
    assert facts(case) == facts(otel)
    assert facts(case)["said"] == [(0, REQUEST), (1, ANSWER)] and facts(case)["output"] == FINAL
    assert facts(case)["turn_texts"] == [(REQUEST, QUESTION, [0, 1]), (ANSWER, FINAL, [1, 2])]
    ids = [json.loads(line)["info"]["trace_id"] for line in MLFLOW.read_text().splitlines()]
    # the session's traces are one conversation (`group_by: conversation`), named by the session; read per trace, the
    # resume still joins the run it resumes, under the first trace's id
    assert case.id == "thread-dates" and case.metadata["mlflow"]["traces"] == ids and case.metadata["mlflow"]["session"] == "thread-dates"
    (by_trace,) = extract(MLFLOW, "mlflow", group_by="trace")
    assert by_trace.id == ids[0] and by_trace.metadata["mlflow"]["traces"] == ids and facts(by_trace) == facts(case)
    assert "errors" not in case.metadata["mlflow"] and "run_error" not in case.metadata  # the pause is no error
    text = TaskCompletion().plan(case).render(0)
    assert text.index(f"output: {QUESTION}") < text.index(f"User 2: {ANSWER}") < text.index(f"output: {FINAL}")


def test_newest_first_as_search_traces_lists_them(tmp_path: Path) -> None:
    # `mlflow.search_traces` returns the newest trace first: the resume is read before the run it resumes.
    path = tmp_path / "newest-first.jsonl"
    path.write_text("".join(reversed(MLFLOW.read_text().splitlines(keepends=True))))
    (case,) = extract(path, "mlflow")
    assert facts(case) == facts(extract(MLFLOW, "mlflow")[0])


def test_other_sessions_and_traces_without_one_stay_one_case_each(tmp_path: Path) -> None:
    # The paused trace alone (its resume not exported) and the resume under another thread: nothing to join.
    paused, resumed = [json.loads(line) for line in MLFLOW.read_text().splitlines()]
    resumed["info"]["trace_metadata"]["mlflow.trace.session"] = "another-thread"
    lone = json.loads(json.dumps(paused))
    del lone["info"]["trace_metadata"]["mlflow.trace.session"]
    path = tmp_path / "apart.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (paused, resumed)))
    cases = extract(path, "mlflow")
    assert [c.trace.output for c in cases] == [QUESTION, FINAL] and [c.input for c in cases] == [REQUEST, ANSWER]
    path.write_text(json.dumps(lone) + "\n" + json.dumps(resumed) + "\n")
    assert len(extract(path, "mlflow")) == 2
