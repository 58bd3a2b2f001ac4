"""Strict parsing of one record line: I-JSON (RFC 7493) on top of RFC 8259.

A record that two parsers could read differently is refused: duplicate member names,
lone surrogates, non-finite numbers and integers outside ``±(2**53 - 1)`` are ``parse``
errors rather than silently resolved one way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .errors import HandoffError

__all__ = [
    "MAX_RECORD_BYTES",
    "MAX_SAFE_INTEGER",
    "check_json_value",
    "copy_json",
    "parse_line",
    "parse_stored",
    "text_size",
]

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer I-JSON (and therefore JCS) represents exactly."""
MAX_DEPTH = 64
"""How deep a record may nest (objects, arrays and member names), on every path."""
MAX_RECORD_BYTES = 1 << 20
"""The largest record, in bytes of UTF-8: 1 MiB (docs/spec/handoff.md §13, ours).

Record text longer than this is refused before it is parsed, and so is a record whose
canonical (JCS) form, what every store writes, is longer (``parse``/``too_large``). The
command line reads a records file or standard input line by line and counts each line
without its line end (LF, or CR LF)."""


def text_size(text: str | bytes) -> int:
    """The length of ``text`` in bytes of UTF-8 (what the size limit counts)."""
    if isinstance(text, str) and not text.isascii():  # isascii() is O(1) for str
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text)


class _RefusedError(ValueError):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise _RefusedError(
                    "duplicate_member", f"member {name!r} appears twice in one object"
                )
            seen.add(name)
    return obj


def _int(text: str) -> int:
    value = int(text)
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    raise _RefusedError("number_range", f"integer {text[:40]} is outside the I-JSON safe range")


def _float(text: str) -> float:
    value = float(text)
    if math.isfinite(value):
        return value
    raise _RefusedError("number_range", f"number {text[:40]} does not fit an IEEE 754 double")


def _constant(text: str) -> Any:
    raise _RefusedError("json_syntax", f"{text} is not JSON")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_int=_int, parse_float=_float, parse_constant=_constant
)


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def parse_line(line: str | bytes, *, where: str = "the record") -> dict[str, Any]:
    """Parse one JSON text strictly and return it; it must be a JSON object.

    Raises :class:`HandoffError` with code ``parse`` and reason ``json_syntax``,
    ``duplicate_member``, ``number_range``, ``lone_surrogate`` or ``not_object``.
    """
    if isinstance(line, bytes | bytearray):
        if len(line) > MAX_RECORD_BYTES:  # refused before it is decoded
            raise _too_large(where)
        try:
            text = bytes(line).decode("utf-8")
        except UnicodeDecodeError:
            raise HandoffError(
                "parse", f"{where} is not valid UTF-8", reason="json_syntax"
            ) from None
    elif isinstance(line, str):
        text = line
    else:
        raise HandoffError("parse", f"{where} is not text", reason="json_syntax")
    if len(text) > MAX_RECORD_BYTES // 4 and text_size(text) > MAX_RECORD_BYTES:
        raise _too_large(where)
    return _parse(text, where)


def parse_stored(body: str, *, where: str = "the record") -> dict[str, Any]:
    """Parse a row a store holds, as :func:`parse_line` does but under the limit of the
    rows' time: 1 Mi **characters** (before issue 25 the limit counted characters, and a
    store is append-only: a row it admitted then must stay readable; docs/spec/handoff.md
    §13). Every row written since is within :data:`MAX_RECORD_BYTES` anyway."""
    if len(body) > MAX_RECORD_BYTES:
        raise HandoffError(
            "parse", f"{where} is longer than {MAX_RECORD_BYTES} characters", reason="too_large"
        )
    return _parse(body, where)


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        # the documented ``raw_decode`` reads a record that is exactly one value without
        # ``decode``'s two whitespace scans; anything else (surrounding whitespace, junk,
        # a syntax error) goes through ``decode`` for its answer. The undocumented C
        # scanner (``scan_once``) bought no more over this than noise, and about 3% of
        # admission (bench/bench_handoff_json.py): below the 20% an internal must earn.
        try:
            value, end = _DECODER.raw_decode(text)
        except json.JSONDecodeError:
            end = -1
        if end != len(text):
            value = _DECODER.decode(text)
    except _RefusedError as exc:
        raise HandoffError("parse", f"{where}: {exc}", reason=exc.reason) from None
    except (ValueError, RecursionError) as exc:
        raise HandoffError(
            "parse", f"{where} is not JSON ({str(exc)[:80]})", reason="json_syntax"
        ) from None
    if ("\\u" in text or not text.isascii()) and _has_lone_surrogate(value):
        raise HandoffError("parse", f"{where} holds a lone surrogate", reason="lone_surrogate")
    if not isinstance(value, dict):
        raise HandoffError("parse", f"{where} is not a JSON object", reason="not_object")
    if text.count("{") + text.count("[") > MAX_DEPTH // 2:
        # only text with that many brackets can nest too deep: the same walk as for objects
        check_json_value(value, where=where)
    return value


def _too_large(where: str) -> HandoffError:
    return HandoffError(
        "parse", f"{where} is longer than {MAX_RECORD_BYTES} bytes", reason="too_large"
    )


def check_json_value(value: Any, *, where: str = "the record", depth: int = 0) -> None:
    """Check that an already-parsed ``value`` is I-JSON (as :func:`parse_line` would accept).

    Used for records handed over as Python objects rather than text.
    """
    if depth > MAX_DEPTH:
        raise HandoffError(
            "parse", f"{where} nests deeper than {MAX_DEPTH} levels", reason="json_syntax"
        )
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise HandoffError(
                "parse", f"{where} holds an integer outside the safe range", reason="number_range"
            )
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise HandoffError("parse", f"{where} holds a non-finite number", reason="number_range")
        return
    if isinstance(value, str):
        if _has_lone_surrogate(value):
            raise HandoffError("parse", f"{where} holds a lone surrogate", reason="lone_surrogate")
        return
    if isinstance(value, list | tuple):
        for item in value:
            check_json_value(item, where=where, depth=depth + 1)
        return
    if isinstance(value, Mapping):
        for name, item in value.items():
            if not isinstance(name, str):
                raise HandoffError(
                    "parse", f"{where} has a member name that is not a string", reason="json_syntax"
                )
            check_json_value(name, where=where, depth=depth + 1)
            check_json_value(item, where=where, depth=depth + 1)
        return
    raise HandoffError(
        "parse", f"{where} holds a {type(value).__name__}, which is not JSON", reason="json_syntax"
    )


def copy_json(value: Any) -> Any:
    """Return a deep copy of an I-JSON value (objects become dicts, arrays lists)."""
    if isinstance(value, Mapping):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [copy_json(v) for v in value]
    return value
