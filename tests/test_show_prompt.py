"""`tracejudge estimate --show-prompt CASE_ID` shows the judge requests a run sends about that case, exactly as sent.

The run goes through the CLI in a real process against the tests' loopback judge on 127.0.0.1, which keeps every
request it is sent; the requests shown for each case must be those, message for message.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _loopback import Loopback, completion, verdict
from tracejudge.core.config import load_config
from tracejudge.stages.judge.show_prompt import prompts_for
import _forkserver

EXE = os.path.join(os.path.dirname(sys.executable), "tracejudge")


def _case(cid: str, steps: int, chars: int = 400) -> dict:
    out = []
    for i in range(1, steps + 1):
        result = " ".join(f"{cid}-row{i}-{j}" for j in range(chars // 12))
        out.append({"tool_calls": [{"name": f"lookup_{i}", "arguments": {"key": f"k{i}"}, "result": result}],
                    "output": f"answer {i} :smile: [bold]x[/bold]" if i == steps else None})
    # (The answer holds what a terminal acts on: an escape that clears the screen, a hyperlink, a carriage return; and a tab.)
    return {"id": cid, "input": f"question about {cid}", "trace": {"steps": out, "output": f"answer {steps} :smile: [bold]x[/bold]"
                                                                                       "\x1b[2J\x1b]8;;http://x\x07y\r\tz\x9b"}}


@pytest.fixture
def yes_server() -> Iterator[Loopback]:
    with Loopback(lambda headers, body: (200, completion(json.dumps(verdict(body))))) as server:
        yield server


def _config(tmp_path: Path, url: str, group: str) -> Path:
    data = tmp_path / "cases.jsonl"
    # "long" does not fit 3,000 tokens whole: it is fitted (middle steps left out), as the run sends it.
    data.write_text("".join(json.dumps(c) + "\n" for c in (_case("short", 2), _case("long", 24), _case("none", 0))))
    cfg = tmp_path / f"cfg-{group}.json"
    cfg.write_text(json.dumps({
        "dataset": {"path": str(data), "format": "native"},
        "metrics": [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}],
        "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "context_tokens": 3000, "group": group},
        "cache": {"enabled": False}, "run": {"dir": str(tmp_path / f"run-{group}")}}))
    return cfg


@pytest.mark.parametrize("group", ["case", "none"])
def test_the_requests_shown_for_each_case_are_the_requests_the_run_sent(yes_server, tmp_path: Path, group: str):
    cfg = _config(tmp_path, yes_server.url, group)
    proc = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    sent = sorted(json.dumps(body["messages"]) for _, body in yes_server.requests)
    config = load_config(cfg)
    shown = {cid: prompts_for(config, cid) for cid in ("short", "long", "none")}
    listed = sorted(json.dumps([dict(m) for m in s.req.messages]) for got in shown.values() for s in got if s.req is not None)
    assert listed == sent
    assert any(s.omitted for s in shown["long"])  # the fitted one is shown fitted
    # A case without a call: ToolCallNecessity is decided without a request, and says so.
    assert [s.why for s in shown["none"] if s.req is None] == ["no request: scored without the judge (no tool calls were made)"]


def test_the_command_prints_each_message_whole_and_names_near_ids_for_an_unknown_one(yes_server, tmp_path: Path):
    cfg = _config(tmp_path, yes_server.url, "case")
    proc = _forkserver.run([EXE, "estimate", str(cfg), "--show-prompt", "long"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [req] = [s.req for s in prompts_for(load_config(cfg), "long") if s.req is not None]
    out = proc.stdout
    assert "=== request 1 of 1: TaskCompletion+ToolCallNecessity (case long, trial 0)" in out
    # the run's reason's words: the steps left out, which ones when the questions keep the first steps whole
    assert re.search(r"fitted to judge\.context_tokens: [0-9]+ middle steps( \(steps [0-9]+–[0-9]+, none of them asked about\))? left out", out)
    for m in req.messages:  # as sent (no wrapping, no markup or emoji codes interpreted), but what a terminal acts on
        visible = m["content"].replace("\x1b", "\\x1b").replace("\x07", "\\x07").replace("\r", "\\x0d").replace("\x9b", "\\x9b")
        assert f"--- {m['role']}\n{visible}\n" in out
    # (The carriage return is a line break of the fenced data: the fence shows every line break as `\n`.)
    assert ":smile: [bold]x[/bold]\\x1b[2J\\x1b]8;;http://x\\x07y\n\tz\\x9b" in out
    assert not any(c in out for c in "\x1b\x07\r\x9b") and "control characters shown as \\xNN" in out
    # --json: each request's body is the JSON the run POSTs.
    got = _forkserver.run([EXE, "estimate", str(cfg), "--show-prompt", "long", "--json"], capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    [line] = [json.loads(x) for x in got.stdout.splitlines() if json.loads(x)["sent"]]
    assert yes_server.requests == []  # nothing was sent by either
    run = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert run.returncode in (0, 1), run.stderr
    [body] = [b for _, b in yes_server.requests if "long-row1" in json.dumps(b)]
    assert line["body"] == body and line["metric"] == "TaskCompletion+ToolCallNecessity"
    proc = _forkserver.run([EXE, "estimate", str(cfg), "--show-prompt", "lnog"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: --show-prompt: no case with id 'lnog'")
    assert "(3 readable cases); did you mean long?" in proc.stderr


def test_a_group_that_cannot_fit_is_shown_and_estimated_as_the_run_asks_it_metric_by_metric(yes_server, tmp_path: Path, data_dir: Path):
    # τ-bench runs whose grouped request (three metrics) cannot fit 2,500 tokens: the run asks each metric alone.
    demo = Path(__file__).resolve().parent.parent / "configs" / "demo.yaml"
    sets = ["dataset.limit=6", "metrics=[{type: TaskCompletion}, {type: ToolCallNecessity}, {type: StepFaithfulness}, "
            "{type: Rubric, criteria: 'Was the agent polite?'}]", "assertions={}", "cache.enabled=false",
            f"judge={{provider: openai, model: gpt-4o-mini, base_url: '{yes_server.url}/v1', context_tokens: 2500}}"]
    args = [a for s in sets for a in ("--set", s)]
    proc = _forkserver.run([EXE, "run", str(demo), "--run-dir", str(tmp_path / "run"), "--no-progress", *args],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    judge = json.loads((tmp_path / "run" / "summary.json").read_text())["judge"]
    assert judge["parts_reasked_alone"] > 0, judge  # the case this test is about
    # Prompts "too long, not sent, their scores null" are only those: a group asked alone instead is none.
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    null = sum(1 for r in rows for s in r["scores"].values() if s["value"] is None and s["reason"].startswith("too_long:"))
    assert judge["too_long"] == null, (judge["too_long"], null)
    assert "could not fit the judge's context and were not sent" not in proc.stdout + proc.stderr or null
    sent = sorted(json.dumps(body["messages"]) for _, body in yes_server.requests)
    config = load_config(demo, [*sets, f"run.dir={tmp_path / 'run'}"])
    ids = [json.loads(line)["case_id"] for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    shown = [s for cid in ids for s in prompts_for(config, cid) if s.req is not None]
    assert sorted(json.dumps([dict(m) for m in s.req.messages]) for s in shown) == sent
    assert any(s.why.startswith("asked alone: the grouped request of TaskCompletion+") for s in shown)
    from tracejudge.stages.judge.estimate import estimate

    # (The loopback judge's usage is made up: the requests, not the tokens, are what to compare.)
    assert estimate(config)["total"].requests == judge["requests"] == len(sent)


def _shown(server, tmp_path: Path, output: str) -> tuple[Path, str]:
    # `estimate --show-prompt c` of one case whose output is `output`: the config's path and what the command printed.
    data = tmp_path / "cases.jsonl"
    data.write_text(json.dumps({"id": "c", "input": "q", "trace": {"steps": [{"tool_calls": [{"name": "f", "arguments": {}}]}],
                                                                 "output": output}}) + "\n")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
                               "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.url + "/v1"},
                               "cache": {"enabled": False}, "run": {"dir": str(tmp_path / "run")}}))
    proc = _forkserver.run([EXE, "estimate", str(cfg), "--show-prompt", "c"], capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return cfg, proc.stdout.decode("utf-8")


def test_a_real_control_character_and_its_escape_written_as_text_are_shown_apart(yes_server, tmp_path: Path):
    # A trace holding the text `\x1b` (backslash, x, 1, b) and one holding a real ESC printed alike: the reader could
    # not tell which the judge was sent. The text's backslash before `xNN` (or before a control character) is doubled;
    # other backslashes (`\X9B` is no escape the display writes) are shown as sent.
    odd = "text \\x1b, real \x1b, text \\\\x07, real after a backslash \\\x07, text \\X9B, plain \\n \\d"
    cfg, out = _shown(yes_server, tmp_path, odd)
    assert not any(c in out for c in "\x1b\x07")
    assert ("text \\\\x1b, real \\x1b, text \\\\\\\\x07, real after a backslash \\\\\\x07, text \\X9B, plain \\n \\d"
            in out)
    assert "; control characters shown as \\xNN; a backslash before xNN, u{…} or a control or invisible character shown doubled" in out
    got = _forkserver.run([EXE, "estimate", str(cfg), "--show-prompt", "c", "--json"], capture_output=True, timeout=300)
    [line] = [json.loads(x) for x in got.stdout.decode("utf-8").splitlines() if json.loads(x)["sent"]]
    assert any(odd in m["content"] for m in line["body"]["messages"])  # --json: exact


def test_invisible_characters_are_shown_and_their_escapes_written_as_text_apart(yes_server, tmp_path: Path):
    # A zero-width space, a right-to-left override (it reorders what a terminal or viewer shows: "Trojan Source") and
    # Unicode tag characters (an instruction no reader sees, which a model reads) were printed as they are: invisible.
    # They are shown as \u{NNNN}; the text `\u{202e}` has its backslash doubled; `\u00e9` (JSON text) and the
    # joiners of emoji and Persian text stay as they are.
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "obey")
    odd = f"zero\u200bwidth, rlo \u202eevil, tags {hidden}, text \\u{{202e}}, json \\u00e9, emoji 👨\u200d👩, fa\u200cx"
    _, out = _shown(yes_server, tmp_path, odd)
    assert not any(c in out for c in "\u200b\u202e" + hidden)
    assert ("zero\\u{200b}width, rlo \\u{202e}evil, tags \\u{e006f}\\u{e0062}\\u{e0065}\\u{e0079}, text \\\\u{202e}, json \\u00e9, "
            "emoji 👨\u200d👩, fa\u200cx") in out
    assert "invisible characters (zero-width, bidirectional, tags) shown as \\u{NNNN}" in out


def test_an_id_that_starts_others_names_them_first(tmp_path: Path, data_dir: Path) -> None:
    # τ-bench ids are `<task>-<trial>`: `--show-prompt 0` suggested `9-0, 8-0, 7-0`, as near by edits as `0-0`.
    repo = Path(__file__).resolve().parents[1]
    proc = _forkserver.run([EXE, "estimate", str(repo / "configs" / "demo.yaml"), "--show-prompt", "0", "--set", f"cache.dir={tmp_path}"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2 and "did you mean 0-0, 0-1, 0-2?" in proc.stderr, proc.stderr



def test_a_sampled_judges_request_is_shown_with_the_prefix_cache_hint_the_run_sends(yes_server, tmp_path: Path) -> None:
    # With judge.samples > 1 the run marks a grouped trace for the provider's prefix cache (each sample asks it again);
    # the request shown lacked the `prompt_cache_key` the run sends.
    cfg = _config(tmp_path, yes_server.url, "case")
    data = json.loads(cfg.read_text())
    data["judge"].update(samples=2, temperature=0.7)
    cfg.write_text(json.dumps(data))
    proc = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    sent = {json.dumps(body, sort_keys=True) for _, body in yes_server.requests if "question about short" in json.dumps(body)}
    shown = _forkserver.run([EXE, "estimate", str(cfg), "--show-prompt", "short", "--json"], capture_output=True, text=True, timeout=120)
    bodies = [json.loads(line)["body"] for line in shown.stdout.splitlines()]
    assert len(bodies) == 1 and "prompt_cache_key" in bodies[0] and {json.dumps(bodies[0], sort_keys=True)} == sent, (bodies, sent)

def test_a_panels_requests_are_shown_one_per_member_as_each_is_sent(yes_server, tmp_path: Path) -> None:
    # With judge.models the section's own model (which asks nothing in a panel) was shown: a panel of gpt-4o-mini and
    # gpt-4o read as one gpt-4o-mini request.
    cfg = _config(tmp_path, yes_server.url, "case")
    data = json.loads(cfg.read_text())
    data["judge"]["models"] = ["openai:gpt-4o-mini", {"model": "openai:gpt-4o"}]
    cfg.write_text(json.dumps(data))
    proc = _forkserver.run([EXE, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    sent = sorted(json.dumps(body, sort_keys=True) for _, body in yes_server.requests if "question about short" in json.dumps(body))
    shown = _forkserver.run([EXE, "estimate", str(cfg), "--show-prompt", "short", "--json"], capture_output=True, text=True, timeout=120)
    lines = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [(x["member"], x["body"]["model"]) for x in lines] == [("openai:gpt-4o-mini", "gpt-4o-mini"), ("openai:gpt-4o", "gpt-4o")], lines
    assert sorted(json.dumps(x["body"], sort_keys=True) for x in lines) == sent
    text = _forkserver.run([EXE, "estimate", str(cfg), "--show-prompt", "short"], capture_output=True, text=True, timeout=120).stdout
    assert "=== request 2 of 2 to panel member openai:gpt-4o: " in text and "\nmodel gpt-4o, max_tokens" in text, text
