"""Typed views of the records and reports :func:`handoff.make_settlement` and
:func:`handoff.observe` return.

These are :class:`typing.TypedDict` classes: the values stay plain JSON dicts, and a type
checker knows their members, so ``item["evidence"]["proof"]`` type-checks while
``item["evidense"]`` or ``item["state"] == "setled"`` does not.
"""

# No `from __future__ import annotations` here: on Python 3.11 a TypedDict sees
# NotRequired only in evaluated annotations (its __required_keys__ are read at run time).
from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "ClaimEvidence",
    "ConflictJSON",
    "EvidenceReport",
    "ItemJSON",
    "ItemStateName",
    "ObservedItem",
    "RelationJSON",
    "SettledAuthority",
    "SettledEvidence",
    "SettledRecord",
]

ItemStateName = Literal["open", "settled", "withdrawn", "unknown", "conflicted"]
"""The state of an item (§6; ``conflicted``: an id was sent with two contents)."""


class ItemJSON(TypedDict):
    """An item's identity: extension, project and key."""

    ext: str
    project: str
    key: str


class RelationJSON(TypedDict):
    """An active relation of an item: its ``kind``, ``target`` and the ``record`` holding it."""

    kind: str
    target: dict[str, Any]
    record: str


class ConflictJSON(TypedDict):
    """A conflict a receiver holds (see :class:`handoff.Conflict` for the kinds)."""

    kind: str
    item: ItemJSON
    register: NotRequired[str]
    ids: list[str]
    chosen: NotRequired[str]


class ClaimEvidence(TypedDict):
    """What one claim says it rests on (:func:`handoff.claim_evidence`)."""

    claim: str
    by: str
    outcome: str
    basis: str | None


class EvidenceReport(TypedDict):
    """How a settlement's evidence checks out.

    ``presented``: ``match``, ``mismatch``, ``absent`` or ``unverifiable``; ``proof``:
    ``valid``, ``invalid:<reason>``, ``absent`` or ``unverifiable``.
    """

    presented: Literal["match", "mismatch", "absent", "unverifiable"]
    proof: str


class ObservedItem(ItemJSON):
    """One item as :func:`handoff.observe` reports it: its state (``ItemState.to_json``)
    and, where they apply, the claims' evidence, the terms the settlement was shown, how
    its evidence checks out and (decisions) how the chosen option fares now."""

    state: ItemStateName
    outcome: NotRequired[str]
    authority: NotRequired[str]
    settled_terms_rev: NotRequired[int]
    stale: bool
    need_withdrawn: bool
    policy: str
    need: NotRequired[str]
    settlement: NotRequired[str]
    terms_rev: NotRequired[int]
    held_terms_rev: NotRequired[int]
    terms: NotRequired[dict[str, Any]]
    claims: list[str]
    adopted: list[str]
    relations: list[RelationJSON]
    notes: list[str]
    conflicts: list[ConflictJSON]
    claim_evidence: NotRequired[list[ClaimEvidence]]
    presented_terms: NotRequired[dict[str, Any]]
    evidence: NotRequired[EvidenceReport]
    option_status: NotRequired[Literal["current", "changed", "gone", "unknown"]]


class SettledAuthority(TypedDict):
    """Who decided a settlement: the principal (``kind`` ``principal`` or ``confirmed``)."""

    kind: Literal["principal", "confirmed"]
    decider: str


class SettledEvidence(TypedDict):
    """A settlement's evidence: the §9 digest of what was ``presented`` and, for
    ``confirmed``, the ``proposal`` confirmed."""

    presented: str
    proposal: NotRequired[str]


class SettledRecord(TypedDict):
    """The ``settled`` record :func:`handoff.make_settlement` builds (not yet signed)."""

    ph: str
    ext: str
    type: Literal["settled"]
    origin: Literal["principal"]
    by: str
    key: str
    project: str
    ts: str
    terms_rev: int
    outcome: str
    authority: SettledAuthority
    evidence: SettledEvidence
    adopts: NotRequired[list[str]]
    answer: NotRequired[str]
    supersedes: NotRequired[list[str]]
    id: str
