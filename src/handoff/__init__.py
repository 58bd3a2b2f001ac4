"""Principal Handoff: items only the principal may settle leave the agents and come back settled.

Acts (work only the principal can do) and Decisions (choices only the principal may make)
are carried as append-only, attributable records in two registers per item, folded into
a current state regardless of arrival order.

Quick start::

    >>> import handoff
    >>> roles = handoff.Roles.from_json(
    ...     {"principal": "alice", "principal_side": ["alice-pa"], "requesters": {"*": ["bot"]}})
    >>> exts = handoff.ExtensionRegistry([handoff.Extension("acts", "0.3", "act")])
    >>> reg = handoff.Registry(roles=roles, extensions=exts)
    >>> item = {"ph": "0.3", "ext": "acts/0.3", "project": "p", "key": "k",
    ...         "ts": "2026-10-27T10:00:00Z"}
    >>> reg.add({**item, "id": "n1", "type": "raised", "origin": "requester", "by": "bot",
    ...          "terms": {"text": "Pay invoice 42"}, "terms_rev": 1}).state.state
    'open'
    >>> added = reg.add({**item, "id": "s1", "type": "settled", "origin": "principal",
    ...                  "by": "alice-pa", "terms_rev": 1, "outcome": "done",
    ...                  "authority": {"kind": "principal", "decider": "alice"}})
    >>> added.state.state, added.state.outcome, added.state.stale
    ('settled', 'done', False)

Public names are listed in ``__all__``; implementation modules are private.
"""

from __future__ import annotations

from ._acts import ACTS, ACTS_CLAIM_OUTCOMES, ACTS_OUTCOMES, ACTS_REASONS, check_act_terms
from ._builders import make_amended, make_note, make_raised
from ._canonical import canonical, digest, identity, presented_digest, signing_input
from ._check import PH_VERSION, Verdict, check_record
from ._config import CORE_PAIRS, CORE_ROLES, Extension, ExtensionRegistry, Roles
from ._conformance import (
    EXTENSIONS,
    Mandate,
    PrincipalSide,
    check_principal_side_record,
    check_requester_record,
    claim_evidence,
    evidence_verdict,
    make_settlement,
    observe,
    presentation_for,
    presented_terms,
    settlement_evidence,
    terms_at,
)
from ._decisions import (
    DECISIONS,
    DECISIONS_REASONS,
    RESERVED_OUTCOMES,
    check_decision_outcome,
    check_decision_terms,
    option_status,
)
from ._errors import HandoffError
from ._evidence import (
    PROOF_ALGORITHMS,
    PROOF_TYP,
    KeySet,
    ProofCheck,
    attach_proof,
    presentation,
    public_jwks,
    sign_proof,
    verify_proof,
)
from ._fold import Added, Conflict, ItemState, Registry, RelationState, fold
from ._json import parse_line as parse_record
from ._markdown import (
    ActLine,
    StateDocument,
    SyncResult,
    act_key_for,
    parse_state_document,
    read_state_document,
    sync_state_document,
    write_state_document,
)
from ._records import (
    RECORD_TYPES,
    About,
    Authority,
    Evidence,
    ItemId,
    Record,
    Relation,
    Target,
)
from ._schemas import load_schema, schema_names
from ._store import MemoryStore, SQLiteStore, Store, open_store
from ._validate import ALLOWED_KEYWORDS, check_schema, ecma_pattern
from ._wire import (  # typed views of make_settlement() and observe() (issue 24 #9)
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
    "ACTS",
    "ACTS_CLAIM_OUTCOMES",
    "ACTS_OUTCOMES",
    "ACTS_REASONS",
    "ALLOWED_KEYWORDS",
    "CORE_PAIRS",
    "CORE_ROLES",
    "DECISIONS",
    "DECISIONS_REASONS",
    "EXTENSIONS",
    "PH_VERSION",
    "PROOF_ALGORITHMS",
    "PROOF_TYP",
    "RECORD_TYPES",
    "RESERVED_OUTCOMES",
    "About",
    "ActLine",
    "Added",
    "Authority",
    "ClaimEvidence",
    "Conflict",
    "ConflictJSON",
    "Evidence",
    "EvidenceReport",
    "Extension",
    "ExtensionRegistry",
    "HandoffError",
    "ItemId",
    "ItemJSON",
    "ItemState",
    "ItemStateName",
    "KeySet",
    "Mandate",
    "MemoryStore",
    "ObservedItem",
    "PrincipalSide",
    "ProofCheck",
    "Record",
    "Registry",
    "Relation",
    "RelationJSON",
    "RelationState",
    "Roles",
    "SQLiteStore",
    "SettledAuthority",
    "SettledEvidence",
    "SettledRecord",
    "StateDocument",
    "Store",
    "SyncResult",
    "Target",
    "Verdict",
    "act_key_for",
    "attach_proof",
    "canonical",
    "check_act_terms",
    "check_decision_outcome",
    "check_decision_terms",
    "check_principal_side_record",
    "check_record",
    "check_requester_record",
    "check_schema",
    "claim_evidence",
    "digest",
    "ecma_pattern",
    "evidence_verdict",
    "fold",
    "identity",
    "load_schema",
    "make_amended",
    "make_note",
    "make_raised",
    "make_settlement",
    "observe",
    "open_store",
    "option_status",
    "parse_record",
    "parse_state_document",
    "presentation",
    "presentation_for",
    "presented_digest",
    "presented_terms",
    "public_jwks",
    "read_state_document",
    "schema_names",
    "settlement_evidence",
    "sign_proof",
    "signing_input",
    "sync_state_document",
    "terms_at",
    "verify_proof",
    "write_state_document",
]

# The library logs through `logging` and never configures it: without a handler of the
# application's, nothing is printed (docs/cli.md, "Logging").
import logging as _logging

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
