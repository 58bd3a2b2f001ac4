"""Typed views (``TypedDict``) of the JSON Handoff returns, for type checkers.

:func:`handoff.make_settlement` returns a :class:`SettledRecord`; :func:`handoff.observe`
returns a list of :class:`ObservedItem`; ``ItemState.to_json()`` is an :class:`ItemJSON`.
At run time they are plain dicts.
"""

from __future__ import annotations

from ._wire import (
    ClaimEvidence,
    ConflictJSON,
    EvidenceReport,
    ItemJSON,
    ItemStateName,
    ObservedItem,
    RelationJSON,
    SettledAuthority,
    SettledEvidence,
    SettledRecord,
)

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
