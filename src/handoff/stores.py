"""The record stores by class: in memory and SQLite (PostgreSQL loads on demand).

Most callers open a store by URL with :func:`handoff.open_store` and type it as
:class:`handoff.Store`; construct :class:`MemoryStore` or :class:`SQLiteStore` directly when
the class matters (docs/spec/stores.md).
"""

from __future__ import annotations

from ._store import MemoryStore, SQLiteStore

__all__ = ["MemoryStore", "SQLiteStore"]
