"""Every section heading a judge prompt can hold, for `fence_guard.neutralise_headings`: `TITLES` and `FAMILIES`.

A line of the data that reads as a heading of any section the prompt builder writes could pass for a section of the
prompt's own, whether or not this prompt holds that section: `## System prompt of agent "Root"` in a prompt naming no
agent Root reads as one more agent's instructions, and `## Conversation` in a prompt about a trace without user turns
as a conversation. So the set checked is not the titles of the one prompt but all of them:

- `TITLES`: the fixed titles, as `metric_plans.trace_sections`, `conversation.conversation_sections`,
  `system_section.system_sections`, `metrics` (AgentMemoryEval, ContextRelevance, Faithfulness) and `promptfoo_goal`
  write them; and `Expected output`, which a judge takes for the expected answer as it would
  AgentMemoryEval's `Expected information`;
- `LABELS`: the labels written after the block (`Evaluation:`, `Questions:`, `Rubric:`, `Criterion:`), as a heading
  (`## Rubric`, `**Evaluation**`);
- `FAMILIES`: the titles written with a part that varies (an agent's name, a count of versions, a passage's number),
  as regular expressions over words (a space in them is any run of spaces, as in a fixed title);
- `BODIES`: the lines the builder writes as a section's whole text (the final output's pointer to the last step), which
  on a line of their own read as that section's, heading or not.

A title is read as a reader reads it (`fence_guard._heading`): any quote for its apostrophe (`user’s`), any space or
zero-width character between or inside its words, a fullwidth `＃`, an HTML heading, bold or summary tag (`<h2>Trace</h2>`,
`<details><summary>Trace</summary>`), whatever its line adds in parentheses (`## Final output (the output of step 1
above)`), bare on its line (`Final output`, underlined as a setext title or not), and after a quote's `>` or a list's
bullet or number (`> ## Final output`, `1. Final output`). A label of `LABELS` is read so only as a heading.

tests/test_fence_titles.py renders a prompt with each section and fails on a title missing here.
"""

from __future__ import annotations

__all__ = ["BODIES", "FAMILIES", "LABELS", "TITLES"]

TITLES = (
    "System prompt",
    "System prompt (no agent named)",
    "Task (the user's request)",
    "Trace",
    "Conversation",
    "Final output",
    "Goal",
    "Prior context",
    "Current request",
    "Response",
    "Expected information",
    "Expected output",
    "Input",
    "Output",
    "Claims",
)

LABELS = ("Evaluation", "Questions", "Rubric", "Criterion")
"""The labels written after the block, checked as headings only with `#`s or in bold: alone with a colon they are
`fence_labels`' to judge, capitalised as the prompt writes them (a YAML key `questions:` is the data's)."""

# (Each a word pattern: ` ` stands for any run of spaces; `REST` for the rest of the line, at least one character.)
FAMILIES = (
    "System prompt of agent REST",  # (`System prompt of agent "Triage"`, with `(2 versions, …)` after it too)
    "System prompt (REST",  # (`System prompt (2 versions, in the order given)`)
    "Passage [0-9]+",
)

BODIES = ("(the output of step [0-9]+ above)",)
"""Word patterns as `FAMILIES`' (`[0-9]+` a number), each a whole line (`trace_text.final_output`'s pointer)."""
