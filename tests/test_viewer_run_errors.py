"""`tracejudge view` on inspect-ai logs whose samples crashed or were stopped by a limit (`metadata.run_error`, the
result `ok` all the same): the Run page counts them and links to them, the Cases table marks their rows, filters them
(`status=run_error`) and finds them by the error's text — as `report.html` marks them — over HTTP on 127.0.0.1.

A judge question about one call or step (`call k`, `step k`: the judge reads them numbered from 1) links to that
call or step in the transcript, which numbers them from 0 (`#k-1`, `step k-1`, as ToolCalls does).
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from urllib.parse import quote_plus

import pytest
import yaml
from _runs import view_server
from test_viewer_usability import get, matching
from tracejudge.entrypoints.cli import main

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run over the logs of `inspect-stops` and `inspect-failures`: a deterministic metric, and two judge metrics asking
    about each call and each step (the bundled simulator answers)."""
    tmp = tmp_path_factory.mktemp("run-errors")
    logs = tmp / "logs"
    logs.mkdir()
    for folder in ("inspect-stops", "inspect-failures"):
        for log in (DATA / folder).glob("*.eval"):
            shutil.copy(log, logs / log.name)
    cfg = tmp / "c.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(logs), "format": "inspect", "options": {"id_prefix": "log"}},
                                   "metrics": [{"type": "MaxToolCalls", "max_calls": 9}, {"type": "ToolCallNecessity"},
                                               {"type": "StepFaithfulness"}],
                                   "judge": {"provider": "simulator", "model": "sim"}, "cache": {"dir": str(tmp / "cache")},
                                   "run": {"dir": str(tmp / "insp")}}))
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    return tmp / "insp"


def _errors(run: Path) -> dict[str, str]:
    """case id → the run error its result line holds (what the viewer must show), from `results.jsonl` itself."""
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" for r in lines)
    return {r["case_id"]: r["metadata"]["run_error"] for r in lines if (r.get("metadata") or {}).get("run_error")}


def test_the_cases_whose_run_ended_in_an_error_are_counted_marked_and_filtered(run: Path) -> None:
    errors = _errors(run)
    total = len((run / "results.jsonl").read_text().splitlines())
    assert 0 < len(errors) < total  # (crashed, limited and stopped samples; and some that ended well)
    with view_server(str(run)) as url:
        page = get(url + "/run/insp")[1]
        said = re.search(r'<a id="run-errors" href="([^"]+)">([^<]*)</a>', page)
        assert said is not None, page[:3000]
        assert html.unescape(said.group(2)) == f"{len(errors)} of {total} results: the agent's run ended in an error"

        listed = get(url + html.unescape(said.group(1)))[1]  # the link: those cases, and only them
        assert matching(listed) == len(errors)
        rows = dict(re.findall(r'<tr data-case="([^"]+)" data-trial="0">(.*?)</tr>', listed, re.S))
        assert {html.unescape(k) for k in rows} == set(errors)
        for cid, row in rows.items():
            cell = re.search(r'<td class="clip warn run-error" title="([^"]*)">ok · run error</td>', row)
            assert cell is not None, row
            assert html.unescape(cell.group(1)) == "ok · run error: " + errors[html.unescape(cid)]

        every = get(url + "/run/insp/cases")[1]  # the unfiltered table marks the same rows, and only them
        marked = {html.unescape(cid) for cid, row in re.findall(r'<tr data-case="([^"]+)" data-trial="0">(.*?)</tr>', every, re.S)
                  if "ok · run error" in row}
        assert marked == set(errors)
        assert 'value="run_error"' in every  # a choice of the status filter

        crashed = next(cid for cid, err in errors.items() if "crashed" in err)
        found = get(url + "/run/insp/cases?q=crashed")[1]  # the error's text is searched
        # (a judge's reason may quote a user turn saying "backend crashed": how the judge's requests were grouped, which
        # depends on timing, decides that; the case whose run crashed is found by its error whatever the reasons say)
        assert crashed in [html.unescape(c) for c in re.findall(r'<tr data-case="([^"]+)"', found)]
        assert matching(get(url + "/run/insp/cases?q=" + quote_plus(errors[crashed][:40]))[1]) >= 1


def test_a_run_without_run_errors_says_so_when_filtered(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(DATA / "inspect-failures" / "retried.eval"), "format": "inspect"},
                                   "metrics": [{"type": "MaxToolCalls", "max_calls": 9}], "run": {"dir": str(tmp_path / "one")}}))
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    lines = [json.loads(line) for line in (tmp_path / "one" / "results.jsonl").read_text().splitlines()]
    kept = [r for r in lines if not (r.get("metadata") or {}).get("run_error")]
    (tmp_path / "one" / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))  # only the sample that ended well
    with view_server(str(tmp_path / "one")) as url:
        assert 'id="run-errors"' not in get(url + "/run/one")[1]
        page = get(url + "/run/one/cases?status=run_error")[1]
        assert matching(page) == 0 and "no case of this run has an agent run that ended in an error" in page
        assert "run error" not in re.search(r"<tbody>.*</tbody>", get(url + "/run/one/cases")[1], re.S).group(0)


def _element(page: str, anchor: str, kind: str) -> str:
    """The HTML from the element whose id is `anchor` up to the next element of its `kind` (`call`, `step`)."""
    at = page.index(f'id="{anchor}"')
    end = page.find(f' data-{kind}="', at + len(anchor) + 20)
    return page[at:end if end > 0 else len(page)]


def test_a_judge_question_about_call_k_or_step_k_links_to_it_in_the_transcript(run: Path) -> None:
    # token-limit.eval's sample: three replies, calling get_weather for Paris; Tokyo; Oslo and Rome (the recorder's truth).
    truth = json.loads((DATA / "inspect-stops" / "truth.json").read_text())["token-limit"]["over_calls"]
    cities = [c["arguments"]["city"] for c in truth["calls"]]
    by_reply = [[next(c["arguments"]["city"] for c in truth["calls"] if c["id"] == i) for i in r["calls"]] for r in truth["replies"]]
    with view_server(str(run)) as url:
        page = get(url + "/run/insp/case?id=token-limit/over_calls")[1]
        table = re.search(r'data-metric="ToolCallNecessity"><h4>.*?</table>', page, re.S).group(0)
        asked = re.findall(r'<td>call (\d+) <a class="to-trace" href="#([^"]+)">→ #(\d+) get_weather</a></td>', table)
        assert [int(k) for k, _, _ in asked] == list(range(1, len(cities) + 1)), table
        for k, anchor, shown in asked:
            k = int(k)
            assert anchor == f"insp-call-{k - 1}" and int(shown) == k - 1  # the judge's call 1 is the transcript's #0
            call = _element(page, anchor, "call")
            assert f'data-call="{k - 1}"' in call and f'&quot;{cities[k - 1]}&quot;' in call, (k, call[:600])
        assert "its call k is #k−1 in the transcript" in page

        table = re.search(r'data-metric="StepFaithfulness"><h4>.*?</table>', page, re.S).group(0)
        steps = re.findall(r'<td>step (\d+) <a class="to-trace" href="#([^"]+)">→ step (\d+)</a></td>', table)
        assert [int(k) for k, _, _ in steps] == list(range(1, len(by_reply) + 1)), table
        for k, anchor, shown in steps:
            k = int(k)
            assert anchor == f"insp-step-{k - 1}" and int(shown) == k - 1
            step = _element(page, anchor, "step")
            assert f'data-step="{k - 1}"' in step
            assert all(f'&quot;{city}&quot;' in step for city in by_reply[k - 1]), (k, step[:800])
            assert not any(f'&quot;{city}&quot;' in step for city in cities if city not in by_reply[k - 1])
