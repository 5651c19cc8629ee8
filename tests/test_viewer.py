"""`tracejudge view` driven in Debian's headless Chromium (Selenium + chromium-driver) over real runs of the demo data."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _runs import native_case, view_server, write_config, write_dataset
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait
from tracejudge.entrypoints.cli import main

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
needs_chromium = pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                    reason="chromium / chromium-driver are not installed (CI installs Debian's packages in .ci/run)")
pytestmark = needs_chromium

# Every element whose content is wider than its box, and whether the page scrolls sideways.
OVERFLOW_JS = """
const bad = [];
for (const el of document.querySelectorAll('td, th, pre, .reason, .call, .side, main, body')) {
  // A cell clipped on purpose ends in an ellipsis and holds its whole text in its title.
  if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).textOverflow !== 'ellipsis') {
    bad.push(el.tagName + '.' + el.className + ' ' + el.scrollWidth + '>' + el.clientWidth + ': ' + (el.textContent || '').slice(0, 60));
  }
}
const doc = document.documentElement;
if (doc.scrollWidth > doc.clientWidth) bad.push('page ' + doc.scrollWidth + '>' + doc.clientWidth);
return bad;
"""


def _demo_config(tmp: Path, tau_paths: tuple[Path, Path], name: str, writes_arguments: str) -> Path:
    cfg = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text())
    cfg["dataset"].update(path=str(tau_paths[0]), tasks=str(tau_paths[1]), limit=16)
    cfg["metrics"][0]["arguments"] = writes_arguments
    cfg["cache"] = {"dir": str(tmp / "cache")}
    cfg["run"] = {"dir": str(tmp / name)}
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory, tau_paths: tuple[Path, Path]) -> dict[str, Path]:
    """Real runs: `last-night` (write calls' arguments ignored) and `tonight` (exact, as the demo), 16 τ-bench cases each,
    judged by the simulator; `hostile`, a native run whose ids and traces hold HTML; `live`, a copy of part of `tonight`."""
    tmp = tmp_path_factory.mktemp("viewer")
    out = {}
    for name, args in (("last-night", "ignore"), ("tonight", "exact")):
        main(["run", str(_demo_config(tmp, tau_paths, name, args)), "--no-progress"])
        out[name] = tmp / name
        assert (out[name] / "summary.json").exists()
    evil = native_case('<img src=x onerror="window.pwned=1">', ["lookup"], ["lookup", "<b>drop</b>"], tags=["<i>t</i>"])
    evil["trace"]["output"] = "<script>window.pwned=1</script>" + "x" * 3000
    data = write_dataset(tmp / "hostile.jsonl", [evil, native_case("plain", ["lookup"], ["lookup"])])
    main(["run", str(write_config(tmp / "hostile.yaml", data, tmp / "hostile")), "--no-progress"])
    out["hostile"] = tmp / "hostile"
    live = tmp / "live"
    live.mkdir()
    shutil.copy(out["tonight"] / "manifest.json", live)
    lines = (out["tonight"] / "results.jsonl").read_bytes().splitlines(keepends=True)
    (live / "results.jsonl").write_bytes(b"".join(lines[:5]))
    out["live"] = live
    out["live-rest"] = tmp / "rest.jsonl"
    out["live-rest"].write_bytes(b"".join(lines[5:]))
    return out


@pytest.fixture(scope="session")
def server(runs: dict[str, Path]) -> Iterator[str]:
    """`tracejudge view` as a real process on a free port; yields its URL."""
    with view_server(str(runs["tonight"]), str(runs["hostile"]), str(runs["live"]), "--baseline", str(runs["last-night"])) as url:
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium at 1,400 px wide, a fresh profile, no network but loopback."""
    profile = tempfile.mkdtemp(prefix="tj-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--window-size=1400,1000"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def no_overflow(driver: Any) -> None:
    assert driver.execute_script("return document.documentElement.clientWidth") <= 1400
    bad = driver.execute_script(OVERFLOW_JS)
    assert bad == [], bad[:5]


def rows(driver: Any) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, "#cases tbody tr[data-case]")


def follow(driver: Any, element: Any) -> None:
    """Click a link or submit button and wait for the next page: reading before it loads finds stale elements."""
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 30).until(lambda _: _gone(old))
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")


def _gone(element: Any) -> bool:
    # Mid-navigation, chromedriver may answer "node does not belong to the document" (a plain
    # WebDriverException) rather than a stale reference: both mean the old page is gone.
    try:
        element.is_enabled()
    except WebDriverException:
        return True
    return False


def apply_filters(driver: Any) -> None:
    follow(driver, driver.find_element(By.ID, "f-apply"))


def test_runs_and_run_page(server: str, browser: Any) -> None:
    browser.get(server + "/")
    names = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#runs tbody td:first-child a")]
    assert set(names) == {"tonight", "hostile", "live", "last-night"}
    assert "FAIL" in browser.find_element(By.CSS_SELECTOR, '#runs tr[data-run="tonight"]').text
    no_overflow(browser)
    follow(browser, browser.find_element(By.LINK_TEXT, "tonight"))
    summary = browser.find_element(By.ID, "summary").text
    for metric in ("writes_exact", "TrajectoryMatch", "TaskCompletion"):
        assert metric in summary
    assert "[" in summary and "%" in summary  # CIs and pass rates
    assert browser.find_element(By.CSS_SELECTOR, 'table[data-breakdown="metadata.reward"]')  # the demo's group_by
    assert "requests" in browser.find_element(By.ID, "judge").text
    assert "writes_exact min_mean" in browser.find_element(By.ID, "checks").text
    no_overflow(browser)


def test_filter_failed_and_search_a_tool(server: str, browser: Any) -> None:
    browser.get(server + "/run/tonight/cases")
    total = int(browser.find_element(By.ID, "n-matching").text)
    assert total == 16 and len(rows(browser)) == 16
    no_overflow(browser)
    Select(browser.find_element(By.ID, "f-status")).select_by_value("failed")
    apply_filters(browser)
    failed = int(browser.find_element(By.ID, "n-matching").text)
    assert 0 < failed == len(rows(browser))
    for tr in rows(browser):  # every row shown has a failed verdict or an error
        assert tr.find_elements(By.CSS_SELECTOR, "td .chip.fail, td.bad")
    Select(browser.find_element(By.ID, "f-below")).select_by_value("writes_exact")
    apply_filters(browser)
    below = int(browser.find_element(By.ID, "n-matching").text)
    assert 0 < below < total
    assert all(tr.find_elements(By.CSS_SELECTOR, 'td[data-metric="writes_exact"] .chip.fail') for tr in rows(browser))
    no_overflow(browser)

    browser.get(server + "/run/tonight/cases")
    box = browser.find_element(By.ID, "f-q")
    box.send_keys("book_reservation")
    apply_filters(browser)
    found = int(browser.find_element(By.ID, "n-matching").text)
    assert 0 < found < total
    browser.get(server + "/run/tonight/cases?q=no-such-tool-anywhere")
    assert browser.find_element(By.ID, "n-matching").text == "0"

    def seattle(d: Any) -> bool:  # only in the conversations (the dataset), indexed in the background
        d.get(server + "/run/tonight/cases?q=Seattle")
        return int(d.find_element(By.ID, "n-matching").text) > 0

    WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,)).until(seattle)

    browser.get(server + "/run/tonight/cases?sort=writes_exact&desc=1&size=25")
    shown = [float(tr.find_element(By.CSS_SELECTOR, 'td[data-metric="writes_exact"]').text) for tr in rows(browser)]
    assert shown == sorted(shown, reverse=True)
    # The column header sorts too: a click on the sorted column reverses it.
    follow(browser, browser.find_element(By.CSS_SELECTOR, 'th[data-sort="metric:writes_exact"] a.sort'))
    shown = [float(tr.find_element(By.CSS_SELECTOR, 'td[data-metric="writes_exact"]').text) for tr in rows(browser)]
    assert shown == sorted(shown)


def test_case_page_transcript_alignment_and_baseline(server: str, browser: Any, runs: dict[str, Path]) -> None:
    browser.get(server + "/run/tonight/cases?below=writes_exact")
    follow(browser, browser.find_element(By.CSS_SELECTOR, "#cases a.case-link"))
    sides = browser.find_elements(By.CSS_SELECTOR, ".side")
    assert [s.get_attribute("data-run") for s in sides] == ["last-night", "tonight"]  # the baseline beside it
    side = sides[1]
    transcript = side.find_element(By.CSS_SELECTOR, ".transcript")
    assert transcript.find_elements(By.CSS_SELECTOR, ".step") and transcript.find_elements(By.CSS_SELECTOR, ".call .tool")
    users = transcript.find_elements(By.CSS_SELECTOR, ".msg.user[data-user]")  # the user's turns between the steps, shown
    assert len(users) > 1 and all(u.is_displayed() and u.text.lower().startswith("user") for u in users)
    assert "trace from" in transcript.find_element(By.CSS_SELECTOR, ".note").text  # re-read from the τ-bench file
    align = side.find_element(By.CSS_SELECTOR, '.alignment[data-metric="writes_exact"]')
    kinds = {tr.get_attribute("class") for tr in align.find_elements(By.CSS_SELECTOR, "tbody tr")}
    assert kinds & {"missing", "unexpected"}  # writes_exact failed here: something is unpaired
    assert side.find_elements(By.CSS_SELECTOR, '.judge-answers[data-metric="TaskCompletion"] tbody tr')
    assert len(side.find_elements(By.CSS_SELECTOR, "table.scores tbody tr")) == 5
    no_overflow(browser)


def test_diff_page_links_to_side_by_side_cases(server: str, browser: Any) -> None:
    browser.get(server + "/run/tonight")
    follow(browser, browser.find_element(By.CSS_SELECTOR, "a.diff-link"))
    delta = browser.find_element(By.CSS_SELECTOR, '#deltas tr[data-metric="writes_exact"]').text
    assert delta.split()[4].startswith("-")  # exact arguments score lower than ignored ones
    no_overflow(browser)
    link = browser.find_element(By.CSS_SELECTOR, "table.movers.regressed a.mover-link")
    case_id = link.text
    follow(browser, link)
    assert browser.find_element(By.ID, "case-id").text == case_id
    assert len(browser.find_elements(By.CSS_SELECTOR, ".sides.two .side")) == 2
    no_overflow(browser)


def test_untrusted_text_is_shown_not_run(server: str, browser: Any) -> None:
    browser.get(server + "/run/hostile/cases")
    assert browser.find_element(By.CSS_SELECTOR, "#cases a.case-link").text.startswith("<img")
    follow(browser, browser.find_element(By.CSS_SELECTOR, "#cases a.case-link"))
    assert "<script>window.pwned=1</script>" in browser.find_element(By.CSS_SELECTOR, ".msg.final").text
    assert browser.execute_script("return window.pwned === undefined")
    assert "<b>drop</b>" in browser.find_element(By.CSS_SELECTOR, ".transcript").text
    no_overflow(browser)  # 3,000 characters without a space wrap inside their box


def test_follows_a_run_being_written(server: str, browser: Any, runs: dict[str, Path]) -> None:
    browser.get(server + "/run/live/cases")
    assert browser.find_element(By.ID, "n-matching").text == "5"
    with open(runs["live"] / "results.jsonl", "ab") as fh:
        fh.write(runs["live-rest"].read_bytes())
    # (The page redraws its count as rows arrive: an element found just before a redraw is stale when read.)
    WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: d.find_element(By.ID, "n-matching").text == "16")
    assert len(rows(browser)) == 16


def test_report_html_fits_1400px(runs: dict[str, Path], browser: Any) -> None:
    browser.get((runs["tonight"] / "report.html").as_uri())
    assert browser.find_elements(By.CSS_SELECTOR, "svg.hist .ytick")  # counts on the y axis
    assert browser.find_element(By.CSS_SELECTOR, 'table[data-breakdown="metadata.reward"]')
    assert "tracejudge view" in browser.find_element(By.ID, "view-hint").text
    no_overflow(browser)
    browser.get((runs["hostile"] / "report.html").as_uri())
    no_overflow(browser)


def test_only_loopback_hosts_and_a_strict_csp(server: str) -> None:
    import urllib.error
    import urllib.request

    with urllib.request.urlopen(server + "/run/tonight") as resp:
        assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
    req = urllib.request.Request(server + "/", headers={"Host": "attacker.example"})  # a DNS-rebinding page
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req)
    assert err.value.code == 403


def test_root_compare_link_goes_from_the_baseline(server: str) -> None:
    import re
    import urllib.request

    with urllib.request.urlopen(server + "/") as resp:
        page = resp.read().decode()
    link = re.search(r'id="diff-link" href="([^"]+)">([^<]+)<', page)
    assert link is not None
    # `--baseline last-night`: the baseline is the diff's old side (a), the first other run the new one (b).
    assert "a=last-night" in link.group(1) and "b=tonight" in link.group(1), link.group(1)
    assert link.group(2) == "Compare last-night → tonight"


def test_diff_only_between_runs_of_the_same_dataset(server: str) -> None:
    import re
    import urllib.request

    def get(path: str) -> str:
        with urllib.request.urlopen(server + path) as resp:
            return resp.read().decode()

    page = get("/run/tonight")
    assert set(re.findall(r'class="diff-link" href="/diff\?a=([^&]+)&', page)) == {"last-night", "live"}  # the same τ-bench file
    apart = re.search(r'<details class="small" id="not-comparable">(.*?)</details>', page, re.S).group(1)
    assert 'data-run="hostile"' in apart and "different datasets: " in apart and "hostile.jsonl" in apart
    diff = get("/diff?a=hostile&b=tonight")
    assert 'id="not-comparable"' in diff and 'id="deltas"' not in diff
    assert "vs=hostile" not in get("/run/tonight/case?id=0-0&trial=0")  # no "beside" link to a run of other cases


def test_a_trial_no_index_can_hold_is_a_400_not_a_500(server: str) -> None:
    import urllib.error
    import urllib.request

    for trial in (str(2**63), str(2**64 + 5), "-1"):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(server + f"/run/tonight/case?id=x&trial={trial}")
        assert err.value.code == 400, trial
        assert "Traceback" not in err.value.read().decode()
