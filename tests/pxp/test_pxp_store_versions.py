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

import sqlite3
from pathlib import Path

import pytest

import pxp
from ppstore import application_id
from pxp._store import _LINKS, _SCHEMA, SQLITE_MIGRATIONS


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
