"""Config loading: every problem is refused before work starts, naming file, line and key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tracejudge.core.config import load_config
from tracejudge.core.errors import ConfigError
import _forkserver

REPO = Path(__file__).resolve().parent.parent


def write(tmp_path: Path, text: str) -> Path:
    data = tmp_path / "cases.jsonl"
    data.write_text('{"id": "a", "trace": {"steps": []}}\n')
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(text)
    return cfg


def test_demo_config_loads_and_resolves_paths_against_its_folder(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # paths must not depend on the current directory
    cfg = load_config(REPO / "configs" / "demo.yaml")
    assert cfg.dataset.format == "tau-bench"
    assert cfg.dataset.path.is_absolute() and cfg.dataset.path.exists()
    assert cfg.run.dir == (REPO / "runs" / "demo").resolve()


def test_unknown_key_names_file_line_and_path(tmp_path):
    cfg = write(tmp_path, "dataset:\n  path: cases.jsonl\n  formt: native\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert f"{cfg}:3: dataset.formt: unknown key" in str(err.value)


def test_wrong_type_says_what_was_expected(tmp_path):
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nrun:\n  workers: many\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    msg = str(err.value)
    assert f"{cfg}:3: run.workers:" in msg and "integer" in msg and '"many"' in msg


def test_missing_dataset_file_and_unknown_format_are_both_reported(tmp_path):
    cfg = write(tmp_path, "dataset:\n  path: nowhere.jsonl\n  format: csvish\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    msg = str(err.value)
    assert f"{cfg}:2: dataset.path: file not found" in msg
    assert f"{cfg}:3: dataset.format: unknown format 'csvish'" in msg and "tau-bench" in msg


def test_metric_spec_errors_point_into_the_list(tmp_path):
    cfg = write(
        tmp_path,
        "dataset: {path: cases.jsonl}\nmetrics:\n  - type: ToolCalls\n    arguments: exakt\n  - type: NoSuchMetric\n  - {type: TrajectoryMatch, colour: red}\n",
    )
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    msg = str(err.value)
    assert f"{cfg}:4: metrics.0.arguments: ToolCalls:" in msg and "'subset', 'shallow', 'exact' or 'ignore'" in msg
    assert f"{cfg}:5: metrics.1.type: unknown metric type 'NoSuchMetric'" in msg
    assert f"{cfg}:6: metrics.2.colour: TrajectoryMatch: unknown parameter" in msg


def test_duplicate_metric_names_are_refused_naming_the_field_and_line(tmp_path):
    # Results are keyed by name: the second metric would silently replace the first.
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}, {type: ToolCalls}]\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert str(err.value) == (f"{cfg}:2: metrics.1.type: a second metric named 'ToolCalls' (metrics.0 has that name; "
                              "a name defaults to the type): give one a distinct `name`")
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ToolCalls, name: x}\n  - {type: TrajectoryMatch}\n"
                          "  - {type: ToolCorrectness,\n     name: x}\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert str(err.value) == f"{cfg}:6: metrics.2.name: a second metric named 'x' (metrics.0 has that name): give one a distinct `name`"


def _refused(cfg: Path) -> list[str]:
    """The lines of the `ConfigError` loading `cfg` raises."""
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    return str(err.value).splitlines()


def test_a_metric_named_the_wildcard_or_with_a_control_character_is_refused_at_its_line(tmp_path):
    # `*` in assertions.metrics is every metric; a line break in a key splits report rows and summary lines.
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ToolCalls, name: '*'}\n  - {type: TrajectoryMatch}\n"
                          '  - {type: ToolCorrectness,\n     name: "a\\nb"}\n  - {type: ExactMatch, name: "c\\x1b[31m"}\n'
                          '  - {type: Contains, name: "d\\u2028e"}\n')
    lines = _refused(cfg)
    assert lines[0] == (f"{cfg}:3: metrics.0.name: ToolCalls: '*' is the assertions' wildcard (assertions.metrics: {{'*': …}} "
                        "applies to every metric): give this metric another name")
    assert lines[1].startswith(f"{cfg}:6: metrics.2.name: ToolCorrectness: a metric name is a key of results and report rows: "
                               "it cannot hold a line break or tab ('\\n' at character 2 of 'a\\nb')")
    assert lines[2].startswith(f"{cfg}:8: metrics.4.name: Contains: ") and "'\\u2028' at character 2" in lines[2]
    assert len(lines) == 3  # (an ESC is printed escaped wherever the name is shown: `test_compare_gate_shown`)
    # a name that only looks like a pattern stays a name
    load_config(write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls, name: 'tool*'}, {type: Contains, name: 'é 😀'}]\n"))


def test_a_metric_name_holding_an_invisible_character_is_refused_at_its_line(tmp_path):
    # `ca<U+200B>lls` beside `calls` was accepted: two metrics that read alike in the file, results.jsonl and report.html,
    # and a gate on `calls` held for only one of them. YAML takes such characters unescaped, unseen.
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ToolCalls, name: calls}\n"
                          "  - {type: ToolCalls, name: ca\u200blls}\n  - {type: Contains, name: \"\\ufeff\"}\n"
                          "  - {type: ExactMatch, name: \"soft\\u00adhyphen\"}\n")
    key = "a metric name is a key of results and report rows: it cannot hold an invisible character"
    assert _refused(cfg) == [
        f"{cfg}:4: metrics.1.name: ToolCalls: {key} (U+200B at character 3 of 'ca\\u200blls'; did you mean 'calls'?)",
        f"{cfg}:5: metrics.2.name: Contains: {key} (U+FEFF at character 1 of '\\ufeff')",
        f"{cfg}:6: metrics.3.name: ExactMatch: {key} (U+00AD at character 5 of 'soft\\xadhyphen'; did you mean 'softhyphen'?)"]
    # the joiners stay: emoji sequences and Persian words are written with them
    load_config(write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls, name: \"\U0001f468\u200d\U0001f4bb\"},"
                                " {type: Contains, name: \"\u0645\u06cc\u200c\u062e\"}]\n"))


@pytest.mark.parametrize("hidden", ["\u034f", "\u115f", "\u1160", "\u3164", "\uffa0", "\u17b4"])
def test_a_metric_name_holding_a_blank_letter_is_refused_too(tmp_path, hidden):
    # The combining grapheme joiner and the Hangul fillers show as nothing or a blank: `tool<U+034F>acc` read as `toolacc`.
    cfg = write(tmp_path, f"dataset: {{path: cases.jsonl}}\nmetrics:\n  - {{type: ToolCalls, name: \"tool{hidden}acc\"}}\n")
    [line] = _refused(cfg)
    assert line.startswith(f"{cfg}:3: metrics.0.name: ToolCalls: ") and f"U+{ord(hidden):04X} at character 5" in line, line


def test_a_metric_name_that_is_empty_blank_or_padded_is_refused_at_its_line(tmp_path):
    # `name: ""` fell back to the type unsaid; `" "` and `"ToolCalls "` were accepted and printed as no name, or as
    # ToolCalls, in every report, and a gate on them had to repeat the spaces.
    from tracejudge.core.errors import ParameterError
    from tracejudge.stages.score.tool_calls import ToolCalls

    cfg = write(tmp_path, 'dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ToolCalls, name: "ToolCalls "}\n'
                          '  - {type: TrajectoryMatch, name: " "}\n  - {type: MaxToolCalls, max_calls: 3, name: ""}\n'
                          '  - {type: ToolCorrectness, name: "\\u00a0x"}\n  - {type: ExactMatch, name: inner space}\n')
    key = "a metric name is a key of results and report rows: it cannot"
    assert _refused(cfg) == [
        f"{cfg}:3: metrics.0.name: ToolCalls: {key} start or end with whitespace ('ToolCalls '; did you mean 'ToolCalls'?)",
        f"{cfg}:4: metrics.1.name: TrajectoryMatch: {key} be blank (' ')",
        f"{cfg}:5: metrics.2.name: MaxToolCalls: an empty name is no name: drop the `name` key to name the metric after its type ('MaxToolCalls')",
        f"{cfg}:6: metrics.3.name: ToolCorrectness: {key} start or end with whitespace ('\\xa0x'; did you mean 'x'?)"]
    with pytest.raises(ParameterError, match="empty name is no name"):
        ToolCalls(name="")


def test_set_overrides_scalars_lists_and_paths(tmp_path, monkeypatch):
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ToolCalls, arguments: exact}\n")
    other = tmp_path / "sub"
    other.mkdir()
    (other / "more.jsonl").write_text("")
    monkeypatch.chdir(other)
    got = load_config(cfg, ["metrics.0.arguments=ignore", "run.workers=3", "dataset.path=sub/more.jsonl", "run.dir=../x"])
    assert got.metrics[0]["arguments"] == "ignore"
    assert got.run.workers == 3
    # --set paths resolve against the config's folder, like the same value in the file, not the cwd
    assert got.dataset.path == (other / "more.jsonl").resolve()
    assert got.run.dir == (tmp_path.parent / "x").resolve()


def test_a_section_set_whole_resolves_its_paths_against_the_configs_folder_too(tmp_path, monkeypatch):
    # `--set 'run={dir: ../x}'` wrote to ../x from the current folder; `--set 'dataset={path: …}'` said "file not found".
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\n")
    other = tmp_path / "sub"
    other.mkdir()
    (other / "more.jsonl").write_text("")
    (tmp_path / "tasks.json").write_text("[]")
    (tmp_path / "labels.jsonl").write_text("")
    (tmp_path / "runs" / "last").mkdir(parents=True)
    (tmp_path / "runs" / "last" / "results.jsonl").write_text("")
    monkeypatch.chdir(other)
    got = load_config(cfg, ["run={dir: ../x, processes: 1}", "dataset={path: sub/more.jsonl, tasks: tasks.json, format: native}",
                            "judge={provider: simulator, labels: {path: labels.jsonl}}", "assertions.regression={baseline: runs/last}"])
    assert got.run.dir == (tmp_path.parent / "x").resolve() and got.run.processes == 1
    assert got.dataset.path == (other / "more.jsonl").resolve() and got.dataset.tasks == (tmp_path / "tasks.json").resolve()
    assert Path(got.judge.labels.path) == (tmp_path / "labels.jsonl").resolve()
    assert Path(got.assertions.regression.baseline) == (tmp_path / "runs" / "last").resolve()
    assert load_config(cfg, [f"run={{dir: {tmp_path / 'abs'}}}"]).run.dir == tmp_path / "abs"  # an absolute one as given


def test_default_run_dir_is_beside_the_config_named_after_it(tmp_path, monkeypatch):
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\n")
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    assert load_config(cfg).run.dir == tmp_path / "runs" / "cfg"
    second = tmp_path / "second.yaml"
    second.write_text(cfg.read_text())
    assert load_config(second).run.dir == tmp_path / "runs" / "second"  # two configs, two run directories


def test_judge_provider_defaults(tmp_path, monkeypatch):
    from tracejudge.core.config import JudgeConfig

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/v1")
    one = JudgeConfig.model_validate({"model": "openai:gpt-4o-mini"})
    assert (one.provider, one.model, one.api_key_env, one.base_url) == ("openai", "gpt-4o-mini", "OPENAI_API_KEY", None)
    claude = JudgeConfig.model_validate({"model": "anthropic:claude-3-5-haiku-latest"})
    assert (claude.provider, claude.api_key_env, claude.base_url) == ("anthropic", "ANTHROPIC_API_KEY", "http://127.0.0.1:9/v1")
    # a server of one's own needs no key unless the variable is set; an explicit null never sends one
    assert JudgeConfig.model_validate({"provider": "openai", "base_url": "http://127.0.0.1:9/v1"}).api_key_env is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert JudgeConfig.model_validate({"provider": "openai", "base_url": "http://127.0.0.1:9/v1"}).api_key_env == "OPENAI_API_KEY"
    assert JudgeConfig.model_validate({"provider": "openai", "api_key_env": None}).api_key_env is None
    assert JudgeConfig.model_validate({"provider": "openai", "model": "llama3:8b"}).model == "llama3:8b"  # not a provider prefix
    assert JudgeConfig.model_validate({}).provider == "simulator"  # the demo's judge needs no key
    with pytest.raises(ValueError, match="names provider 'openai' but provider is 'anthropic'"):
        JudgeConfig.model_validate({"provider": "anthropic", "model": "openai:gpt-4o"})


def test_bad_override_is_named_as_such(tmp_path):
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\n")
    with pytest.raises(ConfigError, match=r"--set run.workers=lots: run.workers: .*integer"):
        load_config(cfg, ["run.workers=lots"])
    with pytest.raises(ConfigError, match="expected KEY.PATH=VALUE"):
        load_config(cfg, ["run.workers"])


def test_invalid_yaml_and_missing_config(tmp_path):
    cfg = tmp_path / "broken.yaml"
    cfg.write_text("dataset: {path: [unclosed\n")
    with pytest.raises(ConfigError, match=r"broken.yaml:\d+:\d+: invalid YAML"):
        load_config(cfg)
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "absent.yaml")


def test_cli_exits_2_on_config_error_before_any_work(tmp_path):
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nrun: {dir: out, speed: 11}\n")
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert "run.speed: unknown key" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_missing_regression_baseline_is_a_config_error(tmp_path):
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\nassertions:\n  regression:\n    baseline: runs/last-night\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert f"{cfg}:5: assertions.regression.baseline: baseline run not found" in str(err.value)


def test_set_addresses_a_metric_name_holding_a_dot_in_brackets_and_refuses_the_split_saying_so(tmp_path):
    # `--set assertions.metrics.tool.acc.min_mean=…` split the name: a rule for a metric `tool` with a key `acc`.
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls, name: tool.acc}]\n"
                          "assertions: {metrics: {tool.acc: {min_mean: 0.5}}}\n")
    for key in ('assertions.metrics["tool.acc"].min_mean', "assertions.metrics['tool.acc'].min_mean", "assertions.metrics[tool.acc].min_mean"):
        assert load_config(cfg, [f"{key}=0.25"]).assertions.metrics["tool.acc"].min_mean == 0.25
    assert load_config(cfg, ['assertions.metrics["tool.acc"]={max_error_share: 0.1}']).assertions.metrics["tool.acc"].min_mean is None
    with pytest.raises(ConfigError) as err:
        load_config(cfg, ["assertions.metrics.tool.acc.min_mean=0.25"])
    assert str(err.value) == ("--set assertions.metrics.tool.acc.min_mean: the metric 'tool.acc' holds a dot, which a key path splits: "
                              "write its name in brackets, --set 'assertions.metrics[\"tool.acc\"].min_mean=…'")
    with pytest.raises(ConfigError, match=r"a '\[' with no '\]' after it"):
        load_config(cfg, ["assertions.metrics[tool.acc.min_mean=0.25"])


def test_an_error_on_a_gate_of_a_metric_name_holding_a_dot_shows_the_name_in_brackets(tmp_path):
    # `assertions.metrics.tool.acc.min_mean: …` read as a key `acc` of a metric `tool`: the errors name the key as
    # `--set` takes it, as the split refusal above tells the user to write it.
    cfg = write(tmp_path, "dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls, name: tool.acc}]\n"
                          "assertions: {metrics: {tool.acc: {min_mean: 2, max_eror_share: 0.1}}}\n")
    assert _refused(cfg) == [
        f'{cfg}:3: assertions.metrics["tool.acc"].min_mean: Input should be less than or equal to 1 (got 2)',
        f'{cfg}:3: assertions.metrics["tool.acc"].max_eror_share: unknown key; did you mean max_error_share?']
    with pytest.raises(ConfigError) as err:
        load_config(cfg, ['assertions.metrics["tool.acc"].min_mean=abc'])
    assert str(err.value).startswith('--set assertions.metrics["tool.acc"].min_mean=abc: assertions.metrics["tool.acc"].min_mean: '
                                     "Input should be a valid number")
    with pytest.raises(ConfigError) as err:
        load_config(cfg, ['assertions.metrics["tool.acc"].min_mean.x=1'])
    assert str(err.value).endswith(': assertions.metrics["tool.acc"].min_mean is not a mapping')
    # A key without a dot reads as before; every shown path parses back to its keys.
    from tracejudge.core.field_paths import key_path, parse_path

    assert key_path(("metrics", 0, "name")) == "metrics.0.name"
    for keys in (("assertions", "metrics", "tool.acc", "min_mean"), ("judge", "prices", "gpt-4.1"), ("a", "", " b", "c[d]")):
        assert [k for k, _ in parse_path(key_path(keys))] == list(keys)
