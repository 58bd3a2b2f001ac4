"""Crash-safe ``COMMIT`` and ``UNDO``: leases, reconciliation, operator resolution (**ours**).

A commit (or undo) in flight is a claim in the store carrying a :class:`~parley._state.Lease`:
the owning process (``host:pid:nonce``) and a deadline. When that process dies (a local
process that no longer exists) or the lease runs out, the claim is *stale*: the next
process to notice takes it over (one compare-and-swap, so exactly one does) and asks the
capability's reconciler whether the effect happened, by the claim's idempotency key (the
proposal id for a commit, the receipt id for an undo). :func:`happened` writes the receipt
and counts the reservation; :func:`not_happened` releases the claim and the reservation.
With no reconciler, or one that cannot tell, the claim stays (its reservation held) and
is marked unresolved: a retry is answered ``unavailable``/``commit_unresolved`` until an
operator runs ``parley state resolve``. See docs/spec/parley-runtime.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from ._b64 import b64url_encode
from ._report import Report
from ._state import Lease, ReceiptRecord, Store
from .errors import ParleyError

__all__ = [
    "Outcome",
    "happened",
    "machine_id",
    "not_happened",
    "owner_gone",
    "owner_id",
    "receipt_of",
    "resolve",
    "stale",
    "undo_receipt_of",
]

Kind = Literal["commit", "undo"]


@dataclass(frozen=True)
class Outcome(Report):
    """What a reconciler found: did the effect happen, and the receipt ``result`` if so.

    It has no truth value (read :attr:`happened`)."""

    _flag = "happened"

    happened: bool
    result: Any = None


def happened(result: Any = None) -> Outcome:
    """The effect took place; ``result`` becomes the receipt's ``result``."""
    return Outcome(True, result)


def not_happened() -> Outcome:
    """The effect did not take place (and never will under this idempotency key)."""
    return Outcome(False)


def machine_id() -> str:
    """The ``host`` part of an owner name: the host name, and on Linux the boot id and the
    PID namespace too (**ours**, review of issue 23): replicas in containers often share a
    host name while each has its own process ids, so only an owner whose process ids this
    process can see is ever checked for life by its pid."""
    import socket  # here, not at the top: `import parley` loads no transport module

    parts = [socket.gethostname()]
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            parts.append(boot.read().strip()[:8])
        parts.append(os.readlink("/proc/self/ns/pid").partition("[")[2].rstrip("]"))
    except OSError:
        return parts[0]
    return "/".join(parts)


def owner_id(rand: Callable[[int], bytes]) -> str:
    """A lease owner name for this process: ``host:pid:nonce`` (``host``: :func:`machine_id`)."""
    return f"{machine_id()}:{os.getpid()}:{b64url_encode(rand(6))}"


def owner_gone(owner: str) -> bool:
    """True when ``owner`` is a process of this host that no longer exists.

    An empty owner (an unresolved claim) counts as gone; an owner on another host (another
    boot, another PID namespace: :func:`machine_id`), or a process id that is alive
    (possibly reused), does not: its lease must run out first.
    """
    if not owner:
        return True
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != machine_id() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by someone else
        return False
    return False


def stale(lease: Lease, now: int) -> bool:
    """True when a claim may be reconciled: its lease ran out or its owner is gone."""
    return lease.until <= now or owner_gone(lease.owner)


def receipt_of(proposal: dict[str, Any], *, at: int, rid: str, result: Any) -> dict[str, Any]:
    """The receipt of a committed proposal (SPEC.md section 5.2)."""
    window = proposal["undo"]
    receipt: dict[str, Any] = {
        "id": rid,
        "proposal": proposal["id"],
        "capability": proposal["capability"],
        "summary": proposal["summary"],
        "at": at,
        "effects": proposal["effects"],
        "cost": proposal["cost"],
        "undo": None if window is None else {"until": at + window["window"]},
    }
    if result is not None:
        receipt["result"] = result
    return receipt


def undo_receipt_of(record: ReceiptRecord, *, at: int, rid: str, result: Any) -> dict[str, Any]:
    """The reversal receipt of an undone receipt."""
    undo: dict[str, Any] = {
        "id": rid,
        "proposal": record.proposal,
        "capability": record.receipt["capability"],
        "summary": record.receipt["summary"],
        "at": at,
        "effects": [],
        "cost": None,
        "undo": None,
        "undoes": record.id,
    }
    if result is not None:
        undo["result"] = result
    return undo


def resolve(
    store: Store,
    kind: Kind,
    subject: str,
    lease: Lease,
    outcome: Outcome,
    *,
    now: int,
    rand: Callable[[int], bytes],
) -> dict[str, Any] | None:
    """Settle a claim held under ``lease`` by ``outcome``; return the receipt written, if any.

    The caller holds the claim (it took it over). A commit that happened gets its receipt,
    dated when the commit began, and its reservation counted; one that did not is
    released. An undo that happened gets its reversal receipt; one that did not is released.
    """
    rid = "r_" + b64url_encode(rand(12))
    if kind == "commit":
        record = store.proposal(subject, now=lease.began)
        if not outcome.happened or record is None:
            if outcome.happened:
                raise ParleyError(
                    "not_found", "the proposal of this commit is gone", reason="unknown_proposal"
                )
            store.abort_commit(subject, owner=lease.owner)
            return None
        receipt = receipt_of(record.proposal, at=lease.began, rid=rid, result=outcome.result)
        store.finish_commit(
            ReceiptRecord(receipt, lease.key, lease.principal, lease.hash),
            now=now,
            owner=lease.owner,
        )
        done = store.receipt_for(subject)
        return None if done is None else done.receipt
    held = store.receipt(subject)
    if not outcome.happened or held is None:
        store.abort_undo(subject, owner=lease.owner)
        return None
    undo = undo_receipt_of(held, at=lease.began, rid=rid, result=outcome.result)
    store.finish_undo(subject, undo, lease.key, owner=lease.owner)
    latest = store.receipt(subject)
    return None if latest is None else latest.undo


def unresolved(lease: Lease) -> Lease:
    """The lease an unresolved claim keeps: no owner, run out, who asked still known."""
    return replace(lease, owner="", until=0)
