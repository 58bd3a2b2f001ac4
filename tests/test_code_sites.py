"""A code raised anywhere in ``src/`` is in the table of the package whose error carries it.

Each package's ``test_codes.py`` scans its own source; this scan covers the places that
raise another package's error (the conformance runner's handlers raise ``vxp.VxpError``,
``pxp.PxpError``, ...), which no single package's scan sees.

Private imports: ``_ppcodes.CodedError`` is the shared base every package's error class
derives from; the scan uses it to find those classes in each ``<package>.errors`` module.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from _ppcodes import CodedError, CodeTable
from tests.codecheck import ROOT

PACKAGES = ("handoff", "parley", "ppbind", "ppstore", "pxp", "vxp")


def _tables() -> dict[str, CodeTable]:
    """Each error class name of the distribution, mapped to its package's code table."""
    tables: dict[str, CodeTable] = {}
    for package in PACKAGES:
        errors = importlib.import_module(f"{package}.errors")
        for name, value in vars(errors).items():
            if not (inspect.isclass(value) and issubclass(value, CodedError)):
                continue
            first = list(inspect.signature(value.__init__).parameters)[1]
            if first == "code":  # LedgerError(reason, ...) carries its code itself
                tables[name] = errors.CODES
    return tables


def literal_sites() -> list[tuple[str, str, str]]:
    """Every ``<Error>("literal", ...)`` call in ``src/``: (class name, code, file:line)."""
    tables = _tables()
    sites = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            first = node.args[0]
            if name in tables and isinstance(first, ast.Constant) and isinstance(first.value, str):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                sites.append((name, first.value, where))
    return sites


def test_every_literal_code_is_in_its_table() -> None:
    """No raise site anywhere in the source names a code its error's table lacks."""
    tables = _tables()
    unknown = [
        f"{where}: {cls}({code!r})"
        for cls, code, where in literal_sites()
        if code not in tables[cls]
    ]
    assert not unknown, "\n".join(unknown)


def test_the_scan_reaches_other_packages_sites() -> None:
    """The scan sees the conformance runner's handlers, which raise the protocols' errors."""
    places = {where.split(":")[0] for _, _, where in literal_sites()}
    assert any(p.startswith(str(Path("src") / "ppcheck")) for p in places)
