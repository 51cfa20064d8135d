"""Bearer-token authentication of the receivers and the API.

With a token configured (``TRACESCORE_AUTH_TOKEN`` or ``receiver.auth_token_file``), OTLP/HTTP, the
``/api/*`` routes and (unless ``receiver.metrics_open``) ``/metrics`` want ``Authorization: Bearer
<token>``, and OTLP/gRPC the same in its metadata; without it they answer 401 / UNAUTHENTICATED.
``/healthz`` and ``/readyz`` stay open (probes carry no token). Tokens are compared in constant time.
Without a token nothing is checked, as before; the service warns when it then listens beyond
loopback.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from tracescore.ingest.configuration.service_secrets import secret_value
from tracescore.schemas.config import ReceiverConfig

UNAUTHENTICATED_MESSAGE = "missing or wrong bearer token"
_SCHEME = "bearer "


def configured_token(config: ReceiverConfig) -> str | None:
    """The token the receivers want, or None when authentication is off (registered as a secret, so
    no log line or error text shows it)."""
    return secret_value(config.auth_token, config.auth_token_file, "receiver.auth_token")


def bearer_matches(authorization: str | None, token: str) -> bool:
    """Whether an ``Authorization`` value carries ``token`` (scheme case-insensitive)."""
    if not authorization or authorization[: len(_SCHEME)].lower() != _SCHEME:
        return False
    offered = authorization[len(_SCHEME) :].strip()
    return hmac.compare_digest(offered.encode(), token.encode())


def metadata_matches(metadata: Iterable[tuple[str, str | bytes]] | None, token: str) -> bool:
    """Whether gRPC invocation metadata carries ``authorization: Bearer <token>``."""
    for key, value in metadata or ():
        if key.lower() == "authorization" and isinstance(value, str) and bearer_matches(value, token):
            return True
    return False
