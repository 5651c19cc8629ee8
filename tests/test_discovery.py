"""Discovery: `tracejudge init` starter configs run as written, `list`, `explain`, and every subcommand's --help shows an example."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tracejudge.core import registry
from tracejudge.entrypoints.cli import _parser, main
from tracejudge.entrypoints.starter import FORMATS
import _forkserver

TRACE = {"steps": [{"tool_calls": [{"name": "search", "arguments": {"q": "flights"}}, {"name": "book", "arguments": {"id": 7}}]}], "output": "Booked."}
EXPECTED = [{"name": "search", "arguments": {"q": "flights"}}, {"name": "book", "arguments": {"id": 7}}]
OPENAI = [{"role": "user", "content": "book it"},
          {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "search", "arguments": '{"q": "flights"}'}}]},
          {"role": "tool", "tool_call_id": "a", "content": "found 7"},
          {"role": "assistant", "tool_calls": [{"id": "b", "type": "function", "function": {"name": "book", "arguments": '{"id": 7}'}}]},
          {"role": "tool", "tool_call_id": "b", "content": "ok"}, {"role": "assistant", "content": "Booked."}]
ANTHROPIC = [{"role": "user", "content": "book it"},
             {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "search", "input": {"q": "flights"}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "found 7"}]},
             {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "book", "input": {"id": 7}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "ok"}]}]

# A small sample per format without real data beside the repository (the shape the starter's comments describe).
SAMPLES = {
    "native": [{"id": f"c{i}", "input": "book it", "trace": TRACE, "expected_tool_calls": EXPECTED} for i in range(3)],
    "openai-messages": [{"id": f"c{i}", "messages": OPENAI, "expected_tool_calls": EXPECTED} for i in range(3)],
    "anthropic-messages": [{"id": f"c{i}", "messages": ANTHROPIC, "expected_tool_calls": EXPECTED} for i in range(3)],
    "multivon": [{"input": "book it", "agent_trace": [{"tool_calls": [{"name": "search", "arguments": {"q": "flights"}}]},
                                                      {"tool_calls": [{"name": "book", "arguments": {"id": 7}}], "output": "Booked."}],
                  "expected_tool_calls": ["search", "book"]}] * 3,
    "json-path": [{"run_id": f"r{i}", "question": "book it", "answer": "Booked.",
                   "steps": [{"calls": [{"tool": "search", "args": {"q": "flights"}, "output": "found 7"}]}, {"calls": [{"tool": "book", "args": {"id": 7}}]}],
                   "gold": EXPECTED} for i in range(3)],
}

_FN = [{"id": "a", "type": "function", "function": {"name": "search", "arguments": '{"q": "flights"}'}}]
_SPAN = {"status": {"code": "STATUS_CODE_OK"}, "events": []}
SAMPLES.update({
    "smolagents": [{"id": f"r{i}", "steps": [{"task": "book it"}, {"step_number": 1, "tool_calls": _FN, "observations": "found 7", "error": None},
                                             {"step_number": 2, "tool_calls": [{"id": "b", "function": {"name": "final_answer", "arguments": {"answer": "Booked."}}}]}]}
                   for i in range(3)],
    "openai-agents": [{"trace": {"object": "trace", "id": f"trace_{i}"}, "spans": [
        {"object": "trace.span", "id": "s1", "trace_id": f"trace_{i}", "started_at": "2026-01-01T00:00:01+00:00",
         "span_data": {"type": "generation", "input": [{"role": "user", "content": "book it"}], "output": [{"role": "assistant", "tool_calls": _FN}]}},
        {"object": "trace.span", "id": "s2", "trace_id": f"trace_{i}", "started_at": "2026-01-01T00:00:02+00:00",
         "span_data": {"type": "function", "name": "search", "input": '{"q": "flights"}', "output": "found 7"}}]} for i in range(3)],
    "langfuse": [{"id": f"t{i}", "input": "book it", "output": "Booked.", "observations": [
        {"id": "g", "type": "GENERATION", "startTime": "2026-01-01T00:00:01Z", "input": [{"role": "user", "content": "book it"}],
         "output": {"role": "assistant", "tool_calls": _FN}},
        {"id": "t", "type": "TOOL", "name": "search", "startTime": "2026-01-01T00:00:02Z", "input": {"q": "flights"}, "output": "found 7"}]}
        for i in range(3)],
    "mlflow": [{"info": {"trace_id": f"tr-{i}"}, "data": {"spans": [
        {"span_id": "r", "name": "agent", "start_time_unix_nano": 1, **_SPAN,
         "attributes": {"mlflow.spanType": '"AGENT"', "mlflow.spanInputs": '{"question": "book it"}', "mlflow.spanOutputs": '"Booked."'}},
        {"span_id": "m", "parent_span_id": "r", "name": "chat", "start_time_unix_nano": 2, **_SPAN,
         "attributes": {"mlflow.spanType": '"CHAT_MODEL"', "mlflow.spanOutputs": json.dumps({"choices": [{"message": {"role": "assistant", "tool_calls": _FN}}]})}},
        {"span_id": "t", "parent_span_id": "r", "name": "search", "start_time_unix_nano": 3, **_SPAN,
         "attributes": {"mlflow.spanType": '"TOOL"', "mlflow.spanInputs": '{"q": "flights"}', "mlflow.spanOutputs": '"found 7"'}}]}}
        for i in range(3)],
})


def _real(fmt: str, data: Path) -> list[str]:
    # The real traces beside the repository, given to `init` as the user would.
    if fmt == "tau-bench":
        return ["--dataset", str(data / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"),
                "--tasks", str(data / "tau_bench" / "tasks" / "tasks_airline_test.json")]
    if fmt == "tau2-bench":
        return ["--dataset", str(data / "tau2_bench" / "model_training_results" / "gpt-4.1_airline_default_gpt-4.1_1trials.json")]
    if fmt == "inspect":  # (inspect-ai's own logs, recorded by tests/frameworks/record_inspect.py)
        return ["--dataset", str(Path(__file__).parent / "data" / "inspect" / "weather-tools.eval")]
    assert fmt == "otel"
    return ["--dataset", str(data / "otel_genai" / "hand")]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_each_starter_config_runs_as_written(fmt: str, tmp_path: Path, data_dir: Path, capsys, monkeypatch) -> None:
    work = tmp_path / "project"
    work.mkdir()
    monkeypatch.chdir(work)  # init names the run directory runs/NAME of the folder it runs in
    cfg = work / "configs" / "starter.yaml"
    if fmt in SAMPLES:
        data = work / "data.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in SAMPLES[fmt]))
        given = ["--dataset", str(data)]
    else:
        given = _real(fmt, data_dir)
    assert main(["init", "--format", fmt, *given, "-o", str(cfg)]) == 0
    text = cfg.read_text()
    assert text.startswith(f"# tracejudge starter config for format `{fmt}`") and "assertions:" in text and "runs/starter" in text
    if fmt in SAMPLES:  # given absolute, outside the config's folder: kept absolute, not `../data.jsonl`
        assert f"path: {data}" in text.split("dataset:")[1]
    assert main(["run", str(cfg), "--no-progress"]) == 0, capsys.readouterr()
    summary = json.loads((work / "runs" / "starter" / "summary.json").read_text())
    assert summary["results"] > 0 and summary["status"].get("ok", 0) == summary["results"]
    assert all(m["scored"] > 0 for m in summary["metrics"].values()), summary["metrics"]
    # A second init does not overwrite the file.
    assert main(["init", "--format", fmt, "-o", str(cfg)]) == 2
    assert f"{cfg} exists" in capsys.readouterr().err


def test_init_without_a_dataset_writes_a_placeholder_and_says_so(tmp_path: Path, capsys) -> None:
    assert main(["init", "-o", str(tmp_path / "tracejudge.yaml")]) == 0
    assert "path: cases.jsonl" in (tmp_path / "tracejudge.yaml").read_text()
    assert "point dataset.path at your data first" in capsys.readouterr().err


def test_list_metrics_and_formats_give_one_line_each(tmp_path: Path) -> None:
    metrics = _forkserver.run([sys.executable, "-m", "tracejudge", "list", "metrics"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert metrics.returncode == 0
    lines = {line.split()[0]: line for line in metrics.stdout.splitlines() if line and not line.startswith("[judge]")}
    assert set(registry.metric_types()) == set(lines)
    assert "[judge] Does the final output do what the user asked?" in lines["TaskCompletion"]
    assert "[judge]" not in lines["ToolCalls"] and "Pair expected calls" in lines["ToolCalls"]
    formats = _forkserver.run([sys.executable, "-m", "tracejudge", "list", "formats"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    rows = dict(line.split(None, 1) for line in formats.stdout.splitlines())
    # (This process's registry also holds user adapters other tests used, `module:attribute` names; a fresh one has none.)
    built_in = {name for name in registry.formats() if ":" not in name}
    assert set(rows) == built_in and rows["otel"].startswith("OTLP/JSON traces")


def test_explain_prints_the_docstring_and_options(capsys) -> None:
    assert main(["explain", "DeepEvalToolCorrectness"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("DeepEvalToolCorrectness — deterministic") and "deepeval" in out
    assert "should_consider_ordering: bool = False" in out
    assert main(["explain", "rubric"]) == 0  # any case
    assert capsys.readouterr().out.startswith("Rubric — LLM judge")
    assert main(["explain", "ToolCall"]) == 2
    assert capsys.readouterr().err.strip() == "error: no metric type 'ToolCall'; did you mean ToolCalls, tool-call-f1, MaxToolCalls?"


def test_every_subcommand_help_describes_its_arguments_with_an_example() -> None:
    sub = next(a for a in _parser()._actions if a.dest == "command")
    for name, parser in sub.choices.items():  # type: ignore[union-attr]
        text = parser.format_help()
        assert "examples:\n  tracejudge " + name in text, name
        for action in parser._actions:
            if action.dest != "help":
                assert action.help, f"{name} {action.option_strings or action.dest}: no help text"


def test_readme_init_example_writes_a_run_that_view_finds_from_the_same_folder(tmp_path: Path, monkeypatch) -> None:
    import subprocess
    import sys

    from tracejudge.viewer.runs import viewer_paths

    (tmp_path / "chats.jsonl").write_text('{"id": "c1", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}\n')
    for argv in (["init", "--format", "openai-messages", "--dataset", "chats.jsonl", "-o", "configs/chats.yaml"], ["run", "configs/chats.yaml", "--no-progress"]):
        proc = _forkserver.run([sys.executable, "-m", "tracejudge", *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode in (0, 1), proc.stderr
    assert "dir: ../runs/chats " in (tmp_path / "configs" / "chats.yaml").read_text()
    assert [p.name for p in viewer_paths([], tmp_path)] == ["chats"]  # `tracejudge view` in that folder serves it
    # So does `tracejudge view runs/` from there, or the folder of runs named from anywhere (it was "not a run directory").
    monkeypatch.chdir(tmp_path)
    assert viewer_paths([Path("runs")], tmp_path) == [Path("runs") / "chats"]
    assert viewer_paths([tmp_path / "runs"], Path("/")) == [tmp_path / "runs" / "chats"]
    assert viewer_paths([tmp_path / "runs" / "chats"], Path("/")) == [tmp_path / "runs" / "chats"]  # a run stands for itself
    assert viewer_paths([tmp_path / "configs"], Path("/")) == [tmp_path / "configs"]  # no run in it: left to be refused


def test_init_tau_bench_without_tasks_finds_them_beside_the_trajectories_or_uses_each_runs_own(tmp_path: Path, data_dir: Path, capsys,
                                                                                                monkeypatch) -> None:
    # It wrote `tasks: tasks_airline_test.json` beside the config, a file that was not there: the run was a config error.
    monkeypatch.chdir(tmp_path)
    runs = data_dir / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"
    assert main(["init", "--format", "tau-bench", "--dataset", str(runs), "-o", "beside.yaml"]) == 0
    tasks = data_dir / "tau_bench" / "tasks" / "tasks_airline_test.json"
    assert f"tasks: {tasks}, found where the trajectory file's layout puts it" in capsys.readouterr().err
    assert main(["run", "beside.yaml", "--no-progress", "--set", "dataset.limit=8"]) == 0
    # (resolved on both sides: the config holds the path as given, absolute, which a symlinked data folder keeps)
    assert Path(json.loads((tmp_path / "runs" / "beside" / "manifest.json").read_text())["dataset"]["tasks"]["path"]).resolve() == tasks.resolve()

    alone = tmp_path / "data" / "gpt-4o-airline.json"  # no tasks folder beside it
    alone.parent.mkdir()
    alone.write_text(json.dumps(json.loads(runs.read_text())[:8]))
    capsys.readouterr()
    assert main(["init", "--format", "tau-bench", "--dataset", str(alone), "-o", "alone.yaml"]) == 0
    assert "no --tasks, none found beside the dataset: each run's own task (info.task) gives its expected actions" in capsys.readouterr().err
    assert "  # tasks: " in (tmp_path / "alone.yaml").read_text()
    assert main(["run", "alone.yaml", "--no-progress"]) == 0
    summary = json.loads((tmp_path / "runs" / "alone" / "summary.json").read_text())
    assert summary["status"] == {"ok": 8} and summary["metrics"]["actions_exact"]["scored"] == 8


def test_init_keeps_an_absolute_path_outside_the_config_folder_absolute_and_others_relative(tmp_path: Path, monkeypatch) -> None:
    # `--dataset /abs/…` from a config a few folders down was written `../../../…/data.jsonl`.
    data = tmp_path / "shared" / "data.jsonl"
    inside = tmp_path / "proj" / "configs" / "deep" / "data" / "in.jsonl"
    for path in (data, inside):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(SAMPLES["native"][0]) + "\n")
    monkeypatch.chdir(tmp_path / "proj")
    written = {}
    for name, given in (("abs", str(data)), ("inside", str(inside)), ("rel", "../shared/data.jsonl")):
        assert main(["init", "--dataset", given, "-o", f"configs/deep/{name}.yaml"]) == 0
        written[name] = (tmp_path / "proj" / "configs" / "deep" / f"{name}.yaml").read_text().split("path: ", 1)[1].split()[0]
    assert written == {"abs": str(data), "inside": "data/in.jsonl", "rel": "../../../shared/data.jsonl"}
    assert main(["run", "configs/deep/abs.yaml", "--no-progress"]) == 0


def test_init_prints_a_run_command_a_shell_takes_for_a_path_with_spaces(tmp_path: Path, capsys) -> None:
    # `tracejudge run /tmp/my data/otel conf.yaml`, pasted, was three arguments (exit 2).
    cfg = tmp_path / "my data" / "otel conf.yaml"
    assert main(["init", "-o", str(cfg)]) == 0
    said = capsys.readouterr().err
    command = said.split("run it with: ", 1)[1].strip()
    assert shlex.split(command) == ["tracejudge", "run", str(cfg)], said
    header = next(line for line in cfg.read_text().splitlines() if "Run it with:" in line)
    assert shlex.split(header.split("Run it with:", 1)[1]) == ["tracejudge", "run", str(cfg)], header


def test_init_refuses_a_folder_where_the_format_reads_one_file(tmp_path: Path, data_dir: Path, capsys) -> None:
    # It wrote the folder into the config and said "run it with: …"; that run was then a config error.
    folder = data_dir / "tau2_bench" / "domains"
    for argv in (["--format", "tau2-bench", "--dataset", str(folder)], ["--format", "native", "--dataset", str(tmp_path)],
                 ["--format", "tau-bench", "--dataset", str(data_dir / "tau_bench" / "historical_trajectories" / "gpt-4o-airline.json"),
                  "--tasks", str(folder)]):
        out = tmp_path / "cfg.yaml"
        assert main(["init", *argv, "-o", str(out)]) == 2, argv
        flag, path = argv[-2:]
        why = ("is a folder without results.json and simulations/; format 'tau2-bench' reads one file, or a folder holding "
               "results.json and simulations/") if argv[1] == "tau2-bench" \
            else f"is a folder; format {argv[1]!r} reads one file"
        assert capsys.readouterr().err.strip() == f"error: {flag} {path}: {why}: name the file"
        assert not out.exists()
    # A format that reads folders still takes one.
    otel = data_dir / "otel_genai" / "hand"
    assert main(["init", "--format", "otel", "--dataset", str(otel), "-o", str(tmp_path / "otel.yaml")]) == 0
    # τ²-bench's dir layout (results.json beside simulations/) is a folder it reads; one without results.json was
    # written into the config, and its first run was a config error ("no records in it").
    layout = tmp_path / "experiment"
    (layout / "simulations").mkdir(parents=True)
    capsys.readouterr()
    assert main(["init", "--format", "tau2-bench", "--dataset", str(layout), "-o", str(tmp_path / "t2.yaml")]) == 2
    assert capsys.readouterr().err.strip() == (f"error: --dataset {layout}: is a folder without results.json; format 'tau2-bench' reads "
                                               "one file, or a folder holding results.json and simulations/: name the file")
    assert not (tmp_path / "t2.yaml").exists()
    (layout / "results.json").write_text('{"tasks": [], "simulations": []}')
    assert main(["init", "--format", "tau2-bench", "--dataset", str(layout), "-o", str(tmp_path / "t2.yaml")]) == 0


def test_a_mistyped_option_is_refused_by_its_command_naming_the_nearest(capsys) -> None:
    # It was refused by the top-level parser: its usage listed the commands, and nothing said `--set` was meant.
    with pytest.raises(SystemExit) as stop:
        main(["run", "eval.yaml", "--sett", "run.trials=2"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: tracejudge run "), err
    assert err.rstrip().endswith("tracejudge run: error: unrecognized arguments: --sett run.trials=2 (--sett: did you mean --set?)"), err
    with pytest.raises(SystemExit):
        main(["report", "runs/demo", "--baseine=runs/x", "stray"])
    err = capsys.readouterr().err
    assert "tracejudge report: error: unrecognized arguments: --baseine=runs/x stray (--baseine: did you mean --baseline?)" in err, err


def test_init_writes_the_judge_cache_of_the_folder_it_ran_in(tmp_path: Path, monkeypatch) -> None:
    # Left to its default, the cache was `.tracejudge/cache` of whatever folder a run started in: the same config run
    # from its own folder asked the judge again for every answer already paid for (and `estimate` priced it so).
    from tracejudge.core.config import load_config

    (tmp_path / "chats.jsonl").write_text('{"id": "c1", "messages": [{"role": "user", "content": "hi"}]}\n')
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--format", "openai-messages", "--dataset", "chats.jsonl", "-o", "configs/chats.yaml"]) == 0
    monkeypatch.chdir(tmp_path / "configs")
    assert Path(load_config(Path("chats.yaml")).cache.dir).resolve() == (tmp_path / ".tracejudge" / "cache").resolve()


@pytest.mark.parametrize(("argv", "says"), [
    (["list", "metric"], "tracejudge list: error: argument what: invalid choice: 'metric'; did you mean metrics? (choose from 'metrics', 'formats')"),
    (["rn", "eval.yaml"], "tracejudge: error: argument command: invalid choice: 'rn'; did you mean run? (choose from 'run', "),
    (["list", "zzz"], "tracejudge list: error: argument what: invalid choice: 'zzz' (choose from 'metrics', 'formats')"),
])
def test_a_mistyped_choice_names_the_nearest(argv: list[str], says: str, capsys) -> None:
    # Python 3.11's argparse lists the choices and suggests none: `tracejudge list metric` was "invalid choice" alone.
    with pytest.raises(SystemExit):
        main(argv)
    assert says in capsys.readouterr().err
