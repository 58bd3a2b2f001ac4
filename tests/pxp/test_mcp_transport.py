"""PXP MCP server, transport level: tool list, sign-in, links, Host checks, body limits.

A real uvicorn on 127.0.0.1 (ephemeral port) and the MCP SDK's own streamable-HTTP client.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pxp import SqliteRoomStore
from pxp.server import (
    SIGN_IN_REFUSAL,
    UNKNOWN_LINK,
    MemoryLinkStore,
    RoomService,
    ServerConfig,
    SqliteLinkStore,
    check_link,
    create_app,
    mint_links,
    parse_link,
)

from ..listening import listening
from ._mcp_harness import free_socket, mcp_client, refused, running

SNAPSHOT = (
    Path(__file__).resolve().parents[2]
    / "vectors"
    / "third_party"
    / "pxp"
    / "mcp-tools.snapshot.json"
)
KEY = "k-" + "7" * 40


def _serve(service: RoomService | None = None, **config: object):  # type: ignore[no-untyped-def]
    sock = free_socket()
    port = sock.getsockname()[1]
    cfg = ServerConfig(public_url=f"http://127.0.0.1:{port}", **config)  # type: ignore[arg-type]
    return running(create_app(service or RoomService(), cfg), sock)


def _counter_bytes():  # type: ignore[no-untyped-def]
    state = {"n": 0}

    def take(n: int) -> bytes:
        state["n"] += 1
        return bytes([state["n"] % 256]) * n

    return take


# --- links -----------------------------------------------------------------------------


def test_links_have_256_bits_and_only_digests_are_stored(tmp_path: Path) -> None:
    made = mint_links(_counter_bytes())
    assert len(made.room_id) == 16
    for token in made.tokens.values():
        assert len(token) == 43  # 32 bytes in base64url
    for store in (MemoryLinkStore(), SqliteLinkStore(tmp_path / "links.sqlite")):
        store.add_room(made.room_id, made.digests())
        stored = store.room_digests(made.room_id)
        assert set(stored.values()).isdisjoint(made.tokens.values())
        for seat in ("A", "B"):
            for kind in ("seat", "principal"):
                link = made.link("http://h", seat, kind)  # type: ignore[arg-type]
                grant = check_link(store, link, kind)  # type: ignore[arg-type]
                assert (grant.room_id, grant.seat, grant.kind) == (made.room_id, seat, kind)
                other = "principal" if kind == "seat" else "seat"
                with pytest.raises(ValueError, match="does not open"):
                    check_link(store, link, other)  # type: ignore[arg-type]
    raw = (tmp_path / "links.sqlite").read_bytes()
    for token in made.tokens.values():
        assert token.encode() not in raw


@pytest.mark.parametrize(
    "link",
    [
        None,
        7,
        "",
        "http://h/s/zzzz/abc",
        "0123456789abcdef.short",
        "x" * 5000,
        "0123456789abcdef." + "A" * 43,  # well formed, unknown room
    ],
)
def test_unknown_links_are_refused_with_one_sentence(link: object) -> None:
    store = MemoryLinkStore()
    made = mint_links(_counter_bytes())
    store.add_room(made.room_id, made.digests())
    with pytest.raises(ValueError, match="does not open") as info:
        check_link(store, link, "seat")
    assert getattr(info.value, "code", None) == "link_unknown"
    assert UNKNOWN_LINK in str(info.value)


def test_a_flipped_character_opens_nothing() -> None:
    store = MemoryLinkStore()
    made = mint_links(_counter_bytes())
    store.add_room(made.room_id, made.digests())
    link = made.link("http://h", "A", "seat")
    room, token = parse_link(link)
    flipped = token[:-1] + ("B" if token[-1] != "B" else "C")
    with pytest.raises(ValueError, match="does not open"):
        check_link(store, f"{room}.{flipped}", "seat")


# --- over HTTP -------------------------------------------------------------------------


def test_tools_match_the_reference_snapshot() -> None:
    reference = {t["name"]: t for t in json.loads(SNAPSHOT.read_text())}

    async def go(base: str) -> None:
        async with mcp_client(base) as client:
            tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == list(reference)
        for tool in tools:
            ref = reference[tool.name]
            schema = dict(ref["inputSchema"])
            if tool.name == "join_room":
                # ours (spec 9a): an optional join_id lets a lost answer be asked for again
                schema["properties"] = {**schema["properties"], "join_id": {"type": "string"}}
            assert tool.input_schema == schema, tool.name
            hints = tool.annotations.model_dump(by_alias=True, exclude_none=True)  # type: ignore[union-attr]
            expected = dict(ref["annotations"])
            if tool.name == "join_room":
                # ours (spec 9a): an invite joins once, so join_room is not idempotent
                expected["idempotentHint"] = False
            assert hints == expected, tool.name
            assert tool.description

    with _serve() as base:
        asyncio.run(go(base))


def test_sign_in_refuses_missing_and_wrong_keys_and_creates_nothing(tmp_path: Path) -> None:
    args = {"topic": "Lease", "your_principal": "Ann", "counterpart": "Bo"}
    rooms = SqliteRoomStore(tmp_path / "rooms.sqlite")
    service = RoomService(rooms, SqliteLinkStore(tmp_path / "rooms.sqlite"))

    async def go(base: str) -> None:
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": f"Basic {KEY}"},
            {"Authorization": "Bearer"},
            {"Authorization": f"Bearer {KEY}x"},
        ):
            async with mcp_client(base, headers=headers) as client:
                text = await refused(client, "create_room", args)
                assert text.endswith(SIGN_IN_REFUSAL)
                assert KEY not in text
        # A key passed as a tool argument is not a sign-in either.
        async with mcp_client(base) as client:
            text = await refused(client, "create_room", {**args, "passcode": KEY})
            assert text.endswith(SIGN_IN_REFUSAL)
        assert rooms.room_ids() == []
        async with mcp_client(base, headers={"Authorization": f"Bearer {KEY}"}) as client:
            made = await client.call_tool("create_room", args)
            assert not made.is_error
        assert len(rooms.room_ids()) == 1

    with _serve(service=service, agent_keys=(KEY, "another-key")) as base:
        asyncio.run(go(base))


def test_unknown_link_is_refused_by_every_seat_tool() -> None:
    bogus = "http://127.0.0.1/s/0123456789abcdef/" + "Q" * 43

    async def go(base: str) -> None:
        async with mcp_client(base, mode="legacy") as client:
            for tool, args in [
                ("join_room", {"link": bogus}),
                ("get_room", {"link": bogus}),
                ("wait_for_turn", {"link": bogus, "timeout_seconds": 1}),
                ("send_envelope", {"link": bogus, "message": "hi", "status": "continue"}),
                ("answer_escalation", {"link": bogus, "answer": "yes"}),
                (
                    "seal_intent_card",
                    {
                        "link": bogus,
                        "card": {"principal": {"name": "x"}, "goal": "g", "must_haves": []},
                    },
                ),
                ("get_brief", {"link": bogus}),
            ]:
                text = await refused(client, tool, args)
                assert UNKNOWN_LINK in text, (tool, text)
                assert "Q" * 43 not in text
            text = await refused(client, "get_brief", {"room_id": "0123456789abcdef"})
            assert "link" in text

    with _serve() as base:
        asyncio.run(go(base))


def test_dns_rebinding_hosts_are_refused_everywhere() -> None:
    async def go(base: str) -> None:
        async with httpx2.AsyncClient() as http:
            for path in ("/mcp", "/p/0123456789abcdef/" + "a" * 43, "/s/x/y"):
                r = await http.get(base + path, headers={"Host": "evil.example:80"})
                assert r.status_code == 421, path
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            r = await http.post(
                base + "/mcp",
                json=body,
                headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
            )
            assert r.status_code == 421

    with _serve() as base:
        asyncio.run(go(base))


def test_configured_public_host_is_allowed() -> None:
    async def go(base: str) -> None:
        async with httpx2.AsyncClient() as http:
            r = await http.get(base + "/s/x/y", headers={"Host": "rooms.example.org"})
            assert r.status_code == 200
            r = await http.get(base + "/s/x/y", headers={"Host": "127.0.0.1:1"})
            assert r.status_code == 421

    with _serve(
        allowed_hosts=("rooms.example.org",), allowed_origins=("https://rooms.example.org",)
    ) as base:
        asyncio.run(go(base))


def test_oversized_bodies_are_refused_before_parsing() -> None:
    async def go(base: str) -> None:
        big = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_room", "arguments": {"link": "x" * 70_000}},
        }
        async with httpx2.AsyncClient() as http:
            r = await http.post(
                base + "/mcp",
                content=json.dumps(big).encode(),
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
            )
            assert r.status_code == 413
            r = await http.post(
                base + "/p/0123456789abcdef/" + "a" * 43 + "/answer",
                content=b"answer=" + b"x" * 70_000,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            assert r.status_code == 413

    with _serve(max_body_bytes=64 * 1024) as base:
        asyncio.run(go(base))


def test_web_page_refuses_unknown_links_and_foreign_origins() -> None:
    async def go(base: str) -> None:
        page = base + "/p/0123456789abcdef/" + "a" * 43
        async with httpx2.AsyncClient() as http:
            r = await http.get(page)
            assert r.status_code == 404
            # Not "no-referrer": under it a browser posts the page's own forms with
            # "Origin: null", which the origin check refuses. Other sites still get no referrer.
            assert r.headers["referrer-policy"] == "same-origin"
            assert "a" * 43 not in r.text
            for headers in (
                {"Origin": "https://evil.example"},
                {"Origin": "null"},  # a sandboxed frame, or a page under no-referrer
                {"Origin": "http://127.0.0.1.evil.example:80"},
                {"Origin": "http://127.0.0.1:80@evil.example"},
                {"Origin": base, "Sec-Fetch-Site": "cross-site"},
                {"Origin": base, "Sec-Fetch-Site": "same-site"},
                {"Sec-Fetch-Site": "cross-site"},
            ):
                r = await http.post(page + "/answer", data={"answer": "yes"}, headers=headers)
                assert r.status_code == 403, headers

    with _serve() as base:
        asyncio.run(go(base))


def test_pxp_serve_runs_the_server_with_sign_in(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys
    import time

    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    env = {**os.environ, "PXP_AGENT_KEYS": KEY}
    argv = [
        sys.executable,
        "-m",
        "pxp",
        "serve",
        "--port",
        str(port),
        "--db",
        str(tmp_path / "r.sqlite"),
    ]
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if not listening(proc.pid, port):  # this child, not whoever took the port
                    raise httpx2.TransportError("not listening yet")
                httpx2.get(base + "/s/x/y", timeout=1)
                break
            except httpx2.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline
                time.sleep(0.1)

        async def go() -> None:
            args = {"topic": "T", "your_principal": "P", "counterpart": "C"}
            async with mcp_client(base) as client:
                assert (await refused(client, "create_room", args)).endswith(SIGN_IN_REFUSAL)
            async with mcp_client(base, headers={"Authorization": f"Bearer {KEY}"}) as client:
                result = await client.call_tool("create_room", args)
                assert not result.is_error
                made = json.loads(result.content[0].text)  # type: ignore[union-attr]
                assert made["your_link"].startswith(f"{base}/room/")

        asyncio.run(go())
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert f"{base}/mcp" in err
    assert KEY not in err


_MADE = mint_links(_counter_bytes())
_STORE = MemoryLinkStore()
_STORE.add_room(_MADE.room_id, _MADE.digests())
_ALPHABET = "0123456789abcdefABCDEF_-/."


@settings(max_examples=200, deadline=None)
@given(
    seat=st.sampled_from(["A", "B"]),
    kind=st.sampled_from(["seat", "principal"]),
    data=st.data(),
)
def test_any_single_character_change_opens_nothing(
    seat: str, kind: str, data: st.DataObject
) -> None:
    link = _MADE.link("http://h", seat, kind)  # type: ignore[arg-type]
    tail = len(link) - 61  # room id, separator and token: the part that names the seat
    # Every character of the room id and the secret (the separator may be "/" or ".").
    index = data.draw(
        st.integers(min_value=tail + 1, max_value=len(link) - 1).filter(lambda i: i != tail + 17)
    )
    char = data.draw(st.sampled_from(_ALPHABET).filter(lambda c: c != link[index]))
    mutated = link[:index] + char + link[index + 1 :]
    for wanted in ("seat", "principal"):
        with pytest.raises(ValueError, match="does not open"):
            check_link(_STORE, mutated, wanted)  # type: ignore[arg-type]
