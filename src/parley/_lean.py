"""Lean notation (SPEC.md section 9.1): the Lens rendering of any JSON value.

Also holds the ECMAScript number formatting (``Number::toString``) and the compact JSON of
``JSON.stringify`` that the reply renderings use, and the UTF-16 helpers that budget
fitting measures with. Every function here is pure and deterministic.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar, cast

from .errors import ParleyError

__all__ = [
    "check_keys",
    "compact_json",
    "copy_json",
    "depth_guard",
    "entry_lines",
    "is_scalar",
    "item_lines",
    "js_items",
    "js_keys",
    "js_number",
    "json_quote",
    "lean",
    "lean_key",
    "lean_lines",
    "scalar_text",
    "table_keys",
    "u16_len",
    "u16_slice",
]

# The bare rule of SPEC.md section 9.1, in one expression: only these characters, no
# space at either end, and not a reserved word or a JSON number.
_BARE_CHARS = r"A-Za-z0-9_@./+\-:() '!?&%$#*=<>~^"
_NUMBER_PATTERN = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_NUMBER = re.compile(_NUMBER_PATTERN)
_RESERVED = frozenset({"-", "true", "false", "null"})
_BARE = re.compile(rf"(?!(?:-|true|false|null|{_NUMBER_PATTERN})\Z)(?! )[{_BARE_CHARS}]+(?<! )")
NOT_BARE_CHAR = re.compile(f"[^{_BARE_CHARS}]")
"""One character that the bare rule never allows (for measuring prefixes of a string)."""
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')
_JSON_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_SAFE_INT = 2**53
_SCALAR_TYPES = (str, int, float, bool, type(None))


def _not_json(value: object, where: str) -> ParleyError:
    return ParleyError(
        "bad_frame",
        f"{where} is a {type(value).__name__}, which is not a JSON value",
        reason="not_json",
    )


_F = TypeVar("_F", bound=Callable[..., Any])


def depth_guard(fn: _F) -> _F:
    """Turn a RecursionError (a value nested thousands deep) into our own error."""

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise ParleyError(
                "bad_frame", "the value is nested too deeply to render", reason="too_deep"
            ) from None

    return cast(_F, guarded)


# ---------------------------------------------------------------- property order

_INDEX_MAX = 2**32 - 2


def _is_index(key: object) -> bool:
    """Whether ``key`` is an ECMAScript array index (``"0"`` .. ``"4294967294"``)."""
    return (
        type(key) is str
        and 0 < len(key) <= 10
        and key.isascii()
        and key.isdigit()
        and (key[0] != "0" or len(key) == 1)
        and int(key) <= _INDEX_MAX
    )


def js_keys(obj: dict[Any, Any]) -> list[Any]:
    """Return the keys of ``obj`` in ECMAScript property order.

    A JavaScript object (what ``JSON.parse`` returns, so what the reference renders)
    lists its array-index keys (``"0"`` to ``"4294967294"``, no leading zeros) first, in
    ascending numeric order, and every other key after them in insertion order. So
    ``{"b": 1, "2": 2, "1": 3}`` iterates ``1, 2, b`` there, in ``Object.keys`` and in
    ``JSON.stringify`` alike.
    """
    keys = list(obj)
    for key in keys:
        if type(key) is str and "0" <= key[:1] <= "9":
            break
    else:
        return keys
    index = sorted((k for k in keys if _is_index(k)), key=int)
    if not index:
        return keys
    return index + [k for k in keys if not _is_index(k)]


def js_items(obj: dict[Any, Any]) -> Any:
    """Return the ``(key, value)`` pairs of ``obj`` in ECMAScript property order."""
    for key in obj:
        if type(key) is str and "0" <= key[:1] <= "9" and _is_index(key):
            break
    else:
        return obj.items()
    return [(k, obj[k]) for k in js_keys(obj)]


# ---------------------------------------------------------------- numbers


def _float_text(x: float) -> str:
    """ECMAScript Number::toString for a finite float, from Python's shortest repr."""
    if 1e-4 <= x < 1e16 or -1e16 < x <= -1e-4:
        # Both print the shortest digits that round-trip, and in this range both print
        # them without an exponent; JavaScript drops the ".0" of an integral value.
        text = repr(x)
        return text[:-2] if text[-2:] == ".0" else text
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    mantissa, _, exp_text = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + (int(exp_text) if exp_text else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    n = point
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = ("+" if e >= 0 else "-") + str(abs(e))
        text = (digits if k == 1 else digits[0] + "." + digits[1:]) + "e" + exp
    return sign + text


def js_number(value: int | float) -> str | None:
    """Return ECMAScript ``Number::toString(value)``, or ``None`` when it is not finite.

    Integers beyond 2**53 render as the double that JavaScript would have parsed.
    """
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        if -_SAFE_INT <= value <= _SAFE_INT:
            return str(int(value))
        try:
            value = float(value)
        except OverflowError:
            return None
    if not math.isfinite(value):
        return None
    return _float_text(float(value))


# ---------------------------------------------------------------- strings


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    known = _ESCAPES.get(char)
    return known if known is not None else f"\\u{ord(char):04x}"


def quote(text: str) -> str:
    """Quote ``text`` for lean notation, as canonical JSON does (SPEC.md section 10).

    Only ``"``, ``\\`` and C0 controls are escaped; everything else is written as it is,
    a lone UTF-16 surrogate included (a string cut through an emoji by budget fitting),
    exactly as the reference's ``quote`` walks a string.
    """
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def json_quote(text: str) -> str:
    """Quote ``text`` as ECMAScript ``JSON.stringify`` does: lone surrogates escaped too."""
    return '"' + _JSON_NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def _bare(text: str) -> bool:
    return _BARE.fullmatch(text) is not None


def lean_key(text: str) -> str:
    """Render a string (a value or an object key) bare when the bare rule allows, else quoted."""
    return text if _bare(text) else quote(text)


def is_scalar(value: object) -> bool:
    """Return whether ``value`` is a JSON scalar (null, boolean, number or string)."""
    return type(value) in _SCALAR_TYPES or isinstance(value, (str, int, float))


def scalar_text(value: Any) -> str:
    """Render a JSON scalar in lean notation (``null`` and non-finite numbers give ``-``)."""
    kind = type(value)
    if kind is str:
        return value if _BARE.fullmatch(value) is not None else quote(value)
    if kind is int:
        if -_SAFE_INT <= value <= _SAFE_INT:
            return str(value)
        text = js_number(value)
        return "-" if text is None else text
    if kind is float:
        return _float_text(value) if math.isfinite(value) else "-"
    if value is None:
        return "-"
    if kind is bool:
        return "true" if value else "false"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return scalar_text(str(value))
    if isinstance(value, (int, float)):
        return scalar_text(int(value) if isinstance(value, int) else float(value))
    raise _not_json(value, "a scalar")


# ---------------------------------------------------------------- compact JSON


@depth_guard
def compact_json(value: Any) -> str:
    """Return exactly what ECMAScript ``JSON.stringify(value)`` returns for a JSON value.

    Insertion order, no whitespace, numbers per ``Number::toString`` (non-finite ones as
    ``null``), lone surrogates escaped. Raises :class:`ParleyError` for a non-JSON value.
    """
    parts: list[str] = []
    _compact(value, parts.append)
    return "".join(parts)


def _compact(value: Any, out: Callable[[str], None]) -> None:
    if isinstance(value, dict):
        out("{")
        first = True
        for key, item in js_items(value):
            if not isinstance(key, str):
                raise _not_json(key, "an object key")
            if not first:
                out(",")
            first = False
            out(json_quote(key))
            out(":")
            _compact(item, out)
        out("}")
    elif isinstance(value, list):
        out("[")
        for index, item in enumerate(value):
            if index:
                out(",")
            _compact(item, out)
        out("]")
    elif isinstance(value, str):
        out(json_quote(value))
    elif value is None:
        out("null")
    elif isinstance(value, bool):
        out("true" if value else "false")
    elif isinstance(value, (int, float)):
        text = js_number(value)
        out("null" if text is None else text)
    else:
        raise _not_json(value, "a value")


def copy_json(value: Any) -> Any:
    """Return a copy of a JSON value that shares no list or object with it.

    Unlike ``copy.deepcopy`` it takes one stack frame per level of nesting, so it copies
    whatever :func:`lean` can render. Wrap calls in :func:`depth_guard`.
    """
    if isinstance(value, dict):
        copied: dict[Any, Any] = {}
        for key, item in value.items():
            copied[key] = copy_json(item) if isinstance(item, (dict, list)) else item
        return copied
    if isinstance(value, list):
        items: list[Any] = []
        for item in value:
            items.append(copy_json(item) if isinstance(item, (dict, list)) else item)
        return items
    return value


# ---------------------------------------------------------------- UTF-16


def u16_len(text: str) -> int:
    """Return the length of ``text`` in UTF-16 code units (JavaScript ``length``)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def u16_slice(text: str, start: int, stop: int | None = None) -> str:
    """Return JavaScript ``text.slice(start, stop)`` (UTF-16 code units; may split a pair)."""
    if text.isascii():
        return text[start:stop]
    units = text.encode("utf-16-le", "surrogatepass")
    end = None if stop is None else 2 * stop
    return units[2 * start : end].decode("utf-16-le", "surrogatepass")


# ---------------------------------------------------------------- lean


def table_keys(items: list[Any]) -> list[str] | None:
    """Return the shared keys when ``items`` qualifies for table form, else ``None``.

    Table form needs every element to be a non-empty object with the same keys in the
    same order and only scalar values.
    """
    first = items[0] if items else None
    if not isinstance(first, dict) or not first:
        return None
    keys = js_keys(first)
    for key in keys:
        if type(key) is not str:
            return None  # not JSON: the list-item rendering raises not_json for it
    # Without array-index keys, JavaScript order is insertion order for every row alike.
    order = js_keys if any(_is_index(k) for k in keys) else list
    scalar_types = _SCALAR_TYPES
    for item in items:
        if type(item) is not dict and not isinstance(item, dict):
            return None
        if order(item) != keys:
            return None
        for value in item.values():
            if type(value) not in scalar_types and not is_scalar(value):
                return None
    return keys


def _scalar_list(items: list[Any]) -> str:
    return "[" + ", ".join(scalar_text(item) for item in items) + "]"


def check_keys(obj: dict[Any, Any]) -> dict[Any, Any]:
    """Return ``obj`` when every key is a string; raise ``bad_frame``/``not_json`` otherwise."""
    for key in obj:
        if not isinstance(key, str):
            raise _not_json(key, "an object key")
    return obj


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise _not_json(key, "an object key")
    return lean_key(key)


def entry_lines(key_text: str, value: Any, indent: int, out: list[str]) -> None:
    """Append the lines of the object entry ``key_text: value`` at ``indent`` to ``out``.

    ``key_text`` is already rendered (bare or quoted).
    """
    pad = "  " * indent
    if is_scalar(value):
        out.append(f"{pad}{key_text}: {scalar_text(value)}")
    elif isinstance(value, dict):
        if not value:
            out.append(f"{pad}{key_text}: {{}}")
            return
        out.append(f"{pad}{key_text}:")
        for key, item in js_items(value):
            entry_lines(_check_key(key), item, indent + 1, out)
    elif isinstance(value, list):
        _list_lines(key_text, value, indent, out)
    else:
        raise _not_json(value, f"the value of {key_text}")


def _list_lines(key_text: str, value: list[Any], indent: int, out: list[str]) -> None:
    pad = "  " * indent
    if not value:
        out.append(f"{pad}{key_text}: []")
        return
    if all(is_scalar(item) for item in value):
        out.append(f"{pad}{key_text}: {_scalar_list(value)}")
        return
    keys = table_keys(value)
    if keys is not None:
        header = ",".join(lean_key(k) for k in keys)
        out.append(f"{pad}{key_text}[{len(value)}]{{{header}}}:")
        row_pad = pad + "  "
        if any(_is_index(k) for k in keys):
            for row in value:
                out.append(row_pad + ",".join([scalar_text(row[k]) for k in keys]))
        else:  # every row lists its values in key order
            for row in value:
                out.append(row_pad + ",".join([scalar_text(v) for v in row.values()]))
        return
    out.append(f"{pad}{key_text}[{len(value)}]:")
    for item in value:
        item_lines(item, indent + 1, out)


def item_lines(item: Any, indent: int, out: list[str]) -> None:
    """Append the lines of one mixed-list element (``- …``) at ``indent`` to ``out``."""
    pad = "  " * indent
    if is_scalar(item):
        out.append(f"{pad}- {scalar_text(item)}")
    elif isinstance(item, dict):
        if not item:
            out.append(f"{pad}- {{}}")
            return
        start = len(out)
        for key, value in js_items(item):
            entry_lines(_check_key(key), value, indent + 1, out)
        out[start] = f"{pad}- " + out[start][2 * (indent + 1) :]
    elif isinstance(item, list):
        if all(is_scalar(x) for x in item):
            out.append(f"{pad}- {_scalar_list(item)}")
        else:
            out.append(f"{pad}- {compact_json(item)}")
    else:
        raise _not_json(item, "a list element")


def lean_lines(value: Any, out: list[str]) -> None:
    """Append the top-level lean rendering of ``value`` to ``out`` (indent 0)."""
    if is_scalar(value):
        out.append(scalar_text(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        for key, item in js_items(value):
            entry_lines(_check_key(key), item, 0, out)
    elif isinstance(value, list):
        _list_lines("items", value, 0, out)
    else:
        raise _not_json(value, "the value")


@depth_guard
def lean(value: Any) -> str:
    """Render any JSON value in lean notation (SPEC.md section 9.1, NOTES.md).

    Objects render one entry per line in insertion order, uniform lists of flat objects
    as tables, other lists with ``- `` items; a top-level list renders under the key
    ``items``. Raises :class:`ParleyError` (``bad_frame``/``not_json``) for a value that
    is not JSON (a set, bytes, a non-string object key, ...).

    >>> print(lean({"user": {"name": "Ana", "tags": ["a", "b"]}, "n": 1e21}))
    user:
      name: Ana
      tags: [a, b]
    n: 1e+21
    """
    out: list[str] = []
    lean_lines(value, out)
    return "\n".join(out)
