"""Facts of the demo operation, read from what :func:`vxp.demo_operation` publishes.

Tests that build their own operations beside the demo's use the same company, log,
capability and clock; each fact is read from the demo's package and metadata (the public
API), never from the private demo module.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta

import vxp

_DEMO = vxp.demo_operation("succeeded")

COMPANY: str = _DEMO.package["company"]
"""The demo issuer (an https issuer identifier)."""

CAPABILITY: str = _DEMO.package["op"]["capability"]
"""The capability the demo operation exercises."""

LOG_ORIGIN: str = _DEMO.metadata["vxp_proof"]["log"]["origin"]
"""The origin of the demo log."""

T0: datetime = datetime.fromisoformat(_DEMO.package["log"]["entries"][1]["logged_at"])
"""When the demo's terms were signed (its request 2 s before, its approval 1 s after)."""

TERMS = {"capability": CAPABILITY, "pedido": "P-1042", "despacho_nuevo": "2026-10-28"}
"""The demo's terms object."""


def at(seconds: float) -> datetime:
    """``T0`` plus ``seconds``."""
    return T0 + timedelta(seconds=seconds)


def rfc3339(when: datetime) -> str:
    """``when`` as the log writes a time: RFC 3339 UTC with milliseconds."""
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def salts(seed: str) -> Callable[[int], bytes]:
    """A reproducible salt source for :class:`vxp.OperationBuilder` (``rng``)."""
    draw = random.Random(seed)
    return draw.randbytes


def builder(seed: str, *, approve: bool = True) -> vxp.OperationBuilder:
    """An operation of the demo's issuer beside the demo's: request and terms signed (and,
    with ``approve``, an agent-asserted approval and the execution), on a fresh log."""
    b = vxp.OperationBuilder(
        company=COMPANY,
        op_id="req_1",
        operator_key=vxp.demo_key("operator"),
        company_key=vxp.demo_key("company"),
        log=vxp.MerkleLog(LOG_ORIGIN),
        rng=salts(seed),
    )
    b.request(channel="vxp", client_id="https://a.example", request={"r": 1}, now=at(-2))
    b.terms(
        capability=CAPABILITY,
        terms={"capability": CAPABILITY, "pedido": "P-1", "dia": "2026-10-28"},
        expires_at=at(900),
        read_back_terms=["pedido", "dia"],
        now=at(0),
    )
    if approve:
        b.approve(now=at(1))
        b.execute(release={"o": 1}, now=at(2))
    return b


def material(*, witness: bool = False) -> tuple[dict[str, object], dict[str, object]]:
    """The demo issuer's metadata and JWKS for :func:`builder`'s operations (its keys valid
    from a day before ``T0``; with ``witness``, the demo witness listed)."""
    records = [
        vxp.KeyRecord(vxp.key_thumbprint(vxp.demo_key(role)), role, at(-86400), None)
        for role in ("operator", "company")
    ]
    metadata = vxp.build_metadata(
        COMPANY,
        jwks_uri=COMPANY + "/jwks.json",
        keys=records,
        custody="operator_hosted",
        log_origin=LOG_ORIGIN,
        log_kid=vxp.key_thumbprint(vxp.demo_key("log")),
        witnesses=[vxp.key_thumbprint(vxp.demo_key("witness"))] if witness else [],
    )
    public = [vxp.demo_key(name) for name in ("operator", "company", "log")]
    jwks = vxp.build_jwks([*public, vxp.demo_key("witness")] if witness else public)
    return metadata, jwks
