"""Every module of the package stays within 400 lines: one job a module, split along a seam when it grows past that.

A module split keeps its public names importable where they were (callers outside the package import them so).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 400


def test_no_module_is_longer_than_400_lines() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_bytes().splitlines()) for folder in ("pipeline", "stages") for p in (ROOT / folder).rglob("*.py")}
    assert len(sizes) > 100, sizes  # (the tree was found)
    assert {p: n for p, n in sizes.items() if n > MAX_LINES} == {}


def test_names_moved_out_of_a_module_are_still_importable_from_it() -> None:
    from tracejudge.core import builtin_names, yaml_checks
    from tracejudge.core.config_source import MAX_EXPANDED_NODES
    from tracejudge.core.registry import FORMAT_MODULES, METRIC_CLASSES
    from tracejudge.engine import manifest_history
    from tracejudge.engine.manifest import configs_by_segment, known_config, with_history
    from tracejudge.stages import reports
    from tracejudge.stages.reports import feed, finish, rebuilding

    assert FORMAT_MODULES is builtin_names.FORMAT_MODULES and METRIC_CLASSES is builtin_names.METRIC_CLASSES
    assert MAX_EXPANDED_NODES == yaml_checks.MAX_EXPANDED_NODES
    assert (configs_by_segment, known_config, with_history) == (manifest_history.configs_by_segment, manifest_history.known_config,
                                                                manifest_history.with_history)
    assert (reports.ReportFeed, reports.finish_run, reports.write_reports, reports.rebuild, reports.regression_baseline) == (
        feed.ReportFeed, finish.finish_run, finish.write_reports, rebuilding.rebuild, rebuilding.regression_baseline)
