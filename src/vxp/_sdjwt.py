"""SD-JWT (RFC 9901): issue, present and verify, compact serialization only.

Issued tokens are ES256 (or EdDSA) JWS over JCS bytes with ``typ`` and ``kid`` (the key's
RFC 7638 thumbprint) in the header, ``_sd_alg: "sha-256"``, salts drawn from an injected
random source, optional decoys and an optional ``cnf`` holder key. Verification applies
every check of RFC 9901 §7.1 and §7.3 and fails closed with one precise code per check.
"""

from __future__ import annotations

import copy
import hashlib
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeGuard

from ._codec import (
    DIGEST_PATTERN,
    b64url_decode,
    b64url_encode,
    canonical_json,
    parse_json,
)
from ._jws import ParsedJws, check_algorithms, check_header, parse_compact, sign_compact
from ._keys import IssuerKeys, KeyLike, ResolvedKey, resolve_key
from ._time import epoch_seconds, whole_seconds
from .errors import VxpError

__all__ = [
    "Disclosure",
    "IssuerKeys",
    "KeyBinding",
    "RandomSource",
    "Sd",
    "SdJwt",
    "VerifiedSdJwt",
    "issue_sd_jwt",
    "mark_disclosable",
    "present_sd_jwt",
    "verify_sd_jwt",
]

RandomSource = Callable[[int], bytes]
"""Returns ``n`` random bytes; salts and decoys draw 16 bytes each."""

ClaimPath = Sequence[str | int]
"""A path into a claims object: member names and array indexes."""

SD_ALG = "sha-256"
_HASHES: dict[str, Callable[[bytes], Any]] = {"sha-256": hashlib.sha256}
_DIGEST_SIZES = {"sha-256": 32}
# The one canonical unpadded base64url text of a 32-byte value: 43 characters, the last
# of which has its two unused low bits clear.
_DIGEST_TEXT = {"sha-256": re.compile(DIGEST_PATTERN)}
_RESERVED = frozenset({"_sd", "..."})
_SALT_BYTES = 16
MAX_DEPTH = 64
"""Deepest nesting of claims accepted when issuing or verifying (**Ours**)."""
KB_TYP = "kb+jwt"
MAX_SPAN = 2**32
"""Largest ``leeway`` or ``max_age`` in seconds (**Ours**: about 136 years, far below any
float overflow when added to a time)."""


@dataclass(frozen=True)
class Sd:
    """Marks a claim value (object member or array element) as selectively disclosable."""

    value: Any


@dataclass(frozen=True, slots=True)
class Disclosure:
    """One disclosure: ``[salt, name, value]`` for an object member, ``[salt, value]`` for
    an array element (``name`` is ``None``); ``encoded`` is its exact base64url text."""

    encoded: str
    salt: str
    name: str | None
    value: Any

    @classmethod
    def create(cls, salt: str, name: str | None, value: Any) -> Disclosure:
        """Build a disclosure, encoded as base64url of its JCS array."""
        array = [salt, value] if name is None else [salt, name, value]
        return cls(b64url_encode(canonical_json(array, "a disclosure")), salt, name, value)

    @classmethod
    def parse(cls, encoded: str, where: str = "a disclosure") -> Disclosure:
        """Decode a disclosure strictly (RFC 9901 §4.2.1, §4.2.2)."""
        raw = b64url_decode(encoded, where, code="disclosure_malformed")
        array = parse_json(raw, where, code="disclosure_malformed")
        if not isinstance(array, list) or len(array) not in (2, 3):
            raise VxpError("disclosure_malformed", f"{where} is not a JSON array of 2 or 3 items")
        if not isinstance(array[0], str):
            raise VxpError("disclosure_malformed", f"the salt of {where} is not a string")
        if len(array) == 2:
            return cls(encoded, array[0], None, array[1])
        if not isinstance(array[1], str):
            raise VxpError("disclosure_malformed", f"the claim name of {where} is not a string")
        return cls(encoded, array[0], array[1], array[2])

    def digest(self, sd_alg: str = SD_ALG) -> str:
        """Return the base64url digest of the disclosure's ASCII text under ``sd_alg``."""
        hash_fn = _HASHES.get(sd_alg) if isinstance(sd_alg, str) else None
        if hash_fn is None:
            raise VxpError("sd_alg_unsupported", f"_sd_alg {sd_alg!r} is not supported")
        return b64url_encode(hash_fn(self.encoded.encode("ascii")).digest())


@dataclass(frozen=True)
class SdJwt:
    """A compact SD-JWT: the issuer-signed JWT, disclosures, and an optional KB-JWT."""

    jws: str
    disclosures: tuple[Disclosure, ...] = ()
    kb_jwt: str | None = None

    def serialize(self) -> str:
        """Return ``<JWT>~<D1>~...~<Dn>~[<KB-JWT>]``."""
        parts = [self.jws, *(d.encoded for d in self.disclosures)]
        return "~".join(parts) + "~" + (self.kb_jwt or "")

    def __str__(self) -> str:
        return self.serialize()

    @classmethod
    def parse(cls, text: object) -> SdJwt:
        """Split a compact SD-JWT or SD-JWT+KB into its parts (no verification)."""
        if not isinstance(text, str):
            raise VxpError("sd_jwt_malformed", "an SD-JWT is a string")
        text = str.__str__(text)  # the plain text, whatever a subclass's methods say
        if not text.isascii():
            raise VxpError("sd_jwt_malformed", "an SD-JWT holds only ASCII characters")
        if "~" not in text:
            raise VxpError(
                "missing_trailing_tilde", "the SD-JWT has no '~' after the issuer-signed JWT"
            )
        parts = text.split("~")
        last = parts[-1]
        kb: str | None = None
        if last:
            if "." not in last:
                raise VxpError("missing_trailing_tilde", "the SD-JWT does not end with '~'")
            kb = last
        disclosures = []
        for i, enc in enumerate(parts[1:-1]):
            if not enc:
                raise VxpError("disclosure_malformed", f"disclosure {i} is empty ('~~')")
            disclosures.append(Disclosure.parse(enc, f"disclosure {i}"))
        return cls(parts[0], tuple(disclosures), kb)


@dataclass(frozen=True)
class KeyBinding:
    """The verifier's key-binding policy (RFC 9901 §7.3): the expected ``aud`` and ``nonce``,
    and how old (``max_age`` seconds) or how far in the future (``leeway``) ``iat`` may be."""

    aud: str
    nonce: str
    max_age: int = 300
    leeway: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.aud, str) or not isinstance(self.nonce, str):
            raise VxpError("key_binding_invalid", "aud and nonce are strings")
        for name in ("max_age", "leeway"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_SPAN:
                raise VxpError(
                    "key_binding_invalid", f"{name} is an integer from 0 to {MAX_SPAN} seconds"
                )


@dataclass(frozen=True)
class VerifiedSdJwt:
    """The result of a successful verification.

    ``claims`` is the processed payload (disclosed claims in place; ``_sd``, ``_sd_alg``
    and array placeholders removed); ``key_binding`` the verified KB-JWT payload, if any.
    """

    header: dict[str, Any]
    claims: dict[str, Any]
    kid: str
    disclosures: tuple[Disclosure, ...]
    key_binding: dict[str, Any] | None = None
    payload: dict[str, Any] = field(default_factory=dict, repr=False)


# ---------------------------------------------------------------------------- issuing


def mark_disclosable(claims: Mapping[str, Any], paths: Iterable[ClaimPath]) -> dict[str, Any]:
    """Return a copy of ``claims`` with the value at each path wrapped in :class:`Sd`.

    A path is a list of member names and array indexes (``["address", "street"]``,
    ``["nationalities", 0]``); nested paths make recursive disclosures.
    """
    if not isinstance(claims, Mapping):
        raise VxpError("claims_invalid", "the claims are not a JSON object")
    try:
        out: dict[str, Any] = copy.deepcopy(dict(claims))
    except RecursionError as exc:
        raise VxpError(
            "claims_too_deep", f"the claims nest deeper than {MAX_DEPTH} levels"
        ) from exc
    for path in sorted((list(_path(p)) for p in _paths(paths)), key=len, reverse=True):
        if not path:
            raise VxpError("sd_path_invalid", "an empty path cannot be selectively disclosable")
        node: Any = out
        for depth, step in enumerate(path):
            if isinstance(node, Sd):
                node = node.value
            last = depth == len(path) - 1
            in_object = isinstance(node, dict) and isinstance(step, str) and step in node
            in_array = (
                isinstance(node, list)
                and isinstance(step, int)
                and not isinstance(step, bool)
                and 0 <= step < len(node)
            )
            if in_object or in_array:
                if last:
                    if isinstance(node[step], Sd):
                        raise VxpError("sd_path_invalid", f"path {path} is listed twice")
                    node[step] = Sd(node[step])
                else:
                    node = node[step]
            else:
                raise VxpError("sd_path_invalid", f"path {path} does not exist in the claims")
    return out


def _paths(paths: object) -> list[object]:
    if isinstance(paths, str | bytes | Mapping) or not isinstance(paths, Iterable):
        raise VxpError("sd_path_invalid", "paths are a list of claim paths")
    return list(paths)


def _path(path: object) -> tuple[str | int, ...]:
    if isinstance(path, str | bytes | Mapping) or not isinstance(path, Iterable):
        raise VxpError("sd_path_invalid", f"path {path!r} is not a list of names and indexes")
    steps = tuple(path)
    for step in steps:
        if not isinstance(step, str | int) or isinstance(step, bool):
            raise VxpError("sd_path_invalid", f"path {list(steps)} has a step {step!r}")
    return steps


def _utf16_key(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


class _Issuer:
    def __init__(self, rng: RandomSource, decoys: int) -> None:
        self.rng = rng
        self.decoys = decoys
        self.disclosures: list[Disclosure] = []

    def random(self) -> bytes:
        data = self.rng(_SALT_BYTES)
        if not isinstance(data, bytes) or len(data) != _SALT_BYTES:
            raise VxpError("random_source_invalid", "the random source did not return 16 bytes")
        return data

    def salt(self) -> str:
        return b64url_encode(self.random())

    def decoy(self) -> str:
        return b64url_encode(hashlib.sha256(self.random()).digest())

    def disclose(self, name: str | None, value: Any) -> str:
        disclosure = Disclosure.create(self.salt(), name, value)
        self.disclosures.append(disclosure)
        return disclosure.digest()

    def walk(self, node: Any, where: str, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise VxpError("claims_too_deep", f"{where} is nested more than {MAX_DEPTH} levels")
        if isinstance(node, Sd):
            raise VxpError("sd_misplaced", f"{where} is marked disclosable twice or at the top")
        if isinstance(node, Mapping):
            out: dict[str, Any] = {}
            digests: list[str] = []
            if not all(isinstance(name, str) for name in node):
                raise VxpError("claims_invalid", f"{where} has a member name that is not text")
            for name in sorted(node, key=_utf16_key):
                if name in _RESERVED or name == "_sd_alg":
                    raise VxpError(
                        "claim_name_reserved", f"{where} uses the reserved claim name {name!r}"
                    )
                value = node[name]
                if isinstance(value, Sd):
                    inner = self.walk(value.value, f"{where}.{name}", depth + 1)
                    digests.append(self.disclose(name, inner))
                else:
                    out[name] = self.walk(value, f"{where}.{name}", depth + 1)
            if digests:
                digests.extend(self.decoy() for _ in range(self.decoys))
                out["_sd"] = sorted(digests)
            return out
        if isinstance(node, list | tuple):
            items: list[Any] = []
            hidden = False
            for i, item in enumerate(node):
                if isinstance(item, Sd):
                    inner = self.walk(item.value, f"{where}[{i}]", depth + 1)
                    items.append({"...": self.disclose(None, inner)})
                    hidden = True
                else:
                    items.append(self.walk(item, f"{where}[{i}]", depth + 1))
            if hidden:
                items.extend({"...": self.decoy()} for _ in range(self.decoys))
            return items
        return node


def issue_sd_jwt(
    claims: Mapping[str, Any],
    issuer_key: KeyLike,
    *,
    typ: str,
    rng: RandomSource = secrets.token_bytes,
    decoys: int = 0,
    holder_key: KeyLike | None = None,
    deterministic: bool = True,
) -> SdJwt:
    """Issue an SD-JWT over ``claims``; values wrapped in :class:`Sd` become disclosures.

    The header is ``{"alg", "kid", "typ"}`` with ``kid`` the issuer key's RFC 7638
    thumbprint; the payload is JCS with ``_sd_alg: "sha-256"``. ``rng`` supplies 16 bytes
    per salt and per decoy, drawn in member-name order (UTF-16 code units, as JCS sorts),
    array-index order, inner values before the claim that holds them, and an object's or
    array's ``decoys`` after its own disclosures. ``holder_key`` adds ``cnf.jwk`` (its
    public part). ``deterministic`` selects RFC 6979 ES256 signatures.
    """
    if not isinstance(claims, Mapping):
        raise VxpError("claims_invalid", "the claims are not a JSON object")
    if not isinstance(typ, str) or not typ:
        raise VxpError("typ_invalid", "typ is a non-empty string")
    if not isinstance(decoys, int) or isinstance(decoys, bool) or not 0 <= decoys <= 64:
        raise VxpError("decoys_invalid", "decoys is an integer from 0 to 64")
    key = resolve_key(issuer_key, "issuer key")
    if key.private is None:
        raise VxpError("key_not_private", "issuing needs the issuer's private key")
    issuer = _Issuer(rng, decoys)
    payload = issuer.walk(claims, "claims")
    if holder_key is not None:
        if "cnf" in payload:
            raise VxpError(
                "claims_invalid", "the claims already hold cnf and a holder key is given"
            )
        payload["cnf"] = {"jwk": resolve_key(holder_key, "holder key").public_jwk}
    payload["_sd_alg"] = SD_ALG
    header = {"alg": key.alg, "kid": key.kid, "typ": typ}
    jws = sign_compact(header, payload, key, deterministic=deterministic)
    return SdJwt(jws, tuple(issuer.disclosures))


# ---------------------------------------------------------------------------- processing


class _Processor:
    """RFC 9901 §7.1 step 3: replace digests by disclosures, strictly."""

    def __init__(self, disclosures: Sequence[Disclosure], sd_alg: str) -> None:
        self.sd_alg = sd_alg
        self.size = _DIGEST_SIZES[sd_alg]
        by_digest: dict[str, Disclosure] = {}
        hash_fn = _HASHES[sd_alg]
        for d in disclosures:
            digest = b64url_encode(hash_fn(d.encoded.encode("ascii")).digest())
            if digest in by_digest:
                raise VxpError("disclosure_repeated", "the same disclosure is included twice")
            by_digest[digest] = d
        self.by_digest = by_digest
        self.seen: set[str] = set()
        self.used: list[Disclosure] = []
        self.paths: dict[str, tuple[str | int, ...]] = {}
        self._text = _DIGEST_TEXT[sd_alg].fullmatch

    def digest(self, value: object, context: str, path: tuple[str | int, ...]) -> Disclosure | None:
        found = self.by_digest.get(value) if isinstance(value, str) else None
        if found is not None:
            # a digest we computed ourselves is canonical; only its uniqueness is left
            if value in self.seen:
                raise VxpError("digest_duplicate", f"the digest {value} appears more than once")
            self.seen.add(value)  # type: ignore[arg-type]
            self.used.append(found)
            return found
        if not isinstance(value, str):
            where = f"{context} at {_where(path)}"
            raise VxpError("digest_malformed", f"a digest in {where} is not a string")
        if self._text(value) is None:
            where = f"{context} at {_where(path)}"
            # the slow path only to name the fault precisely
            raw = b64url_decode(value, f"a digest in {where}", code="digest_malformed")
            raise VxpError(
                "digest_malformed", f"a digest in {where} has {len(raw)} bytes, not {self.size}"
            )
        if value in self.seen:
            raise VxpError("digest_duplicate", f"the digest {value} appears more than once")
        self.seen.add(value)
        return None

    def walk(self, node: Any, path: tuple[str | int, ...], top: bool = False) -> Any:
        if len(path) > MAX_DEPTH:
            raise VxpError(
                "claims_too_deep", f"the claims at {_where(path)} nest deeper than {MAX_DEPTH}"
            )
        if isinstance(node, dict):
            return self._object(node, path, top)
        if isinstance(node, list):
            return self._array(node, path)
        return node

    def _object(self, node: dict[str, Any], path: tuple[str | int, ...], top: bool) -> Any:
        if "..." in node:
            raise VxpError(
                "claim_name_reserved", f"the object at {_where(path)} uses '...' outside an array"
            )
        if not top and "_sd_alg" in node:
            # RFC 9901 §4.1.1: _sd_alg appears at the top level of the payload only
            raise VxpError(
                "sd_alg_misplaced", f"the object at {_where(path)} holds _sd_alg below the top"
            )
        out: dict[str, Any] = {}
        walk = self.walk
        for name, value in node.items():
            if isinstance(value, _CONTAINERS):
                if name == "_sd" or (top and name == "_sd_alg"):
                    continue
                out[name] = walk(value, (*path, name))
            elif name != "_sd" and (not top or name != "_sd_alg"):
                out[name] = value
        if "_sd" in node:
            digests = node["_sd"]
            if not isinstance(digests, list):
                raise VxpError("sd_array_invalid", f"_sd at {_where(path)} is not an array")
            by_digest, seen, text = self.by_digest, self.seen, self._text
            for value in digests:
                found = by_digest.get(value) if type(value) is str else None
                if found is None:
                    if type(value) is str and text(value) is not None and value not in seen:
                        seen.add(value)  # a well-formed digest of no disclosure: a decoy
                        continue
                    found = self.digest(value, "_sd", path)
                    if found is None:  # pragma: no cover - digest() raised or was a decoy
                        continue
                elif value in seen:
                    raise VxpError("digest_duplicate", f"the digest {value} appears more than once")
                else:
                    seen.add(value)
                    self.used.append(found)
                claim = found.name
                if claim is None:
                    raise VxpError(
                        "disclosure_kind_mismatch",
                        f"an array-element disclosure is referenced from _sd at {_where(path)}",
                    )
                if claim in _RESERVED:
                    raise VxpError(
                        "claim_name_reserved",
                        f"a disclosure at {_where(path)} uses the reserved claim name {claim!r}",
                    )
                if claim == "_sd_alg" and not top:
                    raise VxpError(
                        "sd_alg_misplaced",
                        f"a disclosure at {_where(path)} names _sd_alg below the top level",
                    )
                if claim in out or (top and claim == "_sd_alg"):
                    raise VxpError(
                        "claim_name_collision",
                        f"a disclosure at {_where(path)} repeats the claim name {claim!r}",
                    )
                inner = (*path, claim)
                self.paths[found.encoded] = inner
                item = found.value
                # walk() of a scalar only checks the depth
                if isinstance(item, _CONTAINERS) or len(inner) > MAX_DEPTH:
                    item = walk(item, inner)
                out[claim] = item
        return out

    def _array(self, node: list[Any], path: tuple[str | int, ...]) -> Any:
        out: list[Any] = []
        by_digest, seen, text = self.by_digest, self.seen, self._text
        for item in node:
            if isinstance(item, dict) and "..." in item:
                if len(item) != 1:
                    raise VxpError(
                        "array_placeholder_invalid",
                        f"an array element at {_where(path)} has '...' beside other members",
                    )
                value = item["..."]
                found = by_digest.get(value) if type(value) is str else None
                if found is None:
                    if type(value) is str and text(value) is not None and value not in seen:
                        seen.add(value)  # a well-formed digest of no disclosure: a decoy
                        continue
                    found = self.digest(value, "an array element", path)
                    if found is None:  # pragma: no cover - digest() raised or was a decoy
                        continue
                elif value in seen:
                    raise VxpError("digest_duplicate", f"the digest {value} appears more than once")
                else:
                    seen.add(value)
                    self.used.append(found)
                if found.name is not None:
                    raise VxpError(
                        "disclosure_kind_mismatch",
                        f"an object-member disclosure is referenced from the array at "
                        f"{_where(path)}",
                    )
                inner = (*path, len(out))
                self.paths[found.encoded] = inner
                out.append(self.walk(found.value, inner))
            elif isinstance(item, _CONTAINERS):
                out.append(self.walk(item, (*path, len(out))))
            else:
                out.append(item)
        return out


_CONTAINERS = (dict, list)


def _where(path: tuple[str | int, ...]) -> str:
    return "/" + "/".join(str(p) for p in path)


def _sd_alg_of(payload: Mapping[str, Any]) -> str:
    sd_alg = payload.get("_sd_alg", SD_ALG)
    if not isinstance(sd_alg, str) or sd_alg not in _HASHES:
        raise VxpError("sd_alg_unsupported", f"_sd_alg {sd_alg!r} is not supported")
    return sd_alg


# ---------------------------------------------------------------------------- presenting


def present_sd_jwt(
    sd_jwt: SdJwt | str,
    *,
    disclose: Iterable[ClaimPath] | None = None,
    holder_key: KeyLike | None = None,
    aud: str | None = None,
    nonce: str | None = None,
    iat: int | datetime | None = None,
    deterministic: bool = True,
) -> str:
    """Return a presentation of ``sd_jwt`` with the chosen disclosures, optionally key-bound.

    ``disclose`` lists claim paths (``None``: all disclosures, ``[]``: none). A path
    selects every disclosure on the way to it and every disclosure inside it. With
    ``holder_key`` a KB-JWT (``typ: kb+jwt``) carrying ``iat``, ``aud``, ``nonce`` and
    ``sd_hash`` is appended; the key must be the token's ``cnf`` key. ``iat`` is integer
    seconds since the epoch or an aware :class:`~datetime.datetime` (a naive one is
    ``time_naive``, one without a UTC value ``now_invalid``).
    """
    token = sd_jwt if isinstance(sd_jwt, SdJwt) else SdJwt.parse(sd_jwt)
    parsed = parse_compact(token.jws, "issuer-signed JWT")
    sd_alg = _sd_alg_of(parsed.payload)
    processor = _Processor(token.disclosures, sd_alg)
    processor.walk(parsed.payload, (), top=True)
    if disclose is None:
        chosen = [d for d in token.disclosures if d.encoded in processor.paths]
    else:
        wanted = [_path(p) for p in _paths(disclose)]
        chosen = []
        matched: set[tuple[str | int, ...]] = set()
        for d in token.disclosures:
            where = processor.paths.get(d.encoded)
            if where is None:
                continue
            for p in wanted:
                n = min(len(p), len(where))
                if p[:n] == where[:n]:
                    chosen.append(d)
                    matched.add(p)
                    break
        unknown = [list(p) for p in wanted if p not in matched]
        if unknown:
            raise VxpError("disclose_path_unknown", f"no disclosure lies on the paths {unknown}")
    body = SdJwt(token.jws, tuple(chosen)).serialize()
    if holder_key is None:
        if aud is not None or nonce is not None or iat is not None:
            raise VxpError("holder_key_missing", "aud, nonce and iat need a holder key")
        return body
    if not isinstance(aud, str) or not isinstance(nonce, str):
        raise VxpError("kb_claims_invalid", "key binding needs aud and nonce strings")
    if not isinstance(iat, int | datetime) or isinstance(iat, bool):
        raise VxpError("kb_claims_invalid", "key binding needs an integer iat")
    iat = whole_seconds(iat, "iat")
    key = resolve_key(holder_key, "holder key")
    cnf = parsed.payload.get("cnf")
    if not isinstance(cnf, dict) or not isinstance(cnf.get("jwk"), dict):
        raise VxpError("kb_cnf_missing", "the SD-JWT has no cnf.jwk to bind a presentation to")
    try:
        cnf_kid = resolve_key(cnf["jwk"], "cnf.jwk").kid
    except VxpError as exc:  # the token's key, not the caller's: the token is bad
        raise VxpError("kb_cnf_invalid", exc.message) from exc
    if cnf_kid != key.kid:
        raise VxpError("holder_key_mismatch", "the holder key is not the SD-JWT's cnf key")
    sd_hash = b64url_encode(_HASHES[sd_alg](body.encode("ascii")).digest())
    kb = sign_compact(
        {"alg": key.alg, "typ": KB_TYP},
        {"aud": aud, "iat": iat, "nonce": nonce, "sd_hash": sd_hash},
        key,
        deterministic=deterministic,
    )
    return body + kb


# ---------------------------------------------------------------------------- verifying


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def open_jwt(
    token: SdJwt,
    keys: IssuerKeys | KeyLike | Sequence[KeyLike],
    algs: frozenset[str],
    typ: str | None,
) -> tuple[ParsedJws, ResolvedKey]:
    """The issuer-signed JWT of ``token`` decoded, its header checked and its key chosen
    (the signature is not checked here: see :func:`verify_sd_jwt` for the order)."""
    parsed = parse_compact(token.jws, "issuer-signed JWT")
    alg = check_header(parsed.header, algs, "issuer-signed JWT", typ=typ)
    trusted = keys if isinstance(keys, IssuerKeys) else IssuerKeys(keys)
    return parsed, trusted.pick(parsed.header.get("kid"), alg)


def process_payload(
    payload: Mapping[str, Any], disclosures: Sequence[Disclosure]
) -> tuple[dict[str, Any], _Processor]:
    """RFC 9901 §7.1 step 3 over a signed payload: ``_sd_alg``, then every digest replaced
    by its disclosure, each disclosure referenced exactly once. Returns the processed
    claims and the walk (which disclosures were used, and where)."""
    sd_alg = _sd_alg_of(payload)
    processor = _Processor(disclosures, sd_alg)
    claims = processor.walk(payload, (), top=True)
    if len(processor.used) != len(disclosures):
        raise VxpError(
            "disclosure_unreferenced", "a disclosure is not referenced by any digest in the SD-JWT"
        )
    return claims, processor


def check_times(claims: Mapping[str, Any], now: float, leeway: int, require_exp: bool) -> None:
    for name in ("exp", "nbf", "iat"):
        if name in claims and not _is_number(claims[name]):
            raise VxpError("claim_invalid", f"the {name} claim is not a number")
    if "exp" in claims:
        if now >= claims["exp"] + leeway:
            raise VxpError("token_expired", "the SD-JWT has expired (exp)")
    elif require_exp:
        raise VxpError("exp_missing", "the SD-JWT has no exp claim and the verifier requires one")
    if "nbf" in claims and now + leeway < claims["nbf"]:
        raise VxpError("token_not_yet_valid", "the SD-JWT is not valid yet (nbf)")
    if "iat" in claims and now + leeway < claims["iat"]:
        raise VxpError("token_issued_in_future", "the SD-JWT was issued in the future (iat)")


_KB_CODES = {
    "malformed_jwt": "kb_malformed_jwt",
    "alg_none": "kb_alg_none",
    "alg_not_allowed": "kb_alg_not_allowed",
    "crit_unsupported": "kb_crit_unsupported",
    "kid_invalid": "kb_kid_invalid",
}
"""The KB-JWT's own code for each code :func:`parse_compact` and :func:`check_header` raise
(``typ`` is checked apart: ``kb_typ_invalid``)."""


def _verify_kb(
    kb_jwt: str,
    body: str,
    claims: Mapping[str, Any],
    sd_alg: str,
    policy: KeyBinding,
    algorithms: frozenset[str],
    now: float,
) -> dict[str, Any]:
    try:
        parsed = parse_compact(kb_jwt, "KB-JWT")
        alg = check_header(parsed.header, algorithms, "KB-JWT", typ=None)
    except VxpError as exc:
        raise VxpError(_KB_CODES[exc.code], exc.message) from exc
    if parsed.header.get("typ") != KB_TYP:
        raise VxpError("kb_typ_invalid", f"the KB-JWT typ is not {KB_TYP!r}")
    cnf = claims.get("cnf")
    if not isinstance(cnf, dict) or not isinstance(cnf.get("jwk"), dict):
        raise VxpError("kb_cnf_missing", "the SD-JWT has no cnf.jwk to check the KB-JWT with")
    try:
        holder = resolve_key(cnf["jwk"], "cnf.jwk")
    except VxpError as exc:
        raise VxpError("kb_cnf_invalid", exc.message) from exc
    if holder.alg != alg:
        raise VxpError("kb_alg_key_mismatch", f"KB-JWT alg {alg} does not fit the cnf key")
    if not holder.signature_valid(parsed.signing_input, parsed.signature):
        raise VxpError("kb_signature_invalid", "the KB-JWT signature does not verify")
    kb = parsed.payload
    iat = kb.get("iat")
    if not _is_number(iat):
        raise VxpError("kb_iat_invalid", "the KB-JWT has no numeric iat")
    # compared as given: Python orders int and float exactly, and a huge integer iat
    # cannot be converted to float (OverflowError)
    if iat > now + policy.leeway or iat < now - policy.max_age - policy.leeway:
        raise VxpError("kb_iat_invalid", "the KB-JWT iat is outside the accepted window")
    # RFC 9901 §7.3 asks for a valid JWT: its exp and nbf hold too (with the same leeway)
    for name in ("exp", "nbf"):
        if name in kb and not _is_number(kb[name]):
            raise VxpError("kb_claim_invalid", f"the KB-JWT {name} claim is not a number")
    if "exp" in kb and now >= kb["exp"] + policy.leeway:
        raise VxpError("kb_token_expired", "the KB-JWT has expired (exp)")
    if "nbf" in kb and now + policy.leeway < kb["nbf"]:
        raise VxpError("kb_token_not_yet_valid", "the KB-JWT is not valid yet (nbf)")
    if kb.get("nonce") != policy.nonce:
        raise VxpError("kb_nonce_mismatch", "the KB-JWT nonce is not the expected one")
    if kb.get("aud") != policy.aud:
        raise VxpError("kb_aud_mismatch", "the KB-JWT aud is not this verifier")
    expected = b64url_encode(_HASHES[sd_alg](body.encode("ascii")).digest())
    if kb.get("sd_hash") != expected:
        raise VxpError("kb_sd_hash_mismatch", "the KB-JWT sd_hash does not cover this SD-JWT")
    return kb


def verify_sd_jwt(
    token: str,
    issuer_keys: IssuerKeys | KeyLike | Sequence[KeyLike],
    *,
    typ: str | None,
    now: datetime | float,
    algorithms: Iterable[str] = ("ES256",),
    key_binding: KeyBinding | None = None,
    leeway: int = 0,
    require_exp: bool = False,
) -> VerifiedSdJwt:
    """Verify a compact SD-JWT (or SD-JWT+KB) and return its processed claims.

    ``issuer_keys`` is an :class:`IssuerKeys` the caller built once (the fast way for
    many tokens of one issuer), or a key or list of keys resolved for this call only.

    Checks, in order (parse before signature before content, RFC 9901 §7.1, §7.3): the
    serialization and every disclosure (strict base64url and JSON), the header (``alg``
    in ``algorithms``, never ``none``; no ``crit``; ``typ`` equal to ``typ`` unless that is
    ``None``), the issuer key (by ``kid`` thumbprint), the signature, ``_sd_alg`` (top level
    only), the digests (well-formed, each once, each disclosure referenced once, no
    reserved or colliding names), ``exp``/``nbf``/``iat`` against ``now`` (± ``leeway``),
    then key binding: a KB-JWT is required when ``key_binding`` is given and refused
    otherwise, and its ``iat``, ``exp`` and ``nbf`` hold at ``now`` (± its ``leeway``).

    ``now`` is an aware :class:`~datetime.datetime` or seconds since the epoch (an int or
    a float); a naive datetime is ``time_naive``, another value ``now_invalid`` (both
    :class:`~vxp.VxpUsageError`). Returns the verified token or raises
    :class:`~vxp.VxpProtocolError`: there is no "failed" result to misread.
    """
    algs = check_algorithms(algorithms)
    now = epoch_seconds(now)
    if not isinstance(leeway, int) or isinstance(leeway, bool) or not 0 <= leeway <= MAX_SPAN:
        raise VxpError("leeway_invalid", f"leeway is an integer from 0 to {MAX_SPAN} seconds")
    if typ is not None and (not isinstance(typ, str) or not typ):
        raise VxpError("typ_invalid", "the typ to expect is a non-empty string or None")
    if key_binding is not None and not isinstance(key_binding, KeyBinding):
        raise VxpError("key_binding_invalid", "key_binding is a KeyBinding or None")
    if not isinstance(require_exp, bool):
        raise VxpError("argument_invalid", "require_exp is a bool")
    sd = SdJwt.parse(token)
    parsed, key = open_jwt(sd, issuer_keys, algs, typ)
    if not key.signature_valid(parsed.signing_input, parsed.signature):
        raise VxpError("signature_invalid", "the issuer signature does not verify")
    claims, processor = process_payload(parsed.payload, sd.disclosures)
    check_times(claims, now, leeway, require_exp)
    kb: dict[str, Any] | None = None
    if sd.kb_jwt is not None:
        if key_binding is None:
            raise VxpError(
                "kb_jwt_unexpected", "the presentation has a KB-JWT the verifier did not ask for"
            )
        text = str.__str__(token)  # (SdJwt.parse accepted it: a string)
        body = text[: text.rindex("~") + 1]
        kb = _verify_kb(sd.kb_jwt, body, claims, processor.sd_alg, key_binding, algs, now)
    elif key_binding is not None:
        raise VxpError(
            "kb_jwt_missing", "the verifier requires key binding and no KB-JWT is present"
        )
    return VerifiedSdJwt(
        header=parsed.header,
        claims=claims,
        kid=key.kid,
        disclosures=tuple(processor.used),
        key_binding=kb,
        payload=parsed.payload,
    )
