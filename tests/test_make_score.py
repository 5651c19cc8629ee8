"""`make_score` builds, without validation, the `Score` that validating the same fields builds.

The metrics build every deterministic score through it, and the result lines, the pickled
results and the equality checks of the struct path all read those instances as validated
ones: the same field values, the same fields set, the same (empty) extra and private slots.
"""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st
from tracejudge.core.records import Score
from tracejudge.stages.score.base import _ALL, _GIVEN, make_score

# No NaN: NaN != NaN, so a score holding one never equals its pickled copy, whatever make_score builds.
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(value=st.none() | st.floats(allow_nan=False), passed=st.none() | st.booleans(), reason=st.text(),
       details=st.none() | st.dictionaries(st.text(max_size=8), _JSON, max_size=4), with_judge=st.booleans())
def test_make_score_is_the_validated_score(value, passed, reason, details, with_judge):
    fields = {"value": value, "passed": passed, "reason": reason, "details": details}
    want = Score(**fields, **({"judge": None} if with_judge else {}))
    got = make_score(value, passed, reason, details, _ALL if with_judge else _GIVEN)
    assert type(got) is Score
    assert got.__dict__ == want.__dict__ and list(got.__dict__) == list(want.__dict__)
    assert got.model_fields_set == want.model_fields_set
    assert got.__pydantic_extra__ is want.__pydantic_extra__ and got.__pydantic_private__ is want.__pydantic_private__
    assert got == want and repr(got) == repr(want)
    assert got.model_dump_json() == want.model_dump_json()
    assert pickle.loads(pickle.dumps(got)) == want


def test_each_score_has_its_own_fields_set():
    # The set is the instance's own: marking a field set on one score (an assignment does) leaves the others alone.
    a, b = make_score(1.0, True, "a"), make_score(0.0, False, "b")
    a.model_fields_set.add("judge")
    assert "judge" not in b.model_fields_set and "judge" not in make_score(1.0, True, "c").model_fields_set
