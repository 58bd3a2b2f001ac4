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
from pxp.server import JOIN_RETRY_WINDOW, MemoryLinkStore, RoomService, SeatGrant, SqliteLinkStore

from ._mcp_harness import call, mcp_client, refused
from .test_mcp_attacks import create, server

pytestmark = pytest.mark.slow

CARD = {"principal": {"name": "Ann"}, "goal": "Buy chairs", "must_haves": ["June"]}


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


def _clocked(tmp_path: Path) -> tuple[RoomService, Clock]:
    db = tmp_path / "rooms.sqlite"
    clock = Clock()
    return RoomService(pxp.SqliteRoomStore(db), SqliteLinkStore(db), clock=clock), clock


JOIN_ID = "bo-join-7f3c9a1e5d2b4c68"


async def _join_with(client: Client, invite: str, name: str, join_id: str | None) -> Any:
    args = {"link": invite, "agent_name": name}
    if join_id is not None:
        args["join_id"] = join_id
    return await client.call_tool("join_room", args)


def test_a_retried_join_with_the_same_join_id_is_answered_again(tmp_path: Path) -> None:
    """Seat B's agent joined; its answer was lost; it joins again with the same invite,
    join_id and name within the window: it gets a seat link and page again (the lost
    ones stop working, the notice says so), the ledger gains nothing, the room runs on."""
    service, clock = _clocked(tmp_path)

    async def go(b: Client, room_id: str, invite: str) -> None:
        lost = json.loads((await _join_with(b, invite, "bo-agent", JOIN_ID)).content[0].text)
        entries = _joins(service, room_id)
        clock.now += JOIN_RETRY_WINDOW - timedelta(seconds=1)
        result = await _join_with(b, invite, "bo-agent", JOIN_ID)
        assert not result.is_error, result.content
        again = json.loads(result.content[0].text)  # type: ignore[union-attr]
        assert again["your_link"] != lost["your_link"]
        assert "no longer work" in again["seat_notice"]
        assert "/p/" in result.content[1].text  # type: ignore[union-attr]
        assert _joins(service, room_id) == entries
        view = await call(b, "get_room", {"link": again["your_link"]})
        assert view["status"] == "drafting"
        assert "link_unknown" in await refused(b, "get_room", {"link": lost["your_link"]})

    _with_a_room(service, go)


def _revoke_page(service: RoomService, room_id: str) -> None:
    assert service._links.revoke(room_id, seat="B", kind="principal") == 1


@pytest.mark.parametrize(
    ("join_id", "name", "later", "between"),
    [
        (None, "bo-agent", timedelta(0), None),  # the same name, no join_id
        ("another-join-id-0000", "bo-agent", timedelta(0), None),  # another join_id
        (JOIN_ID, "someone-else", timedelta(0), None),  # the join_id under another name
        (JOIN_ID, "bo-agent", JOIN_RETRY_WINDOW + timedelta(seconds=1), None),  # too late
        (JOIN_ID, "bo-agent", timedelta(0), _revoke_page),  # the operator revoked B's page
    ],
)
def test_the_invite_from_anyone_else_still_contests_the_seat(
    tmp_path: Path,
    join_id: str | None,
    name: str,
    later: timedelta,
    between: Callable[[RoomService, str], None] | None,
) -> None:
    service, clock = _clocked(tmp_path)

    async def go(b: Client, room_id: str, invite: str) -> None:
        assert not (await _join_with(b, invite, "bo-agent", JOIN_ID)).is_error
        clock.now += later
        if between is not None:
            between(service, room_id)
        result = await _join_with(b, invite, name, join_id)
        assert result.is_error
        assert "seat_contested" in result.content[0].text  # type: ignore[union-attr]
        assert [e["type"] for e in _joins(service, room_id)][-1] == "seat_contested"

    _with_a_room(service, go)


def test_a_join_id_that_is_too_short_is_refused(tmp_path: Path) -> None:
    service, _ = _clocked(tmp_path)

    async def go(b: Client, room_id: str, invite: str) -> None:
        text = await refused(b, "join_room", {"link": invite, "join_id": "short"})
        assert "argument_invalid" in text
        assert _joins(service, room_id)[-1]["type"] == "principal_link"  # nothing recorded

    _with_a_room(service, go)


def test_a_retry_overtaken_by_another_write_on_split_stores_stays_a_retry() -> None:
    """Memory stores (links are written first, put back when the room's save fails): seat
    A's card is sealed between the retry's load and its save, the save is refused
    store_conflict and redone; the links put back keep their issue, so the redone join is
    still the retry (before: the put-back dropped it and the retry contested the seat)."""
    raced: list[str] = []

    class Overtaken(pxp.MemoryRoomStore):
        armed = False

        def save(self, room: pxp.Room) -> None:
            if self.armed and not raced:
                raced.append("raced")
                service.seal(SeatGrant(room.id, "A", "seat"), CARD, "mcp")
            super().save(room)

    rooms, links, clock = Overtaken(), MemoryLinkStore(), Clock()
    service = RoomService(rooms, links, clock=clock)
    made = service.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    grant = service.grant(made.link("http://x", "B", "invite"), ("seat", "invite"))
    first = service.join(grant, "bo-agent", join_id=JOIN_ID)
    rooms.armed = True
    again = service.join(grant, "bo-agent", join_id=JOIN_ID)
    assert raced == ["raced"]
    assert again.seat_token is not None
    assert again.seat_token != first.seat_token
    room = rooms.load(made.room_id)
    assert room.status == "open"
    assert room.card("A") is not None
    assert not room.contests("B")
    row = next(r for r in links.rows(made.room_id) if (r.seat, r.kind) == ("B", "seat"))
    assert row.issued_at is not None
    assert not row.revoked
