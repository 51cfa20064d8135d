"""The tracescore service: receive, decode, store, assemble and transform spans; serve and command line."""

from tracescore.schemas.version import __version__

__all__ = ["__version__"]
