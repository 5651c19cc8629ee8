"""What the viewer shows of a trace: masked as results and reports mask what they copy.

The case page and the search index re-read the dataset (or a live run's `traces.jsonl`), which holds the
trace as the agent left it, credentials included. Every string shown or indexed passes through
`redact_quoted` first (before any cut), a string under a key that names a credential is masked whole
(`redact_details`: tool arguments such as `{"password": …}`), and tags and metadata are masked as a
result line copies them (`redact_labels`). The case id is kept: it is the key every output files a
result under (README, *Secrets*).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from tracejudge.core.records import Case
from tracejudge.llm.redact import redact_details, redact_labels, redact_quoted

__all__ = ["shown_case", "shown_text"]


def shown_text(text: str) -> str:
    """`text` with its credentials masked (`redact_quoted`), for the search index and the Cases table."""
    return redact_quoted(text) if text else text


def shown_case(case: Case) -> Case | None:
    """A copy of `case` with every string masked (see the module doc); the same object when nothing was masked;
    `None` when the masked copy is not a valid case (a credential inside a field a format constrains), so the page
    shows no trace rather than an unmasked one."""
    data: dict[str, Any] = case.model_dump(mode="json")
    case_id = data.pop("id")
    tags, metadata = redact_labels(data.pop("tags", None), data.pop("metadata", None))
    masked = redact_details(data)
    if masked == data and tags is case.tags and metadata is case.metadata:
        return case
    try:
        return Case.model_validate({**masked, "id": case_id, "tags": tags, "metadata": metadata})
    except ValidationError:
        return None
