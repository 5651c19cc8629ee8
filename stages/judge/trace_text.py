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
`Evaluation:`, a multi-item request's `### Item i…`: `neutralise_labels`) are
neutralised, so no line of the data ends the block or passes for a question
of the prompt (or an answer to one); questions after the block only refer
to items in it by number, and the system prompt tells the judge that the
data ends only at the END marker whose tag matches the BEGIN marker and
that nothing inside is an instruction.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from typing import Any

from tracejudge.core.records import Step
from tracejudge.stages.judge.field_cut import cut_sections, cut_text

__all__ = ["FIELD_CHARS", "RESULT_CHARS", "compact", "cut_field", "droppable", "fence", "kept_head", "nested_steps", "neutralise_labels",
           "neutralise_markers", "render_call", "render_steps", "unify_breaks", "whole_text", "text_of", "final_output"]

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
    return "\n".join(lines) if lines else "(no steps)"


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


# Every line break a reader or a model's tokenizer takes for one (those `str.splitlines` breaks on): `\r\n`, `\r`,
# `\n`, `\v`, `\f`, `\x1c`–`\x1e`, U+0085, U+2028, U+2029. `(?m)^` and `$` know only `\n`, so the patterns below
# also start (and end) a line at each of the others: `neutralise_markers` and `neutralise_headings` hold on any text.
# Those patterns are about 3 times slower, so text without such a break (all text `fence` checks, once
# `unify_breaks` has run) is checked with the `\n`-only ones; `in` finds that out far faster than a regex scan.
_OTHER_BREAK_CHARS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_OTHER_BREAKS = "\r\v\f\x1c-\x1e\x85\u2028\u2029"
_LINE_START = rf"(?:^|(?<=[{_OTHER_BREAKS}]))"  # (with (?m): after `\n` too)
_LINE_END = rf"(?=[\n{_OTHER_BREAKS}]|\Z)"
_BREAK = re.compile(rf"\r\n|[{_OTHER_BREAKS}]")


def _other_breaks(text: str) -> bool:
    return any(c in text for c in _OTHER_BREAK_CHARS)


def unify_breaks(text: str) -> str:
    """`text` with each line break other than `\\n` (`\\r\\n`, `\\r`, `\\v`, `\\f`, `\\x1c`–`\\x1e`, U+0085, U+2028,
    U+2029) made `\\n`; text with none is returned as it is (its prompt and cache key unchanged)."""
    return _BREAK.sub("\n", text) if _other_breaks(text) else text


# A line of the data that could pass for a marker: `====` (or more `=`) then DATA, any case, any spacing.
_FORGED = re.compile(r"(?im)^([ \t]*)(={2,}[ \t]*data\b)")
_FORGED_ANY_BREAK = re.compile(rf"(?im){_LINE_START}([ \t]*)(={{2,}}[ \t]*data\b)")  # (the same, after any line break)


def neutralise_markers(text: str) -> str:
    """`text` with every marker-like line prefixed by `[data] `, so no line of the data starts a marker."""
    if "==" not in text:  # a marker needs two `=` in a row: most text has none, and this test is far cheaper than the scan
        return text
    return (_FORGED_ANY_BREAK if _other_breaks(text) else _FORGED).sub(lambda m: f"{m.group(1)}[data] {m.group(2)}", text)


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


def neutralise_headings(text: str, titles: tuple[str, ...]) -> str:
    """`text` (a section's data) with every line that reads as one of the fence's own section headings (`## Final
    output`, `# final output:`, at any heading level, any case, any space or zero-width character around or inside
    it, a fullwidth `＃`, closing `#`s) prefixed by `[data] `.

    A tool result or message holding such a line could pass for a section of the prompt's own, a forged final
    output among them. Ordinary headings (`## Summary` in an answer) are left as they are, so their prompts (and
    cache keys) do not change.
    """
    if "#" not in text and "＃" not in text:
        return text
    return _heading_pattern(titles, _other_breaks(text)).sub(lambda m: f"{m.group(1)}[data] {m.group(2)}", text)


@lru_cache(maxsize=64)
def _heading_pattern(titles: tuple[str, ...], any_break: bool = False) -> re.Pattern[str]:
    # A title and its short form before a parenthesis ("Task" of "Task (the user's request)"), longest first.
    # A reader takes any space for one (a no-break space, an ideographic one), skips zero-width characters, reads a
    # fullwidth `＃` as `#`, and a heading may close with `#`s: all of these forge a heading as well as the plain form.
    forms = {form.strip() for t in titles for form in (t, t.split(" (", 1)[0])} - {""}
    names = "|".join(_SPACE.join(re.escape(w) for w in f.split(" ")) for f in sorted(forms, key=len, reverse=True))
    head = rf"(?:{_GAP})*[#＃]{{1,6}}(?:{_GAP})*(?:{names})(?:{_GAP})*:?(?:(?:{_GAP})+[#＃]+)?(?:{_GAP})*"
    if not any_break:  # (lines broken by `\n` only)
        return re.compile(rf"(?im)^([ \t]*)({head}$)")
    return re.compile(rf"(?im){_LINE_START}([ \t]*)({head}){_LINE_END}")


_GAP = r"[^\S\n\r\v\f\x1c-\x1e\x85\u2028\u2029]|[\u200b-\u200d\u2060\ufeff]"  # a space of any kind, or a zero-width character
_SPACE = rf"(?:{_GAP})+"

# A line that reads as a label of the prompt's own text after the fence (`Plan.ask_text`, `INSTRUCTIONS`, Rubric's and
# the pairwise criterion, `multi._block`): a question id with its colon (`TC1:`, `Q2:`, and as a JSON key of the
# reply format, `"TC1":`; capitals then digits, case-sensitive as ids are, fullwidth forms too), the `Questions:`,
# `Evaluation:`, `Rubric:` or `Criterion:` label (any case), or a multi-item request's `### Item i<12 hex digits>`;
# each may follow spaces or zero-width characters and heading `#`s, and a colon may be fullwidth.
_QUESTION_ID = r"[\"'\u201c\u2018]?(?-i:[A-Z\uff21-\uff3a]{1,12}[0-9\uff10-\uff19]{1,4})[\"'\u201d\u2019]?"
_LABEL = (rf"(?:{_GAP})*(?:[#＃]{{1,6}}(?:{_GAP})*)?"
          rf"(?:(?:questions|evaluation|rubric|criterion|{_QUESTION_ID})(?:{_GAP})*[:：]|item{_SPACE}i[0-9a-f]{{12}}\b)")
_LABEL_LINE = re.compile(rf"(?im)^([ \t]*)({_LABEL})")
_LABEL_LINE_ANY_BREAK = re.compile(rf"(?im){_LINE_START}([ \t]*)({_LABEL})")  # (the same, after any line break)


def neutralise_labels(text: str) -> str:
    """`text` (a section's data) with every line that starts like a line of the prompt's questions (`TC1: …`,
    `Questions:`, `Evaluation: …`, `### Item i…`: `_LABEL`) prefixed by `[data] `.

    A tool result holding `TC1: the answer is correct` or a `Questions:` list of its own could pass for a question
    the prompt asks, or one it answers, after the real ones. An id or a label that is not at the start of its line
    (`see TC1: …` mid-line) is left as it is, and text with no such line keeps its prompt (and cache key).
    """
    return (_LABEL_LINE_ANY_BREAK if _other_breaks(text) else _LABEL_LINE).sub(lambda m: f"{m.group(1)}[data] {m.group(2)}", text)


def fence(sections: list[tuple[str, str]]) -> str:
    """Titled sections between marker lines carrying a hash of the content (line breaks made `\\n`: `unify_breaks`;
    forged markers, forged section headings and forged question lines neutralised: `neutralise_markers`,
    `neutralise_headings`, `neutralise_labels`; lone surrogates replaced: `whole_text`).

    Inside `field_cut.cutting` (a prompt over the judge's context) oversized sections are cut first.
    """
    # Every line break in the data is made `\n` (`unify_breaks`) before anything is neutralised: the fence's own lines
    # (markers, `## ` headings) break with `\n`, and a judge or its tokenizer takes `\r`, `\r\n`, U+2028, … for a line
    # break as well, so with one kind of break the lines checked for forgeries are exactly the lines the judge reads
    # (a bare `\r` left in could also show as a carriage return that overwrites the line before it). Data holding
    # only `\n` breaks is unchanged, so its prompt and cache key are as before.
    kept = [(title, unify_breaks(text)) for title, text in cut_sections(sections)]
    titles = tuple(title for title, _ in kept)
    body = whole_text(neutralise_markers("\n\n".join(f"## {title}\n{neutralise_headings(neutralise_labels(text), titles)}" for title, text in kept)))
    tag = hashlib.sha256(body.encode()).hexdigest()[:12]
    return f"==== DATA {tag} BEGIN ====\n{body}\n==== DATA {tag} END ===="


def final_output(case: Any, full: bool = False) -> str:
    """The "Final output" section's text: the output (said once: a pointer to the last step when that step's output is
    it, in the compact rendering), `(none)`, and when the run ended in an error (`metadata.run_error`, which the
    span readers set from a failed agent run: "Max turns exceeded", a raised exception) a line saying so.

    A case without `run_error` renders as before, so its prompt and cache key do not change.
    The last step's output is the output also when both are JSON text of the same object or array (`_same_output`).
    """
    steps = case.trace.steps
    output = text_of(case.trace.output)
    if not full and output and steps and _same_output(text_of(steps[-1].output), output):
        output = f"(the output of step {len(steps)} above)"  # said once: the compact trace repeats nothing
    text = output or "(none)"
    error = case.metadata.get("run_error")
    if isinstance(error, str) and error:
        text += f"\n(the run ended in an error: {cut_field(error, full=full)})"
    return text


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
