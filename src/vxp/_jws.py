"""Compact JWS (RFC 7515) for SD-JWT: strict parsing, ES256/EdDSA signing and verification.

Header and payload bytes are produced by the caller (JCS for what we issue); parsing accepts
any JSON object but refuses duplicate member names, and every segment must be strict
unpadded base64url.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ._codec import b64url_decode, b64url_encode, canonical_json, parse_json
from ._keys import ResolvedKey
from .errors import VxpError

__all__ = ["ParsedJws", "parse_compact", "sign_compact"]

IMPLEMENTED_ALGS = frozenset({"ES256", "EdDSA"})


class ParsedJws(NamedTuple):
    """A compact JWS split and decoded (not yet verified); immutable."""

    header: dict[str, Any]
    payload: dict[str, Any]
    signing_input: bytes
    signature: bytes
    payload_raw: bytes = b""
    """The payload's decoded bytes (its JSON text)."""


def sign_compact(
    header: Mapping[str, Any], payload: Mapping[str, Any], key: ResolvedKey, *, deterministic: bool
) -> str:
    """Return ``b64(JCS(header)).b64(JCS(payload)).b64(sig)`` signed with ``key``."""
    signing_input = (
        b64url_encode(canonical_json(dict(header), "the JOSE header"))
        + "."
        + b64url_encode(canonical_json(dict(payload), "the JWT payload"))
    )
    sig = key.sign(signing_input.encode("ascii"), deterministic=deterministic)
    return signing_input + "." + b64url_encode(sig)


def parse_compact(
    token: str, where: str, *, known: tuple[str, dict[str, Any]] | None = None
) -> ParsedJws:
    """Split and decode a compact JWS strictly; raise ``malformed_jwt`` naming ``where``.

    ``known`` is ``(header segment, its decoded header)`` from an earlier call of the same
    caller: when the token's header segment is that very text, its decoding is reused."""
    if not isinstance(token, str):
        raise VxpError("malformed_jwt", f"the {where} is not a string")
    parts = token.split(".")
    if len(parts) != 3:
        raise VxpError("malformed_jwt", f"the {where} does not have exactly three JWS segments")
    reuse = known is not None and known[0] == parts[0]
    h_raw = b"" if reuse else b64url_decode(parts[0], f"the {where} header", code="malformed_jwt")
    p_raw = b64url_decode(parts[1], f"the {where} payload", code="malformed_jwt")
    sig = b64url_decode(parts[2], f"the {where} signature", code="malformed_jwt")
    if known is not None and reuse:
        header = known[1]
    else:
        header = parse_json(h_raw, f"the {where} header", code="malformed_jwt")
    if not isinstance(header, dict):
        raise VxpError("malformed_jwt", f"the {where} header is not a JSON object")
    payload = parse_json(p_raw, f"the {where} payload", code="malformed_jwt")
    if not isinstance(payload, dict):
        raise VxpError("malformed_jwt", f"the {where} payload is not a JSON object")
    return ParsedJws(header, payload, (parts[0] + "." + parts[1]).encode("ascii"), sig, p_raw)


def check_header(
    header: Mapping[str, Any], algorithms: frozenset[str], where: str, *, typ: str | None
) -> str:
    """Check ``alg`` against the allow-list, ``crit`` and ``typ``; return the algorithm."""
    alg = header.get("alg")
    if alg == "none":
        raise VxpError("alg_none", f"the {where} uses alg 'none', which is never accepted")
    if not isinstance(alg, str) or alg not in algorithms:
        raise VxpError("alg_not_allowed", f"the {where} uses alg {alg!r}, outside the allow-list")
    if "crit" in header:
        raise VxpError("crit_unsupported", f"the {where} has critical header extensions")
    if "kid" in header and not isinstance(header["kid"], str):
        raise VxpError("kid_invalid", f"the {where} has a kid that is not a string")
    if typ is not None and header.get("typ") != typ:
        raise VxpError("typ_mismatch", f"the {where} typ is {header.get('typ')!r}, not {typ!r}")
    return alg


def check_algorithms(algorithms: object) -> frozenset[str]:
    """Validate a verifier's allow-list: a non-empty collection of implemented algorithms."""
    if isinstance(algorithms, str) or not hasattr(algorithms, "__iter__"):
        raise VxpError("algorithms_invalid", "algorithms is a list of JWS algorithm names")
    try:
        algs = frozenset(algorithms)
    except TypeError as exc:
        raise VxpError("algorithms_invalid", "algorithms is a list of JWS algorithm names") from exc
    if not all(isinstance(a, str) for a in algs):
        raise VxpError("algorithms_invalid", "algorithms is a list of JWS algorithm names")
    if not algs:
        raise VxpError("algorithms_invalid", "the algorithm allow-list is empty")
    if "none" in algs:
        raise VxpError("algorithms_invalid", "alg 'none' cannot be allowed")
    unknown = sorted(str(a) for a in algs - IMPLEMENTED_ALGS)
    if unknown:
        raise VxpError("algorithms_invalid", f"algorithms {unknown} are not implemented")
    return algs
