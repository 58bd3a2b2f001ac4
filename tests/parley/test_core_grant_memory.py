"""Speed without hidden state (DESIGN.md): grant and key work is remembered only by objects
the caller owns (a :class:`parley.GrantVerifier`), never by the process.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import parley
from parley import _grant_verify, _keys

NOW = 1790000000
P = parley.key_from_seed(b"\x01" * 32)
A = parley.key_from_seed(b"\x02" * 32)
SRC = Path(__file__).resolve().parents[2] / "src" / "parley"
CTX = parley.GrantContext("shop.example", "ASK", "shop.search", NOW)


def _token(nonce: str) -> str:
    return parley.mint_grant(P, A.public, [{"svc": ["shop.example"]}], iat=NOW, nonce=nonce)


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every token the verification path decodes, in order."""
    seen: list[object] = []
    real = _grant_verify.decode_grant

    def spy(token: object) -> parley.Grant:
        seen.append(token)
        return real(token)

    monkeypatch.setattr(_grant_verify, "decode_grant", spy)
    return seen


def _verify(verifier: parley.GrantVerifier | None, token: str) -> parley.GrantCheck:
    if verifier is None:
        return parley.verify_grant(token, trusted=[P.public], proof_key=A.public, ctx=CTX)
    return verifier.verify(token, trusted=[P.public], proof_key=A.public, ctx=CTX)


def test_a_fresh_verifier_decodes_a_token_another_verifier_has_seen(decodes: list[object]) -> None:
    token = _token("fresh")
    first = parley.GrantVerifier()
    assert _verify(first, token).ok
    assert _verify(first, token).ok
    assert decodes == [token]  # the verifier that saw it decodes it once
    assert _verify(parley.GrantVerifier(), token).ok
    assert decodes == [token, token]  # a new verifier has seen nothing


def test_verify_grant_remembers_nothing_between_calls(decodes: list[object]) -> None:
    token = _token("one-shot")
    for _ in range(3):
        assert _verify(None, token).ok
    assert decodes == [token] * 3


def test_a_verifier_remembers_the_most_recently_used_tokens_up_to_its_size(
    decodes: list[object],
) -> None:
    one, two, three = _token("1"), _token("2"), _token("3")
    verifier = parley.GrantVerifier(remember=2)
    for token in (one, two, one, three):  # three pushes out two, the least recently used
        assert _verify(verifier, token).ok
    assert decodes == [one, two, three]
    assert _verify(verifier, one).ok
    assert _verify(verifier, two).ok
    assert decodes == [one, two, three, two]


def test_a_verifier_of_size_zero_and_long_tokens_are_never_remembered(
    decodes: list[object],
) -> None:
    short = _token("zero")
    nothing = parley.GrantVerifier(remember=0)
    assert _verify(nothing, short).ok
    assert _verify(nothing, short).ok
    assert decodes == [short, short]
    long = parley.mint_grant(
        P, A.public, [{"svc": [f"s{n}.example" for n in range(300)] + ["shop.example"]}], iat=NOW
    )
    assert len(long) > _grant_verify.MAX_REMEMBERED_TOKEN_LENGTH
    verifier = parley.GrantVerifier()
    assert _verify(verifier, long).ok
    assert _verify(verifier, long).ok
    assert decodes == [short, short, long, long]


def test_a_bad_token_is_never_remembered(decodes: list[object]) -> None:
    verifier = parley.GrantVerifier()
    for _ in range(2):
        assert _verify(verifier, "pg1.e30").reason == "bad_token"
    assert decodes == ["pg1.e30", "pg1.e30"]


class _SameAsEverything(str):
    """A str subclass that claims to equal any string (a poisoned cache key)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return hash(str(self))


def test_a_str_subclass_is_decoded_afresh_not_matched_against_memory() -> None:
    verifier = parley.GrantVerifier()
    good = _token("subclass")
    assert _verify(verifier, good).ok
    other = parley.key_from_seed(b"\x07" * 32)
    forged = parley.mint_grant(other, A.public, [], iat=NOW, nonce="subclass")
    check = verifier.verify(
        _SameAsEverything(forged), trusted=[P.public], proof_key=A.public, ctx=CTX
    )
    assert (check.ok, check.reason) == (False, "untrusted_issuer")


@pytest.mark.parametrize("remember", [-1, 1.5, "256", True, None])
def test_a_verifier_refuses_a_size_that_is_not_a_count(remember: Any) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.GrantVerifier(remember=remember)
    assert (caught.value.code, caught.value.reason) == ("invalid_params", "bad_context")


def test_one_verifier_shared_by_threads_gives_every_thread_its_own_answer() -> None:
    tokens = [_token(f"t{n}") for n in range(6)]
    expected = [_verify(None, t) for t in tokens]
    verifier = parley.GrantVerifier(remember=3)  # smaller than the set: constant eviction
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for n in range(60):
                index = (n + offset) % len(tokens)
                assert _verify(verifier, tokens[index]) == expected[index]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors


def test_key_parsing_is_not_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[bytes] = []
    real = _keys.Ed25519PublicKey.from_public_bytes

    class Spy:
        @staticmethod
        def from_public_bytes(raw: bytes) -> Any:
            loaded.append(raw)
            return real(raw)

    monkeypatch.setattr(_keys, "Ed25519PublicKey", Spy)
    signature = A.sign(b"m")
    assert parley.verify_signature(A.public, b"m", signature)
    assert parley.verify_signature(A.public, b"m", signature)
    assert len(loaded) == 2


# ---------------------------------------------------------------- no module memory


def _module_memory(tree: ast.Module) -> list[str]:
    """Module-level caches in ``tree``: cache decorators, and module containers that a
    function writes into (``NAME[k] = v``, ``NAME.update(...)``, ``global NAME``)."""
    found: list[str] = []
    containers: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            mutable = isinstance(value, (ast.Dict, ast.List, ast.Set)) or (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id in {"dict", "list", "set", "OrderedDict", "defaultdict"}
            )
            if mutable:
                containers.update(t.id for t in targets if isinstance(t, ast.Name))
    writers = {"update", "setdefault", "append", "add", "extend", "insert", "pop", "clear"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                text = ast.unparse(deco)
                if "lru_cache" in text or text in {"cache", "functools.cache"}:
                    found.append(f"{node.name}: @{text}")
            for inner in ast.walk(node):
                if isinstance(inner, ast.Global):
                    found.append(f"{node.name}: global {', '.join(inner.names)}")
                targets: list[ast.expr] = []
                if isinstance(inner, (ast.Assign, ast.Delete)):
                    targets = list(inner.targets)
                elif isinstance(inner, ast.AugAssign):
                    targets = [inner.target]
                for target in targets:
                    if (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id in containers
                    ):
                        found.append(f"{node.name}: writes {target.value.id}[...]")
                if (
                    isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Attribute)
                    and isinstance(inner.func.value, ast.Name)
                    and inner.func.value.id in containers
                    and inner.func.attr in writers
                ):
                    found.append(f"{node.name}: {inner.func.value.id}.{inner.func.attr}()")
    return found


def test_the_module_memory_check_finds_the_caches_it_looks_for() -> None:
    planted = ast.parse(
        "import functools\n_SEEN = {}\n_LOG = []\n"
        "@functools.lru_cache(maxsize=9)\ndef a(x): return x\n"
        "def b(x):\n    _SEEN[x] = 1\n    _LOG.append(x)\n"
        "def c():\n    global _N\n"
    )
    assert _module_memory(planted) == [
        "a: @functools.lru_cache(maxsize=9)",
        "b: writes _SEEN[...]",
        "b: _LOG.append()",
        "c: global _N",
    ]


OWN_FILES = {"_schemas.py"}
"""Modules allowed to remember: the package's own schema files, loaded once by name (an
unknown name raises, and a raise is not remembered, so the memory is bounded)."""


def test_no_parley_module_keeps_process_wide_memory() -> None:
    found = {
        path.name: memory
        for path in sorted(SRC.glob("*.py"))
        if path.name not in OWN_FILES
        and (memory := _module_memory(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert found == {}
    assert all((SRC / name).exists() for name in OWN_FILES)


def test_the_service_keeps_its_own_verifier() -> None:
    one = parley.Service("a.example", name="A", trusted=[P.public])
    two = parley.Service("b.example", name="B", trusted=[P.public])
    mine: Callable[[parley.Service], object] = lambda s: [  # noqa: E731
        v for v in vars(s).values() if isinstance(v, parley.GrantVerifier)
    ]
    assert len(mine(one)) == 1
    assert len(mine(two)) == 1
    assert mine(one)[0] is not mine(two)[0]
