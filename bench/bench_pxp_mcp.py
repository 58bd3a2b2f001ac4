"""What the MCP binding costs: PXP room actions over MCP Streamable HTTP (loopback, SQLite)
against the same actions on the room service in process (same SQLite store), and against
the bare engine (``pxp.Room`` in memory).

Prints per-call times and the ratios. Run: ``.venv/bin/python bench/bench_pxp_mcp.py [N]``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import pxp
from pxp.server import SeatGrant, ServerConfig, create_app, sqlite_service

CARD_A = {"principal": {"name": "Ann"}, "goal": "Buy chairs", "must_haves": ["June delivery"]}
CARD_B = {"principal": {"name": "Bo"}, "goal": "Sell chairs", "must_haves": ["4000 EUR"]}
OFFER = {"message": "4500?", "proposal": {"terms": ["4500 EUR"]}, "status": "continue"}
AGREE = {"message": "Deal.", "status": "agree"}


def bare_engine(rooms: int) -> float:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    start = time.perf_counter()
    for i in range(rooms):
        room = pxp.Room.open(f"r{i}", topic="Chairs", now=now)
        room.seal("A", CARD_A, now=now)
        room.seal("B", CARD_B, now=now)
        room.send("A", OFFER, now=now)
        room.send("B", AGREE, now=now)
        room.brief()
    return (time.perf_counter() - start) / rooms


def in_process(db: Path, rooms: int, reads: int) -> tuple[float, float]:
    service = sqlite_service(db)
    start = time.perf_counter()
    for _ in range(rooms):
        made = service.create_room(
            topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
        )
        a = service.grant(made.link("http://x", "A", "seat"), "seat")
        invite = service.grant(made.link("http://x", "B", "invite"), "invite")
        b = SeatGrant(made.room_id, "B", "seat")  # the seat the invite is spent for
        service.join(invite, "bo")
        service.seal(a, CARD_A, "mcp")
        service.seal(b, CARD_B, "mcp")
        service.send(a, OFFER)
        service.send(b, AGREE)
        service.brief_data(a)
    per_room = (time.perf_counter() - start) / rooms
    start = time.perf_counter()
    for _ in range(reads):
        service.view(a)
    return per_room, (time.perf_counter() - start) / reads


async def over_mcp(base: str, rooms: int, reads: int) -> tuple[float, float, str]:
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):

        async def tool(name: str, **args: Any) -> dict[str, Any]:
            result = await client.call_tool(name, args)
            assert not result.is_error, result.content
            data: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
            return data

        start = time.perf_counter()
        for _ in range(rooms):
            made = await tool("create_room", topic="Chairs", your_principal="Ann", counterpart="Bo")
            a = made["your_link"]
            joined = await tool(
                "join_room", link=made["invite_link_for_counterpart"], agent_name="bo"
            )
            b = joined["your_link"]  # the invite is spent for B's own seat link
            await tool("seal_intent_card", link=a, card=CARD_A)
            await tool("seal_intent_card", link=b, card=CARD_B)
            await tool("send_envelope", link=a, **OFFER)
            await tool("send_envelope", link=b, **AGREE)
            await tool("get_brief", link=a)
        per_room = (time.perf_counter() - start) / rooms
        start = time.perf_counter()
        for _ in range(reads):
            await tool("get_room", link=a)
        return per_room, (time.perf_counter() - start) / reads, a


def raw_json_rpc(base: str, link: str, reads: int) -> float:
    """get_room as plain JSON-RPC POSTs on one keep-alive socket, each sent in one write.

    No MCP client library in the way: this is the server's own cost per request.
    """
    host, port = base.removeprefix("http://").split(":")
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_room", "arguments": {"link": link}},
        }
    ).encode()
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection((host, int(port))) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = conn.makefile("rb")
        start = time.perf_counter()
        for _ in range(reads):
            conn.sendall(request)
            status = reader.readline()
            assert b" 200 " in status, status
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            reader.read(length)
        elapsed = time.perf_counter() - start
        reader.close()
    return elapsed / reads


def main() -> None:
    rooms = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    reads = rooms * 5
    with tempfile.TemporaryDirectory() as tmp:
        engine = bare_engine(rooms)
        local_room, local_read = in_process(Path(tmp) / "local.sqlite", rooms, reads)
        # IPPROTO_TCP, so asyncio sets TCP_NODELAY on accepted connections (else Nagle
        # and delayed ACKs add about 40 ms to every keep-alive request).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        app = create_app(sqlite_service(Path(tmp) / "mcp.sqlite"), ServerConfig(public_url=base))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.01)
        try:
            mcp_room, mcp_read, link = asyncio.run(over_mcp(base, rooms, reads))
            raw_read = raw_json_rpc(base, link, reads)
        finally:
            server.should_exit = True
            thread.join()
    ms = 1000.0
    print(f"PXP over MCP, {rooms} rooms (create, 2 seals, offer, agree, brief), {reads} reads")
    print(f"  bare engine, in memory      {engine * ms:8.2f} ms/room   (baseline)")
    print(
        f"  room service, SQLite        {local_room * ms:8.2f} ms/room   "
        f"{local_room / engine:6.1f}x engine"
    )
    print(
        f"  MCP over HTTP, SQLite       {mcp_room * ms:8.2f} ms/room   "
        f"{mcp_room / local_room:6.1f}x service"
    )
    print(f"  get_room in process         {local_read * ms:8.2f} ms/call  (baseline)")
    print(
        f"  get_room over MCP           {mcp_read * ms:8.2f} ms/call  "
        f"{mcp_read / local_read:6.1f}x in process (SDK client)"
    )
    print(
        f"  get_room, raw JSON-RPC      {raw_read * ms:8.2f} ms/call  "
        f"{raw_read / local_read:6.1f}x in process (raw socket)"
    )


if __name__ == "__main__":
    main()
