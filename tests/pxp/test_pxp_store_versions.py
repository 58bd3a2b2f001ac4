"""PXP SQLite files record their schema version and adopt earlier files (issue 24 item 7).

The room store and the server's link digests share one file, one store (``pxp``): its
version is ``PRAGMA user_version``. A file written before versions were recorded (the
version-1 layout, links without their later columns) opens with its rooms and links
intact; a file of a newer version is refused rather than misread.

Private imports: ``pxp._store`` holds the on-disk schema (``_SCHEMA``, ``_LINKS``) and the
migration history (``SQLITE_MIGRATIONS``) these tests write old files with and check the
version against.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import pxp
from ppstore import application_id
from pxp._store import _LINKS, _SCHEMA, SQLITE_MIGRATIONS

TOP = Path(__file__).resolve().parents[2]


def _old_file(path: Path) -> None:
    """A file as the previous version wrote it: no version, links without expiry columns."""
    db = sqlite3.connect(path, isolation_level=None)
    db.executescript(_SCHEMA)
    db.execute(_LINKS)
    db.execute(
        "INSERT INTO pxp_server_links (room_id, seat, kind, digest) VALUES ('r1', 'A', 'seat', 'd')"
    )
    assert db.execute("PRAGMA user_version").fetchone() == (0,)
    db.close()


def test_a_file_of_the_previous_version_is_adopted(tmp_path: Path) -> None:
    from pxp.server import SqliteLinkStore

    path = tmp_path / "rooms.sqlite"
    _old_file(path)
    links = SqliteLinkStore(path)
    (row,) = links.rows("r1")
    assert (row.seat, row.kind, row.digest, row.expires_at, row.revoked) == (
        "A", "seat", "d", None, False,
    )  # fmt: skip
    assert links.revoke("r1") == 1
    store = pxp.SqliteRoomStore(path)
    assert store.room_ids() == []
    store.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (len(SQLITE_MIGRATIONS),)
    assert db.execute("PRAGMA application_id").fetchone() == (application_id("pxp"),)
    columns = {r[1] for r in db.execute("PRAGMA table_info(pxp_server_links)")}
    assert {"expires_at", "revoked", "issued_at"} <= columns
    db.close()


def test_a_file_of_a_newer_version_or_another_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rooms.sqlite"
    pxp.SqliteRoomStore(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {len(SQLITE_MIGRATIONS) + 1}")
    db.commit()
    db.close()
    with pytest.raises(pxp.PxpError) as caught:
        pxp.SqliteRoomStore(path)
    assert caught.value.code == "store_corrupt"
    other = tmp_path / "log.sqlite"
    import vxp

    vxp.stores.SqliteLogStore(other, "o").close()
    with pytest.raises(pxp.PxpError) as wrong:
        pxp.SqliteRoomStore(other)
    assert "not a pxp store" in str(wrong.value)


def test_lost_ledger_triggers_come_back_on_open(tmp_path: Path) -> None:
    """Review #11: reopening a file puts back the append-only triggers it lost."""
    path = tmp_path / "rooms.sqlite"
    pxp.SqliteRoomStore(path).close()
    db = sqlite3.connect(path)
    for name in ("pxp_ledger_no_update", "pxp_ledger_no_delete", "pxp_ledger_chain"):
        db.execute(f"DROP TRIGGER {name}")
    db.commit()
    db.close()
    pxp.SqliteRoomStore(path).close()
    db = sqlite3.connect(path)
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    db.close()
    assert {"pxp_ledger_no_update", "pxp_ledger_no_delete", "pxp_ledger_chain"} <= names


def _vector_room(case_id: str) -> dict[str, Any]:
    """The room of one import-room vector (a room an older release's import admitted)."""
    suite = json.loads((TOP / "vectors" / "pxp" / "import-room.json").read_text("utf-8"))
    return dict(next(t for t in suite["tests"] if t["id"] == case_id)["input"]["room"])


@pytest.mark.parametrize(
    ("case_id", "refused"),
    [
        ("entry-forms-base-agreement-over-a-must-never", "agrees where live play withholds"),
        ("entry-forms-base-entry-1-extra-member", "members live play never writes: note"),
    ],
)
def test_a_room_an_older_release_stored_still_loads_with_a_note(
    tmp_path: Path, case_id: str, refused: str
) -> None:
    """Review i25b adv #2: the previous release's import admitted these rooms, and stored
    them; today's import refuses them, but a stored room is loaded again on every request,
    so it loads as it was, with the check that refuses it now noted in its brief."""
    data = _vector_room(case_id)
    with pytest.raises(pxp.PxpProtocolError):
        pxp.Room.from_export(data)  # a fresh import is refused
    path = tmp_path / "rooms.sqlite"
    pxp.SqliteRoomStore(path).close()
    snapshot = {k: v for k, v in data.items() if k != "ledger"}
    db = sqlite3.connect(path, isolation_level=None)  # the rows as the older release wrote
    db.execute(
        "INSERT INTO pxp_rooms (id, snapshot, head) VALUES (?, ?, ?)",
        (data["id"], json.dumps(snapshot, sort_keys=True), data["ledger"][-1]["hash"]),
    )
    for e in data["ledger"]:
        db.execute(
            "INSERT INTO pxp_ledger (room_id, n, hash, prev, entry) VALUES (?, ?, ?, ?, ?)",
            (data["id"], e["n"], e["hash"], e["prev"], json.dumps(e)),
        )
    db.close()
    store = pxp.SqliteRoomStore(path)
    room = store.load(data["id"])
    assert room.status == "agreed"
    notes = [n["flag"] for n in room.import_notes]
    assert any(
        n.startswith("Import: stored before this was refused:") and refused in n for n in notes
    )
    brief = room.brief()
    assert any(refused in f["flag"] for f in brief["protocol_flags"])
    store.close()
