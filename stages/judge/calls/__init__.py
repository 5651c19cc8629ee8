"""The parts of the judge client (`tracejudge.stages.judge.client`), one job each.

`request` builds a provider-neutral request and its cache-key components,
`answers` parses a reply into answers and a score, `outcome` says how a
metric's judging ended (and which failures stop the run), `stats` counts
what the judge did, `guarded_cache` keeps a broken cache from failing cases,
`sending` sends one request (admission, budget, retries, billing) and
`asking` asks a plan's questions (cache, single flight, repair). `sending`
and `asking` hold the bodies of `Judge`'s methods, which `client.Judge` binds.
"""
