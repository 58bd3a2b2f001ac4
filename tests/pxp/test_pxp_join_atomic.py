"""A join is all or nothing across the room and link stores, and an honest retry of a join
whose reply was lost is not a contest (review i25b, findings 4 and 5; spec §8, §9a).

Everything runs on the real path: the MCP server over loopback with SQLite stores. A write
failure is injected into the store itself (an SQLite trigger that aborts the write), not
into Python code.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

import pxp
from pxp.server import JOIN_RETRY_WINDOW, MemoryLinkStore, RoomService, SqliteLinkStore

from ._mcp_harness import call, mcp_client, refused
from .test_mcp_attacks import create, server

pytestmark = pytest.mark.slow

KEY_B = "bo-agent-key-0123456789"
KEY_MALLORY = "mallory-key-0123456789"
KEY_A = "ann-agent-key-0123456789"


def _fail_writes(db: Path, table: str) -> Callable[[], None]:
    """Make every insert into ``table`` of the SQLite file abort; return the undo."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            f"CREATE TRIGGER inject_failure BEFORE INSERT ON {table} "
            "BEGIN SELECT RAISE(ABORT, 'injected write failure'); END"
        )

    def undo() -> None:
        with sqlite3.connect(db) as conn:
            conn.execute("DROP TRIGGER inject_failure")

    return undo


def _rows(db: Path, room_id: str) -> list[tuple[str, str, str, bool]]:
    return [(r.seat, r.kind, r.digest, r.revoked) for r in SqliteLinkStore(db).rows(room_id)]


def _joins(service: RoomService, room_id: str) -> list[dict[str, Any]]:
    kinds = ("agent_joined", "principal_link", "seat_contested", "seat_rejoined")
    return [e for e in service.export(room_id)["ledger"] if e["type"] in kinds]


async def _join(client: Client, link: str, agent: str = "bo-agent") -> dict[str, Any]:
    return await call(client, "join_room", {"link": link, "agent_name": agent})


def _with_a_room(service: RoomService, body: Callable[[Client, str, str], Awaitable[None]]) -> None:
    """Serve ``service``; seat A's agent creates a room; run ``body(b, room id, invite)``
    with seat B's agent's client."""

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b:
            made = await create(a)
            await body(b, made["room_id"], made["invite_link_for_counterpart"])

    with server(service) as base:
        asyncio.run(go(base))


@pytest.mark.parametrize("table", ["pxp_server_links", "pxp_ledger"])
def test_a_failed_write_leaves_no_half_join(tmp_path: Path, table: str) -> None:
    """The room and its links live in one SQLite file: the join (its ledger entries, seat
    B's seat link and principal link) is one transaction. A failure in either write
    leaves the room and the links as they were, and the same invite then joins."""
    db = tmp_path / "rooms.sqlite"
    service = RoomService(pxp.SqliteRoomStore(db), SqliteLinkStore(db))

    async def go(b: Client, room_id: str, invite: str) -> None:
        before = (_joins(service, room_id), _rows(db, room_id))
        undo = _fail_writes(db, table)
        await refused(b, "join_room", {"link": invite, "agent_name": "bo-agent"})
        assert (_joins(service, room_id), _rows(db, room_id)) == before
        undo()
        joined = await _join(b, invite)
        assert joined["you"]["seat"] == "B"
        view = await call(b, "get_room", {"link": joined["your_link"]})
        assert view["status"] == "drafting"
        assert [e["type"] for e in _joins(service, room_id)] == [
            "principal_link",
            "agent_joined",
            "principal_link",
        ]

    _with_a_room(service, go)


def test_stores_of_two_files_write_links_first_and_put_them_back(tmp_path: Path) -> None:
    """Rooms and links in two files cannot share a transaction: the links are written
    first and put back as they were when the room's save then fails."""
    rooms_db, links_db = tmp_path / "rooms.sqlite", tmp_path / "links.sqlite"
    service = RoomService(pxp.SqliteRoomStore(rooms_db), SqliteLinkStore(links_db))

    async def go(b: Client, room_id: str, invite: str) -> None:
        before = (_joins(service, room_id), _rows(links_db, room_id))
        for db, table in ((links_db, "pxp_server_links"), (rooms_db, "pxp_ledger")):
            undo = _fail_writes(db, table)
            await refused(b, "join_room", {"link": invite, "agent_name": "bo-agent"})
            undo()
            after = (_joins(service, room_id), _rows(links_db, room_id))
            # the seat link and page written first are revoked again: nobody ever saw them;
            # the room is as it was
            assert after[0] == before[0]
            live = [r for r in after[1] if not r[3]]
            assert live == [r for r in before[1] if not r[3]]
        joined = await _join(b, invite)
        await call(b, "get_room", {"link": joined["your_link"]})

    _with_a_room(service, go)


def test_a_memory_link_store_failing_midway_puts_back_what_it_wrote() -> None:
    """Memory stores: seat B's seat link is written, the page's write fails: the seat link
    is put back (revoked: nobody saw it) and the room is not saved."""

    class Failing(MemoryLinkStore):
        fail = False

        def set_link(self, room_id: str, seat: str, kind: Any, *args: Any, **kw: Any) -> bool:
            if self.fail and kind == "principal":
                raise OSError("injected link write failure")
            return super().set_link(room_id, seat, kind, *args, **kw)

    links = Failing()
    service = RoomService(pxp.MemoryRoomStore(), links)
    made = service.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    grant = service.grant(made.link("http://x", "B", "invite"), ("seat", "invite"))
    links.fail = True
    with pytest.raises(OSError, match="injected"):
        service.join(grant, "bo-agent")
    assert service.export(made.room_id)["seats"]["B"]["agent"] is None
    assert [r.kind for r in links.rows(made.room_id) if r.seat == "B" and not r.revoked] == [
        "invite"
    ]
    links.fail = False
    assert service.join(grant, "bo-agent").seat_token is not None


# ------------------------------------------------------------------ 5. an honest retry


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _keyed(tmp_path: Path) -> tuple[RoomService, Clock]:
    db = tmp_path / "rooms.sqlite"
    clock = Clock()
    return RoomService(pxp.SqliteRoomStore(db), SqliteLinkStore(db), clock=clock), clock


def _headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_a_retried_join_with_the_same_agent_key_is_answered_again(tmp_path: Path) -> None:
    """Seat B's agent joined; its reply was lost; it joins again with the same invite, the
    same agent key and name within the window: it gets a seat link again (the lost one
    stops working), the ledger gains nothing, and the room runs on."""
    service, clock = _keyed(tmp_path)

    async def go(base: str) -> None:
        async with (
            mcp_client(base, headers=_headers(KEY_A)) as a,
            mcp_client(base, headers=_headers(KEY_B)) as b,
        ):
            made = await create(a)
            invite = made["invite_link_for_counterpart"]
            lost = await _join(b, invite)  # the reply that never arrived
            entries = _joins(service, made["room_id"])
            clock.now += JOIN_RETRY_WINDOW - timedelta(seconds=1)
            result = await b.call_tool("join_room", {"link": invite, "agent_name": "bo-agent"})
            assert not result.is_error, result.content
            again = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert again["your_link"] != lost["your_link"]
            assert "/p/" in result.content[1].text  # type: ignore[union-attr]
            assert _joins(service, made["room_id"]) == entries
            view = await call(b, "get_room", {"link": again["your_link"]})
            assert view["status"] == "drafting"
            text = await refused(b, "get_room", {"link": lost["your_link"]})
            assert "link_unknown" in text

    with server(service, agent_keys=(KEY_A, KEY_B, KEY_MALLORY)) as base:
        asyncio.run(go(base))


@pytest.mark.parametrize(
    ("key", "name", "later"),
    [
        (KEY_MALLORY, "bo-agent", timedelta(0)),  # another agent key, the same name
        (None, "bo-agent", timedelta(0)),  # no agent key at all
        (KEY_B, "someone-else", timedelta(0)),  # the same key under another name
        (KEY_B, "bo-agent", JOIN_RETRY_WINDOW + timedelta(seconds=1)),  # too late
    ],
)
def test_the_invite_from_anyone_else_still_contests_the_seat(
    tmp_path: Path, key: str | None, name: str, later: timedelta
) -> None:
    service, clock = _keyed(tmp_path)

    async def go(base: str) -> None:
        async with (
            mcp_client(base, headers=_headers(KEY_A)) as a,
            mcp_client(base, headers=_headers(KEY_B)) as b,
            mcp_client(base, headers=_headers(key) if key else None) as other,
        ):
            made = await create(a)
            invite = made["invite_link_for_counterpart"]
            await _join(b, invite)
            clock.now += later
            text = await refused(other, "join_room", {"link": invite, "agent_name": name})
            assert "seat_contested" in text
            kinds = [e["type"] for e in _joins(service, made["room_id"])]
            assert kinds[-1] == "seat_contested"

    with server(service, agent_keys=(KEY_A, KEY_B, KEY_MALLORY)) as base:
        asyncio.run(go(base))
