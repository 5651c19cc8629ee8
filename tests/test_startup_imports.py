"""What a command imports before it does its work: only what it uses.

The suite starts hundreds of `tracejudge` processes, and a resume or a cached
re-run is judged by how soon it starts, so a command must not import the
adapters, metrics and libraries of other commands and configs. Each check runs
in a fresh interpreter (this test process has imported everything already) and
lists `sys.modules` at a point of the command; no timing is asserted.

The registry's static tables (`FORMAT_MODULES`, `METRIC_CLASSES`), which let a
look-up import one module only, are checked against what the modules register.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from tracejudge.core import registry
import _forkserver

CASE = {"id": "c1", "expected_tool_calls": [{"name": "search"}], "trace": {"steps": [{"tool_calls": [{"name": "search", "arguments": {"q": "x"}}]}]}}
METRICS = "metrics:\n  - {type: TrajectoryMatch, order: in_order}\n  - {type: ToolCorrectness}\n  - {type: MaxToolCalls, max_calls: 5}\n"

# Imported by no step of a plain run of native cases with deterministic metrics.
NEVER_IN_A_PLAIN_RUN = [
    *(module for name, module in registry.FORMAT_MODULES.items() if name != "native"),
    "tracejudge.stages.judge.metrics",
    "tracejudge.stages.judge.base",
    "tracejudge.stages.judge.client",
    "tracejudge.entrypoints.bench",
    "tracejudge.llm.providers",
    "tracejudge.stages.score.retrieval",
    "tracejudge.stages.score.usage",
    "tracejudge.stages.score.deepeval_tool_correctness",
    "tracejudge.stages.comparison.runs",
    "difflib",
    "structlog",
    "jsonschema",
    "regex",
    "aiohttp",
    "tiktoken",
    "diskcache",
    "mlflow",
    "phoenix",
]


def _modules_after(code: str, tmp_path: Path) -> dict[str, list[str]]:
    """Run `code` in a fresh interpreter; it calls `snap(label)` at the points to check. The module names at each, by label."""
    out = tmp_path / "modules.json"
    prelude = (
        "import json, sys\n"
        "_snaps = {}\n"
        "def snap(label):\n"
        "    _snaps[label] = sorted(sys.modules)\n"
        f"    open({str(out)!r}, 'w').write(json.dumps(_snaps))\n"
    )
    done = _forkserver.run([sys.executable, "-c", prelude + code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())


def _loaded(modules: list[str], names: list[str]) -> list[str]:
    """The entries of `names` present in `modules` (a package counts when any of its submodules is)."""
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


def test_help_imports_no_config_model_engine_or_third_party_library(tmp_path: Path) -> None:
    snaps = _modules_after(
        "import contextlib, io\n"
        "from tracejudge.entrypoints import cli\n"
        "try:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        cli.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "snap('help')\n",
        tmp_path,
    )
    heavy = ["pydantic", "rich", "anyio", "yaml", "structlog", "numpy", "msgspec", "tracejudge.core.config", "tracejudge.core.registry",
             "tracejudge.core.records", "tracejudge.engine", "tracejudge.stages", "tracejudge.llm"]
    assert _loaded(snaps["help"], heavy) == []


def _native_run(tmp_path: Path, code: str) -> dict[str, list[str]]:
    """`_modules_after(code)` in a folder holding one native case and its config `c.yaml` (three checks); `code` starts
    with `contextlib`, `io` and the CLI's module `cli` imported."""
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    (tmp_path / "c.yaml").write_text(f"dataset: {{path: cases.jsonl, format: native}}\n{METRICS}run: {{dir: run}}\n")
    return _modules_after("import contextlib, io\nfrom tracejudge.entrypoints import cli\n" + code, tmp_path)


def test_a_native_run_imports_its_format_and_metrics_and_nothing_else(tmp_path: Path) -> None:
    snaps = _native_run(
        tmp_path,
        "from tracejudge.core.config import load_config, require_metrics\n"
        "args = cli._parser().parse_args(['run', 'c.yaml', '--no-progress'])\n"
        "require_metrics(load_config(args.config), 'c.yaml')\n"
        "snap('config')\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert cli.main(['run', 'c.yaml', '--no-progress']) == 0\n"
        "snap('run')\n",
    )
    config, run = snaps["config"], snaps["run"]
    # The config is validated against the one format and the three metric classes it names, and only those are imported.
    assert {"tracejudge.stages.extract.native", "tracejudge.stages.score.trajectory", "tracejudge.stages.score.budget"} <= set(config)
    assert _loaded(config, [*NEVER_IN_A_PLAIN_RUN, "numpy", "rich", "anyio", "tracejudge.engine.runner", "tracejudge.stages.judge"]) == []
    assert (tmp_path / "run" / "summary.json").exists()
    assert _loaded(run, NEVER_IN_A_PLAIN_RUN) == []


def test_a_native_run_builds_no_validator_for_the_input_records_or_the_checkpoint(tmp_path: Path) -> None:
    # The struct path decodes cases without `Case`: its validators (and those of the trace models in it) are built
    # on first use, by a format or a path that validates a case, not by every run's imports. Only a resume reads
    # `checkpoint.json` back (`CheckpointFile`, its segments).
    _native_run(
        tmp_path,
        "from tracejudge.core import records\n"
        "from tracejudge.engine import checkpoint_file, checkpoint_sanity\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert cli.main(['run', 'c.yaml', '--no-progress']) == 0\n"
        "models = (records.Case, records.Trace, records.Step, records.ToolCall, checkpoint_file.CheckpointFile, checkpoint_sanity._Segment)\n"
        "built = [m.__name__ for m in models if m.__pydantic_complete__]\n"
        "assert built == [], built\n"
        "assert records.Case(id='c2').model_dump()['id'] == 'c2'  # built when asked\n"
        "snap('run')\n",
    )


def test_a_native_run_without_credentials_compiles_no_redaction_pattern(tmp_path: Path) -> None:
    # Only a text that holds a credential's hint needs the masking patterns; the hint's own pattern is the one compiled.
    _native_run(
        tmp_path,
        "import re\n"
        "from tracejudge.llm import redact\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert cli.main(['run', 'c.yaml', '--no-progress']) == 0\n"
        "compiled = [n for n in ('_SHAPE', '_QUOTED') if isinstance(getattr(redact, n), re.Pattern)]\n"
        "assert compiled == [], compiled\n"
        "assert redact._compiled.cache_info().currsize == 0\n"
        "assert redact.redact_quoted('token sk-abcdef0123456789abcdef') == 'token [REDACTED]'\n"
        "snap('run')\n",
    )


def test_the_bool_refusing_validator_declares_its_own_signature() -> None:
    # pydantic reads it for every numeric-model field; declared, it is not worked out again each time.
    import inspect

    from tracejudge.core.strict_numbers import NoBoolNumbers

    check = NoBoolNumbers._refuse_bool_numbers.__func__
    declared = vars(check).get("__signature__")
    assert declared is not None
    del check.__signature__
    try:
        assert declared == inspect.signature(check)
    finally:
        check.__signature__ = declared


def test_the_models_a_native_run_builds_have_no_list_default_factory(tmp_path: Path) -> None:
    # pydantic reads a default factory's signature; `list`'s is parsed from text, and the first parse compiles
    # `tokenize`'s patterns. The models built by a run's start-up use `record_fields.empty_list` instead.
    _native_run(
        tmp_path,
        "import pydantic\n"
        "from tracejudge.core.config import load_config\n"
        "import tracejudge.engine.runner\n"
        "load_config('c.yaml')\n"
        "def models(cls):\n"
        "    for sub in cls.__subclasses__():\n"
        "        yield sub\n"
        "        yield from models(sub)\n"
        "built = [m for m in set(models(pydantic.BaseModel)) if m.__pydantic_complete__ and m.__module__.startswith('tracejudge.')]\n"
        "assert len(built) > 10, built\n"
        "bad = sorted(f'{m.__name__}.{k}' for m in built for k, f in m.model_fields.items() if f.default_factory is list)\n"
        "assert bad == [], bad\n"
        "snap('config')\n",
    )


def test_names_and_suggestions_come_without_importing_the_modules(tmp_path: Path) -> None:
    snaps = _modules_after(
        "from tracejudge.core import registry\n"
        "assert 'otel' in registry.formats() and 'Rubric' in registry.metric_types() and len(registry.metric_types()) > 20\n"
        "try:\n"
        "    registry.build_metric({'type': 'TrajectoryMatc'})\n"
        "except registry.SpecError as exc:\n"
        "    assert 'did you mean TrajectoryMatch' in exc.msg, exc.msg\n"
        "snap('names')\n"
        "registry.format_for('tau-bench')\n"
        "registry.build_metric({'type': 'Rubric', 'criteria': 'polite'})\n"
        "snap('two')\n",
        tmp_path,
    )
    stage_modules = [m for m in snaps["names"] if m.startswith("tracejudge.stages.")]
    assert stage_modules == [], stage_modules
    two = snaps["two"]
    assert {"tracejudge.stages.extract.tau_bench", "tracejudge.stages.judge.metrics"} <= set(two)
    assert _loaded(two, ["tracejudge.stages.extract.otel", "tracejudge.stages.extract.mlflow_server", "tracejudge.stages.score.tool_calls"]) == []


def test_the_config_models_alone_need_neither_yaml_nor_a_stage(tmp_path: Path) -> None:
    # What a worker process unpickling a job's dataset config, or a report rebuilt from a manifest, imports.
    snaps = _modules_after("import tracejudge.core.config\nsnap('models')\n", tmp_path)
    assert _loaded(snaps["models"], ["yaml", "rich", "anyio", "numpy", "tracejudge.stages", "tracejudge.engine"]) == []


def test_the_judge_stage_imports_no_retry_or_tokenizer_library_before_it_needs_one(tmp_path: Path) -> None:
    # A re-run the judge cache answers whole sends nothing (so retries nothing) and counts no tokens.
    snaps = _modules_after("import tracejudge.stages.judge.stage\nsnap('judge')\n", tmp_path)
    assert "tracejudge.stages.judge.client" in snaps["judge"]
    assert _loaded(snaps["judge"], ["tenacity", "tiktoken", "aiohttp", "structlog"]) == []


def test_the_run_and_its_reports_import_no_terminal_library(tmp_path: Path) -> None:
    # A run through the Python API (a resume's start-up too) prints nothing: rich comes with the CLI's printing only.
    snaps = _modules_after("import tracejudge.engine.runner, tracejudge.stages.reports\nsnap('api')\n", tmp_path)
    assert _loaded(snaps["api"], ["rich", "structlog"]) == []


def _import_every_stage_module() -> None:
    for package in ("tracejudge.stages.extract", "tracejudge.stages.score", "tracejudge.stages.judge"):
        pkg = importlib.import_module(package)
        for info in pkgutil.walk_packages(pkg.__path__, package + "."):
            importlib.import_module(info.name)


def test_the_format_table_names_every_format_the_modules_register_and_where() -> None:
    _import_every_stage_module()
    built_in = {name for name in registry._FORMATS if ":" not in name}  # a user adapter is registered under `module:function`
    assert built_in == set(registry.FORMAT_MODULES), "add the format to registry.FORMAT_MODULES (or remove the stale entry)"
    for name, module in registry.FORMAT_MODULES.items():
        assert registry.format_for(name).adapt.__module__ == module, name


def test_the_metric_table_names_every_metric_class_and_where() -> None:
    _import_every_stage_module()
    assert set(registry._METRICS) == set(registry.METRIC_CLASSES), "add the metric to registry.METRIC_CLASSES (or remove the stale entry)"
    for name, path in registry.METRIC_CLASSES.items():
        cls = registry.metric_types()[name]
        assert f"{cls.__module__}:{cls.__qualname__}" == path


@pytest.mark.parametrize("package", ["tracejudge.stages.score", "tracejudge.stages.judge"])
def test_the_metric_packages_still_export_their_classes(package: str) -> None:
    pkg = importlib.import_module(package)
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None
    with pytest.raises(AttributeError):
        pkg.NoSuchMetric  # noqa: B018


def test_metric_classes_a_config_does_not_name_build_no_validator_until_used(tmp_path: Path) -> None:
    # `Contains` imports its module's other metrics and the stand-in for a bad case-level spec: none is validated.
    code = ("from tracejudge.core import registry\n"
            "from tracejudge.stages.score import base, output\n"
            "registry.build_metric({'type': 'Contains', 'value': 'x'})\n"
            "unused = (output.ExactMatch, output.Regex, output.JsonSchema, base.InvalidSpec)\n"
            "print(sorted(m.__name__ for m in unused if m.__pydantic_complete__))\n"
            "print(registry.build_metric({'type': 'ExactMatch', 'expected': 'a'}).expected, output.ExactMatch.__pydantic_complete__)\n")
    done = _forkserver.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split("\n")[:2] == ["[]", "a True"]


def test_output_metrics_leave_regex_unimported_until_a_regex_metric_is_built():
    code = ("import sys\nfrom tracejudge.core import registry\n"
            "registry.build_metric({'type': 'Contains', 'value': 'x'}); registry.build_metric({'type': 'ExactMatch'})\n"
            "print('regex' in sys.modules)\n"
            "registry.build_metric({'type': 'Regex', 'pattern': 'a+'}); print('regex' in sys.modules)\n")
    done = _forkserver.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["False", "True"]
