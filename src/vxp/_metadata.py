"""Issuer metadata (RFC 8414 document with a ``vxp_proof`` member), JWKS and key rotation.

Trust material lives here and only here: which key signs for which role and when, where
the key set is published, who holds the company's key, which log records the statements
and which witnesses cosign it. A package never carries any of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from ._chain import format_time, parse_time
from ._codec import plain_json
from ._keys import KeyLike, ResolvedKey, resolve_key
from ._time import aware
from .errors import VxpError, VxpProtocolError

__all__ = [
    "CUSTODY_VALUES",
    "KeyRecord",
    "TrustMaterial",
    "build_jwks",
    "build_metadata",
    "load_trust",
    "retire_key",
    "rotate_key",
    "unpublish_key",
]

CUSTODY_VALUES = ("operator_hosted", "company_held", "self_operated")
"""Who holds the company's signing key: the operator, the company, or the company as operator."""

ROLES = ("operator", "company")


@dataclass(frozen=True)
class KeyRecord:
    """One published key: ``kid`` signs for ``role`` from ``not_before`` until ``not_after``.

    The times are read once, as every time the caller passes (aware datetimes; a naive one
    is ``time_naive``, one without a UTC value ``now_invalid``: usage errors)."""

    kid: str
    role: str
    not_before: datetime
    not_after: datetime | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "not_before", aware(self.not_before, "not_before"))
        if self.not_after is not None:
            object.__setattr__(self, "not_after", aware(self.not_after, "not_after"))

    def covers(self, when: datetime) -> bool:
        """Whether the key was valid for signing at ``when`` (``not_after`` exclusive).

        ``when`` is an aware datetime (a naive one is ``time_naive``, anything else
        ``now_invalid``: usage errors)."""
        when = aware(when, "when")
        return self.not_before <= when and (self.not_after is None or when < self.not_after)


@dataclass(frozen=True)
class TrustMaterial:
    """Parsed, cross-checked issuer metadata and the keys of its JWKS."""

    issuer: str
    profile: str
    custody: str
    records: tuple[KeyRecord, ...]
    keys: Mapping[str, ResolvedKey]
    """The JWKS keys by ``kid`` (read-only), each resolved once."""
    log_origin: str
    log_kid: str
    witness_kids: tuple[str, ...]
    quorum: int
    _by_kid: Mapping[str, tuple[KeyRecord, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        index: dict[str, tuple[KeyRecord, ...]] = {}
        for r in self.records:
            index[r.kid] = (*index.get(r.kid, ()), r)
        object.__setattr__(self, "_by_kid", index)

    def records_for(self, kid: str) -> list[KeyRecord]:
        """Every record of ``kid`` (a key may be listed once per role); a ``kid`` that is
        not a string is ``argument_invalid``."""
        given: object = kid
        if not isinstance(given, str):
            raise VxpError("argument_invalid", "a kid is a string")
        return list(self._by_kid.get(given, ()))

    def role_keys(self, role: str) -> list[ResolvedKey]:
        """The JWKS keys that the metadata lists for ``role``."""
        kids = {r.kid for r in self.records if r.role == role}
        return [self.keys[k] for k in sorted(kids) if k in self.keys]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _bad(message: str, reason: str) -> VxpError:
    return VxpError("metadata_invalid", message, reason=reason)


def build_jwks(keys: Iterable[KeyLike]) -> dict[str, Any]:
    """Return a JWKS ``{"keys": [...]}`` of the public parts of ``keys``, each with its ``kid``.

    Each key is the caller's: one that is not a key is :class:`~vxp.VxpUsageError`."""
    if isinstance(keys, Mapping | str | bytes) or not isinstance(keys, Iterable):
        raise VxpError("argument_invalid", "build_jwks takes a list of keys")
    out = []
    for i, key in enumerate(keys):
        resolved = resolve_key(key, f"key {i}")
        out.append({**resolved.public_jwk, "kid": resolved.kid, "alg": resolved.alg})
    out.sort(key=lambda k: k["kid"])
    return {"keys": out}


def build_metadata(
    issuer: str,
    *,
    jwks_uri: str,
    keys: Sequence[KeyRecord],
    custody: str,
    log_origin: str,
    log_kid: str,
    witnesses: Sequence[str] = (),
    quorum: int = 1,
) -> dict[str, Any]:
    """Return the issuer's RFC 8414 metadata document with its ``vxp_proof`` member.

    Every argument is the caller's: a document the verifier would refuse is
    :class:`~vxp.VxpUsageError` ``argument_invalid`` (``reason`` names the member, as
    ``metadata_invalid`` would), a time of a :class:`KeyRecord` without a UTC value
    ``now_invalid``."""
    given: object = keys
    if isinstance(given, str | bytes) or not isinstance(given, Iterable):
        raise VxpError("argument_invalid", "keys is a list of KeyRecord", reason="keys")
    keys = list(given)
    if not all(isinstance(r, KeyRecord) for r in keys):
        raise VxpError("argument_invalid", "keys is a list of KeyRecord", reason="keys")
    if isinstance(witnesses, str | bytes) or not isinstance(witnesses, Iterable):
        raise VxpError("argument_invalid", "witnesses is a list of kids", reason="log")
    doc = {
        "issuer": issuer,
        "vxp_proof": {
            "version": 1,
            "profile": "issuer",
            "jwks_uri": jwks_uri,
            "keys": [
                {
                    "kid": r.kid,
                    "role": r.role,
                    "not_before": format_time(r.not_before),
                    "not_after": None if r.not_after is None else format_time(r.not_after),
                }
                for r in keys
            ],
            "custody": {"company_key": custody},
            "log": {
                "origin": log_origin,
                "kid": log_kid,
                "witnesses": list(witnesses),
                "quorum": quorum,
            },
        },
    }
    try:
        _parse_metadata(doc)
    except VxpProtocolError as exc:
        raise VxpError("argument_invalid", exc.message, reason=exc.reason) from None
    return doc


_VP_MEMBERS = frozenset({"version", "profile", "jwks_uri", "keys", "custody", "log"})
_CUSTODY_MEMBERS = frozenset({"company_key"})
_LOG_MEMBERS = frozenset({"origin", "kid", "witnesses", "quorum"})
_RECORD_MEMBERS = frozenset({"kid", "role", "not_before", "not_after"})


def _parse_metadata(metadata: object) -> tuple[str, Mapping[str, Any], tuple[KeyRecord, ...]]:
    if not isinstance(metadata, dict):
        raise _bad("the issuer metadata is not a JSON object", "not_object")
    issuer = metadata.get("issuer")
    if not isinstance(issuer, str) or not issuer.startswith("https://"):
        raise _bad("the issuer metadata has no https issuer identifier", "issuer")
    vp = metadata.get("vxp_proof")
    if not isinstance(vp, dict):
        raise _bad("the issuer metadata has no vxp_proof object", "vxp_proof")
    if vp.keys() != _VP_MEMBERS:
        raise _bad(f"vxp_proof must hold exactly {', '.join(sorted(_VP_MEMBERS))}", "members")
    version = vp["version"]
    # a boolean is never a number (True == 1 in Python); numbers compare by value
    if not _is_number(version) or version != 1 or vp["profile"] != "issuer":
        raise _bad("vxp_proof is not version 1 of the issuer profile", "version")
    if not isinstance(vp["jwks_uri"], str) or not vp["jwks_uri"].startswith("https://"):
        raise _bad("vxp_proof.jwks_uri is not an https URL", "jwks_uri")
    custody = vp["custody"]
    if not isinstance(custody, dict) or custody.keys() != _CUSTODY_MEMBERS:
        raise _bad("vxp_proof.custody is not {company_key}", "custody")
    if custody["company_key"] not in CUSTODY_VALUES:
        raise _bad("vxp_proof.custody.company_key is not a known custody", "custody")
    log = vp["log"]
    if not isinstance(log, dict) or log.keys() != _LOG_MEMBERS:
        raise _bad("vxp_proof.log is not {origin, kid, witnesses, quorum}", "log")
    if not isinstance(log["origin"], str) or not log["origin"] or not isinstance(log["kid"], str):
        raise _bad("vxp_proof.log needs an origin and a kid", "log")
    wit = log["witnesses"]
    if not isinstance(wit, list) or not all(isinstance(w, str) for w in wit):
        raise _bad("vxp_proof.log.witnesses is not a list of kids", "log")
    if len(set(wit)) != len(wit):
        raise _bad("vxp_proof.log.witnesses repeats a kid", "log")
    quorum = log["quorum"]
    if not isinstance(quorum, int) or isinstance(quorum, bool) or not 1 <= quorum <= 64:
        raise _bad("vxp_proof.log.quorum is an integer from 1 to 64", "log")
    raw_keys = vp["keys"]
    if not isinstance(raw_keys, list):
        raise _bad("vxp_proof.keys is not a list", "keys")
    records = []
    for i, entry in enumerate(raw_keys):
        if not isinstance(entry, dict) or entry.keys() != _RECORD_MEMBERS:
            raise _bad(f"vxp_proof.keys[{i}] is not {{kid, role, not_before, not_after}}", "keys")
        if not isinstance(entry["kid"], str) or entry["role"] not in ROLES:
            raise _bad(f"vxp_proof.keys[{i}] has no kid or an unknown role", "keys")
        try:
            start = parse_time(entry["not_before"], f"vxp_proof.keys[{i}].not_before")
            end = (
                None
                if entry["not_after"] is None
                else parse_time(entry["not_after"], f"vxp_proof.keys[{i}].not_after")
            )
        except VxpError as exc:
            raise _bad(exc.message, "keys") from exc
        if end is not None and end <= start:
            raise _bad(f"vxp_proof.keys[{i}] ends before it starts", "keys")
        records.append(KeyRecord(entry["kid"], entry["role"], start, end))
    pairs = [(r.kid, r.role) for r in records]
    if len(set(pairs)) != len(pairs):
        raise _bad("vxp_proof.keys lists a key twice for one role", "keys")
    issuer_kids = {log["kid"]} | {r.kid for r in records}
    if issuer_kids & set(wit):
        # A witness is worth something only as a party independent of the log and of
        # the signers: the issuer's own keys never count towards the quorum (logged).
        raise _bad(
            "vxp_proof.log.witnesses names the log key or a signing key", "witness_not_independent"
        )
    return issuer, vp, tuple(records)


_DEPTH_ERROR = VxpError("metadata_invalid", "the issuer material nests too deeply", reason="depth")


def load_trust(metadata: object, jwks: object) -> TrustMaterial:
    """Parse and cross-check issuer metadata and its JWKS; raise ``metadata_invalid``.

    Both are copied once (see :func:`vxp._codec.plain_json`) and read from the copy only;
    every key is resolved here (one canonical spelling, its RFC 7638 thumbprint as
    ``kid``)."""
    metadata = plain_json(metadata, _DEPTH_ERROR) if isinstance(metadata, dict) else metadata
    jwks = plain_json(jwks, _DEPTH_ERROR) if isinstance(jwks, dict) else jwks
    issuer, vp, records = _parse_metadata(metadata)
    if not isinstance(jwks, dict) or set(jwks) != {"keys"} or not isinstance(jwks["keys"], list):
        raise VxpError("metadata_invalid", "the JWKS is not {keys: [...]}", reason="jwks")
    keys: dict[str, ResolvedKey] = {}
    for i, jwk in enumerate(jwks["keys"]):
        if not isinstance(jwk, dict) or "d" in jwk:
            raise VxpError("metadata_invalid", f"JWKS key {i} is not a public JWK", reason="jwks")
        if jwk.get("kty") not in ("EC", "OKP"):
            raise VxpError("metadata_invalid", f"JWKS key {i} is not EC or OKP", reason="jwks")
        try:
            resolved = resolve_key(jwk, f"JWKS key {i}")
        except VxpError as exc:  # another curve, a small-order point: not a key VXP uses
            raise VxpError("metadata_invalid", exc.message, reason="jwks") from exc
        if (
            jwk.get("alg", resolved.alg) != resolved.alg
            or jwk.get("use", "sig") != "sig"
            or ("key_ops" in jwk and jwk["key_ops"] != ["verify"])
        ):
            raise VxpError(
                "metadata_invalid",
                f"JWKS key {i} is published for another algorithm or use (alg, use, key_ops)",
                reason="jwks_use",
            )
        if jwk.get("kid") != resolved.kid:
            raise VxpError(
                "metadata_invalid",
                f"JWKS key {i} has a kid that is not its RFC 7638 thumbprint",
                reason="jwks_kid",
            )
        if resolved.kid in keys:
            raise VxpError("metadata_invalid", f"JWKS key {i} is listed twice", reason="jwks")
        keys[resolved.kid] = resolved
    log = vp["log"]
    return TrustMaterial(
        issuer=issuer,
        profile=vp["profile"],
        custody=vp["custody"]["company_key"],
        records=records,
        keys=MappingProxyType(keys),
        log_origin=log["origin"],
        log_kid=log["kid"],
        witness_kids=tuple(log["witnesses"]),
        quorum=log["quorum"],
    )


def _records_json(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    _parse_metadata(metadata)
    return [dict(e) for e in metadata["vxp_proof"]["keys"]]


def _with_keys(metadata: Mapping[str, Any], keys: list[dict[str, Any]]) -> dict[str, Any]:
    doc = {**metadata, "vxp_proof": {**metadata["vxp_proof"], "keys": keys}}
    _parse_metadata(doc)
    return doc


def retire_key(metadata: Mapping[str, Any], kid: str, *, at: datetime) -> dict[str, Any]:
    """Return metadata in which ``kid`` stops signing at ``at`` but stays published.

    ``at`` is an aware :class:`~datetime.datetime` (naive: ``time_naive``, a usage error)."""
    keys = _records_json(metadata)
    found = False
    for entry in keys:
        if entry["kid"] == kid and entry["not_after"] is None:
            entry["not_after"] = format_time(at, "at")
            found = True
    if not found:
        raise VxpError("key_not_active", f"no active key {kid!r} is listed in the metadata")
    return _with_keys(metadata, keys)


def rotate_key(
    metadata: Mapping[str, Any], role: str, new_key: KeyLike, *, at: datetime
) -> dict[str, Any]:
    """Return metadata in which ``role``'s active keys retire at ``at`` and ``new_key`` starts.

    ``at`` is an aware :class:`~datetime.datetime` (naive: ``time_naive``, a usage error)."""
    if role not in ROLES:
        raise VxpError("role_unknown", f"{role!r} is not a signing role")
    keys = _records_json(metadata)
    stamp = format_time(at, "at")
    for entry in keys:
        if entry["role"] == role and entry["not_after"] is None:
            entry["not_after"] = stamp
    kid = resolve_key(new_key, "new key").kid
    keys.append({"kid": kid, "role": role, "not_before": stamp, "not_after": None})
    return _with_keys(metadata, keys)


def unpublish_key(metadata: Mapping[str, Any], kid: str) -> dict[str, Any]:
    """Return metadata without ``kid`` (once no proof signed with it needs verifying)."""
    keys = _records_json(metadata)
    remaining = [e for e in keys if e["kid"] != kid]
    if len(remaining) == len(keys):
        raise VxpError("key_not_listed", f"key {kid!r} is not listed in the metadata")
    return _with_keys(metadata, remaining)
