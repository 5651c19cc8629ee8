"""What earlier segments of a run spent per panel model, and the answers they got, recounted from the spend journal.

A panel's summary has each model's requests, answers, tokens and dollars (`judge.panel.models`). A segment killed with
SIGKILL writes no summary, and a result line holds the whole panel's usage, not each member's: a resume that added its
own counts to the last summary's left out every model's share of what the killed segment spent. Each member's attempts
are journaled under its name (`tracejudge.llm.spend_journal`, `SpendJournal.for_model`), sent and settled, answered or
not, so the resume takes each model's figures from the journal when it holds more than the last summary, as it takes the
run's whole figures (`engine.run_summary._prior_judge`): money spent before a kill was spent. A request in flight at the
kill counts in its model's requests and, at its estimated prompt, in its input tokens and dollars; an answer the killed
segment paid for counts as answered whether or not its case got a result line (a resume takes it from the cache then,
and it is counted once, as in the run uninterrupted).

A journal written before its lines named their model, or marked their answers, has none of these: the summary's figures
stand. An unpriced model's dollars, which the journal counts as 0, stay unknown (`stage_summary`). `tracejudge report`
of a run without summary.json (killed before its first) rebuilds each model's figures from the journal alone
(`rebuilt_models`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["rebuilt_models", "with_journal_models"]


def _tokens(d: dict[str, Any]) -> int:
    return int(d.get("input_tokens") or 0) + int(d.get("output_tokens") or 0)


def _model(old: dict[str, Any], paid: dict[str, Any]) -> dict[str, Any]:
    """One model's figures of the earlier segments: `old` (the last summary's) raised to `paid` (the journal's)."""
    new = dict(old)
    new["requests"] = max(int(old.get("requests") or 0), paid["requests"])
    new["answered"] = max(int(old.get("answered") or 0), paid["answered"])
    cost = old.get("cost_usd", 0.0)
    if _tokens(paid) > _tokens(old):
        new["input_tokens"], new["output_tokens"] = paid["input_tokens"], paid["output_tokens"]
        if cost is not None:  # (unknown stays unknown: an unpriced model's, or a reply's without usage)
            new["cost_usd"] = paid["cost_usd_exact"]
    elif _tokens(paid) == _tokens(old) and isinstance(cost, (int, float)) and round(paid["cost_usd_exact"], 6) == cost:
        new["cost_usd"] = paid["cost_usd_exact"]  # carried on unrounded, as the run's (each segment's rounding would add up)
    return new


def with_journal_models(block: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The earlier segments' judge `block` with its `answered` and each panel model's `requests`, `answered`, tokens and
    dollars (`panel.models`) raised to what `run_dir`'s spend journal holds (`spend_by_model`), where it holds more."""
    from tracejudge.llm.spend_journal import spend_by_model

    paid = spend_by_model(run_dir)
    if paid is None:
        return block
    if paid["answered"] > int(block.get("answered") or 0):
        block["answered"] = paid["answered"]
    if paid["models"]:
        panel = dict(block.get("panel") or {})
        models = dict(panel.get("models") or {})
        for name, spent in paid["models"].items():
            models[name] = _model(dict(models.get(name) or {}), spent)
        block["panel"] = {**panel, "models": models}
    return block


def rebuilt_models(run_dir: Path, config: Any, block: dict[str, Any]) -> dict[str, Any]:
    """The judge `block` `tracejudge report` rebuilt from `run_dir`'s spend journal (no summary.json: `reports.judge_spend`)
    with the answers the journal marks and, for a panel (`config.judge.models`), each model's `requests`, `answered`,
    tokens, dollars and `priced` (a model without a price that billed tokens: dollars unknown, and so the panel's)."""
    from tracejudge.core.errors import ConfigError
    from tracejudge.llm.prices import price_for
    from tracejudge.llm.spend_journal import SPEND, spend_by_model
    from tracejudge.stages.judge.panel import panel_members

    paid = spend_by_model(run_dir) if block.get("spend_source") == SPEND else None  # (not when the lines showed more)
    if paid is None:
        return block
    if paid["answered"]:  # (a journal written before answers were marked has none: not known then)
        block = {**block, "answered": paid["answered"]}
    if config is None or config.judge is None:
        return block
    if not config.judge.models:
        # One model without a price: its journal holds $0 for each request, which is unknown, never $0 (as the run's own
        # summary says it); the rebuilt line said "$0.0000" after a kill.
        if price_for(config.judge.model, config.judge.prices) is None:
            block = {**block, "priced": False, **({"cost_usd": None} if block.get("input_tokens") or block.get("output_tokens") else {})}
        return block
    if not paid["models"]:
        return block
    try:
        priced = {m.name: price_for(m.cfg.model, m.cfg.prices) is not None for m in panel_members(config)}
    except ConfigError:  # (a recorded config this version reads otherwise: the run's figures stand alone)
        return block
    models: dict[str, Any] = {}
    for name, spent in sorted(paid["models"].items(), key=lambda kv: list(priced).index(kv[0]) if kv[0] in priced else len(priced)):
        known = priced.get(name, False) or _tokens(spent) == 0
        models[name] = {"requests": spent["requests"], "answered": spent["answered"], "input_tokens": spent["input_tokens"],
                        "output_tokens": spent["output_tokens"], "cost_usd": round(spent["cost_usd_exact"], 6) if known else None,
                        "priced": priced.get(name, False)}
    block = {**block, "priced": all(priced.values()), "panel": {"models": models}}
    if any(m["cost_usd"] is None for m in models.values()):
        block["cost_usd"] = None
    return block
