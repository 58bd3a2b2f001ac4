"""Shared helpers of the PXP MCP server tests: a real uvicorn on 127.0.0.1 and SDK clients."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.types import ASGIApp


def free_socket(port: int = 0) -> socket.socket:
    # IPPROTO_TCP, so asyncio sets TCP_NODELAY on accepted connections (else Nagle
    # and delayed ACKs add about 40 ms to every keep-alive request).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


@contextlib.contextmanager
def running(app: ASGIApp, sock: socket.socket) -> Iterator[str]:
    """Serve ``app`` with uvicorn on ``sock`` in a thread; yield the base URL; stop on exit."""
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


@contextlib.asynccontextmanager
async def mcp_client(
    base: str, *, headers: dict[str, str] | None = None, mode: str = "auto"
) -> AsyncIterator[Client]:
    """An MCP client of the SDK over streamable HTTP (``mode`` auto or legacy)."""
    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call ``tool``; return its JSON result, or raise AssertionError with the refusal."""
    result = await client.call_tool(tool, args)
    text = result.content[0].text  # type: ignore[union-attr]
    if result.is_error:
        raise AssertionError(f"refused: {text}")
    data: dict[str, Any] = json.loads(text)
    return data


async def refused(client: Client, tool: str, args: dict[str, Any]) -> str:
    """Call ``tool`` expecting a refusal; return the refusal text."""
    result = await client.call_tool(tool, args)
    assert result.is_error, f"{tool} was not refused: {result.content}"
    return str(result.content[0].text)  # type: ignore[union-attr]
