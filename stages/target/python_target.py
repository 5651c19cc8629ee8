"""Target kind `python`: call a function of the user's, sync or async, once per turn."""

from __future__ import annotations

import inspect
import sys
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
from tracejudge.core.errors import ConfigError, describe, leaves, text_of
from tracejudge.core.registry import import_user_module
from tracejudge.core.user_code import AnotherConfigsModule
from tracejudge.core.user_code import where_imported
from tracejudge.llm.redact import redact
from tracejudge.stages.target.protocol import TargetError, TargetReply, TargetRequest, TransientTargetError, coerce_reply

__all__ = ["agent_traceback", "load_callable", "python_caller"]


def load_callable(spec: str, pythonpath: Path | None = None) -> Callable[..., Any]:
    """Import `pkg.module:attr` (dots after the colon walk attributes).

    `pythonpath` is put first on `sys.path` before importing; the module is
    also searched in the config's folder and the current directory
    (`registry.import_user_module`). Raises `ConfigError` naming the spec when
    the module or attribute is missing or not callable; an exception raised
    while importing the module is reported with its type and message.
    """
    if pythonpath is not None and str(pythonpath) not in sys.path:
        sys.path.insert(0, str(pythonpath))
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = import_user_module(module_name)
    except AnotherConfigsModule as exc:
        raise ConfigError(f"target.callable: {exc}") from None
    except ModuleNotFoundError as exc:
        raise ConfigError(f"target.callable: cannot import module {module_name!r}: {exc} "
                          "(searched target.pythonpath, PYTHONPATH, the config's folder and the current directory)"
                          f"{where_imported(module_name, shadowed_only=True)}") from None
    except Exception as exc:
        raise ConfigError(f"target.callable: importing {module_name!r} raised {type(exc).__name__}: {text_of(exc)}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            # (which file: an installed package of the same name shadows a module beside the config: `agents`, `tools`)
            raise ConfigError(f"target.callable: {module_name!r} has no attribute {attr!r}{where_imported(module_name)}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError(f"target.callable: {spec!r} is not callable")
    return cast(Callable[..., Any], obj)


_OURS = (str(Path(__file__).resolve()), str(Path(anyio.__file__).resolve().parent))


def agent_traceback(exc: BaseException) -> str:
    """`exc`'s traceback from the agent's first frame on (the calling machinery left out), redacted.

    Credentials in the text (the exception's message, source lines shown
    in the frames) are replaced as in every text copied into a result.
    """
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and str(Path(tb.tb_frame.f_code.co_filename).resolve()).startswith(_OURS):
        tb = tb.tb_next
    return redact("".join(traceback.format_exception(type(exc), exc, tb)))


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def python_caller(fn: Callable[..., Any]) -> Callable[[TargetRequest], Awaitable[TargetReply]]:
    """Wrap `fn(request: TargetRequest)` as an async target call.

    An async `fn` is awaited; a sync one runs in a worker thread so it never
    blocks the event loop. A thread cannot be killed: when the case times out
    the call is abandoned and its thread finishes in the background.
    `TransientTargetError`, `ConnectionError` and `TimeoutError` from `fn` are
    retried, also when raised inside an exception group made only of them; any
    other exception fails the case with its type and message (a group's, those
    of what it holds: `core.errors.describe`).
    """
    is_async = _is_async(fn)

    async def call(request: TargetRequest) -> TargetReply:
        try:
            if is_async:
                value = await fn(request)
            else:
                value = await anyio.to_thread.run_sync(fn, request, abandon_on_cancel=True)
                if inspect.isawaitable(value):
                    value = await value
        except TargetError:
            raise
        except Exception as exc:
            # An agent that runs things in a task group raises what failed inside an exception group: a dropped
            # connection there is as transient as one raised alone, and the message names what failed.
            found = leaves(exc)
            if all(isinstance(e, (ConnectionError, TimeoutError, TransientTargetError)) for e in found):
                raise TransientTargetError(redact(describe(exc))) from None
            failed = TargetError(redact(describe(exc)))
            failed.traceback = agent_traceback(exc)
            raise failed from None
        return coerce_reply(value)

    return call
