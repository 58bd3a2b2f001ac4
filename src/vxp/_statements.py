"""VXP statements: one SD-JWT (RFC 9901, ES256, JCS payload) per statement.

The payload is ``{"seq", "kind", "signer", "prev", "body", "_sd_alg"}``; the header is
``{"alg": "ES256", "kid": <RFC 7638 thumbprint>, "typ": "vxp-stmt+sd-jwt"}``. ``prev`` is
the digest of the previous statement's issuer-signed JWT only (never of its disclosures),
so a holder who withholds a disclosure leaves the chain intact.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ._chain import KIND_SIGNER
from ._codec import b64url_encode, canonical_json, encode_hash
from ._jws import ParsedJws, check_header, parse_compact, sign_compact
from ._keys import IssuerKeys, KeyLike, ResolvedKey, resolve_key
from ._sdjwt import (
    RandomSource,
    Sd,
    SdJwt,
    check_times,
    issue_sd_jwt,
    open_jwt,
    process_payload,
)
from .errors import VxpError

__all__ = [
    "APPROVAL_TYP",
    "STATEMENT_TYP",
    "HeaderMemo",
    "OpenedStatement",
    "ParsedStatement",
    "approval_payload",
    "approval_signing_input",
    "check_statement",
    "check_user_approval",
    "jwt_digest",
    "open_statement",
    "read_statement",
    "sign_statement",
    "sign_user_approval",
    "split_statement",
    "verify_statement",
]

STATEMENT_TYP = "vxp-stmt+sd-jwt"
"""The JOSE ``typ`` of every VXP statement."""

_PAYLOAD_MEMBERS = frozenset({"seq", "kind", "signer", "prev", "body", "_sd_alg"})


def jwt_digest(jws: str) -> str:
    """Return ``sha-256:`` + base64url of SHA-256 over the issuer-signed JWT's ASCII text.

    This is how a statement is named: its successor's ``prev``, and the
    ``terms_statement`` a user approves, are the digest of the statement's issuer-signed
    JWT (``statement.split("~")[0]``). Anything but an ASCII string is
    ``statement_malformed``.
    """
    if not isinstance(jws, str) or not jws.isascii():
        raise VxpError("statement_malformed", "a statement's JWT is an ASCII string", reason="jwt")
    return encode_hash(hashlib.sha256(str.__str__(jws).encode("ascii")).digest())


def split_statement(statement: object, where: str) -> SdJwt:
    """Split a compact statement into JWT and disclosures (no verification)."""
    try:
        token = SdJwt.parse(statement)
    except VxpError as exc:
        raise VxpError("statement_malformed", f"{where}: {exc.message}", reason=exc.code) from exc
    if token.kb_jwt is not None:
        raise VxpError(
            "statement_malformed", f"{where} carries a key-binding JWT", reason="kb_jwt_unexpected"
        )
    return token


def sign_statement(
    *,
    seq: int,
    kind: str,
    signer: str,
    prev: str | None,
    body: Mapping[str, Any],
    key: KeyLike,
    rng: RandomSource,
    personal: Mapping[str, Any] | None = None,
) -> str:
    """Sign one statement; ``personal`` members go into ``body.observed`` as disclosures."""
    claims_body: dict[str, Any] = dict(body)
    if personal:
        observed = dict(claims_body.get("observed", {}))
        for name, value in personal.items():
            if name in observed:
                raise VxpError(
                    "personal_field_clash", f"observed member {name!r} is both plain and personal"
                )
            observed[name] = Sd(value)
        claims_body["observed"] = observed
    claims = {"seq": seq, "kind": kind, "signer": signer, "prev": prev, "body": claims_body}
    return issue_sd_jwt(claims, key, typ=STATEMENT_TYP, rng=rng).serialize()


class ParsedStatement(NamedTuple):
    """A verified statement: its fields, the processed body and what the holder withheld
    (immutable; a tuple for cheap construction, one per statement).

    ``seq``, ``kind``, ``signer`` and ``prev`` as signed; ``body`` with the disclosed
    members in place; ``kid`` of the key that signed it; ``jws`` its issuer-signed JWT and
    ``digest`` that JWT's :func:`jwt_digest`; ``hidden`` how many disclosures were
    withheld, ``disclosed`` the encoded disclosures presented."""

    seq: int
    kind: str
    signer: str
    prev: str | None
    body: dict[str, Any]
    kid: str
    jws: str
    digest: str
    hidden: int
    disclosed: tuple[str, ...]


def _no_sd_outside_observed(payload: Mapping[str, Any], where: str) -> int:
    """Selective disclosure appears only as ``body.observed._sd``; return its digest count."""

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            for name, value in node.items():
                if name in ("_sd", "...") and (name, path) != ("_sd", ("body", "observed")):
                    raise VxpError(
                        "statement_malformed",
                        f"{where} uses selective disclosure outside body.observed",
                        reason="sd_misplaced",
                    )
                if name != "_sd":
                    walk(value, (*path, name))
        elif isinstance(node, list):
            for item in node:
                walk(item, (*path, "[]"))

    walk({k: v for k, v in payload.items() if k != "_sd_alg"}, ())
    body = payload.get("body")
    observed = body.get("observed") if isinstance(body, dict) else None
    sd = observed.get("_sd", []) if isinstance(observed, dict) else []
    return len(sd) if isinstance(sd, list) else 0


def _stage(exc: VxpError, where: str) -> VxpError:
    stage = "signature_invalid" if exc.code == "signature_invalid" else "statement_malformed"
    if exc.code in ("issuer_key_unknown", "issuer_key_ambiguous", "alg_key_mismatch"):
        stage = "key_untrusted"
    return VxpError(stage, f"{where}: {exc.message}", reason=exc.code)


_ES256 = frozenset({"ES256"})


class OpenedStatement(NamedTuple):
    """A statement whose issuer-signed JWT is decoded, its header checked and its key
    chosen: what the signature stage needs. Nothing in it is authenticated yet."""

    token: SdJwt
    parsed: ParsedJws
    key: ResolvedKey

    @property
    def signature_check(self) -> tuple[ResolvedKey, bytes, bytes]:
        """``(key, signing input, signature)`` for :func:`vxp._keys.first_invalid`."""
        return self.key, self.parsed.signing_input, self.parsed.signature


HeaderMemo = dict[str, tuple[dict[str, Any], ResolvedKey]]
"""Header segments one verification has already checked against one key set, with the
header and key each gave: a pure function of the segment and the keys, kept by the caller
for the statements of one package (they share two or three headers) and dropped after."""


def open_statement(
    token: SdJwt, keys: IssuerKeys, where: str, headers: HeaderMemo | None = None
) -> OpenedStatement:
    """Decode a split statement's JWT and choose its key among ``keys`` (signature unchecked).

    Raises ``statement_malformed`` or ``key_untrusted``; ``reason`` keeps the SD-JWT
    layer's precise code. ``headers`` (optional) is the caller's :data:`HeaderMemo`."""
    segment = token.jws.partition(".")[0]
    seen = headers.get(segment) if headers is not None else None
    try:
        if seen is None:
            parsed, key = open_jwt(token, keys, _ES256, STATEMENT_TYP)
            if headers is not None:
                headers[segment] = (parsed.header, key)
        else:  # the same header text, already checked against the same keys
            parsed = parse_compact(token.jws, "issuer-signed JWT", known=(segment, seen[0]))
            key = seen[1]
    except VxpError as exc:
        raise _stage(exc, where) from exc
    return OpenedStatement(token, parsed, key)


def read_statement(opened: OpenedStatement, where: str, now: float) -> ParsedStatement:
    """The content of an opened statement (RFC 9901 processing, then VXP's own shape).

    Call it only for a statement whose signature verifies, or discard what it returns
    unless that signature verifies. Raises ``statement_malformed``."""
    payload, header = opened.parsed.payload, opened.parsed.header
    try:
        claims, processor = process_payload(payload, opened.token.disclosures)
        check_times(claims, now, 0, False)
    except VxpError as exc:
        raise _stage(exc, where) from exc
    if payload.keys() != _PAYLOAD_MEMBERS or payload.get("_sd_alg") != "sha-256":
        raise VxpError(
            "statement_malformed",
            f"{where} payload is not exactly seq, kind, signer, prev, body and _sd_alg",
            reason="payload_members",
        )
    if header.keys() != _HEADER_MEMBERS:
        raise VxpError(
            "statement_malformed", f"{where} header is not exactly alg, kid, typ", reason="header"
        )
    sd_count = 0
    raw = opened.parsed.payload_raw
    # a member named _sd or ... shows in the JSON text as "_sd" or "..." unless escaped
    if b'"_sd"' in raw or b'"..."' in raw or b"\\" in raw or not raw:
        sd_count = _no_sd_outside_observed(payload, where)
    seq, kind, signer, prev = claims["seq"], claims["kind"], claims["signer"], claims["prev"]
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise VxpError("statement_malformed", f"{where} seq is not an integer", reason="seq")
    if not isinstance(kind, str) or not isinstance(signer, str):
        raise VxpError(
            "statement_malformed", f"{where} kind or signer is not a string", reason="kind"
        )
    if prev is not None and not isinstance(prev, str):
        raise VxpError(
            "statement_malformed", f"{where} prev is not a digest or null", reason="prev"
        )
    if not isinstance(claims["body"], dict):
        raise VxpError("statement_malformed", f"{where} body is not an object", reason="body")
    # The digests of body.observed._sd that no disclosure opened: the members the holder
    # withheld (a disclosure nested inside a disclosed member hides nothing more).
    direct = [d for d in processor.used if processor.paths[d.encoded][:-1] == _OBSERVED]
    return ParsedStatement(
        seq=seq,
        kind=kind,
        signer=signer,
        prev=prev,
        body=claims["body"],
        kid=opened.key.kid,
        jws=opened.token.jws,
        digest=jwt_digest(opened.token.jws),
        hidden=sd_count - len(direct),
        disclosed=tuple(d.name for d in direct if d.name is not None),
    )


_OBSERVED = ("body", "observed")
_HEADER_MEMBERS = frozenset({"alg", "kid", "typ"})


def verify_statement(
    statement: SdJwt | object,
    keys: IssuerKeys | KeyLike | Sequence[KeyLike],
    *,
    where: str = "the statement",
) -> ParsedStatement:
    """Verify one compact statement on its own against ``keys`` and return it read
    (:class:`ParsedStatement`); for example, a user's device checking the ``terms``
    statement it shows her before she approves it.

    Checks the SD-JWT (``typ``, ES256, the key by ``kid`` among ``keys``, the signature,
    RFC 9901 processing), the statement's shape, and that its ``kind`` is one of
    :data:`KIND_SIGNER` and its ``signer`` that kind's role. It does **not** check that
    the key belongs to that role: pass only the keys of the role you expect (for
    ``terms``, the company's signing keys), never a whole JWKS. The key's listing and
    validity period, the chain (``seq``, ``prev``) and the log are the verifier's
    (:class:`vxp.Verifier`); a statement carries no time claims of its own (its time is
    the log's). Raises :class:`~vxp.VxpProtocolError` ``statement_malformed`` (``reason``
    keeps the SD-JWT layer's precise code, or ``kind``/``signer_role``),
    ``key_untrusted`` or ``signature_invalid``.
    """
    if not isinstance(keys, IssuerKeys):
        keys = IssuerKeys(keys)
    parsed = check_statement(statement, keys, where=where, now=0.0)
    role = KIND_SIGNER.get(parsed.kind)
    if role is None:
        raise VxpError(
            "statement_malformed", f"{where} has unknown kind {parsed.kind!r}", reason="kind"
        )
    if parsed.signer != role:
        raise VxpError(
            "statement_malformed",
            f"{where} ({parsed.kind}) names signer {parsed.signer!r}, not {role!r}",
            reason="signer_role",
        )
    return parsed


def check_statement(
    statement: SdJwt | object, keys: IssuerKeys, *, where: str, now: float
) -> ParsedStatement:
    """The statement stage on one statement: :func:`open_statement`, the signature, then
    :func:`read_statement` (the verifier runs the same three steps a stage at a time).

    Raises ``statement_malformed`` (parse stage), ``key_untrusted`` or ``signature_invalid``;
    ``reason`` keeps the SD-JWT layer's precise code.
    """
    token = statement if isinstance(statement, SdJwt) else split_statement(statement, where)
    opened = open_statement(token, keys, where)
    key, message, signature = opened.signature_check
    if not key.signature_valid(message, signature):
        raise VxpError(
            "signature_invalid",
            f"{where}: the issuer signature does not verify",
            reason="signature_invalid",
        )
    return read_statement(opened, where, now)


APPROVAL_TYP = "vxp-approval+jwt"
"""The JOSE ``typ`` of a user's signature over the revision they approve."""


def approval_payload(
    request_digest: str, revision: int, terms_digest: str, terms_statement: str
) -> dict[str, Any]:
    """Return what a user signs to approve ``revision`` of the operation's terms.

    ``terms_statement`` is the digest of the revision's signed ``terms`` statement (as
    ``prev`` digests it): the user approves that exact statement (its expiry, capability,
    read-back terms and requirements), not only the terms object behind ``terms_digest``.
    """
    return {
        "request_digest": request_digest,
        "revision": revision,
        "terms_digest": terms_digest,
        "terms_statement": terms_statement,
    }


_APPROVAL_MEMBERS = frozenset({"request_digest", "revision", "terms_digest", "terms_statement"})


def approval_signing_input(user_key: KeyLike, payload: Mapping[str, Any]) -> bytes:
    """Return the bytes the user's key signs to approve: the JWS signing input
    ``b64url(JCS(header)) "." b64url(JCS(payload))`` with header ``{alg, kid, typ}``.

    ``user_key`` is the user's key (its public JWK is enough: a device holding the private
    key signs these bytes itself), ``payload`` what :func:`approval_payload` returns. The
    user's device should rebuild ``payload`` from the terms statement it was shown rather
    than sign bytes it was handed. Raises ``approval_invalid`` for another payload shape.
    """
    key = resolve_key(user_key, "user key")
    if (
        not isinstance(payload, Mapping)
        or set(payload) != _APPROVAL_MEMBERS
        or not all(isinstance(payload[k], str) for k in _APPROVAL_MEMBERS - {"revision"})
        or type(payload["revision"]) is not int
    ):
        raise VxpError(
            "approval_invalid",
            "an approval payload is {request_digest, revision, terms_digest, terms_statement}",
        )
    header = {"alg": key.alg, "kid": key.kid, "typ": APPROVAL_TYP}
    return (
        b64url_encode(canonical_json(header, "the JOSE header"))
        + "."
        + b64url_encode(canonical_json(dict(payload), "the approval payload"))
    ).encode("ascii")


def sign_user_approval(
    user_key: KeyLike, request_digest: str, revision: int, terms_digest: str, terms_statement: str
) -> tuple[dict[str, Any], str]:
    """Return (the user's public JWK, the user's compact JWS approving the revision)."""
    key = resolve_key(user_key, "user key")
    if key.private is None:
        raise VxpError("key_not_private", "a user-signed approval needs the user's private key")
    header = {"alg": key.alg, "kid": key.kid, "typ": APPROVAL_TYP}
    token = sign_compact(
        header,
        approval_payload(request_digest, revision, terms_digest, terms_statement),
        key,
        deterministic=True,
    )
    return dict(key.public_jwk), token


def check_user_approval(
    body: Mapping[str, Any], request_digest: str, terms_statement: str, where: str
) -> str:
    """Verify a ``user_signed`` approval's JWS against the JWK it carries; fail closed.

    Returns the user key's RFC 7638 thumbprint (the verifier refuses an issuer key there).
    """
    if "d" in body["user_key"]:
        raise VxpError(
            "rule_violation",
            f"{where} publishes the user's private key in user_key",
            reason="user_signature_invalid",
        )
    try:
        key = resolve_key(body["user_key"], "user_key")
        parsed = parse_compact(body["user_signature"], f"{where} user_signature")
        alg = check_header(
            parsed.header, frozenset({"ES256", "EdDSA"}), "user signature", typ=APPROVAL_TYP
        )
    except VxpError as exc:
        raise VxpError(
            "rule_violation", f"{where}: {exc.message}", reason="user_signature_invalid"
        ) from exc
    expected = approval_payload(
        request_digest, body["revision"], body["terms_digest"], terms_statement
    )
    if (
        alg != key.alg
        or parsed.header.get("kid") != key.kid
        # as JSON values (JCS bytes), never Python's: True == 1 == 1.0 in Python, but a
        # user who signed revision true did not approve revision 1
        or not _same_json(parsed.payload, expected)
        or not key.signature_valid(parsed.signing_input, parsed.signature)
    ):
        raise VxpError(
            "rule_violation",
            f"{where} carries a user signature that does not approve this revision",
            reason="user_signature_invalid",
        )
    return key.kid


def _same_json(a: object, b: object) -> bool:
    """Whether two JSON values are the same value: equal JCS bytes (a boolean is never a
    number; numbers compare by value, ``1.0`` as ``1``)."""
    try:
        return canonical_json(a) == canonical_json(b)
    except VxpError:
        return False
