"""VXP statements: one SD-JWT (RFC 9901, ES256, JCS payload) per statement.

The payload is ``{"seq", "kind", "signer", "prev", "body", "_sd_alg"}``; the header is
``{"alg": "ES256", "kid": <RFC 7638 thumbprint>, "typ": "vxp-stmt+sd-jwt"}``. ``prev`` is
the digest of the previous statement's issuer-signed JWT only (never of its disclosures),
so a holder who withholds a disclosure leaves the chain intact.
"""

from __future__ import annotations

import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from joserfc.jwk import ECKey, OKPKey

from ._codec import (
    _FAST,
    _PADDING,
    _SCAN,
    _UNUSED_BITS,
    _VALUE,
    encode_hash,
)
from ._errors import VxpError
from ._frozen import assemble
from ._jws import check_header, parse_compact, sign_compact
from ._keys import KeyLike, ResolvedKey, resolve_key
from ._sdjwt import (
    Disclosure,
    RandomSource,
    Sd,
    SdJwt,
    _verify_general,
    checked_header,
    issue_sd_jwt,
    verify_sd_jwt,
)
from ._sdjwt_fast import Raw, decode_disclosures, digest_index, process_claims

__all__ = [
    "APPROVAL_TYP",
    "HEADER_MEMORY_MAX",
    "STATEMENT_TYP",
    "Deferred",
    "HeaderMemory",
    "ParsedStatement",
    "StatementBatch",
    "approval_payload",
    "check_user_approval",
    "jwt_digest",
    "sign_statement",
    "sign_user_approval",
    "split_statement",
    "verify_statement",
]

STATEMENT_TYP = "vxp-stmt+sd-jwt"
"""The JOSE ``typ`` of every VXP statement."""

_PAYLOAD_MEMBERS = frozenset({"seq", "kind", "signer", "prev", "body", "_sd_alg"})


def jwt_digest(jws: str) -> str:
    """Return ``sha-256:`` + base64url of SHA-256 over the issuer-signed JWT's ASCII text."""
    return encode_hash(hashlib.sha256(jws.encode("ascii")).digest())


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


@dataclass(frozen=True)
class ParsedStatement:
    """A verified statement: its fields, the processed body and what the holder withheld."""

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


def _claims(
    token: SdJwt, keys: Mapping[str, ECKey | OKPKey], where: str, now: float, one_pass: bool
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], str, tuple[Disclosure, ...]]:
    """Verify with the RFC 9901 verifier (any statement, with or without disclosures);
    ``one_pass=False`` runs its general path only (the oracle of the one-pass path)."""
    try:
        if one_pass:
            verified = verify_sd_jwt(
                token.serialize(),
                list(keys.values()),
                typ=STATEMENT_TYP,
                now=now,
                algorithms=("ES256",),
            )
        else:
            verified = _verify_general(
                token.serialize(), list(keys.values()), STATEMENT_TYP, now, _ES256, None, 0, False
            )
    except VxpError as exc:
        raise _stage(exc, where) from exc
    return verified.header, verified.payload, verified.claims, verified.kid, verified.disclosures


def _stage(exc: VxpError, where: str) -> VxpError:
    stage = "signature_invalid" if exc.code == "signature_invalid" else "statement_malformed"
    if exc.code in ("issuer_key_unknown", "issuer_key_ambiguous", "alg_key_mismatch"):
        stage = "key_untrusted"
    return VxpError(stage, f"{where}: {exc.message}", reason=exc.code)


_ES256 = frozenset({"ES256"})


def verify_statement(
    statement: SdJwt | object,
    keys: Mapping[str, ECKey | OKPKey],
    *,
    where: str,
    now: float,
    fast: bool = True,
) -> ParsedStatement:
    """Verify one statement's SD-JWT against ``keys`` (trusted signing keys by ``kid``).

    Raises ``statement_malformed`` (parse stage), ``key_untrusted`` or ``signature_invalid``;
    ``reason`` keeps the SD-JWT layer's precise code. ``fast=False`` runs the RFC 9901
    verifier's general path only (the tests' oracle for its one-pass path).
    """
    token = statement if isinstance(statement, SdJwt) else split_statement(statement, where)
    header, payload, claims, kid, used = _claims(token, keys, where, now, fast)
    if set(payload) != _PAYLOAD_MEMBERS or payload.get("_sd_alg") != "sha-256":
        raise VxpError(
            "statement_malformed",
            f"{where} payload is not exactly seq, kind, signer, prev, body and _sd_alg",
            reason="payload_members",
        )
    if set(header) != {"alg", "kid", "typ"}:
        raise VxpError(
            "statement_malformed", f"{where} header is not exactly alg, kid, typ", reason="header"
        )
    sd_count = 0
    text = repr(payload)  # a member named _sd or ... always shows as '_sd' or '...' here
    if "'_sd'" in text or "'...'" in text:
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
    return ParsedStatement(
        seq=seq,
        kind=kind,
        signer=signer,
        prev=prev,
        body=claims["body"],
        kid=kid,
        jws=token.jws,
        digest=jwt_digest(token.jws),
        hidden=sd_count - len(used),
        disclosed=tuple(d.name for d in used if d.name is not None),
    )


HeaderMemory = dict[str, tuple[dict[str, Any], ResolvedKey] | tuple[()]]
"""What a :class:`StatementBatch` learnt of each header segment: its checked header and
key, or ``()`` when the segment takes the full path."""

HEADER_MEMORY_MAX = 64
"""The most header segments one header memory holds (it is emptied when full)."""

Deferred = list[tuple[ResolvedKey, bytes, bytes]]
"""Signature checks ``(key, signing input, signature)`` postponed by the caller, who runs
them all before it trusts anything it concluded (see :class:`StatementBatch`)."""


class StatementBatch:
    """Verify the statements of one package with :func:`verify_statement`'s exact results.

    Within one verification the statements share two or three JOSE headers: each distinct
    header segment is decoded, checked and matched to its key once (the checks of the full
    path), and statements with the same segment skip straight to the payload, the
    disclosures and the signature. Anything unusual (a parse or signature fault, selective
    disclosure outside ``body.observed``, an escaped character) goes through
    :func:`verify_statement` itself, so failures carry exactly its codes and messages.

    ``headers`` lets batches over the very same ``keys`` share what they learnt of each
    header segment (a pure function of the segment and the keys); it is kept to
    :data:`HEADER_MEMORY_MAX` segments of at most 512 characters.

    With ``deferred`` (a list), the fast path appends each signature check to it instead
    of running it: the caller must run every one of them and, if any fails, discard all
    it concluded from these statements. Apart from a given ``headers`` memory, nothing
    outlives the batch object.
    """

    def __init__(
        self,
        keys: Mapping[str, ECKey | OKPKey],
        now: float,
        deferred: Deferred | None = None,
        headers: HeaderMemory | None = None,
    ) -> None:
        self.keys = keys
        self.now = now
        self.deferred = deferred
        self._headers: HeaderMemory = {} if headers is None else headers

    def verify(self, token: SdJwt, where: str) -> ParsedStatement:
        """Verify one split statement (as :func:`verify_statement` with ``fast=True``)."""
        parts = token.jws.split(".")
        if len(parts) == 3 and token.jws.isascii():
            known = self._headers.get(parts[0])
            if known is None:
                known = self._learn(parts[0])
            if known:
                by_digest = (
                    digest_index(token.disclosures) if token.disclosures else _NONE_DISCLOSED
                )
                if by_digest is not None:
                    st = self._fast(token.jws, by_digest, parts, known)
                    if st is not None:
                        return st
        return verify_statement(token, self.keys, where=where, now=self.now)

    def verify_compact(self, statement: object, index: int) -> ParsedStatement:
        """Split and verify statement ``index`` of a package (as :func:`split_statement`
        then :meth:`verify`), without building the split form."""
        if type(statement) is str and statement[-1:] == "~" and statement.isascii():
            cut = statement.find("~")
            jws = statement[:cut]
            by_digest: dict[str, Raw] | None = _NONE_DISCLOSED
            if cut != len(statement) - 1:  # disclosures (strictly encoded, or the slow path)
                by_digest = decode_disclosures(statement[cut + 1 : -1].split("~"))
            parts = jws.split(".")
            if len(parts) == 3 and by_digest is not None:
                known = self._headers.get(parts[0])
                if known is None:
                    known = self._learn(parts[0])
                if known:
                    st = self._fast(jws, by_digest, parts, known)
                    if st is not None:
                        return st
        where = f"statement {index}"
        return self.verify(split_statement(statement, where), where)

    def _learn(self, segment: str) -> tuple[dict[str, Any], ResolvedKey] | tuple[()]:
        """Check a header segment once, exactly as the full path does; ``()`` if it fails."""
        found: tuple[dict[str, Any], ResolvedKey] | tuple[()] = ()
        header = _statement_header(segment)
        if header is not None:
            entry = self.keys.get(header["kid"])
            if entry is not None:
                try:
                    key = resolve_key(entry, "issuer key")
                except VxpError:
                    pass
                else:
                    if key.alg == header["alg"]:
                        found = (header, key)
        if len(segment) <= 512:
            if len(self._headers) >= HEADER_MEMORY_MAX:
                self._headers.clear()
            self._headers[segment] = found
        return found

    def _fast(
        self,
        jws: str,
        by_digest: dict[str, Raw],
        parts: list[str],
        known: tuple[dict[str, Any], ResolvedKey],
    ) -> ParsedStatement | None:
        # (``jws`` is ASCII: both callers checked)
        key = known[1]
        jws_bytes = jws.encode()
        segment = parts[1]
        start = len(parts[0]) + 1
        stop = start + len(segment)  # the payload segment is jws_bytes[start:stop]
        try:
            # b64url_decode's and parse_json's fast paths, inline: anything they would not
            # accept at once (a stranger, a BOM, whitespace, a repeated name) goes slow
            rest = len(segment) & 3
            if rest and _VALUE[segment[-1]] & _UNUSED_BITS[rest]:
                return None
            rest_sig = len(parts[2]) & 3
            if rest_sig and _VALUE[parts[2][-1]] & _UNUSED_BITS[rest_sig]:
                return None
            standard = jws_bytes.translate(_FAST)
            raw = _a2b(standard[start:stop] + _PADDING[rest], strict_mode=True)
            sig = _a2b(standard[stop + 1 :] + _PADDING[rest_sig], strict_mode=True)
            text = raw.decode()
            payload, end = _SCAN(text, 0)
            if end != len(text):
                return None
        except Exception:  # every fault here is named by the slow path
            return None
        if (
            type(payload) is not dict
            or payload.keys() != _PAYLOAD_MEMBERS
            or payload["_sd_alg"] != "sha-256"
            # (tests on the text, not the bytes: `bytes in bytes` first tries the needle
            # as an integer and raises and clears a TypeError every time)
            or '"..."' in text
            or "\\" in text
            or text.count("{") + text.count("[") >= 60  # then no deeper than the limit
        ):
            return None
        seq, kind, signer, prev, body = (
            payload["seq"],
            payload["kind"],
            payload["signer"],
            payload["prev"],
            payload["body"],
        )
        if (
            type(seq) is not int
            or type(kind) is not str
            or type(signer) is not str
            or (prev is not None and type(prev) is not str)
            or type(body) is not dict
        ):
            return None
        hidden = 0
        disclosed: tuple[str, ...] = ()
        if '"_sd"' in text or by_digest:
            # Without escapes, one '"_sd"' in the text that is the member of body.observed
            # means selective disclosure is there and nowhere else (as verify_statement
            # requires), and no '"..."' means no array placeholder anywhere: the general
            # path's processing changes body.observed only (and checks the depth, which
            # the bracket count above bounds). So body.observed alone goes through the
            # one-pass SD-JWT processing, at its depth of 2.
            observed = body.get("observed")
            if text.count('"_sd"') != 1 or type(observed) is not dict or "_sd" not in observed:
                return None
            processed = process_claims(observed, by_digest, depth=2)
            if processed is None:
                return None
            shown, used = processed
            body = {**body, "observed": shown}
            hidden = len(observed["_sd"]) - len(used)
            disclosed = tuple([d[2] for d in used if d[2] is not None])
        signing_input = jws_bytes[:stop]
        if self.deferred is not None:
            self.deferred.append((key, signing_input, sig))
        elif not key.verify(signing_input, sig):
            return None
        return assemble(
            ParsedStatement,
            {
                "seq": seq,
                "kind": kind,
                "signer": signer,
                "prev": prev,
                "body": body,
                "kid": key.kid,
                "jws": jws,
                "digest": encode_hash(hashlib.sha256(jws_bytes).digest()),  # jwt_digest(jws)
                "hidden": hidden,
                "disclosed": disclosed,
            },
        )


def _statement_header(segment: str) -> dict[str, Any] | None:
    """The decoded header if it is exactly ``{alg, kid, typ}`` and passes ``check_header``
    (through the SD-JWT layer's memory of checked headers; the dict is shared: read it)."""
    try:
        header, _ = checked_header(segment, _ES256, STATEMENT_TYP)
    except VxpError:
        return None
    return header if header.keys() == _HEADER_MEMBERS else None


_HEADER_MEMBERS = frozenset({"alg", "kid", "typ"})
_NONE_DISCLOSED: dict[str, Raw] = {}  # shared and never written: only ever read
_a2b = binascii.a2b_base64


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
        or parsed.payload != expected
        or not key.verify(parsed.signing_input, parsed.signature)
    ):
        raise VxpError(
            "rule_violation",
            f"{where} carries a user signature that does not approve this revision",
            reason="user_signature_invalid",
        )
    return key.kid
