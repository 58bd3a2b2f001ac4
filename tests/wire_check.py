"""A run-time check that a JSON value has the shape a ``TypedDict`` declares.

The typed wire objects (``parley.wire.Reply``, ``pxp.wire.Brief``, ``handoff.wire.ObservedItem``,
…) are
only annotations: nothing checks them at run time. These tests hold them to what the
library really returns by walking the declaration: every required key present, no key
the declaration lacks, and every value of the declared type (``Literal`` values exactly,
unions by trying each member, ``list[X]`` and ``dict[str, X]`` item by item).
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin

_TYPED_DICT_META = type(typing.TypedDict("_Probe", {}))


def is_typed_dict(tp: Any) -> bool:
    """Whether ``tp`` is a ``TypedDict`` class."""
    return isinstance(tp, _TYPED_DICT_META)


def problems(
    value: Any, tp: Any, where: str = "$", *, open_types: tuple[Any, ...] = ()
) -> list[str]:
    """Return every way ``value`` differs from ``tp`` (empty: it conforms).

    An object of a ``TypedDict`` in ``open_types`` may hold members beyond those declared.
    """
    origin = get_origin(tp)

    def inner(v: Any, t: Any, w: str) -> list[str]:
        return problems(v, t, w, open_types=open_types)

    if tp is Any:
        return []
    if origin in (NotRequired, Required):
        return inner(value, get_args(tp)[0], where)
    if origin is Literal:
        allowed = get_args(tp)
        ok = any(value == a and type(value) is type(a) for a in allowed)
        return [] if ok else [f"{where}: {value!r} is not one of {allowed!r}"]
    if origin in (Union, types.UnionType):
        found = [inner(value, member, where) for member in get_args(tp)]
        if any(not p for p in found):
            return []
        return [f"{where}: {value!r} matches no member of {tp}: {found}"]
    if tp is type(None):
        return [] if value is None else [f"{where}: {value!r} is not None"]
    if is_typed_dict(tp):
        return _typed_dict_problems(value, tp, where, open_types)
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__} is not a list"]
        (item,) = get_args(tp)
        return [p for n, v in enumerate(value) for p in inner(v, item, f"{where}[{n}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__} is not an object"]
        key_type, item = get_args(tp)
        out = [f"{where}: key {k!r} is not a {key_type}" for k in value if type(k) is not key_type]
        return out + [p for k, v in value.items() for p in inner(v, item, f"{where}.{k}")]
    if tp is float:
        ok = type(value) in (int, float)
        return [] if ok else [f"{where}: {value!r} is not a number"]
    if tp in (int, str, bool):
        return [] if type(value) is tp else [f"{where}: {value!r} is not a {tp.__name__}"]
    raise AssertionError(f"wire_check cannot check {tp!r}")  # extend it when a new shape appears


def _typed_dict_problems(value: Any, tp: Any, where: str, open_types: tuple[Any, ...]) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {type(value).__name__} is not an object ({tp.__name__})"]
    hints = typing.get_type_hints(tp, include_extras=True)
    out = [f"{where}: {tp.__name__} lacks {k!r}" for k in tp.__required_keys__ if k not in value]
    if tp not in open_types:
        out += [f"{where}: {tp.__name__} has no member {k!r}" for k in value if k not in hints]
    for key, item in value.items():
        if key in hints:
            out += problems(item, hints[key], f"{where}.{key}", open_types=open_types)
    return out
