"""Config mistakes a new user makes are config errors (exit 2) naming the file and key, found before a run directory exists.

Real CLI processes on real files, as a user runs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import _forkserver

CASE = {"id": "c1", "input": "Book a flight", "trace": {"steps": [], "output": "done"}}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], capture_output=True, text=True, cwd=cwd, timeout=120, env=dict(os.environ))


def config_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("config error"), proc.stderr
    return proc.stderr


def write(tmp_path: Path, body: str) -> Path:
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\n" + body)
    return cfg


@pytest.mark.parametrize("judge", ["{model: gpt-4o-mini}", "{}", '{model: "foo:bar"}', '{model: "openai/gpt-4o-mini"}'])
def test_a_judge_without_provider_is_refused_not_simulated(tmp_path: Path, judge: str) -> None:
    cfg = write(tmp_path, f"metrics: [{{type: TaskCompletion}}]\njudge: {judge}\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f"{cfg}:3: judge.provider:" in err
    if "foo:bar" in judge:
        assert "unknown provider 'foo'" in err and "simulator, openai, anthropic" in err
    else:
        assert "provider: simulator" in err and "openai:" in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("judge", ['{model: "openai:"}', '{provider: openai, model: ""}', '{provider: simulator, model: "  "}'])
def test_a_judge_model_that_names_no_model_is_refused(tmp_path: Path, judge: str) -> None:
    cfg = write(tmp_path, f"metrics: [{{type: TaskCompletion}}]\njudge: {judge}\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f"{cfg}:3: judge.model:" in err and "names no model" in err
    assert not (tmp_path / "runs").exists()


def test_no_judge_section_with_a_judge_metric_is_refused(tmp_path: Path) -> None:
    cfg = write(tmp_path, "metrics: [{type: TaskCompletion}]\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f"{cfg}:2: metrics.0.type:" in err and "judge:" in err


def test_provider_prefix_is_case_insensitive_and_no_judge_metric_needs_no_judge(tmp_path: Path) -> None:
    # `OpenAI:` names the provider (a missing key is then the only complaint: the judge is real, not the simulator).
    cfg = write(tmp_path, 'metrics: [{type: TaskCompletion}]\njudge: {model: "OpenAI:gpt-4o-mini", api_key_env: TJ_TEST_UNSET_KEY}\n')
    proc = cli("run", str(cfg), cwd=tmp_path)
    assert proc.returncode == 2 and "TJ_TEST_UNSET_KEY" in proc.stderr and "judge.provider" not in proc.stderr, proc.stderr
    cfg = write(tmp_path, "metrics: [{type: ToolCalls}]\n")
    proc = cli("run", str(cfg), cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert (tmp_path / "runs" / "eval" / "results.jsonl").exists()


@pytest.mark.parametrize("kind", ["recursive", "utf16", "binary"])
def test_a_recursive_or_non_utf8_config_is_a_config_error(tmp_path: Path, kind: str) -> None:
    cfg = tmp_path / "eval.yaml"
    text = "dataset: &a {path: x, y: *a}\nmetrics: [{type: ToolCalls}]\n"
    if kind == "recursive":
        cfg.write_text(text)
    elif kind == "utf16":
        cfg.write_text("dataset: {path: x}\n", encoding="utf-16")
    else:
        cfg.write_bytes(bytes(range(128, 256)))
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert str(cfg) in err
    assert ("dataset" in err and "recurse" in err) if kind == "recursive" else "UTF-8" in err


def test_dataset_path_that_is_a_directory_is_refused_before_the_run_directory(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("dataset: {path: traces}\nmetrics: [{type: ToolCalls}]\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f"{cfg}:1: dataset.path:" in err and "is a directory" in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_dataset_path_that_is_no_regular_file_is_refused_before_the_run_directory(tmp_path: Path, special: str) -> None:
    # A FIFO blocked the run for ever (deaf to SIGTERM); /dev/zero read without end after creating the run directory.
    if special == "fifo":
        path = tmp_path / "traces.jsonl"
        os.mkfifo(path)
        kind = "is a FIFO (named pipe), not a regular file"
    else:
        path, kind = Path(special), "is a character device, not a regular file"
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(f"dataset: {{path: {path}}}\nmetrics: [{{type: ToolCalls}}]\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert err.splitlines()[1:] == [f"{cfg}:1: dataset.path: {path} {kind}"]
    assert not (tmp_path / "runs").exists()


def test_a_number_or_a_word_where_true_or_false_goes_is_a_config_error(tmp_path: Path) -> None:
    # Lax mode read `ignore_case: 0`, `allow_extra: "no"` and `enabled: 1` as bools, silently.
    cfg = write(tmp_path, "metrics: [{type: ToolCorrectness, allow_extra: 0}, {type: includes, ignore_case: 'no'}]\n"
                          "cache: {enabled: 1}\n")
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert any("metrics.0.allow_extra: ToolCorrectness: Input should be true or false (got 0)" in line for line in lines), lines
    assert any("metrics.1.ignore_case: includes: Input should be true or false (got 'no')" in line for line in lines), lines
    assert any("cache.enabled: Input should be true or false (got 1)" in line for line in lines), lines
    cfg = write(tmp_path, "metrics: [{type: ToolCorrectness, allow_extra: false}, {type: includes, ignore_case: true}]\ncache: {enabled: false}\n")
    assert "config error" not in cli("run", str(cfg), cwd=tmp_path).stderr


def test_true_or_false_where_a_number_goes_is_a_config_error_at_any_depth(tmp_path: Path) -> None:
    # pydantic's lax mode took `true` as 1: `--set run.trials=true` ran one trial, `threshold: false` passed everything.
    cfg = write(tmp_path, "metrics: [{type: ToolCalls, threshold: false}]\nlimits: {rpm: true}\n"
                          "assertions: {metrics: {ToolCalls: {min_mean: true}}}\ncache: {enabled: false}\n")
    lines = config_error(cli("run", str(cfg), "--set", "run.trials=true", cwd=tmp_path)).splitlines()[1:]
    assert "--set run.trials=true: run.trials: Input should be a number, not a boolean (got true)" in lines, lines
    for key in ("limits.rpm", "assertions.metrics.ToolCalls.min_mean"):
        assert any(f": {key}: " in line and "not a boolean" in line for line in lines), (key, lines)
    assert not any("cache.enabled" in line for line in lines)  # a real bool still is one
    err = config_error(cli("run", str(cfg), "--set", "limits={}", "--set", "assertions={}", cwd=tmp_path))
    assert ":2: metrics.0.threshold: ToolCalls: Input should be a number, not a boolean" in err, err
    assert not (tmp_path / "runs").exists()


def test_nan_or_infinity_where_a_number_goes_says_so_not_a_bound_it_failed(tmp_path: Path) -> None:
    # `threshold: .nan` said "Input should be less than or equal to 1", and an infinity passed a lower bound alone
    # (`judge.timeout_s: .inf`, `budget.max_cost_usd: .inf`, `--set …=inf`).
    cfg = write(tmp_path, "metrics:\n  - {type: Regex, pattern: a, threshold: .nan}\n  - {type: ToolCalls, threshold: -.inf}\n"
                          "judge: {provider: simulator, model: x, timeout_s: .inf}\n")
    lines = config_error(cli("run", str(cfg), "--set", "budget.max_cost_usd=inf", cwd=tmp_path)).splitlines()[1:]
    assert lines == [f"{cfg}:3: metrics.0.threshold: Regex: Input should be a number, not NaN (not a number)",
                     f"{cfg}:4: metrics.1.threshold: ToolCalls: Input should be a finite number, not -infinity",
                     f"{cfg}:5: judge.timeout_s: Input should be a finite number, not infinity (got Infinity)",
                     '--set budget.max_cost_usd=inf: budget.max_cost_usd: Input should be a finite number, not infinity (got "inf")'], lines
    assert not (tmp_path / "runs").exists()


def test_a_typo_of_a_metric_spec_s_required_key_names_the_typo(tmp_path: Path) -> None:
    # `{tpe: …}` was reported as "required key `type` is missing", `{metrc: …}` as "required parameter is missing".
    cfg = write(tmp_path, "metrics:\n  - {type: ToolCalls}\n  - {tpe: TrajectoryMatch}\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f"{cfg}:4: metrics.1.tpe: unknown key `tpe`; did you mean type? (required key `type` is missing)" in err, err
    cfg = write(tmp_path, "metrics:\n  - {type: ToolCalls}\n  - {type: PassAtK, metrc: ToolCalls, k: 2}\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert "metrics.1.metrc: PassAtK: unknown key `metrc`; did you mean metric? (required key `metric` is missing)" in err, err


@pytest.mark.parametrize(("fmt", "record"), [
    ("tau-bench-tasks", [{"task_index": 0, "instruction": "hi", "actions": []}]),
    ("bfcl", {"id": "simple_0", "question": [[{"role": "user", "content": "hi"}]]}),
])
def test_a_format_without_traces_is_refused_without_a_target(tmp_path: Path, fmt: str, record: object) -> None:
    # Tasks and questions carry no trace: without a target every case ended invalid_input after the whole run.
    (tmp_path / "tasks.json").write_text(json.dumps(record) + "\n")
    (tmp_path / "possible_answer").mkdir()
    (tmp_path / "possible_answer" / "tasks.json").write_text(json.dumps({"id": "simple_0", "ground_truth": []}) + "\n")
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(f"metrics: [{{type: ToolCalls}}]\ndataset:\n  path: tasks.json\n  format: {fmt}\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f"{cfg}:4: dataset.format: {fmt} lists tasks, not runs: it needs a target" in err
    assert not (tmp_path / "runs").exists()
    # Converting them needs no target: extract writes the questions out as native cases.
    got = cli("extract", str(cfg), "-o", str(tmp_path / "cases.jsonl"), cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert len((tmp_path / "cases.jsonl").read_text().splitlines()) == 1


def test_a_bad_set_option_is_named_not_the_config_file(tmp_path: Path) -> None:
    # The file is fine: each message names the --set option as typed, and no line of the file.
    cfg = write(tmp_path, "metrics: [{type: ToolCalls}]\nrun: {processes: 2}\njudge: {provider: openai, model: gpt-4o-mini}\n")
    sets = ["run.processes=abc", "run.nokey=1", "judge.model=anthropic:x"]
    lines = config_error(cli("run", str(cfg), *[a for s in sets for a in ("--set", s)], cwd=tmp_path)).splitlines()[1:]
    assert any(line.startswith("--set run.processes=abc: run.processes: Input should be a valid integer") for line in lines), lines
    assert "--set run.nokey=1: run.nokey: unknown key" in lines
    # A whole-section check (the judge's provider against its model) names the option that changed the section.
    assert any(line.startswith(f"{cfg}:4: judge:") and line.endswith("(with --set judge.model=anthropic:x)") for line in lines), lines
    err = config_error(cli("run", str(cfg), "--set", "metrics.0.type=Bogus", cwd=tmp_path))
    assert "\n--set metrics.0.type=Bogus: metrics.0.type: unknown metric type 'Bogus'" in err
    err = config_error(cli("run", str(cfg), "--set", "judge.model=foo:bar", "--set", "judge.provider=null", cwd=tmp_path))
    assert "\n--set judge.model=foo:bar: judge.model: model 'foo:bar' names unknown provider 'foo'" in err


def test_a_set_type_that_the_files_other_keys_no_longer_fit_names_the_option_too(tmp_path: Path) -> None:
    # `--set metrics.0.type=Regex` made the file's `arguments: exact` of ToolCalls unknown, and the error blamed the
    # file's line alone (`eval.yaml:2: metrics.0.arguments: Regex: unknown key …`), as if the file were wrong.
    cfg = write(tmp_path, "metrics: [{type: ToolCalls, arguments: exact}, {type: TrajectoryMatch, order: in_order}]\n")
    lines = config_error(cli("run", str(cfg), "--set", "metrics.0.type=Regex", cwd=tmp_path)).splitlines()[1:]
    assert lines == [f"{cfg}:2: metrics.0.arguments: Regex: unknown key `arguments`; the required key `pattern` is missing "
                     "(with --set metrics.0.type=Regex)"], lines
    lines = config_error(cli("run", str(cfg), "--set", "metrics.1.type=Contains", cwd=tmp_path)).splitlines()[1:]
    assert lines == [f"{cfg}:2: metrics.1.order: Contains: unknown parameter (with --set metrics.1.type=Contains)"], lines
    # A key the option did not touch is the file's own mistake: no option named beside it.
    bad = write(tmp_path, "metrics: [{type: ToolCalls, arguments: exakt}, {type: TrajectoryMatch}]\n")
    lines = config_error(cli("run", str(bad), "--set", "metrics.1.type=ToolCorrectness", cwd=tmp_path)).splitlines()[1:]
    assert len(lines) == 1 and lines[0].startswith(f"{bad}:2: metrics.0.arguments: ") and "--set" not in lines[0], lines
    assert not (tmp_path / "runs").exists()


def test_metrics_emptied_with_set_names_the_option_not_the_file(tmp_path: Path) -> None:
    cfg = write(tmp_path, "metrics: [{type: ToolCalls}]\n")
    err = config_error(cli("run", str(cfg), "--set", "metrics=[]", cwd=tmp_path))
    assert err.splitlines()[1] == ("--set metrics=[]: metrics: no metric configured, so nothing would be scored; set it to a list of metrics, "
                                   "e.g. `metrics: [{type: ToolCalls}]`"), err
    # With assertions on the metrics (the demo's): the emptied list, not "assertions.metrics.x: no metric 'x' in this run".
    cfg = write(tmp_path, "metrics: [{type: ToolCalls}]\nassertions: {metrics: {ToolCalls: {min_mean: 0.5}}}\n")
    err = config_error(cli("run", str(cfg), "--set", "metrics=[]", cwd=tmp_path))
    assert err.splitlines()[1].startswith("--set metrics=[]: metrics: no metric configured") and "assertions" not in err, err
    cfg = write(tmp_path, "metrics: []\n")  # the file's own empty list is the file's
    err = config_error(cli("run", str(cfg), "--set", "run.processes=1", cwd=tmp_path))
    assert err.splitlines()[1].startswith(f"{cfg}: metrics: no metric configured"), err
    assert not (tmp_path / "runs").exists()


def test_metrics_that_are_not_a_list_are_a_config_error_not_a_crash(tmp_path: Path) -> None:
    cfg = write(tmp_path, "metrics: 5\n")
    assert f"{cfg}:2: metrics: Input should be a valid list (got 5)" in config_error(cli("run", str(cfg), cwd=tmp_path))
    cfg = write(tmp_path, "metrics: [{type: ToolCalls}]\n")
    assert "--set metrics=5: metrics: Input should be a valid list (got 5)" in config_error(cli("run", str(cfg), "--set", "metrics=5", cwd=tmp_path))


def test_unknown_native_option_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "eval.yaml"
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    cfg.write_text("dataset:\n  path: cases.jsonl\n  options: {bogus: 1}\nmetrics: [{type: ToolCalls}]\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f"{cfg}:3: dataset.options.bogus: native: unknown key" in err


@pytest.mark.parametrize("fmt", ["tau-bench", "tau2-bench", "bfcl", "tau-bench-tasks"])
def test_formats_without_options_refuse_unknown_ones(tmp_path: Path, fmt: str) -> None:
    # These formats take no `dataset.options`: a key there is a typo or meant for another format.
    cfg = tmp_path / "eval.yaml"
    (tmp_path / "data.json").write_text("[]\n")
    cfg.write_text(f"dataset:\n  path: data.json\n  format: {fmt}\n  tasks: data.json\n  options: {{bogus: 1}}\nmetrics: [{{type: ToolCalls}}]\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f"{cfg}:5: dataset.options.bogus: {fmt}: unknown key" in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("body", "line", "key"), [
    # The first `metrics:` would be dropped silently: its metric never scored.
    ("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\nrun: {processes: 1}\nmetrics: [{type: TrajectoryMatch}]\n", 4, "metrics"),
    ("dataset: {path: cases.jsonl}\nmetrics:\n  - type: ToolCalls\n    arguments: exact\n    arguments: subset\n", 5, "metrics.0.arguments"),
    ("metrics: [{type: ToolCalls}]\ndataset:\n  path: cases.jsonl\n  options: {a: 1, a: 2}\n", 4, "dataset.options.a"),
])
def test_a_duplicate_key_at_any_level_is_refused_naming_its_second_line(tmp_path: Path, body: str, line: int, key: str) -> None:
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(body)
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f"{cfg}:{line}: {key}: duplicate key" in err, err
    assert not (tmp_path / "runs").exists()


def test_merge_keys_and_set_overrides_are_not_duplicates(tmp_path: Path) -> None:
    # Overriding a merged key is what `<<:` is for; `--set` replaces a value the file holds once.
    cfg = write(tmp_path, "base: &b {type: ToolCalls, arguments: exact}\nmetrics:\n  - <<: *b\n    arguments: subset\n")
    proc = cli("run", str(cfg), "--set", "metrics.0.arguments=exact", cwd=tmp_path)
    assert "duplicate key" not in proc.stderr
    err = config_error(proc)  # `base` is no section: the run stops there, past the duplicate check
    assert f"{cfg}:2: base:" in err


def test_a_url_key_given_a_mapping_and_a_section_given_a_url_say_what_was_expected_and_given(tmp_path: Path) -> None:
    metrics = "metrics: [{type: ToolCalls}]\n"
    # In the file: a URL written as a mapping of its parts.
    cfg = write(tmp_path, metrics + "target:\n  kind: http\n  url:\n    host: localhost\n    port: 8000\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f'{cfg}:5: target.url: Input should be a URL, a string such as http://127.0.0.1:8000 (got a mapping: {{"host": "localhost", "port": 8000}})' \
        in err.splitlines(), err
    # With --set, both ways round: a URL key given a mapping, a section given the URL.
    cfg = write(tmp_path, metrics)
    err = config_error(cli("run", str(cfg), "--set", "judge={provider: openai, model: m, base_url: {host: gpu-box}}", cwd=tmp_path))
    assert 'judge.base_url: Input should be a URL, a string such as http://127.0.0.1:8000 (got a mapping: {"host": "gpu-box"})' in err, err
    err = config_error(cli("run", str(cfg), "--set", "judge=http://gpu-box:8000/v1", cwd=tmp_path))
    assert ('--set judge=http://gpu-box:8000/v1: judge: Input should be a mapping of the section\'s keys (got "http://gpu-box:8000/v1"); '
            "a URL goes in judge.base_url") in err.splitlines(), err
    # A URL given as text but not a URL is named as the key's, and does not claim a mapping was given.
    err = config_error(cli("run", str(cfg), "--set", "target={kind: http, url: 'localhost:8000/agent'}", cwd=tmp_path))
    assert err.splitlines()[1].endswith('target.url: Input should be an http:// or https:// URL, such as http://127.0.0.1:8000/agent '
                                        '(got "localhost:8000/agent")'), err


def test_a_value_that_fits_no_member_of_a_union_option_is_one_line_at_its_key(tmp_path: Path, data_dir: Path) -> None:
    # `group_by: conversatoin` printed two lines under pydantic's schema names (`group_by.literal['conversation',…]`,
    # `group_by.list[str]`); a user wrote one key.
    (tmp_path / "trace.json").write_bytes((data_dir / "otel_genai" / "hand" / "mcp_tool_call.json").read_bytes())
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("dataset: {path: trace.json, format: otel, options: {group_by: conversatoin}}\nmetrics: [{type: MaxToolCalls, max_calls: 3}]\n")
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert lines == [f"{cfg}:1: dataset.options.group_by: otel: Input should be 'conversation', 'trace' or 'run', "
                     'or a valid list (got "conversatoin"); did you mean conversation?'], lines


def test_a_mapping_for_a_union_with_a_model_member_is_read_as_that_model(tmp_path: Path, data_dir: Path) -> None:
    # `judge.tokenizer` is a path or `{factor: F}`. A mistyped mapping printed four lines: "should be a valid string",
    # then every key error under pydantic's class name (`judge.tokenizer.TokenizerFactor.factr`).
    (tmp_path / "trace.json").write_bytes((data_dir / "otel_genai" / "hand" / "mcp_tool_call.json").read_bytes())
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("dataset: {path: trace.json, format: otel}\nmetrics: [{type: TaskCompletion}]\n"
                   "judge: {provider: simulator, tokenizer: {factr: 1.2}}\n")
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert lines == [f"{cfg}:3: judge.tokenizer.factr: unknown key `factr`; did you mean factor? (required key `factor` is missing)"], lines
    # Neither form: one line at the key, naming both without a class name.
    cfg.write_text("dataset: {path: trace.json, format: otel}\nmetrics: [{type: TaskCompletion}]\n"
                   "judge: {provider: simulator, tokenizer: [1.2]}\n")
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert lines == [f"{cfg}:3: judge.tokenizer: Input should be a valid string, or a mapping of the section's keys (got [1.2])"], lines


@pytest.mark.parametrize(("metric", "expected"), [
    # Not a typo, so it was `metrics.0.criteria: … required parameter is missing (and 1 more)` at the `- type:` line.
    ("  - type: Rubric\n    rubric: good\n", "4: metrics.0.rubric: Rubric: unknown key `rubric`; the required key `criteria` is missing"),
    # A typo of an optional key beside the missing one keeps its suggestion.
    ("  - type: Rubric\n    scael: [1, 3]\n", "4: metrics.0.scael: Rubric: unknown key `scael` (did you mean scale?); "
                                              "the required key `criteria` is missing"),
    # A typo of the missing key was one line already, but counted twice: "(and 1 more)" repeated it.
    ("  - type: Rubric\n    criterias: good\n", "4: metrics.0.criterias: Rubric: unknown key `criterias`; did you mean criteria? "
                                                "(required key `criteria` is missing)"),
    ("  - type: ArgumentCorrectness\n    tool: lookup\n", "4: metrics.0.tool: ArgumentCorrectness: unknown key `tool`; did you mean "
                                                         "tool_name? (required key `tool_name` is missing)"),
])
def test_an_unknown_key_where_a_required_one_is_missing_is_one_line_at_the_unknown_key(tmp_path: Path, metric: str, expected: str) -> None:
    cfg = write(tmp_path, f"metrics:\n{metric}judge: {{provider: simulator, model: x}}\n")
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert lines == [f"{cfg}:{expected}"], lines


def test_each_mistake_of_a_metric_is_a_line_of_its_own(tmp_path: Path) -> None:
    # Another problem beside the pair, and each further unknown parameter, was "(and 1 more)" on the first line:
    # fixing one showed the next.
    cfg = write(tmp_path, "metrics:\n  - type: Rubric\n    rubric: good\n    include: all\n  - type: ToolCalls\n    argumnts: exact\n"
                          "    ordr: any\njudge: {provider: simulator, model: x}\n")
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert lines == [f"{cfg}:4: metrics.0.rubric: Rubric: unknown key `rubric`; the required key `criteria` is missing",
                     f"{cfg}:5: metrics.0.include: Rubric: String should match pattern '^(trace|output)$' (expected one of: trace, output)",
                     f"{cfg}:7: metrics.1.argumnts: ToolCalls: unknown parameter; did you mean arguments?",
                     f"{cfg}:8: metrics.1.ordr: ToolCalls: unknown parameter; did you mean order?"], lines


def test_a_metric_parameter_its_validator_refuses_reads_as_every_other_parameter_error(tmp_path: Path) -> None:
    # It was `…: Regex: Value error, invalid regular expression: …`: pydantic's prefix, which no other error shows.
    cfg = write(tmp_path, 'metrics:\n  - type: Regex\n    pattern: "("\n')
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert lines == [f"{cfg}:4: metrics.0.pattern: Regex: invalid regular expression: missing ) at position 1"], lines


def test_dataset_option_mistakes_are_listed_beside_the_schemas_errors(tmp_path: Path) -> None:
    # With an unknown top-level key in the file, a misspelt format option was named only once that key was gone.
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("dataset: {path: d.jsonl, format: json-path, options: {stepz: $.x}}\nmetrics: [{type: ToolCalls}]\nextra_key: 1\n")
    (tmp_path / "d.jsonl").write_text("")
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert lines[0].startswith(f"{cfg}:1: dataset.options.stepz: json-path: ") and lines[1] == f"{cfg}:3: extra_key: unknown key", lines


def test_a_list_option_given_one_name_and_a_mistyped_metric_function_say_what_to_write(tmp_path: Path, data_dir: Path) -> None:
    # "Input should be a valid tuple" (pydantic's word for the field's type) and "has no attribute 'hnag'" said neither.
    (tmp_path / "trace.json").write_bytes((data_dir / "otel_genai" / "hand" / "mcp_tool_call.json").read_bytes())
    (tmp_path / "mymetrics.py").write_text("import tracejudge\n\n\n@tracejudge.metric\ndef hang(case, trace):\n    return 1.0\n")
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("dataset: {path: trace.json, format: otel}\nmetrics:\n  - {type: 'mymetrics:hnag'}\n"
                   "  - {type: ToolCalls, exclude_tools: get_*}\n")
    lines = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()[1:]
    assert lines == [f"{cfg}:3: metrics.0.type: custom metric 'mymetrics:hnag': 'mymetrics' has no attribute 'hnag'; did you mean hang?",
                     f"{cfg}:4: metrics.1.exclude_tools: ToolCalls: Input should be a list, such as [get_*]"], lines


def test_every_mistake_is_named_at_once_in_the_order_of_the_file(tmp_path: Path) -> None:
    """An unknown key, a misspelt format, a misspelt metric type and a misspelt metric parameter: one command names all
    four, by line. Before, the schema's error (the unknown key) hid the other three until it was fixed."""
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("dataset: {path: cases.jsonl, format: nativ}\n"
                   "metrics:\n"
                   "  - {type: ToolCals}\n"
                   "  - {type: Contains, valu: done}\n"
                   "run: {procesess: 2}\n")
    err = config_error(cli("run", str(cfg), cwd=tmp_path)).splitlines()
    assert err[0] == "config error", err
    assert [line.split(": ")[0:2] for line in err[1:]] == [
        [f"{cfg}:1", "dataset.format"], [f"{cfg}:3", "metrics.0.type"], [f"{cfg}:4", "metrics.1.valu"], [f"{cfg}:5", "run.procesess"],
    ], err
    assert "did you mean native?" in err[1] and "did you mean ToolCalls" in err[2] and "did you mean value?" in err[3], err
    assert not (tmp_path / "runs").exists()


def test_standard_input_is_refused_as_a_dataset_saying_why(tmp_path: Path) -> None:
    # `-` is standard input to many tools; YAML reads it as a list holding null, which gave
    # "Input is not a valid path for <class 'pathlib.Path'> (got [null])". A run reads its dataset more than once, so a
    # stream is no dataset: said as such, from --set and from the file; `./-` still names a file called `-`.
    cfg = write(tmp_path, "metrics: [{type: ToolCalls}]\n")
    err = config_error(cli("run", str(cfg), "--set", "dataset.path=-", cwd=tmp_path))
    assert "--set dataset.path=-: dataset.path: `-` (standard input) cannot be a dataset: a run reads its dataset file more than once" in err, err
    assert "got [null]" not in err
    cfg.write_text('dataset: {path: "-"}\nmetrics: [{type: ToolCalls}]\n')
    err = config_error(cli("run", str(cfg), cwd=tmp_path))
    assert f"{cfg}:1: dataset.path: `-` (standard input) cannot be a dataset" in err, err
    (tmp_path / "-").write_text(json.dumps(CASE) + "\n")
    proc = cli("run", str(cfg), "--set", "dataset.path=./-", "--no-progress", cwd=tmp_path)
    assert proc.returncode in (0, 1) and "config error" not in proc.stderr, proc.stderr  # (1: the gate, ToolCalls has nothing to score)
    assert len((tmp_path / "runs" / "eval" / "results.jsonl").read_text().splitlines()) == 1
