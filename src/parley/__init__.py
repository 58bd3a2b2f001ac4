"""Parley: INTENT, PROPOSALS, COMMIT for agents acting for people.

The five things you most likely want:

1. **Grant an agent a capped, scoped authority**: :func:`mint_grant` (a principal's key
   signs caveats for an agent's key), :func:`delegate` to narrow it further.
2. **Check a request as a service**: :func:`verify_proof` (proof of possession) then
   :func:`verify_grant` with a :class:`GrantContext`; it returns a :class:`GrantCheck`
   report (read ``.ok``; a report has no truth value), or ``.raise_for_failure()`` returns
   the passed check (its grant and spend caps) and raises the refusal otherwise.
3. **Run a service**: a :class:`Service` with capabilities (:func:`offer`,
   :func:`clarify`, :class:`ServiceError` to refuse), served by :func:`serve` or
   :func:`serve_forever`, its state in :func:`open_store`.
4. **Talk to a service as an agent**: :func:`connect` gives a :class:`Client`; each call
   returns a :class:`Result`, and ``result.raise_for_error()`` raises a service's refusal
   as a :class:`ReplyError`.
5. **Catch errors by whose fault they are**: :class:`ParleyProtocolError` (a peer's data or
   refusal; ``code`` is a wire code of the Parley v1 SPEC.md section 7, listed in
   :data:`parley.errors.WIRE_CODES`) and :class:`ParleyUsageError`
   (the caller's own mistake), both :class:`ParleyError`.

Quick start: a principal grants an agent a capped, scoped grant; a service checks it::

    >>> import parley
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

Time is integer epoch seconds; every ``now`` also takes an aware :class:`datetime.datetime`
(a naive one is a usage error). :func:`load_schema` and :func:`schema_names` give the JSON
Schemas of every wire object (as in every package of this distribution). The rest of the
API lives in documented submodules:
:mod:`parley.grants` (decoded grants, caveats, proof targets, consent helpers),
:mod:`parley.keys`, :mod:`parley.wire` (frames, typed replies),
:mod:`parley.lens` (Lens, budgets, handles), :mod:`parley.service`,
:mod:`parley.stores`, :mod:`parley.net` (transports; loaded only when used),
:mod:`parley.errors` (the code table) and :mod:`parley.conformance`. ``import parley``
loads no transport: :mod:`asyncio`, :mod:`ssl` and :mod:`socket` load with the first
:func:`connect` or :func:`serve`.
"""

from __future__ import annotations

import logging as _logging
from typing import TYPE_CHECKING, Any

from . import errors, grants, keys, lens, service, stores, wire  # noqa: F401 (submodules)
from ._agent import Agent, Client, ReplyError, Result
from ._canonical import canonical, proposal_hash
from ._consent import consent_request, mint_consent_grant
from ._grants import (
    GrantCheck,
    GrantContext,
    GrantVerifier,
    ProposalFacts,
    decode_grant,
    delegate,
    inspect_grant,
    mint_grant,
    verify_grant,
)
from ._keys import Key, generate_key, key_from_seed
from ._proof import sign_proof, verify_proof
from ._schemas import load_schema, schema_names
from ._service import Context, Service, ServiceError, clarify, offer
from ._stores import open_store
from .errors import ParleyError, ParleyProtocolError, ParleyUsageError

if TYPE_CHECKING:  # loaded on first use by __getattr__ below: they import asyncio and ssl
    from . import net  # noqa: F401
    from ._connect import connect, serve, serve_forever

__all__ = [
    "Agent",
    "Client",
    "Context",
    "GrantCheck",
    "GrantContext",
    "GrantVerifier",
    "Key",
    "ParleyError",
    "ParleyProtocolError",
    "ParleyUsageError",
    "ProposalFacts",
    "ReplyError",
    "Result",
    "Service",
    "ServiceError",
    "canonical",
    "clarify",
    "connect",
    "consent_request",
    "decode_grant",
    "delegate",
    "generate_key",
    "inspect_grant",
    "key_from_seed",
    "load_schema",
    "mint_consent_grant",
    "mint_grant",
    "offer",
    "open_store",
    "proposal_hash",
    "schema_names",
    "serve",
    "serve_forever",
    "sign_proof",
    "verify_grant",
    "verify_proof",
]

_LAZY = {"connect": "_connect", "serve": "_connect", "serve_forever": "_connect"}


def __getattr__(name: str) -> Any:
    """Load the transports on first use (``import parley`` imports no asyncio or ssl)."""
    import importlib

    if name == "net":
        return importlib.import_module(".net", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'parley' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"net"})


# The library logs through `logging` and never configures it: without a handler of the
# application's, nothing is printed (docs/cli.md, "Logging").
_logging.getLogger(__name__).addHandler(_logging.NullHandler())
