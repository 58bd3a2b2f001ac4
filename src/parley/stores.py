"""Where a service keeps its state: proposals, receipts, replay memory, spend totals, handles.

:func:`parley.open_store` picks a store by URL (``:memory:``, ``sqlite:PATH``,
``postgresql://…``); the classes and record types are here for a program that builds or
implements one (the :class:`Store` protocol is expressed as transactions).

>>> from parley.stores import MemoryStore
>>> MemoryStore().receipt("r-none") is None
True
"""

from __future__ import annotations

from ._spend import MemorySpendLedger, SpendLedger
from ._sqlite import SQLiteStore
from ._state import Lease, MemoryStore, ProposalRecord, ReceiptRecord, Store, load_state
from ._stores import default_state_url

__all__ = [
    "Lease",
    "MemorySpendLedger",
    "MemoryStore",
    "ProposalRecord",
    "ReceiptRecord",
    "SQLiteStore",
    "SpendLedger",
    "Store",
    "default_state_url",
    "load_state",
]
