"""The results a failed gate check lists under its line: the first few, then how many more there are.

`max_invalid_share` and `max_target_error_share` list the first three standing results of their status
(`invalid_reasons`), and `max_metric_error_share` the first three whose metric raised
(`gate_metric_error.metric_error_reasons`); `listed` ends such a list with `… and N more` when it was cut, as the
other lists of the tool say it, so three lines are not read as all there is.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["invalid_reasons", "listed"]


def listed(found: list[str], limit: int) -> list[str]:
    """The first `limit` lines of `found`, then `… and N more` when it holds more."""
    return found[:limit] + ([f"… and {len(found) - limit:,} more"] if len(found) > limit else [])


def invalid_reasons(run_dir: Path, limit: int = 3, status: str = "invalid_input") -> list[str]:
    """The first `limit` standing results of `status` in `run_dir/results.jsonl` as `file:line: reason` lines (`case id: reason`
    without a place), then `… and N more` when there are more (`listed`).

    Standing: the last line of each (case, trial), as every figure reads them; a failure a resume retried away is not listed.
    """
    import json

    from tracejudge.engine import store

    last: dict[tuple[str, int], str | None] = {}
    quoted = f'"{status}"'.encode()
    for raw in store.iter_result_lines(Path(run_dir) / store.RESULTS):
        try:
            result = json.loads(raw)
            key = (str(result["case_id"]), int(result.get("trial") or 0))
        except (ValueError, KeyError, TypeError):
            continue
        last.pop(key, None)  # re-inserted last: the listing follows the standing lines' order
        error = result.get("error") or {}
        if quoted not in raw or result.get("status") != status or not isinstance(error, dict):
            last[key] = None
            continue
        where = f"{error['file']}:{error['line']}" if error.get("file") and error.get("line") else f"case {result.get('case_id')!r}"
        trial = f" trial {key[1]}" if key[1] else ""
        field = f" ({error['field']})" if error.get("field") else ""
        last[key] = f"{where}{trial}{field}: {str(error.get('message', ''))[:200]}"
    return listed([r for r in last.values() if r is not None], limit)
