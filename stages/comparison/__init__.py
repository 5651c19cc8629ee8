"""Run comparison: pair two runs' results by (case, trial) (`runs`) and show the deltas (`view`)."""
