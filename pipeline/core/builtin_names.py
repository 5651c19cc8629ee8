"""The built-in names of input formats and metrics, each with the module that defines it.

`registry` looks a name up here to import only the module it needs (a run reading one native file does not import the
MLflow, Phoenix or Langfuse adapters, nor the judge's metrics), and lists names (`tracejudge list`, "did you mean")
without importing anything. Data only: a test checks these tables against what the modules register.
"""

from __future__ import annotations

__all__ = ["FORMAT_MODULES", "METRIC_CLASSES"]

# Built-in format name → the module whose import registers it (`register_format`).
FORMAT_MODULES: dict[str, str] = {
    "anthropic-messages": "tracejudge.stages.extract.anthropic_messages",
    "bfcl": "tracejudge.stages.extract.bfcl",
    "inspect": "tracejudge.stages.extract.inspect_samples",
    "json-path": "tracejudge.stages.extract.json_path",
    "langfuse": "tracejudge.stages.extract.langfuse_api",
    "mlflow": "tracejudge.stages.extract.mlflow_trace",
    "mlflow-server": "tracejudge.stages.extract.mlflow_server",
    "multivon": "tracejudge.stages.extract.multivon",
    "native": "tracejudge.stages.extract.native",
    "openai-agents": "tracejudge.stages.extract.openai_agents",
    "openai-messages": "tracejudge.stages.extract.openai_messages",
    "otel": "tracejudge.stages.extract.otel",
    "phoenix": "tracejudge.stages.extract.phoenix",
    "smolagents": "tracejudge.stages.extract.smolagents_memory",
    "tau-bench": "tracejudge.stages.extract.tau_bench",
    "tau-bench-tasks": "tracejudge.stages.extract.tau_bench_tasks",
    "tau2-bench": "tracejudge.stages.extract.tau2_bench",
}

_SCORE, _JUDGE = "tracejudge.stages.score", "tracejudge.stages.judge.metrics"
_GOAL = "tracejudge.stages.judge.promptfoo_goal"  # promptfoo's model-graded `trajectory:goal-success`: a judge metric
# Built-in metric type → `module:Class` (the class registers itself with `@register_metric`).
METRIC_CLASSES: dict[str, str] = {
    "AgentMemoryEval": f"{_JUDGE}:AgentMemoryEval",
    "ArgumentCorrectness": f"{_SCORE}.arguments:ArgumentCorrectness",
    "BfclRelevance": f"{_SCORE}.bfcl_relevance:BfclRelevance",
    "Contains": f"{_SCORE}.output:Contains",
    "ContextRelevance": f"{_JUDGE}:ContextRelevance",
    "Cost": f"{_SCORE}.usage:Cost",
    "DeepEvalToolCorrectness": f"{_SCORE}.deepeval_tool_correctness:DeepEvalToolCorrectness",
    "ExactMatch": f"{_SCORE}.output:ExactMatch",
    "Faithfulness": f"{_JUDGE}:Faithfulness",
    "JsonSchema": f"{_SCORE}.output:JsonSchema",
    "Latency": f"{_SCORE}.usage:Latency",
    "MaxModelRequests": f"{_SCORE}.budget:MaxModelRequests",
    "MaxToolCalls": f"{_SCORE}.budget:MaxToolCalls",
    "PassAtK": f"{_SCORE}.pass_at_k:PassAtK",
    "PassHatK": f"{_SCORE}.pass_at_k:PassHatK",
    "PlanQuality": f"{_JUDGE}:PlanQuality",
    "RecordedReward": f"{_SCORE}.recorded_reward:RecordedReward",
    "Regex": f"{_SCORE}.output:Regex",
    "RetrievalMRR": f"{_SCORE}.retrieval:RetrievalMRR",
    "RetrievalPrecision": f"{_SCORE}.retrieval:RetrievalPrecision",
    "RetrievalRecall": f"{_SCORE}.retrieval:RetrievalRecall",
    "Rubric": f"{_JUDGE}:Rubric",
    "StepFaithfulness": f"{_JUDGE}:StepFaithfulness",
    "TaskCompletion": f"{_JUDGE}:TaskCompletion",
    "TauOutputs": f"{_SCORE}.tau_outputs:TauOutputs",
    "TokenUsage": f"{_SCORE}.usage:TokenUsage",
    "ToolArgumentAccuracy": f"{_JUDGE}:ToolArgumentAccuracy",
    "ToolCallAccuracy": f"{_SCORE}.tool_call_accuracy:ToolCallAccuracy",
    "ToolCallNecessity": f"{_JUDGE}:ToolCallNecessity",
    "ToolCalls": f"{_SCORE}.tool_calls:ToolCalls",
    "ToolCorrectness": f"{_SCORE}.tool_correctness:ToolCorrectness",
    "TrajectoryEfficiency": f"{_JUDGE}:TrajectoryEfficiency",
    "TrajectoryMatch": f"{_SCORE}.trajectory:TrajectoryMatch",
    # promptfoo's assertions, under promptfoo's names (a class's `__name__` is its type: `promptfoo_trajectory._promptfoo_type`).
    "not-trajectory:goal-success": f"{_GOAL}:NotTrajectoryGoalSuccess",
    "not-tool-call-f1": f"{_SCORE}.promptfoo_tool_f1:NotToolCallF1",
    "tool-call-f1": f"{_SCORE}.promptfoo_tool_f1:ToolCallF1",
    "not-trajectory:step-count": f"{_SCORE}.promptfoo_trajectory:NotTrajectoryStepCount",
    "not-trajectory:tool-args-match": f"{_SCORE}.promptfoo_args_match:NotTrajectoryToolArgsMatch",
    "not-trajectory:tool-sequence": f"{_SCORE}.promptfoo_trajectory:NotTrajectoryToolSequence",
    "not-trajectory:tool-used": f"{_SCORE}.promptfoo_trajectory:NotTrajectoryToolUsed",
    "trajectory:goal-success": f"{_GOAL}:TrajectoryGoalSuccess",
    "trajectory:step-count": f"{_SCORE}.promptfoo_trajectory:TrajectoryStepCount",
    "trajectory:tool-args-match": f"{_SCORE}.promptfoo_args_match:TrajectoryToolArgsMatch",
    "trajectory:tool-sequence": f"{_SCORE}.promptfoo_trajectory:TrajectoryToolSequence",
    "trajectory:tool-used": f"{_SCORE}.promptfoo_trajectory:TrajectoryToolUsed",
    # promptfoo's deterministic output assertions (`promptfoo_text`, `promptfoo_format`), each with its `not-` form.
    "contains": f"{_SCORE}.promptfoo_text:Contains",
    "not-contains": f"{_SCORE}.promptfoo_text:NotContains",
    "icontains": f"{_SCORE}.promptfoo_text:IContains",
    "not-icontains": f"{_SCORE}.promptfoo_text:NotIContains",
    "contains-any": f"{_SCORE}.promptfoo_text:ContainsAny",
    "not-contains-any": f"{_SCORE}.promptfoo_text:NotContainsAny",
    "icontains-any": f"{_SCORE}.promptfoo_text:IContainsAny",
    "not-icontains-any": f"{_SCORE}.promptfoo_text:NotIContainsAny",
    "contains-all": f"{_SCORE}.promptfoo_text:ContainsAll",
    "not-contains-all": f"{_SCORE}.promptfoo_text:NotContainsAll",
    "icontains-all": f"{_SCORE}.promptfoo_text:IContainsAll",
    "not-icontains-all": f"{_SCORE}.promptfoo_text:NotIContainsAll",
    "equals": f"{_SCORE}.promptfoo_text:Equals",
    "not-equals": f"{_SCORE}.promptfoo_text:NotEquals",
    "starts-with": f"{_SCORE}.promptfoo_text:StartsWith",
    "not-starts-with": f"{_SCORE}.promptfoo_text:NotStartsWith",
    "levenshtein": f"{_SCORE}.promptfoo_text:Levenshtein",
    "not-levenshtein": f"{_SCORE}.promptfoo_text:NotLevenshtein",
    "regex": f"{_SCORE}.promptfoo_format:Regex",
    "not-regex": f"{_SCORE}.promptfoo_format:NotRegex",
    "is-json": f"{_SCORE}.promptfoo_format:IsJson",
    "not-is-json": f"{_SCORE}.promptfoo_format:NotIsJson",
    # inspect-ai's text scorers, under inspect's names (`inspect_scorers._inspect_name`).
    "answer": f"{_SCORE}.inspect_scorers:InspectAnswer",
    "exact": f"{_SCORE}.inspect_scorers:InspectExact",
    "f1": f"{_SCORE}.inspect_scorers:InspectF1",
    "includes": f"{_SCORE}.inspect_scorers:InspectIncludes",
    "match": f"{_SCORE}.inspect_scorers:InspectMatch",
    "pattern": f"{_SCORE}.inspect_scorers:InspectPattern",
}
