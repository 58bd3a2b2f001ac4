"""Fetching a proof in the native profile: ``GET /v1/requests/{request_id}/proof`` with DPoP.

Transport-free: :class:`ProofEndpoint` takes a request (method, URL, headers) as data and
returns a :class:`FetchResponse`. The access token is sender-constrained (RFC 9449): the
``DPoP`` header carries a proof JWT signed by the key whose RFC 7638 thumbprint the token
is bound to (``jkt``), for this method and URL (``htm``, ``htu``), fresh (``iat``),
unused (``jti``) and for this token (``ath``). A missing request and someone else's
request get the same ``404 request_not_found``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from ._codec import b64url_encode
from ._errors import VxpError
from ._jws import check_header, parse_compact, sign_compact
from ._keys import KeyLike, resolve_key

__all__ = [
    "AccessToken",
    "FetchResponse",
    "MemoryReplayCache",
    "ProofEndpoint",
    "ReplayCache",
    "make_dpop_proof",
]

DPOP_TYP = "dpop+jwt"
_PATH_PREFIX = "/v1/requests/"
_PATH_SUFFIX = "/proof"


@dataclass(frozen=True)
class AccessToken:
    """What the authorization server issued: for ``client_id``, bound to ``jkt``, until ``exp``."""

    client_id: str
    jkt: str
    exp: int


@dataclass(frozen=True)
class FetchResponse:
    """An HTTP answer as data: status, headers and a JSON body."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return ``{"status", "headers", "body"}``."""
        return {"status": self.status, "headers": dict(self.headers), "body": self.body}


class ReplayCache(Protocol):
    """Remembers DPoP ``jti`` values until they could no longer pass the ``iat`` window."""

    def check_and_store(self, key: str, until: int, now: int) -> bool:
        """Atomically store ``key`` until ``until``; return False if it was already stored."""
        ...


class MemoryReplayCache:
    """A :class:`ReplayCache` in process memory, purged as entries expire."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def check_and_store(self, key: str, until: int, now: int) -> bool:
        """Store ``key`` until ``until``; False if it is already there (a replay)."""
        with self._lock:
            for old in [k for k, t in self._seen.items() if t < now]:
                del self._seen[old]
            if key in self._seen:
                return False
            self._seen[key] = until
            return True


def _ath(token: str) -> str:
    return b64url_encode(hashlib.sha256(token.encode("ascii")).digest())


def make_dpop_proof(
    key: KeyLike,
    *,
    method: str,
    url: str,
    iat: int,
    jti: str,
    access_token: str | None = None,
) -> str:
    """Return a DPoP proof JWT (RFC 9449 §4.2) for ``method`` and ``url`` signed by ``key``."""
    resolved = resolve_key(key, "DPoP key")
    header = {"alg": resolved.alg, "jwk": resolved.public_jwk, "typ": DPOP_TYP}
    parts = urlsplit(url)
    payload: dict[str, Any] = {
        "htm": method,
        "htu": f"{parts.scheme}://{parts.netloc}{parts.path}",
        "iat": iat,
        "jti": jti,
    }
    if access_token is not None:
        payload["ath"] = _ath(access_token)
    return sign_compact(header, payload, resolved, deterministic=True)


def _unauthorized(error: str, description: str) -> FetchResponse:
    return FetchResponse(
        401,
        {"error": error, "error_description": description},
        {"WWW-Authenticate": f'DPoP error="{error}", algs="ES256 EdDSA"'},
    )


_NOT_FOUND = FetchResponse(404, {"error": "request_not_found"})


def _header(headers: Mapping[str, Any], name: str) -> str | bool | None:
    """The one value of header ``name`` (case-insensitive); ``False`` when repeated."""
    found = [v for k, v in headers.items() if isinstance(k, str) and k.lower() == name]
    if not found:
        return None
    if len(found) > 1 or not isinstance(found[0], str):
        return False
    return found[0]


class ProofEndpoint:
    """The proof endpoint of one company, on in-memory (or caller-supplied) stores.

    ``base_url`` is the endpoint's origin as the agent addresses it (``https://host``);
    ``tokens`` maps access tokens to :class:`AccessToken`; ``packages`` maps a request id
    to ``(client_id of its owner, package)``; ``replay`` remembers used ``jti`` values;
    ``window`` is how many seconds an ``iat`` may lie before or after ``now``.
    """

    def __init__(
        self,
        *,
        base_url: str,
        tokens: Mapping[str, AccessToken] | Callable[[str], AccessToken | None],
        packages: Mapping[str, tuple[str, Mapping[str, Any]]],
        replay: ReplayCache | None = None,
        window: int = 60,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "https" or not parts.netloc or parts.path not in ("", "/"):
            raise VxpError("base_url_invalid", "the endpoint's base URL is https://host only")
        self.base_url = f"https://{parts.netloc.lower()}"
        self._tokens = tokens
        self._packages = packages
        self._replay: ReplayCache = replay if replay is not None else MemoryReplayCache()
        self._window = window

    def _token(self, value: str) -> AccessToken | None:
        if callable(self._tokens):
            return self._tokens(value)
        return self._tokens.get(value)

    def handle(
        self, *, method: str, url: str, headers: Mapping[str, Any], now: int
    ) -> FetchResponse:
        """Answer one request; never raises for bad input (the answer says what was wrong)."""
        if method != "GET":
            return FetchResponse(405, {"error": "method_not_allowed"}, {"Allow": "GET"})
        parts = urlsplit(url) if isinstance(url, str) else None
        if (
            parts is None
            or f"{parts.scheme}://{parts.netloc.lower()}" != self.base_url
            or not parts.path.startswith(_PATH_PREFIX)
            or not parts.path.endswith(_PATH_SUFFIX)
        ):
            return FetchResponse(404, {"error": "not_found"})
        request_id = parts.path[len(_PATH_PREFIX) : -len(_PATH_SUFFIX)]
        if not request_id or "/" in request_id:
            return FetchResponse(404, {"error": "not_found"})
        auth = _header(headers, "authorization")
        proof = _header(headers, "dpop")
        if not isinstance(auth, str) or not auth.startswith("DPoP ") or len(auth) <= 5:
            return _unauthorized("invalid_token", "the request needs an Authorization: DPoP token")
        token_text = auth[5:]
        if not token_text.isascii() or " " in token_text:
            return _unauthorized("invalid_token", "the access token is malformed")
        if not isinstance(proof, str):
            return _unauthorized("invalid_dpop_proof", "the request needs exactly one DPoP header")
        token = self._token(token_text)
        if token is None or token.exp <= now:
            return _unauthorized("invalid_token", "the access token is unknown or expired")
        problem = self._check_proof(proof, token, token_text, method, parts, now)
        if problem is not None:
            return _unauthorized("invalid_dpop_proof", problem)
        entry = self._packages.get(request_id)
        if entry is None or entry[0] != token.client_id:
            return _NOT_FOUND
        return FetchResponse(
            200, dict(entry[1]), {"Content-Type": "application/json", "Cache-Control": "no-store"}
        )

    def _check_proof(
        self, proof: str, token: AccessToken, token_text: str, method: str, parts: Any, now: int
    ) -> str | None:
        try:
            parsed = parse_compact(proof, "DPoP proof")
            check_header(parsed.header, frozenset({"ES256", "EdDSA"}), "DPoP proof", typ=DPOP_TYP)
            jwk = parsed.header.get("jwk")
            if not isinstance(jwk, dict) or "d" in jwk:
                return "the DPoP proof header has no public jwk"
            key = resolve_key(jwk, "DPoP jwk")
        except VxpError as exc:
            return exc.message
        if key.alg != parsed.header["alg"]:
            return "the DPoP proof alg does not fit its key"
        if not key.verify(parsed.signing_input, parsed.signature):
            return "the DPoP proof signature does not verify"
        claims = parsed.payload
        if claims.get("htm") != method:
            return "the DPoP proof is for another HTTP method (htm)"
        if claims.get("htu") != f"{self.base_url}{parts.path}":
            return "the DPoP proof is for another URL (htu)"
        iat = claims.get("iat")
        if not isinstance(iat, int) or isinstance(iat, bool) or abs(iat - now) > self._window:
            return "the DPoP proof iat is outside the accepted window"
        if claims.get("ath") != _ath(token_text):
            return "the DPoP proof is not for this access token (ath)"
        if key.kid != token.jkt:
            return "the DPoP key is not the key the access token is bound to (jkt)"
        jti = claims.get("jti")
        if not isinstance(jti, str) or not 0 < len(jti) <= 256:
            return "the DPoP proof has no jti"
        if not self._replay.check_and_store(f"{key.kid}:{jti}", now + self._window, now):
            return "the DPoP proof was already used (jti replay)"
        return None
