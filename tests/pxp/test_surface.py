"""The public surface of :mod:`pxp`: at most 40 top-level names, every public name
documented, one public home per name (issue 25)."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import pxp

PUBLIC = ("pxp", "pxp.wire", "pxp.ledger", "pxp.rules", "pxp.errors", "pxp.postgres")


def _modules() -> list[ModuleType]:
    return [importlib.import_module(name) for name in PUBLIC]


def test_the_top_level_holds_at_most_40_names() -> None:
    assert len(pxp.__all__) <= 40
    assert len(set(pxp.__all__)) == len(pxp.__all__)


def test_the_package_docstring_starts_with_the_five_things_and_a_quick_start() -> None:
    doc = pxp.__doc__ or ""
    assert "The five things you most likely want" in doc
    assert "Quick start::" in doc


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_is_documented(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__, name
    for attr in module.__all__:
        value = getattr(module, attr)
        if inspect.isclass(value) or inspect.isroutine(inspect.unwrap(value)):
            assert inspect.getdoc(value), f"{name}.{attr} has no docstring"
        else:  # a constant: an attribute docstring right after its definition
            assert _constant_documented(attr), f"{name}.{attr} is not documented"


def _constant_documented(attr: str) -> bool:
    source_dir = Path(pxp.__file__).parent
    for path in sorted(source_dir.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        found = re.search(rf"^{attr}(: [^=]+)? = ", source, re.M)
        if found is not None:
            rest = source[found.start() :]
            block = rest.split("\n\n")[0] if "(\n" not in rest.split("\n")[0] else rest
            end = re.search(r"^[)}\]]\n", block, re.M)
            tail = block[end.end() :] if end is not None else block.split("\n", 1)[1]
            return tail.lstrip().startswith('"""')
    return False


def test_every_name_has_one_public_home() -> None:
    """A name lives in one public module; only the top level re-exports names that a public
    submodule defines (the three error classes of :mod:`pxp.errors`)."""
    homes: dict[int, list[str]] = {}
    for module in _modules():
        for attr in module.__all__:
            value = getattr(module, attr)
            if isinstance(value, int | str):  # small ints and strings are shared objects
                continue
            homes.setdefault(id(value), []).append(f"{module.__name__}.{attr}")
    for paths in homes.values():
        if len(paths) == 1:
            continue
        assert len(paths) == 2, paths
        top = [p for p in paths if p.count(".") == 1]
        assert len(top) == 1, paths
        value = eval(paths[0], {"pxp": pxp})  # noqa: S307 - our own dotted names
        assert value.__module__ in PUBLIC, paths


@pytest.mark.parametrize("module", ["pxp", "pxp.postgres"])
def test_import_loads_neither_the_server_nor_its_extras(module: str) -> None:
    """``import pxp`` stays light, and so does the PostgreSQL stores' public home: psycopg
    is imported only when a store connects."""
    loaded = "sorted(m for m in sys.modules if m in ('mcp', 'uvicorn', 'pxp.server', 'psycopg'))"
    code = f"import sys, {module}; print({loaded})"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"
