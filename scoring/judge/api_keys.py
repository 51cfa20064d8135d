"""Which API key a judge call carries, and which variable to set when the provider refuses it.

A judge's own key (``scoring.judge.api_key``, ``--judge-api-key``, ``TRACESCORE_JUDGE_API_KEY``) goes
with every call; without one litellm reads the provider's variable (``OPENAI_API_KEY``, ...). A judge
with an ``api_base`` of its own and no key anywhere gets ``NO_KEY``: a local OpenAI-compatible server
(Ollama, vLLM, llama.cpp) wants none, but the OpenAI client refuses to send a request without one.
"""

from __future__ import annotations

import os

from tracescore.scoring.judge.litellm_setup import litellm_module

# Sent as the key to an api_base when no key is configured: local servers ignore it, and a server that
# does want one answers 401, which names the variable to set.
NO_KEY = "tracescore-no-key"
JUDGE_KEY_VARIABLE = "TRACESCORE_JUDGE_API_KEY"
_CREDENTIAL_WORDS = ("KEY", "TOKEN", "SECRET")


def provider_of(model: str) -> str | None:
    """litellm's provider of ``model`` (``openai`` for ``gpt-4o-mini``); None when it knows none."""
    try:
        return str(litellm_module().get_llm_provider(model=model)[1])
    except Exception:  # litellm raises BadRequestError for a model without a provider
        return None


def _provider_has_key(model: str) -> bool:
    litellm = litellm_module()
    if litellm.api_key:
        return True
    try:
        return bool(litellm.validate_environment(model=model)["keys_in_environment"])
    except Exception:
        return False


def api_key_for(model: str, api_key: str | None, api_base: str | None) -> str | None:
    """The key to pass to litellm for a call to ``model``: the judge's own, else ``NO_KEY`` for an
    ``api_base`` when the provider's variable is unset too, else None (litellm reads the variable)."""
    if api_key:
        return api_key
    if api_base and not _provider_has_key(model):
        return NO_KEY
    return None


def key_variables(model: str) -> tuple[str, ...]:
    """The environment variables holding ``model``'s provider key as litellm reads them, e.g.
    ``("OPENAI_API_KEY",)``; empty when litellm cannot tell."""
    provider = provider_of(model)
    if provider is None:
        return ()
    try:
        environment = litellm_module().validate_environment(model=model)
    except Exception:
        return ()
    missing = [name for name in environment["missing_keys"] if any(w in name for w in _CREDENTIAL_WORDS)]
    if missing:
        return tuple(missing)
    # The provider's variable is set (and may be the refused key): litellm names only missing ones.
    usual = f"{provider.upper()}_API_KEY"
    return (usual,) if usual in os.environ else ()


def set_key_hint(model: str) -> str:
    """What to set for ``model``'s key, e.g. ``set TRACESCORE_JUDGE_API_KEY or OPENAI_API_KEY``."""
    names = (JUDGE_KEY_VARIABLE, *key_variables(model))
    if len(names) == 1:
        return f"set {JUDGE_KEY_VARIABLE} or the provider's credentials"
    return "set " + ", ".join(names[:-1]) + " or " + names[-1]
