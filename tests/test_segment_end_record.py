"""`segment_end.json`: the end of a segment whose checkpoint's rewrite did not fit, applied by every reader of the
segments to the segment it names, and to no other (real files; the write error itself: test_segment_write_error)."""

from __future__ import annotations

import json
from pathlib import Path

from tracejudge.engine.run_state import last_segment_finished
from tracejudge.engine.segment_end_record import END_RECORD, with_end_record, write_end_record
from tracejudge.engine.segments_read import settled_segments

ERROR = "OSError: [Errno 28] No space left on device"


def _run_dir(tmp_path: Path, segments: list[dict]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.json").write_text(json.dumps({"segments": segments}))
    return run


def _segment(n: int, ended: str, pid: int = 100) -> dict:
    return {"segment": n, "pid": pid, "started_at": "2026-01-01T00:00:00Z", "elapsed_s": 1.0, "results": 5, "ended": ended, "usage": {}}


def test_the_running_segment_it_names_ends_error(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, [_segment(1, "finished"), _segment(2, "running")])
    assert write_end_record(run, {**_segment(2, "running"), "ended": "error", "error": ERROR, "lines_at_end": 10, "elapsed_s": 4.5})
    assert len((run / END_RECORD).read_bytes()) < 400
    settled = settled_segments(run)
    assert [(s["ended"], s.get("error"), s["elapsed_s"]) for s in settled] == [("finished", None, 1.0), ("error", ERROR, 4.5)]
    assert not last_segment_finished(run)


def test_a_segment_after_the_last_recorded_one_is_added(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, [_segment(1, "finished")])
    write_end_record(run, {**_segment(2, "running", pid=200), "ended": "error", "error": ERROR, "lines_at_end": 10})
    segments = [_segment(1, "finished")]
    assert with_end_record(run, segments)
    assert [(s["segment"], s["ended"], s["results"], s["pid"]) for s in segments] == [(1, "finished", 5, 100), (2, "error", 0, 200)]


def test_a_stale_or_unreadable_record_changes_nothing(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, [])
    end = {**_segment(2, "running"), "ended": "error", "error": ERROR, "lines_at_end": 10}
    write_end_record(run, end)
    for segments in ([_segment(1, "finished"), _segment(2, "finished")],  # a later checkpoint holds its end
                     [_segment(1, "finished"), _segment(2, "running", pid=999)],  # another process's segment 2
                     [_segment(1, "finished"), _segment(2, "error"), _segment(3, "running")],
                     [_segment(5, "finished")]):
        before = json.loads(json.dumps(segments))
        assert not with_end_record(run, segments) and segments == before
    (run / END_RECORD).write_text('{"segment": 2, "ended": "err')
    segments = [_segment(1, "finished"), _segment(2, "running")]
    assert not with_end_record(run, segments) and segments[-1]["ended"] == "running"


def test_a_run_directory_without_one_reads_as_before(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, [_segment(1, "running")])
    assert [s["ended"] for s in settled_segments(run)] == ["killed"]
