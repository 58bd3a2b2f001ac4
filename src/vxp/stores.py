"""Where the Merkle log and the DPoP replay memory live.

:func:`vxp.open_log_store` chooses a :class:`LogStore` by URL (``:memory:``,
``sqlite:PATH``, ``postgresql://…``); :func:`open_replay_cache` does the same for the
:class:`ReplayCache` of :class:`vxp.fetch.ProofEndpoint`. The in-memory and SQLite stores
are here for callers that build them directly; the PostgreSQL ones load only for a
``postgresql://`` URL. A store failure is a :class:`~vxp.VxpUsageError` (``log_store_error``,
``log_conflict``, ``log_corrupt``, ``replay_store_unavailable``); a replayed DPoP ``jti`` is
the peer's: :meth:`ReplayCache.store_once` raises :class:`~vxp.VxpProtocolError`
``dpop_replay``.

>>> from vxp.stores import open_replay_cache
>>> cache = open_replay_cache(":memory:")
>>> cache.store_once("kid:jti", 100, 40)  # first sight: remembered until 100
>>> cache.store_once("kid:jti", 100, 41)
Traceback (most recent call last):
vxp.errors.VxpProtocolError: dpop_replay: the DPoP proof 'kid:jti' was already used (jti replay)
"""

from __future__ import annotations

from ._fetch import MemoryReplayCache, ReplayCache, SqliteReplayCache
from ._log import LogStore, MemoryLogStore, SqliteLogStore
from ._stores import open_replay_cache

__all__ = [
    "LogStore",
    "MemoryLogStore",
    "MemoryReplayCache",
    "ReplayCache",
    "SqliteLogStore",
    "SqliteReplayCache",
    "open_replay_cache",
]
