"""The record stores by class: in memory, SQLite and PostgreSQL.

Most callers open a store by URL with :func:`handoff.open_store` and type it as
:class:`handoff.Store`; construct :class:`MemoryStore`, :class:`SQLiteStore` or
:class:`PostgresStore` directly when the class matters (docs/spec/stores.md). Importing
this module loads neither psycopg nor the store plumbing: :class:`PostgresStore` imports
them when a store is opened, and needs the ``postgres`` extra then.
"""

from __future__ import annotations

from ._postgres import PostgresStore
from ._store import MemoryStore, SQLiteStore

__all__ = ["MemoryStore", "PostgresStore", "SQLiteStore"]
