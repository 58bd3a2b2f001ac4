"""``create_room`` and ``import_room`` store the room and its links all or nothing (spec
§9a; review pxp-join, finding 2).

One SQLite file, and one PostgreSQL database (a throwaway cluster): a write failure is
injected into the store itself (a trigger that aborts every insert of a link row), and
then nothing of the room is stored, and the same room can be imported once the fault is
gone. Separate room and link stores: the links are written first, and revoked when the
room's creation then fails.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pxp
from pxp import PxpError
from pxp.server import LinkStore, MemoryLinkStore, RoomService, SqliteLinkStore

Setup = tuple[RoomService, LinkStore, Any, Callable[[], None], Callable[[], None]]


def _pg_sql(url: str, sql: str) -> None:
    import psycopg

    from ppstore import libpq_url

    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Setup:
    """A service on one database, independent link and room stores on it, and ``(fail,
    heal)``: make every link row insert abort, and undo that."""
    if request.param == "sqlite":
        db = tmp_path / "rooms.sqlite"
        service = RoomService(pxp.SqliteRoomStore(db), SqliteLinkStore(db))

        def run(sql: str) -> None:
            with sqlite3.connect(db) as conn:
                conn.execute(sql)

        return (
            service,
            SqliteLinkStore(db),
            pxp.SqliteRoomStore(db),
            lambda: run(
                "CREATE TRIGGER inject_failure BEFORE INSERT ON pxp_server_links "
                "BEGIN SELECT RAISE(ABORT, 'injected write failure'); END"
            ),
            lambda: run("DROP TRIGGER inject_failure"),
        )
    from pxp.postgres import PostgresLinkStore, PostgresRoomStore

    url = request.getfixturevalue("postgres_url")
    service = RoomService(PostgresRoomStore(url), PostgresLinkStore(url))
    return (
        service,
        PostgresLinkStore(url),
        PostgresRoomStore(url),
        lambda: _pg_sql(
            url,
            "CREATE FUNCTION inject_failure() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'injected write failure'; END $$;"
            "CREATE TRIGGER inject_failure BEFORE INSERT ON pxp_server_links "
            "FOR EACH ROW EXECUTE FUNCTION inject_failure()",
        ),
        lambda: _pg_sql(url, "DROP TRIGGER inject_failure ON pxp_server_links"),
    )


def _create(service: RoomService) -> Any:
    return service.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )


def _export() -> dict[str, Any]:
    """A room served elsewhere (in memory), as its export."""
    elsewhere = RoomService()
    return elsewhere.export(_create(elsewhere).room_id)


def test_create_room_failing_at_its_links_stores_nothing(stores: Setup) -> None:
    """Before: the room was stored and its links were not, a room nobody could open."""
    service, links, rooms, fail, heal = stores
    before = rooms.room_ids()
    fail()
    with pytest.raises(Exception, match=r"injected|failed"):
        _create(service)
    assert rooms.room_ids() == before
    heal()
    made = _create(service)
    assert service.grant(made.link("http://x", "A", "seat"), "seat").seat == "A"
    assert {(r.seat, r.kind) for r in links.rows(made.room_id)} == {
        ("A", "principal"),
        ("A", "seat"),
        ("B", "invite"),
    }


def test_import_room_failing_at_its_links_stores_nothing_and_can_be_redone(
    stores: Setup,
) -> None:
    """Before: the room was stored without links, and importing it again was refused
    ``room_exists`` for good."""
    service, links, rooms, fail, heal = stores
    data = _export()
    fail()
    with pytest.raises(Exception, match=r"injected|failed"):
        service.import_room(data)
    assert data["id"] not in rooms.room_ids()
    assert links.rows(data["id"]) == []
    heal()
    made = service.import_room(data)
    assert made.room_id == data["id"]
    assert service.grant(made.link("http://x", "B", "seat"), "seat").seat == "B"
    with pytest.raises(PxpError) as again:
        service.import_room(data)
    assert again.value.code == "room_exists"


def test_import_room_refused_when_only_links_exist(stores: Setup) -> None:
    """Link rows under the id (and no room) refuse the import in the one transaction
    (``room_exists``), and store no room."""
    service, links, rooms, _, _ = stores
    data = _export()
    links.add_room(data["id"], {("A", "seat"): "0" * 64})
    with pytest.raises(PxpError) as refused:
        service.import_room(data)
    assert refused.value.code == "room_exists"
    assert data["id"] not in rooms.room_ids()


def test_split_stores_write_links_first_and_revoke_them_if_the_room_fails() -> None:
    """Separate room and link stores: the links are recorded first; the room's creation
    fails, and the links (never shown) are revoked. Links of no room open nothing."""

    class Failing(pxp.MemoryRoomStore):
        def create(self, room: pxp.Room) -> None:
            raise OSError("injected room write failure")

    links, rooms = MemoryLinkStore(), Failing()
    service = RoomService(rooms, links)
    data = _export()
    with pytest.raises(OSError, match="injected"):
        service.import_room(data)
    rows = links.rows(data["id"])
    assert rows
    assert all(row.revoked for row in rows)
    with pytest.raises(OSError, match="injected"):
        _create(service)
    assert rooms.room_ids() == []


def test_split_stores_a_failed_link_write_stores_no_room(tmp_path: Path) -> None:
    """Separate files: the link store fails, and the room is never written."""
    links = SqliteLinkStore(tmp_path / "links.sqlite")
    rooms = pxp.SqliteRoomStore(tmp_path / "rooms.sqlite")
    service = RoomService(rooms, links)
    with sqlite3.connect(tmp_path / "links.sqlite") as conn:
        conn.execute(
            "CREATE TRIGGER inject_failure BEFORE INSERT ON pxp_server_links "
            "BEGIN SELECT RAISE(ABORT, 'injected write failure'); END"
        )
    with pytest.raises(Exception, match="injected"):
        _create(service)
    assert rooms.room_ids() == []
