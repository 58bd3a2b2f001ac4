"""JSON Schemas of :mod:`handoff`, loaded from the installed wheel or from a checkout.

The wheel carries ``schemas/handoff/`` as ``handoff/_schemas/`` (hatchling ``force-include``);
an editable install or a plain checkout has no such folder, so the repository's
``schemas/handoff/`` is used instead.
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from referencing import Registry, Resource

from .errors import HandoffError

__all__ = ["load_schema", "schema_names", "validator"]


def _root() -> Traversable:
    packaged = resources.files(__package__ or "handoff") / "_schemas"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / "schemas" / "handoff"
    if checkout.is_dir():
        return checkout
    raise HandoffError(
        "schemas_missing", "the handoff JSON Schemas are neither installed nor in a checkout"
    )


def _walk(node: Traversable, prefix: str = "") -> list[str]:
    names: list[str] = []
    for child in node.iterdir():
        if child.is_dir():
            names.extend(_walk(child, f"{prefix}{child.name}/"))
        elif child.name.endswith(".json"):
            names.append(prefix + child.name)
    return names


@functools.cache
def schema_names() -> tuple[str, ...]:
    """Return the relative names of every schema shipped for :mod:`handoff`, sorted."""
    return tuple(sorted(_walk(_root())))


def load_schema(name: str) -> dict[str, Any]:
    """Return a fresh copy of the parsed schema ``name`` (a relative path such as
    ``"record.json"``; :func:`schema_names` lists them).

    A name that is not one raises :class:`~handoff.HandoffUsageError` ``schema_unknown``.
    The copy is the caller's to change: the package keeps its own.
    """
    return copy.deepcopy(own_schema(name))


@functools.cache
def own_schema(name: str) -> dict[str, Any]:
    """The parsed schema ``name``, read once and shared inside the package (never changed)."""
    if not isinstance(name, str) or name not in schema_names():
        raise HandoffError("schema_unknown", f"no handoff schema is named {name!r}")
    node = _root()
    for part in name.split("/"):
        node = node / part
    loaded: dict[str, Any] = json.loads(node.read_text(encoding="utf-8"))
    return loaded


@functools.cache
def _registry() -> Registry[Any]:
    pairs: list[tuple[str, Resource[Any]]] = []
    for n in schema_names():
        contents = own_schema(n)
        resource = Resource.from_contents(contents)
        pairs.append((n, resource))
        own_id = contents.get("$id")
        if isinstance(own_id, str) and own_id != n:
            pairs.append((own_id, resource))
    return Registry().with_resources(pairs)


def validator(name: str) -> Any:
    """Return the strict JSON Schema 2020-12 validator (``jsonschema``) for schema ``name``.

    Relative ``$ref`` values resolve against the other schemas of this package by name.
    It is strict where plain ``jsonschema`` is lenient: ``1.0`` is not an integer and
    ``pattern`` follows ECMA-262 (``$`` matches only at the end); see
    :func:`handoff._validate.boundary_validator`.
    """
    from ._validate import boundary_validator

    return boundary_validator(name)
