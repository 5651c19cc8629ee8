"""`tracejudge view` over run directories reached through symlinks, over HTTP on 127.0.0.1 (a real `tracejudge view`).

A run is served under the name the user sees (`runs/nightly`, a link to `store/run-0042`, is `/run/nightly`, not
`/run/run-0042`, which the folder does not show), and once: a link written beside the run it points to (`latest`)
leaves that run its own name, whether it was there when the viewer started or written since; a link retargeted while
the viewer runs is followed as a viewer started after it would follow it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _runs import copy_run, small_runs, view_server
from test_viewer_usability import get


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two runs of 3 native cases each, `north` and `south`, over datasets of their own."""
    return small_runs(tmp_path_factory.mktemp("symlinked"), ("north", "south"))


def _listed(url: str) -> list[str]:
    return re.findall(r'<tr data-run="([^"]+)"', get(url + "/?list")[1])


def test_a_symlinked_run_in_a_served_folder_is_served_once_under_its_own_name(built: dict[str, Path], tmp_path: Path) -> None:
    runs, store = tmp_path / "runs", tmp_path / "store"
    runs.mkdir()
    copy_run(built["north"], runs / "north")
    (runs / "a-latest").symlink_to("north")  # (sorts first: the run keeps its own name all the same)
    (runs / "nightly").symlink_to(copy_run(built["south"], store / "run-0042"))
    with view_server(str(runs)) as url:
        assert _listed(url) == ["nightly", "north"]
        page = get(url + "/?list")[1]
        assert ">nightly</a>" in page and "run-0042</a>" not in page
        assert get(url + "/run/nightly")[0] == 200 and get(url + "/run/nightly/case?id=south-0")[0] == 200
        assert get(url + "/run/run-0042")[0] == 404  # (the name of a folder the user does not serve)
        # Written since the viewer started: a link to a run outside is served by its name, a second name of one served not at all.
        (runs / "newest").symlink_to(copy_run(built["north"], store / "run-0077"))
        (runs / "also-north").symlink_to(runs / "north")
        (runs / "b-link").symlink_to("c-real")  # (a link and its target written at once: the target keeps its name)
        copy_run(built["south"], runs / "c-real")
        assert get(url + "/run/newest")[0] == 200
        assert _listed(url) == ["nightly", "north", "c-real", "newest"]
        assert get(url + "/run/also-north")[0] == 404 and get(url + "/run/b-link")[0] == 404


def test_a_served_path_that_is_a_symlink_is_named_as_given(built: dict[str, Path], tmp_path: Path) -> None:
    real = copy_run(built["south"], tmp_path / "store" / "run-0042")
    (tmp_path / "current").symlink_to(real)
    with view_server(str(tmp_path / "current")) as url:
        assert get(url + "/run/current")[0] == 200
        assert _listed(url) == ["current"]
    # Given under both names it is served once, under the directory's own.
    with view_server(str(tmp_path / "current"), str(real), str(built["north"])) as url:
        assert _listed(url) == ["run-0042", "north"]
    # A folder of runs given through a link is served as the folder it points to.
    (tmp_path / "folder").symlink_to(real.parent)
    with view_server(str(tmp_path / "folder")) as url:
        assert get(url + "/run/run-0042")[0] == 200


def test_a_link_retargeted_while_the_viewer_runs_is_served_as_a_fresh_start_would(built: dict[str, Path], tmp_path: Path) -> None:
    runs, store = tmp_path / "runs", tmp_path / "store"
    runs.mkdir()
    copy_run(built["north"], runs / "a")
    (runs / "latest").symlink_to(Path("..") / "store" / "r1")
    copy_run(built["south"], store / "r1")
    (runs / "nightly").symlink_to(copy_run(built["south"], store / "run-0042"))
    (runs / "nightly2").symlink_to("nightly")  # (a second name of `nightly`'s run: not served)
    with view_server(str(runs)) as url:
        assert _listed(url) == ["a", "latest", "nightly"]
        (runs / "latest").unlink()
        (runs / "latest").symlink_to("a")  # (`ln -sfn a runs/latest`: now a second name of `a`)
        assert _listed(url) == ["a", "nightly"]
        assert "vs latest" not in get(url + "/run/a")[1]  # (no run diffed with itself)
        status, page = get(url + "/run/latest")
        assert status == 410 and "now points to the run served as a" in page
        # A chain follows its links: `nightly` pointed at `a` leaves one run; pointed elsewhere, `nightly2` stays out.
        (runs / "nightly").unlink()
        (runs / "nightly").symlink_to("a")
        assert _listed(url) == ["a"]
        (runs / "nightly").unlink()
        (runs / "nightly").symlink_to(copy_run(built["north"], store / "run-0050"))
        assert _listed(url) == ["a", "nightly"]
        assert get(url + "/run/nightly2")[0] == 404
        # Pointed away again, a link is listed again; its run moved beside it (the link following) takes its own name.
        copy_run(built["south"], store / "b")
        (runs / "latest").unlink()
        (runs / "latest").symlink_to(Path("..") / "store" / "b")
        assert _listed(url) == ["a", "latest", "nightly"]
        (store / "b").rename(runs / "b")
        (runs / "latest").unlink()
        (runs / "latest").symlink_to("b")
        assert _listed(url) == ["a", "nightly", "b"]


def _case_ids(url: str, rid: str) -> tuple[int, list[str]]:
    status, page = get(f"{url}/run/{rid}/cases")
    return status, sorted(set(re.findall(r"\b(?:north|south)-\d\b", page)))


def _indexed(run_dir: Path) -> list[str]:
    """The case ids a run directory's own `view.idx` holds rows for."""
    import sqlite3

    db = sqlite3.connect(f"file:{run_dir / 'view.idx'}?mode=ro", uri=True)
    try:
        return sorted(row[0] for row in db.execute("SELECT case_id FROM results"))
    finally:
        db.close()


def test_a_run_directory_replaced_by_a_link_is_followed_as_a_link(built: dict[str, Path], tmp_path: Path) -> None:
    # A directory served as itself was never looked at again: replaced by a link to `a`, it was listed beside `a` and
    # its pages served `a`'s run under its own name.
    runs, store = tmp_path / "runs", tmp_path / "store"
    runs.mkdir()
    copy_run(built["north"], runs / "a")
    copy_run(built["south"], runs / "b")
    with view_server(str(runs)) as url:
        assert _case_ids(url, "b") == (200, ["south-0", "south-1", "south-2"])
        store.mkdir()
        (runs / "b").rename(store / "b")
        (runs / "b").symlink_to("a")
        status, page = get(url + "/run/b")  # (its own page first: a link to a run is followed there too)
        assert status == 410 and "now points to the run served as a" in page, (status, page[:300])
        assert _listed(url) == ["a"]
        # A link pointed at a run of its own again, and a link replaced by a directory again, are served as that run.
        (runs / "b").unlink()
        (runs / "b").symlink_to(store / "b")
        assert _listed(url) == ["a", "b"] and _case_ids(url, "b") == (200, ["south-0", "south-1", "south-2"])
        (runs / "b").unlink()
        copy_run(built["north"], runs / "b")
        assert _case_ids(url, "b") == (200, ["north-0", "north-1", "north-2"])


def test_a_link_retargeted_outside_the_folder_is_read_with_its_new_run_s_index(built: dict[str, Path], tmp_path: Path) -> None:
    # The index opened for the old target was kept: the new run's rows were written into the old run's view.idx.
    runs, store = tmp_path / "runs", tmp_path / "store"
    runs.mkdir()
    (runs / "latest").symlink_to(copy_run(built["south"], store / "r1"))
    with view_server(str(runs)) as url:
        assert _case_ids(url, "latest") == (200, ["south-0", "south-1", "south-2"])
        (runs / "latest").unlink()
        (runs / "latest").symlink_to(copy_run(built["north"], store / "r2"))
        assert _listed(url) == ["latest"]
        assert _case_ids(url, "latest") == (200, ["north-0", "north-1", "north-2"])
        assert _indexed(store / "r2") == ["north-0", "north-1", "north-2"]
        assert _indexed(store / "r1") == ["south-0", "south-1", "south-2"]
