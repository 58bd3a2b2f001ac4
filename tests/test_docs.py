"""The documentation stays true: README and docs/ Python blocks run, quick starts pass.

Every fenced ``python`` block of README.md and of docs/**/*.md is executed, the blocks of
one file in order in one namespace, in a temporary working directory. A block fenced as
``python no-run`` is shown but not executed (for a snippet that needs a server).
Each package's module docstring quick start runs as a doctest, and every public name
has a docstring.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
import re
from pathlib import Path

import pytest

TOP = Path(__file__).resolve().parents[1]
PACKAGES = ("pxp", "handoff", "vxp", "parley", "ppcheck", "ppbind")
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

DOC_FILES = [TOP / "README.md", *sorted((TOP / "docs").rglob("*.md"))]


def python_blocks(path: Path) -> list[str]:
    """Return the runnable Python blocks of a Markdown file, in order."""
    return _BLOCK.findall(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", DOC_FILES, ids=[str(p.relative_to(TOP)) for p in DOC_FILES])
def test_markdown_python_blocks_run(path: Path, tmp_path: Path) -> None:
    blocks = python_blocks(path)
    if not blocks:
        pytest.skip("no python blocks")
    namespace: dict[str, object] = {"__name__": "__doc_block__"}
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        for index, block in enumerate(blocks):
            code = compile(block, f"{path.name}[block {index + 1}]", "exec")
            exec(code, namespace)  # noqa: S102 - documentation we wrote ourselves
    finally:
        os.chdir(old)


@pytest.mark.parametrize("package", PACKAGES)
def test_quick_start_doctest(package: str) -> None:
    module = importlib.import_module(package)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{package} has no runnable quick start"
    assert result.failed == 0


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_is_documented(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__doc__
    assert module.__doc__.strip()
    undocumented = []
    for name in module.__all__:
        obj = getattr(module, name)
        is_code = inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismethod(obj)
        if is_code and not (obj.__doc__ and obj.__doc__.strip()):
            undocumented.append(name)
    assert not undocumented, f"{package}: no docstring on {undocumented}"


@pytest.mark.parametrize("package", PACKAGES)
def test_all_names_exist(package: str) -> None:
    module = importlib.import_module(package)
    assert len(module.__all__) == len(set(module.__all__))
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.__all__ names missing {name}"


_FENCE = re.compile(r"^[ \t]*```[ \t]*(py|python|pycon|python3)\b.*$", re.MULTILINE | re.IGNORECASE)


@pytest.mark.parametrize("path", DOC_FILES, ids=[str(p.relative_to(TOP)) for p in DOC_FILES])
def test_no_python_block_is_silently_skipped(path: Path) -> None:
    # An indented fence, ```py or a typo would otherwise never run and never fail.
    text = path.read_text(encoding="utf-8")
    fences = [m.group(0) for m in _FENCE.finditer(text)]
    odd = [f for f in fences if f.rstrip() not in {"```python", "```python no-run"}]
    assert not odd, f"{path.name}: use ```python (run) or ```python no-run, not {odd}"
    runnable = sum(1 for f in fences if f.rstrip() == "```python")
    assert len(python_blocks(path)) == runnable
