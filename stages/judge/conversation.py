"""The conversation's user side in a judge prompt: every user turn, in order, inside the fence.

A trace with `user_messages` (`Trace.user_messages`) is rendered as a
conversation: each user turn as a line `User k: text` (turns numbered from 1,
apart from the step numbers, so questions about `step k` or `call k` read the
same as without turns) placed before the step that answered it, between the
agent's steps (thought, calls and results, output), in the compact and the
full rendering alike. The task section then points at those turns: the
request a metric judges is everything the user said, not the first message
alone. Metrics that show the request without the steps (`Rubric` with
`include: output`, `AgentMemoryEval`, `ContextRelevance`) list the turns.

Cut policy, per turn: a turn longer than `FIELD_CHARS` keeps its first
`FIELD_CHARS` characters with the same visible `…[N characters cut]` marker
as every other field. When the prompt is too long for the judge
(`judge.too_long: truncate`), middle steps are left out first, as without
turns, and the user turns said among them stay (after the omission marker);
only when every middle step is out and it still does not fit are middle user
turns left out too, under their own marker. `omit` counts both: values up to
`steps − 2` leave out steps, each one above that one more user turn.

A trace without `user_messages` renders exactly as before this module (the
case's `input` is the request), so its prompts and cache keys do not change.
A prompt that does show turns has its prompt version extended with
`CONVERSATION_VERSION` (`Plan.conversation`), which is part of the cache key.
"""

from __future__ import annotations

from typing import Any

from tracejudge.core.records import Case, UserMessage
from tracejudge.stages.judge.field_cut import AllData
from tracejudge.stages.judge.system_section import split, system_note
from tracejudge.stages.judge.trace_text import (cut_field, droppable, final_output, kept_head, nested_steps, neutralise_structure,
                                                render_steps, text_of, user_calls)

__all__ = ["conversation_sections", "has_turns", "omitted_note", "request_text", "step_omit"]


def has_turns(case: Case) -> bool:
    """True when the case's trace records the user's turns (`trace.user_messages` not empty)."""
    return case.trace is not None and bool(case.trace.user_messages)


def _said(content: Any) -> Any:
    # Content parts (OpenAI, Anthropic) show their text; parts of media alone (a photo sent without words) are named,
    # not dumped: a data URL's base64 would fill the turn's characters with nothing a judge can read. Anything else is
    # shown as the structure it is.
    if isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        texts += [p for p in content if isinstance(p, str)]
        if texts:
            return "\n".join(texts)
        named = [_media(p) for p in content]
        if content and all(named):
            return "\n".join(named)  # type: ignore[arg-type]
    return content if content is not None else ""


def _media(part: Any) -> str | None:
    """`[image: https://…/a.png]`, `[image: inline image/png, 30,312 characters of base64]`: a media part (OpenAI's
    `image_url`, `input_image`, `input_audio`, `file`; Anthropic's `image`, `document`) as a judge is told of it, or None
    for a part that is none of those."""
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        return None
    kind = part["type"]
    if kind not in ("image_url", "input_image", "input_audio", "file", "image", "document"):
        return None
    shown = "image" if "image" in kind else "audio" if "audio" in kind else kind
    ref = part.get("image_url", part.get("source", part.get(kind)))
    url = ref.get("url") if isinstance(ref, dict) else ref
    if isinstance(ref, dict) and isinstance(ref.get("data"), str):  # (Anthropic's base64 source)
        return f"[{shown}: inline {ref.get('media_type') or 'data'}, {len(ref['data']):,} characters of base64]"
    if isinstance(url, str) and url.startswith("data:"):
        head, _, data = url[5:].partition(",")
        return f"[{shown}: inline {head.split(';', 1)[0] or 'data'}, {len(data):,} characters of base64]"
    if isinstance(url, str) and url:
        return f"[{shown}: {url.split('?', 1)[0].split('#', 1)[0][:200]}]"  # (a signed URL's query is a credential)
    return f"[{shown}]"


def _turn(k: int, msg: UserMessage, full: bool) -> str:
    # (a line of a turn that reads as the rendering's own, `User 3: …` or `Step 2:`, is marked: `neutralise_structure`)
    return neutralise_structure(f"User {k}: {cut_field(_said(msg.content), full=full)}")


def request_text(case: Case, full: bool = False) -> str:
    """The user's request as a judge sees it: `input` when the trace records no turns, else every turn as `User k: …`."""
    if not has_turns(case):
        return AllData(text_of(case.input) or "(none)")  # (all data, neutralised by `fence` after any cut; the turns below by `_turn`)
    assert case.trace is not None
    return "\n".join(_turn(k, m, full) for k, m in enumerate(case.trace.user_messages, 1))


def step_omit(n_steps: int, omit: int, keep: int = 0) -> tuple[int, int]:
    """`omit` split into `(steps, user turns)` left out: middle steps first (at most `droppable(n_steps, keep)`), then turns."""
    steps = min(omit, droppable(n_steps, keep))
    return steps, omit - steps


def omitted_note(steps: int, omit: int, keep: int = 0, system: int = 0, lengths: tuple[int, ...] = ()) -> str:
    """What a fitted prompt left out, for the score's reason (`keep`: the first steps, holding every item asked about, stayed;
    `system`: `Plan.system`, the system prompt's cut levels that come before the user turns; `lengths`:
    `Plan.system_lengths`, so a prompt is said to be cut only when it was)."""
    omit, level = split(steps, omit, keep, system)
    s, u = step_omit(steps, omit, keep)
    which = ""
    if keep and s:
        head = kept_head(steps, s, keep)
        which = f" (steps {head + 1}–{head + s}, none of them asked about)"
    parts = ([f"{s} middle step{'' if s == 1 else 's'}{which}"] if s else []) + ([f"{u} middle user turn{'' if u == 1 else 's'}"] if u else [])
    said = " and ".join(parts) + " left out" if parts else ""
    cut = system_note(level, lengths)
    return ", and ".join(filter(None, [said, cut])) + " to fit the judge's context (too_long: truncate)"


def _placed(case: Case, omit_turns: int, full: bool) -> dict[int, list[str]]:
    """The rendered user turns by the 1-based step they precede (`len(steps) + 1`: after the last step)."""
    assert case.trace is not None
    users = case.trace.user_messages
    n = len(users)
    drop = min(omit_turns, max(0, n - 2))
    head = (n - drop + 1) // 2  # as `render_steps`: the first and last turns always stay
    before: dict[int, list[str]] = {}
    for k, msg in enumerate(users, 1):
        if drop and head < k <= head + drop:
            if k == head + 1:
                before.setdefault(msg.step + 1, []).append(
                    f"[user turns {head + 1}–{head + drop} omitted: the conversation is too long for the judge]")
            continue
        before.setdefault(msg.step + 1, []).append(_turn(k, msg, full))
    return before


def conversation_sections(case: Case, omit: int, full: bool = False, keep: int = 0) -> list[tuple[str, str]]:
    """The fenced sections of a case whose trace records user turns: task pointer, conversation, final output (`keep`: `render_steps`)."""
    assert case.trace is not None
    steps = case.trace.steps
    n_users = len(case.trace.user_messages)
    omit_steps, omit_turns = step_omit(len(steps), omit, keep)
    said = "What the user says" if n_users == 1 else f"Everything the user says (User 1 to User {n_users}), in order,"
    sections = [("Task (the user's request)", f"{said} in the conversation below."),
                ("Conversation", render_steps(steps, omit_steps, full, before=_placed(case, omit_turns, full), keep=keep,
                                              nested=nested_steps(case), by_user=user_calls(case)))]
    sections.append(("Final output", final_output(case, full)))
    return sections
