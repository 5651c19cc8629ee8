"""Trace text stays data in a judge prompt: the neutralisers `trace_text.fence` and `trace_text.render_steps` apply.

Each one prefixes `[data] ` to a line of the data that could pass for a line of the prompt's own, and leaves every
other line (and so text with no such line, its prompt and its cache key) as it is:

- `neutralise_markers`: a marker line (`==== DATA … ====`, `==== END OF DATA ====`), which could end the fenced block;
- `neutralise_headings`: one of the block's own section headings (`## Final output`, `**Final output**`, `Final output`);
- `neutralise_labels` (`fence_labels`): a line of the questions after the block, by the ids the prompt asks (`TC1 …`
  whatever follows, `Questions:`, `Evaluation:`, a multi-item request's `### Item i…`, the pairwise prompt's `Run 1:`
  / `Run 2:`, a Faithfulness prompt's `Claim 2:` outside its Claims section) or a pre-answer to one in the reply's
  JSON, dressed as Markdown or HTML too (`**TC1:**`, `- TC1:`, `> TC1:`, `1. TC1:`, `(TC1):`, `[TC1]:`, `<b>TC1:</b>`);
- `neutralise_section`: these three, as `fence` applies them to a section's data (`neutralise_claims`: in a
  Faithfulness prompt's Claims section, a claim whose text reads as a claim or an answer, `Claim 2: Claim 3: …`);
- `neutralise_structure`: a line of the trace's own rendering, in the form the renderer writes (`Step 4:`, ` call 2:
  refund(…)`, `Step 3 of 3:`, `User 3: …`, `### Step 2`, `Step3:`, `3. refund(77)`, …, and `  result: …`, `  error:
  …` where the renderer would write one: `_mark_fields`), inside one of its fields, so a tool result cannot show a
  call the agent never made (`neutralise_lines`: in a section that is all data). Code (`result = get_weather(…)`, a
  `# Step 1: …` comment), YAML (`result: 3 files`, a nested `  result: ok` key), object literals, logs (`error:
  pathspec …`) and tables (`| W123 | shipped |`) are not written so, and keep their text.

A line is what a reader or a model takes for one: `unify_breaks` makes every line break `\\n` (the fence does so
before checking), and the patterns start a line after any break for text that was not unified. A line reads as what
its skeleton reads as (`fence_lookalike`): `T\\u200dC1:` (a zero-width joiner), `TC\\u00ad1:` (a soft hyphen),
`ＴＣ１:` (NFKC), `ТС1:` (Cyrillic letters) are `TC1:`, and are marked as it is.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tracejudge.stages.judge.fence_labels import (_ARROWS, _BULLET, _BULLETS, _CLOSE, _DRESS_LEAD, _GAP, _LINE_END, _LINE_START, _LIST_NUMBER,
                                                  _NUMBER, _OPEN, _OTHER_BREAKS, _SPACE, Asks, _asks_it, _label, _label_line, _mark, _marking,
                                                  _other_breaks, neutralise_labels, unify_breaks)
from tracejudge.stages.judge.fence_lookalike import mark_lookalikes, skeleton
from tracejudge.stages.judge.fence_titles import BODIES, FAMILIES, LABELS, TITLES

__all__ = ["join_rendered", "neutralise_claims", "neutralise_headings", "neutralise_labels", "neutralise_lines", "neutralise_markers",
           "neutralise_section", "neutralise_structure", "unify_breaks"]


# A line of the data that could pass for a marker: `====` (or more `=`, spaced too: `= = = =`) then DATA (or `END OF
# DATA`, `BEGIN DATA`), any case, any spacing; or one drawn with dashes, closed by dashes too (`---- DATA END ----`,
# `—— DATA x END ——`; not an SQL comment `-- data cleanup`); its skeleton too (`fence_lookalike`: `==== DАTA` with a
# Cyrillic А, a fullwidth `＝＝＝＝ DATA`).
_DATA_WORDS = r"(?:(?:end|begin|start)[ \t]+(?:of[ \t]+)?)?data\b"
_DASHES = "\\-\u2010-\u2015\u2212"
_MARKER = (rf"(?:=[ \t]*){{2,}}{_DATA_WORDS}"
           rf"|(?:[{_DASHES}][ \t]*){{2,}}{_DATA_WORDS}[^\n{_OTHER_BREAKS}]*?(?:[{_DASHES}][ \t]*){{2,}}{_LINE_END}")
# (A line break opens the pattern, so a scan jumps from break to break: the text is given a `\n` before its first line.)
_FORGED = re.compile(rf"(?i)(\n[ \t]*)(?:({_MARKER}))")
_FORGED_ANY_BREAK = re.compile(rf"(?im){_LINE_START}([ \t]*)(?:({_MARKER}))")  # (the same, after any line break)
# (Where a marker could start: a line whose first signs after its indent are two `=` or dashes, `==`, `= =`, `--`, `——`.)
_SIGN = rf"[ \t]*+[={_DASHES}][ \t]*+[={_DASHES}]"
_SIGN_FIRST = re.compile(_SIGN)
_SIGN_AFTER = re.compile(rf"\n{_SIGN}")
_SIGN_AFTER_ANY = re.compile(rf"[\n{_OTHER_BREAKS}]{_SIGN}")
_MARKER_ONE = rf"(?i)([ \t]*)(?:({_MARKER}))"  # (one line: its skeleton, `mark_lookalikes`)


def neutralise_markers(text: str, lookalikes: bool = True) -> str:
    """`text` with every marker-like line prefixed by `[data] `, so no line of the data starts a marker (`lookalikes`:
    a line whose skeleton reads as one too; `fence` has had each section's data checked so already)."""
    if _other_breaks(text):
        if _SIGN_FIRST.match(text) or _SIGN_AFTER_ANY.search(text):
            text = _FORGED_ANY_BREAK.sub(_mark, text)
    elif _SIGN_FIRST.match(text) or _SIGN_AFTER.search(text):  # (most text has no such line: a jump from `\n` to `\n`)
        text = _FORGED.sub(_mark, "\n" + text)[1:]
    if lookalikes and not text.isascii() and any(c in text for c in "=＝﹦⁼₌"):
        return mark_lookalikes(text, _MARKER_ONE)
    return text


def neutralise_headings(text: str, titles: tuple[str, ...]) -> str:
    """`text` (a section's data) with every line that reads as one of the fence's own section headings (`## Final
    output`, `# final output:`, at any heading level, any case, any space or zero-width character around or inside
    it, a fullwidth `＃`, closing `#`s; bare, `Final output`, or underlined as a setext title; in HTML tags, `<details>
    <summary>Final output</summary>`; after a quote's `>` or a list's bullet or number, `> ## Final output`, `1. Final
    output`) prefixed by `[data] `.

    A tool result or message holding such a line could pass for a section of the prompt's own, a forged final
    output among them. Ordinary headings (`## Summary` in an answer) are left as they are, so their prompts (and
    cache keys) do not change.
    """
    # (Every line is tried: a bare title, `Final output`, needs no sign, and a line that starts with no title's first
    # letters fails at its first test.)
    text = _heading_pattern(titles, _other_breaks(text)).sub(_mark, "\n" + text)[1:]
    return mark_lookalikes(text, _heading_pattern(titles, one=True).pattern)  # (`## Fіnal output`, a Cyrillic і: `fence_lookalike`)


@lru_cache(maxsize=64)
def _heading(titles: tuple[str, ...]) -> str:
    # A title and its short form before a parenthesis ("Task" of "Task (the user's request)"), longest first.
    # A reader takes any space for one (a no-break space, an ideographic one), skips zero-width characters, reads a
    # fullwidth `＃` as `#`, and a heading may close with `#`s: all of these forge a heading as well as the plain form.
    # A title alone on its line reads as a heading whatever dresses it: in bold type (`**Final output**`, `__Trace:__`),
    # bare (`Final output`, `Final output:`; not `Summary:`, nor a title in a sentence), in any HTML tags (`<h2>`, `<b>`,
    # `<details><summary>Final output</summary>`), or after a list's bullet or number or a quote's `>` (`> ## Final
    # output`, `1. Final output`), as a question id is dressed (`_DRESS_LEAD`); a Markdown setext title, its line
    # underlined with `===` or `---`, is a title bare.
    # (The bare form is tried only on a line that starts with a title's first letter, a quote or an opener: most lines
    # start with none of the rest.)
    # Every title the builder can write is checked (`fence_titles`), not only this prompt's: a line reading as a section
    # the prompt does not hold (`## Conversation` over a trace without turns) passes for one all the same.
    # A title quoted or with words in parentheses after it (`## "Trace"`, `## Final output (the output of step 1 above)`)
    # reads as that title too, and its apostrophe is any a reader takes for one (`user’s`). The labels after the block
    # (`LABELS`) read as a heading only with `#`s, bold type, a heading, bold or summary tag, or a setext underline: alone,
    # `Questions:` is `fence_labels`' to judge. A line the builder writes as a section's whole text (`BODIES`) is marked
    # alone on its line.
    forms = {form.strip() for t in (*titles, *TITLES) for form in (t, t.split(" (", 1)[0])} - {""}
    words = [[_word(w) for w in f.split(" ")] for f in sorted(forms, key=len, reverse=True)]
    words += [[_family_word(w) for w in f.split(" ")] for f in FAMILIES]
    names = "|".join(_SPACE.join(ws) for ws in words)
    labels = "|".join(_SPACE.join(map(re.escape, w.split(" "))) for w in LABELS)
    marked = rf"{_QUOTE}(?:{labels}|{names}){_QUOTE}(?:(?:{_GAP})*{_PAREN})?"
    firsts = "".join(sorted({re.escape(f[0]) for f in (*forms, *FAMILIES)}))
    plain = rf"(?=[{firsts}\"'“‘])(?:{_QUOTE}(?:{names}){_QUOTE}(?:(?:{_GAP})*{_PAREN})?)" if firsts else "(?!)"
    bodies = "|".join(_SPACE.join(_family_word(w) for w in b.split(" ")) for b in BODIES)
    setext = rf"{_T_OPEN}{_QUOTE}(?:{labels}){_QUOTE}{_T_CLOSE}(?:{_GAP})*:?(?=(?:\r\n|[\n{_OTHER_BREAKS}]) {{0,3}}(?:=+|-+)[ \t]*(?:[\n{_OTHER_BREAKS}]|\Z))"
    # (Most lines start with no sign and not as a title does, its first three letters, as three classes (a lookahead of
    # one alternation per title cost as much as all the rest): one test of the line's start.)
    starts = "".join(rf"[{''.join(sorted({re.escape(f[i]) for f in (*forms, *FAMILIES, *LABELS)}))}]" for i in (0, 1, 2))
    after = rf"(?=[#＃*_<(\[|~`\"'“‘„«»]|{starts})"  # (after a bullet, a number or a `>`: `- item 3` goes no further)
    # (atomic: no title starts with what the dressing takes, so a line whose text after it fails is not tried again without)
    lead = rf"(?>(?:(?=[{_BULLETS}{_GAP[1:-1]}>0-9(\[]){_DRESS_LEAD})?)"
    return (rf"{lead}{after}(?:[#＃]{{1,6}}(?:{_GAP})*{_T_OPEN}(?:{marked}){_T_CLOSE}(?:{_GAP})*:?{_T_CLOSE}(?:(?:{_GAP})+[#＃]+)?"
            rf"|(?:\*\*|__)(?:{_GAP})*(?:{marked})(?:{_GAP})*:?(?:{_GAP})*(?:\*\*|__):?"
            rf"|(?:{_TAG}(?:{_GAP})*)*<(?:h[1-6]|b|strong|summary)(?:[ \t][^>\n]*)?>(?:{_GAP})*{_T_OPEN}(?:{marked}){_T_CLOSE}(?:{_GAP})*:?{_T_CLOSE}:?"
            rf"|{_T_OPEN}{plain}(?:{_GAP})*[:：]?{_T_CLOSE}(?:{_GAP})*[:：]?|{setext}"
            rf"|(?:\*\*|__)?(?:{bodies})\.?(?:\*\*|__)?)(?:{_GAP})*")


# (What a title may stand in: emphasis, HTML tags (`<summary>`, `<p class="x">`), brackets, a table cell's `|`; the
# lookahead: one test for a line that starts with none.)
_TAG = r"<[a-z][a-z0-9]{0,9}(?:[ \t][^>\n]*)?>"
_T_OPEN = rf"(?:(?=[*_`~|(\[<])(?:[*_`~]{{1,3}}|{_TAG}|[|(\[])(?:{_GAP})*+){{0,4}}"
_T_CLOSE = rf"(?:(?:{_GAP})*+(?:[*_`~]{{1,3}}|[)\]|]|</[a-z][a-z0-9]{{0,9}}>)){{0,4}}"
_QUOTE = "[\"'“”‘’„«»]?"  # (a quote a title may stand in: `## "Trace"`)
_PAREN = rf"\([^\n{_OTHER_BREAKS}()]*\)"  # (words in parentheses after a title: `(the output of step 1 above)`)


def _word(word: str) -> str:
    # (a word of a fixed title: its apostrophe any a reader takes for one, `user’s`, `userʼs`; fullwidth `＇` is NFKC's)
    return re.escape(word).replace("'", "['‘’ʼ′´`]")


def _family_word(word: str) -> str:
    # (`fence_titles.FAMILIES`: `REST` is the rest of the line, `[0-9]+` a number, anything else literal)
    if word == "[0-9]+":
        return word
    return re.escape(word).replace("REST", rf"[^\n{_OTHER_BREAKS}]+?")


@lru_cache(maxsize=64)
def _heading_pattern(titles: tuple[str, ...], any_break: bool = False, one: bool = False) -> re.Pattern[str]:
    head = _heading(titles)
    if one:  # (one line: its skeleton, `mark_lookalikes`)
        return re.compile(rf"(?i)([ \t]*)({head})\Z")
    # (A line break opens the pattern, so a scan jumps from break to break: the text is given a `\n` before its first line.)
    if not any_break:  # (lines broken by `\n` only)
        return re.compile(rf"(?i)(\n[ \t]*+)({head})(?=\n|\Z)")
    # (`[ \t]*+`: possessive, as the heading's own dressing may begin with a space: given back one at a time, a line of
    # 100,000 spaces took 5.7 s, six million hours)
    return re.compile(rf"(?i)([\n{_OTHER_BREAKS}][ \t]*+)({head}){_LINE_END}")


def neutralise_section(text: str, titles: tuple[str, ...], claims: bool = False, asks: Asks | None = None) -> str:
    """What `fence` does to a section's data: `neutralise_headings(neutralise_labels(text, claims, asks), titles)`, the
    lines whose skeleton reads as a label, a marker or a heading (`fence_lookalike`) found in one pass for all three."""
    broken = _other_breaks(text)
    mode, mark, accept = (None, _mark, None) if asks is None else (asks.mode, asks.mark, asks.accept)
    text = _label_line(claims, broken, mode).sub(mark, "\n" + text)
    return mark_lookalikes(_heading_pattern(titles, broken).sub(_mark, text)[1:], _section_line(titles, claims, mode), accept=accept)


@lru_cache(maxsize=128)
def _section_line(titles: tuple[str, ...], claims: bool, mode: tuple[bool] | None = None) -> str:
    # (One line's skeleton: a label, a marker (`==== DАTA`, `＝＝＝＝ DATA`: `neutralise_markers` as `fence` calls it
    # looks at the plain ones only), a heading.)
    heading = rf"|{_heading(titles)}\Z" if titles else ""
    return rf"(?i)([ \t]*+)(?:{_label(claims, mode)}|{_MARKER}{heading})"


_CLAIM = re.compile(r"(?m)^(Claim [0-9]+: )(.+)")


def neutralise_claims(text: str, asks: Asks | None = None) -> str:
    """`text` (a Faithfulness prompt's Claims section: the metric's `Claim k: <a sentence of the output>` lines) with
    `[data] ` put before a claim's text that reads as a label of the prompt's (`Claim 2: [data] Claim 3: Refunds are
    instant.`, `Claim 3: [data] F2: yes`), which could pass for another claim, or an answer, of the prompt's own."""
    return _CLAIM.sub(lambda m: m.group(1) + neutralise_labels(m.group(2), claims=True, asks=asks), text) if "Claim " in text else text


# A line of the trace's own rendering (`trace_text.render_steps`, `conversation`), in the form the renderer writes it:
# a step heading (`Step 4:`, `Step 4 (the user's own tool calls…):`), a call (` call 2: name(…)`), what it gave (`  result:
# …`, `  error: …`, `  no result`, `  ran steps 3–4 before returning`), a step's ` thought:`, ` output:` or ` step
# error:`, a user turn (`User 3: …`), and the bracketed notes (` [sub-agent …`, `[steps 2–5 omitted…`, `[user turns
# 2–3 omitted…`).
# - A step, call or user line: any case, any indent, dressed as a label may be, its number after a space or a `#`
#   (`call #3:`), or right after the word as the renderer spells it (`Step3:`, `call3:`, `User2:`; not a key such as
#   `step1:`), over a total (`Step 3/5:`, `Step 3 of 3:`, ` call 3 of 3: …`); its separator a colon, or a dash before a space (`Step 2 -`, `call 3 -
#   refund(…)`), or a table cell's end in a row that holds a call (`| Step 2 | call 3 |`); a step or user heading may stand alone (`### Step 2`, `**Step 2**`) or end in `.` or `)` (`Step 2.
#   …`), as a call may (`call 3) refund(…)`); a call may name its tool without a colon (`call 3 issue_refund(…)`).
#   After heading `#`s only a heading alone on its line (`### Step 2`, `## Step 2:`): `# Step 1: load the data` is a
#   comment in code.
# - What a call gave, and a step's thought, output or error, after an arrow (`↳ result: …`); as the renderer writes
#   them, indented, only after a line of the rendering (`_mark_fields`). At a line's start, with `=` or dressed
#   (`result = get_weather(…)` in code, `error: pathspec …` in git's output, `Output: 0 files changed`, YAML's `result:
#   3 files`, `**Result:** …` in an answer) such a word is data's own.
# - A listed call (`3. issue_refund({order:77})`, `- refund(77)`, `→ refund(77)`: a list item that is a call and
#   nothing else).
# `Step by step, …`, `Step 1 is done`, `step 2 of the plan`, `step2 = call(total)` are not such lines.
_CALLEE = r"[a-z_][\w.\-]{0,63}\("
_STEP_NUMBER = rf"(?:(?:{_GAP})++[#＃№]?|(?:{_GAP})*+[#＃№])(?:{_GAP})*+{_NUMBER}"  # (after a space or a `#`)
_DASH_S = r"[-\u2010-\u2015\u2212→⇒⟶⟹➔➜➝➞➡]{1,3}>?"  # (not `=`: code's assignment)
_SEP_S = rf"{_CLOSE}(?:{_GAP})*+(?:[:：]|{_DASH_S}(?=(?:{_GAP})|{_LINE_END}))"
_ENDS = rf"[.)](?=(?:{_GAP})|{_LINE_END})"
_OF = rf"(?:/{_NUMBER}|{_SPACE}of{_SPACE}{_NUMBER})?"  # (`Step 3/5`, `Step 3 of 3`)
_HEAD = rf"(?:(?:step|user){_STEP_NUMBER}|(?-i:Step|User){_NUMBER}){_OF}"
_CALL = rf"(?:call{_STEP_NUMBER}|(?-i:call){_NUMBER}){_OF}"
# (A table row that starts with a step is one of the rendering's only with a call in it, `| Step 2 | call 3 |`: a plan's
# table, `| Step 2 | n/a | - |`, is the data's.)
_TABLE_CALL = rf"\|(?=[^\n{_OTHER_BREAKS}]*?(?:\bcall{_STEP_NUMBER}|{_CALLEE}))"
_STRUCTURE = (rf"{_DRESS_LEAD}(?:{_OPEN}(?:{_HEAD}(?:{_SEP_S}|{_CLOSE}(?:{_GAP})*+(?:[(（]|{_TABLE_CALL}|{_ENDS}|{_LINE_END}))"
              rf"|{_CALL}(?:{_SEP_S}|{_CLOSE}(?:{_GAP})*+(?:\||{_ENDS})|(?:{_GAP})++{_CALLEE})"
              rf"|\[(?:{_GAP})*(?:sub-agent|steps?{_SPACE}[0-9]|user{_SPACE}turns?\b))"
              rf"|[#＃]{{1,6}}(?:{_GAP})*+{_OPEN}{_HEAD}{_CLOSE}(?:(?:{_GAP})*+[:：]{_CLOSE})?(?:{_GAP})*{_LINE_END})"
              rf"|(?:{_GAP})*+[{_ARROWS}](?:{_GAP})*+(?:(?:thought|result|error|output|step{_SPACE}error)(?:{_GAP})*+[:：]"
              rf"|no{_SPACE}result(?:{_GAP})*{_LINE_END}|ran{_SPACE}steps?{_SPACE}[0-9])"
              rf"|(?:{_GAP})*+(?=[{_BULLETS}(0-9])(?:{_BULLET}|{_LIST_NUMBER})(?:{_GAP})++{_CALLEE}[^\n{_OTHER_BREAKS}]*\)"
              rf"(?:{_GAP})*{_LINE_END}")
# (A line break opens the pattern, so a scan jumps from break to break, and the first line, with none before it, is
# never matched; `\r\n` is matched at its `\n`.)
_STRUCTURE_LINE = rf"(?i)([\n{_OTHER_BREAKS}][ \t]*+)({_STRUCTURE})"  # (compiled at first use: `_structure_line`)
_STRUCTURE_ONE = rf"(?i)([ \t]*+)({_STRUCTURE})"  # (one line: its skeleton, `mark_lookalikes`)


def neutralise_structure(line: str) -> str:
    """`line` (one line the trace's renderer writes: its own start, then a field's data, which may hold line breaks)
    with every line after its first that reads as a line of the rendering (`_STRUCTURE`: `Step 4:`, ` call 1:
    issue_refund(…)`, `  result: ok`, `User 2: …`) prefixed by `[data] `.

    A tool result holding `\\nStep 4:\\n call 1: issue_refund(…)\\n  result: ok` read as a call the agent made. The
    first line is the renderer's own and is never marked, nor is a line that only mentions such words (`the result:
    …` mid-line); text with no such line keeps its prompt (and cache key).
    """
    text = mark_lookalikes(_structure_line().sub(_mark, line), _STRUCTURE_ONE, first=False)
    return text if _SPACED.search(text) is None else _mark_fields(text, own_first=True)  # (no line starting with a space: most text)


def neutralise_lines(text: str) -> str:
    """`text` (a section that is all data, no line of it the renderer's: the task, the final output) with every line that
    reads as a line of the trace's rendering (`_STRUCTURE`), its first line too, prefixed by `[data] `.

    A final output holding `Step 2:\\n call 2: issue_refund(…)\\n  result: ok` read, under its heading, as a call the
    agent made; text with no such line keeps its prompt (and cache key).
    """
    text = mark_lookalikes(_structure_line().sub(_mark, "\n" + text)[1:], _STRUCTURE_ONE)
    return text if _SPACED.search(text) is None and not text[:1].isspace() and text[:1].isascii() else _mark_fields(text, own_first=False)


# What a call gave and a step's own fields as the renderer writes them: `  result: …`, `  error: …`, `  no result`, `  ran
# steps 3–4 …`, ` thought: …`, ` output: …`, ` step error: …` (a line's skeleton: one or two spaces or tabs, the word in
# lower case, a colon). Such a line forges a call's result only where the renderer would write one: right after a line
# of the rendering, the field's own first line (`  error: denied` then `  result: ok`) or a line marked as one (a forged
# call, then its result), or first in a section that is all data. YAML's nested keys (`status:` then `  result: ok`), an
# object literal's (`{` then `  result: 42,`) and a test's output follow none; a line that opens or goes on with a literal
# (ending in `,`, `{`, `[`, `(` or `;`) is none, and nothing after it is.
_FIELD = re.compile(r"[ \t]{1,2}(?:(?:result|error|thought|output|step error)[ \t]*:(?:[ \t].*)?|no result[ \t]*|ran steps? [0-9].*)")
_FIELD_HINT = re.compile(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029][ \t]{1,2}(?:result|error|thought|output|step error|no result|ran step)")
_SPACED = re.compile(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029][ \t\u00a0\u00ad\u1680\u180e\u2000-\u200f\u202a-\u202f\u205f-\u206f\u2800\u3000\u3164\ufe00-\ufe0f\ufeff]")
_LINES = re.compile(r"(\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029])")
_OPENS = (",", "{", "[", "(", ";")


def _mark_fields(text: str, own_first: bool) -> str:
    """`text` with each field line (`_FIELD`) right after a line of the rendering prefixed by `[data] ` (`own_first`:
    the first line is the renderer's own, never marked; else the line before the first is a section's heading)."""
    src = text if own_first else "\n" + text
    hint = _FIELD_HINT if text.isascii() else _SPACED
    if (found := hint.search(src)) is None:
        return text  # (no line of that form: most text; outside ASCII, no line that starts with a space of any kind)
    if _other_breaks(text):
        return _mark_fields_split(text, own_first)
    cuts, marked_end = [], -1
    for m in hint.finditer(src, found.start()):
        at = m.start()  # (the `\n` before the candidate line)
        if at != marked_end:  # (the line before: a field line marked just now, a marked line, or the section's or field's start)
            before = src.rfind("\n", 0, at) + 1
            prev = src[before:at]
            if not (prev.lstrip(" \t").startswith("[data] ") or (before == 0 and not (own_first and prev.rstrip().endswith(_OPENS)))):
                continue
        end = src.find("\n", at + 1)
        end = len(src) if end < 0 else end
        line = src[at + 1:end]
        if _is_field(line):
            cuts.append((at + 1 + len(line) - len(line.lstrip(" \t")), end))
            marked_end = end
    if not cuts:
        return text
    out, done = [], 0
    for cut, _ in cuts:
        out += [src[done:cut], "[data] "]
        done = cut
    out.append(src[done:])
    return "".join(out)[0 if own_first else 1:]


def _mark_fields_split(text: str, own_first: bool) -> str:
    # (`_mark_fields` for text with line breaks other than `\n`: line by line.)
    parts, after, changed = _LINES.split(text), True, False
    for i in range(0, len(parts), 2):
        line = parts[i]
        body = line.lstrip(" \t")
        if i == 0 and own_first:
            after = not line.rstrip().endswith(_OPENS)
        elif body.startswith("[data] "):
            after = True
        elif after and _is_field(line):
            parts[i], changed = f"{line[:len(line) - len(body)]}[data] {body}", True
        else:
            after = False
    return "".join(parts) if changed else text


def _is_field(line: str) -> bool:
    if line.isascii():
        if line[:1] not in (" ", "\t"):
            return False
    else:
        line = skeleton(line)
    return _FIELD.fullmatch(line) is not None and not line.rstrip().endswith(_OPENS)


@lru_cache(maxsize=1)
def _structure_line() -> re.Pattern[str]:
    return re.compile(_STRUCTURE_LINE)


def join_rendered(lines: list[str]) -> str:
    """`lines` (each one line the trace's renderer writes, its data included) joined by `\\n`, each neutralised
    (`neutralise_structure`); when none holds a line break of its own (most traces), that is the plain join."""
    text = "\n".join(lines)
    if _other_breaks(text):
        return "\n".join(map(neutralise_structure, lines))
    if text.count("\n") < len(lines):
        return text
    return "\n".join([neutralise_structure(line) if "\n" in line else line for line in lines])
