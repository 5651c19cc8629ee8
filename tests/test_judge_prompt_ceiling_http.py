"""A judge server's prompt count over real HTTP on 127.0.0.1: one count for templated cases of much the same length is
a tokenizer counting fewer tokens, not a cut (a server reporting 400 for prompts counted as ~485 read as cutting
every one), while one count at a context size for prompts of clearly different lengths is Ollama's `num_ctx`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _loopback import Loopback, completion, verdict
from test_judge_servers import config, run

ONE = [{"type": "TaskCompletion"}]


def _cases(path: Path, steps: list[int], pad: int = 0) -> Path:
    """Cases whose prompts differ by a few tokens (`pad` words more per case) or, with different `steps`, a lot."""
    with open(path, "w") as fh:
        for i, n in enumerate(steps):
            st = [{"tool_calls": [{"name": "lookup", "arguments": {"q": f"item {i} {k}"}, "result": f"found {i} {k}"}]} for k in range(n)]
            text = f"Find item {i}" + " please" * (i * pad)
            fh.write(json.dumps({"id": f"case-{i}", "input": text, "trace": {"steps": st, "output": f"Item {i} is found."}}) + "\n")
    return path


def _reporting(tokens: int):
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body)))
        reply["usage"]["prompt_tokens"] = tokens
        return 200, reply
    return respond


def _cut(tmp: Path, data: Path, tokens: int, name: str) -> int:
    with Loopback(_reporting(tokens)) as server:
        summary = run(config(tmp, server.url, data, metrics=ONE, run=name))
    assert set(summary["status"]) == {"ok"}, summary["status"]
    return summary["judge"]["server_truncated_prompts"]


def test_one_count_for_templated_prompts_of_about_the_same_length_is_no_cut(tmp_path: Path) -> None:
    data = _cases(tmp_path / "c.jsonl", [5] * 6, pad=1)  # a few tokens apart, each counted 5% and more over 400
    assert _cut(tmp_path, data, 400, "at400") == 0  # 400 is no context a server is run with
    many = _cases(tmp_path / "m.jsonl", [12] * 6, pad=1)  # over 512 by 5% and more: a context size, but one length
    assert _cut(tmp_path, many, 512, "at512") == 0


def test_one_count_at_a_context_size_for_prompts_of_clearly_different_lengths_is_a_cut(tmp_path: Path) -> None:
    data = _cases(tmp_path / "c.jsonl", [12, 18, 26, 34, 40])  # ~580 to 1,200 tokens, every one reported as 512
    assert _cut(tmp_path, data, 512, "cut") == 5
