"""A score's reason says what cutting a prompt to fit really did, in figures a user can check against the prompt: each
claim's share of the cap rather than the cap itself, and a long list of cut sections shortened, its count kept."""

from __future__ import annotations

import json
import re

from tracejudge.core.config import JudgeConfig
from tracejudge.core.records import Case
from tracejudge.stages.judge.field_cut import cut_note, named
from tracejudge.stages.judge.fit import fit_request
from tracejudge.stages.judge.metrics import Faithfulness

from test_judge_http import results, run_config


def _faithfulness_case(path, claims: int, passages: list[str]):
    out = " ".join(f"Claim number {i} says " + " ".join(f"fact{i}x{j}" for j in range(60)) + "." for i in range(1, claims + 1))
    path.write_text(json.dumps({"id": "f", "input": "q", "trace": {"steps": [{"output": "looked"}], "output": out, "retrieved": [{"content": p} for p in passages]}}) + "\n")
    return path


def test_claims_cut_claim_by_claim_say_each_claims_share_not_the_sections_cap(simulator, tmp_path):
    sim = simulator()
    cases = _faithfulness_case(tmp_path / "c.jsonl", 8, ["passage " * 3000])
    run_config(tmp_path, sim.url, cases, metrics=[{"type": "Faithfulness"}], judge={"context_tokens": 2000})
    (r,) = results(tmp_path)
    reason = r["scores"]["Faithfulness"]["reason"]
    got = re.search(r"; Claims: each of its 8 claims cut to ([\d,]+) characters to fit", reason)
    assert got, reason  # every claim here is longer than its share
    # Not the section's cap, which no claim was cut to (the old reason: "…, Claims cut to N characters").
    cap = int(re.search(r"Passage 1, Output cut to ([\d,]+) characters each; Claims", reason).group(1).replace(",", ""))
    share = int(got.group(1).replace(",", ""))
    assert share < cap and f"Claims cut to {cap:,}" not in reason



def test_the_claims_share_said_is_what_each_claim_line_of_the_prompt_keeps(tmp_path):
    case = Case.model_validate(json.loads(_faithfulness_case(tmp_path / "c.jsonl", 8, ["passage " * 3000]).read_text()))
    plan = Faithfulness().plan(case)
    fitted = fit_request(plan, plan.questions, JudgeConfig(provider="simulator", context_tokens=2000))
    (claims,) = [t for t in fitted.cut if t == "Claims"]
    assert (claims.lines_cut, claims.lines) == (8, 8) and claims.share < fitted.cap
    text = fitted.req.messages[-1]["content"]
    kept = [line.split(" …[")[0] for line in text.split("\n") if re.match(r"Claim \d+: Claim number", line)]
    assert len(kept) == 8 and all(len(k) == claims.share for k in kept)
    assert f"Claims: each of its 8 claims cut to {claims.share:,} characters" in cut_note(fitted.cut, fitted.cap)


def test_many_cut_sections_are_named_a_few_and_counted_all(simulator, tmp_path):
    sim = simulator()
    passages = [f"passage {i} " + "word " * 800 for i in range(1, 41)]
    cases = _faithfulness_case(tmp_path / "c.jsonl", 1, passages)
    run_config(tmp_path, sim.url, cases, metrics=[{"type": "Faithfulness"}], judge={"context_tokens": 16000})
    (r,) = results(tmp_path)
    reason = r["scores"]["Faithfulness"]["reason"]
    assert "40 sections (Passage 1, Passage 2, Passage 3, Passage 4, Passage 5 and 35 more) cut to" in reason, reason
    assert "Passage 6" not in reason and "Passage 40" not in reason


def test_named_and_cut_note_keep_the_count_exact():
    titles = [f"Passage {i}" for i in range(1, 5001)]
    assert named(titles) == "Passage 1, Passage 2, Passage 3, Passage 4, Passage 5 and 4,995 more"
    assert named(["A", "B", "A"]) == "A, B"
    note = cut_note(titles, 2000)
    assert note.startswith("5,000 sections (Passage 1,") and note.endswith("and 4,995 more) cut to 2,000 characters each")
    assert len(note) < 200
    assert cut_note(["Final output"], 2500) == "Final output cut to 2,500 characters"
