"""What a run writes for a chunk whose worker process died: provisional `worker_error`s under the cases' real ids.

Apart from the flow of records (`engine.flow`), which calls it when the executor hands back a
chunk it could not compute (`Mapped.broken`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.core.records import WORKER_ERROR, ErrorInfo
from tracejudge.engine.executors import Extracted
from tracejudge.engine.executors.pump import Mapped

__all__ = ["died_results"]

log = get_logger("tracejudge.runner")


def died_results(mapped: Mapped, filed: Callable[[Any], str] | None, raw_case_id: Callable[[Any], str]
                 ) -> tuple[list[Extracted] | None, bool]:
    """`(the results of the chunk, whether a record was left unwritten)` for `mapped`, whose worker died.

    A worker's death (the OOM killer, a crash in C code) is an infrastructure fault, not the
    record's: the journal keeps these results provisional, so the next segment redoes them and
    its results supersede these lines. When the executor split the chunk to pin the death on
    the records causing it (`mapped.partial`), the other records keep the results computed for
    them, and each lost record's error says why (`the worker process died while scoring this
    case: …` for one its worker died on alone). Each result goes under the id the record's own
    result will have: `filed(raw)` (`extract.line_case_id`, for a format whose lines it reads;
    None: the format has none), else `raw_case_id` for a record the reader refused or a dict
    holding an id. A record whose id cannot be told without extracting it is not written at all
    (a key the resume would not write again would never be superseded): the run counts as cut
    short and the resume redoes it. The results are None when nothing of the chunk is written.
    """
    out: list[Extracted] = []
    unwritten = False
    lost: list[str] = []
    for i, raw in enumerate(mapped.chunk):
        got = mapped.partial[i] if mapped.partial is not None else mapped.broken or ""
        if isinstance(got, Extracted):
            out.append(got)
            continue
        cid: str | None = None
        if filed is not None:
            cid = filed(raw)  # as `extract_record` files it: a broken line under its place, not an id read from its first bytes
        elif raw.error is not None or (isinstance(raw.payload, dict) and isinstance(raw.payload.get("id"), (str, int))):
            cid = raw_case_id(raw)
        if cid is None:
            unwritten = True
            continue
        lost.append(cid)
        out.append(Extracted(raw.file, raw.line, error=(cid, ErrorInfo(kind=WORKER_ERROR, message=got, file=raw.file, line=raw.line))))
    log.warning("a worker process died; its cases are provisional and redone by the next run",
                cases=len(lost), not_written=len(mapped.chunk) - len(out), case_ids=lost[:10], error=(mapped.broken or "")[:200])
    return out or None, unwritten
