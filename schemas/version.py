"""The tracescore version: the installed distribution's, as ``pyproject.toml`` declares it."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tracescore")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0.0.0+unknown"
