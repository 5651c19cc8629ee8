"""The peers' pytest plugins, for tests that start a fresh pytest process (no imports: a pytester run in-process must not see a module of ours pull numpy in)."""

from __future__ import annotations

# pytest plugins of the peers (and of tools they bring) that a fresh pytest process loads from their entry points;
# deepeval's alone imports for tens of CPU-seconds. A test about our plugin switches them off by name, which leaves
# ours to its own entry point.
PEER_PLUGINS = ("hypothesispytest", "deepeval", "phoenix", "langsmith_plugin", "asyncio", "benchmark")


def peer_plugins_off() -> list[str]:
    """`-p no:NAME` for each of `PEER_PLUGINS`, as pytest arguments."""
    return [arg for name in PEER_PLUGINS for arg in ("-p", f"no:{name}")]
