"""Choosing the Merkle log store and the DPoP replay cache by one URL.

``:memory:`` (this process only), ``sqlite:PATH`` (one file, shared by the processes of a
machine) or ``postgresql://…`` (one database, shared by replicas; the ``postgres`` extra).
The PostgreSQL stores are imported only when such a URL is given.
"""

from __future__ import annotations

from ._fetch import MemoryReplayCache, ReplayCache, SqliteReplayCache
from ._log import LogStore, MemoryLogStore, SqliteLogStore
from .errors import VxpError

__all__ = ["open_log_store", "open_replay_cache"]


def _parse(url: str, code: str) -> tuple[str, str]:
    from ppstore import StoreError, parse_url

    try:
        found = parse_url(url)
    except StoreError as exc:
        raise VxpError(code, exc.message) from None
    return found.kind, found.path or found.dsn


def open_log_store(url: str, origin: str) -> LogStore:
    """The :class:`LogStore` of log ``origin`` that ``url`` names (``log_store_error``).

    >>> from vxp import MerkleLog, open_log_store
    >>> log = MerkleLog("example/log", open_log_store(":memory:", "example/log"))
    >>> log.append(b"first")
    0
    """
    kind, where = _parse(url, "log_store_error")
    if kind == "memory":
        return MemoryLogStore()
    if kind == "sqlite":
        return SqliteLogStore(where, origin)
    from ._postgres import PostgresLogStore

    return PostgresLogStore(where, origin)


def open_replay_cache(url: str) -> ReplayCache:
    """The DPoP :class:`ReplayCache` that ``url`` names (``replay_store_unavailable``)."""
    kind, where = _parse(url, "replay_store_unavailable")
    if kind == "memory":
        return MemoryReplayCache()
    if kind == "sqlite":
        return SqliteReplayCache(where)
    from ._postgres import PostgresReplayCache

    return PostgresReplayCache(where)
