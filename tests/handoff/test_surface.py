"""The public surface: a small top level, documented public submodules, one home per name."""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import pkgutil
from pathlib import Path
from types import ModuleType

import handoff

SRC = Path(handoff.__file__).resolve().parent


def _public_modules() -> list[ModuleType]:
    names = [m.name for m in pkgutil.iter_modules([str(SRC)]) if not m.name.startswith("_")]
    return [handoff, *(importlib.import_module(f"handoff.{n}") for n in sorted(names))]


def _attribute_docs() -> set[str]:
    """Names assigned at module level in src/handoff and followed by a docstring."""
    found: set[str] = set()
    for path in SRC.glob("*.py"):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node, nxt in itertools.pairwise(body):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            documented = (
                isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
                and nxt.value.value.strip()
            )
            if documented:
                found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


def test_the_top_level_holds_at_most_40_names() -> None:
    assert len(handoff.__all__) <= 40
    assert len(set(handoff.__all__)) == len(handoff.__all__)


def test_the_package_docstring_starts_with_the_five_things() -> None:
    doc = handoff.__doc__ or ""
    assert "The five things you most likely want" in doc
    assert ">>> import" in doc  # the runnable quick start (tests/test_docs.py runs it)


def test_every_public_module_has_a_docstring_and_all() -> None:
    modules = _public_modules()
    assert {m.__name__ for m in modules} >= {
        "handoff",
        "handoff.errors",
        "handoff.records",
        "handoff.wire",
        "handoff.digests",
        "handoff.evidence",
        "handoff.stores",
        "handoff.acts",
        "handoff.decisions",
        "handoff.markdown",
        "handoff.schemas",
    }
    for module in modules:
        assert (module.__doc__ or "").strip(), module.__name__
        assert module.__all__, module.__name__
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_every_public_name_has_a_docstring() -> None:
    attribute_docs = _attribute_docs()
    missing = []
    for module in _public_modules():
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isroutine(obj) or hasattr(obj, "__wrapped__"):
                if not (obj.__doc__ or "").strip():
                    missing.append(f"{module.__name__}.{name}")
            elif name not in attribute_docs:
                missing.append(f"{module.__name__}.{name}")
    assert not missing, f"no docstring on {missing}"


def test_each_name_has_one_public_home() -> None:
    homes: dict[int, list[str]] = {}
    objects: dict[int, object] = {}
    for module in _public_modules():
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, str | int | float | bool):
                continue  # equal constants may be interned; names are checked below
            homes.setdefault(id(obj), []).append(f"{module.__name__}.{name}")
            objects[id(obj)] = obj
    twice = []
    for key, paths in homes.items():
        if len(paths) == 1:
            continue
        owner = getattr(objects[key], "__module__", "")
        # a name defined in a public module may be re-exported at the top (the errors)
        if not (owner in {p.rpartition(".")[0] for p in paths} and len(paths) == 2):
            twice.append(paths)
    assert not twice, f"names with two public homes: {twice}"
    names: dict[str, list[str]] = {}
    for module in _public_modules():
        for name in module.__all__:
            names.setdefault(name, []).append(module.__name__)
    shared = {n: m for n, m in names.items() if len(m) > 1}
    assert set(shared) <= {"HandoffError", "HandoffUsageError", "HandoffProtocolError"}, shared


def test_the_error_classes_are_re_exported_from_handoff_errors() -> None:
    for name in ("HandoffError", "HandoffUsageError", "HandoffProtocolError"):
        assert getattr(handoff, name) is getattr(handoff.errors, name)
        assert getattr(handoff, name).__module__ == "handoff.errors"
