"""The spend journal's lines for attempts sent and settled (`tracejudge.llm.spend_journal`), read by `spend_totals`: an
attempt sent and never settled (in flight at a kill) counts as a request at its estimated prompt tokens; torn lines are
skipped; a journal of the old format (a paid line each, nothing sent) reads as before."""

from __future__ import annotations

import contextvars
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from tracejudge.llm.spend_journal import SPEND, SpendJournal, spend_totals


def _sent(n: int, tokens: int, usd: float, writer: str = "aaaa") -> dict[str, Any]:
    return {"sent": n, "writer": writer, "input_tokens_estimated": tokens, "cost_usd_estimated": usd}


def _settles(n: int, tin: int, tout: int, usd: float, writer: str = "aaaa") -> dict[str, Any]:
    return {"input_tokens": tin, "output_tokens": tout, "cost_usd": usd, "settles": n, "writer": writer}


def _write(run: Path, rows: list[Any], tail: str = "") -> Path:
    run.mkdir(exist_ok=True)
    path = run / SPEND
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows) + tail)
    return path


def _none_in_flight() -> dict[str, Any]:
    return {"requests": 0, "input_tokens_estimated": 0, "cost_usd_estimated": 0.0}


def test_an_attempt_never_settled_counts_as_a_request_at_its_estimated_prompt(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write(run, [_sent(1, 500, 0.000075), _sent(2, 480, 0.000072), _sent(3, 470, 0.0000705),
                 _settles(1, 498, 80, 0.0001227),  # answered
                 _settles(2, 0, 0, 0),  # a 500: failed unanswered, not paid
                 _sent(4, 490, 0.0000735)])  # 3 and 4: in flight at the kill
    got = spend_totals(run)
    assert got is not None
    assert got["requests"] == 4
    assert got["input_tokens"] == 498 + 470 + 490 and got["output_tokens"] == 80
    exact = Decimal("0.0001227") + Decimal("0.0000705") + Decimal("0.0000735")
    assert got["cost_usd_exact"] == float(exact) and got["cost_usd"] == round(float(exact), 6)
    assert got["in_flight_at_stop"] == {"requests": 2, "input_tokens_estimated": 960, "cost_usd_estimated": round(0.0000705 + 0.0000735, 6)}


def test_segments_numbering_their_attempts_alike_are_told_apart(tmp_path: Path) -> None:
    # Segment A was killed with its attempt 1 in flight; segment B numbers from 1 again and settles its own attempt 1.
    run = tmp_path / "run"
    _write(run, [_sent(1, 500, 0.00005, "A"), _sent(1, 400, 0.00004, "B"), _settles(1, 400, 50, 0.00009, "B")])
    got = spend_totals(run)
    assert got is not None
    assert got["requests"] == 2 and got["input_tokens"] == 900 and got["output_tokens"] == 50
    assert got["in_flight_at_stop"]["requests"] == 1 and got["in_flight_at_stop"]["input_tokens_estimated"] == 500


def test_torn_lines_are_skipped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    full = json.dumps(_sent(3, 300, 0.00003))
    # A line torn in the middle of the file (a kill cut it, and the next segment's first line was glued on), a settle line
    # torn at the end: both skipped, the sent lines around them read.
    _write(run, [_sent(1, 100, 0.00001), _settles(1, 100, 10, 0.00002), full[:25] + json.dumps(_sent(9, 999, 0.1)), _sent(2, 200, 0.00002)],
           tail=json.dumps(_settles(2, 200, 20, 0.00004))[:30])
    got = spend_totals(run)
    assert got is not None
    assert got["requests"] == 2 and got["input_tokens"] == 100 + 200 and got["output_tokens"] == 10
    assert got["in_flight_at_stop"]["requests"] == 1
    # A last line the kill left whole but for its newline reads, as it always did.
    _write(run, [_sent(1, 100, 0.00001)], tail=json.dumps(_settles(1, 100, 10, 0.00002)))
    got = spend_totals(run)
    assert got is not None and got["requests"] == 1 and got["output_tokens"] == 10 and got["in_flight_at_stop"] == _none_in_flight()


def test_a_journal_of_the_old_format_reads_as_before(tmp_path: Path) -> None:
    run = tmp_path / "run"
    old = [{"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.0000275}, {"input_tokens": 120, "output_tokens": 0, "cost_usd": 0.000018},
           "not json", {"input_tokens": "x", "output_tokens": 1, "cost_usd": 1}, {"input_tokens": 1, "output_tokens": 1, "cost_usd": "NaN"}]
    _write(run, old, tail='{"input_tokens": 5')
    got = spend_totals(run)
    assert got == {"requests": 2, "input_tokens": 220, "output_tokens": 10, "cost_usd": round(0.0000275 + 0.000018, 6),
                   "cost_usd_exact": float(Decimal("0.0000275") + Decimal("0.000018")), "in_flight_at_stop": _none_in_flight()}
    # An old segment's lines followed by a new one's (a run resumed by this version): both count.
    _write(run, old[:2] + [_sent(1, 300, 0.00003), _settles(1, 290, 30, 0.00006), _sent(2, 310, 0.00003)])
    got = spend_totals(run)
    assert got is not None
    assert got["requests"] == 4 and got["input_tokens"] == 220 + 290 + 310 and got["output_tokens"] == 40
    assert got["in_flight_at_stop"]["requests"] == 1
    assert spend_totals(tmp_path / "none") is None


def test_a_settle_line_whose_sent_line_is_gone_is_one_request(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write(run, ["{\"sent\": 1, \"wri", _settles(1, 100, 10, 0.00002), _settles(1, 100, 10, 0.00002)])
    got = spend_totals(run)
    assert got is not None and got["requests"] == 2 and got["input_tokens"] == 200 and got["in_flight_at_stop"]["requests"] == 0


def _in_own_context(fn: Any, *args: Any) -> Any:
    return contextvars.copy_context().run(fn, *args)


def test_the_journal_writes_an_attempt_when_sent_and_settles_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    journal = SpendJournal(run)

    def answered() -> None:
        journal.sent(500, 0.000075)
        journal.add(498, 80, 0.0001227)

    def failed() -> None:
        journal.sent(500, 0.000075)
        journal.add(0, 0, 0.0)  # a 5xx: settled unpaid

    def cut() -> None:
        journal.sent(470, 0.0000705)  # cancelled by a stop's grace: no billing in its task

    for fn in (answered, failed, cut):
        _in_own_context(fn)
    _in_own_context(journal.add, 100, 10, 0.00002)  # an answer not sent through `sent` (a provider batch's): as before
    _in_own_context(journal.add, 0, 0, 0.0)  # ... which billed nothing: no line, as before
    rows = [json.loads(line) for line in (run / SPEND).read_text().splitlines()]
    writer = rows[0]["writer"]
    assert rows == [_sent(1, 500, 0.000075, writer), _settles(1, 498, 80, 0.0001227, writer), _sent(2, 500, 0.000075, writer),
                    _settles(2, 0, 0, 0.0, writer), _sent(3, 470, 0.0000705, writer),
                    {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.00002}]
    got = spend_totals(run)
    assert got is not None and got["requests"] == 4 and got["in_flight_at_stop"]["requests"] == 1  # (3 is in flight: no close yet)
    # Closing a live segment's journal settles what its stop cut unpaid, as its summary counts them (requests, no tokens).
    journal.close()
    rows = [json.loads(line) for line in (run / SPEND).read_text().splitlines()]
    assert rows[-1] == {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0, "settles": 3, "writer": writer}
    got = spend_totals(run)
    assert got is not None and got["requests"] == 4 and got["input_tokens"] == 598 and got["in_flight_at_stop"] == _none_in_flight()
    journal.close()  # (idempotent)
    assert len((run / SPEND).read_text().splitlines()) == len(rows)
    # No lines carry anything but counts.
    assert all(set(r) <= {"sent", "writer", "input_tokens_estimated", "cost_usd_estimated", "input_tokens", "output_tokens", "cost_usd",
                          "settles"} for r in rows)


def test_a_segment_that_sends_nothing_writes_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    journal = SpendJournal(run)
    journal.close()
    assert not (run / SPEND).exists()
    SpendJournal(None).sent(1, 0.1)  # (no run directory: nothing at all)


def test_a_segment_after_a_torn_line_starts_a_line_of_its_own(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _write(run, [_sent(1, 100, 0.00001, "A")], tail=json.dumps(_settles(1, 100, 10, 0.00002, "A"))[:20])  # killed mid-line
    journal = SpendJournal(run)

    def one() -> None:
        journal.sent(200, 0.00002)
        journal.add(190, 20, 0.00004)

    _in_own_context(one)
    journal.close()
    got = spend_totals(run)
    assert got is not None
    # A's attempt is in flight (its settle line torn), the new segment's is read whole.
    assert got["requests"] == 2 and got["input_tokens"] == 100 + 190 and got["output_tokens"] == 20
    assert got["in_flight_at_stop"]["requests"] == 1


def test_concurrent_attempts_each_settle_their_own(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    journal = SpendJournal(run)
    order = [anyio.Event() for _ in range(3)]

    async def first() -> None:
        journal.sent(100, 0.00001)
        order[0].set()
        await order[1].wait()
        journal.add(111, 11, 0.00003)
        order[2].set()

    async def second() -> None:
        await order[0].wait()
        journal.sent(200, 0.00002)  # sent while the first is in flight
        order[1].set()
        await order[2].wait()
        journal.add(222, 22, 0.00006)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            tg.start_soon(second)

    anyio.run(main)
    journal.close()
    rows = [json.loads(line) for line in (run / SPEND).read_text().splitlines()]
    assert [(r.get("sent"), r.get("settles"), r.get("input_tokens")) for r in rows] == [(1, None, None), (2, None, None), (None, 1, 111),
                                                                                          (None, 2, 222)]


def test_reading_a_journal_again_reads_what_was_added_and_sees_a_rewrite(tmp_path: Path) -> None:
    run = tmp_path / "run"
    path = _write(run, [_sent(1, 100, 0.00001), _settles(1, 100, 10, 0.00002)], tail='{"sent": 2, "wri')
    first = spend_totals(run)
    assert first is not None and first["requests"] == 1
    with open(path, "a") as fh:  # the torn line ends (a resume's first line), more lines come
        fh.write("\n" + json.dumps(_sent(1, 300, 0.00003, "B")) + "\n")
    again = spend_totals(run)
    assert again is not None and again["requests"] == 2 and again["in_flight_at_stop"]["input_tokens_estimated"] == 300
    # The same bytes read fresh (another path) give the same totals.
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / SPEND).write_bytes(path.read_bytes())
    assert spend_totals(copy) == again
    # A journal rewritten with other lines (not appended to) is read anew.
    _write(run, [_sent(1, 100, 0.00001), _settles(1, 100, 10, 0.00002)] + [{"input_tokens": 7, "output_tokens": 7, "cost_usd": 0.0}] * 3)
    got = spend_totals(run)
    assert got is not None and got["requests"] == 4 and got["input_tokens"] == 121


def test_a_resume_takes_the_requests_in_flight_at_the_kill(tmp_path: Path) -> None:
    from tracejudge.engine.run_summary import _prior_judge, _with_in_flight

    run = tmp_path / "run"
    _write(run, [_sent(1, 500, 0.000075), _settles(1, 498, 80, 0.0001227), _sent(2, 500, 0.000075), _settles(2, 0, 0, 0),
                 _sent(3, 490, 0.0000735)])
    # Killed before its first summary; its one result line shows the answered request.
    prior = _prior_judge(run, {"input_tokens": 498, "output_tokens": 80, "requests": 1, "answered": 1})
    assert prior["requests"] == 3 and prior["input_tokens"] == 498 + 490 and prior["output_tokens"] == 80
    assert prior["cost_usd"] == float(Decimal("0.0001227") + Decimal("0.0000735"))
    # A summary counting as many tokens, but fewer requests (a killed segment's failed attempts billed none): the requests.
    (run / "summary.json").write_text(json.dumps({"judge": {"requests": 2, "input_tokens": 988, "output_tokens": 80, "cost_usd": 0.000196}}))
    assert _prior_judge(run, {"input_tokens": 0, "output_tokens": 0, "requests": 0})["requests"] == 3
    block = _with_in_flight({"requests": 3, "priced": True}, run)
    assert block["in_flight_at_stop"] == {"requests": 1, "input_tokens_estimated": 490, "cost_usd_estimated": round(0.0000735, 6)}
    assert _with_in_flight({"priced": False}, run)["in_flight_at_stop"]["cost_usd_estimated"] is None  # (no price: unknown)
    (run / SPEND).write_text(json.dumps(_sent(1, 500, 0.000075)) + "\n" + json.dumps(_settles(1, 498, 80, 0.0001227)) + "\n")
    assert "in_flight_at_stop" not in _with_in_flight({"requests": 1}, run)


def test_report_without_summary_says_what_was_in_flight(tmp_path: Path) -> None:
    from tracejudge.stages.reports.judge_spend import LineSpend, in_flight_line, rebuilt_spend

    run = tmp_path / "run"
    _write(run, [_sent(1, 500, 0.000075), _settles(1, 498, 80, 0.0001227), _sent(2, 490, 0.0000735)])
    block = rebuilt_spend(run, LineSpend())
    assert block["spend_source"] == SPEND and block["requests"] == 2 and block["input_tokens"] == 988
    assert block["in_flight_at_stop"] == {"requests": 1, "input_tokens_estimated": 490, "cost_usd_estimated": round(0.0000735, 6)}
    assert "every request the run sent and every answer it paid for" in block["spend_note"]
    # (a run still going on has no summary.json either: its requests in flight may not be stopped)
    line = in_flight_line({"judge": block})
    assert line is not None and line.startswith("1 judge request was sent with no answer recorded (in flight at a kill, or still in "
                                                "flight if the run is going on)") and line.endswith("at their prompts' estimated size: 490 input tokens, $0.0001 (no output tokens)")
    # A summary a run wrote: every request it counts in flight was an earlier segment's, cut off by a kill.
    written = {k: v for k, v in block.items() if k not in ("spend_source", "spend_note")}
    line = in_flight_line({"judge": written})
    assert line is not None and line.startswith("1 judge request was in flight at a stop (sent, then the run was killed")
    unknown = in_flight_line({"judge": {**written, "in_flight_at_stop": {**written["in_flight_at_stop"], "cost_usd_estimated": None}}})
    assert unknown is not None and "490 input tokens, cost unknown (no output tokens)" in unknown
    assert in_flight_line({"judge": {"requests": 3}}) is None
    _write(run, [_sent(1, 500, 0.000075), _settles(1, 498, 80, 0.0001227)])
    assert "in_flight_at_stop" not in rebuilt_spend(run, LineSpend())


@pytest.mark.parametrize("kind", ["sent", "settle"])
def test_a_line_that_is_not_a_count_is_skipped(tmp_path: Path, kind: str) -> None:
    run = tmp_path / "run"
    bad = ({"sent": 1, "writer": "a", "input_tokens_estimated": "many", "cost_usd_estimated": 0.1} if kind == "sent"
           else {"input_tokens": 1, "output_tokens": 1, "cost_usd": "Infinity", "settles": 1, "writer": "a"})
    _write(run, [bad, [1, 2], 7, "\"sent\""])
    assert spend_totals(run) == {"requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "cost_usd_exact": 0.0,
                                 "in_flight_at_stop": _none_in_flight()}
