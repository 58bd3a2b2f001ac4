"""Helpers for each package's ``test_surface.py``: the public surface a user can hold.

A package's public modules are the package itself and every submodule whose name has no
leading underscore. :func:`undocumented` lists the names of a module's ``__all__`` without a
docstring (a class or function: its own ``__doc__``, and each public method, property and
dataclass field a class defines; a constant or type alias: the string literal right after its
assignment, an attribute docstring, in the package's source); :func:`two_homes` lists the
objects of a private module that two public modules both export (one public
home per name; a name defined in a public module, such as ``<pkg>.errors.<Pkg>Error``, may
also be re-exported at the top level).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import itertools
import pkgutil
import textwrap
from pathlib import Path
from types import ModuleType


def public_modules(package: str) -> list[ModuleType]:
    """The package and its public submodules (no leading underscore), imported."""
    root = importlib.import_module(package)
    found = [root]
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        found.append(importlib.import_module(info.name))
    return found


def _attribute_docstrings(package: str) -> set[str]:
    """Every name assigned at module level in the package's source with a string after it."""
    root = Path(importlib.import_module(package).__file__ or "").parent
    names: set[str] = set()
    for path in root.rglob("*.py"):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node, after in itertools.pairwise(body):
            documented = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
                and after.value.value.strip()
            )
            if not documented:
                continue
            if isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return names


def undocumented(module: ModuleType) -> list[str]:
    """The names of ``module.__all__`` that have no docstring of their own."""
    package = module.__name__.split(".")[0]
    attributes = _attribute_docstrings(package)
    missing = []
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value):
            doc = value.__dict__.get("__doc__")
            missing += [f"{module.__name__}.{name}.{m}" for m in _undocumented_members(value)]
        elif inspect.isroutine(value):
            doc = getattr(value, "__doc__", None)
        else:  # a constant or a type alias: its attribute docstring
            doc = "attribute" if name in attributes else None
        if not (isinstance(doc, str) and doc.strip()):
            missing.append(f"{module.__name__}.{name}")
    return missing


def _undocumented_members(cls: type) -> list[str]:
    """The public methods, properties and dataclass fields a class defines itself without a
    docstring (a field's is the string literal right after it in the class body)."""
    missing = []
    if dataclasses.is_dataclass(cls):
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
        assert isinstance(body, ast.ClassDef)
        documented = {
            node.target.id
            for node, after in itertools.pairwise(body.body)
            if isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        }
        own = {f.name for f in dataclasses.fields(cls)} & set(cls.__annotations__)
        missing += sorted(n for n in own - documented if not n.startswith("_"))
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, classmethod | staticmethod):
            member = member.__func__
        documented = bool((getattr(member, "__doc__", None) or "").strip())
        if (inspect.isroutine(member) or isinstance(member, property)) and not documented:
            missing.append(name)
    return missing


def _private(module_name: object) -> bool:
    return not isinstance(module_name, str) or any(
        p.startswith("_") for p in module_name.split(".")
    )


def two_homes(package: str) -> list[str]:
    """The objects of a private module exported under two public paths (``a.x``, ``a.b.x``)."""
    seen: dict[int, str] = {}
    twice = []
    for module in public_modules(package):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, str | int | float | bool | type(None)):
                continue  # equal constants may be the same object by interning
            here = f"{module.__name__}.{name}"
            if not _private(getattr(value, "__module__", None)):
                continue  # its home is the public module that defines it
            if id(value) in seen:
                twice.append(f"{seen[id(value)]} and {here}")
            else:
                seen[id(value)] = here
    return twice


def check_surface(package: str, modules: list[str]) -> None:
    """Hold the conventions of a package's surface: at most 40 top-level names, exactly the
    public ``modules`` (each with a docstring and an ``__all__``), every public name
    documented, one public home per name."""
    found = public_modules(package)
    top = found[0]
    assert len(top.__all__) <= 40, len(top.__all__)
    assert len(set(top.__all__)) == len(top.__all__)
    assert [m.__name__ for m in found] == modules
    for module in found:
        assert (module.__doc__ or "").strip(), module.__name__
        assert module.__all__, module.__name__
    missing = [n for m in found for n in undocumented(m)]
    assert not missing, missing
    assert not two_homes(package)


def check_five_things(module: ModuleType) -> None:
    """The docstring opens with the five things a user most likely wants (each exported),
    then a quick start that runs as a doctest."""
    import doctest

    paragraphs = (module.__doc__ or "").split("\n\n")
    assert paragraphs[1] == "The five things you most likely want:"
    wanted = [line.split("`")[1] for line in paragraphs[2].splitlines() if line.startswith("- :")]
    assert len(wanted) == 5, wanted
    assert all(name in module.__all__ for name in wanted), wanted
    assert paragraphs[3].startswith("Quick start")
    assert paragraphs[4].lstrip().startswith(">>> ")
    failures, tried = doctest.testmod(module, verbose=False, report=True)
    assert tried >= 4
    assert failures == 0
