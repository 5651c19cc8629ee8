"""Shared test set-up: real-data paths, the judge simulator fixture, the pytester plugin, helpers.

`tests/` is put on sys.path so test modules can import their helper modules
(`helpers`, `live_support`, `_runs`, ...).
"""

from __future__ import annotations

import os as _os

# Telemetry (deepeval's PostHog client, Ray's usage stats) must never leave the machine: the suite's network is loopback only.
# Set before any peer is imported, because they read their settings once.
_os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
_os.environ.setdefault("DO_NOT_TRACK", "1")
_os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tracejudge.simulator.server import SimConfig, SimulatorThread

REPO = Path(__file__).resolve().parent.parent
# The real data sits next to the repository (never inside it).
DATA = REPO.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent))
pytest_plugins = ["pytester"]  # runs pytest inside tests to check the tracejudge plugin's output


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """`../shared/data` seen from the repository root (the real traces; see its README)."""
    if not DATA.is_dir():
        pytest.fail(f"the shared trace data is missing: expected it at {DATA}")
    return DATA


@pytest.fixture(scope="session")
def tau_paths(data_dir: Path) -> tuple[Path, Path]:
    """(trajectory file, tasks file) of τ-bench's GPT-4o airline runs."""
    tau = data_dir / "tau_bench"
    return tau / "historical_trajectories" / "gpt-4o-airline.json", tau / "tasks" / "tasks_airline_test.json"


def require(path: Path) -> Path:
    """`path`, failing the test clearly when the shared data is not where it belongs."""
    if not path.exists():
        pytest.fail(f"the shared trace data is missing: expected {path}")
    return path


def extract_lines(tmp_path: Path, fmt_name: str, records: list[Any], options: dict[str, Any] | None = None) -> list[Any]:
    """Write `records` as JSONL (dicts are dumped, str/bytes written as is) and extract every line."""
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig
    from tracejudge.stages.extract import extract_record

    path = tmp_path / "data.jsonl"
    with open(path, "wb") as fh:
        for rec in records:
            line = rec if isinstance(rec, bytes) else (rec.encode() if isinstance(rec, str) else json.dumps(rec).encode())
            fh.write(line + b"\n")
    ds = DatasetConfig(path=path, format=fmt_name, options=options or {})
    fmt = registry.format_for(fmt_name)
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


@pytest.fixture
def fresh_log() -> Iterator[None]:
    """Log to this test's stderr, as the CLI does; afterwards tracejudge's records go to pytest's logging again."""
    from tracejudge.core import log

    log.configure("warning")
    yield
    log.reset()


@pytest.fixture
def simulator() -> Iterator[Callable[..., SimulatorThread]]:
    """A factory: `simulator(rpm=..., script=[...])` starts a simulator over real HTTP on 127.0.0.1.

    Every simulator started is stopped when the test ends.
    """
    started: list[SimulatorThread] = []

    def start(**options: Any) -> SimulatorThread:
        sim = SimulatorThread(SimConfig(**options))
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.stop()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """One local Ray cluster (2 CPUs) for the whole test session; skips when the `ray` extra is missing.

    Workers import test helper modules (`ray_helpers`) through PYTHONPATH.
    """
    ray = pytest.importorskip("ray")
    tests_dir = str(Path(__file__).resolve().parent)
    # Ray gives its raylet a fixed 30 s to register; on a busy CI machine that can run out once.
    for attempt in range(3):
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
                     runtime_env={"env_vars": {"PYTHONPATH": tests_dir}})
            break
        except Exception as exc:  # Ray raises a bare Exception for the start-up timeout
            ray.shutdown()
            if attempt == 2 or "timed out during startup" not in str(exc):
                raise
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="session")
def mlflow_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real `mlflow server` (SQLite) for every store test of the session (`tests/stores/servers.py`); its base URL.

    Each file traces into experiments of its own names, so what one file loads is never in another's reads.
    """
    from stores.servers import mlflow_server

    with mlflow_server(tmp_path_factory.mktemp("mlflow")) as url:
        yield url


@pytest.fixture(scope="session")
def phoenix_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real `phoenix serve` (SQLite) for every store test of the session; its base URL (OTLP/HTTP at `/v1/traces`).

    Each file traces into projects of its own names.
    """
    from stores.servers import phoenix_server

    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as url:
        yield url


@pytest.fixture(scope="session")
def live_recordings() -> tuple[Path, dict[str, str]]:
    """Every installed framework re-recorded live (`tests/frameworks/live.py`): (folder, failures)."""
    sys.path.insert(0, str(Path(__file__).parent / "frameworks"))
    import live

    return live.wait()


@pytest.fixture(autouse=True)
def _forget_the_tests_own_modules(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test, forget the modules it imported from its own `tmp_path` (a custom metric's `mypkg`, a python
    target) and the search folders under it (`user_code.add_search_dir`, the config's folder).

    Left in `sys.modules`, such a module answered later tests of the same process (pytest-xdist's worker) naming a module
    of that name: a test expecting `mypkg.metrics` not to be importable failed only after `test_custom_metrics.py`, and
    each case writing its own `mypkg` imported the first case's. (A module-scoped fixture's folders are not a test's
    `tmp_path`: what it imported stays for its file's tests.)
    """
    # Only a module imported during the test can come from its own tmp_path: the rest (thousands, in a worker that
    # has imported Ray, MLflow and the frameworks) need not be looked at after every test.
    before = set(sys.modules)
    yield
    tmp = request.node.funcargs.get("tmp_path") if hasattr(request.node, "funcargs") else None
    if tmp is None:
        return
    from tracejudge.core import user_code

    # By the text of the path (a module's file is as its search folder spells it): a realpath of each of the thousands
    # of modules would cost every test tens of milliseconds.
    roots = tuple({os.path.join(str(tmp), ""), os.path.join(os.path.realpath(tmp), "")})

    def mine(path: object) -> bool:
        return isinstance(path, str) and bool(path) and os.path.join(path, "").startswith(roots)

    for name in sys.modules.keys() - before:
        module = sys.modules.get(name)
        if mine(getattr(module, "__file__", None)) or any(mine(p) for p in list(getattr(module, "__path__", None) or [])):
            del sys.modules[name]
    sys.path[:] = [p for p in sys.path if not mine(p)]
    user_code._ADDED[:] = [p for p in user_code._ADDED if not mine(p)]
    user_code._CONFIGS[:] = [p for p in user_code._CONFIGS if not mine(p)]


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, a worker gets `COLUMNS=80`/`LINES=24` from its launcher: drop them, so every
    command a test runs sees piped output as a user's pipe does (100 columns), whichever way the suite runs."""
    if hasattr(config, "workerinput"):
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)
    _share_bytecode()


def _share_bytecode() -> None:
    # The suite starts several hundred `tracejudge` and `python` processes. Where the environment says
    # PYTHONDONTWRITEBYTECODE, each one compiles the project's sources again (about 0.2 CPU-s a process).
    # Their bytecode goes to one cache outside the checkout instead, shared by both workers; the
    # checkout stays as clean as the setting meant to keep it.
    if "PYTHONPYCACHEPREFIX" in os.environ or not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    import hashlib
    import tempfile

    tag = hashlib.sha256(str(Path(__file__).resolve().parent.parent).encode()).hexdigest()[:12]
    os.environ["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / f"tracejudge-tests-pycache-{tag}")
    del os.environ["PYTHONDONTWRITEBYTECODE"]


# The groups that take longest (measured with --durations), longest first (see the sort below).
_LONG_GROUPS = ["test_real_model_server.py", "live", "mlflow", "ray", "test_readme_blocks.py", "test_executors.py", "test_cli_run.py",
                "phoenix", "test_readme_examples.py", "test_bench.py", "test_ray_recipe.py"]


# A session fixture -> the group of the tests using it (one worker starts it once).
_SHARED_GROUPS = {"ray_cluster": "ray", "live_recordings": "live", "mlflow_url": "mlflow", "phoenix_url": "phoenix"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`--dist loadgroup`), keep what shares a costly session resource on one worker.

    Tests using the session's Ray cluster form one group, so one worker starts one cluster;
    tests using the live recordings form another, so they are recorded once; so do those of the
    MLflow server and those of the Phoenix server, each started once; a test using a
    module- or session-scoped fixture of its own file stays with its file, whose servers (the
    viewer) and base runs then start once. Every other test goes to whichever worker
    is free: pinning a file of independent slow tests to one worker left the other idle.
    """
    groups = {}
    for item in items:
        names = getattr(item, "fixturenames", ())
        group = next((g for fixture, g in _SHARED_GROUPS.items() if fixture in names), None) or (item.path.name if _shares_a_fixture(item) else None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        groups[item] = group or item.path.name
    # pytest-xdist hands out groups by their number of tests, most first (`--loadscope-reorder`, its default); its sort
    # is stable, so among groups of equal count this order, longest first, decides.
    items.sort(key=lambda item: _LONG_GROUPS.index(groups[item]) if groups[item] in _LONG_GROUPS else len(_LONG_GROUPS))


def _shares_a_fixture(item: pytest.Item) -> bool:
    """Whether `item` uses a fixture wider than one test that its own module defines (a server, a base run)."""
    info = getattr(item, "_fixtureinfo", None)
    module = getattr(getattr(item, "module", None), "__name__", None)
    if info is None or module is None:
        return True  # unknown: keep it with its file, as before
    return any(d.scope != "function" and getattr(d.func, "__module__", None) == module
               for defs in info.name2fixturedefs.values() for d in defs)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the last test of a shared resource's group here, stop the resource (the Ray cluster, the MLflow and Phoenix
    servers) rather than at the session's end: idle, the cluster alone burns about 2 CPU-s a minute beside the tests
    still to run. Only where the next test is in another file (whose module fixtures built on it are gone by then); a
    test asking for it later starts it again."""
    for name in ("ray_cluster", "mlflow_url", "phoenix_url"):
        if name in getattr(item, "fixturenames", ()) and (nextitem is None or (
                name not in getattr(nextitem, "fixturenames", ()) and getattr(nextitem, "path", None) != getattr(item, "path", None))):
            info = getattr(item, "_fixtureinfo", None)
            for fixturedef in (info.name2fixturedefs.get(name, ()) if info is not None else ()):
                if fixturedef.scope == "session" and fixturedef.cached_result is not None:
                    fixturedef.finish(item._request)  # type: ignore[attr-defined]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the live recordings in the background as soon as a collected test needs them.

    Under pytest-xdist every worker collects every test but only one runs the recordings'
    group, so there the fixture starts them when first asked instead.
    """
    if hasattr(session.config, "workerinput"):
        return
    if any("live_recordings" in getattr(item, "fixturenames", ()) for item in session.items):
        sys.path.insert(0, str(Path(__file__).parent / "frameworks"))
        import live

        live.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    mod = sys.modules.get("live")
    if mod is not None and hasattr(mod, "stop"):
        mod.stop()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Freeze what is alive before pytest's closing collections, so a worker ends in well under a second.

    Once every hook has run, pytest collects garbage five times over to surface unraisable exceptions
    (`_pytest.unraisableexception.cleanup`). A worker that has imported Ray, MLflow, Phoenix and the agent frameworks
    holds about a million objects: on a busy machine each collection took 2 to 7 s, and pytest-xdist's gateway
    interrupts a worker still busy 5 s after being told to end (a SIGINT: the `KeyboardInterrupt` printed in a gc
    callback after the last test, which once cost the summary line and the exit status). Frozen objects are left out
    of those collections (garbage left in a cycle by the last tests goes with the process).
    """
    import gc

    gc.freeze()
