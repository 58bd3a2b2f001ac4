"""Frames (SPEC.md section 2): parse and serialize NDJSON, build replies.

A frame is one JSON object carrying ``"parley": 1`` and a string ``id``; a request has a
``verb``, a reply a ``kind`` and ``re``. :func:`parse_frame` refuses anything over
:data:`MAX_FRAME` bytes *before* parsing it, refuses duplicate keys, non-finite numbers and
deep nesting, and raises only :class:`ParleyError` (``bad_frame``); :func:`error_reply`
turns that into the ``ERROR`` frame a peer gets. Unknown fields are kept and ignored.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from .errors import ParleyError

__all__ = [
    "ERROR_CODES",
    "FINAL_KINDS",
    "MAX_FRAME",
    "REPLY_KINDS",
    "VERBS",
    "LineBuffer",
    "encode_frame",
    "error_reply",
    "parse_frame",
    "reply",
    "request_id",
]

MAX_FRAME = 1024 * 1024
"""The largest serialized frame, in bytes (1 MiB, newline excluded)."""

VERBS = ("HELLO", "ASK", "INTENT", "COMMIT", "UNDO", "EXPAND")
"""The request verbs of SPEC.md section 4."""

REPLY_KINDS = ("BRIEF", "ANSWER", "PROPOSALS", "CLARIFY", "RECEIPT", "ERROR", "EVENT")
"""The reply kinds of SPEC.md section 5."""

FINAL_KINDS = frozenset(REPLY_KINDS) - {"EVENT"}
"""Every reply kind except ``EVENT`` ends a request."""

ERROR_CODES = (
    "bad_frame",
    "unknown_capability",
    "invalid_params",
    "unauthorized",
    "forbidden",
    "consent_required",
    "not_found",
    "expired",
    "conflict",
    "limit",
    "unavailable",
    "internal",
)
"""The closed set of wire error codes (SPEC.md section 7)."""

MAX_ID = 256
"""**Ours:** the longest frame id accepted, in characters."""

_MAX_DEPTH = 64


def _bad(message: str, reason: str) -> ParleyError:
    return ParleyError("bad_frame", message, reason=reason)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # only then look for the repeated key, to name it
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _bad(f"the frame repeats the key {key[:40]!r}", "duplicate_key")
            seen.add(key)
    return out


def _constant(name: str) -> Any:
    raise _bad(f"the frame holds {name}, which is not JSON", "not_json")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 would become inf, which no JSON peer can carry
        raise _bad(f"the frame holds the number {text[:40]}, too large to be finite", "not_json")
    return value


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


_ENVELOPE = ("id", "re", "verb", "kind", "code")


def well_formed(text: str) -> str:
    """``text`` with each lone UTF-16 surrogate as U+FFFD, as ``TextEncoder`` writes it.

    For Lens text on its way to bytes (a terminal, an MCP tool result): a fitted text cut
    through an emoji keeps half a pair, which has no UTF-8 form.
    """
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def escape_surrogates(json_text: str) -> str:
    """JSON text with each raw lone surrogate as its ``\\uXXXX`` escape (lossless).

    What ES2019 ``JSON.stringify`` writes; for JSON made with ``ensure_ascii=False``.
    """
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def _reply_body_only(value: object) -> bool:
    """True for a reply whose lone surrogates are all in its body, not its envelope."""
    return (
        isinstance(value, dict)
        and "kind" in value
        and "verb" not in value
        and not any(_lone_surrogate(value.get(name)) for name in _ENVELOPE)
    )


def _lone_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_lone_surrogate(item) for item in value)
    return False


# a string, or one that never ends (running to the end of the text, a lone final backslash
# included): every match attempt succeeds in one pass, so an unterminated string of escaped
# quotes is not rescanned from each escape (review F1: that was quadratic)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _depth_ok(text: str) -> bool:
    """True when no point of ``text`` is inside more than 64 open brackets (outside strings).

    Done by the C parts of ``re``, ``str`` and ``itertools`` rather than a character loop,
    so a 1 MiB frame costs a few times ``json.loads``: a text with at most 64 opening
    brackets passes at once; otherwise strings are cut out (an unterminated one runs to
    the end), everything but brackets is dropped, and the running depth is summed.
    """
    if text.count("[") + text.count("{") <= _MAX_DEPTH:
        return True
    bare = _STRING.sub("", text)  # a string that never ends takes the rest with it
    brackets = _NOT_BRACKET.sub("", bare)
    if len(brackets) <= _MAX_DEPTH:
        return True
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets))) <= _MAX_DEPTH


def parse_frame(data: bytes | str, *, limit: int = MAX_FRAME) -> dict[str, Any]:
    """Parse one frame (a line without its newline) into a dict; raise ``bad_frame``.

    The size check comes first (``too_large``), then UTF-8 (``not_utf8``), JSON
    (``not_json``, ``duplicate_key``, ``too_deep``), then the envelope: an object
    (``not_object``) with ``"parley": 1`` (``bad_version``), a non-empty string ``id`` of
    at most 256 characters (``bad_id``), and either a string ``verb`` or a string ``kind``
    plus ``re`` (``bad_envelope``). Whether the verb is known is the receiver's business.

    >>> parse_frame(b'{"parley":1,"id":"1","verb":"HELLO","x":2}')["verb"]
    'HELLO'
    """
    if not isinstance(data, (bytes, bytearray, str)):
        raise _bad("a frame is bytes or text", "not_json")
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > limit:
        raise _bad(f"the frame is {size} bytes, over the limit of {limit}", "too_large")
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise _bad("the frame is not valid UTF-8", "not_utf8") from None
    elif isinstance(data, str):
        text = data
    else:
        raise _bad("a frame is bytes or text", "not_json")
    text = text.rstrip("\r\n")
    if not _depth_ok(text):
        raise _bad(f"the frame nests deeper than {_MAX_DEPTH} levels", "too_deep")
    try:
        value = _DECODER.decode(text)
    except ParleyError:
        raise
    except (ValueError, RecursionError):
        raise _bad("the frame is not one JSON value", "not_json") from None
    if (
        (isinstance(data, str) and _SURROGATE.search(text))
        or (_ESCAPED_SURROGATE.search(text) and _lone_surrogate(value))
    ) and not _reply_body_only(value):
        # "\ud800" alone is JSON text but no Unicode string: a request holding one could
        # not be answered (not even as the `re` of an error), so it is refused here. A
        # reply may hold one in its body: a fitted text cut through an emoji (Lens counts
        # UTF-16 units, as the reference does)
        raise _bad("the frame holds a lone UTF-16 surrogate", "not_json")
    try:
        return check_envelope(value)
    except ParleyError as exc:
        exc.request_id = request_id(value)  # type: ignore[attr-defined]
        raise


def check_envelope(value: object) -> dict[str, Any]:
    """Check an already-parsed frame's envelope (see :func:`parse_frame`); return it."""
    if not isinstance(value, dict):
        raise _bad("a frame is a JSON object", "not_object")
    version = value.get("parley")
    if version != 1 or type(version) is not int:
        raise _bad('the frame must carry "parley": 1', "bad_version")
    ident = value.get("id")
    if not isinstance(ident, str) or not ident or len(ident) > MAX_ID:
        raise _bad(f"the frame id must be a string of 1 to {MAX_ID} characters", "bad_id")
    if "verb" in value:
        if not isinstance(value["verb"], str):
            raise _bad("the verb must be a string", "bad_envelope")
    elif "kind" in value:
        if not isinstance(value["kind"], str) or not isinstance(value.get("re"), (str, type(None))):
            raise _bad("a reply needs a string kind and re", "bad_envelope")
    else:
        raise _bad("a frame needs a verb (request) or a kind (reply)", "bad_envelope")
    return value


def encode_frame(frame: Mapping[str, Any], *, limit: int = MAX_FRAME) -> bytes:
    """Serialize a frame as one NDJSON line (compact JSON, UTF-8, trailing newline).

    Raises ``limit``/``too_large`` when the frame exceeds ``limit`` bytes and
    ``internal``/``not_json`` for a value JSON cannot carry. A lone UTF-16 surrogate in a
    string is written as its ``\\uXXXX`` escape, as ES2019 ``JSON.stringify`` writes it.
    """
    try:
        text = _ENCODER.encode(dict(frame))
    except (TypeError, ValueError, RecursionError):
        raise ParleyError("internal", "the frame is not JSON", reason="not_json") from None
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # a lone surrogate in a reply's body (a fitted text cut through an emoji) is
        # written as the escape ES2019 JSON.stringify writes; raw, it is no UTF-8 at all.
        # In an envelope (id, re, verb, kind, code) no peer would accept it.
        if any(_lone_surrogate(frame.get(name)) for name in _ENVELOPE):
            raise ParleyError("internal", "the frame is not JSON", reason="not_json") from None
        data = escape_surrogates(text).encode("utf-8")
    if len(data) > limit:
        raise ParleyError(
            "limit", f"the frame is {len(data)} bytes, over {limit}", reason="too_large"
        )
    return data + b"\n"


def request_id(data: object) -> str | None:
    """Best effort: the ``id`` of a (possibly broken) request, for the error's ``re``."""
    if isinstance(data, dict):
        ident = data.get("id")
        if isinstance(ident, str) and 0 < len(ident) <= MAX_ID:
            return ident
    return None


def reply(frame_id: str, re: str | None, kind: str, **body: Any) -> dict[str, Any]:
    """Build a reply frame ``{"parley": 1, "id", "re", "kind", ...body}``."""
    return {"parley": 1, "id": frame_id, "re": re, "kind": kind, **body}


def error_reply(
    frame_id: str,
    re: str | None,
    code: str,
    message: str,
    *,
    fix: list[dict[str, Any]] | None = None,
    need: list[Any] | None = None,
    consent: dict[str, Any] | None = None,
    retry: int | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """Build an ``ERROR`` reply; a code outside section 7 becomes ``internal``.

    ``reason`` (**Ours:**) travels beside ``code`` as the stable name of the failing check.
    """
    if code not in ERROR_CODES:
        code, message, reason = "internal", "the service failed to handle the request", None
    body: dict[str, Any] = {"code": code, "message": message}
    if reason is not None:
        body["reason"] = reason
    if fix:
        body["fix"] = fix
    if need:
        body["need"] = need
    if consent is not None:
        body["consent"] = consent
    body["retry"] = retry
    return reply(frame_id, re, "ERROR", **body)


class LineBuffer:
    """Split a byte stream into NDJSON lines, never holding more than ``limit`` + 1 bytes.

    :meth:`feed` returns the complete lines; a line that grows past ``limit`` is
    reported once as ``None`` (the caller answers ``bad_frame``/``too_large``) and its
    remaining bytes are skipped up to the next newline, so one oversized frame never
    costs more memory than the limit and never ends the connection.

    >>> buf = LineBuffer(limit=4)
    >>> buf.feed(b'ab\\ncdefgh')
    [b'ab', None]
    >>> buf.feed(b'ij\\nk\\n')
    [b'k']
    """

    def __init__(self, *, limit: int = MAX_FRAME) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._skipping = False

    @property
    def pending(self) -> bool:
        """True while part of a line (or an oversized line being skipped) is held."""
        return self._skipping or bool(self._buf)

    def rest(self) -> bytes | None:
        """At end of stream: the unterminated last line still held, or ``None``."""
        if self._skipping or not self._buf.strip():
            return None
        return bytes(self._buf)

    def feed(self, data: bytes) -> list[bytes | None]:
        """Add bytes; return the lines completed (``None`` for each oversized line)."""
        out: list[bytes | None] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._skipping:
                self._skipping = False
            else:
                self._buf += data[start:end]
                if len(self._buf) > self.limit:
                    out.append(None)
                elif self._buf.strip():
                    out.append(bytes(self._buf))
            self._buf.clear()
            start = end + 1
        if not self._skipping:
            self._buf += data[start:]
            if len(self._buf) > self.limit:
                out.append(None)
                self._buf.clear()
                self._skipping = True
        return out
