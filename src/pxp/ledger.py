"""The room ledger (PXP §6): append-only, hash-chained, as the reference chains it.

:func:`pxp.verify_ledger` checks an exported ledger (against a head from a brief, when
given); this module holds the rest: the in-memory :class:`Ledger` a room keeps
(:attr:`pxp.Room.ledger`), its :class:`LedgerEntry`, :func:`entry_hash`, :func:`load_ledger`
for JSON text or an export, and :data:`ENTRY_TYPES`. A failed check raises
:class:`pxp.errors.LedgerError`.
"""

from __future__ import annotations

from ._ledger import ENTRY_TYPES, Ledger, LedgerEntry, entry_hash, load_ledger

__all__ = ["ENTRY_TYPES", "Ledger", "LedgerEntry", "entry_hash", "load_ledger"]
