"""Frozen dataclass values built straight from a dict of their fields, for hot paths.

``assemble(cls, fields)`` gives the instance that ``cls(**fields)`` gives, without the
frozen ``__init__``'s one ``object.__setattr__`` call per field. Only for a dataclass
with no ``__slots__`` and no ``__post_init__``, and only with every field given, already
checked: the tests hold each use to what ``dataclasses.replace`` (which runs
``__init__``) rebuilds from it.
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["assemble"]

T = TypeVar("T")
_setattr = object.__setattr__  # a frozen dataclass refuses its own __setattr__


def assemble(cls: type[T], fields: dict[str, Any]) -> T:
    """An instance of the frozen dataclass ``cls`` whose fields are exactly ``fields``."""
    value = object.__new__(cls)
    _setattr(value, "__dict__", fields)
    return value
