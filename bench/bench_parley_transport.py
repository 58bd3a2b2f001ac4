"""Parley transports: what TCP and the HTTP bridge add over the service called in-process.

    python bench/bench_parley_transport.py [--quick] [--rounds N]

Every request is an ASK with a fresh proof of possession (a new Ed25519 signature each
time) to the example shop. Printed, in one run, best and median of interleaved rounds:

* in-process: ``Service.handle`` on the encoded frame, one after another: the floor (frame
  parsing, proof verification, the handler, fitting the reply); the client's own work
  (building and signing the frame, parsing the reply) is timed apart, because on loopback
  it runs in the same process and on the same two cores as the server;
* the same through ``asyncio.to_thread`` (the worker-thread hop every transport makes);
* TCP at 1, 8 and 32 requests in flight, and the ratio of its time per request to the
  floor plus the client's work (the transport's share is what is above 1.00x);
* the same frames against a plain NDJSON echo server (what asyncio alone costs);
* the HTTP bridge (uvicorn) against a bare ASGI app echoing the body, through the same
  small HTTP client, 8 in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import statistics
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
        lines = parley.wire.LineBuffer()
        while data := await reader.read(65536):
            for line in lines.feed(data):
                if line is not None:
                    frame = parley.wire.parse_frame(line)
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
            writer.write(parley.wire.encode_frame(frame))
            await writer.drain()
            await future

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(total)))
    rate = total / (time.perf_counter() - start)
    writer.close()
    task.cancel()
    return rate


def in_process(total: int) -> tuple[float, float]:
    """(floor, client) seconds per request: ``Service.handle`` on bytes, and the agent's side."""
    service = shop()
    agent = parley.Agent(AGENT, service="shop.example")
    frames = []
    start = time.perf_counter()
    for _ in range(total):
        frames.append(parley.wire.encode_frame(agent.ask("shop.search", {"query": "latte"})))
        agent.pending.clear()
    sign = time.perf_counter() - start
    replies = []
    start = time.perf_counter()
    for frame in frames:
        replies.append(service.handle(frame[:-1]))
    floor = time.perf_counter() - start
    encoded = [parley.wire.encode_frame(r[-1]) for r in replies]
    start = time.perf_counter()
    for line in encoded:
        parley.wire.parse_frame(line[:-1])
    parse = time.perf_counter() - start
    return floor / total, (sign + parse) / total


async def threaded(total: int) -> float:
    """Seconds per request of ``Service.handle`` through ``asyncio.to_thread``, one at a time:
    the floor plus the worker-thread hop every transport makes (no socket)."""
    service = shop()
    agent = parley.Agent(AGENT, service="shop.example")
    frames = []
    for _ in range(total):
        frames.append(parley.wire.encode_frame(agent.ask("shop.search", {"query": "latte"}))[:-1])
        agent.pending.clear()
    start = time.perf_counter()
    for frame in frames:
        await asyncio.to_thread(service.handle, frame)
    return (time.perf_counter() - start) / total


async def bench_tcp(total: int, inflight: int) -> tuple[float, float]:
    """(Parley, echo) seconds per request over TCP with ``inflight`` requests in flight."""
    server = await parley.net.serve_tcp(shop(), "127.0.0.1", 0)
    echo = await asyncio.start_server(echo_connection, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        client = await parley.connect(f"parley://127.0.0.1:{port}", parley.Agent(AGENT))
        async with client:
            await client.hello()
            parley_rate = await run_client(client, total, inflight)
        echo_rate = await echo_client(echo.sockets[0].getsockname()[1], total, inflight)
    finally:
        server.close()
        echo.close()
    return 1 / parley_rate, 1 / echo_rate


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

    server = await parley.net.serve_http(shop(), "127.0.0.1", 0)
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
                    f"http://127.0.0.1:{echo_port}/", "POST", parley.wire.encode_frame(frame)
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


def _stats(samples: list[float]) -> tuple[float, float]:
    return min(samples), statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests and rounds")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (3)")
    args = parser.parse_args()
    total, http_total = (300, 100) if args.quick else (2000, 600)
    rounds = 1 if args.quick else args.rounds
    floor: list[float] = []
    client: list[float] = []
    hop: list[float] = []
    tcp: dict[int, list[float]] = {1: [], 8: [], 32: []}
    echo: dict[int, list[float]] = {1: [], 8: [], 32: []}
    http: list[float] = []
    asgi: list[float] = []
    for _ in range(rounds):  # interleaved: every figure sees the same machine load
        f, c = in_process(total)
        floor.append(f)
        client.append(c)
        hop.append(asyncio.run(threaded(total)))
        for inflight in tcp:
            p, e = asyncio.run(bench_tcp(total, inflight))
            tcp[inflight].append(p)
            echo[inflight].append(e)
        with contextlib.suppress(ImportError):
            h, a = asyncio.run(bench_http(http_total))
            http.append(1 / h)
            asgi.append(1 / a)
    us = 1e6
    fb, fm = _stats(floor)
    cb, cm = _stats(client)
    print(f"in-process floor (Service.handle)   best {fb * us:7.1f} us  median {fm * us:7.1f} us")
    print(f"client side (sign frame, parse)     best {cb * us:7.1f} us  median {cm * us:7.1f} us")
    tb, tm = _stats(hop)
    print(f"in-process via to_thread           best {tb * us:7.1f} us  median {tm * us:7.1f} us")
    base = fb + cb
    for inflight, samples in tcp.items():
        pb, pm = _stats(samples)
        eb, _ = _stats(echo[inflight])
        print(
            f"TCP {inflight:2d} in flight  {1 / pb:7.0f} req/s  best {pb * us:7.1f} us"
            f"  median {pm * us:7.1f} us  vs floor+client {pb / base:5.2f}x"
            f"  (echo {1 / eb:7.0f} req/s)"
        )
    if http:
        hb, hm = _stats(http)
        ab, _ = _stats(asgi)
        print(
            f"HTTP bridge 8 in flight {1 / hb:6.0f} req/s  best {hb * us:7.1f} us  median"
            f" {hm * us:7.1f} us  vs bare ASGI {1 / ab:6.0f} req/s: {ab / hb:5.2f}x"
        )
    else:
        print("HTTP bridge: skipped (needs uvicorn: pip install 'principal-protocols[http]')")


if __name__ == "__main__":
    main()
