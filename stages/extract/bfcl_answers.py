"""Read a BFCL possible-answer file into its answers by question id, and the lines that cannot be read.

Upstream's eval runner pairs the answer file with the question file by position; tracejudge pairs them by `id`, so a
question never takes another's answer when a line is missing. An id is therefore read as the question file's are: text,
or an integer (the question's category then taken from the file name). Any other JSON type (`true`, `null`, `1.5`, an
object) is that line's error naming `id`, never `str()` of it: `true` filed the answer under `"True"`, which a question
with the id `"True"` then took.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tracejudge.stages.load import jsonl_lines, loads_line

__all__ = ["Answers", "id_problem", "read_answers"]


class Answers(BaseModel):
    """`answers`: `{question id: ground_truth}`; `bad`: `{question id: "file:line: why"}` for a line whose id could be
    told but not the rest; `unplaced`: `["file:line: why"]` for a line whose id cannot be told, which no question takes."""

    answers: dict[str, Any]
    bad: dict[str, str]
    unplaced: list[str]


def id_problem(value: Any, whose: str) -> str | None:
    """Why `value` is no BFCL id (`"id: a question's id is text or an integer, got true/false"`), or None for text or an
    integer. `whose` is `"question"` or `"answer"`."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return None
    kind = "null" if value is None else "true/false" if isinstance(value, bool) else type(value).__name__
    return f"id: {'a' if whose == 'question' else 'an'} {whose}'s id is text or an integer, got {kind}"


def read_answers(answer_file: Path) -> Answers:
    """Read `answer_file` (JSON Lines, one `{"id", "ground_truth"}` a line); a blank line is passed over.

    Raises `OSError` when the file cannot be opened. A line that is not a JSON object with a usable `id` costs that
    line only: it is in `bad` under its id when a leading `"id"` can still be read from it (`native.peek_id`), else in
    `unplaced`.
    """
    from tracejudge.stages.extract.native import peek_id

    found = Answers(answers={}, bad={}, unplaced=[])
    with open(answer_file, "rb") as fh:
        for lineno, (_, line) in enumerate(jsonl_lines(fh), 1):
            if not line.strip():
                continue
            try:
                rec = loads_line(line)
                if not isinstance(rec, dict) or "id" not in rec:
                    raise ValueError("expected an object with an `id`")
                if (why := id_problem(rec["id"], "answer")) is not None:
                    raise ValueError(why)
            except ValueError as exc:
                said = f"{answer_file}:{lineno}: {exc}"
                if (qid := peek_id(line)) is not None:
                    found.bad[qid] = said
                else:
                    found.unplaced.append(said)
                continue
            found.answers[str(rec["id"])] = rec.get("ground_truth")
    return found
