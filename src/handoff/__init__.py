"""Principal Handoff: items only the principal may settle leave the agents and come back settled.

The five things you most likely want:

1. :class:`Registry` (with :class:`Roles` and :data:`EXTENSIONS`): admit records and read
   each item's current state (``registry.add(record).state``, ``registry.state(item)``).
2. :func:`make_raised` / :func:`make_settlement`: build the records a requester and a
   principal side send, checked as built (:func:`make_amended`, :func:`make_note` too).
3. :func:`attach_proof` / :func:`verify_proof`: sign a person's settlement with their key
   and check it; :func:`settlement_evidence` says what an item's settlement is worth.
4. :func:`open_store`: keep records in memory, SQLite or PostgreSQL by URL.
5. :class:`HandoffProtocolError` / :class:`HandoffUsageError`: bad data from a peer versus
   your own mistake (both are :class:`HandoffError`, a :class:`ValueError`, with a ``code``
   from ``handoff.errors.CODES``).

Acts (work only the principal can do) and Decisions (choices only the principal may make)
are carried as append-only, attributable records in two registers per item, folded into
a current state regardless of arrival order. Time (``ts``, ``now``) is RFC 3339 text or an
aware :class:`datetime.datetime`.

Quick start::

    >>> import datetime, handoff
    >>> from joserfc.jwk import OKPKey
    >>> roles = handoff.Roles.from_json(
    ...     {"principal": "alice", "principal_side": ["alice-pa"], "requesters": {"*": ["bot"]}})
    >>> reg = handoff.Registry(roles=roles, extensions=handoff.EXTENSIONS)
    >>> item = handoff.ItemId("acts", "house", "pay-42")
    >>> now = datetime.datetime(2026, 10, 27, 10, 0, tzinfo=datetime.UTC)
    >>> need = handoff.make_raised(reg, item, {"text": "Pay invoice 42"}, by="bot", ts=now)
    >>> reg.add(need).state.state
    'open'
    >>> key = OKPKey.generate_key("Ed25519").as_dict(private=True)
    >>> settled = handoff.attach_proof(
    ...     handoff.make_settlement(reg, item, "done", by="alice-pa", ts=now), key)
    >>> side = handoff.PrincipalSide(jwks=handoff.public_jwks(key), verifiable=True)
    >>> handoff.check_principal_side_record(settled, reg, side)["id"] == settled["id"]
    True
    >>> reg.add(settled).state.outcome
    'done'
    >>> handoff.settlement_evidence(reg, item, side).verdict
    'verified'

The rest lives in documented submodules: :mod:`handoff.errors` (the code table),
:mod:`handoff.records` (record parts, core tables), :mod:`handoff.digests` (JCS and
digests), :mod:`handoff.evidence` (presentations, bare proofs), :mod:`handoff.stores`,
:mod:`handoff.acts`, :mod:`handoff.decisions`, :mod:`handoff.markdown` (the Acts state
document), :mod:`handoff.schemas` and :mod:`handoff.wire` (typed JSON views).
"""

from __future__ import annotations

# the public submodules load with the package, so handoff.digests.canonical works at once
from . import acts, decisions, digests, evidence, markdown, records, schemas, stores, wire  # noqa: F401
from ._builders import make_amended, make_note, make_raised
from ._check import Verdict, check_record
from ._config import Extension, ExtensionRegistry, Roles
from ._conformance import (
    EXTENSIONS,
    EvidenceCheck,
    Mandate,
    PrincipalSide,
    check_principal_side_record,
    check_requester_record,
    make_settlement,
    observe,
    settlement_evidence,
)
from ._evidence import KeySet, ProofCheck, attach_proof, public_jwks, verify_proof
from ._fold import Added, ItemState, Registry, fold
from ._json import parse_line as parse_record
from ._records import ItemId, Record
from ._schemas import load_schema, schema_names
from ._store import Store, open_store
from .errors import HandoffError, HandoffProtocolError, HandoffUsageError

__all__ = [
    "EXTENSIONS",
    "Added",
    "EvidenceCheck",
    "Extension",
    "ExtensionRegistry",
    "HandoffError",
    "HandoffProtocolError",
    "HandoffUsageError",
    "ItemId",
    "ItemState",
    "KeySet",
    "Mandate",
    "PrincipalSide",
    "ProofCheck",
    "Record",
    "Registry",
    "Roles",
    "Store",
    "Verdict",
    "attach_proof",
    "check_principal_side_record",
    "check_record",
    "check_requester_record",
    "fold",
    "load_schema",
    "make_amended",
    "make_note",
    "make_raised",
    "make_settlement",
    "observe",
    "open_store",
    "parse_record",
    "public_jwks",
    "schema_names",
    "settlement_evidence",
    "verify_proof",
]

# The library logs through `logging` and never configures it: without a handler of the
# application's, nothing is printed (docs/cli.md, "Logging").
import logging as _logging

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
