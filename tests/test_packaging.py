"""tracejudge installs as one namespace: a built wheel, in a fresh venv, beside a user project
that has its own `pipeline/` and `stages/` packages.

Nothing is downloaded: the wheel is installed with `--no-deps --no-index`, and the venv
reaches the dependencies through a `.pth` line naming this interpreter's site-packages
(after its own, so the wheel shadows an editable install; `.pth` files in a directory
added that way are not run, so the editable install's finder stays inactive).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest
from _peer_plugins import peer_plugins_off
import _forkserver

REPO = Path(__file__).resolve().parent.parent

USAGE = textwrap.dedent(
    """\
    import tracejudge
    from tracejudge import Case, Score, Trace


    @tracejudge.metric
    def short(case: Case, trace: Trace, *, limit: int = 2) -> bool:
        return len(trace.tool_calls()) <= limit


    @tracejudge.metric(threshold=0.5)
    async def half(case: Case, trace: Trace) -> Score:
        return Score(value=0.5)


    report = tracejudge.evaluate([{"id": "a"}], [short, half(), tracejudge.ToolCalls(), {"type": "TrajectoryMatch"}])
    failures: list[tracejudge.Failure] = report.failed()
    value: float | None = report.results[0].scores["short"].value
    tracejudge.assert_trajectory(Case(id="c"), ["search"], order="in_order")
    """
)

USER_TEST = textwrap.dedent(
    """\
    import pipeline
    import stages
    import tracejudge
    from tracejudge import Case, ToolCalls


    def test_user_packages_are_the_users():
        assert pipeline.WHOSE == "user" and stages.WHOSE == "user"


    def test_tracejudge_fixture_works(tracejudge):
        case = Case(id="w1", trace={"steps": [{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}]},
                    expected_tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}])
        result = tracejudge.evaluate_case(case, [ToolCalls()])
        assert result.scores["ToolCalls"].value == 1.0
    """
)


def _run(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return _forkserver.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("wheel")
    dist = root / "dist"
    # Built from a copy of what the wheel is made of: setuptools builds in the source tree's `build/`, and two test
    # workers (or two checkouts' suites) building there at once broke each other's build.
    source = root / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("pipeline", "stages"):
        shutil.copytree(REPO / part, source / part, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(source)], root)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next(dist.glob("tracejudge-*.whl"))
    env = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    py = env / "bin" / "python"
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root).stdout.strip())
    # Every site directory this interpreter reads, in its order: a virtual environment made with
    # --system-site-packages has pytest and mypy in the system's, which `sysconfig` does not name.
    outer = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                           *(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))])
    (site / "_outer_site.pth").write_text("".join(f"{p}\n" for p in outer))
    inst = _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q", str(wheel)], root)
    if inst.returncode != 0 and "no such option: --python" in inst.stderr:
        inst = _run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--prefix", str(env), str(wheel)], root)
    assert inst.returncode == 0, inst.stderr[-2000:]
    project = root / "userproj"
    for pkg in ("pipeline", "stages"):
        (project / pkg).mkdir(parents=True)
        (project / pkg / "__init__.py").write_text('WHOSE = "user"\n')
    (project / "tests").mkdir()
    (project / "tests" / "test_user.py").write_text(USER_TEST)
    (project / "usage.py").write_text(USAGE)
    return {"wheel": wheel, "python": py, "site": site, "project": project, "bin": env / "bin"}


def test_the_wheel_holds_one_namespace_and_every_module(installed: dict[str, Path]) -> None:
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"tracejudge"}
    expected = {f"tracejudge/{p.relative_to(REPO / 'pipeline').as_posix()}" for p in (REPO / "pipeline").rglob("*.py")}
    expected |= {f"tracejudge/stages/{p.relative_to(REPO / 'stages').as_posix()}" for p in (REPO / "stages").rglob("*.py")}
    assert expected - set(names) == set(), "modules missing from the wheel (add their package to pyproject.toml)"
    # Every package data file: the prices, and the viewer's stylesheet and script (a folder of data files only).
    data = {f"tracejudge/{p.relative_to(REPO / 'pipeline').as_posix()}" for p in (REPO / "pipeline" / "viewer" / "static").iterdir()
            if p.suffix in (".css", ".js")}
    assert data and {"tracejudge/py.typed", "tracejudge/llm/prices.yaml", *data} <= set(names)
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    # An SPDX expression (setuptools 77+): the `license = {text = …}` table is deprecated and warned about at each build.
    assert "License-Expression: MIT" in zipfile.ZipFile(installed["wheel"]).read(meta).decode().splitlines()
    site = installed["site"]
    assert not (site / "pipeline").exists() and not (site / "stages").exists()
    assert (site / "tracejudge" / "py.typed").exists()


def test_a_user_project_with_its_own_pipeline_package_keeps_working(installed: dict[str, Path]) -> None:
    py, project = installed["python"], installed["project"]
    where = _run([str(py), "-c", "import tracejudge, pipeline; print(tracejudge.__file__); print(pipeline.WHOSE)"], project)
    assert where.returncode == 0, where.stderr
    first, second = where.stdout.splitlines()
    assert first.startswith(str(installed["site"])) and second == "user"
    # The peers' pytest plugins are switched off by name (their imports cost tens of CPU-seconds); tracejudge's is never
    # named, so the `tracejudge` fixture the user's test asks for comes from the installed wheel's entry point.
    proc = _run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", *peer_plugins_off(), "tests"], project)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout


def test_console_script_and_module_report_the_version(installed: dict[str, Path]) -> None:
    py, project = installed["python"], installed["project"]
    version = _run([str(py), "-c", "import tracejudge; print(tracejudge.__version__)"], project).stdout.strip()
    for cmd in ([str(installed["bin"] / "tracejudge"), "--version"], [str(py), "-m", "tracejudge", "--version"]):
        proc = _run(cmd, project)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == f"tracejudge {version}"


def test_mypy_strict_sees_the_installed_types(installed: dict[str, Path]) -> None:
    pytest.importorskip("mypy")
    py, project = installed["python"], installed["project"]
    (project / "wrong.py").write_text("import tracejudge\n\nreport: int = tracejudge.evaluate([], [], trials='3')\n")
    # One mypy process for both files: the installed package and its dependencies are analysed once, not twice.
    bad = _run([str(py), "-m", "mypy", "--strict", "--no-incremental", "usage.py", "wrong.py"], project, timeout=600)
    assert bad.returncode == 1
    errors = [line for line in bad.stdout.splitlines() if ": error:" in line or ": note:" in line]
    assert errors and all(line.startswith("wrong.py:3:") for line in errors), bad.stdout[-3000:]  # usage.py is clean
    assert 'Incompatible types in assignment (expression has type "RunReport", variable has type "int")' in bad.stdout
    assert 'Argument "trials" to "evaluate" has incompatible type "str"; expected "int"' in bad.stdout
