"""Grants, caveats and proofs in detail (Parley v1 SPEC.md section 6) beyond the top level.

The calls most programs need are at the top level: :func:`parley.mint_grant`,
:func:`parley.delegate`, :func:`parley.decode_grant`, :func:`parley.inspect_grant`,
:func:`parley.verify_grant` with :class:`parley.GrantContext` (and
:class:`parley.ProposalFacts` for a ``COMMIT``), :func:`parley.sign_proof` and
:func:`parley.verify_proof`, :func:`parley.consent_request` and
:func:`parley.mint_consent_grant`. This module holds the decoded objects and the helpers a
service or a tool needs beside them:

>>> import parley
>>> from parley.grants import parse_caveat
>>> parse_caveat({"verbs": ["ASK"]}).kind
'verbs'
>>> parse_caveat({"per": {"max": 5000, "currency": "USD"}}).value
Money(max=5000, currency='USD')
"""

from __future__ import annotations

from ._caveats import Caveat, CaveatError, Money, effective_caveats, parse_caveat
from ._consent import consent_caveats, consent_for_shown
from ._grants import TOKEN_PREFIX, Block, Cost, Grant, SpendCap, block_id
from ._proof import PROOF_WINDOW, proof_target

__all__ = [
    "PROOF_WINDOW",
    "TOKEN_PREFIX",
    "Block",
    "Caveat",
    "CaveatError",
    "Cost",
    "Grant",
    "Money",
    "SpendCap",
    "block_id",
    "consent_caveats",
    "consent_for_shown",
    "effective_caveats",
    "parse_caveat",
    "proof_target",
]
