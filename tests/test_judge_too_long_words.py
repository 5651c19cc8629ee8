"""What a prompt too long for the judge's context is said to be: its token count or a lower bound of it, the sections
really cut, and a grouped request none of whose metrics was sent.

Run over real HTTP against the simulator (`judge.too_long: skip`), and through `fit_request` for the cut's wording.
"""

from __future__ import annotations

import json

from test_judge_servers import TWO, config, results, run
from tracejudge.core.config import JudgeConfig
from tracejudge.core.records import Case
from tracejudge.stages.judge.client import request_tokens
from tracejudge.stages.judge.fit import fit_request
from tracejudge.stages.judge.metrics import Faithfulness
from tracejudge.stages.reports.judge_lines import judge_lines


def _cases(path, outputs: list[str], steps: int = 1):
    with open(path, "w") as fh:
        for i, out in enumerate(outputs):
            st = [{"tool_calls": [{"name": "lookup", "arguments": {"q": f"row {k}"}, "result": f"row {k} is {k * 3}"}]} for k in range(steps)]
            fh.write(json.dumps({"id": f"case-{i}", "input": "Sum the ledger", "trace": {"steps": st, "output": out}}) + "\n")
    return path


def test_a_skipped_prompt_says_when_its_token_count_is_a_lower_bound(simulator, tmp_path):
    # A 3 MB output is not counted whole (`fit._count`): its details said the lower bound as if it were the count, and
    # the bound was the clipped sections' count alone (a 30 MB output said "more than 15,472" tokens).
    sim = simulator()
    huge, near = "a" * 3_000_000, "The ledger total is 42 because every row adds up; " * 400
    data = config(tmp_path, sim.url, _cases(tmp_path / "c.jsonl", [huge, near]), metrics=[{"type": "TaskCompletion"}],
                  too_long="skip", context_tokens=4000, max_tokens=256)
    assert run(data)["judge"]["too_long"] == 2 and sim.stats.requests == 0
    got = {r["case_id"]: r["scores"]["TaskCompletion"] for r in results(tmp_path)}
    bound = got["case-0"]["details"]
    assert bound["too_long_tokens_lower_bound"] is True and got["case-0"]["reason"].startswith("too_long: the judge prompt has more than ")
    # What the bytes left out of the count hold at the least (3 MB of one letter: 128 bytes a token at most) is in it.
    assert bound["too_long_tokens"] >= 3_000_000 // 128
    exact = got["case-1"]["details"]
    assert "too_long_tokens_lower_bound" not in exact and exact["too_long_tokens"] > 4000 - 256


def test_a_lower_bound_never_exceeds_the_count():
    from test_judge_huge_counting import plan_of

    for output in ("a" * 3_000_000, "The ledger total is 42 because every row adds up; " * 60_000, "数据 " * 800_000):
        plan = plan_of(output)
        fitted = fit_request(plan, plan.questions, JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=16_000, too_long="skip"))
        assert fitted.over and 16_000 < fitted.tokens <= request_tokens(fitted.req)


def test_a_claims_section_whose_lines_all_stay_whole_is_not_named_as_cut():
    # 120 claims of under 40 characters each: over the cap as a section, but cut line by line (each keeping its first 40
    # characters) nothing of them is cut, and the reason named "Claims" among the sections cut.
    out = " ".join(f"Row {i} adds up." for i in range(1, 121))
    case = Case.model_validate({"id": "c", "input": "Sum the ledger", "trace": {"steps": [{"output": "summed"}], "output": out,
                                                                                 "retrieved": [{"content": "Rows are 10, 12 and 20. " * 9000}]}})
    plan = Faithfulness(max_items=120).plan(case)
    fitted = fit_request(plan, plan.questions, JudgeConfig(provider="openai", model="gpt-4o-mini", context_tokens=7000))
    text = fitted.req.messages[-1]["content"]
    claims = text[text.index("## Claims"):]
    assert fitted.fits and fitted.cap is not None and fitted.cap < len("\n".join(f"Claim {i}: Row {i} adds up." for i in range(1, 121)))
    assert "characters cut" not in claims and "Claim 120: Row 120 adds up." in claims
    assert "Claims" not in fitted.cut and "Passage 1" in fitted.cut


def test_a_grouped_prompt_too_long_whose_metrics_are_too_long_alone_says_none_was_sent(simulator, tmp_path):
    # `group: case` under `skip`: the grouped prompt does not fit, so each metric is asked alone, and alone neither fits.
    # The terminal said "2 metrics re-asked alone" and each score's group note "re-asked alone", though nothing was sent.
    # A run none of whose prompts was sent said nothing of them on the terminal either.
    sim = simulator()
    long = _cases(tmp_path / "c.jsonl", ["The ledger total is 42. " * 300])
    summary = run(config(tmp_path, sim.url, long, metrics=TWO, too_long="skip", context_tokens=1200, max_tokens=100, group="case"))
    assert sim.stats.requests == 0
    j = summary["judge"]
    assert j["too_long"] == 2 and j["parts_reasked_alone"] == 0
    text = "\n".join(judge_lines(summary))
    assert "re-asked alone" not in text and "judge prompts too long: 2 could not fit" in text
    # With a case that fits beside it, the grouping line counts no metric re-asked alone.
    both = _cases(tmp_path / "b.jsonl", ["The ledger total is 42. " * 300, "42."])
    summary = run(config(tmp_path, sim.url, both, metrics=TWO, too_long="skip", context_tokens=1200, max_tokens=100, group="case", run="both"))
    assert summary["judge"]["too_long"] == 2 and summary["judge"]["parts_reasked_alone"] == 0 and sim.stats.requests == 1
    text = "\n".join(judge_lines(summary))
    assert "0 metrics re-asked alone" in text or "re-asked alone" not in text
    assert "judge prompts too long: 2 could not fit" in text
    for score in results(tmp_path)[0]["scores"].values():
        why = score["details"]["group"]["why"]
        assert score["value"] is None and "re-asked" not in why and "does not fit the judge's context" in why, why
