"""The parts of `tracejudge bench` (`tracejudge.entrypoints.bench`, which runs them in order).

`requests` builds what is sent, `sender` sends it under the limiter and the
cost cap, `ramp` finds the knee, `measure` reads the sustained rates off the
held level, `project` scales them to the config's full sweep and the `limits:`
block, `table` prints the report.
"""
