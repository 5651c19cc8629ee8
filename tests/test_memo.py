"""The bounded memos (`tracejudge.core.memo`) keep their bound, and what a run writes does not depend on them.

Every memo holds a pure answer, so a run whose memos are emptied before every insert (each answer
worked out again for every case) must write the same results.jsonl, summary and junit.xml as the
golden of `test_fast_path_equivalence` and as a run with the memos as they are.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_fast_path_equivalence as fast  # noqa: E402
golden = fast.golden  # the fixture: the golden results and summary

from tracejudge.core.memo import Memo, SeenSet


def test_a_seen_set_is_emptied_before_it_would_pass_its_limit():
    seen: SeenSet[str] = SeenSet(limit=3)
    seen.remember(["a", "b"])
    seen.remember_one("c")
    assert seen == {"a", "b", "c"}
    seen.remember_one("d")  # full: emptied first
    assert seen == {"d"}
    seen.remember(iter(["e", "f", "g"]))  # 1 + 3 > 3: emptied first; an iterator is read once
    assert seen == {"e", "f", "g"}
    seen.remember(["x", "y", "z", "w"])  # more than the limit at once: kept whole, emptied at the next insert
    assert len(seen) == 4
    with pytest.raises(TypeError):
        seen.remember([["unhashable"]])


def test_a_memo_is_emptied_when_full_and_returns_what_it_keeps():
    memo: Memo[str, int] = Memo(limit=2)
    assert memo.put("a", 1) == 1 and memo.put("b", 2) == 2
    assert memo.put("c", 3) == 3
    assert memo == {"c": 3}
    assert memo.get("a") is None


def _junit(tmp: Path, name: str) -> str:
    text = (tmp / f"run-{name}-p1" / "junit.xml").read_text(encoding="utf-8").replace(str(tmp), "<tmp>")
    return re.sub(r'(time|timestamp)="[^"]*"', r'\1=""', text)


def test_a_run_writes_the_same_with_every_memo_emptied_before_each_insert(golden, tmp_path, monkeypatch):
    (tmp_path / "kept").mkdir()
    (tmp_path / "emptied").mkdir()
    kept = fast.compute(tmp_path / "kept", 1)

    inserts = []

    def put(self, key, value):
        inserts.append(key)
        self.clear()
        self[key] = value
        return value

    def remember(self, keys):
        keys = list(keys)
        inserts.extend(keys)
        self.clear()
        self.update(keys)

    def remember_one(self, key):
        inserts.append(key)
        self.clear()
        self.add(key)

    monkeypatch.setattr(Memo, "put", put)
    monkeypatch.setattr(SeenSet, "remember", remember)
    monkeypatch.setattr(SeenSet, "remember_one", remember_one)
    for module in list(sys.modules.values()):  # start from empty ones: the first run filled them
        if getattr(module, "__name__", "").startswith("tracejudge"):
            for value in list(vars(module).values()):
                if isinstance(value, (Memo, SeenSet)):
                    value.clear()
    emptied = fast.compute(tmp_path / "emptied", 1)
    assert len(inserts) > 1000, "the run never reached the memos: the comparison below would prove nothing"

    problems = []
    for name in golden:
        problems += fast._diff_results(name, golden[name]["results"], emptied[name]["results"])
        problems += fast._diff_figures(f"{name} summary", golden[name]["summary"], emptied[name]["summary"])
        assert emptied[name]["lines"] == kept[name]["lines"], f"{name}: results.jsonl differs from the run with its memos"
        assert _junit(tmp_path / "emptied", name) == _junit(tmp_path / "kept", name), f"{name}: junit.xml differs"
    assert not problems, "\n".join(problems[:40])
