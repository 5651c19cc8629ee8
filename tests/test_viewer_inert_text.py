"""`tracejudge view` shows the text a trace or a result holds inert, as report.md and the terminal do: a bidirectional
override (U+202E), an isolate (U+2066) or a zero-width space (U+200B) in a message, a tool's name, arguments or result, a
step's error, a tag, a reason or a snippet is written `\\u{202e}`, never sent raw — where a tool's output could reorder what
the reader sees ("Trojan Source": `\\u202eevil.exe` read as `exe.live`). Marks right-to-left writing needs are kept."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from _runs import view_server, write_dataset
from tracejudge.entrypoints.cli import main

RLO, LRI, ZWSP = "\u202e", "\u2066", "\u200b"
CASE = {
    "id": "c1", "input": f"refund order {RLO}9876", "tags": [f"vip{ZWSP}tier"],
    "expected_tool_calls": [{"name": f"refund{RLO}_now", "arguments": {"order": "9876"}}],
    "trace": {"steps": [
        {"tool_calls": [{"name": f"lookup{RLO}", "arguments": {"order": f"{LRI}9876"}, "result": f"paid {RLO}exe.live"}]},
        {"output": f"Your refund {RLO}is done", "error": f"tool timed out {LRI}later"},
    ], "output": f"Your refund {RLO}is done. \u05e9\u05dc\u05d5\u05dd\u200f ok"},
    "expected_output": "Your refund is done.",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("view-inert")
    data = write_dataset(tmp / "data.jsonl", [CASE])
    cfg = tmp / "eval.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(data), "format": "native"}, "run": {"dir": str(tmp / "run")},
                                   "metrics": [{"type": "ToolCorrectness"}, {"type": "ExactMatch"}]}))
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    with view_server(str(tmp / "run")) as url:
        yield url


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as reply:
        return reply.read().decode()


@pytest.mark.parametrize("page", ["/run/run/case?id=c1", "/run/run/cases"])
def test_no_override_isolate_or_zero_width_character_reaches_the_page(server: str, page: str) -> None:
    # (an attribute the page's script or form sends back, a tag filter's `value`, keeps the text as it is)
    body = re.sub(r'(value|data-case)="[^"]*"', "", _get(server + page))
    raw = [f"U+{ord(ch):04X} at {i}: {body[max(0, i - 40):i + 10]!r}" for i, ch in enumerate(body) if ch in (RLO, LRI, ZWSP)]
    assert raw == []
    text = re.sub(r"<[^>]*>", " ", body)
    assert "\\u{202e}" in text and "\\u{200b}" in text


def test_the_case_page_shows_each_place_inert_and_keeps_the_marks_rtl_text_needs(server: str) -> None:
    text = re.sub(r"<[^>]*>", " ", _get(server + "/run/run/case?id=c1"))
    for shown in ("lookup\\u{202e}", "\\u{2066}9876", "paid \\u{202e}exe.live", "tool timed out \\u{2066}later", "vip\\u{200b}tier",
                  "refund\\u{202e}_now"):
        assert shown in text, shown
    assert "\u05e9\u05dc\u05d5\u05dd\u200f ok" in text  # a Hebrew word and its RLM, as written
