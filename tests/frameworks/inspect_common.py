"""Shared plumbing for the inspect-ai recorders (`record_inspect*.py`): scripted replies of the offline `mockllm/model`, the
`get_weather` tool, the run in a temporary home, the logs scrubbed of this machine's paths, and the command line.

inspect runs with a temporary directory as its working directory (outside any git checkout, so it records no `revision`)
and as `XDG_DATA_HOME`/`XDG_CACHE_HOME`, its log file names fixed to the task's (`INSPECT_EVAL_LOG_FILE_PATTERN`); every
log copied out is rewritten (`scrub`): the temporary directory, this checkout, the interpreter's prefix and the home
directory become `<tmp>`, `<repo>`, `<python>` and `<home>`. A `.eval` archive is rewritten member by member with inspect's
own zip settings (`zipfile_compress_kwargs`: Zstandard), in the same order.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

MODEL = "mockllm/model"


def script_turn(messages: list[Any], questions: dict[str, str], script: dict[str, list[tuple[Any, ...]]]) -> tuple[str, tuple[Any, ...]]:
    """(sample id, its next reply in `script`): the sample whose question (`questions`) is the conversation's user message,
    the reply by how many the model made so far."""
    question = next(m.text for m in messages if m.role == "user")
    sid = next(k for k, q in questions.items() if q == question)
    return sid, script[sid][sum(m.role == "assistant" for m in messages)]


def model_output(turn: tuple[Any, ...]) -> Any:
    """A scripted reply as mockllm's `ModelOutput`, without usage: `("text", text, …)` says `text`; `("calls", [(call id,
    tool, arguments)], text, …)` is a message saying `text` and making those calls (stop reason `tool_calls`)."""
    from inspect_ai.model import ChatMessageAssistant, ModelOutput
    from inspect_ai.tool import ToolCall

    if turn[0] == "text":
        return ModelOutput.from_content(model=MODEL, content=turn[1])
    message = ChatMessageAssistant(content=turn[2], model=MODEL, source="generate",
                                   tool_calls=[ToolCall(id=cid, function=name, arguments=args) for cid, name, args in turn[1]])
    return ModelOutput.from_message(message, stop_reason="tool_calls")


def weather_tool(weather: Callable[[str], str], parallel: bool | None = None) -> Any:
    """The `@tool` `get_weather(city)` (`parallel` as `@tool` takes it), whose run is `weather(city)`."""
    from inspect_ai.tool import tool

    @tool(name="get_weather", parallel=parallel)
    def get_weather() -> Any:
        async def execute(city: str) -> str:
            """Current weather in a city.

            Args:
                city: the city
            """
            return weather(city)

        return execute

    return get_weather()


def scrub(text: str, tmp: Path) -> str:
    """`text` without this machine's paths (module docstring): the longest first, so a prefix never cuts a longer one."""
    repo = Path(__file__).resolve().parents[2]
    names = {str(tmp): "<tmp>", str(tmp.resolve()): "<tmp>", str(repo): "<repo>", sys.prefix: "<python>",
             sys.base_prefix: "<python>", str(Path.home()): "<home>"}
    for path in sorted(names, key=len, reverse=True):
        if len(path) > 1:
            text = text.replace(path, names[path])
    return text


def scrub_file(path: Path, tmp: Path) -> None:
    """Rewrite a `.json` log, or each member of a `.eval` archive (same order, inspect's own compression), with `scrub`."""
    from inspect_ai._util.zipfile import zipfile_compress_kwargs  # (importing it lets zipfile write Zstandard before Python 3.14)

    if path.suffix == ".json":
        path.write_text(scrub(path.read_text(encoding="utf-8"), tmp), encoding="utf-8")
        return
    with zipfile.ZipFile(path) as src:
        members = [(info, src.read(info)) for info in src.infolist()]
    with zipfile.ZipFile(path, "w", **zipfile_compress_kwargs) as dst:
        for info, data in members:
            dst.writestr(info, scrub(data.decode("utf-8"), tmp).encode("utf-8"), compress_type=info.compress_type)


def record_logs(out: Path, tasks: Callable[[], list[Any]], scripted: Callable[..., Any], truth: Callable[[dict[str, Any]], dict[str, Any]],
                json_too: tuple[str, ...] = (), **options: Any) -> dict[str, Any]:
    """Run `tasks()` with `inspect_ai.eval(...)` on `mockllm/model` replying `scripted` (its `custom_outputs`), all tasks at
    once, in a temporary home (module docstring; `options`: more of `eval`'s arguments); copy each task's log to
    `out/<task>.eval`, and those of `json_too` also to `out/<task>.json` (inspect's own `write_eval_log`), scrubbed; write
    `out/truth.json`, `truth({task: its log as read_eval_log reads it})`, and return it. A task that did not succeed raises."""
    out = out.resolve()  # (inspect runs in another working directory)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="inspect-rec-"))
    saved = {k: os.environ.get(k) for k in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "INSPECT_EVAL_LOG_FILE_PATTERN")}
    os.environ.update(XDG_DATA_HOME=str(tmp / "data"), XDG_CACHE_HOME=str(tmp / "cache"), INSPECT_EVAL_LOG_FILE_PATTERN="{task}")
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        from inspect_ai import eval as inspect_eval
        from inspect_ai.log import read_eval_log, write_eval_log
        from inspect_ai.model import get_model

        made = tasks()
        logs = inspect_eval(made, model=get_model(MODEL, custom_outputs=scripted), log_dir=str(tmp / "logs"), log_format="eval",
                            display="none", max_tasks=len(made), **options)
        done = {}
        for log in logs:
            if log.status != "success":
                raise RuntimeError(f"{log.eval.task}: {log.status}: {log.error}")
            shutil.copyfile(log.location, out / f"{log.eval.task}.eval")
            done[log.eval.task] = read_eval_log(log.location)
            if log.eval.task in json_too:
                write_eval_log(done[log.eval.task], str(out / f"{log.eval.task}.json"), format="json")
        for path in sorted(out.glob("*.eval")) + [out / f"{t}.json" for t in json_too]:
            scrub_file(path, tmp)
    finally:
        os.chdir(cwd)
        os.environ.update({k: v for k, v in saved.items() if v is not None})
        for k in (k for k, v in saved.items() if v is None):
            os.environ.pop(k, None)
        shutil.rmtree(tmp, ignore_errors=True)
    known = truth(done)
    (out / "truth.json").write_text(json.dumps(known, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return known


def main(record: Callable[[Path], dict[str, Any]], doc: str, argv: list[str], show: bool = True) -> int:
    """A recorder's command line, `OUTDIR`: `record(OUTDIR)`, its truth printed when `show`; without one OUTDIR, the usage
    (the second paragraph of `doc`) and 2."""
    if len(argv) != 1:
        print(doc.split("\n\n")[1], file=sys.stderr)
        return 2
    known = record(Path(argv[0]))
    if show:
        print(json.dumps(known, indent=1))
    return 0
