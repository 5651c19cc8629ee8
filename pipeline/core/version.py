"""The installed tracejudge version (from the distribution's metadata)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tracejudge")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"
