"""TLS of the OTLP receivers, from ``receiver.tls_cert`` / ``receiver.tls_key`` (PEM files) and, for
mutual TLS, ``receiver.tls_client_ca``.

The files are read once at start, and a bad one stops the service with an error naming its key rather
than failing each client's handshake later. OTLP/HTTP gets an ``ssl.SSLContext`` (aiohttp), OTLP/gRPC
``grpc.ssl_server_credentials`` built from the same bytes.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc

from tracescore.schemas.config import ReceiverConfig


@dataclass(frozen=True)
class TlsFiles:
    cert: bytes
    key: bytes
    client_ca: bytes | None


def _read(path: str, key: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"receiver.{key} {path}: cannot read it ({exc.strerror or exc})") from None
    if b"-----BEGIN" not in data:
        raise ValueError(f"receiver.{key} {path}: not a PEM file")
    return data


def tls_files(config: ReceiverConfig) -> TlsFiles | None:
    """The PEM files of ``config``, read and checked; None when TLS is off.

    Raises ValueError naming the key when a file is missing or the certificate and key do not load.
    """
    if not (config.tls_cert and config.tls_key):
        return None
    files = TlsFiles(
        cert=_read(config.tls_cert, "tls_cert"),
        key=_read(config.tls_key, "tls_key"),
        client_ca=_read(config.tls_client_ca, "tls_client_ca") if config.tls_client_ca else None,
    )
    server_ssl_context(config)  # loads the pair: a key that does not match its certificate fails here
    return files


def server_ssl_context(config: ReceiverConfig) -> ssl.SSLContext | None:
    """The server context of OTLP/HTTP (TLS 1.2 or newer); None when TLS is off."""
    if not (config.tls_cert and config.tls_key):
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(config.tls_cert, config.tls_key)
    except (ssl.SSLError, OSError) as exc:
        raise ValueError(
            f"receiver.tls_cert {config.tls_cert} and receiver.tls_key {config.tls_key} do not load "
            f"as a certificate and its private key: {exc}"
        ) from None
    if config.tls_client_ca:
        try:
            context.load_verify_locations(cafile=config.tls_client_ca)
        except (ssl.SSLError, OSError) as exc:
            raise ValueError(f"receiver.tls_client_ca {config.tls_client_ca}: {exc}") from None
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def grpc_server_credentials(files: TlsFiles) -> grpc.ServerCredentials:
    """OTLP/gRPC's credentials: the same certificate, and client certificates required with a CA."""
    return grpc.ssl_server_credentials(
        [(files.key, files.cert)],
        root_certificates=files.client_ca,
        require_client_auth=files.client_ca is not None,
    )
