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

from ._b64 import b64url_decode, b64url_encode
from ._canonical import canonical, proposal_hash
from ._caveats import Caveat, effective_caveats, parse_caveat
from ._consent import consent_caveats, consent_for_shown, consent_request, mint_consent_grant
from ._errors import ParleyError
from ._estimate import estimate  # Lens/budgets block (issue 4)
from ._fit import fit
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
from ._keys import Key, generate_key, key_from_seed, parse_public_key, verify_signature
from ._keystore import AgentKeyStore
from ._lean import lean
from ._lens import lens
from ._proof import PROOF_WINDOW, proof_target, sign_proof, verify_proof
from ._schemas import load_schema, schema_names
from ._spend import MemorySpendLedger, SpendLedger

__all__ = [
    "HANDLE_TTL",
    "PROOF_WINDOW",
    "TOKEN_PREFIX",
    "AgentKeyStore",
    "Block",
    "Caveat",
    "Cost",
    "Grant",
    "GrantCheck",
    "GrantContext",
    "HandleStore",
    "Key",
    "MemoryHandleStore",
    "MemorySpendLedger",
    "ParleyError",
    "ProposalFacts",
    "SpendCap",
    "SpendLedger",
    "b64url_decode",
    "b64url_encode",
    "block_id",
    "canonical",
    "consent_caveats",
    "consent_for_shown",
    "consent_request",
    "decode_grant",
    "delegate",
    "effective_caveats",
    "estimate",
    "expand",
    "expand_slice",
    "fit",
    "generate_key",
    "inspect_grant",
    "key_from_seed",
    "lean",
    "lens",
    "load_schema",
    "mint_consent_grant",
    "mint_grant",
    "new_handle",
    "park",
    "parse_caveat",
    "parse_public_key",
    "proof_target",
    "proposal_hash",
    "schema_names",
    "sign_proof",
    "verify_grant",
    "verify_proof",
    "verify_signature",
]
