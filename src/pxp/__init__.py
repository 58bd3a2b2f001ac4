"""Proxy Exchange Protocol (PXP v0): two proxies negotiate for their principals in a room.

Sealed intent cards, envelopes whose claims are tagged stated/sourced/assumed, reviews,
escalation to the principal, a hash-chained ledger, agreement by proposal hash, and a
decision brief a principal can act on without reading the transcript.

Quick start::

    >>> from datetime import datetime, timezone
    >>> import pxp
    >>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> room = pxp.Room.open("demo", topic="Sell a bike", now=now)
    >>> ana = {"principal": {"name": "Ana"}, "goal": "Sell", "must_haves": ["150 EUR"]}
    >>> ben = {"principal": {"name": "Ben"}, "goal": "Buy", "must_haves": ["A bike"]}
    >>> room.seal("A", ana, now=now).hash == pxp.card_hash(room.card("A"))
    True
    >>> _ = room.seal("B", ben, now=now, via="mcp")
    >>> offer = {"message": "150?", "proposal": {"terms": ["150 EUR"]}, "status": "continue"}
    >>> room.send("A", offer, now=now).status
    'active'
    >>> room.send("B", {"message": "Deal.", "status": "agree"}, now=now).status
    'agreed'
    >>> brief = room.brief()
    >>> brief["outcome"], brief["agreement"]["terms"]
    ('agreed', ['150 EUR'])
    >>> pxp.verify_ledger(room.export()["ledger"]) == brief["ledger"]["head"]
    True

Public names are listed in ``__all__``; implementation modules are private. The MCP room
server (seed §8; extras ``[mcp,http]``) is the public submodule :mod:`pxp.server`, kept out
of ``import pxp`` so that the core needs neither the MCP SDK nor a web server.
"""

from __future__ import annotations

from ._brief import brief_markdown, build_brief
from ._canonical import ZERO_HASH, canonical, canonical_bytes, sha256_hex
from ._card import (
    LIMITS,
    Amendment,
    IntentCard,
    Principal,
    SealedCard,
    card_hash,
    normalise_card,
    resolve_clause,
    seal_card,
)
from ._envelope import (
    MAX_CLAIMS,
    claim_id,
    envelope_hash,
    parse_claim_id,
    proposal_hash,
    validate_draft,
    validate_envelope,
)
from ._export import load_room
from ._flags import FLAG_SENTENCES
from ._ledger import (
    ENTRY_TYPES,
    Ledger,
    LedgerEntry,
    entry_hash,
    load_ledger,
    verify_ledger,
)
from ._proxy import Answerer, Proxy, ScriptedPrincipal, ScriptedProxy, run_room
from ._room import (
    ACTIONS,
    STATES,
    TRANSITIONS,
    ClaimRecord,
    Escalation,
    Room,
    RoomView,
    SendResult,
    format_time,
)
from ._schemas import load_schema, schema_names
from ._simulate import simulate
from ._store import MemoryRoomStore, RoomStore, SqliteRoomStore
from ._wire import (  # typed views of Room.agreement and Room.brief() (issue 24 #9)
    ActedBy,
    Agreement,
    AuthorityPart,
    AuthorityRow,
    AuthoritySource,
    Brief,
    BriefAgreement,
    BriefClaim,
    BriefEscalation,
    BriefFlag,
    BriefJudgment,
    BriefLedger,
    BriefParties,
    BriefParty,
    BriefReview,
    BriefTurns,
    ChallengedClaim,
    ClaimOrigin,
    PrincipalLink,
    SeatAt,
    SeatContest,
    SeatName,
    SeatRejoin,
    SeatRelease,
    UnverifiedClaim,
)
from .errors import LedgerError, PxpError, PxpProtocolError, PxpUsageError

__all__ = [
    "ACTIONS",
    "ENTRY_TYPES",
    "FLAG_SENTENCES",
    "LIMITS",
    "MAX_CLAIMS",
    "STATES",
    "TRANSITIONS",
    "ZERO_HASH",
    "ActedBy",
    "Agreement",
    "Amendment",
    "Answerer",
    "AuthorityPart",
    "AuthorityRow",
    "AuthoritySource",
    "Brief",
    "BriefAgreement",
    "BriefClaim",
    "BriefEscalation",
    "BriefFlag",
    "BriefJudgment",
    "BriefLedger",
    "BriefParties",
    "BriefParty",
    "BriefReview",
    "BriefTurns",
    "ChallengedClaim",
    "ClaimOrigin",
    "ClaimRecord",
    "Escalation",
    "IntentCard",
    "Ledger",
    "LedgerEntry",
    "LedgerError",
    "MemoryRoomStore",
    "Principal",
    "PrincipalLink",
    "Proxy",
    "PxpError",
    "PxpProtocolError",
    "PxpUsageError",
    "Room",
    "RoomStore",
    "RoomView",
    "ScriptedPrincipal",
    "ScriptedProxy",
    "SealedCard",
    "SeatAt",
    "SeatContest",
    "SeatName",
    "SeatRejoin",
    "SeatRelease",
    "SendResult",
    "SqliteRoomStore",
    "UnverifiedClaim",
    "brief_markdown",
    "build_brief",
    "canonical",
    "canonical_bytes",
    "card_hash",
    "claim_id",
    "entry_hash",
    "envelope_hash",
    "format_time",
    "load_ledger",
    "load_room",
    "load_schema",
    "normalise_card",
    "parse_claim_id",
    "proposal_hash",
    "resolve_clause",
    "run_room",
    "schema_names",
    "seal_card",
    "sha256_hex",
    "simulate",
    "validate_draft",
    "validate_envelope",
    "verify_ledger",
]

# The library logs through `logging` and never configures it: without a handler of the
# application's, nothing is printed (docs/cli.md, "Logging").
import logging as _logging

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
