"""`tracejudge view`: a local, read-only web app to look at runs case by case and at what changed between runs.

- `tracejudge.viewer.index` — `view.idx`, the SQLite index behind the Cases table;
- `tracejudge.viewer.case_query` — the Cases table's filters and sort (`CaseQuery`) and the SQL they become;
- `tracejudge.viewer.traces` — where a case's trace is read from (traces.jsonl or the dataset);
- `tracejudge.viewer.runs` — the run directories served;
- `tracejudge.viewer.pages_run`, `tracejudge.viewer.pages_cases`, `tracejudge.viewer.pages_case` — the HTML pages;
- `tracejudge.viewer.transcript` — a case as a conversation (the case page's transcript);
- `tracejudge.viewer.app` — the aiohttp app (`start_viewer`, `make_app`); `tracejudge.viewer.command` — `tracejudge view`.
"""

from __future__ import annotations

__all__: list[str] = []
