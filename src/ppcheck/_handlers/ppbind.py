"""Vector operations of the binding profile pp-bind/1 (package :mod:`ppbind`)."""

from __future__ import annotations

from typing import Any

import parley
import ppbind
import vxp

from .._registry import handler


@handler("ppbind.terms_parse")
def terms_parse(input_: dict[str, Any]) -> dict[str, Any]:
    """Read the machine terms of a PXP proposal; answer them, its hash and the INTENT params."""
    machine = ppbind.read_terms(input_["terms"])
    params = ppbind.intent_params(input_["terms"])
    return {**machine.to_json(), "proposal_hash": params["agreement"], "params": params}


@handler("ppbind.key_raw")
def key_raw(input_: dict[str, Any]) -> dict[str, Any]:
    """Reduce one key to its raw bytes; answer both spellings and the JWK thumbprint."""
    raw = ppbind.raw_key(input_["key"])
    jwk = ppbind.jwk_of(input_["key"])
    return {
        "raw": raw.hex(),
        "parley": ppbind.parley_key_of(input_["key"]),
        "jwk": jwk,
        "thumbprint": vxp.key_thumbprint(jwk),
    }


@handler("ppbind.consent_grant")
def consent_grant(input_: dict[str, Any]) -> dict[str, Any]:
    """Mint the consent grant from an approve settlement with the given (test) seed."""
    key = ppbind.PersonKey.from_seed(bytes.fromhex(input_["seed"]))
    token = ppbind.consent_grant(key, input_["settlement"], input_["terms"], now=input_["now"])
    grant = parley.decode_grant(token)
    root = grant.blocks[0].payload
    return {
        "token": token,
        "grant_id": grant.id,
        "caveats": list(root["caveats"]),
        "nonce": root["nonce"],
        "sub": root["sub"],
    }


@handler("ppbind.audit")
def audit(input_: dict[str, Any]) -> dict[str, Any]:
    """Audit one errand; answer the report (a broken link is the error)."""
    return ppbind.verify_errand(input_)
