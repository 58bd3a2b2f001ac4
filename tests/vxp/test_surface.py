"""The public surface of :mod:`vxp` (issue 25): at most 40 top-level names, every public name
documented, one public home per name, and each public module's quick start runs."""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import itertools
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import vxp

SRC = Path(vxp.__file__).resolve().parent
PUBLIC = sorted(
    f"vxp.{m.name}" for m in pkgutil.iter_modules([str(SRC)]) if not m.name.startswith("_")
)


def _module(name: str) -> Any:
    return importlib.import_module(name)


def _attribute_docstrings() -> set[str]:
    """Names assigned at module level in src/vxp with a string literal right after them."""
    found: set[str] = set()
    for path in SRC.glob("*.py"):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node, after in itertools.pairwise(body):
            targets = (
                [node.target]
                if isinstance(node, ast.AnnAssign)
                else node.targets
                if isinstance(node, ast.Assign)
                else []
            )
            documented = (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            )
            if documented:
                found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return found


def test_the_public_modules_are_the_documented_ones() -> None:
    assert PUBLIC == [
        "vxp.checkpoints",
        "vxp.codec",
        "vxp.errors",
        "vxp.fetch",
        "vxp.merkle",
        "vxp.sdjwt",
        "vxp.statements",
        "vxp.stores",
        "vxp.trust",
    ]
    for name in PUBLIC:
        assert getattr(vxp, name.split(".")[1]) is _module(name), f"import vxp gives {name}"


def test_the_top_level_has_at_most_forty_names() -> None:
    assert len(vxp.__all__) <= 40
    assert len(set(vxp.__all__)) == len(vxp.__all__)
    assert sorted(vxp.__all__) == sorted(vxp.__all__)  # (listed, each importable:)
    for name in vxp.__all__:
        assert hasattr(vxp, name), name


@pytest.mark.parametrize("name", ["vxp", *PUBLIC])
def test_every_public_name_has_a_docstring(name: str) -> None:
    module = _module(name)
    assert inspect.getdoc(module), f"{name} has no docstring"
    data_docs = _attribute_docstrings()
    for attr in module.__all__:
        value = getattr(module, attr)
        if inspect.isclass(value) or inspect.isroutine(value) or hasattr(value, "__wrapped__"):
            assert inspect.getdoc(value), f"{name}.{attr} has no docstring"
            if inspect.isclass(value):
                for member, obj in vars(value).items():
                    if not member.startswith("_") and inspect.isfunction(obj):
                        assert inspect.getdoc(obj), f"{name}.{attr}.{member} has no docstring"
        else:
            assert attr in data_docs, f"{name}.{attr} has no attribute docstring"


def test_one_public_home_per_name() -> None:
    """A name from a private module is exported by exactly one public module (the
    top level re-exports the error classes of :mod:`vxp.errors`, their own home)."""
    homes: dict[int, list[str]] = {}
    for name in ["vxp", *PUBLIC]:
        module = _module(name)
        for attr in module.__all__:
            value = getattr(module, attr)
            if getattr(value, "__module__", "").startswith("vxp.errors") and name == "vxp":
                continue
            homes.setdefault(id(value), []).append(f"{name}.{attr}")
    shared = [paths for paths in homes.values() if len(paths) > 1]
    assert not shared, shared


@pytest.mark.parametrize("name", ["vxp", *PUBLIC])
def test_each_public_modules_examples_run(name: str) -> None:
    result = doctest.testmod(_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_a_verdict_is_a_report_never_a_truth_value() -> None:
    """Issue 25: ``if vxp.verify(...):`` must not accept a failed package."""
    op = vxp.demo_operation("succeeded")
    good = vxp.verify(op.package, op.metadata, op.jwks, now=op.now)
    bad = vxp.verify({"v": 1}, op.metadata, op.jwks, now=op.now)
    assert good.valid is True
    assert bad.valid is False
    for verdict in (good, bad):
        with pytest.raises(TypeError, match=r"report; read \.valid"):
            bool(verdict)
        with pytest.raises(TypeError):
            _ = "accepted" if verdict else "refused"  # the mistake the rule exists for
        with pytest.raises(TypeError):
            _ = not verdict


def test_a_fetch_answer_is_a_report_never_a_truth_value() -> None:
    endpoint = vxp.fetch.ProofEndpoint(base_url="https://co.example", tokens={}, packages={})
    answer = endpoint.handle(method="GET", url="https://co.example/x", headers={}, now=0)
    assert answer.status == 404
    with pytest.raises(TypeError, match=r"report; read \.status"):
        bool(answer)


def test_checks_return_the_verified_value_or_raise() -> None:
    """Issue 25: every pass/fail check returns what it verified (never None, never a bool)."""
    merkle = vxp.merkle
    leaves = [merkle.leaf_hash(bytes([i])) for i in range(5)]
    root3, root5 = merkle.tree_hash(leaves[:3]), merkle.tree_hash(leaves)
    proof = merkle.inclusion_proof(leaves, 2)
    assert merkle.verify_inclusion(leaves[2], 2, 5, proof, root5) == root5
    consistency = merkle.consistency_proof(leaves, 3)
    assert merkle.verify_consistency(3, 5, root3, root5, consistency) == root5
    assert merkle.verify_consistency(5, 5, root5, root5, []) == root5
    with pytest.raises(vxp.VxpProtocolError):
        merkle.verify_inclusion(leaves[1], 2, 5, proof, root5)
    with pytest.raises(vxp.VxpProtocolError):
        merkle.verify_consistency(3, 5, root5, root5, consistency)
