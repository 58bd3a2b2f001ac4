"""PXP over MCP, end to end: two AI agents negotiate through a room server.

The server runs on a free port of 127.0.0.1 (uvicorn, rooms in a temporary SQLite file).
Two MCP clients of the official SDK play the buyer's and the seller's proxies. The seller's
proxy escalates; the seller answers on their own web page (a real HTML form post); the
seller's proxy then agrees, and the buyer fetches the decision brief over MCP and checks it
against the ledger.

Needs the extras: pip install "principal-protocols[mcp,http]".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import pxp
from pxp.server import ServerConfig, create_app, sqlite_service

BUYER = {
    "principal": {"name": "Ann Lee", "role": "office manager"},
    "goal": "Buy 200 office chairs",
    "must_haves": ["Delivery by June"],
    "may_agree_to": ["Price up to 4800 EUR"],
    "known_facts": ["Budget is 5000 EUR"],
}
SELLER = {
    "principal": {"name": "Bo Chen", "role": "sales lead"},
    "goal": "Sell 200 chairs at a good price",
    "must_haves": ["Price at least 4000 EUR"],
    "escalate_when": ["Price under 4600 EUR"],
}


@contextlib.contextmanager
def room_server(db: Path) -> Iterator[str]:
    """Run the room server on a free local port; yield its base URL."""
    # IPPROTO_TCP, so asyncio sets TCP_NODELAY on accepted connections (else Nagle
    # and delayed ACKs add about 40 ms to every keep-alive request).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = create_app(sqlite_service(db), ServerConfig(public_url=base))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


@contextlib.asynccontextmanager
async def agent(base: str) -> Any:
    """An MCP client (the SDK's streamable-HTTP transport) acting as one proxy."""
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        yield client


async def tool(client: Client, name: str, **args: Any) -> dict[str, Any]:
    """Call one tool and return its JSON result (a refusal raises)."""
    result = await client.call_tool(name, args)
    text = result.content[0].text  # type: ignore[union-attr]
    if result.is_error:
        raise RuntimeError(text)
    data: dict[str, Any] = json.loads(text)
    return data


async def negotiate(base: str) -> None:
    """The whole negotiation, narrated."""
    async with agent(base) as ann, agent(base) as bo, httpx2.AsyncClient() as browser:
        created = await ann.call_tool(
            "create_room",
            {"topic": "200 office chairs", "your_principal": "Ann Lee", "counterpart": "Bo Chen"},
        )
        room = json.loads(created.content[0].text)
        print(f"1. Ann's agent opened room {room['room_id']}.")
        print("   It got its seat link and Bo's invite; Ann's principal page link went to")
        print("   the human only (MCP audience 'user'), never into the model's JSON.")

        await tool(ann, "join_room", link=room["your_link"], agent_name="ann-assistant")
        joined = await bo.call_tool(
            "join_room", {"link": room["invite_link_for_counterpart"], "agent_name": "bo-assistant"}
        )
        for_bo = joined.content[1].text
        seller_page = re.findall(r"http://\S+/p/[0-9a-f]{16}/[A-Za-z0-9_-]{43}", for_bo)[0]
        # the invite is spent: Bo's agent uses the seat link join_room answered from now on
        bo_link = json.loads(joined.content[0].text)["your_link"]
        print("   Bo's agent spent the invite for a seat link of its own; Bo's page link")
        print("   came to Bo alone, with that first join_room.")
        await tool(ann, "seal_intent_card", link=room["your_link"], card=BUYER)
        view = await tool(bo, "seal_intent_card", link=bo_link, card=SELLER)
        print("2. Both agents joined and sealed their principals' intent cards.")
        them = view["counterpart"]
        print(f"   Bo's agent sees Ann only as {them['principal']!r} with card hash")
        print(f"   {them['card_hash'][:16]}..., never her card body.")

        sent = await tool(
            ann,
            "send_envelope",
            link=room["your_link"],
            message="We offer 4500 EUR for 200 chairs delivered by June.",
            claims=[{"text": "Budget is 5000 EUR", "origin": "stated", "ref": "known_facts[0]"}],
            proposal={"terms": ["Price 4500 EUR", "Delivery by June"], "depends_on": ["new1"]},
            status="continue",
        )
        print(f"3. Ann's agent proposed: {sent['accepted_envelope']['proposal']['terms']}.")

        turn = await tool(bo, "wait_for_turn", link=bo_link, timeout_seconds=10)
        paused = await tool(
            bo,
            "send_envelope",
            link=bo_link,
            message="I need to check this price with Bo.",
            reviews=[{"claim_id": c["id"], "verdict": "accept"} for c in turn["claims_to_review"]],
            status="escalate",
            escalation={"question": "May I accept 4500 EUR?", "reason": "escalate_when[0]"},
        )
        print(
            f"4. 4500 EUR is under Bo's line, so his agent escalated: the room is "
            f"{paused['room']['status']}."
        )

        page = await browser.get(seller_page)
        assert "May I accept 4500 EUR?" in page.text
        answer = await browser.post(
            seller_page + "/answer",
            data={"answer": "Yes, 4500 EUR is fine with June delivery."},
            headers={"Origin": base},
        )
        print(
            f"5. Bo read the question on his web page and answered with a form post "
            f"(HTTP {answer.status_code})."
        )

        await tool(bo, "wait_for_turn", link=bo_link, timeout_seconds=10)
        done = await tool(
            bo,
            "send_envelope",
            link=bo_link,
            message="Deal.",
            status="agree",
        )
        print(f"6. Bo's agent agreed; the room is {done['room']['status']}.")

        result = await tool(ann, "get_brief", link=room["your_link"])
        head = pxp.verify_ledger(result["ledger"])
        answers = [e["data"]["via"] for e in result["ledger"] if e["type"] == "principal_answer"]
        print(
            f"7. The brief fetched over MCP: outcome {result['brief']['outcome']}, "
            f"{len(result['ledger'])} ledger entries,"
        )
        same = head == result["brief"]["ledger"]["head"]
        print(f"   head {head[:16]}... matches the brief: {same}; Bo answered via {answers[0]!r}.")
        print()
        print(result["markdown"])


def main() -> None:
    """Run the demo."""
    print("PXP over MCP: two agents negotiate in a room server\n")
    with tempfile.TemporaryDirectory() as tmp, room_server(Path(tmp) / "rooms.sqlite") as base:
        print(f"Room server: {base}/mcp\n")
        asyncio.run(negotiate(base))


if __name__ == "__main__":
    main()
