"""Grants (SPEC.md sections 6.2 to 6.4): minting and delegation, and every grant name.

The token format is :mod:`parley._grant_token`, the request a grant is checked against and
the result :mod:`parley._grant_context`, the section 6.4 steps :mod:`parley._grant_verify`.
This module makes grants (:func:`mint_grant`, :func:`delegate`) and is where the rest of
the package imports grant names from.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ._b64 import b64url_encode
from ._canonical import canonical_bytes
from ._caveats import Caveat, CaveatError, parse_caveat, wider_than
from ._grant_context import (
    Cost,
    GrantCheck,
    GrantContext,
    ProposalFacts,
    SpendCap,
)
from ._grant_token import (
    MAX_BLOCKS,
    TOKEN_PREFIX,
    Block,
    Grant,
    as_grant,
    block_id,
    decode_grant,
)
from ._grant_verify import MAX_GRANTS, GrantVerifier, inspect_grant, verify_grant
from ._keys import Key, parse_public_key
from ._time import epoch_seconds
from .errors import ParleyError

__all__ = [
    "MAX_BLOCKS",
    "MAX_GRANTS",
    "TOKEN_PREFIX",
    "Block",
    "Cost",
    "Grant",
    "GrantCheck",
    "GrantContext",
    "GrantVerifier",
    "ProposalFacts",
    "SpendCap",
    "block_id",
    "decode_grant",
    "delegate",
    "inspect_grant",
    "mint_grant",
    "verify_grant",
]


def _parse_all(caveats: object, what: str) -> list[Caveat]:
    if not isinstance(caveats, (list, tuple)):
        raise ParleyError("invalid_params", f"{what} caveats must be a list", reason="bad_caveat")
    parsed = []
    for index, raw in enumerate(caveats):
        try:
            parsed.append(parse_caveat(raw))
        except CaveatError as exc:
            raise ParleyError(
                "invalid_params", f"{what} caveat {index}: {exc.message}", reason=exc.reason
            ) from None
    return parsed


def mint_grant(
    issuer: Key,
    sub: str,
    caveats: Sequence[Mapping[str, Any]],
    *,
    iat: int | datetime,
    nonce: str | None = None,
) -> str:
    """Return the token of a root grant from principal ``issuer`` to holder key ``sub``.

    Caveats are checked first: a malformed or unknown caveat would make the grant useless
    (it fails closed), so minting refuses it with :class:`ParleyError`. ``nonce`` defaults
    to 16 random bytes in base64url. ``iat`` is integer epoch seconds or an aware
    :class:`~datetime.datetime` (a naive one is the usage error ``naive_datetime``).
    """
    # the caller's own arguments first (usage errors), then the protocol data
    if not isinstance(issuer, Key):
        raise ParleyError("bad_argument", "a grant is signed by a Key", reason="bad_key")
    issued = epoch_seconds(iat, "iat")
    if nonce is not None and not isinstance(nonce, str):
        raise ParleyError("bad_argument", "the nonce must be a string", reason="bad_argument")
    parse_public_key(sub)
    _parse_all(caveats, "the grant's")
    payload = {
        "iss": issuer.public,
        "sub": sub,
        "caveats": [dict(c) for c in caveats],
        "iat": issued,
        "nonce": b64url_encode(secrets.token_bytes(16)) if nonce is None else nonce,
    }
    block = Block(payload, issuer.sign(canonical_bytes(payload)))
    return Grant((block,)).token


def delegate(
    grant: Grant | str,
    holder: Key,
    sub: str,
    caveats: Sequence[Mapping[str, Any]],
    *,
    iat: int | datetime,
) -> str:
    """Append a delegation block handing a narrower grant to ``sub``; return the new token.

    ``holder`` must be the grant's current holder. Every new caveat must be well-formed and
    no wider than the chain's effective caveat of the same kind (a later ``exp``, a larger
    ``per``/``spend`` cap, a higher ``risk``, a ``svc``/``verbs``/``can`` entry the parent
    does not allow): such a caveat would have no effect, since every block is checked, and
    would mislead whoever reads the token, so it is refused. An empty list inherits.
    ``iat`` is integer epoch seconds or an aware :class:`~datetime.datetime`.
    """
    if not isinstance(holder, Key):
        raise ParleyError("bad_argument", "a grant is delegated with a Key", reason="bad_key")
    issued = epoch_seconds(iat, "iat")
    parent = as_grant(grant)
    if holder.public != parent.holder:
        raise ParleyError(
            "invalid_params",
            "only the grant's holder can delegate it; the key given is not its holder",
            reason="holder_mismatch",
        )
    parse_public_key(sub)
    new = _parse_all(caveats, "the delegation's")
    chain: list[Caveat] = []
    for index, block in enumerate(parent.blocks):
        chain.extend(_parse_all(block.raw_caveats, f"block {index}'s"))
    for caveat in new:
        why = wider_than(caveat, chain)
        if why is not None:
            raise ParleyError(
                "invalid_params",
                f"a delegation can only narrow: {why}",
                reason="caveat_wider",
            )
    payload = {
        "prev": parent.blocks[-1].id,
        "sub": sub,
        "caveats": [dict(c) for c in caveats],
        "iat": issued,
    }
    block = Block(payload, holder.sign(canonical_bytes(payload)))
    return Grant((*parent.blocks, block)).token
