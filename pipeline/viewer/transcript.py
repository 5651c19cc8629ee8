"""A case as a conversation: user turns, assistant messages, each tool call with its arguments and result, in order.

Shown as `inspect view` shows a sample: thoughts folded (`<details>`), text
results as written (a multi-line table stays a table), JSON results indented
and foldable, anything long cut to its first lines with a "show all" fold.
Everything from the trace is escaped: trace text is untrusted. No script is
needed (the viewer's CSP allows none inline); folds are `<details>`.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.core.records import Case, ToolCall
from tracejudge.core.shown_calls import STEP_CALLS, more_calls
from tracejudge.stages.judge.trace_text import user_calls
from tracejudge.viewer.html import e, t

__all__ = ["FOLD_CALLS", "call_html", "rest_placeholder", "render_value", "steps_html", "transcript_html"]

PREVIEW_LINES = 12
PREVIEW_CHARS = 1500
_MAX_CHARS = 200_000  # beyond this a value is cut even under "show all": a page must stay loadable
# Tool calls (and alignment rows) a Case page holds before the rest of its transcript (table) is fetched on demand: a case
# of 5,000 calls was a 6-8 MB page taking seconds to render; what is left out is loaded by a button, or by a link into it.
FOLD_CALLS = 200


def _block(text: str, indent: str) -> str:
    # A multi-line string inside a structure is shown as written, between triple quotes, not as "a\nb".
    body = "\n".join(indent + "  " + line for line in text.split("\n"))
    return f'"""\n{body}\n{indent}"""'


def _as_text(value: Any, indent: str = "") -> str:
    """JSON indented by 2, except that strings holding line breaks are blocks of their own lines."""
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {_as_text(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(inner + _as_text(v, inner) for v in value) + "\n" + indent + "]"
    if isinstance(value, str) and "\n" in value:
        return _block(value, indent)
    return json.dumps(value, ensure_ascii=False, default=str)


def _unwrap(value: Any) -> tuple[str, Any]:
    # {"output": {"output": "<table>"}} is one text under a path: the path and the text as written (when multi-line).
    path: list[str] = []
    while isinstance(value, dict) and len(value) == 1:
        key, inner = next(iter(value.items()))
        if not isinstance(inner, (dict, str)):
            break
        path.append(str(key))
        value = inner
    return ".".join(path), value


def _decoded(value: Any) -> Any:
    # A string that is a JSON document (tool results often are) is shown as the structure it holds.
    if isinstance(value, str) and value[:1] in "{[" and value.rstrip()[-1:] in "}]":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _folded(text: str, cls: str) -> str:
    """`text` escaped in a `<pre>`; past PREVIEW_LINES lines or PREVIEW_CHARS characters, the rest behind "show all" (its
    summary counts the whole value's lines and characters; past `_MAX_CHARS`, says how much of it the fold holds)."""
    n_lines, n_chars, kept = text.count("\n") + 1, len(text), len(text) <= _MAX_CHARS
    # (past _MAX_CHARS the fold does not hold all of it: it said "show all", counting only the part it kept)
    whole = f"{n_lines:,} lines, {n_chars:,} characters" if kept else f"the first {_MAX_CHARS:,} of {n_chars:,} characters, {n_lines:,} lines"
    if not kept:
        text = text[:_MAX_CHARS] + f"\n… ({n_chars - _MAX_CHARS:,} more characters not shown)"
    lines = text.split("\n")
    cut = len("\n".join(lines[:PREVIEW_LINES]))
    if cut > PREVIEW_CHARS:  # long lines: stop at the last whole line that fits, or mid-line when the first is longer
        last = text.rfind("\n", 0, PREVIEW_CHARS)
        cut = last if last > 0 else PREVIEW_CHARS
    # The parser drops one newline right after <pre>: each block starts with one, so the text's own are kept.
    if cut >= len(text):
        return f'<pre class="{cls}">\n{t(text)}</pre>'
    rest = text[cut:].removeprefix("\n")
    return (f'<pre class="{cls}">\n{t(text[:cut])}</pre><details class="more"><summary>{"show all" if kept else "show more"} '
            f'({whole})</summary><pre class="{cls} rest">\n{t(rest)}</pre></details>')


def render_value(value: Any, cls: str = "value") -> str:
    """HTML for a tool result, argument mapping, message or output.

    Text is shown as written; JSON (a mapping, a list, or a string holding
    one) is indented inside an open `<details class="json">` so it folds; a
    long value shows its first lines and a "show all" fold.
    """
    value = _decoded(value)
    path, inner = _unwrap(value) if isinstance(value, dict) else ("", value)
    inner = _decoded(inner)
    if isinstance(inner, str) and (not path or "\n" in inner):  # {"k": "short"} stays JSON
        where = f'<div class="label">{t(path)}</div>' if path else ""
        return where + _folded(inner, f"{cls} text")
    text = _as_text(value)
    kind = f"{len(value)} key{'s' if len(value) != 1 else ''}" if isinstance(value, dict) else \
        f"{len(value)} item{'s' if len(value) != 1 else ''}" if isinstance(value, list) else "value"
    if not isinstance(value, (dict, list)):
        return _folded(text, cls)
    return f'<details class="json" open><summary>JSON · {kind}</summary>{_folded(text, cls + " json")}</details>'


def call_html(idx: int, call: ToolCall, *, full: bool = True, anchor: str = "") -> str:
    """One tool call: its index over the trace, name, arguments and (when `full`) its error and result; `anchor`: its
    element id (`<anchor>-call-<idx>`: what a judge question about the call links to), none when empty."""
    failed = call.error is not None
    where = f' id="{e(anchor)}-call-{idx}"' if anchor else ""
    out = [f'<div class="call{" failed" if failed else ""}"{where} data-call="{idx}"><div class="call-head"><span class="idx">#{idx}</span> '
           f'<span class="label">tool call</span> <b class="tool">{t(call.name)}</b>'
           + (' <span class="badge FAIL small">failed</span>' if failed else "")
           + (' <span class="muted">arguments are not valid JSON</span>' if call.arguments_invalid else "") + "</div>",
           f'<div class="args">{render_value(call.arguments, "args")}</div>']
    if full:
        if failed:
            out.append(f'<div class="tool-result err"><div class="label">error</div>{render_value(call.error, "result err")}</div>')
        if call.result is not None:
            out.append(f'<div class="tool-result"><div class="label">result</div>{render_value(call.result, "result")}</div>')
    out.append("</div>")
    return "".join(out)


def transcript_html(case: Case | None, note: str, anchor: str = "", rest_url: str = "") -> str:
    """The case as a conversation: `<section class="transcript">` with its system prompts (folded), user turns (`.msg.user[data-user=k]`), steps
    (`.step[data-step=i]`: folded thought, tool calls with results, the assistant's message), the final output and the expected one.

    Steps and calls are numbered from 0 (`step 0`, `#0`), as ToolCalls' details and reasons number them; `anchor`
    (a run id) gives step i the element id `<anchor>-step-<i>` and call j `<anchor>-call-<j>`. With `rest_url` (the
    escaped URL of `steps_html` on this case, without `from=`), the steps after the first `FOLD_CALLS` calls are a
    `rest_placeholder` that fetches them."""
    out = ['<section class="transcript"><h3>Transcript</h3>', f'<p class="muted small note">{e(note)}</p>']
    if case is None:
        return "".join(out) + "</section>"
    for prompt in case.trace.system_prompts if case.trace else []:  # (folded: a policy runs to pages, and every case has it)
        whose = f" of agent {prompt.agent}" if prompt.agent is not None else ""
        out.append(f'<details class="msg system"><summary class="label">system prompt{e(whose)} ({len(prompt.text):,} characters)</summary>'
                   f'{render_value(prompt.text, "said")}</details>')
    if case.input is not None and not (case.trace.user_messages if case.trace else []):
        out.append(f'<div class="msg user"><div class="label">user</div>{render_value(case.input, "said")}</div>')
    said = _user_turns(case)
    steps = case.trace.steps if case.trace else []
    shown, stop = _steps(case, anchor, said, 0, FOLD_CALLS if rest_url else None)
    out += shown
    if stop is not None:
        left = sum(len(step.tool_calls) for step in steps[stop:])
        out.append(rest_placeholder(f"{rest_url}&amp;from={stop}", f"show the other {len(steps) - stop:,} steps ({left:,} tool calls)"))
    out += said.get(len(steps), [])
    failed = case.metadata.get("run_error")
    if isinstance(failed, str) and failed:  # (what stopped the run, as the span readers and inspect record it: judges are told it too)
        out.append(f'<div class="tool-result err run-error"><div class="label">the run ended in an error</div>{render_value(failed, "result err")}</div>')
    if case.trace is None:
        out.append('<p class="bad">the case has no trace</p>')
    elif case.trace.output is not None:
        out.append(f'<div class="msg agent final"><div class="label">final output</div>{render_value(case.trace.output, "said")}</div>')
    if case.expected_output is not None:
        out.append(f'<div class="msg expected"><div class="label">expected output</div>{render_value(case.expected_output, "said")}</div>')
    return "".join(out) + "</section>"


def _user_turns(case: Case) -> dict[int, list[str]]:
    """The user's turns between the agent's steps, by the step each sits before (the step that answered it)."""
    said: dict[int, list[str]] = {}
    for k, msg in enumerate(case.trace.user_messages if case.trace else [], 1):
        said.setdefault(msg.step, []).append(
            f'<div class="msg user" data-user="{k}"><div class="label">user {k}</div>{render_value(msg.content, "said")}</div>')
    return said


def _steps(case: Case, anchor: str, said: dict[int, list[str]], start: int, fold: int | None) -> tuple[list[str], int | None]:
    """The HTML of the steps from `start` (each after the user turns before it), numbered over the whole trace; with `fold`,
    it stops before the first step that begins once `fold` calls are shown, and gives that step's index (else None).
    A step shows its first `STEP_CALLS` calls, then a line saying how many more it holds (`shown_calls.more_calls`)."""
    steps = case.trace.steps if case.trace else []
    idx = sum(len(step.tool_calls) for step in steps[:start])
    by_user = user_calls(case)  # (τ²-bench's dual-control domains: calls the user made on their own device)
    out: list[str] = []
    shown = 0
    for si in range(start, len(steps)):
        if fold is not None and shown >= fold:
            return out, si
        step = steps[si]
        out += said.get(si, [])
        mine = range(idx, idx + len(step.tool_calls))
        who = "user (own tool calls)" if mine and all(c in by_user for c in mine) else "assistant"
        where = f' id="{e(anchor)}-step-{si}"' if anchor else ""
        out.append(f'<div class="step"{where} data-step="{si}"><div class="label">{who} · step {si}</div>')
        if step.thought:
            out.append(f'<details class="thought"><summary>thought ({len(step.thought):,} characters)</summary>'
                       f'{render_value(step.thought, "thinking")}</details>')
        for call in step.tool_calls[:STEP_CALLS]:
            out.append(call_html(idx, call, anchor=anchor))
            idx += 1
        if len(step.tool_calls) > STEP_CALLS:  # (a step that fans out: its first calls, then how many more)
            left = len(step.tool_calls) - STEP_CALLS
            out.append(f'<p class="muted more-calls">{e(more_calls(left))} in this step, not shown (#{idx:,} to #{idx + left - 1:,})</p>')
            idx += left
        shown += min(len(step.tool_calls), STEP_CALLS)
        if step.output:
            out.append(f'<div class="msg agent"><div class="label">assistant</div>{render_value(step.output, "said")}</div>')
        if step.error is not None:
            out.append(f'<div class="tool-result err"><div class="label">step error</div>{render_value(step.error, "result err")}</div>')
        out.append("</div>")
    return out, None


def steps_html(case: Case, anchor: str, start: int) -> str:
    """The steps of `case` from `start` on, as `transcript_html` shows them (what its `rest_placeholder` fetches)."""
    return "".join(_steps(case, anchor, _user_turns(case), start, None)[0])


def rest_placeholder(src: str, label: str, *, row: int = 0) -> str:
    """What stands for the part of a page left to be fetched: a button that loads `src` (an escaped URL of an HTML fragment)
    in its place (`static/view.js`); a table row of `row` columns when `row`."""
    button = f'<button type="button" class="load-rest">{e(label)}</button>'
    if row:
        return f'<tr class="rest" data-src="{src}"><td colspan="{row}">{button}</td></tr>'
    return f'<div class="rest" data-src="{src}">{button}</div>'
