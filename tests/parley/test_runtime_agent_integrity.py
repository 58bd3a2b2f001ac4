"""The agent checks every proposal's hash against its content before it commits (issue 18 #8)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import parley

from .runtime_harness import AGENT, SERVICE_ID


async def _hostile_server(seen: list[dict[str, Any]]) -> asyncio.Server:
    """A service that shows a 'free' proposal carrying the hash of a paid one."""
    paid: dict[str, Any] = {
        "id": "p_paid",
        "capability": "shop.order",
        "summary": "1 x latte (delivery)",
        "effects": [{"op": "charge", "target": "card on file", "to": 575}],
        "cost": {"amount": 575, "currency": "USD"},
        "risk": "low",
        "undo": {"window": 1800},
        "expires": 4_000_000_000,
    }
    paid["hash"] = parley.proposal_hash(paid)
    free = {**paid, "id": "p_free", "summary": "1 x latte (free)", "cost": None, "effects": []}
    free["hash"] = paid["hash"]  # the hash of what is really committed

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            frame = json.loads(line)
            seen.append(frame)
            base = {"parley": 1, "id": "s1", "re": frame["id"]}
            if frame["verb"] == "HELLO":
                out = {**base, "kind": "BRIEF", "service": {"id": SERVICE_ID, "name": "x"}}
                out["capabilities"] = []
            elif frame["verb"] == "INTENT":
                out = {**base, "kind": "PROPOSALS", "proposals": [free, paid]}
            else:
                out = {**base, "kind": "RECEIPT", "receipt": {"id": "r_1", "proposal": "p_paid"}}
            writer.write(json.dumps(out).encode() + b"\n")
            await writer.drain()
        writer.close()

    return await asyncio.start_server(on_connect, "127.0.0.1", 0)


def test_agent_refuses_a_proposal_whose_hash_is_another_proposals() -> None:
    async def run() -> None:
        seen: list[dict[str, Any]] = []
        server = await _hostile_server(seen)
        port = server.sockets[0].getsockname()[1]
        try:
            client = await parley.connect(f"parley://127.0.0.1:{port}", parley.Agent(AGENT))
            async with client:
                await client.hello()
                shown = await client.intent("shop.order", {"item": "latte"})
                assert shown.reply is not None
                free = shown.reply["proposals"][0]
                assert free["summary"].endswith("(free)")
                with pytest.raises(parley.ParleyError) as caught:
                    await client.commit(free)
                assert caught.value.code == "conflict"
                assert caught.value.reason == "hash_mismatch"
                # the honest proposal still commits
                assert (await client.commit(shown.reply["proposals"][1])).kind == "RECEIPT"
        finally:
            server.close()
            await server.wait_closed()
        assert [f["verb"] for f in seen] == ["HELLO", "INTENT", "COMMIT"]
        assert seen[-1]["proposal"] == "p_paid"

    asyncio.run(run())


def test_agent_refuses_a_proposal_edited_after_it_was_shown() -> None:
    agent = parley.Agent(AGENT, service=SERVICE_ID)
    shown = {
        "id": "p_1",
        "capability": "shop.order",
        "summary": "1 x latte",
        "effects": [],
        "cost": {"amount": 275, "currency": "USD"},
        "risk": "low",
        "undo": None,
        "expires": 4_000_000_000,
    }
    shown["hash"] = parley.proposal_hash(shown)
    for edited in (
        {**shown, "cost": {"amount": 1, "currency": "USD"}},
        {**shown, "hash": "A" * 43},
        {k: v for k, v in shown.items() if k != "hash"},
        {**shown, "effects": "not a list of effects"},
    ):
        with pytest.raises(parley.ParleyError) as caught:
            agent.commit(edited)
        assert caught.value.code == "conflict"
    assert agent.pending == {}
    assert agent.commit(shown)["hash"] == shown["hash"]
