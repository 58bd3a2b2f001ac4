"""Spend accounting (SPEC.md section 6.3 ``spend``): reserve, commit, release.

Every argument is the calling service's own (a reservation key, caps, an amount), so a bad
one is a usage error (``bad_argument``; committing a reservation never made is
``not_ready``); a cap the reservation would pass is the answer the peer gets
(``consent_required``/``spend_exceeded``).

A ``COMMIT`` under a grant with ``spend`` caveats first *reserves* its cost against every
such block, atomically with the cap check, then executes, then *commits* the reservation
(or *releases* it if execution failed). Totals count committed and reserved amounts, so N
concurrent commits can never pass the cap together. Reservations are keyed by the
proposal, so a retried commit finds its own reservation instead of being refused by it,
and is never counted twice. Totals are not reduced by ``UNDO`` (v1 is conservative).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ._grants import SpendCap
from .errors import ParleyError

__all__ = ["MemorySpendLedger", "SpendLedger"]


@runtime_checkable
class SpendLedger(Protocol):
    """Spend totals per block id, changed only by transactions.

    Implementations must make :meth:`reserve` atomic with its cap check (across threads,
    and across processes for a shared store).
    """

    def totals(self, blocks: Iterable[str], *, excluding: str | None = None) -> dict[str, int]:
        """Return committed plus reserved spend per block, leaving out reservation ``excluding``."""
        ...

    def reserve(self, key: str, caps: Sequence[SpendCap], amount: int, currency: str) -> bool:
        """Reserve ``amount`` against every cap, or raise ``consent_required``/``spend_exceeded``.

        Returns ``False`` when ``key`` already holds a reservation or a commit (nothing
        changes: a retry is not counted twice), ``True`` when a new one was made.
        """
        ...

    def commit(self, key: str) -> None:
        """Make reservation ``key`` final (idempotent)."""
        ...

    def release(self, key: str) -> bool:
        """Drop reservation ``key``; return ``False`` when it was committed or unknown."""
        ...


@dataclass
class _Entry:
    amount: int
    blocks: tuple[str, ...]
    committed: bool = False


def _key(key: object) -> str:
    if not isinstance(key, str) or not key:
        raise ParleyError(
            "bad_argument", "a reservation key is a non-empty string", reason="bad_argument"
        )
    return key


def _blocks(blocks: object) -> list[str]:
    if isinstance(blocks, (str, bytes)) or not isinstance(blocks, Iterable):
        raise ParleyError(
            "bad_argument", "blocks must be a collection of block ids", reason="bad_block"
        )
    out = list(blocks)
    if not all(isinstance(b, str) for b in out):
        raise ParleyError("bad_argument", "block ids are strings", reason="bad_block")
    return out


class MemorySpendLedger:
    """An in-memory :class:`SpendLedger`, atomic under threads (one lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, int] = {}
        self._entries: dict[str, _Entry] = {}

    def totals(self, blocks: Iterable[str], *, excluding: str | None = None) -> dict[str, int]:
        """Return committed plus reserved spend per block, leaving out reservation ``excluding``."""
        wanted = _blocks(blocks)
        if excluding is not None:
            _key(excluding)
        with self._lock:
            own = self._entries.get(excluding) if excluding is not None else None
            out = {}
            for block in wanted:
                total = self._totals.get(block, 0)
                if own is not None and block in own.blocks:
                    total -= own.amount
                out[block] = total
            return out

    def reserve(self, key: str, caps: Sequence[SpendCap], amount: int, currency: str) -> bool:
        """Reserve ``amount`` against every cap atomically (see :class:`SpendLedger`)."""
        _key(key)
        if not isinstance(caps, (list, tuple)) or not all(isinstance(c, SpendCap) for c in caps):
            raise ParleyError("bad_argument", "caps must be a list of SpendCap", reason="bad_block")
        if not isinstance(currency, str):
            raise ParleyError("bad_argument", "the currency is a string", reason="bad_amount")
        if type(amount) is not int or amount < 0:
            raise ParleyError(
                "bad_argument", "a spend amount is a non-negative integer", reason="bad_amount"
            )
        with self._lock:
            if key in self._entries:
                return False
            for cap in caps:
                if amount and cap.currency != currency:
                    raise ParleyError(
                        "consent_required",
                        f"the cost is in {currency} but the spend cap is in {cap.currency}",
                        reason="spend_exceeded",
                    )
                if self._totals.get(cap.block, 0) + amount > cap.max:
                    raise ParleyError(
                        "consent_required",
                        f"the commit would take block {cap.block} over its spend cap of {cap.max}",
                        reason="spend_exceeded",
                    )
            blocks = tuple(dict.fromkeys(cap.block for cap in caps))
            for block in blocks:
                self._totals[block] = self._totals.get(block, 0) + amount
            self._entries[key] = _Entry(amount, blocks)
            return True

    def commit(self, key: str) -> None:
        """Make reservation ``key`` final (idempotent).

        An unknown key is the caller's call made too early (``not_ready``/``no_reservation``).
        """
        _key(key)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                raise ParleyError(
                    "not_ready",
                    "no spend reservation exists for this commit (reserve it first)",
                    reason="no_reservation",
                )
            entry.committed = True

    def release(self, key: str) -> bool:
        """Drop an uncommitted reservation; return whether one was dropped."""
        _key(key)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.committed:
                return False
            for block in entry.blocks:
                self._totals[block] -= entry.amount
            del self._entries[key]
            return True
