"""The digests the profile compares, each in the spelling of the protocol that defines it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import handoff
import vxp

from .errors import BindingError

__all__ = [
    "PROFILE",
    "jwt_of",
    "record_digest",
    "statement_body",
    "statement_digest",
    "statement_payload",
]

PROFILE = "pp-bind/1"
"""The binding profile this package implements (docs/spec/bindings.md)."""


def record_digest(record: Any) -> str:
    """``D_ph``: Handoff's digest of a record (``sha-256:`` + hex of its JCS bytes).

    A value JCS cannot write (a float that is not finite, a key that is not a string, a
    lone surrogate) is ``binding_input_invalid`` with Handoff's code as ``reason``.
    """
    try:
        return handoff.digests.digest(record)
    except handoff.HandoffError as exc:
        raise BindingError(
            "binding_input_invalid",
            f"a record has no Handoff digest: {exc.message}",
            reason=exc.code,
            link="input",
        ) from None


def jwt_of(statement: object) -> str:
    """The issuer-signed JWT of a VXP statement: its text before the first ``~``."""
    if not isinstance(statement, str) or not statement:
        raise BindingError(
            "binding_input_invalid", "a VXP statement is a compact SD-JWT string", reason="vxp"
        )
    return statement.split("~", 1)[0]


def statement_digest(statement: object) -> str:
    """``D_jwt``: ``sha-256:`` + base64url of SHA-256 over the statement's issuer-signed JWT.

    The same digest VXP writes in ``prev`` (a small helper here: ``vxp`` keeps its own
    private).
    """
    return vxp.codec.encode_hash(hashlib.sha256(jwt_of(statement).encode("ascii")).digest())


def statement_payload(statement: object) -> dict[str, Any]:
    """The JWT payload of a VXP statement, read without verifying the signature."""
    parts = jwt_of(statement).split(".")
    try:
        payload = json.loads(vxp.codec.b64url_decode(parts[1], "the statement payload"))
    except (IndexError, ValueError) as exc:
        raise BindingError(
            "binding_input_invalid", "a VXP statement's payload is not JSON", reason="vxp"
        ) from exc
    if not isinstance(payload, dict):
        raise BindingError(
            "binding_input_invalid", "a VXP statement's payload is not an object", reason="vxp"
        )
    return payload


def statement_body(statement: object) -> dict[str, Any]:
    """The ``body`` of a VXP statement's payload, read without verifying the signature.

    Used by the principal's side to compute what she approves from the statements she was
    shown; the audit later checks those very statements in the verified package by digest.
    """
    body = statement_payload(statement).get("body")
    if not isinstance(body, dict):
        raise BindingError(
            "binding_input_invalid", "a VXP statement's payload has no body", reason="vxp"
        )
    return body
