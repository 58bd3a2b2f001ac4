"""JSON Schemas of :mod:`parley`, loaded from the installed wheel or from a checkout.

The wheel carries ``schemas/parley/`` as ``parley/_schemas/`` (hatchling ``force-include``);
an editable install or a plain checkout has no such folder, so the repository's
``schemas/parley/`` is used instead.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ParleyError

if TYPE_CHECKING:  # jsonschema loads with the first validator, not with `import parley`
    from jsonschema import Draft202012Validator
    from referencing import Registry

__all__ = ["load_schema", "schema_names", "validator"]


def _root() -> Traversable:
    packaged = resources.files(__package__ or "parley") / "_schemas"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / "schemas" / "parley"
    if checkout.is_dir():
        return checkout
    raise ParleyError(
        "schemas_missing", "the parley JSON Schemas are neither installed nor in a checkout"
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
    """Return the relative names of every schema shipped for :mod:`parley`, sorted."""
    return tuple(sorted(_walk(_root())))


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """Return the parsed schema ``name`` (a relative path such as ``"card.json"``)."""
    if name not in schema_names():
        raise ParleyError("schema_unknown", f"no parley schema is named {name!r}")
    node = _root()
    for part in name.split("/"):
        node = node / part
    loaded: dict[str, Any] = json.loads(node.read_text(encoding="utf-8"))
    return loaded


@functools.cache
def _registry() -> Registry[Any]:
    from referencing import Registry, Resource

    pairs: list[tuple[str, Resource[Any]]] = []
    for n in schema_names():
        contents = load_schema(n)
        resource = Resource.from_contents(contents)
        pairs.append((n, resource))
        own_id = contents.get("$id")
        if isinstance(own_id, str) and own_id != n:
            pairs.append((own_id, resource))
    return Registry().with_resources(pairs)


@functools.cache
def validator(name: str) -> Draft202012Validator:
    """Return a compiled JSON Schema 2020-12 validator for schema ``name``.

    Relative ``$ref`` values resolve against the other schemas of this package by name.
    """
    from jsonschema import Draft202012Validator

    schema = load_schema(name)
    base = dict(schema)
    base.setdefault("$id", name)
    return Draft202012Validator(base, registry=_registry())
