"""The agent's instructions in a judge prompt: a metric's `include_system_prompt: true`.

A judge asked whether the agent followed its instructions or policy needs them. With the option on, and a trace that
recorded some (`Trace.system_prompts`), the fenced data opens with them, before the task and the trace: one section
`System prompt`, or, when the trace names several agents, one per agent (`System prompt of agent "Triage"`), each
agent's distinct prompts in the order given, a blank line between them. Each prompt is cut as any field is
(`FIELD_CHARS`, or the metric's `system_prompt_chars`, with the count of cut characters said) and is all data (`field_cut.PreCut`): `fence` neutralises its lines as it
does the task's, so a prompt holding the fence marker, a heading or a line shaped as a step cannot break out of its
section. Off (the default), or with no prompt recorded, nothing changes: every existing prompt, cache key and token
estimate stays byte for byte as before.

Fitting (`judge.too_long: truncate`): the middle steps are left out first, as always; past them each prompt is cut
further, to each of `SYSTEM_CUTS` characters in turn, before any user turn is left out (`split`). A plan showing the
prompts carries `Plan.system` (how many such levels `fit` may use) and the prompt version `base.SYSTEM_VERSION`.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.core.records import Case
from tracejudge.stages.judge.field_cut import cut_text, pre_cut
from tracejudge.stages.judge.trace_text import FIELD_CHARS, droppable

__all__ = ["SYSTEM_CUTS", "levels", "shown_lengths", "system_note", "split", "system_sections"]


SYSTEM_CUTS = (1000, 500, 200)
"""Characters each prompt keeps at each level a fitted prompt goes down to, once every middle step is out."""

_AGENT_CHARS = 100  # an agent's name, as its section's title shows it


def levels(metric: Any, case: Case) -> int:
    """How many cut levels a prompt of `metric` about `case` has (`Plan.system`): 0 when it shows no system prompt (the
    option off, or none recorded), so the prompt is rendered exactly as without this module."""
    shown = getattr(metric, "include_system_prompt", False) and case.trace is not None and case.trace.system_prompts
    return len(SYSTEM_CUTS) if shown else 0


def shown_lengths(metric: Any, case: Case) -> tuple[int, ...]:
    """The characters of each system prompt a prompt of `metric` about `case` shows before any cut to fit: each prompt's
    length, at most the metric's `system_prompt_chars` (`FIELD_CHARS`) it is cut to in every prompt; `()` when it shows
    none (`levels` 0). What `system_note` needs to say which prompts a cut level really cut."""
    if not levels(metric, case):
        return ()
    assert case.trace is not None
    chars = getattr(metric, "system_prompt_chars", FIELD_CHARS)
    return tuple(min(len(p.text), chars) for p in case.trace.system_prompts)


def split(n_steps: int, omit: int, keep: int, system: int) -> tuple[int, int]:
    """`omit` (what `Plan.render` is given) as `(steps and user turns left out, system cut level)`: the middle steps
    (`droppable`) come first, then up to `system` levels of cutting the prompts, then the user turns."""
    level = min(max(0, omit - droppable(n_steps, keep)), system)
    return omit - level, level


def _agent(name: str) -> str:
    # (the name is data: JSON-quoted, so a line break or a quote in it stays inside the title's one line)
    return json.dumps(cut_text(name, _AGENT_CHARS), ensure_ascii=False)


def system_sections(case: Case, level: int = 0, chars: int = FIELD_CHARS) -> list[tuple[str, str]]:
    """The fenced sections of the case's system prompts, each prompt cut to `chars` characters (the metric's
    `system_prompt_chars`; at `level` k > 0, to `SYSTEM_CUTS[k - 1]` when that is fewer); `[]` when the trace recorded
    none."""
    prompts = case.trace.system_prompts if case.trace is not None else []
    limit = min(SYSTEM_CUTS[level - 1], chars) if level else chars
    agents = list(dict.fromkeys(p.agent for p in prompts))
    out = []
    for agent in agents:
        texts = [p.text for p in prompts if p.agent == agent]
        if len(agents) == 1:
            title = "System prompt"
        else:
            title = f"System prompt of agent {_agent(agent)}" if agent is not None else "System prompt (no agent named)"
        if len(texts) > 1:
            title += f" ({len(texts)} versions, in the order given)"
        out.append((title, pre_cut(texts, limit)))  # (a cut to fit counts the prompts' characters, not the markers)
    return out


def system_note(level: int, lengths: tuple[int, ...]) -> str:
    """What a fitted prompt did to the system prompts (`lengths`: `shown_lengths`), for the score's reason: "" at level 0,
    and when no prompt is longer than the level's cut (a prompt of 8 characters is not cut to 200: saying so was false).
    """
    limit = SYSTEM_CUTS[level - 1] if level else 0
    n_cut = sum(n > limit for n in lengths) if level else 0
    if not n_cut:
        return ""
    if len(lengths) == 1:
        return f"the system prompt cut to {limit:,} characters"
    if n_cut < len(lengths):
        return f"{n_cut} of the {len(lengths)} system prompts cut to {limit:,} characters{' each' if n_cut > 1 else ''}"
    return f"{'both' if n_cut == 2 else f'all {n_cut}'} system prompts cut to {limit:,} characters each"
