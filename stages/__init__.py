"""The pipeline's stages: load, target, extract, score, judge, aggregate, report.

Each stage takes and returns records (`tracejudge.core.records`); only `load` and
`report` touch files, so a stage can run on a worker that shares no disk.
"""
