"""Parley: INTENT, PROPOSALS, COMMIT for agents acting for people.

Proposal hashes, undo, Ed25519 capability-chain grants with fail-closed caveats, proof of
possession, consent bound to one proposal, token budgets, and Lens, a byte-exact compact
text rendering for models.

Quick start::

    >>> import parley
    >>> issubclass(parley.ParleyError, ValueError)
    True
    >>> len(parley.schema_names()) >= 0
    True

A principal grants an agent a capped, scoped grant; a service checks it with a proof::

    >>> principal = parley.key_from_seed(bytes([1]) * 32)
    >>> agent = parley.key_from_seed(bytes([2]) * 32)
    >>> token = parley.mint_grant(principal, agent.public,
    ...     [{"svc": ["shop.example"]}, {"per": {"max": 5000, "currency": "USD"}}],
    ...     iat=1790000000, nonce="n1")
    >>> proof = parley.sign_proof(agent, aud="shop.example", verb="ASK",
    ...     target="shop.search", ts=1790000000)
    >>> holder = parley.verify_proof(proof, aud="shop.example", verb="ASK",
    ...     target="shop.search", now=1790000010)
    >>> ctx = parley.GrantContext("shop.example", "ASK", "shop.search", 1790000010)
    >>> parley.verify_grant([token], trusted=[principal.public], proof_key=holder, ctx=ctx).ok
    True

Public names are listed in ``__all__``; implementation modules are private.
"""

from __future__ import annotations

# Service and agent runtime, frames, transports (issue 5)
from ._agent import Agent, Client, ReplyError, Result
from ._b64 import b64url_decode, b64url_encode
from ._canonical import canonical, proposal_hash
from ._caveats import Caveat, effective_caveats, parse_caveat
from ._connect import connect, serve, serve_forever
from ._consent import consent_caveats, consent_for_shown, consent_request, mint_consent_grant
from ._estimate import estimate  # Lens/budgets block (issue 4)
from ._fit import fit
from ._frames import MAX_FRAME, LineBuffer, encode_frame, parse_frame
from ._grants import (
    TOKEN_PREFIX,
    Block,
    Cost,
    Grant,
    GrantCheck,
    GrantContext,
    ProposalFacts,
    SpendCap,
    block_id,
    decode_grant,
    delegate,
    inspect_grant,
    mint_grant,
    verify_grant,
)
from ._handles import (
    HANDLE_TTL,
    HandleStore,
    MemoryHandleStore,
    expand,
    expand_slice,
    new_handle,
    park,
)
from ._http import asgi_app, serve_http
from ._http_client import discover
from ._keys import Key, generate_key, key_from_seed, parse_public_key, verify_signature
from ._keystore import AgentKeyStore
from ._lean import lean
from ._lens import lens
from ._params import ParamsError, check_params, merge_patch
from ._proof import PROOF_WINDOW, proof_target, sign_proof, verify_proof
from ._recovery import Outcome, happened, not_happened
from ._schemas import load_schema, schema_names
from ._service import Capability, Clarify, Context, Service, ServiceError, clarify, offer
from ._spend import MemorySpendLedger, SpendLedger
from ._sqlite import SQLiteStore
from ._state import Lease, MemoryStore, ProposalRecord, ReceiptRecord, Store, load_state
from ._stores import default_state_url, open_store
from ._transport_stdio import serve_stdio
from ._transport_tcp import serve_tcp
from ._wire import (  # typed views of the wire objects (issue 24 #9)
    AnswerReply,
    BriefCapability,
    BriefReply,
    BriefService,
    ClarifyOption,
    ClarifyReply,
    ConsentRequestJSON,
    CostJSON,
    EffectJSON,
    ErrorCode,
    ErrorReply,
    EventFrame,
    FinalReply,
    FixJSON,
    GrantBlockJSON,
    GrantInspection,
    MoreJSON,
    ProposalJSON,
    ProposalsReply,
    ReceiptJSON,
    ReceiptReply,
    Reply,
    ReplyKind,
    Risk,
)
from .errors import ParleyError

__all__ = [
    "HANDLE_TTL",
    "MAX_FRAME",
    "PROOF_WINDOW",
    "TOKEN_PREFIX",
    "Agent",
    "AgentKeyStore",
    "AnswerReply",
    "Block",
    "BriefCapability",
    "BriefReply",
    "BriefService",
    "Capability",
    "Caveat",
    "Clarify",
    "ClarifyOption",
    "ClarifyReply",
    "Client",
    "ConsentRequestJSON",
    "Context",
    "Cost",
    "CostJSON",
    "EffectJSON",
    "ErrorCode",
    "ErrorReply",
    "EventFrame",
    "FinalReply",
    "FixJSON",
    "Grant",
    "GrantBlockJSON",
    "GrantCheck",
    "GrantContext",
    "GrantInspection",
    "HandleStore",
    "Key",
    "Lease",
    "LineBuffer",
    "MemoryHandleStore",
    "MemorySpendLedger",
    "MemoryStore",
    "MoreJSON",
    "Outcome",
    "ParamsError",
    "ParleyError",
    "ProposalFacts",
    "ProposalJSON",
    "ProposalRecord",
    "ProposalsReply",
    "ReceiptJSON",
    "ReceiptRecord",
    "ReceiptReply",
    "Reply",
    "ReplyError",
    "ReplyKind",
    "Result",
    "Risk",
    "SQLiteStore",
    "Service",
    "ServiceError",
    "SpendCap",
    "SpendLedger",
    "Store",
    "asgi_app",
    "b64url_decode",
    "b64url_encode",
    "block_id",
    "canonical",
    "check_params",
    "clarify",
    "connect",
    "consent_caveats",
    "consent_for_shown",
    "consent_request",
    "decode_grant",
    "default_state_url",
    "delegate",
    "discover",
    "effective_caveats",
    "encode_frame",
    "estimate",
    "expand",
    "expand_slice",
    "fit",
    "generate_key",
    "happened",
    "inspect_grant",
    "key_from_seed",
    "lean",
    "lens",
    "load_schema",
    "load_state",
    "merge_patch",
    "mint_consent_grant",
    "mint_grant",
    "new_handle",
    "not_happened",
    "offer",
    "open_store",
    "park",
    "parse_caveat",
    "parse_frame",
    "parse_public_key",
    "proof_target",
    "proposal_hash",
    "schema_names",
    "serve",
    "serve_forever",
    "serve_http",
    "serve_stdio",
    "serve_tcp",
    "sign_proof",
    "verify_grant",
    "verify_proof",
    "verify_signature",
]

# The library logs through `logging` and never configures it: without a handler of the
# application's, nothing is printed (docs/cli.md, "Logging").
import logging as _logging

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
