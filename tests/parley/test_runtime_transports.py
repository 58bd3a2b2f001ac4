"""Two-party harness: the agent and the example shop over every transport.

Each transport runs the same script through the public API: HELLO, ASK (with EXPAND of
the rest), INTENT with CLARIFY then PROPOSALS, COMMIT, replayed COMMIT, UNDO, auto-commit
inside the grant's policy and its fallback outside it, consent_required, the principal's
consent grant, COMMIT. Real sockets on 127.0.0.1, a real child process for stdio.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import parley

from .runtime_harness import (
    AGENT,
    PRINCIPAL,
    grant,
    load_shop,
    need_uvicorn,
    stdio_url,
    tls_contexts,
)

SHOP = load_shop()


async def scenario(client: parley.Client) -> None:
    brief = await client.hello()
    assert brief.kind == "BRIEF"
    assert client.agent.service == "shop.example"
    names = [c["name"] for c in brief.reply["capabilities"]]  # type: ignore[index]
    assert names == ["shop.search", "shop.orders", "shop.order", "shop.gift_card"]

    menu = await client.ask("shop.search", {"query": ""}, budget=200)
    assert menu.kind == "ANSWER"
    assert menu.reply is not None
    assert menu.reply["more"], "a small budget leaves the rest behind a handle"
    whole = await client.complete(menu.reply, budget=300)
    assert [i["sku"] for i in whole["data"]["items"]] == [i["sku"] for i in SHOP.MENU]

    ask = await client.intent("shop.order", {"item": "blend"})
    assert ask.kind == "CLARIFY"
    assert ask.reply is not None
    option = ask.reply["options"][0]
    params = parley.service.merge_patch({"item": "blend"}, option["params"])
    offered = await client.intent("shop.order", params)
    assert offered.kind == "PROPOSALS"
    assert offered.reply is not None
    proposal = offered.reply["proposals"][0]

    done = await client.commit(proposal)
    assert done.kind == "RECEIPT", done.reply
    assert [e["message"] for e in done.events] == ["sending the order to the barista"]
    receipt = done.reply["receipt"]  # type: ignore[index]
    again = await client.commit(proposal)
    assert again.kind == "RECEIPT"
    assert again.reply["replay"] is True
    assert again.reply["receipt"] == receipt  # type: ignore[index]

    undone = await client.undo(receipt["id"])
    assert undone.kind == "RECEIPT", undone.reply
    assert undone.reply["receipt"]["undoes"] == receipt["id"]  # type: ignore[index]
    undone_again = await client.undo(receipt["id"])
    assert undone_again.reply["replay"] is True  # type: ignore[index]

    auto = await client.intent("shop.order", {"item": "latte", "ship": "pickup"}, auto=True)
    assert auto.kind == "RECEIPT", auto.reply
    assert auto.reply["auto"] is True  # type: ignore[index]

    fallback = await client.intent("shop.gift_card", {"to": "ana@example.com", "usd": 5}, auto=True)
    assert fallback.kind == "PROPOSALS", "irreversible: never auto-committed"
    gift = fallback.reply["proposals"][0]  # type: ignore[index]

    refused = await client.commit(gift)
    assert refused.code == "consent_required"
    assert refused.consent is not None
    assert refused.consent["hash"] == gift["hash"]
    consent = parley.mint_consent_grant(
        PRINCIPAL, refused.consent, AGENT.public, iat=int(client.agent.clock())
    )
    approved = await client.commit(gift, grants=[consent])
    assert approved.kind == "RECEIPT", approved.reply
    assert approved.reply["receipt"]["undo"] is None  # type: ignore[index]


def agent() -> parley.Agent:
    return parley.Agent(AGENT, [grant()])


@contextlib.asynccontextmanager
async def tcp_server(ssl: Any = None) -> AsyncIterator[int]:
    service = SHOP.build_service(trusted=[PRINCIPAL.public])
    server = await parley.net.serve_tcp(service, "127.0.0.1", 0, ssl=ssl)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def test_over_tcp() -> None:
    async def run() -> None:
        async with tcp_server() as port:
            client = await parley.connect(f"parley://127.0.0.1:{port}", agent())
            async with client:
                await scenario(client)

    asyncio.run(run())


def test_over_tls(tmp_path: Path) -> None:
    server_ctx, client_ctx = tls_contexts(tmp_path)

    async def run() -> None:
        async with tcp_server(server_ctx) as port:
            client = await parley.connect(f"parleys://127.0.0.1:{port}", agent(), ssl=client_ctx)
            async with client:
                await scenario(client)
            # A client that does not trust the certificate cannot connect (verification is
            # on by default); the failure is a ParleyError like every other one.
            with pytest.raises(parley.ParleyError) as exc:
                await parley.connect(f"parleys://127.0.0.1:{port}", agent())
            assert (exc.value.code, exc.value.reason) == ("unavailable", "tls")
            assert "certificate was not accepted (self-signed" in exc.value.message

    asyncio.run(run())


def test_over_stdio_child_process() -> None:
    async def run() -> None:
        client = await parley.connect(stdio_url(), agent())
        async with client:
            await scenario(client)

    asyncio.run(run())


def test_over_http_bridge() -> None:
    need_uvicorn()

    async def run() -> None:
        service = SHOP.build_service(trusted=[PRINCIPAL.public])
        server = await parley.net.serve_http(service, "127.0.0.1", 0)
        try:
            port = server.servers[0].sockets[0].getsockname()[1]
            brief = await parley.net.discover(f"http://127.0.0.1:{port}/")
            assert brief["kind"] == "BRIEF"
            assert brief["service"]["id"] == "shop.example"
            client = await parley.connect(f"http://127.0.0.1:{port}/", agent())
            async with client:
                await scenario(client)
        finally:
            server.should_exit = True
            await server.task

    asyncio.run(run())


def test_over_https_bridge(tmp_path: Path) -> None:
    need_uvicorn()
    from .runtime_harness import make_cert

    cert_file, key_file = make_cert(tmp_path)
    client_ctx = ssl.create_default_context(cafile=str(cert_file))

    async def run() -> None:
        service = SHOP.build_service(trusted=[PRINCIPAL.public])
        server = await parley.net.serve_http(
            service, "127.0.0.1", 0, ssl_certfile=str(cert_file), ssl_keyfile=str(key_file)
        )
        try:
            port = server.servers[0].sockets[0].getsockname()[1]
            url = f"https://127.0.0.1:{port}/"
            brief = await parley.net.discover(url, ssl=client_ctx)
            assert brief["service"]["id"] == "shop.example"
            with pytest.raises(parley.ParleyError) as refused:  # the default trust store
                await parley.net.discover(url)
            assert refused.value.reason == "tls"
            assert "certificate was not accepted (self-signed" in refused.value.message
            async with await parley.connect(url, agent(), ssl=client_ctx) as client:
                await scenario(client)
        finally:
            server.should_exit = True
            await server.task

    asyncio.run(run())


def test_a_stdio_service_is_not_told_where_the_principal_keys_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a service the agent starts is the agent's peer, not the principal's: the path of the
    # principal store (PARLEY_PRINCIPAL_HOME) stays out of its environment
    monkeypatch.setenv("PARLEY_PRINCIPAL_HOME", str(tmp_path / "principal"))
    monkeypatch.setenv("PARLEY_HOME", str(tmp_path / "agent"))
    seen = tmp_path / "env.txt"
    script = tmp_path / "peer.py"
    script.write_text(
        "import os, pathlib, sys\n"
        f"pathlib.Path({str(seen)!r}).write_text("
        "repr((os.environ.get('PARLEY_PRINCIPAL_HOME'), os.environ.get('PARLEY_HOME'))))\n",
        encoding="utf-8",
    )

    async def run() -> None:
        with contextlib.suppress(parley.ParleyError):
            client = await parley.connect(f"stdio:{sys.executable} {script}", agent())
            async with client:
                await client.hello()

    asyncio.run(run())
    assert seen.read_text(encoding="utf-8") == repr((None, str(tmp_path / "agent")))
