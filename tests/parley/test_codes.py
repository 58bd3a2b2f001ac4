"""Parley's code table (parley.errors): every code raised is in it, every code in it is raised.

Also the kind rule: protocol data passed in any Python type is a protocol error; the
caller's own arguments (``now``, options, configuration) are usage errors.
"""

from __future__ import annotations

import ast
import asyncio
import datetime
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import parley
from parley.errors import CODES, WIRE_CODES, ParleyError, ParleyProtocolError, ParleyUsageError
from tests.codecheck import ROOT, literal_codes, raises_code, vector_codes

from .runtime_harness import AGENT, PRINCIPAL, SERVICE_ID, grant

NOW = 1_790_000_000
SPECIAL = {"ParleyError", "ServiceError", "_RefusalError"}


def test_every_literal_code_at_a_raise_site_is_in_the_table() -> None:
    found = literal_codes("parley", SPECIAL)
    assert found, "the scan found no raise sites"
    missing = {code: where for code, where in found.items() if code not in CODES}
    assert not missing, missing


def test_the_wire_codes_are_the_closed_set_of_spec_section_7() -> None:
    from parley.wire import ErrorCode

    assert set(WIRE_CODES) == set(ErrorCode.__args__)  # type: ignore[attr-defined]
    assert all(CODES[c].kind == "protocol" for c in WIRE_CODES)
    assert all(CODES[c].kind == "usage" for c in CODES if c not in WIRE_CODES)


def _literal_reasons() -> dict[str, list[str]]:
    """Every reason written as a literal in src/parley: ``reason=`` keywords, the reason
    argument of helpers whose parameter is named ``reason``, defaults, ``"reason":`` members
    and the positional reason of ``GrantCheck(ok, code, reason, …)``."""
    trees = {
        p: ast.parse(p.read_text(encoding="utf-8")) for p in (ROOT / "src/parley").rglob("*.py")
    }
    helpers: dict[str, int] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [a.arg for a in node.args.args]
                if "reason" in names:
                    helpers[node.name] = names.index("reason") - (names[:1] == ["self"])
    helpers["GrantCheck"] = 2
    found: dict[str, list[str]] = {}

    def add(value: object, path: Path, line: int) -> None:
        if isinstance(value, str) and value:
            found.setdefault(value, []).append(f"{path.name}:{line}")

    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                at = helpers.get(name or "")
                if at is not None and len(node.args) > at:
                    arg = node.args[at]
                    if isinstance(arg, ast.Constant):
                        add(arg.value, path, node.lineno)
                for kw in node.keywords:
                    if kw.arg == "reason" and isinstance(kw.value, ast.Constant):
                        add(kw.value.value, path, node.lineno)
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "reason"
                        and isinstance(value, ast.Constant)
                    ):
                        add(value.value, path, node.lineno)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                positional = args.args[len(args.args) - len(args.defaults) :]
                pairs = [*zip(positional, args.defaults, strict=True)]
                pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
                for arg, default in pairs:
                    if arg.arg == "reason" and isinstance(default, ast.Constant):
                        add(default.value, path, node.lineno)
    return found


def test_every_literal_reason_is_in_the_closed_reason_set() -> None:
    reasons = CODES.reasons
    assert reasons is not None
    found = _literal_reasons()
    assert len(found) > 100, "the scan lost the raise sites"
    missing = {r: where for r, where in found.items() if r not in reasons}
    assert not missing, missing
    # the reasons built at run time: f"{kind}_unresolved" for the two recovery kinds
    assert {"commit_unresolved", "undo_unresolved"} <= set(reasons)


def test_a_reason_outside_the_set_is_refused() -> None:
    # a library defect, never bad input: a LookupError (UnknownCodeError), not a ParleyError
    for build in (
        lambda: ParleyError("bad_frame", "x", reason="made_up_reason"),
        lambda: ParleyError("no_such_code", "x"),
    ):
        with pytest.raises(LookupError) as caught:
            build()
        assert not isinstance(caught.value, ValueError)
        assert type(caught.value).__name__ == "UnknownCodeError"


def test_the_table_decides_the_class() -> None:
    assert isinstance(ParleyError("bad_frame", "x"), ParleyProtocolError)
    assert isinstance(ParleyError("bad_argument", "x"), ParleyUsageError)
    for special in (parley.ReplyError, parley.ServiceError, parley.service.ParamsError):
        assert issubclass(special, ParleyProtocolError)
    assert issubclass(parley.grants.CaveatError, ParleyProtocolError)
    err = parley.service.ParamsError("no", reason="bad_type")
    assert (err.code, err.reason, type(err).__name__) == (
        "invalid_params",
        "bad_type",
        "ParamsError",
    )
    caveat = parley.grants.CaveatError("no", reason="caveat_unknown")
    assert (caveat.code, caveat.reason) == ("forbidden", "caveat_unknown")


# ---------------------------------------------------------------- every code is raised


def _ctx(**kw: Any) -> parley.GrantContext:
    return parley.GrantContext(SERVICE_ID, kw.pop("verb", "ASK"), "shop.search", NOW, **kw)


def _reply_to(agent: parley.Agent, frame: dict[str, Any], service: parley.Service) -> parley.Result:
    result = None
    for out in service.handle(frame, now=NOW):
        result = agent.receive(out)
    assert result is not None
    return result


def _service() -> parley.Service:
    service = parley.Service(SERVICE_ID, name="Shop", trusted=[PRINCIPAL.public], clock=lambda: NOW)

    @service.ask("shop.crash", summary="always fails")
    def crash(params: dict[str, Any], ctx: parley.Context) -> Any:
        raise RuntimeError("boom")

    return service


def _agent() -> parley.Agent:
    return parley.Agent(AGENT, [grant(now=NOW)], service=SERVICE_ID, clock=lambda: NOW)


def _trigger(code: str) -> None:
    if code == "unknown_capability":
        agent = _agent()
        _reply_to(agent, agent.ask("shop.nothing"), _service()).raise_for_error()
    elif code == "internal":
        agent = _agent()
        _reply_to(agent, agent.ask("shop.crash"), _service()).raise_for_error()
    elif code == "forbidden":
        token = parley.mint_grant(PRINCIPAL, AGENT.public, [{"svc": ["other.example"]}], iat=NOW)
        parley.verify_grant(
            token, trusted=[PRINCIPAL.public], proof_key=AGENT.public, ctx=_ctx()
        ).raise_for_failure()
    elif code == "consent_required":
        token = parley.mint_grant(
            PRINCIPAL, AGENT.public, [{"per": {"max": 100, "currency": "USD"}}], iat=NOW
        )
        facts = parley.ProposalFacts("h", parley.grants.Cost(500, "USD"), "low")
        ctx = parley.GrantContext(SERVICE_ID, "COMMIT", "shop.buy", NOW, proposal=facts)
        parley.verify_grant(
            token, trusted=[PRINCIPAL.public], proof_key=AGENT.public, ctx=ctx
        ).raise_for_failure()
    elif code == "limit":
        big = {"parley": 1, "id": "a1", "verb": "ASK", "params": {"x": "a" * parley.wire.MAX_FRAME}}
        parley.wire.encode_frame(big)
    elif code == "unavailable":
        asyncio.run(_closed_connection())
    elif code == "bad_argument":
        parley.verify_proof({}, aud="a", verb="ASK", target="t", now=datetime.datetime(2026, 1, 1))
    elif code == "bad_config":
        asyncio.run(parley.connect("ftp://example.com", _agent()))
    elif code == "not_ready":
        parley.Agent(AGENT).intent("shop.buy")
    elif code == "schema_unknown":
        parley.load_schema("no/such.json")
    else:  # pragma: no cover - a new code needs a trigger here
        raise AssertionError(f"no trigger for {code}")


async def _closed_connection() -> None:
    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        client = await parley.connect(f"parley://127.0.0.1:{port}", _agent())
        async with client:
            await client.ask("shop.search")
    finally:
        server.close()
        await server.wait_closed()


TRIGGERED = (
    "unknown_capability",
    "internal",
    "forbidden",
    "consent_required",
    "limit",
    "unavailable",
    "bad_argument",
    "bad_config",
    "not_ready",
    "schema_unknown",
)


@pytest.mark.parametrize("code", TRIGGERED)
def test_code_is_raised_through_the_public_api(code: str) -> None:
    raises_code(lambda: _trigger(code), ParleyError, code)


def test_schemas_missing_in_an_install_without_schemas(tmp_path: Path) -> None:
    """A copy of the package with neither packaged nor checkout schemas (a real import)."""
    shutil.copytree(ROOT / "src" / "parley", tmp_path / "src" / "parley")
    shutil.copytree(ROOT / "src" / "_ppcodes", tmp_path / "src" / "_ppcodes")
    shutil.copytree(ROOT / "src" / "_ppschema", tmp_path / "src" / "_ppschema")
    code = (
        "import parley.wire\n"
        "try:\n    parley.schema_names()\n"
        "except parley.ParleyUsageError as e:\n    print(e.code)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(tmp_path / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.stdout.strip() == "schemas_missing", out.stderr


def test_every_code_in_the_table_is_raised_somewhere() -> None:
    covered = vector_codes("parley") | set(TRIGGERED) | {"schemas_missing"}
    assert set(CODES) <= covered, set(CODES) - covered


# ---------------------------------------------------------------- the kind rule


@pytest.mark.parametrize("bad", [7, None, 1.5, [], b"{}"])
def test_protocol_data_of_any_type_is_a_protocol_error(bad: Any) -> None:
    with pytest.raises(ParleyProtocolError):
        parley.verify_proof(bad, aud="a", verb="ASK", target="t", now=NOW)
    with pytest.raises(ParleyProtocolError):
        parley.decode_grant(bad)
    with pytest.raises(ParleyProtocolError):
        parley.wire.parse_frame(bad if not isinstance(bad, bytes) else b"\xff")


def test_a_naive_now_is_a_usage_error() -> None:
    naive = datetime.datetime(2026, 12, 2, 8, 0)
    proof = parley.sign_proof(AGENT, aud="a", verb="ASK", target="t", ts=NOW)
    calls = [
        lambda: parley.verify_proof(proof, aud="a", verb="ASK", target="t", now=naive),
        lambda: parley.sign_proof(AGENT, aud="a", verb="ASK", target="t", ts=naive),
        lambda: parley.GrantContext(SERVICE_ID, "ASK", "shop.search", naive),  # type: ignore[arg-type]
        lambda: _service().handle({"parley": 1, "id": "a1", "verb": "HELLO"}, now=naive),
        lambda: _service().recover(now=naive),
        lambda: parley.lens.park(parley.lens.MemoryHandleStore(), {}, key=None, now=naive),
        lambda: parley.stores.load_state(parley.stores.MemoryStore(), {}, now=naive),
    ]
    for call in calls:
        with pytest.raises(ParleyUsageError) as caught:
            call()
        assert (caught.value.code, caught.value.reason) == ("bad_argument", "naive_datetime")


def test_the_callers_own_arguments_are_usage_errors() -> None:
    raises_code(
        lambda: parley.sign_proof("not a key", aud="a", verb="ASK", target="t", ts=NOW),
        ParleyUsageError,
        "bad_argument",
    )  # type: ignore[arg-type]
    raises_code(
        lambda: parley.lens.MemoryHandleStore(max_entries=0), ParleyUsageError, "bad_argument"
    )
    raises_code(lambda: parley.open_store("nosuch://x"), ParleyUsageError, "bad_config")
    raises_code(
        lambda: parley.Result({"id": "a1"}).raise_for_error(), ParleyUsageError, "not_ready"
    )


def test_agent_and_service_constructors_refuse_bad_arguments_with_parley_errors() -> None:
    key = parley.key_from_seed(bytes(32))
    usage = [
        lambda: parley.Agent("not a key"),  # type: ignore[arg-type]
        lambda: parley.Agent(key, clock="not callable"),  # type: ignore[arg-type]
        lambda: parley.Agent(key, rand=None),  # type: ignore[arg-type]
        lambda: parley.Agent(key, service=7),  # type: ignore[arg-type]
        lambda: parley.Service(7, name="x"),  # type: ignore[arg-type]
        lambda: parley.Service("x", name="x", clock="no"),  # type: ignore[arg-type]
    ]
    for call in usage:
        with pytest.raises(ParleyUsageError) as caught:
            call()
        assert caught.value.code == "bad_argument"
    # grants are tokens, protocol data: a malformed list is the protocol error bad_token
    for grants in (7, [7], "pg1.x"):
        with pytest.raises(ParleyProtocolError) as refused:
            parley.Agent(key, grants)  # type: ignore[arg-type]
        assert refused.value.reason == "bad_token"


def test_entry_points_refuse_arguments_of_the_wrong_type_as_usage_errors() -> None:
    key = parley.key_from_seed(bytes(32))
    service = parley.Service("x", name="x")
    calls = [
        (lambda: asyncio.run(parley.connect(7, parley.Agent(key))), "bad_config"),  # type: ignore[arg-type]
        (lambda: asyncio.run(parley.connect("parley://127.0.0.1:1", "agent")), "bad_argument"),  # type: ignore[arg-type]
        (lambda: asyncio.run(parley.serve(7, service)), "bad_config"),  # type: ignore[arg-type]
        (lambda: asyncio.run(parley.serve("parley://127.0.0.1:0", "svc")), "bad_argument"),  # type: ignore[arg-type]
        (lambda: parley.open_store(7), "bad_config"),  # type: ignore[arg-type]
        (lambda: parley.Client("agent", None), "bad_argument"),  # type: ignore[arg-type]
    ]
    for call, code in calls:
        raises_code(call, ParleyUsageError, code)


@pytest.mark.parametrize("reply", [7, "x", [], 1.5, b"x"])
def test_a_result_whose_reply_is_not_an_object_is_a_bad_reply(reply: Any) -> None:
    result = parley.Result({"id": "a1"}, reply)
    for read in (
        lambda: result.kind,
        lambda: result.ok,
        lambda: result.data,
        lambda: result.code,
        result.raise_for_error,
    ):
        raises_code(read, ParleyProtocolError, "bad_frame")


@pytest.mark.parametrize(
    "call",
    [
        lambda: parley.offer("s", 7),  # type: ignore[arg-type]
        lambda: parley.offer("s", [7]),  # type: ignore[list-item]
        lambda: parley.offer("s", [], cost=(1,)),  # type: ignore[arg-type]
        lambda: parley.offer(7, []),  # type: ignore[arg-type]
        lambda: parley.clarify("q", 7),  # type: ignore[arg-type]
        lambda: parley.clarify("q", ["x"]),  # type: ignore[list-item]
        lambda: parley.clarify("q", [("a", 7)]),  # type: ignore[list-item]
        lambda: parley.clarify(7, []),  # type: ignore[arg-type]
    ],
)
def test_offer_and_clarify_refuse_bad_arguments_as_usage_errors(call: Any) -> None:
    raises_code(call, ParleyUsageError, "bad_argument")


@pytest.mark.parametrize("bad", [7, None, "x", [], 1.5])
def test_handles_and_stores_refuse_the_callers_bad_arguments_as_usage_errors(bad: Any) -> None:
    lens, stores = parley.lens, parley.stores
    store = lens.MemoryHandleStore()
    calls = [
        lambda: lens.park(bad, {"h_x": 1}, key=None, now=NOW),
        lambda: lens.expand(bad, "h_x", 100, key=None, now=NOW),
        lambda: lens.new_handle(bad),
        lambda: lens.expand_slice(list(range(100)), 10, handles=bad),
        lambda: stores.load_state(bad, {}, now=NOW),
    ]
    if not isinstance(bad, int):  # a positive int is a fine limit
        calls.append(lambda: lens.MemoryHandleStore(max_entries=bad))
        calls.append(lambda: lens.MemoryHandleStore(max_chars=bad))
    if not isinstance(bad, str):  # a string is a fine path or state
        calls.append(lambda: stores.SQLiteStore(bad))
        calls.append(lambda: lens.park(store, bad, key=None, now=NOW))
        calls.append(lambda: stores.load_state(stores.MemoryStore(), bad, now=NOW))
    for call in calls:
        with pytest.raises(ParleyUsageError):
            call()
