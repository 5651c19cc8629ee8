"""What a person sees first, in Debian's headless Chromium at 1,400×900: the case list, a case's transcript, report.html.

Each test saves a screenshot under its tmp dir (and into `$TRACEJUDGE_SCREENS` when set, to look at them).
Every wait is for a condition on the page, never for time.
"""

from __future__ import annotations

import os
import shutil
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _runs import view_server
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from test_viewer import REPO, browser, follow, needs_chromium, no_overflow  # noqa: F401  (browser: the shared fixture)
from tracejudge.entrypoints.cli import main

pytestmark = needs_chromium
WIDTH, HEIGHT = 1400, 900

# Rows of the table wholly inside the viewport.
VISIBLE_ROWS_JS = """
const h = window.innerHeight;
return [...document.querySelectorAll(arguments[0])].filter(r => {
  const b = r.getBoundingClientRect();
  return b.height > 0 && b.top >= 0 && b.bottom <= h;
}).length;
"""


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory, tau_paths: tuple[Path, Path]) -> Path:
    """The demo config over 60 τ-bench cases, judged by the simulator."""
    tmp = tmp_path_factory.mktemp("screens")
    cfg = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text())
    cfg["dataset"].update(path=str(tau_paths[0]), tasks=str(tau_paths[1]), limit=60)
    cfg["cache"] = {"dir": str(tmp / "cache")}
    cfg["run"] = {"dir": str(tmp / "demo")}
    path = tmp / "demo.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["run", str(path), "--no-progress"]) in (0, 1)
    return tmp / "demo"


@pytest.fixture(scope="module")
def server(demo_run: Path) -> Iterator[str]:
    """`tracejudge view RUN_DIR`: one run."""
    with view_server(str(demo_run)) as url:
        yield url


@pytest.fixture
def screen(browser: Any) -> Iterator[Any]:
    """The browser with a 1,400×900 viewport (exactly, whatever the window's decorations)."""
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
    try:
        yield browser
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def shoot(driver: Any, tmp_path: Path, name: str) -> Path:
    """Save a screenshot of the viewport as `tmp_path/name.png` (and copy it to `$TRACEJUDGE_SCREENS`)."""
    path = tmp_path / f"{name}.png"
    assert driver.save_screenshot(str(path)) and path.stat().st_size > 0
    if os.environ.get("TRACEJUDGE_SCREENS"):
        out = Path(os.environ["TRACEJUDGE_SCREENS"])
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, out / path.name)
    return path


def loaded(driver: Any, url: str) -> None:
    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")


def test_view_run_dir_opens_that_run(server: str, demo_run: Path) -> None:
    with urllib.request.urlopen(server + "/") as reply:  # redirects: one run is served
        assert reply.url.endswith("/run/demo")
        assert "<h1>demo " in reply.read().decode()
    with urllib.request.urlopen(server + "/?list") as reply:
        assert 'id=runs' in reply.read().decode()


def _indexed(driver: Any, url: str) -> None:
    # The case list's snippets come from the dataset's text index, built in the background when the run is first
    # served (under a second quiet, longer on a busy machine): until then the page says so and the cells are empty.
    deadline = time.monotonic() + 60
    loaded(driver, url)
    while "still being indexed" in driver.page_source and time.monotonic() < deadline:
        time.sleep(0.2)
        loaded(driver, url)


def test_case_list_shows_30_rows_at_1400x900(server: str, screen: Any, tmp_path: Path) -> None:
    _indexed(screen, server + "/run/demo/cases")
    assert screen.execute_script("return [window.innerWidth, window.innerHeight]") == [WIDTH, HEIGHT]
    visible = screen.execute_script(VISIBLE_ROWS_JS, "#cases tbody tr[data-case]")
    shoot(screen, tmp_path, "case-list-1400x900")
    assert visible >= 30, visible
    no_overflow(screen)
    first = screen.find_element(By.CSS_SELECTOR, "#cases tbody tr[data-case]")
    chips = first.find_elements(By.CSS_SELECTOR, ".chip")
    assert len(chips) == 5 and all(c.get_attribute("title").split(":")[0] for c in chips)  # one per metric, reason on hover
    assert {c.get_attribute("class").split()[1] for c in screen.find_elements(By.CSS_SELECTOR, ".chip")} >= {"pass", "fail"}
    assert first.find_element(By.CSS_SELECTOR, "td.snippet").text  # the request's first words
    why = screen.find_element(By.CSS_SELECTOR, "#cases tbody tr.why")
    assert not why.is_displayed()
    first.find_element(By.CSS_SELECTOR, "button.expand").click()
    WebDriverWait(screen, 30).until(lambda _: why.is_displayed())
    assert "writes_exact" in why.text and "TaskCompletion" in why.text  # every reason in full
    # The status column sorts by a click on its header.
    follow(screen, screen.find_element(By.CSS_SELECTOR, 'th[data-sort="status"] a.sort'))
    assert "sorted" in screen.find_element(By.CSS_SELECTOR, 'th[data-sort="status"]').get_attribute("class")


def test_transcript_screen(server: str, screen: Any, tmp_path: Path) -> None:
    loaded(screen, server + "/run/demo/cases?below=writes_exact")
    follow(screen, screen.find_element(By.CSS_SELECTOR, "#cases a.case-link"))
    transcript = screen.find_element(By.CSS_SELECTOR, ".transcript")
    screen.execute_script("arguments[0].scrollIntoView()", transcript)
    users = transcript.find_elements(By.CSS_SELECTOR, ".msg.user[data-user]")
    calls = transcript.find_elements(By.CSS_SELECTOR, ".call")
    assert users and calls and transcript.find_elements(By.CSS_SELECTOR, ".msg.agent")
    assert transcript.find_elements(By.CSS_SELECTOR, ".tool-result details.json[open]")  # τ-bench results are JSON: indented, foldable
    shoot(screen, tmp_path, "transcript")
    no_overflow(screen)


def test_report_first_screen(demo_run: Path, screen: Any, tmp_path: Path) -> None:
    loaded(screen, (demo_run / "report.html").as_uri())
    WebDriverWait(screen, 30).until(lambda d: d.find_element(By.ID, "rows-shown").text == "60")
    verdict = screen.find_element(By.ID, "verdict")
    assert verdict.text == "PASS" and verdict.location["y"] < HEIGHT  # the verdict on the first screen
    shoot(screen, tmp_path, "report-first-screen")
    assert len(screen.find_elements(By.CSS_SELECTOR, "#cases tbody tr[data-case]")) == 50  # one page of 60 results
    assert screen.find_element(By.ID, "pages").text == "2"
    assert screen.execute_script("return document.documentElement.scrollHeight") < 8 * HEIGHT  # a page, not a scroll of 60 cases
    no_overflow(screen)
    screen.find_element(By.ID, "cases").location_once_scrolled_into_view
    shoot(screen, tmp_path, "report-case-table")


def test_transcript_of_a_text_result_screen(tmp_path_factory: pytest.TempPathFactory, screen: Any, tmp_path: Path) -> None:
    from helpers import DATA

    tmp = tmp_path_factory.mktemp("kagent")
    cfg = {"dataset": {"path": str(DATA / "otel_genai" / "kagent" / "v1.0.0-alpha9" / "adk_go_1turn.json"), "format": "otel"},
           "metrics": [{"type": "ToolCorrectness", "allow_extra": True}], "run": {"dir": str(tmp / "kagent")}}
    (tmp / "k.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["run", str(tmp / "k.yaml"), "--no-progress"]) in (0, 1)
    with view_server(str(tmp / "kagent")) as url:
        loaded(screen, url + "/run/kagent/cases")
        follow(screen, screen.find_element(By.CSS_SELECTOR, "#cases a.case-link"))
        result = screen.find_element(By.CSS_SELECTOR, ".tool-result pre.text")
        lines = result.text.splitlines()
        assert lines[0].split() == ["NAME", "STATUS", "AGE"] and len(lines) > 5  # the kubectl table as written, a row a line
        screen.execute_script("arguments[0].closest('.call').scrollIntoView()", result)
        shoot(screen, tmp_path, "transcript-text-result")
        no_overflow(screen)
