"""report.html's case table, cut from rendered result lines, is the text `json.dumps` writes for the rows parsed from them.

The table is JSON for the page's script. A row of a result rendered where it was scored is cut from
its rendered line (`stages.reports.table_json`) rather than parsed and written again; these are the
same bytes as `json.dumps` of the row the general path parses (`cases.finished_dict`), whatever a reason,
key, id or tag holds and whatever the value, and lines whose layout cannot be cut take the general path.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st
from tracejudge.core.records import Score
from tracejudge.engine.rendered import Finished, render
from tracejudge.stages.reports.cases import CaseRow, _row, finished_dict
from tracejudge.stages.reports.table_json import _rendered_row, table_json

ODD = 'q"uote \\back\\slash\\" ctl\x00\x01\x1f\x7f tab\t nl\n … é 漢 \U0001f600 \u2028\u2029 </script> <!-- ","details": "reason":"'


def _done(scores: dict[str, Score], *, case_id: str = "c-1", tags: list[str] | None = None, metadata: dict | None = None,
          keys: list[str] | None = None, trial: int = 0) -> Finished:
    case = SimpleNamespace(id=case_id, tags=list(tags or []), metadata=dict(metadata or {}))
    rendered = render(case, scores, keys if keys is not None else list(scores))
    assert rendered is not None
    return Finished(rendered, trial)


def _dumps_rows(entries: list) -> str:
    """What the table was before: `json.dumps` of the rows the general path parses, inside the array's brackets."""
    rows = [vars(_row(finished_dict(e))) if type(e) is Finished else vars(e) for e in entries]
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":"))[1:-1]


def _table(entries: list) -> str:
    return table_json(entries, lambda e: _row(finished_dict(e)) if type(e) is Finished else e)


def test_rows_cut_from_rendered_lines_are_the_rows_dumped():
    values = [0.0, -0.0, 1.0, 0.25, 1 / 3, 0.1 + 0.2, 1e-05, 9.999e-05, 0.0001, 5e-324, 1e16, 12345678901234567.0, 1e300, None]
    done = [
        _done({f"m{i}": Score(value=v, passed=[True, False, None][i % 3], reason=f"{ODD} {i}") for i, v in enumerate(values)},
              case_id=f"id {ODD}", tags=["t", ODD], metadata={"note": ODD}, trial=3),
        _done({ODD: Score(value=0.5, passed=False, reason=""), "plain": Score(value=None, reason="metric_timeout: 2 s")}),
        _done({"a": Score(value=math.nan, passed=False, reason="nan"), "b": Score(value=-math.inf, reason="inf")}),  # null in the line
        _done({}),  # no scores
    ]
    for d in done:
        assert _rendered_row(d, {}, {b"null": "null"}) is not None  # each is cut, not parsed
    assert _table(done) == _dumps_rows(done)


def test_lines_that_cannot_be_cut_take_the_general_path_with_the_same_text():
    score_like = {"reason": "r", "details": None}  # a score's layout inside metadata or details: the split text is there twice
    done = [
        _done({"a": Score(value=1.0, passed=True, reason="ok")}, metadata={"earlier": score_like}),
        _done({"a": Score(value=0.0, passed=False, reason="x", details={"inner": score_like}), "b": Score(value=1.0, reason="y")}),
        _done({"a": Score(value=1.0, passed=True, reason="ok")}),
    ]
    errored = CaseRow("e-1", 0, "invalid_input", {}, "invalid_input: bad line", ["t"])
    assert [_rendered_row(d, {}, {b"null": "null"}) is None for d in done] == [True, True, False]
    entries = [errored, done[0], done[2], errored, done[1], done[2]]
    assert _table(entries) == _dumps_rows(entries)
    assert _table([]) == _dumps_rows([]) == ""


_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)  # (a lone surrogate is never rendered)


@settings(max_examples=300, deadline=None)
@given(
    scores=st.dictionaries(_TEXT, st.tuples(st.one_of(st.none(), st.floats(), st.integers(-10**20, 10**20).map(float)),
                                            st.sampled_from([True, False, None]), _TEXT), max_size=5),
    case_id=_TEXT, tags=st.lists(_TEXT, max_size=3), note=_TEXT, trial=st.integers(0, 50),
)
def test_any_rendered_row_is_the_row_dumped(scores, case_id, tags, note, trial):
    d = _done({k: Score(value=v, passed=p, reason=r) for k, (v, p, r) in scores.items()}, case_id=case_id, tags=tags,
              metadata={"note": note}, trial=trial)
    assert _table([d]) == _dumps_rows([d])
