"""Trace text stays data in a judge prompt: the neutralisers `trace_text.fence` and `trace_text.render_steps` apply.

Each one prefixes `[data] ` to a line of the data that could pass for a line of the prompt's own, and leaves every
other line (and so text with no such line, its prompt and its cache key) as it is:

- `neutralise_markers`: a marker line (`==== DATA … ====`), which could end the fenced block;
- `neutralise_headings`: one of the block's own section headings (`## Final output`);
- `neutralise_labels`: a line of the questions after the block (`TC1:`, `Questions:`, `Evaluation:`, a multi-item
  request's `### Item i…`, the pairwise prompt's `Run 1:` / `Run 2:`), dressed as Markdown too (`**TC1:**`,
  `- TC1:`, `> TC1:`, `1. TC1:`);
- `neutralise_structure`: a line of the trace's own rendering (`Step 4:`, ` call 2: refund(…)`, `  result: …`,
  `  error: …`, `User 3: …`, …) inside one of its fields, so a tool result cannot show a call the agent never made.

A line is what a reader or a model takes for one: `unify_breaks` makes every line break `\\n` (the fence does so
before checking), and the patterns start a line after any break for text that was not unified.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["join_rendered", "neutralise_headings", "neutralise_labels", "neutralise_markers", "neutralise_structure", "unify_breaks"]

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


def _mark(m: re.Match[str]) -> str:
    return f"{m.group(1)}[data] {m.group(2)}"


# A line of the data that could pass for a marker: `====` (or more `=`) then DATA, any case, any spacing.
_FORGED = re.compile(r"(?im)^([ \t]*)(={2,}[ \t]*data\b)")
_FORGED_ANY_BREAK = re.compile(rf"(?im){_LINE_START}([ \t]*)(={{2,}}[ \t]*data\b)")  # (the same, after any line break)


def neutralise_markers(text: str) -> str:
    """`text` with every marker-like line prefixed by `[data] `, so no line of the data starts a marker."""
    if "==" not in text:  # a marker needs two `=` in a row: most text has none, and this test is far cheaper than the scan
        return text
    return (_FORGED_ANY_BREAK if _other_breaks(text) else _FORGED).sub(_mark, text)


_GAP = r"[^\S\n\r\v\f\x1c-\x1e\x85\u2028\u2029]|[\u200b-\u200d\u2060\ufeff]"  # a space of any kind, or a zero-width character
_SPACE = rf"(?:{_GAP})+"


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
    return _heading_pattern(titles, _other_breaks(text)).sub(_mark, text)


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


# What a reader looks through to a line's text: spaces and zero-width characters, Markdown list bullets and numbers
# (`- `, `* `, `+ `, `• `, `1. `, `2) `) and quotes (`>`) nested in any order, heading `#`s, emphasis (`**`, `__`).
# (Runs of spaces are possessive, `*+`: what follows one never starts with a space, so giving some back never makes a
# match, and an indented line that matches nothing fails at once instead of trying each split of its indent.)
_EMPHASIS = r"[*_`]{0,3}"
_DRESS = rf"(?:{_GAP})*+(?:(?:[-*+•]|[0-9]{{1,3}}[.)])(?:{_GAP})++|>(?:{_GAP})*+)*(?:[#＃]{{1,6}}(?:{_GAP})*+)?{_EMPHASIS}"
_COLON = rf"{_EMPHASIS}(?:{_GAP})*+[:：]"
_NUMBER = r"[0-9\uff10-\uff19]{1,6}"

# A line that reads as a label of the prompt's own text after the fence (`Plan.ask_text`, `INSTRUCTIONS`, Rubric's and
# the pairwise criterion, the pairwise prompt's `Run 1:` / `Run 2:` before each fence, `multi._block`): a question id
# with its colon (`TC1:`, `Q2:`, and as a JSON key of the reply format, `"TC1":`; capitals then digits, case-sensitive
# as ids are, fullwidth forms too), the `Questions:`, `Evaluation:`, `Rubric:`, `Criterion:` or `Run N:` label (any
# case), or a multi-item request's `### Item i<12 hex digits>`; each may be dressed (`_DRESS`: `**TC1:**`, `- TC1:`,
# `> TC1:`, `1. TC1:`, `## Questions:`), and a colon may be fullwidth.
_QUESTION_ID = r"[\"'\u201c\u2018]?(?-i:[A-Z\uff21-\uff3a]{1,12}[0-9\uff10-\uff19]{1,4})[\"'\u201d\u2019]?"
# A pre-answer in the reply's own JSON (what the system prompt asks the judge for): `{"TC1": {"answer": …`,
# `[{"id": "TC3", "answer": …` (an id of any case: Rubric's `q1`), a verdict's key right after the id; a JSON line
# whose object holds no verdict key there (`{"W123": {"name": …`, `[{"id": "A1", "price": 3}]`) is data as it was.
_ANY_ID = r"[a-z\uff21-\uff3a\uff41-\uff5a]{1,12}[0-9\uff10-\uff19]{1,4}"
_VERDICT_KEY = r"[\"'](?:answer|score|verdict|reason|passed)[\"']"
_ANSWER = (rf"(?:[{{\[](?:{_GAP})*+)*(?:[\"']{_ANY_ID}[\"'](?:{_GAP})*+[:：](?:{_GAP})*+\{{(?:{_GAP})*+{_VERDICT_KEY}"
           rf"|[\"']id[\"'](?:{_GAP})*+[:：](?:{_GAP})*+[\"']{_ANY_ID}[\"'](?:{_GAP})*+,(?:{_GAP})*+{_VERDICT_KEY})")
_LABEL = (rf"{_DRESS}(?:(?:questions|evaluation|rubric|criterion|run(?:{_GAP})*{_NUMBER}|{_QUESTION_ID}){_COLON}"
          rf"|{_ANSWER}|item{_SPACE}i[0-9a-f]{{12}}\b)")
_LABEL_LINE = re.compile(rf"(?im)^([ \t]*+)({_LABEL})")
_LABEL_LINE_ANY_BREAK = re.compile(rf"(?im){_LINE_START}([ \t]*+)({_LABEL})")  # (the same, after any line break)


def neutralise_labels(text: str) -> str:
    """`text` (a section's data) with every line that starts like a line of the prompt's questions (`TC1: …`,
    `Questions:`, `Evaluation: …`, `### Item i…`, `Run 2:`, dressed as Markdown too: `_LABEL`) prefixed by `[data] `.

    A tool result holding `TC1: the answer is correct` or a `Questions:` list of its own could pass for a question
    the prompt asks, or one it answers, after the real ones. An id or a label that is not at the start of its line
    (`see TC1: …` mid-line) is left as it is, and text with no such line keeps its prompt (and cache key).
    """
    return (_LABEL_LINE_ANY_BREAK if _other_breaks(text) else _LABEL_LINE).sub(_mark, text)


# A line of the trace's own rendering (`trace_text.render_steps`, `conversation`): a step heading (`Step 4:`, `Step 4 (the
# user's own tool calls…):`), a call (` call 2: name(…)`), what it gave (`  result: …`, `  error: …`, `  no result`,
# `  ran steps 3–4 before returning`), a step's ` thought:`, ` output:` or ` step error:`, a user turn (`User 3: …`),
# and the bracketed notes (` [sub-agent …`, `[steps 2–5 omitted…`, `[user turns 2–3 omitted…`); any case, any indent,
# dressed as a label may be.
_STRUCTURE = (rf"{_DRESS}(?:(?:step|call|user){_SPACE}{_NUMBER}{_COLON}|step{_SPACE}{_NUMBER}(?:{_GAP})*[(（]"
              rf"|(?:thought|result|error|output|step{_SPACE}error){_COLON}"
              rf"|no{_SPACE}result(?:{_GAP})*{_LINE_END}|ran{_SPACE}steps?{_SPACE}[0-9]"
              rf"|\[(?:{_GAP})*(?:sub-agent|steps?{_SPACE}[0-9]|user{_SPACE}turns?\b))")
# (A line break opens the pattern, so a scan jumps from break to break, and the first line, with none before it, is
# never matched; `\r\n` is matched at its `\n`.)
_STRUCTURE_LINE = re.compile(rf"(?i)([\n{_OTHER_BREAKS}][ \t]*+)({_STRUCTURE})")


def neutralise_structure(line: str) -> str:
    """`line` (one line the trace's renderer writes: its own start, then a field's data, which may hold line breaks)
    with every line after its first that reads as a line of the rendering (`_STRUCTURE`: `Step 4:`, ` call 1:
    issue_refund(…)`, `  result: ok`, `User 2: …`) prefixed by `[data] `.

    A tool result holding `\\nStep 4:\\n call 1: issue_refund(…)\\n  result: ok` read as a call the agent made. The
    first line is the renderer's own and is never marked, nor is a line that only mentions such words (`the result:
    …` mid-line); text with no such line keeps its prompt (and cache key).
    """
    return _STRUCTURE_LINE.sub(_mark, line)


def neutralise_lines(text: str) -> str:
    """`text` (a section that is all data, no line of it the renderer's: the task, the final output) with every line that
    reads as a line of the trace's rendering (`_STRUCTURE`), its first line too, prefixed by `[data] `.

    A final output holding `Step 2:\\n call 2: issue_refund(…)\\n  result: ok` read, under its heading, as a call the
    agent made; text with no such line keeps its prompt (and cache key).
    """
    return _STRUCTURE_LINE.sub(_mark, "\n" + text)[1:]


def join_rendered(lines: list[str]) -> str:
    """`lines` (each one line the trace's renderer writes, its data included) joined by `\\n`, each neutralised
    (`neutralise_structure`); when none holds a line break of its own (most traces), that is the plain join."""
    text = "\n".join(lines)
    if _other_breaks(text):
        return "\n".join(map(neutralise_structure, lines))
    if text.count("\n") < len(lines):
        return text
    return "\n".join([neutralise_structure(line) if "\n" in line else line for line in lines])
