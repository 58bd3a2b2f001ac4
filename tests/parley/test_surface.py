"""Parley's public surface: a short top level, documented public submodules, one home per name,
and a transport-free ``import parley``."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from types import ModuleType

import pytest

import parley

PUBLIC_MODULES = (
    "parley",
    "parley.errors",
    "parley.grants",
    "parley.keys",
    "parley.wire",
    "parley.lens",
    "parley.service",
    "parley.stores",
    "parley.net",
    "parley.conformance",
)


def _modules() -> list[ModuleType]:
    return [importlib.import_module(name) for name in PUBLIC_MODULES]


def test_the_top_level_has_at_most_40_names() -> None:
    assert len(parley.__all__) <= 40, len(parley.__all__)
    assert sorted(parley.__all__) == sorted(set(parley.__all__))


def test_the_package_docstring_starts_with_the_five_things_and_a_quick_start() -> None:
    doc = parley.__doc__ or ""
    assert "The five things you most likely want" in doc.split("\n\n")[1]
    assert ">>> import parley" in doc


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_module_has_a_docstring_and_an_all(name: str) -> None:
    module = importlib.import_module(name)
    assert (module.__doc__ or "").strip(), name
    assert isinstance(module.__all__, list), name
    assert module.__all__, name
    for attr in module.__all__:
        assert hasattr(module, attr), f"{name}.{attr} is listed but missing"


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_name_has_a_docstring(name: str) -> None:
    module = importlib.import_module(name)
    for attr in module.__all__:
        value = getattr(module, attr)
        if inspect.isclass(value) or inspect.isfunction(value) or inspect.ismethod(value):
            assert (value.__doc__ or "").strip(), f"{name}.{attr} has no docstring"
        else:  # constants and type aliases: documented in the module's source
            source = inspect.getsource(module)
            home = importlib.import_module(getattr(value, "__module__", name) or name)
            texts = source + inspect.getsource(home) if inspect.ismodule(home) else source
            assert attr in texts, f"{name}.{attr} is not documented"


def test_no_private_name_has_two_public_homes() -> None:
    homes: dict[int, list[str]] = {}
    for module in _modules():
        for attr in module.__all__:
            value = getattr(module, attr)
            defined_in = getattr(value, "__module__", "") or ""
            if defined_in.startswith("parley.") and not defined_in.split(".")[1].startswith("_"):
                continue  # defined in a public module (parley.errors): re-exported on purpose
            if isinstance(value, (int, str, float)):  # constants: one name, one module
                key = hash((module.__name__, attr))
            else:
                key = id(value)
            homes.setdefault(key, []).append(f"{module.__name__}.{attr}")
    doubled = [paths for paths in homes.values() if len(paths) > 1]
    assert not doubled, doubled


def test_the_old_public_names_all_have_a_home() -> None:
    """Every name of the 113-name top level before issue 25 is still public somewhere."""
    old = [
        "HANDLE_TTL",
        "MAX_FRAME",
        "PROOF_WINDOW",
        "TOKEN_PREFIX",
        "Agent",
        "AgentKeyStore",
        "AnswerReply",
        "Block",
        "BriefCapability",
        "BriefReply",
        "BriefService",
        "Capability",
        "Caveat",
        "Clarify",
        "ClarifyOption",
        "ClarifyReply",
        "Client",
        "ConsentRequestJSON",
        "Context",
        "Cost",
        "CostJSON",
        "EffectJSON",
        "ErrorCode",
        "ErrorReply",
        "EventFrame",
        "FinalReply",
        "FixJSON",
        "Grant",
        "GrantBlockJSON",
        "GrantCheck",
        "GrantContext",
        "GrantInspection",
        "HandleStore",
        "Key",
        "Lease",
        "LineBuffer",
        "MemoryHandleStore",
        "MemorySpendLedger",
        "MemoryStore",
        "MoreJSON",
        "Outcome",
        "ParamsError",
        "ParleyError",
        "ProposalFacts",
        "ProposalJSON",
        "ProposalRecord",
        "ProposalsReply",
        "ReceiptJSON",
        "ReceiptRecord",
        "ReceiptReply",
        "Reply",
        "ReplyError",
        "ReplyKind",
        "Result",
        "Risk",
        "SQLiteStore",
        "Service",
        "ServiceError",
        "SpendCap",
        "SpendLedger",
        "Store",
        "asgi_app",
        "b64url_decode",
        "b64url_encode",
        "block_id",
        "canonical",
        "check_params",
        "clarify",
        "connect",
        "consent_caveats",
        "consent_for_shown",
        "consent_request",
        "decode_grant",
        "default_state_url",
        "delegate",
        "discover",
        "effective_caveats",
        "encode_frame",
        "estimate",
        "expand",
        "expand_slice",
        "fit",
        "generate_key",
        "happened",
        "inspect_grant",
        "key_from_seed",
        "lean",
        "lens",
        "load_schema",
        "load_state",
        "merge_patch",
        "mint_consent_grant",
        "mint_grant",
        "new_handle",
        "not_happened",
        "offer",
        "open_store",
        "park",
        "parse_caveat",
        "parse_frame",
        "parse_public_key",
        "proof_target",
        "proposal_hash",
        "schema_names",
        "serve",
        "serve_forever",
        "serve_http",
        "serve_stdio",
        "serve_tcp",
        "sign_proof",
        "verify_grant",
        "verify_proof",
        "verify_signature",
    ]
    assert len(old) == 113
    public = {attr for module in _modules() for attr in module.__all__}
    assert set(old) <= public, set(old) - public


def _fresh(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return out.stdout


def test_import_parley_loads_no_transport() -> None:
    loaded = json.loads(
        _fresh(
            "import sys, json, parley\n"
            "print(json.dumps([m for m in ('asyncio', 'ssl', 'socket') if m in sys.modules]))"
        )
    )
    assert loaded == []


def test_import_parley_with_importtime_shows_no_transport() -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import parley"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    modules = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()}
    assert "parley" in modules
    assert not modules & {"asyncio", "ssl", "socket", "psycopg", "ppstore", "parley._postgres"}


def test_postgres_store_has_a_public_home_loaded_on_first_use() -> None:
    loaded = json.loads(
        _fresh(
            "import sys, json, parley.stores\n"
            "names = ('parley._postgres', 'psycopg', 'ppstore')\n"
            "before = [m for m in names if m in sys.modules]\n"
            "from parley.stores import PostgresStore\n"
            "import parley._postgres as private\n"
            "print(json.dumps([before, PostgresStore is private.PostgresStore,\n"
            "    'PostgresStore' in dir(parley.stores), 'psycopg' in sys.modules]))"
        )
    )
    assert loaded == [[], True, True, False]
    assert "PostgresStore" in parley.stores.__all__
    assert parley.stores.PostgresStore.__doc__


def test_the_transports_load_when_first_used() -> None:
    loaded = json.loads(
        _fresh(
            "import sys, json, parley\n"
            "before = 'asyncio' in sys.modules\n"
            "parley.connect, parley.net.serve_tcp\n"
            "print(json.dumps([before, 'asyncio' in sys.modules, 'ssl' in sys.modules]))"
        )
    )
    assert loaded == [False, True, True]


def test_an_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        parley.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    assert "connect" in dir(parley)
    assert "net" in dir(parley)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_module_docstring_example_runs(name: str) -> None:
    import doctest

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
