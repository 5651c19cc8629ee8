"""Agent runs started side by side under one span: each its own run, never one run's interleaved steps.

An eval harness often starts several runs at once under a span of its own:
the OpenAI Agents SDK's `asyncio.gather(Runner.run(a, q1), Runner.run(a, q2))`
inside `trace("eval-batch")` (OpenInference records the trace as an AGENT span
over one `Agent workflow` CHAIN a run), LangGraph's `graph.batch([...])` inside
a plain OTel span (a `LangGraph` CHAIN a run). Nothing under the outer span
says these are one run: it records no input of its own, and its runs overlap
in time, each with its own question, steps and answer. Read as one run, the
outer span became the anchor of every request (`assemble`), so the second
run's question was lost and the two runs' steps interleaved.

`run_heads` finds such runs under a *container*: a span that is no model
request, tool call or retrieval, records no request, and has no ancestor that
does (a run's own spans are never split). Its children holding model requests
are runs of their own when all of them are agent or chain spans, each ran at
the same time as another (a child that ran alone, as a fan-out's reduce step,
makes them one run's steps), and each is a run: an agent span or one holding
an agent span, or, under a container that is no agent span itself (a plain
span, a chain), a span that records its request (a graph run's input). A plain
span of no role (a harness's per-case span, the Agents SDK export's `task`
span) is looked through when it wraps one run. The roots of one trace are a container's children too (the
Agents SDK's own export records its trace as no span: its runs are roots). A run's own parts that overlap (an input guardrail beside the
first request, parallel tool calls, a LangGraph fan-out's nodes) are not split.

`assemble` anchors a span inside a run on the run's outermost agent span (or
the head itself) and keeps each run's anchors together; `split_runs` is
`group_by: run`'s split of one trace, which also splits such runs.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.conventions.openllmetry_agents import own, within
from tracejudge.stages.extract.otel.conventions.mlflow_agents import sdk_trace as mlflow_sdk_trace
from tracejudge.stages.extract.otel.conventions.scopeless import agents_sdk_trace
from tracejudge.stages.extract.otel.messages import user_texts
from tracejudge.stages.extract.otel.spans import Group, Span
from tracejudge.stages.extract.otel.view import present

__all__ = ["run_heads", "split_runs", "run_anchor"]

_HOPS = 10_000  # a parent chain longer than this is a cycle in a hostile export
_RUNS = ("agent", "chain")  # the spans a framework records a run as


def run_heads(spans: list[Span], views: dict[str, Any]) -> dict[str, Span]:
    """The head of the concurrent run each span is in, by span id (heads included); `{}` when no span is in one.

    `views` are the spans' views (`conventions.group_views`). Heads are never
    nested: the spans under a head are that run's.
    """
    index = {s.span_id: s for s in spans}
    kids: dict[str, list[Span]] = {}
    roots = []
    for s in spans:
        if s.parent_id in index and s.parent_id != s.span_id:
            kids.setdefault(s.parent_id, []).append(s)  # type: ignore[index]
        else:
            roots.append(s)
    holds = _above(spans, index, lambda s: views[s.span_id].role == "model")
    agents = _above(spans, index, lambda s: views[s.span_id].role == "agent")
    tools = [s for s in spans if own(s, "tool")]
    inward = _throughs(spans, kids, holds, views)

    def through(span: Span) -> Span:
        got = inward.get(id(span))
        return got if got is not None else _through(span, kids, holds, views)

    heads: dict[str, Span] = {}
    stack: list[Span] = []
    for tops in _by_trace(roots).values():  # a trace's roots are the runs of an unnamed container: the trace itself
        runs = _not_in_a_tool([through(r) for r in tops if r.span_id in holds], tools)
        if _side_by_side(runs) and all(_is_run(r, None, agents, views) for r in runs):
            for r in runs:
                _claim(r, kids, heads)
        else:
            stack.extend(tops)
    seen: set[str] = set()
    while stack:  # top down, without recursion: a hostile trace may nest spans thousands deep
        node = stack.pop()
        if node.span_id in seen or not _container(node, views):
            continue  # a request, a call or a run records its own: what is under it is that run's
        seen.add(node.span_id)
        runs = _not_in_a_tool([through(c) for c in kids.get(node.span_id, []) if c.span_id in holds], tools)
        # (the Agents SDK's trace span, as OpenInference or MLflow writes it, holds each `Runner.run` in it as a run of its
        # own, one after another too, when no run's request goes on with the one before: a harness's loop over questions)
        sdk_trace = agents_sdk_trace(node, spans) or mlflow_sdk_trace(node, kids.get(node.span_id, []))
        if (_side_by_side(runs) or (len(runs) > 1 and sdk_trace and _fresh(runs, kids, views))) \
                and all(_is_run(r, node, agents, views) for r in runs):
            for r in runs:
                _claim(r, kids, heads)
            continue
        stack.extend(c for c in kids.get(node.span_id, []) if c.span_id in holds)
    return heads


def run_anchor(span: Span, head: Span, index: dict[str, Span], role: dict[str, Any]) -> Span:
    """The anchor of `span` inside the run `head` heads: `head` when it is an agent span, else the outermost agent
    span between them (the Agents SDK's agent under its `Agent workflow` CHAIN), else `head` (a LangGraph graph run)."""
    if role[head.span_id] == "agent":
        return head
    top, node, hops = None, index.get(span.span_id), 0
    while node is not None and node is not head and hops < _HOPS:
        if role[node.span_id] == "agent":
            top = node
        node = index.get(node.parent_id or "") if node.parent_id != node.span_id else None
        hops += 1
    return top or head


def split_runs(trace: Group) -> list[Group]:
    """One trace split into its runs (`group_by: run`): its top-level agent runs, and the concurrent runs of `run_heads`.

    A span inside a concurrent run belongs to that run's head; any other span to its outermost agent span. A
    span outside every run (the container above concurrent runs, set-up spans) joins the first run. One run
    only: `[trace]`. Case ids are `<trace key>:<span id of the run's head or outermost agent span>`.
    """
    index = {s.span_id: s for s in trace.spans}
    views = group_views(trace)
    heads = run_heads(trace.spans, views)
    above = _ancestors({h.span_id for h in heads.values()}, index)  # containers of runs: no run of their own
    owner: dict[str, str | None] = {}
    for span in trace.spans:
        if span.span_id in heads:
            owner[span.span_id] = heads[span.span_id].span_id
            continue
        top = _outermost_agent(span, index, views)
        owner[span.span_id] = None if top is None or top in above else top
    _to_hosts(owner, trace.spans, index)
    tops = list(dict.fromkeys(o for o in owner.values() if o is not None))
    if len(tops) < 2:
        return [trace]
    parts: dict[str, list[Span]] = {t: [] for t in tops}
    for span in trace.spans:
        parts[owner[span.span_id] or tops[0]].append(span)
    return [Group(key=f"{trace.key}:{top}", key_attr="run", traces=trace.traces, spans=parts[top],
                  views={s.span_id: views[s.span_id] for s in parts[top]}) for top in tops]


def _container(span: Span, views: dict[str, Any]) -> bool:
    """Whether `span` may hold runs: no model request, tool call or retrieval, and no request of its own recorded."""
    v = views[span.span_id]
    return v.role in (None, "agent", "chain") and not present(v.request)


def _above(spans: list[Span], index: dict[str, Span], pred: Any) -> set[str]:
    """The ids of the spans for which `pred` holds and of every span above one."""
    out: set[str] = set()
    for s in spans:
        if not pred(s):
            continue
        node: Span | None = s
        hops = 0
        while node is not None and node.span_id not in out and hops < _HOPS:
            out.add(node.span_id)
            node = index.get(node.parent_id or "") if node.parent_id != node.span_id else None
            hops += 1
    return out


def _is_run(span: Span, container: Span | None, agents: set[str], views: dict[str, Any]) -> bool:
    """Whether `span`, a child of `container` (`None`: a root of the trace), is a run: an agent span or one above an
    agent span, or a span that records its request under a container that is no agent span (an agent's own nodes
    record theirs too)."""
    if views[span.span_id].role not in _RUNS:
        return False
    if span.span_id in agents:
        return True
    return (container is None or views[container.span_id].role != "agent") and present(views[span.span_id].request)


def _by_trace(roots: list[Span]) -> dict[str, list[Span]]:
    """`roots` by trace id, in their order (a conversation's group may hold several traces)."""
    out: dict[str, list[Span]] = {}
    for r in roots:
        out.setdefault(r.trace_id, []).append(r)
    return out


def _through(span: Span, kids: dict[str, list[Span]], holds: set[str], views: dict[str, Any]) -> Span:
    """`span`, or, for a span of no role (a harness's own span, the Agents SDK export's `task` span) wrapping one
    run, that run's span."""
    hops = 0
    while hops < _HOPS and (inner := _inner(span, kids, holds, views)) is not None:
        span, hops = inner, hops + 1
    return span


def _inner(span: Span, kids: dict[str, list[Span]], holds: set[str], views: dict[str, Any]) -> Span | None:
    """The one run `_through` steps into from `span`, else None (`span` has a role, or not exactly one such child)."""
    if views[span.span_id].role is not None:
        return None
    inner = [c for c in kids.get(span.span_id, []) if c.span_id in holds]
    return inner[0] if len(inner) == 1 else None


def _throughs(spans: list[Span], kids: dict[str, list[Span]], holds: set[str], views: dict[str, Any]) -> dict[int, Span]:
    """`_through` of each of `spans`, by `id()` of the span, in one pass; a span whose steps reach a cycle is left out.

    Walking down from every span of a chain of wrappers is quadratic in its depth (thousands of nested spans): each span
    steps into at most one, so the steps form chains ending at a span that stops; walked up from those ends once, a span
    `d` steps above its end gets the span `min(d, _HOPS)` steps below it, as `_through` would."""
    above: dict[int, list[Span]] = {}
    ends = []
    for s in spans:
        step = _inner(s, kids, holds, views)
        if step is None:
            ends.append(s)
        else:
            above.setdefault(id(step), []).append(s)
    out: dict[int, Span] = {}
    for end in ends:
        path = [end]
        out[id(end)] = end
        todo = [(s, 1) for s in above.get(id(end), [])]
        while todo:  # (no recursion: the chain may be thousands deep)
            node, depth = todo.pop()
            del path[depth:]
            path.append(node)
            out[id(node)] = path[max(depth - _HOPS, 0)]
            todo.extend((s, depth + 1) for s in above.get(id(node), []))
    return out


def _to_hosts(owner: dict[str, str | None], spans: list[Span], index: dict[str, Span]) -> None:
    """Give the spans of an agent run inside a tool span (`_not_in_a_tool`) to the run of that tool's call, in place."""
    tools = [s for s in spans if own(s, "tool")]
    if not tools:
        return
    host: dict[str, str | None] = {}
    for top in set(owner.values()):
        r = index.get(top or "")
        tool = _host_tool(r, tools) if r is not None else None
        if r is not None and tool is not None:
            host[r.span_id] = owner.get(tool.span_id)
    for _ in range(len(host)):  # a sub-agent's sub-agent: follow the hosts up (bounded: a cycle stops)
        changed = False
        for sid, top in owner.items():
            if top in host and host[top] != top:
                owner[sid] = host[top]
                changed = True
        if not changed:
            break


def _not_in_a_tool(runs: list[Span], tools: list[Span]) -> list[Span]:
    """`runs` without OpenLLMetry's openai-agents agent spans that ran inside one of its tool spans (`Runner.run` in a
    tool's body): that instrumentation parents them on the workflow span beside their caller, so they overlap it in
    time, but they are the call's sub-agent (`turns`, `openllmetry_agents.Hosts`), not a run side by side with it."""
    return [r for r in runs if _host_tool(r, tools) is None] if tools else runs


def _host_tool(run: Span, tools: list[Span]) -> Span | None:
    """The innermost of `tools` that `run`, an OpenLLMetry openai-agents agent span, ran inside (`within`), else None."""
    if not own(run, "agent"):
        return None
    inside = [t for t in tools if within(run, t)]
    return min(inside, key=lambda t: t.end - t.start) if inside else None


def _side_by_side(runs: list[Span]) -> bool:
    """Whether there are two or more `runs` and each ran at the same time as another (started before it ended).

    In start order a run met another when one before it was still running (the latest end so far is past its
    start) or the next one started before it ended: O(n log n) for a batch of thousands.
    """
    if len(runs) < 2:
        return False
    ordered = sorted(runs, key=lambda s: (s.start, s.end))
    latest = None
    for i, r in enumerate(ordered):
        before = latest is not None and latest > r.start
        after = i + 1 < len(ordered) and ordered[i + 1].start < r.end
        if not (before or after):
            return False
        latest = r.end if latest is None else max(latest, r.end)
    return True


def _fresh(runs: list[Span], kids: dict[str, list[Span]], views: dict[str, Any]) -> bool:
    """Whether each of `runs` (in start order) asks its first model request without the user messages of the run
    before it: a conversation's next turn (`Runner.run(agent, result.to_input_list() + [...])`) repeats them and
    stays one conversation's turns (`turns`), a fresh question does not and would be lost in it."""
    asked = [user_texts(views[m.span_id].inputs or []) if (m := _first_request(r, kids, views)) else [] for r in sorted(runs, key=lambda s: (s.start, s.span_id))]
    return all(not before or after[: len(before)] != before for before, after in zip(asked, asked[1:]))


def _first_request(run: Span, kids: dict[str, list[Span]], views: dict[str, Any]) -> Span | None:
    """The model request under `run` that started first, else None."""
    found: list[Span] = []
    stack, seen = [run], set()
    while stack:
        node = stack.pop()
        if node.span_id in seen:
            continue  # (a loop of parents in a hostile export: each span once)
        seen.add(node.span_id)
        if views[node.span_id].role == "model":
            found.append(node)
            continue
        stack.extend(kids.get(node.span_id, []))
    return min(found, key=lambda s: (s.start, s.span_id)) if found else None


def _claim(head: Span, kids: dict[str, list[Span]], heads: dict[str, Span]) -> None:
    """Map `head` and every span under it to `head`."""
    stack = [head]
    while stack:
        s = stack.pop()
        if s.span_id in heads:
            continue
        heads[s.span_id] = head
        stack.extend(kids.get(s.span_id, []))


def _ancestors(ids: set[str], index: dict[str, Span]) -> set[str]:
    """The ids of every strict ancestor of the spans `ids`."""
    out: set[str] = set()
    for sid in ids:
        node = index.get(index[sid].parent_id or "") if sid in index else None
        hops = 0
        while node is not None and node.span_id not in out and hops < _HOPS:
            out.add(node.span_id)
            node = index.get(node.parent_id or "") if node.parent_id != node.span_id else None
            hops += 1
    return out


def _outermost_agent(span: Span, index: dict[str, Span], views: dict[str, Any]) -> str | None:
    """The id of the outermost agent span at or above `span` (`None`: none)."""
    top: str | None = None
    node: Span | None = span
    hops = 0
    while node is not None and hops < _HOPS:
        if views[node.span_id].role == "agent":
            top = node.span_id
        node = index.get(node.parent_id or "") if node.parent_id != node.span_id else None
        hops += 1
    return top
