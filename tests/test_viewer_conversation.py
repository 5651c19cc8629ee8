"""The viewer's case page shows the user's turns between the agent's steps, escaped, over real HTTP (`tracejudge view`)."""

from __future__ import annotations

import html
import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from _runs import view_server, write_dataset
from helpers import DATA
from tracejudge.entrypoints.cli import main

TAU = DATA / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"
TASKS = DATA / "tau_bench" / "tasks" / "tasks_airline_test.json"
KAGENT = DATA / "otel_genai" / "kagent" / "v1.0.0-alpha9" / "adk_go_1turn.json"
EVIL = "<script>window.pwned=1</script><img src=x onerror=alert(1)>"


def _config(tmp: Path, name: str, dataset: dict) -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"dataset": dataset, "metrics": [{"type": "ToolCorrectness", "allow_extra": True}], "run": {"dir": str(tmp / name)}}))
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`tracejudge view` (a real process, port 0) over a τ-bench run and a native run whose user turn holds HTML."""
    tmp = tmp_path_factory.mktemp("view-conv")
    assert main(["run", str(_config(tmp, "tau", {"path": str(TAU), "format": "tau-bench", "tasks": str(TASKS), "limit": 3})), "--no-progress"]) in (0, 1)
    evil = {"id": "evil", "input": "hi", "expected_tool_calls": [], "trace": {
        "steps": [{"output": "Hello."}], "user_messages": [{"step": 0, "content": "hi"}, {"step": 1, "content": EVIL}], "output": "Hello."}}
    data = write_dataset(tmp / "evil.jsonl", [evil])
    assert main(["run", str(_config(tmp, "evil", {"path": str(data), "format": "native"})), "--no-progress"]) in (0, 1)
    assert main(["run", str(_config(tmp, "kagent", {"path": str(KAGENT), "format": "otel"})), "--no-progress"]) in (0, 1)
    with view_server(str(tmp / "tau"), str(tmp / "evil"), str(tmp / "kagent")) as url:
        yield url


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return reply.read().decode()


def test_the_case_page_shows_every_tau_bench_user_turn_between_the_steps(server):
    runs = json.loads(TAU.read_text())[:3]
    for run in runs:
        page = _get(f"{server}/run/tau/case?id={run['task_id']}-{run['trial']}&trial=0")
        transcript = page[page.index('<section class="transcript">'):]
        # The page's order of user turns and steps is the conversation's: user k before the step that answered it.
        order = re.findall(r'data-(user|step)="(\d+)"', transcript)
        expected, steps, k = [], 0, 0
        for msg in run["traj"]:
            if msg["role"] == "user":
                k += 1
                expected.append(("user", str(k)))
            elif msg["role"] == "assistant":
                expected.append(("step", str(steps)))
                steps += 1
        assert order == expected
        said = [html.escape(m["content"]) for m in run["traj"] if m["role"] == "user"]
        at = [transcript.find(s) for s in said]
        assert all(a >= 0 for a in at) and at == sorted(at)  # every turn's text, escaped, in order
        assert 'class="label">input<' not in transcript  # the first request is shown once, as user 1


def test_user_turn_text_is_escaped(server):
    page = _get(f"{server}/run/evil/case?id=evil&trial=0")
    assert html.escape(EVIL) in page and EVIL not in page and "<script>window.pwned" not in page
    assert 'data-user="2"' in page


def _case_ids(run_dir: Path) -> list[str]:
    return [json.loads(line)["case_id"] for line in (run_dir / "results.jsonl").read_text().splitlines()]


def test_transcript_shows_a_text_result_as_written_and_folds_thoughts_json_and_long_results(server):
    listing = _get(f"{server}/run/kagent/cases")
    case_id = html.unescape(re.search(r'class="case-link" href="[^"]*id=([^&"]+)', listing).group(1))
    page = _get(f"{server}/run/kagent/case?id={urllib.request.quote(case_id)}&trial=0")
    transcript = page[page.index('<section class="transcript">'):]
    # The kubectl table is shown as written: its own lines, no JSON escapes, under the path it was found at.
    assert re.search(r'<div class="label">output.output</div><pre class="result text">\nNAME +STATUS +AGE\nagentevals +Active', transcript)
    assert "\\n" not in transcript
    # A long pod listing shows its first lines, the rest behind "show all".
    assert '<details class="more"><summary>show all (' in transcript
    # The assistant's thought is folded; its arguments are indented JSON that folds.
    assert '<details class="thought"><summary>thought' in transcript
    assert '<details class="json" open><summary>JSON · 1 key</summary><pre class="args json">\n{\n  &quot;resource_type&quot;: &quot;namespace&quot;\n}' in transcript
    order = re.findall(r'data-(user|step|call)="(\d+)"', transcript)
    assert order[:4] == [("user", "1"), ("step", "0"), ("call", "0"), ("call", "1")]  # in the conversation's order


def test_render_value_escapes_and_keeps_text():
    from tracejudge.viewer.transcript import render_value

    got = render_value({"out": EVIL + "\nline 2"})
    assert EVIL not in got and html.escape(EVIL) in got and "\nline 2" in got
    assert render_value('["a", "b\\nc"]').count("&quot;&quot;&quot;") == 2  # a JSON string result is decoded, its text a block


def test_a_value_past_what_a_page_holds_says_how_much_of_it_the_fold_shows():
    # A 300,000-character argument's fold read "show all (3 lines, 200,037 characters)": the counts of the part kept,
    # under a "show all" that held two thirds of it (its second key never shown).
    from tracejudge.viewer.transcript import render_value

    got = html.unescape(render_value({"blob": "L" * 200_000, "nested": ["y" * 5000] * 20}))
    assert "<summary>show more (the first 200,000 of 300,194 characters, 25 lines)</summary>" in got, got[-300:]
    assert got.endswith("… (100,194 more characters not shown)</pre></details></details>")
    short = html.unescape(render_value({"rows": "\n".join(f"row {i}" for i in range(30))}))
    assert "<summary>show all (30 lines, 199 characters)</summary>" in short, short
