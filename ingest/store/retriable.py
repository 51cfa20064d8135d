"""Which failures of the store are worth another try: decided once, from the engine's error code or the
operating system's error behind it (``schemas.errors.is_retriable`` reads the decision)."""

from __future__ import annotations

import re

from clickhouse_connect.driver.exceptions import ClickHouseError, OperationalError

from tracescore.schemas.errors import StoreError
from tracescore.schemas.secrets import scrub

# Error codes worth another try: the server is busy or a replica lags, or a resource (disk, memory,
# file descriptors, parts) is short -- an outage that ends, never a reason to drop what was sent.
RETRIABLE_CODES = frozenset(
    {
        3,  # UNEXPECTED_END_OF_FILE (a connection cut mid-answer)
        74,  # CANNOT_READ_FROM_FILE_DESCRIPTOR
        75,  # CANNOT_WRITE_TO_FILE_DESCRIPTOR (the disk filled while a part was written)
        76,  # CANNOT_OPEN_FILE (out of file descriptors, or of disk for a new file)
        173,  # CANNOT_ALLOCATE_MEMORY
        159,  # TIMEOUT_EXCEEDED
        202,  # TOO_MANY_SIMULTANEOUS_QUERIES
        203,  # NO_FREE_CONNECTION
        209,  # SOCKET_TIMEOUT
        210,  # NETWORK_ERROR
        241,  # MEMORY_LIMIT_EXCEEDED
        242,  # TABLE_IS_READ_ONLY (a replica lost its Keeper session)
        243,  # NOT_ENOUGH_SPACE (the disk is full)
        252,  # TOO_MANY_PARTS (inserts faster than merges)
        285,  # TOO_FEW_LIVE_REPLICAS
        319,  # UNKNOWN_STATUS_OF_INSERT
        425,  # SYSTEM_ERROR
        999,  # KEEPER_EXCEPTION
    }
)
_ERROR_CODE = re.compile(r"\bCode:\s*(\d+)")
# The operating system's resource errors, whatever code the engine wraps them in.
_RESOURCE_ERRNO = re.compile(
    r"No space left on device|ENOSPC|Disk quota exceeded|EDQUOT|Too many open files|EMFILE|"
    r"Cannot allocate memory|ENOMEM",
    re.IGNORECASE,
)


def store_error(what: str, exc: ClickHouseError) -> StoreError:
    """The ``StoreError`` for a clickhouse-connect failure, classified once: the server unreachable,
    one of ``RETRIABLE_CODES`` or an operating-system resource error is retriable; the rest (bad SQL, a
    missing table, a refused row, authentication) fails the same way again."""
    text = str(exc)
    code = _ERROR_CODE.search(text)
    retriable = (
        isinstance(exc, OperationalError)
        or (code is not None and int(code.group(1)) in RETRIABLE_CODES)
        or _RESOURCE_ERRNO.search(text) is not None
    )
    # scrub: a driver or a proxy in front of the server may quote the credentials back.
    return StoreError(scrub(f"{what} failed: {exc}"), retriable=retriable)
