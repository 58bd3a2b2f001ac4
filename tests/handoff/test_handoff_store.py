"""Stores: in-memory and SQLite; append-only, idempotent, fold on read, restart, concurrency."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import handoff

from .handoff_helpers import EXTS, ROLES, amended, claimed, raised, registry, settled

ITEM = handoff.ItemId("demo-keep", "house", "k1")


def _stores(tmp_path: Path) -> list[Any]:
    return [
        handoff.stores.MemoryStore(roles=ROLES, extensions=EXTS),
        handoff.stores.SQLiteStore(tmp_path / "h.sqlite", roles=ROLES, extensions=EXTS),
    ]


@pytest.mark.parametrize("kind", [0, 1], ids=["memory", "sqlite"])
def test_store_append_and_fold(tmp_path: Path, kind: int) -> None:
    store = _stores(tmp_path)[kind]
    assert store.append(raised()) == "accepted"
    assert store.append(json.dumps(raised())) == "duplicate"
    assert store.append(handoff.Record.from_json(raised())) == "duplicate"
    other = raised()
    other["terms"] = {"text": "Pay more"}
    with pytest.raises(handoff.HandoffError) as caught:
        store.append(other)  # an id names one content: the first admitted is kept
    assert caught.value.reason == "same_id"
    assert store.append(raised("z", ext="travel/0.3")) == "ignored"
    assert store.append(settled("s1")) == "accepted"
    bad = settled("s2")
    bad["by"] = "mallory"
    with pytest.raises(handoff.HandoffError):
        store.append(bad)
    assert len(store.records()) == 2
    assert len(store.records(ITEM)) == 2
    state = store.state(ITEM)
    assert state.state == "settled"
    assert state.conflicts == ()
    assert store.states()[ITEM] == state
    # the store folds what a registry fed the same admitted records folds
    reg = registry()
    reg.add_many([raised(), settled("s1")])
    assert reg.state(ITEM) == state


def test_sqlite_survives_restart_and_is_append_only(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        store.append(raised())
        store.append(amended("n2", 2, ["n1"]))
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        assert store.append(raised()) == "duplicate"
        assert store.state(ITEM).need == "n2"
        assert len(store) == 2
    db = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError):
        db.execute("UPDATE handoff_records SET body = '{}'")
    with pytest.raises(sqlite3.DatabaseError):
        db.execute("DELETE FROM handoff_records")
    db.close()


def test_sqlite_open_error(tmp_path: Path) -> None:
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.stores.SQLiteStore(tmp_path / "missing" / "h.sqlite", roles=ROLES, extensions=EXTS)
    assert caught.value.code == "store"


_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    import handoff
    from handoff_helpers import EXTS, ROLES, claimed, raised
    who, path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS)
    for i in range(count):
        # both writers also send the shared records: at-least-once from two sides
        store.append(raised("n-shared", key="shared"))
        store.append(claimed(f"c-{{who}}-{{i}}", key=f"k{{i % 7}}"))
    store.close()
    """
)


@pytest.mark.slow
def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS).close()
    script = tmp_path / "writer.py"
    script.write_text(_WRITER.format(tests=str(Path(__file__).parent)), encoding="utf-8")
    count = 400
    procs = [
        subprocess.Popen([sys.executable, str(script), who, str(path), str(count)])
        for who in ("a", "b")
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        records = store.records()
        assert len(records) == 2 * count + 1
        ids = {r["id"] for r in records}
        assert {f"c-{w}-{i}" for w in "ab" for i in range(count)} <= ids
        claims = sum(len(s.claims) for s in store.states().values())
        assert claims == 2 * count


def test_memory_store_copies(tmp_path: Path) -> None:
    store = handoff.stores.MemoryStore(roles=ROLES, extensions=EXTS)
    record = claimed("c1")
    store.append(record)
    record["outcome"] = "declined"
    assert store.records()[0]["outcome"] == "done"


def test_sqlite_tampering_is_caught_on_read(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        store.append(raised())
    forged = settled("s9")
    forged["by"] = "bot-1"  # a requester settling: never admitted
    db = sqlite3.connect(path)
    row = (
        "s9",
        handoff.digests.digest(forged),
        "demo-keep",
        "house",
        "k1",
        handoff.digests.canonical(forged),
    )
    with pytest.raises(sqlite3.IntegrityError):  # every row carries its roles stamp
        db.execute(
            "INSERT INTO handoff_records (id, digest, ext, project, key, body)"
            " VALUES (?,?,?,?,?,?)",
            (*row[:5], row[5].decode()),
        )
    db.execute(
        "INSERT INTO handoff_records (id, digest, ext, project, key, body, roles_version)"
        " VALUES (?,?,?,?,?,?,1)",
        (*row[:5], row[5].decode()),
    )
    db.commit()
    db.close()
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        # the planted row is never folded, and reported; the rest stays readable
        reg = store.registry(ITEM)
        assert reg.state(ITEM).state == "open"
        assert [(r["at"], r["code"]) for r in reg.rejected()] == [("s9", "ownership")]


def test_sqlite_insert_or_replace_cannot_remove_a_record(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        store.append(raised())
        store.append(settled("s1"))
    db = sqlite3.connect(path)
    seq, rid, dig, body = db.execute(
        "SELECT seq, id, digest, body FROM handoff_records WHERE id = 's1'"
    ).fetchone()
    other = raised("zz", key="k9")
    with pytest.raises(sqlite3.DatabaseError):
        db.execute(
            "INSERT OR REPLACE INTO handoff_records (seq, id, digest, ext, project, key, body)"
            " VALUES (?, ?, ?, 'demo-keep', 'house', 'k9', ?)",
            (seq, "zz", handoff.digests.digest(other), handoff.digests.canonical(other).decode()),
        )
    db.execute(
        "REPLACE INTO handoff_records (id, digest, ext, project, key, body, roles_version)"
        " VALUES (?, ?, 'demo-keep', 'house', 'k1', ?, 1)",
        (rid, dig, body),
    )
    db.commit()
    assert db.execute("SELECT seq FROM handoff_records WHERE id = 's1'").fetchall() == [(seq,)]
    db.close()
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        assert store.state(ITEM).state == "settled"
        assert store.append(settled("s1")) == "duplicate"
        assert len(store) == 2


def test_a_sqlite_body_changed_behind_the_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        store.append(raised())
        store.append(settled("s1"))
    db = sqlite3.connect(path)
    db.execute("DROP TRIGGER handoff_records_no_update")
    forged = settled("s1", outcome="declined")
    db.execute(
        "UPDATE handoff_records SET body = ? WHERE id = 's1'",
        (handoff.digests.canonical(forged).decode(),),
    )
    db.commit()
    db.close()
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        with pytest.raises(handoff.HandoffError) as caught:
            store.state(ITEM)
        assert caught.value.reason == "store_tampered"
