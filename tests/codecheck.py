"""Helpers for each package's ``test_codes.py``: every code in a table is raised somewhere.

A code counts as raised when a vector of the package expects it (``error.code`` in
``vectors/<protocol>/*.json``) or when the package's test triggers it through the public API
(:func:`raises_code`). :func:`literal_codes` finds every code written as a literal at a raise
site in a package's source, so a test can hold that each is in the table (a code built at
run time is refused by the error constructor itself).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def vector_codes(protocol: str) -> set[str]:
    """The error codes the vectors of ``vectors/<protocol>/`` expect."""
    codes: set[str] = set()
    for path in sorted((ROOT / "vectors" / protocol).glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8")).get("tests", []):
            error = case.get("error")
            if isinstance(error, dict) and isinstance(error.get("code"), str):
                codes.add(error["code"])
    return codes


def literal_codes(package: str, class_names: set[str]) -> dict[str, list[str]]:
    """Map each literal code passed first to one of ``class_names`` in ``src/<package>`` to
    the places (``file:line``) that pass it."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "src" / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            first = node.args[0]
            if (
                name in class_names
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                found.setdefault(first.value, []).append(where)
    return found


def raises_code(call: Callable[[], object], error: type[BaseException], code: str) -> None:
    """Call ``call`` and assert it raises ``error`` with ``.code == code``."""
    with pytest.raises(error) as caught:
        call()
    got = getattr(caught.value, "code", None)
    assert got == code, f"raised {got!r}, expected {code!r}: {caught.value}"
