"""The compact parameter schema of SPEC.md section 4.1.1, and checking params against it.

A schema maps names to type strings (``base[[]][ — description]``, a name ending in ``?``
is optional), nested schemas (objects) or one-element lists holding an element schema
(arrays). :func:`check_params` checks exactly what that expresses: required names, base
types, enums and arrays, plus **Ours:** names the schema does not declare are refused.
Failures raise ``invalid_params`` carrying ``fix`` suggestions (RFC 7396 merge patches of
the request's params) wherever one can be computed mechanically.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ParleyError, ParleyProtocolError

__all__ = ["ParamsError", "check_params", "check_schema", "merge_patch"]

_BASES = frozenset({"string", "int", "number", "bool", "date", "datetime", "any"})
_DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")
_DATETIME = re.compile(
    r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?"
    r"([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$"
)
_MAX_DEPTH = 16
_MAX_FIXES = 3
_MAX_FIX = 16 * 1024  # **Ours:** a fix resending a bigger array is left out


class ParamsError(ParleyProtocolError):
    """``invalid_params`` with the ``fix`` list of SPEC.md section 7."""

    def __new__(
        cls, message: str, *, reason: str, fix: list[dict[str, Any]] | None = None
    ) -> ParamsError:
        """Always the wire code ``invalid_params``."""
        return super().__new__(cls, "invalid_params", message, reason=reason)

    def __init__(self, message: str, *, reason: str, fix: list[dict[str, Any]] | None = None):
        super().__init__("invalid_params", message, reason=reason)
        self.fix = list(fix or [])


@dataclass(frozen=True)
class _Type:
    base: str
    array: bool
    enum: tuple[str, ...] = field(default=())


def _parse_type(text: str) -> _Type:
    core = text.split(" — ", 1)[0].strip()
    array = core.endswith("[]")
    if array:
        core = core[:-2]
    if "|" in core:
        options = tuple(core.split("|"))
        if len(options) < 2 or not all(options):
            raise ParleyError("bad_argument", f"bad enum type {text!r}", reason="bad_schema")
        return _Type("enum", array, options)
    if core not in _BASES:
        raise ParleyError("bad_argument", f"unknown parameter type {text!r}", reason="bad_schema")
    return _Type(core, array)


def check_schema(schema: object, depth: int = 0) -> dict[str, Any]:
    """Check that ``schema`` is a well-formed compact params schema; return it."""
    if depth > _MAX_DEPTH or not isinstance(schema, dict):
        raise ParleyError("bad_argument", "a params schema is an object", reason="bad_schema")
    for name, value in schema.items():
        if not isinstance(name, str) or not name.rstrip("?"):
            raise ParleyError("bad_argument", "parameter names are strings", reason="bad_schema")
        if isinstance(value, str):
            _parse_type(value)
        elif isinstance(value, dict):
            check_schema(value, depth + 1)
        elif isinstance(value, list) and len(value) == 1:
            element = value[0]
            if isinstance(element, str):
                _parse_type(element)
            else:
                check_schema(element, depth + 1)
        else:
            raise ParleyError(
                "bad_argument", f"parameter {name!r} has no valid type", reason="bad_schema"
            )
    return schema


def _nest(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    patch: Any = value
    for part in reversed(path):
        patch = {part: patch}
    result: dict[str, Any] = patch
    return result


def _where(path: tuple[str, ...]) -> str:
    return "`" + ".".join(path) + "`"


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, int):
        return "an int"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _coerce(base: str, value: object) -> Any:
    """A mechanical repair of a scalar of the wrong type, or ``None``."""
    if isinstance(value, str) and len(value) <= 40:
        text = value.strip()
        if base == "int" and re.fullmatch(r"-?\d{1,15}", text):
            return int(text)
        if base == "number" and re.fullmatch(r"-?\d{1,15}(\.\d{1,15})?", text):
            return float(text) if "." in text else int(text)
        if base == "bool" and text.lower() in ("true", "false"):
            return text.lower() == "true"
    if base == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if base == "int" and isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return None


def _scalar(t: _Type, value: object, path: tuple[str, ...]) -> None:
    base = t.base
    ok = (
        base == "any"
        or (base == "string" and isinstance(value, str))
        or (base == "int" and type(value) is int)
        or (base == "number" and isinstance(value, (int, float)) and not isinstance(value, bool))
        or (base == "bool" and isinstance(value, bool))
        or (base == "date" and isinstance(value, str) and bool(_DATE.match(value)))
        or (base == "datetime" and isinstance(value, str) and bool(_DATETIME.match(value)))
        or (base == "enum" and isinstance(value, str) and value in t.enum)
    )
    if ok:
        return
    if base == "enum":
        fixes = [{"say": f"use {o}", "params": _nest(path, o)} for o in t.enum[:_MAX_FIXES]]
        raise ParamsError(
            f"{_where(path)} must be one of {', '.join(t.enum)}", reason="bad_enum", fix=fixes
        )
    if base in ("date", "datetime") and isinstance(value, str):
        shape = "YYYY-MM-DD" if base == "date" else "an RFC 3339 time like 2026-09-24T15:00:00Z"
        raise ParamsError(f"{_where(path)} must be {shape}", reason="bad_type")
    repaired = _coerce(base, value)
    fix = None if repaired is None else [{"say": f"send {base}", "params": _nest(path, repaired)}]
    raise ParamsError(
        f"{_where(path)} must be {'an' if base == 'int' else 'a'} {base}, not {_kind(value)}",
        reason="bad_type",
        fix=fix,
    )


def _typed(t: _Type, value: object, path: tuple[str, ...]) -> None:
    if t.array:
        if not isinstance(value, list):
            fix = None
            if value is not None and not isinstance(value, dict):
                fix = [{"say": "wrap it in a list", "params": _nest(path, [value])}]
            raise ParamsError(f"{_where(path)} must be an array", reason="bad_type", fix=fix)
        for index, item in enumerate(value):
            _scalar(t, item, (*path, str(index)))
        return
    _scalar(t, value, path)


def _check(schema: Mapping[str, Any], params: object, path: tuple[str, ...], depth: int) -> None:
    if not isinstance(params, dict):
        raise ParamsError(
            f"{_where(path) if path else 'params'} must be an object", reason="bad_type"
        )
    if depth > _MAX_DEPTH:
        raise ParamsError("params nest too deeply", reason="too_deep")
    known = {name.rstrip("?"): (name.endswith("?"), spec) for name, spec in schema.items()}
    extra = [name for name in params if name not in known]
    if extra:
        names = sorted(extra)[:_MAX_FIXES]
        shown = ", ".join(f"`{n[:40]}`" for n in names)
        fix = None
        if all(len(n) <= 64 for n in names):
            fix = [{"say": f"drop {shown}", "params": _nest(path, dict.fromkeys(names))}]
        raise ParamsError(f"unknown parameter {shown}", reason="unknown_param", fix=fix)
    for name, (optional, spec) in known.items():
        if name not in params:
            if optional:
                continue
            raise ParamsError(
                f"{_where((*path, name))} is required ({_describe(spec)})", reason="missing_param"
            )
        value = params[name]
        if optional and value is None:
            continue
        where = (*path, name)
        if isinstance(spec, str):
            _typed(_parse_type(spec), value, where)
        elif isinstance(spec, dict):
            _check(spec, value, where, depth + 1)
        else:
            element = spec[0]
            if not isinstance(value, list):
                raise ParamsError(f"{_where(where)} must be an array", reason="bad_type")
            for index, item in enumerate(value):
                at = (*where, str(index))
                if isinstance(element, str):
                    _typed(_parse_type(element), item, at)
                else:
                    _check(element, item, at, depth + 1)


def _describe(spec: Any) -> str:
    if isinstance(spec, str):
        return spec.split(" — ", 1)[0]
    return "an array" if isinstance(spec, list) else "an object"


def check_params(schema: Mapping[str, Any] | None, params: object) -> dict[str, Any]:
    """Check ``params`` against a compact schema; return them or raise :class:`ParamsError`.

    ``None`` as schema accepts any object. Missing params count as ``{}``.

    >>> check_params({"sku": "string", "qty?": "int"}, {"sku": "A1"})
    {'sku': 'A1'}
    >>> try:
    ...     check_params({"qty": "int"}, {"qty": "2"})
    ... except ParamsError as exc:
    ...     exc.fix
    [{'say': 'send int', 'params': {'qty': 2}}]
    """
    if params is None:
        params = {}
    if schema is None:
        if not isinstance(params, dict):
            raise ParamsError("params must be an object", reason="bad_type")
        return params
    try:
        _check(schema, params, (), 0)
    except ParamsError as exc:
        # RFC 7396 cannot patch one array element: a fix for `items.1.n` must resend the
        # whole `items` array with that element repaired, or applying it would turn the
        # array into an object
        fixes = [{**f, "params": _whole_arrays(params, f["params"])} for f in exc.fix]
        exc.fix = [f for f in fixes if len(json.dumps(f["params"], default=str)) <= _MAX_FIX]
        raise
    assert isinstance(params, dict)
    return params


def _whole_arrays(actual: Any, patch: Any) -> Any:
    """Rewrite a patch whose path steps into arrays by index into a valid merge patch."""
    if not isinstance(patch, dict):
        return patch
    if isinstance(actual, list):
        items = list(actual)
        for index, sub in patch.items():
            at = int(index)
            items[at] = merge_patch(items[at], _whole_arrays(items[at], sub))
        return items
    base = actual if isinstance(actual, dict) else {}
    return {key: _whole_arrays(base.get(key), sub) for key, sub in patch.items()}


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7396 JSON merge patch to ``target`` (neither input is modified)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
