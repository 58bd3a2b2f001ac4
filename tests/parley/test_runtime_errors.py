"""How errors reach a caller (docs/guide/parley.md, "Errors"): one exception shape for both paths.

A local fault raises at once; a service's ``ERROR`` reply arrives as ``Result.code`` and
``Result.raise_for_error()`` raises it as a :class:`parley.ReplyError`, a
:class:`parley.ParleyProtocolError` carrying the wire ``code`` and ``reason``, so one
``except parley.ParleyProtocolError`` handles a refusal and a broken connection alike.
Reports (``GrantCheck``, ``Result``, ``Outcome``, a conformance ``Report``) have no truth
value.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

import parley
from parley.conformance import Report

from .runtime_harness import AGENT, PRINCIPAL, SERVICE_ID, grant, load_shop

SHOP = load_shop()


@contextlib.asynccontextmanager
async def _tcp_shop() -> AsyncIterator[int]:
    service = SHOP.build_service(trusted=[PRINCIPAL.public])
    server = await parley.net.serve_tcp(service, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def test_a_service_refusal_over_tcp_is_a_result_then_a_protocol_error() -> None:
    async def run() -> tuple[parley.Result, parley.ReplyError]:
        async with _tcp_shop() as port:
            agent = parley.Agent(AGENT, [grant()])
            async with await parley.connect(f"parley://127.0.0.1:{port}", agent) as client:
                (await client.hello()).raise_for_error()
                refused = await client.ask("shop.no_such_capability")
                with pytest.raises(parley.ParleyProtocolError) as caught:
                    refused.raise_for_error()
                assert isinstance(caught.value, parley.ReplyError)
                return refused, caught.value

    refused, error = asyncio.run(run())
    assert refused.ok is False
    assert refused.code == "unknown_capability"
    assert (error.code, error.reason) == ("unknown_capability", "unknown_capability")
    assert error.reply["kind"] == "ERROR"
    assert error.stage == "capability"


def test_a_local_fault_over_tcp_raises_the_same_protocol_error_shape() -> None:
    async def run() -> parley.ParleyError:
        async with _tcp_shop() as port:
            agent = parley.Agent(AGENT, [grant()])
            client = await parley.connect(f"parley://127.0.0.1:{port}", agent)
            await client.hello()
            await client.close()
            with pytest.raises(parley.ParleyProtocolError) as caught:
                await client.ask("shop.search")
            return caught.value

    error = asyncio.run(run())
    assert (error.code, error.reason) == ("unavailable", "closed")
    assert not isinstance(error, parley.ReplyError)


def test_a_success_over_tcp_raise_for_error_returns_the_result() -> None:
    async def run() -> Any:
        async with _tcp_shop() as port:
            agent = parley.Agent(AGENT, [grant()])
            async with await parley.connect(f"parley://127.0.0.1:{port}", agent) as client:
                await client.hello()
                result = await client.ask("shop.search", {"query": ""})
                assert result.raise_for_error() is result
                return result.data

    data = asyncio.run(run())
    assert isinstance(data, dict)


@pytest.mark.parametrize("code", ["galactic_failure", "", 7])
def test_a_reply_with_a_code_outside_section_7_is_a_bad_reply(code: object) -> None:
    result = parley.Result(
        {"id": "a1"},
        {"parley": 1, "id": "s1", "re": "a1", "kind": "ERROR", "code": code, "message": "no"},  # type: ignore[typeddict-item]
    )
    with pytest.raises(parley.ParleyProtocolError) as caught:
        result.raise_for_error()
    assert (caught.value.code, caught.value.reason) == ("bad_frame", "bad_reply")


def test_a_foreign_service_reason_is_carried_verbatim() -> None:
    reply: dict[str, Any] = {
        "parley": 1,
        "id": "s1",
        "re": "a1",
        "kind": "ERROR",
        "code": "forbidden",
        "message": "no",
        "reason": "their_own_reason",
    }
    with pytest.raises(parley.ReplyError) as caught:
        parley.Result({"id": "a1"}, reply).raise_for_error()  # type: ignore[arg-type]
    assert caught.value.reason == "their_own_reason"


def test_a_capability_may_refuse_with_its_own_reason() -> None:
    service = parley.Service(SERVICE_ID, name="Shop", clock=lambda: 1_790_000_000)

    @service.ask("shop.closed")
    def closed(params: dict[str, Any], ctx: parley.Context) -> Any:
        raise parley.ServiceError("unavailable", "the shop is closed", reason="shop_closed")

    agent = parley.Agent(AGENT, service=SERVICE_ID, clock=lambda: 1_790_000_000)
    result = None
    for frame in service.handle(agent.ask("shop.closed")):
        result = agent.receive(frame)
    assert result is not None
    assert result.error is not None
    assert (result.code, result.error.get("reason")) == ("unavailable", "shop_closed")


# ---------------------------------------------------------------- reports have no truth value


def _failed_check() -> parley.GrantCheck:
    ctx = parley.GrantContext(SERVICE_ID, "ASK", "shop.search", 1_790_000_000)
    return parley.verify_grant([], trusted=[PRINCIPAL.public], proof_key=AGENT.public, ctx=ctx)


@pytest.mark.parametrize(
    ("make", "flag"),
    [
        (_failed_check, ".ok"),
        (lambda: parley.Result({"id": "a1"}), ".ok"),
        (parley.service.not_happened, ".happened"),
        (Report, ".ok"),
    ],
)
def test_a_report_cannot_be_read_as_true_or_false(make: Any, flag: str) -> None:
    report = make()
    with pytest.raises(TypeError, match="is a report; read " + re.escape(flag)):
        bool(report)
    with pytest.raises(TypeError):
        _ = "accepted" if report else "refused"  # the mistake this guards against


def test_a_failed_grant_check_raises_only_when_asked() -> None:
    check = _failed_check()
    assert check.ok is False
    with pytest.raises(parley.ParleyProtocolError) as caught:
        check.raise_for_failure()
    assert (caught.value.code, caught.value.reason) == ("unauthorized", "no_grant")


@pytest.mark.parametrize("code", ["bad_argument", "no_such_code"])
def test_a_capability_refusing_with_a_code_outside_section_7_is_answered_internal(
    code: str,
) -> None:
    service = parley.Service(SERVICE_ID, name="Shop", clock=lambda: 1_790_000_000)

    @service.ask("shop.odd")
    def odd(params: dict[str, Any], ctx: parley.Context) -> Any:
        raise parley.ServiceError(code, "a local code cannot travel")

    agent = parley.Agent(AGENT, service=SERVICE_ID, clock=lambda: 1_790_000_000)
    (reply,) = service.handle(agent.ask("shop.odd"))
    result = agent.receive(reply)
    assert result is not None
    assert result.code == "internal"
    assert "local code" not in str(result.error)
