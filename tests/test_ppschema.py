"""The shared schema loader: each package's shipped schemas, one behaviour for all five.

Every package (pxp, handoff, vxp, parley, ppbind) loads its own JSON Schemas through
``_ppschema``: the same lookup (the wheel's ``<pkg>/_schemas`` or the checkout's
``schemas/<pkg>``), the same copies handed out, the same cached validators, and the
package's own error for a name it does not ship.

Private imports: this file tests ``_ppschema`` itself, the private loader behind every
package's ``load_schema``; users reach it only through those functions.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from _ppschema import SchemaSet

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pxp", "handoff", "vxp", "parley", "ppbind")


def _schemas(package: str) -> ModuleType:
    return importlib.import_module(f"{package}._schemas")


def _error_root(package: str) -> type[BaseException]:
    names = {"pxp": "PxpError", "handoff": "HandoffError", "vxp": "VxpError"}
    names |= {"parley": "ParleyError", "ppbind": "BindingError"}
    found: type[BaseException] = getattr(importlib.import_module(package), names[package])
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_ships_the_schemas_of_its_checkout_folder(package: str) -> None:
    shipped = sorted(
        p.relative_to(ROOT / "schemas" / package).as_posix()
        for p in (ROOT / "schemas" / package).rglob("*.json")
    )
    assert list(_schemas(package).schema_names()) == shipped


def _file(package: str, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (ROOT / "schemas" / package / name).read_text(encoding="utf-8")
    )
    return loaded


def _scramble(node: object) -> None:
    """Empty every object and array of ``node`` in place (what a careless caller might do)."""
    if isinstance(node, dict):
        for child in node.values():
            _scramble(child)
        node.clear()
    elif isinstance(node, list):
        for child in node:
            _scramble(child)
        node.clear()


def _bare(schema: Any) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in ("$id", "$schema")}


@pytest.mark.parametrize("package", PACKAGES)
def test_a_loaded_schema_is_the_callers_copy(package: str) -> None:
    """Changing what load_schema returned changes neither the next load nor a validator."""
    schemas = _schemas(package)
    for name in schemas.schema_names():
        _scramble(schemas.load_schema(name))
    for name in schemas.schema_names():
        assert schemas.load_schema(name) == _file(package, name), name
        assert _bare(schemas.validator(name).schema) == _bare(_file(package, name)), name


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("name", ["no-such.json", "", None, 7, ["card.json"], {"a": 1}])
def test_a_name_the_package_does_not_ship_is_its_own_schema_unknown(
    package: str, name: object
) -> None:
    schemas = _schemas(package)
    for call in (schemas.load_schema, schemas.validator):
        with pytest.raises(_error_root(package)) as caught:
            call(name)
        assert caught.value.code == "schema_unknown"  # type: ignore[attr-defined]


@pytest.mark.parametrize("package", PACKAGES)
def test_validators_are_compiled_once(package: str) -> None:
    schemas = _schemas(package)
    name = schemas.schema_names()[-1]
    assert schemas.validator(name) is schemas.validator(name)


@pytest.mark.parametrize("package", ["pxp", "vxp", "parley", "ppbind"])
def test_relative_refs_resolve_against_the_packages_own_files(package: str) -> None:
    schemas = _schemas(package)
    for name in schemas.schema_names():
        schemas.validator(name).check_schema(schemas.load_schema(name))
        # resolving every $ref: validating anything walks the reachable refs it needs
        list(schemas.validator(name).iter_errors({}))


def _demo_set(tmp_path: Path) -> SchemaSet:
    folder = tmp_path / "schemas" / "demo"
    (folder / "vectors").mkdir(parents=True)
    (folder / "item.json").write_text(
        '{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",'
        ' "required": ["a", "b"], "properties": {"a": {"type": "integer"},'
        ' "b": {"$ref": "vectors/b.json"}}}',
        encoding="utf-8",
    )
    (folder / "vectors" / "b.json").write_text(
        '{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}',
        encoding="utf-8",
    )
    return SchemaSet(
        "demo",
        missing=lambda: LookupError("missing"),
        unknown=lambda name: KeyError(name),
        checkout=tmp_path / "schemas" / "demo",
    )


def test_first_error_is_the_first_by_path_then_message(tmp_path: Path) -> None:
    demo = _demo_set(tmp_path)
    assert demo.names() == ("item.json", "vectors/b.json")
    assert demo.first_error("item.json", {"a": 1, "b": "x"}) is None
    error = demo.first_error("item.json", {"b": 5, "a": "x"})
    assert error is not None
    assert list(error.absolute_path) == ["a"]
    assert "integer" in error.message
    top = demo.first_error("item.json", {"b": "x"})
    assert top is not None
    assert list(top.absolute_path) == []


def test_the_error_factories_decide_what_is_raised(tmp_path: Path) -> None:
    demo = _demo_set(tmp_path)
    with pytest.raises(KeyError):
        demo.load("nope.json")
    gone = SchemaSet(
        "demo",
        missing=lambda: LookupError("no schemas"),
        unknown=lambda name: KeyError(name),
        checkout=tmp_path / "nowhere",
    )
    with pytest.raises(LookupError, match="no schemas"):
        gone.names()
