"""Secrets the service is given (the bearer token, the store's password, Kafka's SASL password, the
judge's API key): from their config value or environment variable, or from a file (a mounted
Kubernetes or Docker secret).

Every secret read here is registered with ``schemas.secrets``, so from then on it is replaced by
``[REDACTED]`` in every error text and log line, whoever wrote it (a driver quoting a URL, a proxy
echoing a header).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from tracescore.schemas.secrets import register_secret


def secret_value(value: SecretStr | None, file: str | None, key: str) -> str | None:
    """The secret of config key ``key`` (``<key>_file`` names its file), or None when neither is set.

    Raises ValueError naming the key when the file cannot be read or is empty.
    """
    if file:
        try:
            return read_secret_file(file)
        except ValueError as exc:
            raise ValueError(f"{key}_file {exc}") from None
    if value is None:
        return None
    secret = value.get_secret_value()
    register_secret(secret)
    return secret


def read_secret_file(path: str) -> str:
    """The secret the file at ``path`` holds, without its trailing newline (secrets are often written
    with one). Raises ValueError naming the path when it cannot be read or is empty."""
    try:
        secret = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not secret:
        raise ValueError(f"{path} is empty")
    register_secret(secret)
    return secret


def existing_file(path: str | None, key: str) -> str | None:
    """``path`` if it names a readable file; raises ValueError naming ``key`` otherwise."""
    if path is None:
        return None
    if not Path(path).is_file():
        raise ValueError(f"{key} {path}: no such file")
    return path
