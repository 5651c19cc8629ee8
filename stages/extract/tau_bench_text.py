"""Text of a τ-bench run that no UTF-8 file can hold: a lone surrogate (`"\\ud800"`, half of a UTF-16 pair, as a model's
reply or a simulated user's message cut mid-emoji records) in a message is read as U+FFFD, with a warning naming the
run and the field, as `otel` reads span text and a judge is sent such text.

Kept as it was, the run scored its case while `tracejudge extract` refused it under `input` (a case written out must be
UTF-8), and the judge read U+FFFD anyway. Call arguments and tool names are not text: one holding a lone surrogate is
the run's `invalid_input` (`tau_bench_shapes`), checked before this.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.core.log import get_logger

__all__ = ["mended_case"]

log = get_logger("tracejudge.extract.tau_bench")


def mended_case(body: dict[str, Any], traj: list[Any], case_id: str) -> dict[str, Any]:
    """`body` (a `Case`'s fields made of run `case_id`, whose messages are `traj`) with each lone surrogate of its text
    replaced by U+FFFD; `body` itself when it holds none. Warns once per run, naming the first field (`traj[1].content`;
    a tool result's text decoded from JSON is named where the case holds it). Never raises."""
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")  # (a walk of the text in C: most runs hold no surrogate)
        return body
    except UnicodeEncodeError:
        pass
    from tracejudge.stages.extract.multivon_text import mended
    from tracejudge.stages.extract.surrogates import surrogate_field

    from tracejudge.stages.load.framing import quieted

    field = surrogate_field({"traj": traj}) or surrogate_field(body)
    if not quieted():  # (a look at the first runs before the run's own read, which warns of them)
        log.warning(f"tau-bench: run {case_id}: {field} holds a lone surrogate (half of a UTF-16 pair, no character on its own), "
                    "which no UTF-8 text can hold: read as U+FFFD")
    return mended(body)
