"""Room stores: memory and SQLite (restart, append-only ledger, conflicts)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import pxp

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
            ("sim-shop-rebuild", 14, "0" * 64, "0" * 64, "{}"),
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
