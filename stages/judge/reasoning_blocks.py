"""Where a reasoning model's thinking ends in a judge reply's text, so a draft verdict in it is never read (`parse`).

Two ways a server leaves the thinking in `message.content`:

- tags: `<think>…</think>` (also `thinking`, `reasoning`, any case). A block that closes is dropped. A closing tag
  without its opening one (a chat template, such as Qwen3's or DeepSeek-R1's, opened the block in the prompt) ends
  the thinking: everything before it is dropped. It counts only where a JSON string cannot hold it: at the start of a
  line, or followed by a line's end, the reply's end, `{` or a code fence (a JSON string holds no raw newline), so a
  verdict whose reason quotes "</think>" keeps its verdict. An opening tag left without a closing one (the model
  stopped while thinking) counts only at the start of the reply or of a line, for the same reason; the text from it
  to the end is thinking.
- gpt-oss's harmony channels, left unparsed (llama.cpp's `llama-server --reasoning-format none`): a reply that starts
  with a `<|channel|>` header is read from its first `final` channel's message on
  (`<|channel|>final <|constrain|>json<|message|>{…}`); one with no final channel is still in its analysis.
"""

from __future__ import annotations

import re

__all__ = ["HARMONY", "outside"]

HARMONY = "analysis"  # the "tag" `outside` names for a harmony reply that never reached a final channel
_OPENING = re.compile(r"<(think|thinking|reasoning)\s*>", re.I)
_CLOSING = {name: re.compile(rf"</{name}\s*>", re.I) for name in ("think", "thinking", "reasoning")}
_STRAY = r"</(?:think|thinking|reasoning)\s*>"
# Greedy: to the last closing tag that stands where no JSON string can hold it (the module doc).
_OPENED_BEFORE = re.compile(rf".*(?:\n[ \t]*{_STRAY}|\A[ \t]*{_STRAY}|{_STRAY}(?=[ \t]*(?:\r?\n|\Z|\{{|```)))", re.S | re.I)
# An opening tag left once closed blocks are gone has no closing tag after it. Only at the start of the reply or of a line:
# a JSON string cannot hold a raw newline, so a verdict's reason quoting "<think>" never matches.
_UNCLOSED = re.compile(r"(?:\A|\n)[ \t]*<(think|thinking|reasoning)\s*>", re.I)
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
        name = opening.group(1).lower()
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
    """`(text outside its reasoning, the tag of a block that never closed or "")` (the module doc); the tag is
    `HARMONY` for a harmony reply with no final channel, whose text outside is then empty."""
    if "<" not in text:  # (the common reply: no tag at all, nothing to search)
        return text, ""
    if _HARMONY_START.match(text):
        final = _HARMONY_FINAL.search(text)
        if final is None:
            return "", HARMONY
        text = text[final.end():]
    if "</" in text:
        text = without_closed_blocks(text)
        opened_before = _OPENED_BEFORE.match(text)
        text = text[opened_before.end():] if opened_before else text
    unclosed = _UNCLOSED.search(text)
    return (text[:unclosed.start()], unclosed.group(1).lower()) if unclosed else (text, "")
