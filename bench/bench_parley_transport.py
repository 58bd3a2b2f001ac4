"""Parley transports: round-trip throughput against a plain NDJSON echo on the same transport.

    python bench/bench_parley_transport.py [--quick]

Over TCP on 127.0.0.1: an agent sends ASK requests (proof of possession on each, 32 in
flight) to the example shop through the Parley runtime, against the same client loop
talking to a plain NDJSON echo server. Over the HTTP bridge (uvicorn): the same ASK POSTed
to the ASGI bridge, against a plain ASGI app that echoes the body, both through the same
small HTTP client. Each figure is requests per second and the ratio Parley / echo,
measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import time
from pathlib import Path
from typing import Any

import parley
from parley._http_client import http_request

ROOT = Path(__file__).resolve().parents[1]
PRINCIPAL = parley.key_from_seed(bytes([1]) * 32)
AGENT = parley.key_from_seed(bytes([2]) * 32)


def shop() -> parley.Service:
    spec = importlib.util.spec_from_file_location(
        "parley_shop", ROOT / "examples" / "parley_shop.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    service: parley.Service = module.build_service(trusted=[PRINCIPAL.public])
    return service


async def echo_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(asyncio.CancelledError, ConnectionError):
        while line := await reader.readline():
            writer.write(line)
            await writer.drain()
    writer.close()


async def run_client(client: parley.Client, total: int, inflight: int) -> float:
    agent = client.agent
    slots = asyncio.Semaphore(inflight)

    async def one() -> None:
        async with slots:
            result = await client.request(agent.ask("shop.search", {"query": "latte"}))
            assert result.ok

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(total)))
    return total / (time.perf_counter() - start)


async def echo_client(port: int, total: int, inflight: int) -> float:
    """The same request frames (signed by the same agent) sent to an echo server."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    agent = parley.Agent(AGENT, service="shop.example")
    waiting: dict[str, asyncio.Future[None]] = {}

    async def pump() -> None:
        lines = parley.LineBuffer()
        while data := await reader.read(65536):
            for line in lines.feed(data):
                if line is not None:
                    frame = parley.parse_frame(line)
                    future = waiting.pop(frame["id"], None)
                    if future is not None:
                        future.set_result(None)

    task = asyncio.create_task(pump())
    slots = asyncio.Semaphore(inflight)

    async def one() -> None:
        async with slots:
            frame = agent.ask("shop.search", {"query": "latte"})
            agent.pending.clear()
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            waiting[frame["id"]] = future
            writer.write(parley.encode_frame(frame))
            await writer.drain()
            await future

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(total)))
    rate = total / (time.perf_counter() - start)
    writer.close()
    task.cancel()
    return rate


async def bench_tcp(total: int) -> tuple[float, float]:
    server = await parley.serve_tcp(shop(), "127.0.0.1", 0)
    echo = await asyncio.start_server(echo_connection, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        client = await parley.connect(f"parley://127.0.0.1:{port}", parley.Agent(AGENT))
        async with client:
            await client.hello()
            parley_rate = await run_client(client, total, 32)
        echo_rate = await echo_client(echo.sockets[0].getsockname()[1], total, 32)
    finally:
        server.close()
        echo.close()
    return parley_rate, echo_rate


async def echo_app(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/x-ndjson")],
        }
    )
    await send({"type": "http.response.body", "body": body + b"\n"})


async def bench_http(total: int) -> tuple[float, float]:
    import uvicorn

    server = await parley.serve_http(shop(), "127.0.0.1", 0)
    config = uvicorn.Config(echo_app, host="127.0.0.1", port=0, log_level="warning")
    echo = uvicorn.Server(config)
    echo_task = asyncio.create_task(echo.serve())
    while not echo.started:
        await asyncio.sleep(0.01)
    try:
        port = server.servers[0].sockets[0].getsockname()[1]
        client = await parley.connect(f"http://127.0.0.1:{port}/", parley.Agent(AGENT))
        await client.hello()
        parley_rate = await run_client(client, total, 8)
        echo_port = echo.servers[0].sockets[0].getsockname()[1]
        agent = parley.Agent(AGENT, service="shop.example")
        slots = asyncio.Semaphore(8)

        async def one() -> None:
            async with slots:
                frame = agent.ask("shop.search", {"query": "latte"})
                agent.pending.clear()
                status, _, _ = await http_request(
                    f"http://127.0.0.1:{echo_port}/", "POST", parley.encode_frame(frame)
                )
                assert status == 200

        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(total)))
        echo_rate = total / (time.perf_counter() - start)
    finally:
        server.should_exit = True
        echo.should_exit = True
        await server.task
        await echo_task
    return parley_rate, echo_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests")
    args = parser.parse_args()
    tcp_total, http_total = (500, 200) if args.quick else (5000, 1500)
    for name, bench, total in (
        ("TCP", bench_tcp, tcp_total),
        ("HTTP bridge", bench_http, http_total),
    ):
        parley_rate, echo_rate = asyncio.run(bench(total))
        print(
            f"{name:12} Parley {parley_rate:8.0f} req/s   echo {echo_rate:8.0f} req/s   "
            f"ratio {parley_rate / echo_rate:.2f}x  ({total} requests)"
        )


if __name__ == "__main__":
    main()
