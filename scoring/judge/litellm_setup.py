"""litellm, imported on first use and set up once: quiet, offline price map, no retries of its own."""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import sys
from types import ModuleType


@functools.cache
def litellm_module() -> ModuleType:
    """litellm, imported on first use (it is slow to import) and kept quiet and offline."""
    # Without this litellm downloads its price list at import time.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    # Retries are the judge's own (classified, with backoff). litellm's OpenAI embedding path reads
    # ``max_retries=0`` as "unset" and falls back to this default, so the SDK would retry as well.
    litellm.DEFAULT_MAX_RETRIES = 0  # type: ignore[misc]  # declared Final, yet the only switch there is
    _quiet_logs()
    return litellm


def _quiet_logs() -> None:
    """litellm's loggers write INFO lines to stdout (two per call), which is for machine output:
    their records go to the process's own handlers instead (stderr, scrubbed of secrets), warnings
    and worse only, unless the process logs at DEBUG (``tracescore -v``)."""
    verbose = logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(logging.DEBUG if verbose else logging.WARNING)


async def close_clients() -> None:
    """Close the HTTP clients litellm caches (their sessions belong to the running event loop).

    Call it before the loop that made judge calls ends (the service does on stop); without it
    aiohttp reports unclosed sessions when the process exits. Nothing to do if litellm was not used.
    """
    if "litellm" not in sys.modules:
        return
    litellm = litellm_module()
    from litellm.llms.custom_httpx.async_client_cleanup import close_litellm_async_clients

    await close_litellm_async_clients()  # type: ignore[no-untyped-call]  # litellm leaves it unannotated
    cache = litellm.in_memory_llm_clients_cache
    for client in list(getattr(cache, "cache_dict", {}).values()):
        close = getattr(client, "close", None)  # openai.AsyncOpenAI, which litellm's cleanup skips
        if close is not None and inspect.iscoroutinefunction(close):
            with contextlib.suppress(Exception):
                await close()
    cache.flush_cache()
