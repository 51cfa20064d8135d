"""The ``TRACESCORE_*`` environment variables: the config key each one sets, and the ones set that
tracescore does not read (a misspelt variable is otherwise ignored without a word)."""

from __future__ import annotations

from collections.abc import Mapping

from tracescore.schemas.suggest import closest

# Environment variable -> dotted config key. Flags use the same dotted keys (see ingest.cli).
ENV_KEYS: dict[str, str] = {
    "TRACESCORE_STORE": "store",
    "TRACESCORE_STORE_DATABASE": "store_database",
    "TRACESCORE_STORE_USER": "store_user",
    "TRACESCORE_STORE_PASSWORD": "store_password",
    "TRACESCORE_STORE_PASSWORD_FILE": "store_password_file",
    "TRACESCORE_STORE_TLS_CA": "store_tls_ca",
    "TRACESCORE_STORE_VERIFY": "store_verify",
    "TRACESCORE_STORE_MIN_FREE_BYTES": "store_min_free_bytes",
    "TRACESCORE_STORE_MIN_FREE_RATIO": "store_min_free_ratio",
    "TRACESCORE_HOST": "receiver.host",
    "TRACESCORE_GRPC_PORT": "receiver.grpc_port",
    "TRACESCORE_HTTP_PORT": "receiver.http_port",
    "TRACESCORE_HEALTH_PORT": "receiver.health_port",
    "TRACESCORE_MAX_REQUEST_BYTES": "receiver.max_request_bytes",
    "TRACESCORE_BODY_TIMEOUT_SECONDS": "receiver.body_timeout_seconds",
    "TRACESCORE_HEADER_TIMEOUT_SECONDS": "receiver.header_timeout_seconds",
    "TRACESCORE_IDLE_TIMEOUT_SECONDS": "receiver.idle_timeout_seconds",
    "TRACESCORE_MAX_CONNECTIONS": "receiver.max_connections",
    "TRACESCORE_MAX_CONNECTIONS_PER_CLIENT": "receiver.max_connections_per_client",
    "TRACESCORE_AUTH_TOKEN": "receiver.auth_token",
    "TRACESCORE_AUTH_TOKEN_FILE": "receiver.auth_token_file",
    "TRACESCORE_TLS_CERT": "receiver.tls_cert",
    "TRACESCORE_TLS_KEY": "receiver.tls_key",
    "TRACESCORE_TLS_CLIENT_CA": "receiver.tls_client_ca",
    "TRACESCORE_KAFKA_BOOTSTRAP": "kafka.bootstrap",
    "TRACESCORE_KAFKA_TOPIC": "kafka.topic",
    "TRACESCORE_KAFKA_LOGS_TOPIC": "kafka.logs_topic",
    "TRACESCORE_KAFKA_GROUP": "kafka.group",
    "TRACESCORE_KAFKA_DLQ_TOPIC": "kafka.dead_letter_topic",
    "TRACESCORE_KAFKA_SECURITY_PROTOCOL": "kafka.security_protocol",
    "TRACESCORE_KAFKA_SASL_MECHANISM": "kafka.sasl_mechanism",
    "TRACESCORE_KAFKA_SASL_USERNAME": "kafka.sasl_username",
    "TRACESCORE_KAFKA_SASL_PASSWORD": "kafka.sasl_password",
    "TRACESCORE_KAFKA_SASL_PASSWORD_FILE": "kafka.sasl_password_file",
    "TRACESCORE_IDLE_SECONDS": "assembly.idle_seconds",
    "TRACESCORE_MAX_WAIT_SECONDS": "assembly.max_wait_seconds",
    "TRACESCORE_MAX_TRACES": "assembly.max_traces",
    "TRACESCORE_SCORER_CONCURRENCY": "scoring.concurrency",
    "TRACESCORE_SAMPLING_SALT": "scoring.sampling_salt",
    "TRACESCORE_JUDGE_MODEL": "scoring.judge.model",
    "TRACESCORE_JUDGE_API_BASE": "scoring.judge.api_base",
    "TRACESCORE_JUDGE_API_KEY": "scoring.judge.api_key",
    "TRACESCORE_JUDGE_API_KEY_FILE": "scoring.judge.api_key_file",
    "TRACESCORE_REPLICA_ID": "replica.id",
    "TRACESCORE_MEMORY_LIMIT": "memory_limit",
    "TRACESCORE_EXPORT_OTLP_ENDPOINT": "export.otlp.endpoint",
    "TRACESCORE_EXPORT_OTLP_PROTOCOL": "export.otlp.protocol",
    "TRACESCORE_EXPORT_OTLP_HEADERS": "export.otlp.headers",
}


ENV_PREFIX = "TRACESCORE_"
# Variables of that prefix read elsewhere than the config: the config file's path, the service address
# of ``tracescore scores``, Grafana's alert webhook (deploy/), the benchmarks' and tests' own settings.
OTHER_VARIABLES = frozenset({"TRACESCORE_CONFIG", "TRACESCORE_URL", "TRACESCORE_ALERT_WEBHOOK_URL"})
OTHER_PREFIXES = ("TRACESCORE_BENCH_", "TRACESCORE_UPDATE_GOLDEN")


def unknown_variables(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """The ``TRACESCORE_*`` variables tracescore does not read (a misspelt one is ignored otherwise),
    each with the known variable it most resembles, if one does (``TRACESCORE_GRPCPORT`` ->
    ``TRACESCORE_GRPC_PORT``)."""
    known = sorted(ENV_KEYS.keys() | OTHER_VARIABLES)
    suffixes = {name.removeprefix(ENV_PREFIX): name for name in known}
    found = []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in known or name.startswith(OTHER_PREFIXES):
            continue
        guess = closest(name.removeprefix(ENV_PREFIX), suffixes)
        found.append((name, suffixes[guess] if guess is not None else None))
    return found
