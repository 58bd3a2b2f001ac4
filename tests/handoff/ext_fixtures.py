"""Builders shared by the tests of the Acts and Decisions extensions."""

from __future__ import annotations

import copy
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from joserfc.jwk import ECKey, OKPKey

import handoff

ROLES_JSON: dict[str, Any] = {
    "principal": "alice",
    "principal_side": ["alice-desk"],
    "requesters": {"web": ["agent-1", "registrar"]},
    "roles": {"registrar": ["registrar"]},
}
ROLES = handoff.Roles.from_json(ROLES_JSON)
TS = "2026-11-30T09:00:00Z"


def ed_key(seed: int = 1) -> dict[str, Any]:
    """A deterministic Ed25519 private JWK."""
    private = ed25519.Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)
    return dict(OKPKey.import_key(private).as_dict(private=True))


def ec_key(scalar: int = 12345) -> dict[str, Any]:
    """A deterministic P-256 private JWK."""
    private = ec.derive_private_key(scalar, ec.SECP256R1())
    return dict(ECKey.import_key(private).as_dict(private=True))


def registry() -> handoff.Registry:
    return handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS)


def rec(rid: str, type_: str, origin: str, by: str, key: str = "k1", **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ph": "0.3",
        "ext": more.pop("ext", "acts/0.3"),
        "id": rid,
        "type": type_,
        "origin": origin,
        "by": by,
        "key": key,
        "project": "web",
        "ts": TS,
    }
    out.update(more)
    return out


TERMS = {"text": "Pay the hosting invoice", "amount": "120.00", "currency": "EUR"}


def raised(rid: str = "n1", key: str = "k1", terms: dict[str, Any] | None = None) -> dict[str, Any]:
    return rec(rid, "raised", "requester", "agent-1", key, terms=terms or TERMS, terms_rev=1)


def settlement(
    reg: handoff.Registry,
    *,
    key: str = "k1",
    rid: str = "s1",
    rev: int = 1,
    outcome: str = "done",
    ext: str = "acts/0.3",
) -> dict[str, Any]:
    """A principal settlement whose presented digest matches the held terms."""
    record = rec(
        rid,
        "settled",
        "principal",
        "alice-desk",
        key,
        ext=ext,
        terms_rev=rev,
        outcome=outcome,
        authority={"kind": "principal", "decider": "alice"},
    )
    shown = handoff.evidence.presentation_for(reg, record)
    assert shown is not None
    record["evidence"] = {"presented": handoff.digests.presented_digest(shown)}
    return record


def deep(record: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(record)
