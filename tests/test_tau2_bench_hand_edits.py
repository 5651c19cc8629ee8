"""A τ²-bench results file edited by hand: the commas between simulations, a simulation that is null or lost a bracket.

Each file is the first simulations of a real results file (τ²-bench's GPT-4.1 airline run), written as upstream
writes it (an indent of 2) or on one line, then damaged as a hand edit damages it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hand_edits import filed
from helpers import DATA
import _forkserver

SOURCE = DATA / "tau2_bench" / "model_training_results" / "gpt-4.1_airline_default_gpt-4.1_1trials.json"
pytestmark = pytest.mark.skipif(not SOURCE.exists(), reason="the tau2-bench developer files are not beside the repository")
REST = "; the rest of the file is not read"
IDS = [("13-0", None), ("6-0", None), ("16-0", None)]  # the first three simulations' cases


@pytest.fixture(scope="module")
def results() -> dict:
    data = json.loads(SOURCE.read_text(encoding="utf-8"))
    return {**data, "simulations": data["simulations"][:3]}


def _layout(results: dict, indent: int | None, seps: tuple[str, ...] | None = None, end: str = "",
            pieces: list[str] | None = None) -> tuple[str, list[int]]:
    """The results object with its simulations (or `pieces` in their place) joined by `seps`, `end` before the list's
    `]`, and the offset each starts at."""
    head = json.dumps({k: v for k, v in results.items() if k != "simulations"}, indent=indent)[:-1].rstrip()
    pieces = pieces or [json.dumps(sim, indent=indent) for sim in results["simulations"]]
    seps = seps or (", ",) * (len(pieces) - 1)
    text, starts = head + ', "simulations": [', []
    for piece, sep in zip(pieces, seps + (end,)):
        starts.append(len(text))
        text += piece + sep
    return text + "]}", starts


def _read(path: Path, text: str) -> list[tuple[str, str | None]]:
    return filed(path, "tau2-bench", text)


def _said(caplog) -> list[tuple[str, int]]:
    return [(r.tracejudge_event, r.tracejudge["line"]) for r in caplog.records if r.name == "tracejudge.load"]


@pytest.mark.parametrize("indent", [2, None])
def test_commas_between_simulations_make_no_record_and_are_warned_of(tmp_path, results, caplog, indent):
    # `},,{` was a simulation "Expecting value" that stopped the read; `} {` stopped it too ("expected ',' or ']'");
    # `},]` said nothing, unlike a τ-bench array.
    cases = [  # (the separators, what is before `]`, the warning, whether it is on the last line rather than the second's)
        ((",, ", ", "), "", "tau2-bench: a comma with no simulation after it; passed over", False),
        ((" ", ", "), "", "tau2-bench: a comma is missing between two simulations; read as if it were there", False),
        ((", ", ", "), ",", "tau2-bench: a comma with no simulation after it; passed over", True),
    ]
    for seps, end, event, last in cases:
        text, starts = _layout(results, indent, seps, end)
        caplog.clear()
        assert _read(tmp_path / "r.json", text) == IDS
        assert _said(caplog) == [(event, text.count("\n", 0, len(text) if last else starts[1]) + 1)]
    text, starts = _layout(results, indent)
    caplog.clear()
    assert _read(tmp_path / "r.json", text.replace('"simulations": [', '"simulations": [, ')) == IDS
    assert _said(caplog) == [("tau2-bench: a comma with no simulation before it; passed over", text.count("\n", 0, starts[0]) + 1)]


def test_a_null_simulation_is_named_in_json_s_words(tmp_path, results):
    text, starts = _layout(results, 2)
    got = _read(tmp_path / "r.json", text.replace('"simulations": [', '"simulations": [null, '))
    line = text.count("\n", 0, starts[0]) + 1
    assert got == [(f"F:{line}", "simulations[0]: expected a simulation object, got null"), ("13-0", None), ("6-0", None), ("16-0", None)]


def test_broken_simulations_of_a_one_line_file_each_have_their_own_id(tmp_path, results):
    # All on line 1, every broken simulation went under `file:1`: the run kept one result of them.
    def broken(sim: dict) -> str:
        body = json.dumps(sim)
        at = body.index('"termination_reason"')
        return body[:at] + ", " + body[at:]

    sims = results["simulations"]
    text, starts = _layout(results, None, pieces=[broken(sims[0]), broken(sims[1]), "null", json.dumps(sims[2])])
    got = _read(tmp_path / "r.json", text)
    assert [cid for cid, _ in got] == ["F:1", f"F:1:{starts[1] + 1}", f"F:1:{starts[2] + 1}", "16-0"]
    assert [why.split(": ")[0] for _, why in got[:3]] == ["simulations[0]", "simulations[1]", "simulations[2]"]


def test_a_simulation_that_lost_a_brace_costs_itself_or_stops_the_read_saying_so(tmp_path, results):
    text, starts = _layout(results, 2)
    lost = text[: starts[1]] + " " + text[starts[1] + 1 :]  # its `{`: the key that follows where a simulation starts
    key = lost.index('"id"', starts[1])
    line, column = lost.count("\n", 0, key) + 1, key - lost.rfind("\n", 0, key)
    assert _read(tmp_path / "r.json", lost) == [
        ("13-0", None),
        (f"F:{line}", f"simulations[1]: invalid JSON: a key (\"id\":) where a simulation starts, at line {line} column {column}: the "
                      "simulation's opening '{' is missing, or a '}' too many ended the simulation before it early"),
        ("16-0", None)]
    brace = text.rindex("}", 0, starts[2])
    open_ = text[:brace] + text[brace + 1 :]  # its `}`: the scan ran on to the file's last `}`
    at = starts[2] - 1
    assert _read(tmp_path / "r.json", open_) == [
        ("13-0", None),
        (f"F:{text.count(chr(10), 0, starts[1]) + 1}",
         f"simulations[1]: invalid JSON: Expecting property name enclosed in double quotes at line {open_.count(chr(10), 0, at) + 1} "
         f"column {at - open_.rfind(chr(10), 0, at)}; a bracket is missing, or one too many, in or near this simulation, so where "
         f"it ends cannot be told{REST}")]


def test_what_follows_the_results_object_is_an_error_not_dropped(tmp_path, results):
    text, _ = _layout(results, 2)
    assert _read(tmp_path / "r.json", text + "\n" + text) == IDS + [
        (f"F:{text.count(chr(10)) + 2}", f"the file goes on after the results object's closing '}}': found '{{'{REST}")]


def test_the_commas_warnings_are_said_once_by_a_run(tmp_path, results):
    # The progress bar's count read the file too: each warning would be said twice.
    import subprocess
    import sys

    text, starts = _layout(results, 2, (",, ", " "))
    path = tmp_path / "r.json"
    path.write_text(text, encoding="utf-8")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {path}, format: tau2-bench}}\nmetrics: [{{type: TrajectoryMatch}}]\nrun: {{dir: run, executor: inprocess}}\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    said = [json.loads(line) for line in done.stderr.splitlines() if '"tau2-bench: a comma' in line]
    assert [(s["event"], s["line"]) for s in said] == [
        ("tau2-bench: a comma with no simulation after it; passed over", text.count("\n", 0, starts[1]) + 1),
        ("tau2-bench: a comma is missing between two simulations; read as if it were there", text.count("\n", 0, starts[2]) + 1)]
