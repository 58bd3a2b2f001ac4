"""Transport robustness: malformed, oversized and aborted input never takes a server down."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import parley

from .runtime_harness import AGENT, PRINCIPAL, grant, load_shop, need_uvicorn

SHOP = load_shop()


def shop() -> parley.Service:
    return SHOP.build_service(trusted=[PRINCIPAL.public])


async def read_frames(reader: asyncio.StreamReader, count: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(count):
        line = await asyncio.wait_for(reader.readline(), 10)
        out.append(json.loads(line))
    return out


def test_tcp_survives_garbage_oversize_and_aborts() -> None:
    async def run() -> None:
        server = await parley.net.serve_tcp(shop(), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"x" * (parley.wire.MAX_FRAME + 10) + b"\n")
            writer.write(b"garbage\n")
            writer.write(b'{"parley":1,"id":"ok","verb":"HELLO"}\n')
            await writer.drain()
            frames = await read_frames(reader, 3)
            assert frames[0]["reason"] == "too_large"
            assert frames[0]["re"] is None
            got = {f.get("re"): f for f in frames[1:]}
            assert got[None]["code"] == "bad_frame"
            assert got["ok"]["kind"] == "BRIEF"
            writer.close()
            # a peer that disconnects halfway through a frame
            _, half = await asyncio.open_connection("127.0.0.1", port)
            half.write(b'{"parley":1,"id":"cut","verb":"HEL')
            await half.drain()
            half.close()
            # the server still answers new connections
            client = await parley.connect(f"parley://127.0.0.1:{port}", parley.Agent(AGENT))
            async with client:
                assert (await client.hello()).kind == "BRIEF"
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(run())


def test_concurrent_failing_undos_keep_their_re() -> None:
    async def run() -> None:
        server = await parley.net.serve_tcp(shop(), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            client = await parley.connect(
                f"parley://127.0.0.1:{port}", parley.Agent(AGENT, [grant()])
            )
            async with client:
                await client.hello()
                frames = [client.agent.undo(f"r_missing{n}") for n in range(24)]
                results = await asyncio.gather(*(client.request(f) for f in frames))
                for frame, result in zip(frames, results, strict=True):
                    assert result.reply is not None
                    assert result.reply["re"] == frame["id"]
                    assert result.code == "not_found"
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(run())


async def raw_http(port: int, data: bytes, *, close_early: bool = False) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    if close_early:
        writer.close()
        return b""
    out = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return out


def post(body: bytes, *, length: int | None = None) -> bytes:
    size = len(body) if length is None else length
    return (
        b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {size}\r\n\r\n".encode()
        + body
    )


def test_http_bridge_survives_malformed_requests() -> None:
    need_uvicorn()

    async def run() -> None:
        server = await parley.net.serve_http(shop(), "127.0.0.1", 0)
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}/"
        try:
            out = await raw_http(port, post(b"{not json"))
            assert out.startswith(b"HTTP/1.1 200")
            assert b'"code":"bad_frame"' in out
            assert b"application/x-ndjson" in out
            out = await raw_http(port, post(b"{}", length=parley.wire.MAX_FRAME + 1))
            assert out.startswith(b"HTTP/1.1 200")
            assert b"too_large" in out
            chunked = (
                b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                b"Connection: close\r\n\r\n"
            )
            piece = b"x" * 65536
            big = b"".join(b"%x\r\n" % len(piece) + piece + b"\r\n" for _ in range(17))
            out = await raw_http(port, chunked + big + b"0\r\n\r\n")
            assert b"too_large" in out
            await raw_http(port, post(b'{"parley":1', length=500), close_early=True)
            out = await raw_http(port, b"\x00\x01garbage\r\n\r\n")
            assert out.startswith(b"HTTP/1.1 400") or out == b""
            out = await raw_http(port, b"PUT / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert out.startswith(b"HTTP/1.1 405")
            status, _headers, body = await parley._http_client.http_request(
                f"http://127.0.0.1:{port}/.well-known/parley", "GET"
            )
            assert status == 200
            assert json.loads(body)["kind"] == "BRIEF"
            status, _, body = await parley._http_client.http_request(url, "GET")
            assert status == 200
            assert json.loads(body)["service"]["id"] == "shop.example"
            status, _, body = await parley._http_client.http_request(
                url, "POST", b'{"parley":1,"id":"z","verb":"DANCE"}'
            )
            assert status == 200
            assert json.loads(body)["code"] == "bad_frame"
            client = await parley.connect(url, parley.Agent(AGENT))
            assert (await client.hello()).kind == "BRIEF"
        finally:
            server.should_exit = True
            await server.task

    asyncio.run(run())


def test_stdio_child_answers_oversized_lines_and_keeps_going() -> None:
    import shlex

    from .runtime_harness import stdio_url

    async def run() -> None:
        argv = shlex.split(stdio_url()[len("stdio:") :])
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(b"y" * 2_000_000 + b"\n")
        proc.stdin.write(b'{"parley":1,"id":"after","verb":"HELLO"}\n')
        await proc.stdin.drain()
        frames = await read_frames(proc.stdout, 2)
        assert frames[0]["reason"] == "too_large"
        assert frames[1]["re"] == "after"
        assert frames[1]["kind"] == "BRIEF"
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 10) == 0

    asyncio.run(run())


def _live_service() -> tuple[parley.Service, Any]:
    import threading

    svc = parley.Service("live.example", name="Live", trusted=[PRINCIPAL.public])
    release = threading.Event()

    @svc.intent("live.go", params={})
    def go(params: dict[str, Any], ctx: parley.Context) -> Any:
        return [parley.offer("go", [{"op": "other", "target": "x"}], undo=60)]

    @go.on_commit
    def run(proposal: dict[str, Any], ctx: parley.Context) -> Any:
        ctx.event("started", 0.1)
        return {"released_by_event": release.wait(10)}

    @go.on_undo
    def back(receipt: dict[str, Any], ctx: parley.Context) -> Any:
        return None

    return svc, release


async def _live_round(client: parley.Client, release: Any) -> None:
    client.on_event = lambda frame: release.set()
    await client.hello()
    offered = await client.intent("live.go", {})
    assert offered.reply is not None
    done = await client.commit(offered.reply["proposals"][0])
    assert done.reply is not None
    assert done.reply["receipt"]["result"] == {"released_by_event": True}
    assert [e["message"] for e in done.events] == ["started"]


def test_events_stream_before_the_commit_finishes() -> None:
    need_uvicorn()
    import time

    async def run() -> None:
        now = int(time.time())
        token = parley.mint_grant(
            PRINCIPAL, AGENT.public, [{"svc": ["live.example"]}], iat=now, nonce="live"
        )
        svc, release = _live_service()
        server = await parley.net.serve_tcp(svc, "127.0.0.1", 0)
        try:
            url = f"parley://127.0.0.1:{server.sockets[0].getsockname()[1]}"
            async with await parley.connect(url, parley.Agent(AGENT, [token])) as client:
                await _live_round(client, release)
        finally:
            server.close()
            await server.wait_closed()
        svc, release = _live_service()
        http = await parley.net.serve_http(svc, "127.0.0.1", 0)
        try:
            url = f"http://127.0.0.1:{http.servers[0].sockets[0].getsockname()[1]}/"
            async with await parley.connect(url, parley.Agent(AGENT, [token])) as client:
                await _live_round(client, release)
        finally:
            http.should_exit = True
            await http.task

    asyncio.run(run())


def test_serving_a_url_on_port_0_takes_a_free_port_not_the_default() -> None:
    # Port 0 is "any free port", as for serve_tcp; it used to read as "no port" and bind
    # 7447 (parley://) or 80 (http://) instead (review i24 cli #4).
    need_uvicorn()

    async def run() -> None:
        tcp = await parley.serve("parley://127.0.0.1:0", shop())
        http = await parley.serve("http://127.0.0.1:0/", shop())
        try:
            tcp_port = tcp.sockets[0].getsockname()[1]
            http_port = http.servers[0].sockets[0].getsockname()[1]
            assert tcp_port not in (0, 7447)
            assert http_port not in (0, 80)
            client = await parley.connect(f"parley://127.0.0.1:{tcp_port}", parley.Agent(AGENT))
            async with client:
                assert (await client.hello()).kind == "BRIEF"
        finally:
            tcp.close()
            await tcp.wait_closed()
            http.should_exit = True
            await http.task

    asyncio.run(run())
