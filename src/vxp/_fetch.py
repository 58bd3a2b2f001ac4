"""Fetching a proof in the native profile: ``GET /v1/requests/{request_id}/proof`` with DPoP.

Transport-free: :class:`ProofEndpoint` takes a request (method, URL, headers) as data and
returns a :class:`FetchResponse`. The access token is sender-constrained (RFC 9449): the
``DPoP`` header carries a proof JWT signed by the key whose RFC 7638 thumbprint the token
is bound to (``jkt``), for this method and URL (``htm``, ``htu``), fresh (``iat``),
unused (``jti``) and for this token (``ath``). A missing request and someone else's
request get the same ``404 request_not_found``.
"""

from __future__ import annotations

import copy
import hashlib
import heapq
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from ._codec import b64url_encode
from ._jws import check_header, parse_compact, sign_compact
from ._keys import KeyLike, resolve_key
from ._time import whole_seconds
from .errors import VxpError, VxpProtocolError

__all__ = [
    "AccessToken",
    "FetchResponse",
    "MemoryReplayCache",
    "ProofEndpoint",
    "ReplayCache",
    "SqliteReplayCache",
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
    """An HTTP answer as data: status, headers and a JSON body.

    A report, like :class:`vxp.Verdict`: it has no truth value (``if answer:`` would pass a
    401); read :attr:`status`."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        """Refused: an answer is a report, never a truth value; read :attr:`status`."""
        raise TypeError("a FetchResponse is a report; read .status")

    def to_json(self) -> dict[str, Any]:
        """Return ``{"status", "headers", "body"}``."""
        return {"status": self.status, "headers": dict(self.headers), "body": self.body}


class ReplayCache(Protocol):
    """Remembers DPoP ``jti`` values until they could no longer pass the ``iat`` window."""

    def store_once(self, key: str, until: int, now: int) -> None:
        """Atomically remember ``key`` until ``until`` (forgetting keys whose ``until`` is
        before ``now``); raise :class:`~vxp.VxpProtocolError` ``dpop_replay`` if ``key`` is
        already remembered (nothing changes then)."""
        ...


def replay_arguments(key: object, until: object, now: object) -> tuple[str, int, int]:
    """The arguments of :meth:`ReplayCache.store_once`, checked: ``key`` a string
    (``argument_invalid``), ``until`` and ``now`` integer seconds (``now_invalid``)."""
    if not isinstance(key, str):
        raise VxpError("argument_invalid", "a replay key is a string")
    return str.__str__(key), whole_seconds(until, "until"), whole_seconds(now, "now")


def replayed(key: str) -> VxpError:
    """The error of a replayed key."""
    return VxpError("dpop_replay", f"the DPoP proof {key!r} was already used (jti replay)")


class MemoryReplayCache:
    """A :class:`ReplayCache` in process memory, purged as entries expire.

    It forgets everything when the process restarts: a deployment with several processes,
    or one that restarts within a window, supplies a shared persistent :class:`ReplayCache`.
    """

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}
        self._expiry: list[tuple[int, str]] = []
        self._lock = threading.Lock()

    def store_once(self, key: str, until: int, now: int) -> None:
        """Remember ``key`` until ``until``; ``dpop_replay`` if it is already there."""
        key, until, now = replay_arguments(key, until, now)
        with self._lock:
            while self._expiry and self._expiry[0][0] < now:
                _, old = heapq.heappop(self._expiry)
                if old in self._seen and self._seen[old] < now:
                    del self._seen[old]
            if key in self._seen:
                raise replayed(key)
            self._seen[key] = until
            heapq.heappush(self._expiry, (until, key))


class SqliteReplayCache:
    """A :class:`ReplayCache` in a SQLite file: it survives restarts and is shared by every
    process that opens the same file (each :meth:`store_once` is one write transaction)."""

    def __init__(self, path: str) -> None:
        from ppstore import StoreError, migrate_sqlite

        if not isinstance(path, str | os.PathLike):
            raise VxpError("replay_store_unavailable", "a SQLite replay cache needs a file path")
        from ._log import SQLITE_MIGRATIONS  # one VXP file may hold the log and this cache

        try:
            self._db = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, timeout=30.0
            )
            migrate_sqlite(self._db, "vxp", SQLITE_MIGRATIONS)
        except (sqlite3.Error, StoreError) as exc:
            raise VxpError(
                "replay_store_unavailable", f"cannot open the replay store {path!r}: {exc}"
            ) from exc
        self._lock = threading.Lock()

    def store_once(self, key: str, until: int, now: int) -> None:
        """Remember ``key`` until ``until``; ``dpop_replay`` if it is already there."""
        key, until, now = replay_arguments(key, until, now)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("DELETE FROM dpop_jti WHERE until < ?", (now,))
                added = self._db.execute(
                    "INSERT OR IGNORE INTO dpop_jti (key, until) VALUES (?, ?)", (key, until)
                ).rowcount
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        if added != 1:
            raise replayed(key)

    def close(self) -> None:
        """Close the database file."""
        self._db.close()


_DEFAULT_PORTS = {"https": 443, "http": 80}


def _origin(value: object) -> tuple[str, str] | None:
    """Return (``scheme://host[:port]``, path) normalised as RFC 3986 §6.2.2-6.2.3 allow.

    Scheme and host are lowercased, a default port is dropped and an empty path is ``/``;
    the path is kept byte for byte. A URL with userinfo, no host or a bad port is ``None``.
    """
    if not isinstance(value, str):
        return None
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in _DEFAULT_PORTS or not host or "@" in parts.netloc:
        return None
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    return f"{scheme}://{netloc}", parts.path or "/"


def _htu(value: object) -> str | None:
    """The normalised ``htu`` of a URL (no query, no fragment), or ``None`` if it has none."""
    origin = _origin(value)
    return None if origin is None else origin[0] + origin[1]


def _ath(token: str) -> str:
    return b64url_encode(hashlib.sha256(token.encode("ascii")).digest())


def make_dpop_proof(
    key: KeyLike,
    *,
    method: str,
    url: str,
    iat: datetime | int,
    jti: str,
    access_token: str | None = None,
) -> str:
    """Return a DPoP proof JWT (RFC 9449 §4.2) for ``method`` and ``url`` signed by ``key``.

    ``iat`` is an aware :class:`~datetime.datetime` or integer seconds since the epoch (a
    naive datetime is ``time_naive``, a usage error)."""
    iat = whole_seconds(iat, "iat")
    if not isinstance(method, str) or not isinstance(jti, str):
        raise VxpError("argument_invalid", "the method and the jti are strings")
    if access_token is not None and not isinstance(access_token, str):
        raise VxpError("argument_invalid", "the access token is a string or None")
    resolved = resolve_key(key, "DPoP key")
    header = {"alg": resolved.alg, "jwk": resolved.public_jwk, "typ": DPOP_TYP}
    htu = _htu(url)
    if htu is None:
        raise VxpError("url_invalid", "the DPoP proof's URL is not an http(s) URL without userinfo")
    payload: dict[str, Any] = {
        "htm": method,
        "htu": htu,
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


def _not_found() -> FetchResponse:
    """The one answer for a missing request and for someone else's (a fresh object each time)."""
    return FetchResponse(404, {"error": "request_not_found"})


def _header(headers: object, name: str) -> str | bool | None:
    """The one value of header ``name`` (case-insensitive); ``False`` when repeated."""
    if not isinstance(headers, Mapping):
        return None
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
        origin = _origin(base_url)
        if (
            origin is None
            or not origin[0].startswith("https://")
            or origin[1] != "/"
            or urlsplit(base_url).query
        ):
            raise VxpError("base_url_invalid", "the endpoint's base URL is https://host only")
        self.base_url = origin[0]
        self._tokens = tokens
        self._packages = packages
        if replay is not None and not callable(getattr(replay, "store_once", None)):
            raise VxpError(
                "replay_store_unavailable", "replay is a ReplayCache (it has no store_once)"
            )
        self._replay: ReplayCache = replay if replay is not None else MemoryReplayCache()
        self._window = window

    def _token(self, value: str) -> AccessToken | None:
        if callable(self._tokens):
            return self._tokens(value)
        return self._tokens.get(value)

    def handle(
        self, *, method: str, url: str, headers: Mapping[str, Any], now: datetime | int
    ) -> FetchResponse:
        """Answer one request; never raises for bad input (the answer says what was wrong).

        ``now`` is the server's clock: an aware :class:`~datetime.datetime` or integer
        seconds since the epoch. A naive datetime (``time_naive``) or anything else
        (``now_invalid``) is the caller's mistake: :class:`~vxp.VxpUsageError`.
        """
        now = whole_seconds(now)
        if method != "GET":
            return FetchResponse(405, {"error": "method_not_allowed"}, {"Allow": "GET"})
        origin = _origin(url)
        parts = urlsplit(url) if origin is not None else None
        if (
            parts is None
            or origin is None
            or origin[0] != self.base_url
            or not parts.path.startswith(_PATH_PREFIX)
            or not parts.path.endswith(_PATH_SUFFIX)
        ):
            return FetchResponse(404, {"error": "not_found"})
        request_id = parts.path[len(_PATH_PREFIX) : -len(_PATH_SUFFIX)]
        if not request_id or "/" in request_id:
            return FetchResponse(404, {"error": "not_found"})
        auth = _header(headers, "authorization")
        proof = _header(headers, "dpop")
        # the scheme name is case-insensitive (RFC 9110 §11.1); one space, then the token
        if not isinstance(auth, str) or auth[:5].lower() != "dpop " or len(auth) <= 5:
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
            return _not_found()
        # a deep copy: a consumer changing the body must never change later answers
        return FetchResponse(
            200,
            copy.deepcopy(dict(entry[1])),
            {"Content-Type": "application/json", "Cache-Control": "no-store"},
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
        if not key.signature_valid(parsed.signing_input, parsed.signature):
            return "the DPoP proof signature does not verify"
        claims = parsed.payload
        if claims.get("htm") != method:
            return "the DPoP proof is for another HTTP method (htm)"
        # Compared after RFC 3986 syntax- and scheme-based normalisation (host case, default
        # port), as RFC 9449 §4.3 recommends; the path must match exactly.
        if _htu(claims.get("htu")) != f"{self.base_url}{parts.path}":
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
        # Remember the jti for as long as this proof could still pass the iat window: a proof
        # dated up to ``window`` seconds ahead stays acceptable until iat + window.
        until = max(iat, now) + self._window
        try:
            store: Callable[[str, int, int], object] = self._replay.store_once
            answer = store(f"{key.kid}:{jti}", until, now)
        except VxpProtocolError as exc:
            if exc.code != "dpop_replay":
                raise
            return "the DPoP proof was already used (jti replay)"
        if answer is not None:
            # fail closed: a cache written for the old contract answers False on a replay
            raise VxpError(
                "replay_store_unavailable",
                "ReplayCache.store_once returns None, or raises dpop_replay on a replay",
            )
        return None
