"""Service state: one store interface, expressed as transactions, and the in-memory store.

A :class:`Store` holds what a Parley service must remember between frames: proposals
(until they expire), receipts (for idempotent ``COMMIT``/``UNDO`` and the undo window),
the ``(proof key, frame id)`` memory of auto ``INTENT``\\ s, ``EXPAND`` handles and spend
totals. Every change is one atomic transaction (``begin_*`` claims, ``finish_*`` makes
final, ``abort_*`` undoes the claim), so nothing SQLite-specific leaks into the runtime and
a store over another database can implement the same methods. Everything is bounded: by
expiry first, then by size caps. What is safe to forget goes when a cap is reached (the
oldest open proposals; receipts that can no longer be undone); what is not (live replay
memory, receipts still inside their undo window) is never forgotten: a store full of it
refuses new work with ``limit`` (forgetting would re-open replays or take away an undo).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from ._grants import SpendCap
from ._handles import HandleStore, MemoryHandleStore
from ._time import epoch_seconds
from .errors import ParleyError

__all__ = [
    "REPLAY_TTL",
    "AutoClaim",
    "Claim",
    "Lease",
    "MemoryStore",
    "ProposalRecord",
    "ReceiptRecord",
    "Store",
    "UndoClaim",
    "load_state",
]

REPLAY_TTL = 600
"""Seconds the ``(proof.key, frame id)`` memory of auto INTENTs is kept, counted from the
first sighting and inclusive of the last second (twice the 300 s proof window: a proof
dated 300 s ahead of the service clock is still accepted exactly 600 s later)."""

PROPOSAL_GRACE = 600
"""**Ours:** seconds an expired proposal is still known (answered ``expired``, not
``not_found``) before it is forgotten."""

Claim = Literal["new", "busy", "done"]
"""What a ``begin_*`` transaction found: claimed now, claimed by a request still running,
or already finished."""

UndoClaim = Literal["new", "busy", "done", "gone"]
"""What :meth:`Store.begin_undo` found: a :data:`Claim`, or (**ours**, review pg2 #2)
``"gone"``: no receipt has that id (never issued, or pruned, possibly by another replica
while the undo was being checked), so nothing was claimed."""


@dataclass(frozen=True)
class Lease:
    """Who holds a ``COMMIT`` or ``UNDO`` in flight, and until when (**ours**, issue 18).

    ``owner`` names the service process that claimed it (``host:pid:nonce``; empty: no
    owner, e.g. a commit left unresolved by a reconciliation), ``began`` when, ``until``
    when the lease runs out (after that any process may reconcile the claim). ``key``,
    ``principal`` and ``hash`` are what the receipt needs if reconciliation finds the effect
    happened: the requesting proof key, the grant's principal, the committed hash.
    """

    owner: str = ""
    began: int = 0
    until: int = 0
    key: str = ""
    principal: str | None = None
    hash: str = ""

    def as_json(self) -> dict[str, Any]:
        """The lease as JSON (the SQLite store keeps it in one column)."""
        return {
            "owner": self.owner,
            "began": self.began,
            "until": self.until,
            "key": self.key,
            "principal": self.principal,
            "hash": self.hash,
        }

    @classmethod
    def from_json(cls, data: object) -> Lease:
        """Inverse of :meth:`as_json`; anything unreadable is an ownerless, expired lease."""
        if not isinstance(data, dict):
            return cls()
        principal = data.get("principal")
        return cls(
            str(data.get("owner") or ""),
            int(data.get("began") or 0),
            int(data.get("until") or 0),
            str(data.get("key") or ""),
            principal if isinstance(principal, str) else None,
            str(data.get("hash") or ""),
        )


@dataclass(frozen=True)
class AutoClaim:
    """An auto ``INTENT`` still being handled (**ours**, review F4).

    ``key`` and ``frame`` name it; ``lease`` says which process handles it and until when
    (``None``: not recorded, e.g. a claim from before schema v3: it waits out its replay
    time); ``proposal`` is the proposal whose commit it started, once it started one.
    """

    key: str
    frame: str
    lease: Lease | None
    proposal: str | None = None


@dataclass(frozen=True)
class ProposalRecord:
    """A proposal the service made: the wire object, who asked, and the private plan.

    ``key`` is the proof key of the INTENT (``None``: anonymous, never committable);
    ``principal`` the root of the grant that authorized the INTENT, if any; ``plan`` any
    JSON value the capability keeps for its commit callable (never sent).
    """

    proposal: dict[str, Any]
    key: str | None
    principal: str | None = None
    plan: Any = None

    @property
    def id(self) -> str:
        """The proposal id."""
        return str(self.proposal["id"])

    def as_json(self) -> dict[str, Any]:
        """The record as JSON (vectors, the SQLite store)."""
        return {
            "proposal": self.proposal,
            "key": self.key,
            "principal": self.principal,
            "plan": self.plan,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProposalRecord:
        """Inverse of :meth:`as_json`."""
        return cls(data["proposal"], data.get("key"), data.get("principal"), data.get("plan"))


@dataclass(frozen=True)
class ReceiptRecord:
    """A receipt and what the runtime must know about it.

    ``key`` committed it; ``principal`` is the root of the authorizing grant; ``hash`` the
    committed proposal's hash; ``amount``/``blocks`` the spend it counted; ``undo`` the
    reversal receipt once undone and ``undo_key`` the key that asked for it.
    """

    receipt: dict[str, Any]
    key: str
    principal: str | None
    hash: str
    amount: int = 0
    blocks: tuple[str, ...] = ()
    undo: dict[str, Any] | None = None
    undo_key: str | None = None

    @property
    def id(self) -> str:
        """The receipt id."""
        return str(self.receipt["id"])

    @property
    def proposal(self) -> str:
        """The committed proposal's id."""
        return str(self.receipt["proposal"])

    def as_json(self) -> dict[str, Any]:
        """The record as JSON (vectors, the SQLite store)."""
        return {
            "receipt": self.receipt,
            "key": self.key,
            "principal": self.principal,
            "hash": self.hash,
            "amount": self.amount,
            "blocks": list(self.blocks),
            "undo": self.undo,
            "undo_key": self.undo_key,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReceiptRecord:
        """Inverse of :meth:`as_json`."""
        return cls(
            data["receipt"],
            data["key"],
            data.get("principal"),
            data["hash"],
            int(data.get("amount", 0)),
            tuple(data.get("blocks", ())),
            data.get("undo"),
            data.get("undo_key"),
        )


@runtime_checkable
class Store(Protocol):
    """What a service runtime remembers, as small transactions (see the module docstring)."""

    handles: HandleStore

    def add_proposal(
        self, record: ProposalRecord, *, now: int, vouched: bool | None = None
    ) -> None:
        """Keep a new proposal until it expires; ``limit`` when full of live proposals.

        ``vouched`` (**ours**, review F3): the INTENT carried a verified grant. Proposals
        of an INTENT without one (anonymous, or proven by a key nobody granted anything)
        live in a pool of their own and push out only each other. ``None``: vouched when
        ``record.key`` is set (loading fixtures).
        """
        ...

    def proposal(self, proposal_id: str, *, now: int) -> ProposalRecord | None:
        """The proposal (even recently expired), or ``None``."""
        ...

    def receipt(self, receipt_id: str) -> ReceiptRecord | None:
        """The receipt record with this id, or ``None``."""
        ...

    def receipt_for(self, proposal_id: str) -> ReceiptRecord | None:
        """The receipt of a committed proposal, or ``None``."""
        ...

    def spent(self, blocks: Iterable[str], *, excluding: str | None = None) -> dict[str, int]:
        """Committed plus reserved spend per block, leaving out proposal ``excluding``'s."""
        ...

    def begin_commit(
        self,
        proposal_id: str,
        caps: Sequence[SpendCap],
        amount: int,
        currency: str,
        *,
        now: int,
        lease: Lease | None = None,
    ) -> Claim:
        """Claim a proposal for commit and reserve its cost against every cap, atomically.

        ``lease`` records who holds the commit (kept until it is finished or aborted).
        Raises ``consent_required``/``spend_exceeded`` when a cap would be exceeded, and
        ``limit``/``store_full`` when there is no room for the receipt without forgetting
        one that can still be undone (nothing is reserved then). A free commit (``amount``
        0) reserves nothing and creates no spend total.
        """
        ...

    def finish_commit(self, record: ReceiptRecord, *, now: int, owner: str | None = None) -> bool:
        """Store the receipt, count the reservation, forget the proposal.

        ``owner`` (**ours**, review F2) is the lease owner finishing; ``True`` when the
        claim was still its own. A late finisher (the claim was taken over, released, or
        already reconciled) still records the truth and never counts 0: a claim still
        held by the taker is finished with its reservation; a released one gets a receipt
        counting ``record.amount`` on ``record.blocks`` (no cap check: the effect took
        place); when a receipt is already there, it stays, and ``record.amount`` is counted
        once more unless that receipt is the reconciliation of this very claim (same
        ``at``): the effect then ran twice.
        """
        ...

    def abort_commit(self, proposal_id: str, *, owner: str | None = None) -> None:
        """Release the claim and the reservation of a failed commit (if ``owner``'s)."""
        ...

    def begin_undo(self, receipt_id: str, *, lease: Lease | None = None) -> UndoClaim:
        """Claim a receipt for undo; ``lease`` records who holds it.

        ``"gone"`` (nothing claimed) when no receipt has that id.
        """
        ...

    def lease(self, kind: Literal["commit", "undo"], subject: str) -> Lease | None:
        """The lease of the commit (proposal id) or undo (receipt id) in flight, else ``None``."""
        ...

    def leases(
        self, kind: Literal["commit", "undo"], *, limit: int = 1000
    ) -> list[tuple[str, Lease]]:
        """Up to ``limit`` claims in flight of one kind: ``(proposal or receipt id, lease)``."""
        ...

    def take_over(
        self, kind: Literal["commit", "undo"], subject: str, expect: Lease, lease: Lease
    ) -> bool:
        """Replace the lease of a claim still held under ``expect`` by ``lease``, atomically.

        ``False`` when the claim is gone or another process took it over first: exactly one
        process reconciles a stale claim.
        """
        ...

    def finish_undo(
        self, receipt_id: str, undo: dict[str, Any], key: str, *, owner: str | None = None
    ) -> bool:
        """Record the reversal receipt and the key that asked for it; release the claim.

        ``True`` when the claim was still ``owner``'s (see :meth:`finish_commit`); a late
        finisher's reversal is recorded unless one already is.
        """
        ...

    def abort_undo(self, receipt_id: str, *, owner: str | None = None) -> None:
        """Release the undo claim of a failed undo (if ``owner``'s)."""
        ...

    def begin_auto(
        self,
        key: str,
        frame_id: str,
        *,
        now: int,
        ttl: int = REPLAY_TTL,
        lease: Lease | None = None,
    ) -> Claim | dict[str, Any]:
        """Claim ``(key, frame_id)`` of an auto INTENT: ``"new"``, ``"busy"`` or the reply.

        ``lease`` records who handles it, so that a claim left by a crash can be settled.
        """
        ...

    def link_auto(self, key: str, frame_id: str, proposal_id: str) -> None:
        """Record that the unfinished auto INTENT ``(key, frame_id)`` commits a proposal."""
        ...

    def auto_claims(self, *, limit: int = 1000) -> list[AutoClaim]:
        """Up to ``limit`` auto INTENTs still being handled, oldest first."""
        ...

    def finish_auto(
        self, key: str, frame_id: str, reply: dict[str, Any], *, now: int, ttl: int = REPLAY_TTL
    ) -> None:
        """Remember the final reply of an auto INTENT for ``ttl`` seconds."""
        ...

    def abort_auto(self, key: str, frame_id: str) -> None:
        """Drop the claim of an auto INTENT that failed before deciding anything."""
        ...


# ---------------------------------------------------------------- rules every store shares


def store_full(what: str) -> ParleyError:
    """The refusal of a store that holds as many ``what`` as its bound allows."""
    return ParleyError(
        "limit", f"the service holds as many {what} as it can; retry later", reason="store_full"
    )


def record_text(value: Any) -> str:
    """A record as a database stores it: compact JSON, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def record_value(text: str | None) -> Any:
    """The value :func:`record_text` stored; ``None`` for NULL or text that is not JSON."""
    try:
        return None if text is None else json.loads(text)
    except ValueError:
        return None


def forgotten(expires: int, now: int) -> bool:
    """Whether a proposal that expired at ``expires`` is past its grace at ``now``: forgotten
    (``not_found``) rather than still known as ``expired``."""
    return expires + PROPOSAL_GRACE <= now


def remembered(until: int, now: int) -> bool:
    """Whether an auto request remembered ``until`` is still remembered at ``now`` (the
    memory is kept through ``until`` inclusive)."""
    return until >= now


def replayed(until: int, reply: str | None, now: int) -> Literal["busy"] | dict[str, Any] | None:
    """What a remembered auto request ``(until, reply)`` answers at ``now``: its stored reply
    (``reply`` as :func:`record_text` wrote it), ``"busy"`` while it has none yet, or ``None``
    once forgotten (see :func:`remembered`)."""
    if not remembered(until, now):
        return None
    if reply is None:
        return "busy"
    stored: dict[str, Any] = json.loads(reply)
    return stored


def held_by(lease: Lease | None, owner: str | None) -> bool:
    """Whether a claim's ``lease`` lets ``owner`` finish or abort it (``None``: anyone).

    A process that lost its lease to another (a take-over after it looked dead) no longer
    holds the claim; the new holder settles it.
    """
    return lease is not None and (owner is None or lease.owner == owner)


def auto_claim(key: str, frame: str, claim: object) -> AutoClaim:
    """The :class:`AutoClaim` of a replay entry whose stored claim is ``claim`` (decoded)."""
    if not isinstance(claim, dict):
        return AutoClaim(key, frame, None)
    proposal = claim.get("proposal")
    return AutoClaim(
        key,
        frame,
        Lease.from_json(claim.get("lease")),
        proposal if isinstance(proposal, str) else None,
    )


def check_caps(
    caps: Sequence[SpendCap], totals: dict[str, int], amount: int, currency: str
) -> tuple[str, ...]:
    """Check a reservation against every cap given current totals; return the block ids."""
    for cap in caps:
        if amount and cap.currency != currency:
            raise ParleyError(
                "consent_required",
                f"the cost is in {currency} but the spend cap is in {cap.currency}",
                reason="spend_exceeded",
            )
        if totals.get(cap.block, 0) + amount > cap.max:
            raise ParleyError(
                "consent_required",
                f"the commit would take block {cap.block} over its spend cap of {cap.max}",
                reason="spend_exceeded",
            )
    return tuple(dict.fromkeys(cap.block for cap in caps))


class MemoryStore:
    """The in-memory :class:`Store`; thread-safe (one lock), bounded by expiry and size.

    ``max_proposals``, ``max_anonymous`` (proposals of INTENTs without a verified
    grant), ``max_receipts``, ``max_replay`` and ``max_blocks`` cap the maps;
    ``receipt_ttl`` is how long a receipt whose undo window closed is still kept for
    idempotent replays.
    """

    def __init__(
        self,
        *,
        max_proposals: int = 10_000,
        max_anonymous: int = 1_000,
        max_receipts: int = 10_000,
        max_replay: int = 100_000,
        max_blocks: int = 100_000,
        receipt_ttl: int = 86_400,
        handles: HandleStore | None = None,
    ) -> None:
        self.max_proposals = max_proposals
        self.max_anonymous = max_anonymous
        self.max_receipts = max_receipts
        self.max_replay = max_replay
        self.max_blocks = max_blocks
        self.receipt_ttl = receipt_ttl
        self.handles: HandleStore = handles if handles is not None else _LockedHandles()
        self._lock = threading.RLock()
        self._proposals: OrderedDict[str, ProposalRecord] = OrderedDict()
        self._anonymous: OrderedDict[str, ProposalRecord] = OrderedDict()
        self._receipts: OrderedDict[str, ReceiptRecord] = OrderedDict()
        self._by_proposal: dict[str, str] = {}
        self._inflight: dict[str, tuple[int, tuple[str, ...]]] = {}
        self._leases: dict[str, Lease] = {}
        self._undoing: dict[str, Lease] = {}
        self._totals: dict[str, int] = {}
        self._replay: OrderedDict[tuple[str, str], tuple[int, dict[str, Any] | None]] = (
            OrderedDict()
        )
        self._auto: dict[tuple[str, str], AutoClaim] = {}

    def sizes(self) -> dict[str, int]:
        """How many entries each map holds (for tests and monitoring)."""
        with self._lock:
            return {
                "proposals": len(self._proposals),
                "anonymous": len(self._anonymous),
                "receipts": len(self._receipts),
                "replay": len(self._replay),
                "blocks": len(self._totals),
                "inflight": len(self._inflight),
            }

    # ---------------------------------------------------------------- proposals

    def _prune_proposals(self, pool: OrderedDict[str, ProposalRecord], now: int) -> None:
        for pid in [
            p for p, r in pool.items() if forgotten(int(r.proposal.get("expires", 0)), now)
        ]:
            if pid not in self._inflight:
                del pool[pid]

    def add_proposal(
        self, record: ProposalRecord, *, now: int, vouched: bool | None = None
    ) -> None:
        """Keep a new proposal (see :class:`Store`).

        Proposals of an INTENT without a verified grant (no proof, or a proof by a key
        nobody granted anything) live in their own pool of ``max_anonymous``, so a flood
        of them only pushes out each other, never a proposal made for a granted key. When
        a pool is full, expired proposals go first, then its oldest open ones: forgetting
        a proposal only makes its ``COMMIT`` answer ``not_found`` (never a second effect),
        whereas refusing would let anyone shut INTENT off for everybody. A proposal being
        committed is never forgotten.
        """
        if vouched is None:
            vouched = record.key is not None
        pool, cap = (
            (self._proposals, self.max_proposals)
            if vouched
            else (self._anonymous, self.max_anonymous)
        )
        with self._lock:
            if len(pool) >= cap:
                self._prune_proposals(pool, now)
            if len(pool) >= cap:
                for pid in list(pool):
                    if len(pool) < cap:
                        break
                    if pid not in self._inflight:
                        del pool[pid]
            if len(pool) >= cap:
                raise store_full("open proposals")
            pool[record.id] = record

    def proposal(self, proposal_id: str, *, now: int) -> ProposalRecord | None:
        """The proposal or ``None`` (see :class:`Store`)."""
        with self._lock:
            for pool in (self._proposals, self._anonymous):
                record = pool.get(proposal_id)
                if record is None:
                    continue
                if forgotten(int(record.proposal["expires"]), now):
                    if proposal_id not in self._inflight:
                        del pool[proposal_id]
                    return None
                return record
            return None

    # ---------------------------------------------------------------- receipts

    def receipt(self, receipt_id: str) -> ReceiptRecord | None:
        """The receipt record or ``None``."""
        with self._lock:
            return self._receipts.get(receipt_id)

    def receipt_for(self, proposal_id: str) -> ReceiptRecord | None:
        """The receipt of a committed proposal or ``None``."""
        with self._lock:
            rid = self._by_proposal.get(proposal_id)
            return None if rid is None else self._receipts.get(rid)

    def _keep_until(self, record: ReceiptRecord) -> int:
        at = int(record.receipt.get("at", 0))
        undo = record.receipt.get("undo")
        until = int(undo["until"]) if isinstance(undo, dict) else at
        return max(at + self.receipt_ttl, until)

    def _room_for_receipt(self, now: int) -> bool:
        """Make room for one more receipt (counting commits in flight); False when full.

        Receipts past their keep time go first, then the oldest whose undo window has
        closed (or that were undone): those only serve idempotent replays. A receipt that
        can still be undone is never forgotten; a store full of them refuses new commits.
        """
        if len(self._receipts) + len(self._inflight) < self.max_receipts:
            return True
        for rid in [r for r, rec in self._receipts.items() if self._keep_until(rec) <= now]:
            self._drop_receipt(rid)
        for rid, rec in list(self._receipts.items()):
            if len(self._receipts) + len(self._inflight) < self.max_receipts:
                break
            undo = rec.receipt.get("undo")
            if rec.undo is not None or not isinstance(undo, dict) or int(undo["until"]) <= now:
                self._drop_receipt(rid)
        return len(self._receipts) + len(self._inflight) < self.max_receipts

    def _drop_receipt(self, rid: str) -> None:
        if rid in self._undoing:
            return
        record = self._receipts.pop(rid)
        self._by_proposal.pop(record.proposal, None)

    # ---------------------------------------------------------------- spend + commit

    def spent(self, blocks: Iterable[str], *, excluding: str | None = None) -> dict[str, int]:
        """Committed plus reserved spend per block (see :class:`Store`)."""
        with self._lock:
            own: tuple[int, tuple[str, ...]] | None = None
            if excluding is not None:
                own = self._inflight.get(excluding)
                if own is None:
                    done = self.receipt_for(excluding)
                    own = None if done is None else (done.amount, done.blocks)
            out = {}
            for block in blocks:
                total = self._totals.get(block, 0)
                if own is not None and block in own[1]:
                    total -= own[0]
                out[block] = total
            return out

    def begin_commit(
        self,
        proposal_id: str,
        caps: Sequence[SpendCap],
        amount: int,
        currency: str,
        *,
        now: int,
        lease: Lease | None = None,
    ) -> Claim:
        """Claim and reserve atomically (see :class:`Store`)."""
        with self._lock:
            if proposal_id in self._inflight:
                return "busy"
            if proposal_id in self._by_proposal:
                return "done"
            blocks = check_caps(caps, self._totals, amount, currency)
            if not amount:  # nothing to count: a free commit never takes a totals slot
                blocks = ()
            new = [b for b in blocks if b not in self._totals]
            if new and len(self._totals) + len(new) > self.max_blocks:
                raise store_full("spend totals")
            if not self._room_for_receipt(now):
                raise store_full("receipts still inside their undo window")
            for block in blocks:
                self._totals[block] = self._totals.get(block, 0) + amount
            self._inflight[proposal_id] = (amount, blocks)
            self._leases[proposal_id] = lease or Lease()
            return "new"

    def finish_commit(self, record: ReceiptRecord, *, now: int, owner: str | None = None) -> bool:
        """Store the receipt and make the reservation final (see :class:`Store`)."""
        with self._lock:
            lease = self._leases.get(record.proposal)
            mine = held_by(lease, owner)
            stored = self._by_proposal.get(record.proposal)
            if stored is not None:  # reconciled meanwhile: keep that one
                if owner is not None and self._receipts[stored].receipt.get(
                    "at"
                ) != record.receipt.get("at"):
                    self._count(record.amount, record.blocks)  # the effect ran twice
                return False
            held = self._inflight.pop(record.proposal, None)
            if held is None:  # released meanwhile, yet the effect took place: count it
                held = (record.amount, record.blocks)
                self._count(*held)
            self._leases.pop(record.proposal, None)
            self._receipts[record.id] = replace(record, amount=held[0], blocks=held[1])
            self._by_proposal[record.proposal] = record.id
            self._proposals.pop(record.proposal, None)
            self._anonymous.pop(record.proposal, None)
            return mine

    def _count(self, amount: int, blocks: Sequence[str]) -> None:
        for block in blocks if amount else ():
            self._totals[block] = self._totals.get(block, 0) + amount

    def abort_commit(self, proposal_id: str, *, owner: str | None = None) -> None:
        """Release the claim and reservation (see :class:`Store`)."""
        with self._lock:
            lease = self._leases.get(proposal_id)
            if owner is not None and not held_by(lease, owner):
                return  # not ours any more: the process holding it settles it
            held = self._inflight.pop(proposal_id, None)
            self._leases.pop(proposal_id, None)
            if held is not None:
                amount, blocks = held
                for block in blocks:
                    self._totals[block] -= amount

    # ---------------------------------------------------------------- undo

    def begin_undo(self, receipt_id: str, *, lease: Lease | None = None) -> UndoClaim:
        """Claim a receipt for undo (see :class:`Store`)."""
        with self._lock:
            record = self._receipts.get(receipt_id)
            if record is None:
                return "gone"
            if record.undo is not None:
                return "done"
            if receipt_id in self._undoing:
                return "busy"
            self._undoing[receipt_id] = lease or Lease()
            return "new"

    def lease(self, kind: Literal["commit", "undo"], subject: str) -> Lease | None:
        """The lease of a claim in flight (see :class:`Store`)."""
        with self._lock:
            return (self._leases if kind == "commit" else self._undoing).get(subject)

    def leases(
        self, kind: Literal["commit", "undo"], *, limit: int = 1000
    ) -> list[tuple[str, Lease]]:
        """Claims in flight of one kind (see :class:`Store`)."""
        with self._lock:
            held = self._leases if kind == "commit" else self._undoing
            return list(itertools.islice(held.items(), limit))

    def take_over(
        self, kind: Literal["commit", "undo"], subject: str, expect: Lease, lease: Lease
    ) -> bool:
        """Compare-and-swap a lease (see :class:`Store`)."""
        with self._lock:
            held = self._leases if kind == "commit" else self._undoing
            if held.get(subject) != expect:
                return False
            held[subject] = lease
            return True

    def finish_undo(
        self, receipt_id: str, undo: dict[str, Any], key: str, *, owner: str | None = None
    ) -> bool:
        """Record the reversal (see :class:`Store`)."""
        with self._lock:
            lease = self._undoing.pop(receipt_id, None)
            mine = held_by(lease, owner)
            record = self._receipts.get(receipt_id)
            if record is not None and record.undo is None:  # a reconciled undo stays
                self._receipts[receipt_id] = replace(record, undo=undo, undo_key=key)
                return mine
            return False

    def abort_undo(self, receipt_id: str, *, owner: str | None = None) -> None:
        """Release the undo claim (see :class:`Store`)."""
        with self._lock:
            lease = self._undoing.get(receipt_id)
            if owner is not None and not held_by(lease, owner):
                return
            self._undoing.pop(receipt_id, None)

    # ---------------------------------------------------------------- auto replay memory

    def begin_auto(
        self,
        key: str,
        frame_id: str,
        *,
        now: int,
        ttl: int = REPLAY_TTL,
        lease: Lease | None = None,
    ) -> Claim | dict[str, Any]:
        """Claim ``(key, frame_id)`` (see :class:`Store`)."""
        with self._lock:
            entry = self._replay.get((key, frame_id))
            if entry is not None and remembered(entry[0], now):
                return "busy" if entry[1] is None else entry[1]
            if len(self._replay) >= self.max_replay:
                for old in [
                    k for k, (until, _) in self._replay.items() if not remembered(until, now)
                ]:
                    del self._replay[old]
                    self._auto.pop(old, None)
            if len(self._replay) >= self.max_replay:
                raise store_full("remembered auto requests")
            self._replay[(key, frame_id)] = (now + max(ttl, REPLAY_TTL), None)
            self._auto[(key, frame_id)] = AutoClaim(key, frame_id, lease)
            return "new"

    def link_auto(self, key: str, frame_id: str, proposal_id: str) -> None:
        """Record the proposal an auto INTENT commits (see :class:`Store`)."""
        with self._lock:
            claim = self._auto.get((key, frame_id))
            if claim is not None:
                self._auto[(key, frame_id)] = replace(claim, proposal=proposal_id)

    def auto_claims(self, *, limit: int = 1000) -> list[AutoClaim]:
        """Auto INTENTs still being handled (see :class:`Store`)."""
        with self._lock:
            return list(itertools.islice(self._auto.values(), limit))

    def finish_auto(
        self, key: str, frame_id: str, reply: dict[str, Any], *, now: int, ttl: int = REPLAY_TTL
    ) -> None:
        """Remember the reply (see :class:`Store`)."""
        with self._lock:
            self._replay[(key, frame_id)] = (now + max(ttl, REPLAY_TTL), reply)
            self._auto.pop((key, frame_id), None)

    def abort_auto(self, key: str, frame_id: str) -> None:
        """Drop the claim (see :class:`Store`)."""
        with self._lock:
            entry = self._replay.get((key, frame_id))
            if entry is not None and entry[1] is None:
                del self._replay[(key, frame_id)]
                self._auto.pop((key, frame_id), None)


class _LockedHandles:
    """A :class:`MemoryHandleStore` behind a lock, for services called from threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inner = MemoryHandleStore()

    def put(self, handle: str, value: Any, *, key: str | None, now: int, ttl: int) -> None:
        with self._lock:
            self._inner.put(handle, value, key=key, now=now, ttl=ttl)

    def get(self, handle: str, *, key: str | None, now: int) -> Any:
        with self._lock:
            return self._inner.get(handle, key=key, now=now)


def load_state(store: Store, state: dict[str, Any], *, now: int | datetime) -> None:
    """Put a JSON description of service state into an empty store (vectors, fixtures).

        ``state`` may hold ``proposals`` (:meth:`ProposalRecord.as_json` objects),
        ``receipts`` (:meth:`ReceiptRecord.as_json`), ``spent`` (block id to amount),
        ``replay`` (``{"key", "id", "reply", "at"?, "lease"?, "proposal"?}``; a null reply is
    a request still running, ``lease`` who runs it, ``proposal`` the one it commits,
    ``at`` when it was first seen, default ``now``), ``inflight`` (commits in flight:
    ``{"proposal", "amount"?, "blocks"?, "lease"}``, the proposal also under
    ``proposals``), ``undoing`` (undos in flight: ``{"receipt", "lease"}``) and
        ``handles`` (``{"handle", "key", "value", "expires"}``). Only the store's transactions
        are used, so any :class:`Store` can be loaded. ``now`` is integer epoch seconds or an
        aware datetime (a naive one is a usage error).
    """
    now = epoch_seconds(now, "now")
    if not isinstance(store, Store) or not isinstance(state, dict):
        raise ParleyError("bad_argument", "load_state(store, state dict)", reason="bad_state")
    for raw in state.get("proposals", []):
        store.add_proposal(ProposalRecord.from_json(raw), now=now)
    for block, amount in state.get("spent", {}).items():
        seed = f"seed:{block}"
        store.begin_commit(seed, [SpendCap(block, 2**53, "")], amount, "", now=now)
        store.finish_commit(
            ReceiptRecord(
                {"id": f"r_{seed}", "proposal": seed, "at": now - 86_400 * 365, "undo": None},
                "",
                None,
                "",
            ),
            now=now,
        )
    for raw in state.get("receipts", []):
        record = ReceiptRecord.from_json(raw)
        caps = [SpendCap(b, 2**53, "") for b in record.blocks]
        store.begin_commit(record.proposal, caps, record.amount, "", now=now)
        store.finish_commit(replace(record, undo=None, undo_key=None), now=now)
        if record.undo is not None:
            store.begin_undo(record.id)
            store.finish_undo(record.id, record.undo, record.undo_key or "")
    for raw in state.get("inflight", []):
        caps = [SpendCap(b, 2**53, "") for b in raw.get("blocks", ())]
        lease = Lease.from_json(raw.get("lease"))
        store.begin_commit(
            raw["proposal"], caps, int(raw.get("amount", 0)), "", now=now, lease=lease
        )
    for raw in state.get("undoing", []):
        store.begin_undo(raw["receipt"], lease=Lease.from_json(raw.get("lease")))
    for raw in state.get("replay", []):
        seen = int(raw.get("at", now))
        held = Lease.from_json(raw["lease"]) if "lease" in raw else None
        store.begin_auto(raw["key"], raw["id"], now=seen, lease=held)
        if raw.get("proposal") is not None:
            store.link_auto(raw["key"], raw["id"], raw["proposal"])
        if raw.get("reply") is not None:
            store.finish_auto(raw["key"], raw["id"], raw["reply"], now=seen)
    for raw in state.get("handles", []):
        ttl = int(raw["expires"]) - now
        store.handles.put(raw["handle"], raw["value"], key=raw.get("key"), now=now, ttl=ttl)
