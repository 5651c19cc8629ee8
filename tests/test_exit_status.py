"""Exit statuses CI can tell apart: 0 PASS, 1 FAIL, 2 bad input, 3 internal error, 130 interrupted."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tracejudge.engine import runner
from tracejudge.entrypoints.cli import main
import _forkserver

CASE = {"id": "c1", "trace": {"steps": [{"tool_calls": [{"name": "get"}]}]}, "expected_tool_calls": [{"name": "get"}]}


def _config(tmp_path: Path, called: str = "get") -> Path:
    case = {**CASE, "trace": {"steps": [{"tool_calls": [{"name": called}]}]}}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCorrectness}]\nrun: {dir: run}\n"
                   "assertions: {metrics: {ToolCorrectness: {min_mean: 0.5}}}\n")
    return cfg


def _tj(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_pass_is_0_and_fail_is_1(tmp_path: Path) -> None:
    ok = _tj("run", str(_config(tmp_path)), cwd=tmp_path)
    assert ok.returncode == 0 and "verdict: PASS" in ok.stdout
    fail = _tj("run", str(_config(tmp_path, called="put")), "--fresh", cwd=tmp_path)  # mean 0.0 < 0.5
    assert fail.returncode == 1 and "verdict: FAIL" in fail.stdout


def test_bad_config_is_2(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("dataset: {path: nowhere.jsonl}\nmetrics: [{type: NoSuchMetric}]\n")
    proc = _tj("run", str(cfg), cwd=tmp_path)
    assert proc.returncode == 2 and "NoSuchMetric" in proc.stderr


def test_an_internal_error_is_3_with_one_line_and_a_crash_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # Injected: no real input makes tracejudge itself fail, which is the point of the status.
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the engine broke\nsecond line")

    monkeypatch.setattr(runner, "run", broken)
    cfg = _config(tmp_path)
    (tmp_path / "run").mkdir()
    assert main(["run", str(cfg), "--no-progress"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    crash = tmp_path / "run" / "crash.log"
    assert err[0] == f"internal error: RuntimeError: the engine broke (traceback in {crash})"
    text = crash.read_text()
    assert "Traceback (most recent call last)" in text and "RuntimeError: the engine broke" in text


def test_an_internal_error_before_a_run_directory_exists_goes_to_a_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from tracejudge.stages.judge import estimate as estimate_mod

    def broken(config: object) -> None:
        raise KeyError("price")

    monkeypatch.setattr(estimate_mod, "estimate", broken)
    cfg = _config(tmp_path)
    cfg.write_text(cfg.read_text().replace("[{type: ToolCorrectness}]", "[{type: ToolCorrectness}, {type: TaskCompletion}]") + "judge: {provider: simulator}\n")
    assert main(["estimate", str(cfg)]) == 3
    err = capsys.readouterr().err.strip()
    m = re.fullmatch(r"internal error: KeyError: 'price' \(traceback in (\S+)\)", err)
    assert m, err
    assert "KeyError" in Path(m.group(1)).read_text()
    Path(m.group(1)).unlink()


def test_help_and_version_document_the_statuses(tmp_path: Path) -> None:
    helped = _tj("--help", cwd=tmp_path)
    assert helped.returncode == 0
    for line in ("0    PASS", "1    FAIL", "2    bad config", "3    a judge, trace store or http target that cannot be reached", "130  interrupted"):
        assert line in helped.stdout
    status_3 = helped.stdout.split("\n  3  ", 1)[1].split("\n  130", 1)[0]
    assert "an internal error" in status_3 and "full disk" in status_3
    version = _tj("--version", cwd=tmp_path)
    assert version.returncode == 0 and re.fullmatch(r"tracejudge \S+\n", version.stdout)


def test_a_folder_given_as_the_dataset_or_output_is_bad_input_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: folder, format: native}\nmetrics: [{type: ToolCorrectness}]\nrun: {dir: run}\n")
    proc = _tj("run", str(cfg), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "internal error" not in proc.stderr and "folder" in proc.stderr
    out = _tj("extract", str(_config(tmp_path)), "-o", str(tmp_path / "missing" / "x.jsonl"), cwd=tmp_path)
    assert out.returncode == 2 and "missing" in out.stderr and "internal error" not in out.stderr


def test_a_run_stopped_before_its_first_result_says_so(simulator, tmp_path: Path) -> None:
    import signal
    import time

    sim = simulator(script=["timeout"], hang_s=60)  # the one judge request hangs
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": "q", "trace": {"steps": [], "output": "a"}}) + "\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: TaskCompletion}]\nrun: {dir: run}\n"
                   f"judge: {{provider: openai, model: gpt-4o-mini, base_url: '{sim.url}/v1', stop_grace_s: 0.2}}\n")
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sim.stats.requests == 0:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "dataset is empty" not in out + err
    assert "interrupted before its first" in " ".join((out + err).split()), out + err
    # The hanging request was cut when the grace ran out: "those under way finished" said the opposite.
    reason = json.loads((tmp_path / "run" / "summary.json").read_text())["stopped"]["reason"]
    assert "1 case under way did not finish within the stop's grace (judge.stop_grace_s) and was cut" in reason, reason
    assert "those under way finished" not in " ".join((out + err).split()), out + err


@pytest.mark.parametrize("text", ["", "\n  \n\n", "[]"])
def test_an_empty_dataset_is_2_naming_the_file(tmp_path: Path, text: str) -> None:
    # It ended "FAIL results: the run has no results" with exit status 1, as if scores had failed.
    data = tmp_path / ("cases.json" if text == "[]" else "cases.jsonl")
    data.write_text(text)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {data.name}, format: {'tau-bench' if text == '[]' else 'native'}}}\nmetrics: [{{type: ToolCalls}}]\nrun: {{dir: run}}\n")
    proc = _tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"dataset.path: {data}: no records in it (an empty file, only blank lines or an empty array)" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_an_empty_datasets_error_names_the_configs_line_or_the_option_as_a_missing_files_does(tmp_path: Path) -> None:
    # A missing file's error said `c.yaml:2: dataset.path: file not found: …`, an empty one's `dataset.path: …` alone
    # (`extract`'s, after `run`'s was located, still did).
    (tmp_path / "empty.jsonl").write_text("")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("metrics: [{type: ToolCalls}]\ndataset: {path: empty.jsonl}\nrun: {dir: run}\n")
    said = f"dataset.path: {tmp_path / 'empty.jsonl'}: no records in it (an empty file, only blank lines or an empty array)"
    for command in (("run", str(cfg), "--no-progress"), ("run", str(cfg), "--no-progress", "--fresh"), ("extract", str(cfg), "-o", "out.jsonl")):
        proc = _tj(*command, cwd=tmp_path)
        assert proc.returncode == 2 and f"{cfg}:2: {said}" in proc.stderr.splitlines(), (command, proc.stderr)
    missing = _tj("run", str(cfg), "--set", "dataset.path=nowhere.jsonl", "--no-progress", cwd=tmp_path)
    assert missing.returncode == 2 and f"--set dataset.path=nowhere.jsonl: dataset.path: file not found: {tmp_path / 'nowhere.jsonl'}" in missing.stderr
    good = tmp_path / "good.yaml"
    good.write_text(f"dataset: {{path: {tmp_path / 'nowhere.jsonl'}}}\nmetrics: [{{type: ToolCalls}}]\nrun: {{dir: run}}\n")
    proc = _tj("run", str(good), "--set", "dataset.path=empty.jsonl", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2 and f"--set dataset.path=empty.jsonl: {said}" in proc.stderr.splitlines(), proc.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("fmt", ["tau-bench", "tau2-bench", "otel", "tau-bench-tasks"])
@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_an_empty_file_of_a_whole_file_format_is_2_naming_the_file(tmp_path: Path, fmt: str, text: str) -> None:
    # A format reading the file as one document said "expected a JSON array" (or an object, or an export) in one
    # invalid_input result, and the run ended with exit status 1.
    data = tmp_path / "data.json"
    data.write_text(text)
    cfg = tmp_path / "c.yaml"
    target = "target: {kind: command, command: [cat]}\n" if fmt == "tau-bench-tasks" else ""
    cfg.write_text(f"dataset: {{path: {data.name}, format: {fmt}}}\n{target}metrics: [{{type: ToolCalls}}]\nrun: {{dir: run}}\n")
    proc = _tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"dataset.path: {data}: no records in it (an empty file, only blank lines or an empty array)" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_a_file_of_no_record_of_its_format_is_2_for_run_and_extract_saying_what_it_holds(tmp_path: Path) -> None:
    # An OTLP export with no span: `run` called it "an empty file, only blank lines or an empty array", and `extract`
    # wrote 0 cases with exit status 0.
    data = tmp_path / "spans.jsonl"
    data.write_text('{"resourceSpans": []}\n')
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {data.name}, format: otel}}\nmetrics: [{{type: MaxToolCalls, max_calls: 2}}]\nrun: {{dir: run}}\n")
    said = f"dataset.path: {data}: format otel reads no record from it; it holds a JSON object with keys resourceSpans"
    proc = _tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2 and said in proc.stderr, proc.stdout + proc.stderr
    proc = _tj("extract", str(cfg), "-o", "-", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.strip() == f"config error\n{cfg}:1: {said}", proc.stderr


@pytest.mark.parametrize("relative", [True, False])
def test_a_symlink_loop_as_dataset_is_2_naming_the_path(tmp_path: Path, relative: bool) -> None:
    (tmp_path / "a.jsonl").symlink_to("b.jsonl")
    (tmp_path / "b.jsonl").symlink_to("a.jsonl")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {'a.jsonl' if relative else tmp_path / 'a.jsonl'}}}\nmetrics: [{{type: ToolCalls}}]\n")
    proc = _tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "internal error" not in proc.stderr
    assert f"{cfg}:1: dataset.path: {tmp_path / 'a.jsonl'} is a symlink loop (too many levels of symbolic links)" in proc.stderr
    over = _tj("run", str(_config(tmp_path)), "--set", "dataset.path=a.jsonl", "--no-progress", cwd=tmp_path)
    assert over.returncode == 2 and "is a symlink loop" in over.stderr and "internal error" not in over.stderr


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_a_negative_progress_interval_is_refused(tmp_path: Path, value: str) -> None:
    proc = _tj("run", str(_config(tmp_path)), "--progress-every", value, cwd=tmp_path)
    assert proc.returncode == 2 and f"argument --progress-every: expected 0 or more seconds, got '{value}'" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_progress_every_0_logs_a_line_per_result_and_the_closing_one(tmp_path: Path) -> None:
    proc = _tj("run", str(_config(tmp_path)), "--progress-every", "0", cwd=tmp_path)
    events = [json.loads(line)["event"] for line in proc.stderr.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and "progress" in events and events[-1] == "progress_done"


def test_a_refused_dataset_under_fresh_leaves_no_new_directory(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    assert _tj("run", str(cfg), "--no-progress", cwd=tmp_path).returncode == 0
    (tmp_path / "cases.jsonl").write_text("")
    proc = _tj("run", str(cfg), "--no-progress", "--fresh", cwd=tmp_path)
    assert proc.returncode == 2 and "no records in it" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("run")) == ["run"]  # no empty run-2 behind


_RAISING_METRIC = """
import tracejudge

@tracejudge.metric
def interrupts(case, trace):
    raise {raised}
"""


@pytest.mark.parametrize("raised", ["KeyboardInterrupt()", "BaseExceptionGroup('x', [KeyboardInterrupt()])"])
def test_a_metric_raising_keyboard_interrupt_is_130_even_inside_an_exception_group(tmp_path: Path, raised: str) -> None:
    # A metric that runs things in a task group of its own hands its KeyboardInterrupt on wrapped in a group:
    # that is the same interrupt, not a crash of the tool. (In the head, processes 1, where a Ctrl-C arrives: a worker
    # process ignores SIGINT, so there the interrupt can only be the metric's, and is counted as raised, test_metric_faults.)
    (tmp_path / "interrupting.py").write_text(_RAISING_METRIC.format(raised=raised))
    cfg = _config(tmp_path)
    cfg.write_text(cfg.read_text().replace("{type: ToolCorrectness}", '{type: "interrupting:interrupts"}').replace(
        "assertions: {metrics: {ToolCorrectness: {min_mean: 0.5}}}\n", "").replace("run: {dir: run}", "run: {dir: run, processes: 1}"))
    proc = _tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "interrupted", proc.stderr
    assert "internal error" not in proc.stderr and not (tmp_path / "run" / "crash.log").exists()


_INTERRUPTS_ON_ONE = """
import tracejudge

@tracejudge.metric
def interrupts(case, trace):
    if case.id == "c5":
        raise BaseExceptionGroup("mine", [{raised}])
    return 1.0
"""


@pytest.mark.parametrize("raised", ["KeyboardInterrupt()", "ValueError('v'), KeyboardInterrupt()"])
def test_a_grouped_keyboard_interrupt_on_one_case_of_many_in_process_is_130(tmp_path: Path, raised: str) -> None:
    # In-process, the interrupt ends the flow while its loader still sends: the group that reaches the command
    # holds that loader's BrokenResourceError beside the interrupt, which is the interrupt's doing, not a crash.
    (tmp_path / "interrupting.py").write_text(_INTERRUPTS_ON_ONE.format(raised=raised))
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({**CASE, "id": f"c{i}"}) + "\n" for i in range(300)))
    (tmp_path / "c.yaml").write_text('dataset: {path: cases.jsonl}\nmetrics: [{type: "interrupting:interrupts"}]\n'
                                     "run: {dir: run, processes: 1}\n")
    proc = _tj("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "interrupted", proc.stderr
    assert "internal error" not in proc.stderr and not (tmp_path / "run" / "crash.log").exists()


def test_a_metric_raising_keyboard_interrupt_leaves_no_traceback_of_the_tasks_it_stopped(tmp_path: Path) -> None:
    # The interrupt leaves the event loop at once; the run's tasks it stopped end as asyncio.run shuts down, and
    # asyncio printed each one's exception (a traceback of a hundred lines) before the one line `interrupted`.
    (tmp_path / "interrupting.py").write_text(_INTERRUPTS_ON_ONE.replace('BaseExceptionGroup("mine", [{raised}])', "KeyboardInterrupt()"))
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({**CASE, "id": f"c{i}"}) + "\n" for i in range(300)))
    (tmp_path / "c.yaml").write_text('dataset: {path: cases.jsonl}\nmetrics: [{type: "interrupting:interrupts"}]\n'
                                     "run: {dir: run, processes: 1}\n")
    proc = _tj("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines() == ["interrupted"], proc.stderr


_SLOW_METRIC = """
import pathlib, time
import tracejudge

@tracejudge.metric
def slow(case, trace):
    pathlib.Path("scoring").write_text(case.id)
    time.sleep(1.5)
    return 1.0
"""


def test_a_run_stopped_with_every_result_written_is_finished_by_the_resume_it_asks_for(tmp_path: Path) -> None:
    import signal
    import time

    # SIGTERM while the only case is being scored: the case finishes and is written, the segment ends interrupted.
    (tmp_path / "slowmetric.py").write_text(_SLOW_METRIC)
    cfg = _config(tmp_path)
    cfg.write_text(cfg.read_text().replace("{type: ToolCorrectness}", '{type: "slowmetric:slow"}').replace(
        "assertions: {metrics: {ToolCorrectness: {min_mean: 0.5}}}\n", "run: {dir: run, processes: 1}\n").replace("run: {dir: run}\n", "", 1))
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (tmp_path / "scoring").exists():
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 1
    stopped = _tj("report", "run", cwd=tmp_path)
    assert "INTERRUPTED" in stopped.stdout, stopped.stdout

    # The resume the report asks for has nothing left to do: it records that the run finished, so the report stops
    # calling it interrupted (before, it kept giving the same resume command, which changed nothing).
    again = _tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert again.returncode == 0 and "(0 new results, 1 already finished)" in again.stdout, again.stdout + again.stderr
    segments = json.loads((tmp_path / "run" / "checkpoint.json").read_text())["segments"]
    assert [(s["ended"], s["results"]) for s in segments] == [("interrupted", 1), ("finished", 0)]
    report = _tj("report", "run", cwd=tmp_path)
    assert report.returncode == 0 and "INTERRUPTED" not in report.stdout, report.stdout
    # A finished run resumed again still changes no file.
    before = (tmp_path / "run" / "checkpoint.json").read_bytes()
    assert _tj("run", str(cfg), "--no-progress", cwd=tmp_path).returncode == 0
    assert (tmp_path / "run" / "checkpoint.json").read_bytes() == before


_WRAPPED_INTERRUPT = """
import os, signal, sys, time
sys.argv = ["tracejudge", "report", "nowhere"]
from tracejudge.entrypoints import cli, launch

def dispatch(args, err):
    # As pydantic-core does when a Ctrl-C lands while it builds a model class on import: the KeyboardInterrupt is
    # caught and its own error raised in its place, the interrupt only named in the message.
    try:
        if {signalled}:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
    except KeyboardInterrupt:
        raise RuntimeError("Error building `model` serializer: KeyboardInterrupt: ") from None
    raise RuntimeError("a real bug")

cli._dispatch = dispatch
launch.console_main()
"""


@pytest.mark.parametrize("signalled", [True, False])
def test_a_ctrl_c_a_library_turned_into_its_own_error_during_start_up_is_130_not_a_crash(tmp_path: Path, signalled: bool) -> None:
    proc = _forkserver.run([sys.executable, "-c", _WRAPPED_INTERRUPT.format(signalled=signalled)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    if signalled:
        assert proc.returncode == 130 and proc.stderr.strip().splitlines()[-1] == "interrupted", proc.stderr
        assert "internal error" not in proc.stderr
    else:  # the same error with no Ctrl-C is the tool's own fault: exit 3, as ever
        assert proc.returncode == 3 and "internal error: RuntimeError: a real bug" in proc.stderr, proc.stderr
