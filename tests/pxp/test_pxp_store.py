"""Room stores: memory and SQLite (restart, append-only ledger, conflicts)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import pxp

from . import _rooms as van

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CARD = {"principal": {"name": "Ana"}, "goal": "Sell", "must_haves": ["5000 EUR"]}


def _room() -> pxp.Room:
    return pxp.Room.open("store-1", topic="t", now=T0, tokens={"A": "a" * 24, "B": "b" * 24})


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[pxp.RoomStore]:
    if request.param == "memory":
        yield pxp.MemoryRoomStore()
        return
    sqlite_store = pxp.SqliteRoomStore(tmp_path / "rooms.db")
    yield sqlite_store
    sqlite_store.close()


def test_create_load_save_round_trip(store: pxp.RoomStore) -> None:
    room = _room()
    store.create(room)
    with pytest.raises(pxp.PxpError) as caught:
        store.create(room)
    assert caught.value.code == "store_conflict"
    loaded = store.load("store-1")
    loaded.seal("A", CARD, now=T0 + timedelta(seconds=1))
    store.save(loaded)
    again = store.load("store-1")
    assert again.export() == loaded.export()
    assert store.room_ids() == ["store-1"]
    assert store.locate("b" * 24) == ("store-1", "B")
    assert store.locate("nope") is None
    with pytest.raises(pxp.PxpError) as caught:
        store.load("other")
    assert caught.value.code == "room_unknown"


def test_a_stale_copy_cannot_overwrite_history(store: pxp.RoomStore) -> None:
    store.create(_room())
    first, second = store.load("store-1"), store.load("store-1")
    first.seal("A", CARD, now=T0 + timedelta(seconds=1))
    store.save(first)
    second.seal("B", CARD, now=T0 + timedelta(seconds=2))
    with pytest.raises(pxp.PxpError) as caught:
        store.save(second)
    assert caught.value.code == "store_conflict"
    assert store.load("store-1").export() == first.export()


def test_sqlite_room_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "rooms.db"
    store = pxp.SqliteRoomStore(path)
    room = pxp.simulate()
    store.create(room)
    store.close()
    reopened = pxp.SqliteRoomStore(path)
    loaded = reopened.load(room.id)
    assert loaded.export() == room.export()
    assert loaded.brief() == room.brief()
    reopened.close()


def test_sqlite_ledger_is_append_only(tmp_path: Path) -> None:
    path = tmp_path / "rooms.db"
    store = pxp.SqliteRoomStore(path)
    store.create(pxp.simulate())
    store.close()
    db = sqlite3.connect(path)
    db.isolation_level = None
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("UPDATE pxp_ledger SET entry = '{}' WHERE n = 2")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("DELETE FROM pxp_ledger WHERE n = 12")
    with pytest.raises(sqlite3.DatabaseError, match="does not extend"):
        db.execute(
            "INSERT INTO pxp_ledger (room_id, n, hash, prev, entry) VALUES (?, ?, ?, ?, ?)",
            ("simshoprebuild", 14, "0" * 64, "0" * 64, "{}"),
        )
    db.close()


def test_sqlite_tampered_snapshot_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "rooms.db"
    store = pxp.SqliteRoomStore(path)
    room = pxp.simulate()
    store.create(room)
    store.close()
    db = sqlite3.connect(path)
    (snapshot,) = db.execute("SELECT snapshot FROM pxp_rooms").fetchone()
    data = json.loads(snapshot)
    data["envelopes"][0]["message"] = "We offer 1 EUR."
    db.execute("UPDATE pxp_rooms SET snapshot = ?", (json.dumps(data),))
    db.commit()
    db.close()
    reopened = pxp.SqliteRoomStore(path)
    with pytest.raises(pxp.PxpError) as caught:
        reopened.load(room.id)
    assert caught.value.code == "import_invalid"
    reopened.close()


def test_two_sqlite_connections_cannot_both_extend_the_same_head(tmp_path: Path) -> None:
    path = tmp_path / "rooms.db"
    first, second = pxp.SqliteRoomStore(path), pxp.SqliteRoomStore(path)
    first.create(_room())
    one, two = first.load("store-1"), second.load("store-1")
    one.seal("A", CARD, now=T0 + timedelta(seconds=1))
    two.seal("A", {**CARD, "goal": "Sell fast"}, now=T0 + timedelta(seconds=1))
    first.save(one)
    with pytest.raises(pxp.PxpError) as caught:
        second.save(two)
    assert caught.value.code == "store_conflict"
    assert second.load("store-1").card_hash("A") == one.card_hash("A")
    first.close()
    second.close()


def test_a_replica_overtaken_between_load_and_save_redoes_its_action(tmp_path: Path) -> None:
    # review pg2 #1 through the server: replica "other" saves a draft (no ledger entry)
    # while replica "mine" is between loading the room and saving its join
    from pxp.server import RoomService, SeatGrant, SqliteLinkStore

    db = tmp_path / "rooms.sqlite"
    opened: list[pxp.SqliteRoomStore] = []
    # confirm_on_web: a card over MCP is a draft the principal confirms (no ledger entry)
    other = RoomService(
        _kept(opened, pxp.SqliteRoomStore(db)), SqliteLinkStore(db), confirm_on_web=True
    )
    made = other.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    a = SeatGrant(made.room_id, "A", "seat")
    b = SeatGrant(made.room_id, "B", "seat")
    saves: list[str] = []

    class Overtaken(pxp.SqliteRoomStore):
        # the write every save goes through (a join saves its links in the same one)
        def _write(self, room: pxp.Room, *, new: bool, links: Any = ()) -> list[bool]:
            if not new:
                if not saves:
                    saves.append("raced")
                    other.seal(a, CARD, via="mcp")
                saves.append("save")
            return super()._write(room, new=new, links=links)

    mine = RoomService(_kept(opened, Overtaken(db)), SqliteLinkStore(db))
    page = mine.join(b, "bo-agent").page_token
    assert page is not None  # the join went through, on its second try
    assert saves == ["raced", "save", "save"]
    kept = _kept(opened, pxp.SqliteRoomStore(db)).load(made.room_id)
    assert kept.draft("A") is not None  # the draft saved in between is still there
    assert kept.agent("B") == "bo-agent"
    for store in opened:
        store.close()


def _kept(opened: list[pxp.SqliteRoomStore], store: pxp.SqliteRoomStore) -> pxp.SqliteRoomStore:
    opened.append(store)
    return store


# ------------------------------------------------- tokens and damaged rows (review)


def test_a_lone_surrogate_survives_the_sqlite_store(tmp_path: Path) -> None:
    room, now = van.active_room()
    room.send("A", van.msg(message="half \ud83d pair"), now=now())
    store = pxp.SqliteRoomStore(tmp_path / "rooms.db")
    store.create(room)
    loaded = store.load(room.id)
    assert loaded.head == room.head
    assert loaded.envelopes[0]["message"] == "half \ud83d pair"
    store.close()


def test_a_room_cannot_give_both_seats_one_token() -> None:
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.open("r", topic="t", now=van.clock()(), tokens={"A": "t" * 16, "B": "t" * 16})
    assert caught.value.code == "room_invalid"


def test_sqlite_refuses_a_token_that_opens_another_room(tmp_path: Path) -> None:
    now = van.clock()
    store = pxp.SqliteRoomStore(tmp_path / "rooms.db")
    store.create(pxp.Room.open("r1", topic="t", now=now(), tokens={"A": "a" * 16}))
    with pytest.raises(pxp.PxpError) as caught:
        store.create(pxp.Room.open("r2", topic="t", now=now(), tokens={"B": "a" * 16}))
    assert caught.value.code == "store_conflict"
    assert store.locate("a" * 16) == ("r1", "A")
    assert store.room_ids() == ["r1"]
    store.close()


def test_sqlite_reports_a_damaged_snapshot_as_a_pxp_error(tmp_path: Path) -> None:
    import sqlite3

    store = pxp.SqliteRoomStore(tmp_path / "rooms.db")
    store.create(pxp.Room.open("r1", topic="t", now=van.clock()()))
    store.close()
    db = sqlite3.connect(tmp_path / "rooms.db")
    db.execute("UPDATE pxp_rooms SET snapshot = '{not json' WHERE id = 'r1'")
    db.commit()
    db.close()
    store = pxp.SqliteRoomStore(tmp_path / "rooms.db")
    with pytest.raises(pxp.PxpError) as caught:
        store.load("r1")
    assert caught.value.code == "store_corrupt"
    store.close()
