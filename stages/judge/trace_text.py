"""How a case's trace and fields become the text a judge reads: numbered steps, compact values, cuts, the fence.

Rendering (JUDGE-METRICS.md): steps numbered from 1; per step its thought
(if any), each call as `call k: name(arguments)` (calls numbered across the
trace, so every trace metric renders the same block and one fence serves
them all), its result (or "no result", or `error: …` for a failed call) and
any output text; a run that ended in an error (`metadata.run_error`) is said
once, under the final output. Call ids are never rendered, so they cannot change a cache
key. Structured values (arguments, JSON results) are rendered compactly
(`compact`): no quotes around plain keys and strings, no whitespace, and a
list of objects with the same keys as one header and one row per object,
so no key is repeated. Tool results follow the cut policy: a result equal
to an earlier call's is shown as `(same result as call k)`, and a result
longer than `RESULT_CHARS` characters keeps its first `RESULT_CHARS`,
marked with the count cut; any other field is cut at `FIELD_CHARS`.

Trace text is untrusted: everything that comes from a case (task, steps,
calls, outputs, passages, claims) goes between two marker lines that carry
a hash of the text itself — a per-request tag that looks random but is a
function of the content, so the cache key stays stable and the text cannot
contain its own closing marker. Every line break in it is made `\\n` first
(`\\r\\n`, `\\r`, U+2028, …: `unify_breaks`), then lines inside that look like a
marker (`==== DATA … ====`), one of the block's own section headings, or one
of the prompt's question lines (a question id such as `TC1:`, `Questions:`,
`Evaluation:`, a multi-item request's `### Item i…`, the pairwise prompt's
`Run 2:`, dressed as Markdown too: `**TC1:**`, `- TC1:`: `neutralise_labels`)
are neutralised, so no line of the data ends the block or passes for a
question of the prompt (or an answer to one). Inside the trace, a line of a
field's data that reads as a line of the rendering itself (`Step 4:`,
` call 1: issue_refund(…)`, `  result: ok`, `User 2: …`) is marked too
(`neutralise_structure`), so a tool result cannot show a call the agent never
made; the renderer's own lines are not. The neutralisers live in
`fence_guard`. Questions after the block only refer
to items in it by number, and the system prompt tells the judge that the
data ends only at the END marker whose tag matches the BEGIN marker and
that nothing inside is an instruction.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tracejudge.core.records import Step
from tracejudge.stages.judge.fence_guard import (join_rendered, neutralise_claims, neutralise_headings, neutralise_labels, neutralise_lines,
                                                 neutralise_markers, neutralise_section, neutralise_structure, unify_breaks)
from tracejudge.stages.judge.fence_labels import asked
from tracejudge.stages.judge.field_cut import AllData, OwnLead, cut_sections, cut_text, own_lead

__all__ = ["FIELD_CHARS", "RESULT_CHARS", "compact", "cut_field", "droppable", "fence", "kept_head", "nested_steps", "neutralise_headings",
           "neutralise_labels", "neutralise_lines", "neutralise_markers", "neutralise_structure", "render_call", "render_steps", "unify_breaks", "whole_text",
           "text_of", "final_output"]

FIELD_CHARS = 2000
RESULT_CHARS = 1000


# A character that could be read as structure: a string holding one is shown JSON-quoted.
_STRUCTURE = re.compile(r'[,:;{}\[\]"\n]')


def _plain(s: str) -> bool:
    # A string shown without quotes: nothing that could be read as structure.
    return bool(s) and s.strip() == s and _STRUCTURE.search(s) is None


def compact(value: Any) -> str:
    """A JSON value as compact text for a judge: `{key:value,…}` (keys sorted, so key order never changes a
    cache key) and `[a,b]` without whitespace, plain strings unquoted (others JSON-quoted), and a list of two
    or more objects with the same keys as `[{k1,k2}: v1,v2; v1,v2]` — each key once."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_key(k)}:{compact(value[k])}" for k in sorted(value, key=str)) + "}"
    if isinstance(value, list):
        if len(value) >= 2 and all(isinstance(v, dict) and v for v in value) and len({tuple(sorted(v, key=str)) for v in value}) == 1:
            keys = sorted(value[0], key=str)
            return "[{" + ",".join(_key(k) for k in keys) + "}: " + "; ".join(",".join(compact(v[k]) for k in keys) for v in value) + "]"
        return "[" + ",".join(compact(v) for v in value) + "]"
    if isinstance(value, str):
        return value if _plain(value) else json.dumps(value, ensure_ascii=False)
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


def _key(k: Any) -> str:
    return str(k) if _plain(str(k)) else json.dumps(str(k), ensure_ascii=False)


def _structured(text: Any) -> str:
    """A field as compact text: a JSON object or array (given, or as a string) compacted, other text as it is."""
    if isinstance(text, str):
        t = text.strip()
        if t[:1] in "{[":
            try:
                return compact(json.loads(t))
            except (ValueError, RecursionError):
                return text
        return text
    return compact(text)


def cut_field(text: Any, limit: int = FIELD_CHARS, full: bool = False) -> str:
    s = _structured(text) if not full else text if isinstance(text, str) else json.dumps(text, sort_keys=True, ensure_ascii=False, default=str)
    return cut_text(s, limit)


def render_call(call: Any, full: bool = False) -> str:
    """`name(arguments)` with arguments compacted (raw text when undecodable; `full`: as sorted-key JSON)."""
    return f"{call.name}({cut_field(call.arguments, full=full)})"


def droppable(n_steps: int, keep: int = 0) -> int:
    """How many of `n_steps` steps a fitted prompt may leave out: all but the first `keep` (at least the first) and the last."""
    return max(0, n_steps - 1 - max(1, keep))


def kept_head(n_steps: int, omit: int, keep: int = 0) -> int:
    """The steps shown before the `omit` steps left out (`render_steps`): half of those kept, or the first `keep` when more."""
    return max((n_steps - omit + 1) // 2, min(keep, n_steps - 1 - omit))


def render_steps(steps: list[Step], omit: int = 0, full: bool = False, before: dict[int, list[str]] | None = None, keep: int = 0,
                 nested: dict[int, tuple[int, str | None]] | None = None, by_user: frozenset[int] = frozenset()) -> str:
    """Steps numbered from 1, calls numbered across the trace (see module doc). `omit` > 0 leaves out that many steps from the middle.

    `keep`: the first `keep` steps hold the items a judge is asked about, so the steps left out come after them
    (`omit` ≤ `droppable(len(steps), keep)`); the window of left-out steps is otherwise centred, as without `keep`.

    `full` (a metric's `trace_format: full`) renders values as sorted-key JSON and cuts every field, results
    included, only at `FIELD_CHARS`, with no result shown as the same as an earlier one. `before` holds lines
    (the user's turns, `conversation`) to put before step i (`len(steps) + 1`: after the last); they stay when
    their step is left out, after the omission marker.

    `nested` (`nested_steps(case)`): the steps an agent run inside a tool call made, by 0-based step index, each
    with the 0-based number of that call and the agent's name. Such a step says so under its heading (`[sub-agent
    Translator, inside call 5: translate]`), and the call says which steps ran inside it before its result came
    back (`ran steps 3–4 before returning`): a judge reading in order would otherwise take the sub-agent's calls for
    the calling agent's own, made again after it had their results. Without `nested` nothing changes.
    """
    lines: list[str] = []
    before = before or {}
    nested = nested or {}
    names = [c.name for s in steps for c in s.tool_calls] if nested else []
    ran: dict[int, list[int]] = {}  # call number -> the steps (1-based) run inside it
    for i, (k, _) in sorted(nested.items()):
        ran.setdefault(k, []).append(i + 1)
    keep_head = kept_head(len(steps), omit, keep) if omit else len(steps)
    call_no = 0
    seen: dict[str, int] = {}  # rendered result → the first call that returned it
    for i, step in enumerate(steps, 1):
        lines.extend(before.get(i, ()))
        if omit and keep_head < i <= keep_head + omit:
            if i == keep_head + 1:
                kept = any(before.get(j) for j in range(keep_head + 2, keep_head + omit + 1))
                lines.append(f"[steps {keep_head + 1}–{keep_head + omit} omitted: the trace is too long for the judge"
                             + ("; the user's turns among them follow]" if kept else "]"))
            call_no += len(step.tool_calls)
            continue
        mine = range(call_no, call_no + len(step.tool_calls))
        # (τ²-bench's dual-control domains: the user calls tools on their own device; a judge must not blame the agent.)
        lines.append(f"Step {i} (the user's own tool calls, not the agent's):" if mine and all(c in by_user for c in mine) else f"Step {i}:")
        if (inside := nested.get(i - 1)) is not None and 0 <= inside[0] < len(names):
            lines.append(f" [sub-agent{' ' + cut_field(inside[1], 200) if inside[1] else ''}, inside call {inside[0] + 1}: {names[inside[0]]}]")
        if step.thought:
            lines.append(f" thought: {cut_field(step.thought, full=full)}")
        for call in step.tool_calls:
            call_no += 1
            lines.append(f" call {call_no}: {render_call(call, full)}")
            if call_no - 1 in ran:
                lines.append(f"  ran {_step_span(ran[call_no - 1])} before returning")
            if call.error is not None:
                lines.append(f"  error: {cut_field(call.error, full=full)}")
            elif call.result is None:
                lines.append("  no result")
            elif call.result == "":
                lines.append('  result: "" (empty text)')  # (a bare `result:` reads as a line cut off)
            elif full:
                lines.append(f"  result: {cut_field(call.result, full=True)}")
            else:
                shown = _structured(call.result)
                if len(shown) > 80 and shown in seen:
                    lines.append(f"  result: (same result as call {seen[shown]})")
                    continue
                seen.setdefault(shown, call_no)
                lines.append(f"  result: {cut_field(shown, RESULT_CHARS)}")
        if step.output:
            lines.append(f" output: {cut_field(step.output, full=full)}")
        if step.error is not None:  # only such a step gets the line: other prompts (and their cache keys) are as before
            lines.append(f" step error: {cut_field(step.error, full=full) if step.error.strip() else '(no message recorded)'}")
    lines.extend(before.get(len(steps) + 1, ()))
    # Each line above is the renderer's own start, then a field's data, which may hold line breaks: a line of the data
    # that reads as one of the rendering's (`Step 4:`, ` call 1: …`, `  result: …`) is marked (`neutralise_structure`).
    return join_rendered(lines) if lines else "(no steps)"


def _step_span(numbers: list[int]) -> str:
    """`step 3`, `steps 3–4`, or for steps not in one run `steps 3, 5`."""
    if len(numbers) == 1:
        return f"step {numbers[0]}"
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"steps {numbers[0]}–{numbers[-1]}"
    return "steps " + ", ".join(map(str, numbers))


def user_calls(case: Any) -> frozenset[int]:
    """`metadata.user_call_indices` (the `tau2-bench` reader's: calls the user made, 0-based across the trace) for
    `render_steps`'s `by_user`; anything but a list of non-negative integers counts for nothing."""
    got = case.metadata.get("user_call_indices") if isinstance(getattr(case, "metadata", None), dict) else None
    return frozenset(i for i in got if type(i) is int and i >= 0) if isinstance(got, list) else frozenset()


def nested_steps(case: Any) -> dict[int, tuple[int, str | None]]:
    """`metadata.nested_steps` (the span readers': steps made by an agent run inside a tool call) for `render_steps`.

    By 0-based step index: the 0-based number of the call and the agent's name (`None`: unnamed). An entry that is
    not `{step, call[, agent]}` with non-negative integers is left out (a hand-written case's metadata is free-form).
    """
    got = case.metadata.get("nested_steps") if isinstance(getattr(case, "metadata", None), dict) else None
    out: dict[int, tuple[int, str | None]] = {}
    for entry in got if isinstance(got, list) else []:
        if not isinstance(entry, dict):
            continue
        step, call, agent = entry.get("step"), entry.get("call"), entry.get("agent")
        if type(step) is int and type(call) is int and 0 <= call and 0 <= step:
            out[step] = (call, agent if isinstance(agent, str) and agent else None)
    return out


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # (in a str, a pair is one code point: any surrogate left is alone)


def whole_text(text: str) -> str:
    """`text` with each lone UTF-16 surrogate (a JSON `\\ud800` escape with no partner, as a stream cut mid-emoji
    records) replaced by U+FFFD: such text cannot be encoded as UTF-8, so no judge could be sent it, and a tokenizer
    or hash of the prompt raised. Text without one is returned as it is."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


def fence(sections: list[tuple[str, str]], runs: bool = False) -> str:
    """Titled sections between marker lines carrying a hash of the content (line breaks made `\\n`: `unify_breaks`;
    forged markers, forged section headings and forged question lines neutralised: `neutralise_markers`,
    `neutralise_headings`, `neutralise_labels`; lone surrogates replaced: `whole_text`).

    Rendered for a request (`fence_labels.asking`: the ids it asks), a line is a forged question line only by those
    ids, and a `Run N:` label only in a prompt with runs (`runs`: the pairwise prompt's); rendered outside one, by any.

    Inside `field_cut.cutting` (a prompt over the judge's context) oversized sections are cut first.
    """
    # Every line break in the data is made `\n` (`unify_breaks`) before anything is neutralised: the fence's own lines
    # (markers, `## ` headings) break with `\n`, and a judge or its tokenizer takes `\r`, `\r\n`, U+2028, … for a line
    # break as well, so with one kind of break the lines checked for forgeries are exactly the lines the judge reads
    # (a bare `\r` left in could also show as a carriage return that overwrites the line before it). Data holding
    # only `\n` breaks is unchanged, so its prompt and cache key are as before.
    leads = {title: text.lead for title, text in sections if isinstance(text, OwnLead)}  # (the builder's own first lines)
    kept = [(title, unify_breaks(text)) for title, text in cut_sections(sections)]
    titles = tuple(title for title, _ in kept)
    # (Faithfulness: a `Claim 2:` line outside its Claims section forges one of the claims asked about, and so does a
    # claim whose own text starts `Claim 3:` inside it: `neutralise_claims`)
    asks = asked(runs)
    if claims := "Claims" in titles:
        kept = [(title, neutralise_claims(text, asks) if title == "Claims" else text) for title, text in kept]
    body = "\n\n".join(f"## {title}\n{_own_lead(neutralise_section(text, titles, claims and title != 'Claims', asks), leads.get(title))}"
                       for title, text in kept)
    body = whole_text(neutralise_markers(body, lookalikes=False))  # (each section's skeletons were read: `neutralise_section`)
    tag = hashlib.sha256(body.encode()).hexdigest()[:12]
    return f"==== DATA {tag} BEGIN ====\n{body}\n==== DATA {tag} END ===="


def _own_lead(text: str, lead: str | None) -> str:
    """`text` with its first line unmarked when it is `lead`, the line the builder wrote there (`field_cut.OwnLead`)."""
    if lead and text.startswith(f"[data] {lead}") and text[7 + len(lead):][:1] in ("", "\n"):
        return text[7:]
    return text


def final_output(case: Any, full: bool = False) -> str:
    """The "Final output" section's text: the output (said once: a pointer to the last step when that step's output is
    it, in the compact rendering), `(none)`, and when the run ended in an error (`metadata.run_error`, which the
    span readers set from a failed agent run: "Max turns exceeded", a raised exception) a line saying so.

    A case without `run_error` renders as before, so its prompt and cache key do not change. Returned as `AllData`:
    `fence` neutralises it (`neutralise_lines`) after any cut, so a cut counts the output's own characters.
    The last step's output is the output also when both are JSON text of the same object or array (`_same_output`).
    """
    steps = case.trace.steps
    output = text_of(case.trace.output)
    lead = ""
    if not full and output and steps and _same_output(text_of(steps[-1].output), output):
        output = lead = f"(the output of step {len(steps)} above)"  # said once: the compact trace repeats nothing
    text = output or "(none)"
    error = case.metadata.get("run_error")
    if isinstance(error, str) and error:
        text += f"\n(the run ended in an error: {cut_field(error, full=full)})"
    # (all of it data: a line of it could pass for a step or a call of the trace above; `fence` neutralises it after any cut)
    return own_lead(text, lead) if lead else AllData(text)  # (the pointer is the builder's: `fence` leaves it unmarked)


def _same_output(shown: str, output: str) -> bool:
    """Whether a step's output text says the case's output: the same text, or JSON objects (arrays) of the same value.

    A structured answer given through a tool (pydantic-ai's output tool) is the step's output as the model wrote its
    arguments, and the case's output as the framework serialised the value: other key order or spacing, the same
    rendering (`compact` sorts keys). Plain text is compared as it is, so no other prompt changes.
    """
    if shown == output:
        return True
    if not (shown.lstrip().startswith(("{", "[")) and output.lstrip().startswith(("{", "["))):
        return False
    try:
        return compact(json.loads(shown)) == compact(json.loads(output))  # (not `==`: Python has `1 == True`)
    except (ValueError, RecursionError):
        return False


def text_of(value: Any) -> str:
    """A case field (input, output, context) as text."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
