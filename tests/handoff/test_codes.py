"""Every code handoff raises is in ``handoff.errors.CODES``, and every code there is raised.

(a) each literal code at a raise site in ``src/handoff`` (the error classes, and the small
helpers that take a ``code`` first and build the error) is in the table; (b) each code in the
table is expected by a vector or triggered here through the public API; (c) the kind rule:
malformed protocol data of any Python type is a protocol error, a caller's own mistake
(a key, a configuration, a naive ``now``) is a usage error.
"""

from __future__ import annotations

import ast
import datetime
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import handoff
from handoff.errors import CODES, HandoffError, HandoffProtocolError, HandoffUsageError

from ..codecheck import ROOT, literal_codes, raises_code, vector_codes
from .handoff_helpers import EXTS, ROLES, raised

CLASSES = {"HandoffError", "HandoffUsageError", "HandoffProtocolError"}
ACTS_ROLES = handoff.Roles.from_json(
    {"principal": "alice", "principal_side": ["alice-pa"], "requesters": {"*": ["bot"]}}
)
ACT = handoff.ItemId("acts", "p", "k")


def _helper_codes() -> dict[str, list[str]]:
    """Literal codes passed to a helper whose first parameter is ``code`` (per module)."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "src" / "handoff").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        helpers = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef)
            and node.args.args
            and node.args.args[0].arg == "code"
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in helpers
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                found.setdefault(node.args[0].value, []).append(where)
    return found


def test_every_literal_code_is_in_the_table() -> None:
    found = literal_codes("handoff", CLASSES)
    helpers = _helper_codes()
    assert helpers, "the helper scan found no call: the scan itself is broken"
    for code, places in {**found, **helpers}.items():
        assert code in CODES, f"{code!r} raised at {places} is not in handoff.errors.CODES"


def test_the_error_classes_follow_the_table() -> None:
    assert issubclass(HandoffUsageError, HandoffError)
    assert issubclass(HandoffProtocolError, HandoffError)
    assert issubclass(HandoffError, ValueError)
    for name, entry in CODES.items():
        error = HandoffError(name, "m")
        wanted = HandoffUsageError if entry.kind == "usage" else HandoffProtocolError
        assert type(error) is wanted, name


def _schemas_missing(tmp_path: Path) -> None:
    """Run a copy of the package that has neither installed schemas nor a checkout."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "handoff", src / "handoff")
    shutil.copytree(ROOT / "src" / "_ppcodes", src / "_ppcodes")
    code = (  # the package compiles its admission check on import, so import fails
        "try:\n"
        "    import handoff\n"
        "except ValueError as exc:\n"
        "    print(type(exc).__name__, exc.code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    kind, _, code = done.stdout.strip().partition(" ")
    assert kind == "HandoffUsageError", done.stdout + done.stderr
    raise HandoffError(code, "seen in a subprocess")


def _store_open(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    handoff.stores.SQLiteStore(folder, roles=ROLES, extensions=EXTS)


def _conflict() -> None:
    store = handoff.stores.MemoryStore(roles=ROLES, extensions=EXTS)
    store.append(raised())
    store.append({**raised(), "terms": {"text": "Pay twice"}})


def test_every_code_in_the_table_is_raised(tmp_path: Path) -> None:
    by_api: dict[str, Any] = {
        "usage": lambda: handoff.open_store("ftp://x", roles=ROLES, extensions=EXTS),
        "schemas_missing": lambda: _schemas_missing(tmp_path),
        "schema_unknown": lambda: handoff.load_schema("no-such.json"),
        "schema_invalid": lambda: handoff.schemas.ecma_pattern("[a"),
        "io": lambda: handoff.open_store(
            f"sqlite:{tmp_path / 'none.db'}", roles=ROLES, extensions=EXTS, create=False
        ),
        "store": lambda: _store_open(tmp_path),
        "build": lambda: handoff.make_raised(
            handoff.Registry(roles=ACTS_ROLES, extensions=handoff.EXTENSIONS),
            handoff.ItemId("no-such-ext", "p", "k"),
            {"text": "x"},
            by="bot",
            ts="2026-10-27T10:00:00Z",
        ),
        "settle": lambda: handoff.make_settlement(
            handoff.Registry(roles=ACTS_ROLES, extensions=handoff.EXTENSIONS),
            ACT,
            "done",
            by="alice-pa",
            ts="2026-10-27T10:00:00Z",
        ),
        "conflict": _conflict,
        "markdown": lambda: handoff.markdown.parse_state_document(b"# Acts"),
    }
    vectors = vector_codes("handoff")
    for code in CODES:
        if code in vectors:
            continue
        assert code in by_api, f"{code!r} is neither in a vector nor triggered here"
        raises_code(by_api[code], HandoffError, code)


# --- the kind rule ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [5, None, 1.5, ["a"]])
def test_malformed_records_of_any_type_are_protocol_errors(bad: Any) -> None:
    registry = handoff.Registry(roles=ROLES, extensions=EXTS)
    side = handoff.PrincipalSide()
    calls = [
        lambda: handoff.parse_record(bad),
        lambda: handoff.check_record(bad, roles=ROLES, extensions=EXTS),
        lambda: registry.add(bad),
        lambda: handoff.verify_proof(bad, {"keys": []}),
        lambda: handoff.attach_proof(bad, {}),
        lambda: handoff.check_requester_record(bad, registry),
        lambda: handoff.check_principal_side_record(bad, registry, side),
        lambda: handoff.evidence.evidence_verdict(bad, registry, side),
        lambda: handoff.evidence.presentation_for(registry, bad),
        lambda: handoff.digests.identity(bad),
        lambda: handoff.digests.signing_input(bad),
        lambda: handoff.acts.check_act_terms(bad),
        lambda: handoff.decisions.check_decision_terms(bad),
        lambda: handoff.decisions.check_decision_outcome(bad, None),
        lambda: handoff.Record.from_json(bad),
        lambda: handoff.markdown.parse_state_document(bad),
    ]
    for call in calls:
        with pytest.raises(HandoffProtocolError):
            call()


@pytest.mark.parametrize("bad", [5, None, "x", ["k"]])
def test_keys_and_configuration_the_caller_holds_are_usage_errors(bad: Any) -> None:
    with pytest.raises(HandoffUsageError) as caught:
        handoff.evidence.sign_proof({"a": 1}, bad)
    assert caught.value.code == "key"
    with pytest.raises(HandoffUsageError):
        handoff.public_jwks(bad)
    with pytest.raises(HandoffUsageError):
        handoff.Roles.from_json(bad)
    with pytest.raises(HandoffUsageError):
        handoff.PrincipalSide.from_json(bad)
    with pytest.raises(HandoffUsageError):
        handoff.schemas.ecma_pattern(bad if not isinstance(bad, str) else "[" + bad)


def test_a_signing_key_of_another_type_is_a_usage_error() -> None:
    for key in ({"kty": "oct", "k": "AAAA"}, {"kty": "OKP", "crv": "X25519", "x": "AAAA"}):
        with pytest.raises(HandoffUsageError) as caught:
            handoff.evidence.sign_proof({"a": 1}, key)
        assert (caught.value.code, caught.value.reason) == ("key", "key_unsupported")


def test_an_unusable_jwks_is_the_callers_error_not_a_forgery() -> None:
    """A verifier whose own JWKS is broken must not report the peer's proof as forged."""
    with pytest.raises(HandoffUsageError) as caught:
        handoff.verify_proof(
            {
                "evidence": {
                    "proof": "eyJhbGciOiJFZDI1NTE5Iiwia2lkIjoiayIsInR5cCI6InBoLXByb29mK2p3cyJ9..AA"
                }
            },
            {"keys": "not a list"},
        )
    assert (caught.value.code, caught.value.reason) == ("key", "jwks_invalid")


def test_a_naive_now_is_a_usage_error() -> None:
    registry = handoff.Registry(roles=ACTS_ROLES, extensions=handoff.EXTENSIONS)
    naive = datetime.datetime(2026, 10, 27, 10, 0)
    with pytest.raises(HandoffUsageError) as caught:
        handoff.make_raised(registry, ACT, {"text": "Pay"}, by="bot", ts=naive)
    assert (caught.value.code, caught.value.reason) == ("usage", "time")
