"""Connections: kept while idle between requests, redialled by the agent, not starved.

Real sockets on loopback; timeouts are shrunk through the servers' parameters so each
test takes a second or two (issue 18 #5, #6).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import parley

from .runtime_harness import AGENT, PRINCIPAL, SERVICE_ID, grant, load_shop

SHOP = load_shop()
DEADLINE = 30.0
"""Seconds a test waits for something the server does within a fraction of a second on an
idle machine (a loaded one may take far longer; waiting longer never makes a test pass)."""


def _shop() -> parley.Service:
    return SHOP.build_service(trusted=[PRINCIPAL.public])


def test_a_connection_idle_after_a_request_outlives_the_frame_timeout() -> None:
    async def run() -> None:
        server = await parley.net.serve_tcp(
            _shop(), "127.0.0.1", 0, idle_timeout=30.0, frame_timeout=0.3
        )
        port = server.sockets[0].getsockname()[1]
        try:
            client = await parley.connect(f"parley://127.0.0.1:{port}", parley.Agent(AGENT))
            async with client:
                assert (await client.hello()).kind == "BRIEF"
                await asyncio.sleep(1.0)  # a long model turn: more than the frame timeout
                assert (await client.ask("shop.search", {"query": "mocha"})).ok
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(run())


def _watch_drops(client: parley.Client) -> asyncio.Event:
    """An event set when ``client``'s connection ends (its transport calls ``lost``).

    A test that needs the server to have dropped a connection waits for this, with a
    generous deadline, instead of sleeping for what an idle machine would take.
    """
    dropped = asyncio.Event()
    lost = client.lost

    def lost_and_seen(exc: BaseException | None = None) -> None:
        lost(exc)
        dropped.set()

    client.lost = lost_and_seen  # type: ignore[method-assign]
    return dropped


def test_the_agent_redials_with_backoff_after_the_server_drops_it() -> None:
    async def run() -> None:
        server = await parley.net.serve_tcp(_shop(), "127.0.0.1", 0, idle_timeout=0.2)
        port = server.sockets[0].getsockname()[1]
        url = f"parley://127.0.0.1:{port}"
        client = await parley.connect(url, parley.Agent(AGENT), reconnect=True, backoff=0.05)
        dropped = _watch_drops(client)
        try:
            assert (await client.hello()).kind == "BRIEF"
            # the server closes the idle connection; the next request dials again
            await asyncio.wait_for(dropped.wait(), DEADLINE)
            assert (await client.ask("shop.search", {"query": "mocha"})).ok
            # the server goes away and comes back on the same port while the agent retries
            dropped.clear()
            server.close()
            await server.wait_closed()
            await asyncio.wait_for(dropped.wait(), DEADLINE)  # its connection ends too

            async def restart() -> asyncio.Server:
                await asyncio.sleep(0.3)
                return await parley.net.serve_tcp(_shop(), "127.0.0.1", port)

            later = asyncio.create_task(restart())
            assert (await client.ask("shop.search", {"query": "latte"})).ok
            server = await later
        finally:
            await client.close()
            server.close()
            await server.wait_closed()

    asyncio.run(run())


def test_redialling_gives_up_after_its_attempts_and_never_resends() -> None:
    async def run() -> None:
        seen: list[str] = []
        svc = _shop()
        handle = svc.handle

        def counting(data: bytes, **kw: object) -> list[dict[str, object]]:
            seen.append(json.loads(data)["verb"])
            return handle(data, **kw)  # type: ignore[arg-type]

        svc.handle = counting  # type: ignore[method-assign]
        server = await parley.net.serve_tcp(svc, "127.0.0.1", 0, idle_timeout=0.1)
        port = server.sockets[0].getsockname()[1]
        url = f"parley://127.0.0.1:{port}"
        client = await parley.connect(
            url, parley.Agent(AGENT), reconnect=True, backoff=0.01, attempts=3
        )
        dropped = _watch_drops(client)
        try:
            assert (await client.hello()).kind == "BRIEF"
            server.close()
            await server.wait_closed()
            await asyncio.wait_for(dropped.wait(), DEADLINE)  # the idle connection is closed too
            with pytest.raises(parley.ParleyError) as caught:
                await client.ask("shop.search", {"query": "mocha"})
            assert (caught.value.code, caught.value.reason) == ("unavailable", "connect")
        finally:
            await client.close()
        assert seen == ["HELLO"]

    asyncio.run(run())


def test_an_anonymous_intent_flood_does_not_evict_a_committable_proposal() -> None:
    async def run() -> None:
        # the default caps scaled down tenfold (10,000 and 1,000), so the flood stays short
        store = parley.stores.MemoryStore(max_proposals=1000, max_anonymous=100)
        svc = SHOP.build_service(trusted=[PRINCIPAL.public], store=store)
        server = await parley.net.serve_tcp(svc, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            client = await parley.connect(
                f"parley://127.0.0.1:{port}", parley.Agent(AGENT, [grant()])
            )
            async with client:
                await client.hello()
                shown = await client.intent("shop.order", {"item": "latte"})
                assert shown.reply is not None
                mine = shown.reply["proposals"][0]
                # 600 INTENTs without a proof (1,200 proposals), pipelined on one connection
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                flood = 600
                for n in range(flood):
                    frame = {
                        "parley": 1,
                        "id": f"f{n}",
                        "verb": "INTENT",
                        "capability": "shop.order",
                        "params": {"item": "latte"},
                    }
                    writer.write(json.dumps(frame).encode() + b"\n")
                await writer.drain()
                kinds = set()
                for _ in range(flood):
                    line = await asyncio.wait_for(reader.readline(), 60)
                    kinds.add(json.loads(line)["kind"])
                assert kinds == {"PROPOSALS"}
                writer.close()
                done = await client.commit(mine)
                assert done.kind == "RECEIPT", done.reply
        finally:
            server.close()
            await server.wait_closed()
        assert store.sizes()["anonymous"] == 100

    asyncio.run(run())


def test_a_keyed_intent_flood_without_grants_does_not_evict_a_committable_proposal(
    tmp_path: Path,
) -> None:
    # Review F3: a throwaway key proves possession of itself but carries no grant, so its
    # proposals compete only with other proposals of INTENTs without a verified grant.
    async def run() -> None:
        store = parley.stores.SQLiteStore(
            str(tmp_path / "s.sqlite"), max_proposals=40, max_anonymous=20
        )
        svc = SHOP.build_service(trusted=[PRINCIPAL.public], store=store)
        server = await parley.net.serve_tcp(svc, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            client = await parley.connect(
                f"parley://127.0.0.1:{port}", parley.Agent(AGENT, [grant()])
            )
            async with client:
                await client.hello()
                shown = await client.intent("shop.order", {"item": "latte"})
                assert shown.reply is not None
                mine = shown.reply["proposals"][0]
                attacker = parley.Agent(parley.generate_key(), [], service=SERVICE_ID)
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                flood = 60  # 120 proposals, three times the committable pool
                for _ in range(flood):
                    frame = attacker.intent("shop.order", {"item": "latte"})
                    writer.write(json.dumps(frame).encode() + b"\n")
                await writer.drain()
                kinds = set()
                for _ in range(flood):
                    line = await asyncio.wait_for(reader.readline(), 60)
                    kinds.add(json.loads(line)["kind"])
                assert kinds == {"PROPOSALS"}
                writer.close()
                done = await client.commit(mine)
                assert done.kind == "RECEIPT", done.reply
        finally:
            server.close()
            await server.wait_closed()
        # the flood's pool is full (20) beside the other offer of the good INTENT
        assert store.sizes()["proposals"] == 21

    asyncio.run(run())
