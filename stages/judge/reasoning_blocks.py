"""Where a reasoning model's thinking ends in a judge reply's text, so a draft verdict in it is never read (`parse`).

Two ways a server leaves the thinking in `message.content`:

- tags: `<think>…</think>` (also `thinking`, `reasoning`, any case), and the spellings of models whose servers only
  take them out with a reasoning parser: Seed-OSS `<seed:think>…</seed:think>`, Mistral's magistral
  `[THINK]…[/THINK]`, Kimi `◁think▷…◁/think▷` (`TAGS`; llama.cpp's `--reasoning-format none` and a vLLM or SGLang
  server without `--reasoning-parser` leave them in the content). A block that closes is dropped. A closing tag
  without its opening one (a chat template, such as Qwen3's, DeepSeek-R1's or Seed-OSS's, opened the block in the
  prompt) ends the thinking: everything before it is dropped. It counts only where a JSON string cannot hold it: at the
  start of a line, or followed by a line's end, the reply's end, `{` or a code fence (a JSON string holds no raw
  newline), so a verdict whose reason quotes "</think>" keeps its verdict. An opening tag left without a closing one
  (the model stopped while thinking) counts only at the start of the reply or of a line, for the same reason; the text
  from it to the end is thinking.
- gpt-oss's harmony channels, left unparsed (llama.cpp's `llama-server --reasoning-format none`): a reply that starts
  with a `<|channel|>` header is read from its first `final` channel's message on
  (`<|channel|>final <|constrain|>json<|message|>{…}`); one with no final channel is still in its analysis.
"""

from __future__ import annotations

import re

__all__ = ["HARMONY", "TAGS", "first_tag", "outside"]

HARMONY = "analysis"  # the "tag" `outside` names for a harmony reply that never reached a final channel
# Each kind of reasoning block by the name `outside` gives it: (its opening, its closing) as written, then as matched.
TAGS = {"think": ("<think>", "</think>"), "thinking": ("<thinking>", "</thinking>"), "reasoning": ("<reasoning>", "</reasoning>"),
        "seed:think": ("<seed:think>", "</seed:think>"), "THINK": ("[THINK]", "[/THINK]"), "kimi": ("\u25c1think\u25b7", "\u25c1/think\u25b7")}
_SPELLED = {name: (rf"<{name}\s*>", rf"</{name}\s*>") for name in ("think", "thinking", "reasoning", "seed:think")}
_SPELLED.update({"THINK": (r"\[THINK\]", r"\[/THINK\]"), "kimi": ("\u25c1think\u25b7", "\u25c1/think\u25b7")})
_GROUP = {f"t{i}": name for i, name in enumerate(_SPELLED)}  # a regex group per kind (a group name cannot hold ":")
_ANY_OPENING = "|".join(f"(?P<{g}>{_SPELLED[name][0]})" for g, name in _GROUP.items())
_OPENING = re.compile(_ANY_OPENING, re.I)
_CLOSING = {name: re.compile(closing, re.I) for name, (_, closing) in _SPELLED.items()}
_STRAY = "(?:" + "|".join(closing for _, closing in _SPELLED.values()) + ")"
# Greedy: to the last closing tag that stands where no JSON string can hold it (the module doc).
_OPENED_BEFORE = re.compile(rf".*(?:\n[ \t]*{_STRAY}|\A[ \t]*{_STRAY}|{_STRAY}(?=[ \t]*(?:\r?\n|\Z|\{{|```)))", re.S | re.I)
# An opening tag left once closed blocks are gone has no closing tag after it. Only at the start of the reply or of a line:
# a JSON string cannot hold a raw newline, so a verdict's reason quoting "<think>" never matches.
_UNCLOSED = re.compile(rf"(?:\A|\n)[ \t]*(?:{_ANY_OPENING})", re.I)
_MARKS = re.compile(r"<|\u25c1|\[/?THINK\]", re.I)  # what every tag starts with: a reply without any has no block
_CLOSING_MARKS = ("</", "\u25c1/", "[/")
# A harmony reply opens with a channel header (the prompt ended with `<|start|>assistant`); a quoted one inside a verdict does not.
_HARMONY_START = re.compile(r"\s*(?:<\|start\|>assistant)?<\|channel\|>")
_HARMONY_FINAL = re.compile(r"<\|channel\|>\s*final\b[^<]*(?:<\|constrain\|>[^<]*)?<\|message\|>")


def without_closed_blocks(text: str) -> str:
    """`text` with each reasoning block that closes (`<think>…</think>`, first opening to its first closing, left to
    right) replaced by a space.

    As `re.sub(r"<(think|…)\\s*>.*?</\\1\\s*>", " ", text)` would, in linear time: that pattern scans to the end of the
    reply from every opening tag that never closes, so a hostile reply of 32,000 of them took 79 s on the event loop.
    Once a tag's closing is not found after an opening, none is found after a later one of that name either.
    """
    out, pos, unclosed = [], 0, set()
    while (opening := _OPENING.search(text, pos)) is not None:
        name = _GROUP[str(opening.lastgroup)]
        closing = None if name in unclosed else _CLOSING[name].search(text, opening.end())
        if closing is None:
            unclosed.add(name)
            if len(unclosed) == len(_CLOSING):
                break
            out.append(text[pos:opening.start() + 1])
            pos = opening.start() + 1
            continue
        out.append(text[pos:opening.start()] + " ")
        pos = closing.end()
    out.append(text[pos:])
    return "".join(out)


def outside(text: str) -> tuple[str, str]:
    """`(text outside its reasoning, the tag of a block that never closed or "")` (the module doc); the tag is a key
    of `TAGS`, or `HARMONY` for a harmony reply with no final channel, whose text outside is then empty."""
    if not _MARKS.search(text):  # (the common reply: no tag at all, nothing more to search)
        return text, ""
    if _HARMONY_START.match(text):
        final = _HARMONY_FINAL.search(text)
        if final is None:
            return "", HARMONY
        text = text[final.end():]
    if any(mark in text for mark in _CLOSING_MARKS):
        text = without_closed_blocks(text)
        opened_before = _OPENED_BEFORE.match(text)
        text = text[opened_before.end():] if opened_before else text
    unclosed = _UNCLOSED.search(text)
    return (text[:unclosed.start()], _GROUP[str(unclosed.lastgroup)]) if unclosed else (text, "")


def first_tag(text: str) -> str:
    """The `TAGS` key of the first reasoning tag, opening or closing, in `text` ("" when there is none)."""
    hits = ((m.start(), name) for name, (opening, closing) in _SPELLED.items() if (m := re.search(f"{opening}|{closing}", text, re.I)))
    return min(hits, default=(0, ""))[1]
