"""Proxy Exchange Protocol (PXP v0): two proxies negotiate for their principals in a room.

Sealed intent cards, envelopes whose claims are tagged stated/sourced/assumed, reviews,
escalation to the principal, a hash-chained ledger, agreement by proposal hash, and a
decision brief a principal can act on without reading the transcript.

The five things you most likely want:

1. :class:`Room`: open a room, seal each principal's card, :meth:`~Room.send` envelopes,
   :meth:`~Room.answer` escalations; every change is one ledger entry through
   :meth:`Room.apply`, the gate an import goes through too.
2. :meth:`Room.brief` and :func:`brief_markdown`: the decision brief, as JSON and Markdown.
3. :func:`verify_ledger` (a ledger against the head a brief gave) and :func:`load_room`
   (a room export, ours or the reference server's, replayed entry by entry).
4. :func:`run_room` with a :class:`Proxy` of yours, or :func:`simulate` for a sample room.
5. :class:`SqliteRoomStore` to keep rooms; :mod:`pxp.server` for the MCP room server.

Errors are :class:`PxpUsageError` (your call was wrong: a naive ``now``, a bad option) or
:class:`PxpProtocolError` (a peer's data: a card, an envelope, a ledger, an action out of
turn), both :class:`PxpError` with a stable ``code`` (:mod:`pxp.errors`). Every ``now`` is a
timezone-aware :class:`~datetime.datetime`. The rest of the surface lives in public
submodules: :mod:`pxp.wire` (canonical JSON, hashes, claim ids, the typed views of a
brief), :mod:`pxp.ledger`, :mod:`pxp.rules` (the transition table, the claim rules, the
flag sentences), :mod:`pxp.errors`, :mod:`pxp.server` (extras ``[mcp,http]``, kept out of
``import pxp``).

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
    >>> pxp.verify_ledger(room.export()["ledger"], head=brief["ledger"]["head"]) == room.head
    True
    >>> pxp.load_room(room.export()).status
    'agreed'
"""

from __future__ import annotations

# the public submodules that need no extra load with the core (pxp.server stays apart)
from . import errors as errors
from . import ledger as ledger
from . import rules as rules
from . import wire as wire
from ._brief import brief_markdown, build_brief
from ._card import Amendment, IntentCard, Principal, SealedCard, card_hash, seal_card
from ._envelope import envelope_hash, proposal_hash, validate_draft, validate_envelope
from ._export import load_room
from ._ledger import verify_ledger
from ._proxy import Answerer, Proxy, ScriptedPrincipal, ScriptedProxy, run_room
from ._room import ClaimRecord, Escalation, Room, RoomView, SendResult
from ._schemas import load_schema, schema_names
from ._simulate import simulate
from ._store import MemoryRoomStore, RoomStore, SqliteRoomStore
from .errors import PxpError, PxpProtocolError, PxpUsageError

__all__ = [
    "Amendment",
    "Answerer",
    "ClaimRecord",
    "Escalation",
    "IntentCard",
    "MemoryRoomStore",
    "Principal",
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
    "SendResult",
    "SqliteRoomStore",
    "brief_markdown",
    "build_brief",
    "card_hash",
    "envelope_hash",
    "load_room",
    "load_schema",
    "proposal_hash",
    "run_room",
    "schema_names",
    "seal_card",
    "simulate",
    "validate_draft",
    "validate_envelope",
    "verify_ledger",
]

# The library logs through `logging` and never configures it: without a handler of the
# application's, nothing is printed (docs/cli.md, "Logging").
import logging as _logging

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
