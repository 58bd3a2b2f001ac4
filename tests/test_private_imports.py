"""Tests use the public API; a test file that reaches into a private module says why.

A test file (or test helper) under ``tests/`` that imports a private module of the
distribution (``pkg._mod``, ``from pkg import _mod``, or one of the private shared packages
``_ppcodes``, ``_ppschema``, ``_ppcli``) must carry, in its module docstring, a paragraph
that starts with ``Private imports:`` and gives the reason (a private oracle, a fast path
held to its oracle, a store's migration history, ...). And a name it takes from a private
module must not be one a public module exports: that name is imported from its public home.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from tests.public_surface import public_modules

TESTS = Path(__file__).resolve().parent
PACKAGES = ("handoff", "parley", "ppbind", "ppcheck", "ppstore", "pxp", "vxp")
SHARED = ("_ppcodes", "_ppschema", "_ppcli")
MARK = "Private imports:"


def _private_module(name: str) -> bool:
    parts = name.split(".")
    if parts[0] in SHARED:
        return True
    return parts[0] in PACKAGES and any(p.startswith("_") for p in parts[1:])


def private_imports(path: Path) -> list[tuple[str, list[str]]]:
    """Each private module the file imports, with the names it takes from it."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if _private_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _private_module(node.module):
                found.append((node.module, [a.name for a in node.names]))
            elif node.module in PACKAGES:
                found += [
                    (f"{node.module}.{a.name}", []) for a in node.names if a.name.startswith("_")
                ]
    return found


def _files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if p != Path(__file__).resolve())


def _reason(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    for paragraph in doc.split("\n\n"):
        text = " ".join(paragraph.split())
        if text.startswith(MARK):
            return text[len(MARK) :].strip()
    return ""


def _public_homes() -> dict[int, str]:
    homes: dict[int, str] = {}
    for package in PACKAGES:
        for module in public_modules(package):
            for name in module.__all__:
                value = getattr(module, name)
                if isinstance(value, str | int | float | bool | bytes | type(None)):
                    continue  # equal constants may be one object by interning
                homes.setdefault(id(value), f"{module.__name__}.{name}")
    return homes


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(TESTS)))
def test_private_imports_are_explained(path: Path) -> None:
    """A file that imports a private module gives its reason in its docstring."""
    imports = private_imports(path)
    if not imports:
        return
    reason = _reason(path)
    modules = sorted({m for m, _ in imports})
    assert len(reason.split()) >= 5, (
        f"{path.relative_to(TESTS)} imports {', '.join(modules)}: use the public API, or say "
        f"why in a '{MARK}' paragraph of the module docstring"
    )


def test_private_imports_never_shadow_a_public_home() -> None:
    """A name a public module exports is imported from there, not from its private module."""
    homes = _public_homes()
    wrong = []
    for path in _files():
        for module, names in private_imports(path):
            loaded = importlib.import_module(module)
            for name in names:
                value = getattr(loaded, name, None)
                if value is None or isinstance(value, str | int | float | bool | bytes):
                    continue
                if id(value) in homes:
                    wrong.append(
                        f"{path.relative_to(TESTS)}: {module}.{name} -> {homes[id(value)]}"
                    )
    assert not wrong, "\n".join(wrong)


def test_the_scan_sees_every_spelling(tmp_path: Path) -> None:
    """The scan finds all three spellings of a private import and ignores public ones."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import vxp._keys\nfrom parley._lean import u16_len\nfrom pxp import _room, wire\n"
        "from handoff import records\nimport _ppcodes\n",
        encoding="utf-8",
    )
    assert private_imports(probe) == [
        ("vxp._keys", []),
        ("parley._lean", ["u16_len"]),
        ("pxp._room", []),
        ("_ppcodes", []),
    ]
