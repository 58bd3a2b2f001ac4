"""The Merkle log store and the DPoP replay cache behind one URL: memory, SQLite, PostgreSQL.

One contract for all three (issue 23); the PostgreSQL log refuses history rewrites in the
database itself, and two writer processes appending to one log at once never fork it.
The SQLite stores record their schema version and adopt files written before versions
were recorded (issue 24 item 7). The SQLite log refuses every rewrite of its history, even
by SQL statements behind the library's back (docs/spec/vxp.md §4.2).

Private imports: ``vxp._log.SQLITE_MIGRATIONS`` is the SQLite file's migration history; the
version tests hold files written by earlier versions to it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import vxp
from ppstore import application_id

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "postgresql":
        yield request.getfixturevalue("postgres_url")
    elif request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'store.sqlite'}"
    else:
        yield ":memory:"


def _fresh(cache: Any, key: str, until: int, now: int) -> bool:
    """Whether ``store_once`` saw ``key`` for the first time (else: ``dpop_replay``)."""
    try:
        cache.store_once(key, until, now)
    except vxp.VxpProtocolError as exc:
        if exc.code != "dpop_replay":
            raise
        return False
    return True


def test_a_log_behind_any_url_keeps_the_rfc9162_tree(url: str) -> None:
    log = vxp.MerkleLog("test/log", vxp.open_log_store(url, "test/log"))
    entries = [f"entry {n}".encode() for n in range(21)]
    assert log.append(entries[0]) == 0
    assert log.extend(entries[1:]) == range(1, 21)
    leaves = [vxp.merkle.leaf_hash(e) for e in entries]
    assert log.size == 21
    assert log.root() == vxp.merkle.tree_hash(leaves)
    for size in (1, 7, 16, 21):
        assert log.root(size) == vxp.merkle.tree_hash(leaves[:size])
        i = 3 % size
        proof = log.inclusion_proof(i, size)
        vxp.merkle.verify_inclusion(leaves[i], i, size, proof, log.root(size))
        vxp.merkle.verify_consistency(
            size, 21, log.root(size), log.root(), log.consistency_proof(size)
        )
    assert log.entry(20) == entries[20]
    # a writer whose view is stale changes nothing
    with pytest.raises(vxp.VxpError) as caught:
        log.store.append(20, [b"late"], [(0, 20, vxp.merkle.leaf_hash(b"late"))])
    assert caught.value.code == "log_conflict"
    assert log.size == 21
    if url != ":memory:":  # durable: another handle sees the same log
        again = vxp.MerkleLog("test/log", vxp.open_log_store(url, "test/log"))
        assert (again.size, again.root()) == (21, log.root())
        again.close()
    log.close()


def test_bad_urls_are_the_packages_own_errors() -> None:
    for bad in ("", "sqlite:", "mysql://x/y", "/tmp/x.sqlite"):
        with pytest.raises(vxp.VxpError) as caught:
            vxp.open_log_store(bad, "o")
        assert caught.value.code == "log_store_error"
        with pytest.raises(vxp.VxpError) as replay:
            vxp.stores.open_replay_cache(bad)
        assert replay.value.code == "replay_store_unavailable"


def test_replay_cache_behind_any_url(url: str) -> None:
    cache = vxp.stores.open_replay_cache(url)
    assert _fresh(cache, "kid:jti-1", 1_000, 900) is True
    assert _fresh(cache, "kid:jti-1", 1_000, 950) is False  # a replay
    # expired (by more than the replicas' clock skew the PostgreSQL cache allows): forgotten
    assert _fresh(cache, "kid:jti-1", 1_400, 1_301) is True
    for odd in ("nul\x00jti", "nul\\0jti", "émoji 🙂"):  # distinct keys stay distinct
        assert _fresh(cache, odd, 2_000, 1_001) is True
        assert _fresh(cache, odd, 2_000, 1_001) is False
    if url != ":memory:":
        other = vxp.stores.open_replay_cache(url)
        assert _fresh(other, "kid:jti-2", 2_000, 1_001) is True
        assert _fresh(cache, "kid:jti-2", 2_000, 1_001) is False
        threads_see: list[bool] = []
        handles = [vxp.stores.open_replay_cache(url) for _ in range(8)]
        start = threading.Barrier(8)

        def race(n: int) -> None:
            start.wait()
            threads_see.append(_fresh(handles[n], "kid:raced", 3_000, 1_001))

        threads = [threading.Thread(target=race, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(threads_see) == [False] * 7 + [True]
        for handle in [*handles, other, cache]:
            handle.close()  # type: ignore[attr-defined]


# ---------------------------------------------------------------- PostgreSQL only


def _raw(postgres_url: str) -> Any:
    import psycopg

    return psycopg.connect(postgres_url, autocommit=True)


def test_postgres_log_history_cannot_be_rewritten_in_the_database(postgres_url: str) -> None:
    import psycopg

    log = vxp.MerkleLog("o", vxp.open_log_store(postgres_url, "o"))
    log.extend([b"a", b"b", b"c"])
    other = vxp.MerkleLog("p", vxp.open_log_store(postgres_url, "p"))  # another log beside it
    other.append(b"x")
    with _raw(postgres_url) as conn:
        for statement in (
            "UPDATE vxp_log_entries SET data = 'x' WHERE idx = 1",
            "DELETE FROM vxp_log_entries WHERE idx = 2",
            "DELETE FROM vxp_log_nodes",
            "TRUNCATE vxp_log_entries CASCADE",
            "TRUNCATE vxp_log_nodes",
            "UPDATE vxp_log_meta SET origin = 'q'",
            "INSERT INTO vxp_log_entries (origin, idx, data) VALUES ('o', 5, 'gap')",
            "INSERT INTO vxp_log_entries (origin, idx, data) VALUES ('o', 1, 'again')",
            "INSERT INTO vxp_log_nodes (origin, level, idx, hash) VALUES ('o', 0, 0, 'x')",
            "INSERT INTO vxp_log_nodes (origin, level, idx, hash) VALUES ('o', 1, 4, 'x')",
        ):
            with pytest.raises(psycopg.Error):
                conn.execute(statement)
    assert (log.size, other.size) == (3, 1)
    assert log.root() == vxp.merkle.tree_hash([vxp.merkle.leaf_hash(e) for e in (b"a", b"b", b"c")])
    log.close()
    other.close()
    with _raw(postgres_url) as conn:  # the tables' owner can turn the guards off...
        conn.execute("ALTER TABLE vxp_log_entries DISABLE TRIGGER USER")
    with pytest.raises(vxp.VxpError) as caught:  # ...and no store opens on it then
        vxp.open_log_store(postgres_url, "o")
    assert caught.value.code == "log_corrupt"
    assert "vxp_log_entries.vxp_log_entries_fixed" in str(caught.value)


def test_an_append_cut_by_a_dropped_connection_is_no_conflict(postgres_url: str) -> None:
    """Review #5: ``log_conflict`` tells a writer to retry; an append whose connection
    dropped may have landed, so it is ``log_store_error`` (check before retrying)."""
    store = vxp.open_log_store(postgres_url, "o")
    log = vxp.MerkleLog("o", store)
    log.append(b"a")
    backend = store._pg.tx(lambda c: c.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[attr-defined]
    with _raw(postgres_url) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (backend,))
    with pytest.raises(vxp.VxpError) as caught:
        store.append(1, [b"b"], [(0, 1, vxp.merkle.leaf_hash(b"b"))])
    assert caught.value.code == "log_store_error"
    assert log.size == 1  # reconnected; nothing landed
    with pytest.raises(vxp.VxpError) as stale:  # a real conflict is still log_conflict
        store.append(0, [b"x"], [(0, 0, vxp.merkle.leaf_hash(b"x"))])
    assert stale.value.code == "log_conflict"
    log.close()


def test_a_fast_replica_clock_does_not_forget_a_key_a_slow_one_accepts(postgres_url: str) -> None:
    """Review #8: purges wait out the replicas' clock skew."""
    fast, slow = (
        vxp.stores.open_replay_cache(postgres_url),
        vxp.stores.open_replay_cache(postgres_url),
    )
    assert _fresh(slow, "kid:J", 1_000, 700) is True
    assert _fresh(fast, "kid:other", 1_300, 1_005) is True  # 5 s past J's until
    assert _fresh(slow, "kid:J", 1_000, 999) is False  # still remembered
    for cache in (fast, slow):
        cache.close()  # type: ignore[attr-defined]


WRITER = """
import json, sys
sys.path.insert(0, sys.argv[3])
import vxp
log = vxp.MerkleLog("shared/log", vxp.open_log_store(sys.argv[1], "shared/log"))
name, seen, conflicts = sys.argv[2], [], 0
sys.stdin.readline()
for n in range(40):
    while True:
        try:
            index = log.append(f"{name}-{n}".encode())
            break
        except vxp.VxpError as exc:
            assert exc.code == "log_conflict", exc
            conflicts += 1
    size = log.size
    seen.append([index, size, log.root(size).hex()])
print(json.dumps({"seen": seen, "conflicts": conflicts}))
"""


def test_two_writer_processes_never_fork_the_log(postgres_url: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, postgres_url, name, str(ROOT / "src")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("w1", "w2")
    ]
    for proc in procs:  # release both together
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    reports = []
    for proc in procs:
        out, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0
        reports.append(json.loads(out))
    log = vxp.MerkleLog("shared/log", vxp.open_log_store(postgres_url, "shared/log"))
    entries = [log.entry(i) for i in range(log.size)]
    assert log.size == 80
    assert sorted(entries) == sorted(f"{w}-{n}".encode() for w in ("w1", "w2") for n in range(40))
    for name in ("w1", "w2"):  # each writer's entries in its own order
        mine = [e for e in entries if e.startswith(name.encode())]
        assert mine == [f"{name}-{n}".encode() for n in range(40)]
    final = log.root()
    assert final == vxp.merkle.tree_hash([vxp.merkle.leaf_hash(e) for e in entries])
    for report in reports:  # every tree head either writer saw is a prefix of the one log
        for index, size, root in report["seen"]:
            assert entries[index] is not None
            assert bytes.fromhex(root) == log.root(size)
            vxp.merkle.verify_consistency(size, 80, bytes.fromhex(root), final,
                                   log.consistency_proof(size))  # fmt: skip
    log.close()


# ---------------------------------------------------------------- SQLite versions (issue 24 #7)


def test_a_log_file_of_the_previous_version_is_adopted(tmp_path: Path) -> None:
    from vxp._log import SQLITE_MIGRATIONS

    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path, isolation_level=None)
    for statement in SQLITE_MIGRATIONS[0]:  # the schema before versions were recorded
        old.execute(statement)
    old.execute("INSERT INTO vxp_log_meta (key, value) VALUES ('origin', 'o')")
    old.execute("INSERT INTO vxp_log_entries (idx, data) VALUES (0, x'61')")
    old.execute("INSERT INTO vxp_log_nodes (level, idx, hash) VALUES (0, 0, ?)",
                (vxp.merkle.leaf_hash(b"a"),))  # fmt: skip
    assert old.execute("PRAGMA user_version").fetchone() == (0,)
    old.close()
    log = vxp.MerkleLog("o", vxp.stores.SqliteLogStore(path, "o"))
    assert log.entry(0) == b"a"
    log.append(b"b")
    assert log.root() == vxp.merkle.tree_hash(
        [vxp.merkle.leaf_hash(b"a"), vxp.merkle.leaf_hash(b"b")]
    )
    log.close()
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA user_version").fetchone() == (len(SQLITE_MIGRATIONS),)
    assert check.execute("PRAGMA application_id").fetchone() == (application_id("vxp"),)
    check.close()
    cache = vxp.stores.SqliteReplayCache(str(path))  # the log and the replay cache share a file
    assert _fresh(cache, "kid:j", 5000, 1000) is True
    cache.close()
    import pxp

    pxp.SqliteRoomStore(tmp_path / "rooms.sqlite").close()
    with pytest.raises(vxp.VxpError) as caught:  # a file of another store is refused, saying so
        vxp.stores.SqliteReplayCache(str(tmp_path / "rooms.sqlite"))
    assert caught.value.code == "replay_store_unavailable"
    assert "not a vxp store" in str(caught.value)


def test_a_replay_file_of_the_previous_version_is_adopted(tmp_path: Path) -> None:
    from vxp._log import SQLITE_MIGRATIONS as REPLAY_MIGRATIONS

    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path, isolation_level=None)  # a replay file as 900d638 wrote it
    old.execute(
        "CREATE TABLE IF NOT EXISTS dpop_jti (key TEXT PRIMARY KEY, until INTEGER NOT NULL)"
    )
    old.execute("INSERT INTO dpop_jti (key, until) VALUES ('kid:old', 5000)")
    old.close()
    cache = vxp.stores.SqliteReplayCache(str(path))
    assert _fresh(cache, "kid:old", 5000, 1000) is False  # remembered across versions
    assert _fresh(cache, "kid:new", 5000, 1000) is True
    cache.close()
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA user_version").fetchone() == (len(REPLAY_MIGRATIONS),)
    check.execute(f"PRAGMA user_version = {len(REPLAY_MIGRATIONS) + 1}")  # a newer version's
    check.commit()
    check.close()
    with pytest.raises(vxp.VxpError) as caught:
        vxp.stores.SqliteReplayCache(str(path))
    assert caught.value.code == "replay_store_unavailable"


# ---- §4.2 the SQLite log refuses to rewrite history

_REWRITES = (
    "INSERT OR REPLACE INTO vxp_log_entries (idx, data) VALUES (1, x'ff')",
    "REPLACE INTO vxp_log_entries (idx, data) VALUES (0, x'ff')",
    "INSERT OR REPLACE INTO vxp_log_nodes (level, idx, hash) VALUES (0, 1, x'ff')",
    "INSERT OR REPLACE INTO vxp_log_nodes (level, idx, hash) VALUES (1, 0, x'ff')",
    "REPLACE INTO vxp_log_meta (key, value) VALUES ('origin', 'evil/log')",
    "INSERT OR IGNORE INTO vxp_log_entries (idx, data) VALUES (2, x'ff')",
    "INSERT INTO vxp_log_entries (idx, data) VALUES (9, x'ff')",
    "INSERT INTO vxp_log_entries (data) VALUES (x'ff')",
    "INSERT INTO vxp_log_nodes (level, idx, hash) VALUES (0, 9, x'ff')",
    "INSERT INTO vxp_log_nodes (level, idx, hash) VALUES (5, 3, x'ff')",
    "UPDATE OR REPLACE vxp_log_entries SET idx = 0 WHERE idx = 1",
)


@pytest.mark.parametrize("sql", _REWRITES)
def test_sqlite_log_refuses_replace_and_out_of_place_inserts(tmp_path: Path, sql: str) -> None:
    """§4.2: INSERT OR REPLACE deletes without firing DELETE triggers: it used to rewrite
    history; every insert not at the next free position is refused."""
    path = tmp_path / "log.db"
    log = vxp.MerkleLog("test/log", vxp.stores.SqliteLogStore(path, "test/log"))
    log.extend([b"a", b"b", b"c", b"d"])
    root, entries = log.root(), [log.entry(i) for i in range(4)]
    raw = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.DatabaseError):
        raw.execute(sql)
    raw.close()
    log.close()
    again = vxp.MerkleLog("test/log", vxp.stores.SqliteLogStore(path, "test/log"))
    assert again.size == 4
    assert again.root() == root
    assert [again.entry(i) for i in range(4)] == entries
    assert again.append(b"e") == 4  # the legitimate append path still works
    assert again.root() == vxp.merkle.tree_hash([vxp.merkle.leaf_hash(x) for x in [*entries, b"e"]])
    again.close()


def test_sqlite_log_created_before_the_triggers_gets_them_on_open(tmp_path: Path) -> None:
    """§4.2: the append-only triggers come back on every open."""
    path = tmp_path / "log.db"
    vxp.stores.SqliteLogStore(path, "o").close()
    raw = sqlite3.connect(path, isolation_level=None)
    for name in ("entries_append_only", "nodes_append_only", "meta_insert_once"):
        raw.execute(f"DROP TRIGGER vxp_log_{name}")
    raw.close()
    log = vxp.MerkleLog("o", vxp.stores.SqliteLogStore(path, "o"))
    log.extend([b"a", b"b"])
    raw = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.DatabaseError):
        raw.execute("INSERT OR REPLACE INTO vxp_log_entries (idx, data) VALUES (0, x'ff')")
    raw.close()
    assert log.entry(0) == b"a"
    log.close()


def test_merkle_log_origin_must_match_its_sqlite_store(tmp_path: Path) -> None:
    """§4.2: a file belongs to one origin (log_origin_mismatch otherwise)."""
    store = vxp.stores.SqliteLogStore(tmp_path / "log.db", "log/a")
    with pytest.raises(vxp.VxpError) as info:
        vxp.MerkleLog("log/b", store)
    assert info.value.code == "log_origin_mismatch"
    store.close()
    with pytest.raises(vxp.VxpError) as info:
        vxp.stores.SqliteLogStore(tmp_path / "log.db", "log/b")
    assert info.value.code == "log_origin_mismatch"


def test_sqlite_size_is_the_next_free_index(tmp_path: Path) -> None:
    """§4.2: the size is read from the file (other writers count)."""
    log = vxp.MerkleLog("o", vxp.stores.SqliteLogStore(tmp_path / "log.db", "o"))
    assert log.size == 0
    log.extend([bytes([i]) for i in range(37)])
    assert log.size == 37
    log.close()


def test_a_store_that_lost_its_hashes_reports_corruption(tmp_path: Path) -> None:
    """§4.2: someone with the file drops the triggers and deletes hashes: log_corrupt."""
    path = tmp_path / "log.db"
    log = vxp.MerkleLog("o", vxp.stores.SqliteLogStore(path, "o"))
    log.extend([bytes([i]) for i in range(6)])
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("DROP TRIGGER vxp_log_nodes_no_delete")
    raw.execute("DELETE FROM vxp_log_nodes")
    raw.close()
    for call in (log.root, lambda: log.inclusion_proof(3), lambda: log.consistency_proof(2)):
        with pytest.raises(vxp.VxpError, match="log_corrupt"):
            call()
    log.close()
