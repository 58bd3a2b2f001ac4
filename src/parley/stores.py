"""Where a service keeps its state: proposals, receipts, replay memory, spend totals, handles.

:func:`parley.open_store` picks a store by URL (``:memory:``, ``sqlite:PATH``,
``postgresql://…``); the classes and record types are here for a program that builds or
implements one (the :class:`Store` protocol is expressed as transactions).
:class:`PostgresStore` (the ``postgres`` extra, psycopg 3) is loaded on first use, so
``import parley.stores`` imports neither it nor psycopg; psycopg itself is imported only
when a store is opened.

>>> from parley.stores import MemoryStore
>>> MemoryStore().receipt("r-none") is None
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._spend import MemorySpendLedger, SpendLedger
from ._sqlite import SQLiteStore
from ._state import Lease, MemoryStore, ProposalRecord, ReceiptRecord, Store, load_state
from ._stores import default_state_url

if TYPE_CHECKING:  # loaded on first use by __getattr__ below
    from ._postgres import PostgresStore

__all__ = [
    "Lease",
    "MemorySpendLedger",
    "MemoryStore",
    "PostgresStore",
    "ProposalRecord",
    "ReceiptRecord",
    "SQLiteStore",
    "SpendLedger",
    "Store",
    "default_state_url",
    "load_state",
]


def __getattr__(name: str) -> Any:
    """Load :class:`PostgresStore` on first use (``import parley.stores`` stays light)."""
    if name != "PostgresStore":
        raise AttributeError(f"module 'parley.stores' has no attribute {name!r}")
    from ._postgres import PostgresStore

    globals()[name] = PostgresStore
    return PostgresStore


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"PostgresStore"})
