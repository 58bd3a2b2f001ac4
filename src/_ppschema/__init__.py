"""The JSON Schemas one package ships: found, read, compiled once, the first error reported.

Every protocol package (:mod:`pxp`, :mod:`handoff`, :mod:`vxp`, :mod:`parley`,
:mod:`ppbind`) ships its schemas: the wheel carries ``schemas/<pkg>/`` as
``<pkg>/_schemas/`` (hatchling ``force-include``); an editable install or a plain checkout
has no such folder, so the repository's ``schemas/<pkg>/`` is used instead. Each package's
private ``_schemas`` module holds one :class:`SchemaSet` and passes it the package's own
errors, so this module raises nothing of its own:

.. code-block:: python

    _SET = SchemaSet(
        "pxp",
        missing=lambda: PxpError("schemas_missing", "…"),
        unknown=lambda name: PxpError("schema_unknown", f"no pxp schema is named {name!r}"),
    )
    schema_names, load_schema, validator = _SET.names, _SET.load, _SET.validator

What is cached is derived from the package's own files only (DESIGN.md, "Speed without
hidden state"): the parsed files, the ``referencing`` registry and one compiled validator
per schema. A caller gets a fresh copy from :meth:`SchemaSet.load`, so changing it changes
neither a later load nor a validator. ``jsonschema`` is imported on first use.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

__all__ = ["SchemaSet"]


class SchemaSet:
    """The schemas of one package: names, fresh copies, compiled validators, first error.

    ``missing()`` builds the error raised when the package's schemas are neither installed
    nor in a checkout; ``unknown(name)`` the error for a ``name`` the package does not ship
    (anything but one of :meth:`names`, including a name that is not a string).
    ``checkout`` overrides the checkout folder (default: ``schemas/<package>`` beside the
    ``src`` folder that holds the package).
    """

    __slots__ = (
        "_checkout",
        "_files",
        "_missing",
        "_names",
        "_registry",
        "_root",
        "_unknown",
        "_validators",
        "package",
    )

    def __init__(
        self,
        package: str,
        *,
        missing: Callable[[], Exception],
        unknown: Callable[[object], Exception],
        checkout: Path | None = None,
    ) -> None:
        self.package = package
        self._missing = missing
        self._unknown = unknown
        self._checkout = checkout
        self._root: Traversable | None = None
        self._names: tuple[str, ...] | None = None
        self._files: dict[str, dict[str, Any]] = {}
        self._registry: Registry[Any] | None = None
        self._validators: dict[str, Draft202012Validator] = {}

    def _folder(self) -> Traversable:
        if self._root is None:
            self._root = self._find()
        return self._root

    def _find(self) -> Traversable:
        if self._checkout is None:
            here = resources.files(self.package)
            packaged = here / "_schemas"
            if packaged.is_dir():
                return packaged
            checkout = Path(str(here)).resolve().parent.parent / "schemas" / self.package
        else:
            checkout = self._checkout
        if checkout.is_dir():
            return checkout
        raise self._missing()

    def names(self) -> tuple[str, ...]:
        """Return the relative names of every schema the package ships (``"card.json"``,
        ``"vectors/op.input.json"``), sorted."""
        if self._names is None:
            self._names = tuple(sorted(_walk(self._folder())))
        return self._names

    def check(self, name: object) -> str:
        """Return ``name`` if the package ships a schema of that name; raise ``unknown(name)``."""
        if not isinstance(name, str) or name not in self.names():
            raise self._unknown(name)
        return name

    def _parsed(self, name: str) -> dict[str, Any]:
        """The parsed file (cached: never handed to a caller)."""
        parsed = self._files.get(name)
        if parsed is None:
            node = self._folder()
            for part in name.split("/"):
                node = node / part
            parsed = json.loads(node.read_text(encoding="utf-8"))
            assert isinstance(parsed, dict), f"{self.package} schema {name} is not an object"
            self._files[name] = parsed
        return parsed

    def own(self, name: object) -> dict[str, Any]:
        """Return the parsed schema ``name``, read once and shared inside the package.

        For the package's own code only: the value is never handed to a caller and never
        changed (callers get :meth:`load`'s copy).
        """
        return self._parsed(self.check(name))

    def load(self, name: object) -> dict[str, Any]:
        """Return the parsed schema ``name`` (a relative path such as ``"card.json"``).

        Each call returns a fresh copy: changing it changes nothing else.
        """
        return copy.deepcopy(self._parsed(self.check(name)))

    def registry(self) -> Registry[Any]:
        """Return the ``referencing`` registry of every schema, by name and by ``$id``."""
        if self._registry is None:
            from referencing import Registry, Resource

            pairs: list[tuple[str, Resource[Any]]] = []
            for n in self.names():
                contents = self._parsed(n)
                resource = Resource.from_contents(contents)
                pairs.append((n, resource))
                own_id = contents.get("$id")
                if isinstance(own_id, str) and own_id != n:
                    pairs.append((own_id, resource))
            self._registry = Registry().with_resources(pairs)
        return self._registry

    def validator(self, name: object) -> Draft202012Validator:
        """Return the compiled JSON Schema 2020-12 validator for schema ``name`` (built once).

        Relative ``$ref`` values resolve against the package's other schemas by name.
        """
        checked = self.check(name)
        found = self._validators.get(checked)
        if found is None:
            from jsonschema import Draft202012Validator

            base = copy.deepcopy(self._parsed(checked))
            base.setdefault("$id", checked)
            found = Draft202012Validator(base, registry=self.registry())
            self._validators[checked] = found
        return found

    def first_error(self, name: object, instance: object) -> ValidationError | None:
        """Return the first error of ``instance`` against schema ``name``, or ``None``.

        "First" is stable across runs: the least JSON path (its members compared as
        text), then the least message.
        """
        errors = self.validator(name).iter_errors(instance)
        return min(errors, key=_order, default=None)


def _order(error: ValidationError) -> tuple[list[str], str]:
    return [str(p) for p in error.absolute_path], error.message


def _walk(node: Traversable, prefix: str = "") -> list[str]:
    names: list[str] = []
    for child in node.iterdir():
        if child.is_dir():
            names.extend(_walk(child, f"{prefix}{child.name}/"))
        elif child.name.endswith(".json"):
            names.append(prefix + child.name)
    return names
