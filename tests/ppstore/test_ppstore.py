"""The store plumbing: URL grammar, the one migration runner, the psycopg helper, the cluster."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ppstore import (
    MIGRATION_TABLE,
    Pg,
    StoreError,
    StoreUnavailableError,
    StoreUsageError,
    application_id,
    libpq_url,
    migrate,
    migrate_postgres,
    migrate_sqlite,
    parse_url,
    redact,
)
from tests.pgcluster import Cluster, start_cluster

V1 = ["CREATE TABLE IF NOT EXISTS t (x INTEGER NOT NULL)"]
V2 = ["ALTER TABLE t ADD COLUMN y INTEGER NOT NULL DEFAULT 7"]
BROKEN = ["CREATE TABLE u (z INTEGER)", "THIS IS NOT SQL"]


# ---------------------------------------------------------------- URLs


def test_url_grammar() -> None:
    assert parse_url(":memory:").kind == "memory"
    found = parse_url("sqlite:/tmp/a.sqlite")
    assert (found.kind, found.path) == ("sqlite", "/tmp/a.sqlite")
    assert parse_url("sqlite:~/x.sqlite").path == str(Path.home() / "x.sqlite")
    pg = parse_url("postgresql://app:s3cret@db.example/parley?sslmode=require")
    assert pg.kind == "postgresql"
    assert pg.dsn == "postgresql://app:s3cret@db.example/parley?sslmode=require"
    assert "s3cret" not in str(pg)
    assert str(pg) == "postgresql://app:***@db.example/parley?sslmode=require"
    assert parse_url("postgres://h/d").kind == "postgresql"


@pytest.mark.parametrize(
    "bad",
    ["", "sqlite:", "sqlite:   ", "/tmp/x.sqlite", "mysql://h/d", "memory", "x\x00y", None, 7,
     "postgresql://a:b@[::1/d", "SQLITE:/x"],
)  # fmt: skip
def test_bad_urls_are_refused(bad: object) -> None:
    with pytest.raises(StoreError) as caught:
        parse_url(bad)
    assert caught.value.code == "bad_url"


def test_a_refused_url_never_echoes_its_password() -> None:
    with pytest.raises(StoreError) as caught:
        parse_url("mysql://root:hunter2@db/x")
    assert "hunter2" not in str(caught.value)
    assert redact("postgresql://u@h/d") == "postgresql://u@h/d"


# ---------------------------------------------------------------- SQLite runner


def _sqlite(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def test_sqlite_runner_applies_in_order_and_records_user_version(tmp_path: Path) -> None:
    db = _sqlite(tmp_path / "s.sqlite")
    assert migrate(db, "demo", [V1]) == 0
    db.execute("INSERT INTO t (x) VALUES (1)")
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    assert migrate_sqlite(db, "demo", [V1, V2]) == 1  # upgraded from version 1
    assert db.execute("SELECT x, y FROM t").fetchall() == [(1, 7)]
    assert db.execute("PRAGMA user_version").fetchone()[0] == 2
    assert migrate_sqlite(db, "demo", [V1, V2]) == 2  # nothing left to do


def test_sqlite_runner_refuses_a_newer_store(tmp_path: Path) -> None:
    db = _sqlite(tmp_path / "s.sqlite")
    migrate_sqlite(db, "demo", [V1, V2])
    with pytest.raises(StoreError) as caught:
        migrate_sqlite(db, "demo", [V1])
    assert caught.value.code == "schema_too_new"
    assert "version 2" in str(caught.value)


def test_sqlite_failed_migration_changes_nothing(tmp_path: Path) -> None:
    db = _sqlite(tmp_path / "s.sqlite")
    migrate_sqlite(db, "demo", [V1])
    with pytest.raises(StoreError) as caught:
        migrate_sqlite(db, "demo", [V1, BROKEN])
    assert caught.value.code == "migration_failed"
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert names == {"t"}  # table u of the failed migration was rolled back


def test_sqlite_unversioned_file_of_version_one_is_upgraded(tmp_path: Path) -> None:
    """A file written before versions were recorded: user_version 0 beside the v1 tables."""
    db = _sqlite(tmp_path / "s.sqlite")
    for statement in V1:
        db.execute(statement)
    db.execute("INSERT INTO t (x) VALUES (5)")
    assert migrate_sqlite(db, "demo", [V1, V2]) == 0
    assert db.execute("SELECT x, y FROM t").fetchall() == [(5, 7)]


def test_sqlite_file_of_another_store_is_refused(tmp_path: Path) -> None:
    db = _sqlite(tmp_path / "s.sqlite")
    migrate_sqlite(db, "demo", [V1])
    assert db.execute("PRAGMA application_id").fetchone()[0] == application_id("demo")
    with pytest.raises(StoreError) as caught:
        migrate_sqlite(db, "other", [["CREATE TABLE IF NOT EXISTS o (a TEXT)"]])
    assert caught.value.code == "wrong_store"
    assert application_id("demo") != application_id("other")


# ---------------------------------------------------------------- PostgreSQL runner


def test_postgres_runner_records_each_migration_per_store(postgres_url: str) -> None:
    pg = Pg(postgres_url)
    with pg.connection() as conn:
        assert migrate_postgres(conn, "demo", [V1]) == 0
        assert migrate(conn, "demo", [V1, V2]) == 1
        assert migrate(conn, "other", [["CREATE TABLE o (a text)"]]) == 0
        rows = conn.execute(
            f"SELECT store, version FROM {MIGRATION_TABLE} ORDER BY store, version"  # noqa: S608
        ).fetchall()
        assert rows == [("demo", 1), ("demo", 2), ("other", 1)]
        with pytest.raises(StoreError) as caught:
            migrate(conn, "demo", [V1])
        assert caught.value.code == "schema_too_new"
        with pytest.raises(StoreError) as failed:
            migrate(conn, "other", [["CREATE TABLE o (a text)"], BROKEN])
        assert failed.value.code == "migration_failed"
        assert conn.execute("SELECT to_regclass('u')").fetchone() == (None,)
        assert conn.execute(
            f"SELECT MAX(version) FROM {MIGRATION_TABLE} WHERE store = 'other'"  # noqa: S608
        ).fetchone() == (1,)
    pg.close()


def test_postgres_replicas_starting_together_migrate_once(postgres_url: str) -> None:
    """Eight connections open the same store at once: each migration runs exactly once."""
    errors: list[BaseException] = []
    start = threading.Barrier(8)
    slow = [*V1, "SELECT pg_sleep(0.05)"]

    def opener() -> None:
        try:
            pg = Pg(postgres_url)
            start.wait()
            with pg.connection() as conn:
                migrate(conn, "demo", [slow, V2])
            pg.close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    pg = Pg(postgres_url)
    with pg.connection() as conn:
        assert conn.execute(
            f"SELECT version FROM {MIGRATION_TABLE} ORDER BY version"  # noqa: S608
        ).fetchall() == [(1,), (2,)]
    pg.close()


def test_pg_helper_errors_are_store_errors_without_the_password(postgres_cluster: Cluster) -> None:
    url = postgres_cluster.url("no_such_database").replace(
        "postgresql:///", "postgresql://postgres:topsecret@/"
    )
    with pytest.raises(StoreError) as caught:
        Pg(url)
    assert caught.value.code == "store_open"
    assert "topsecret" not in str(caught.value)


def test_pg_helper_reconnects_after_the_connection_is_killed(postgres_url: str) -> None:
    pg = Pg(postgres_url)
    pid = pg.tx(lambda c: c.execute("SELECT pg_backend_pid()").fetchone()[0])
    killer = Pg(postgres_url)
    killer.tx(lambda c: c.execute("SELECT pg_terminate_backend(%s)", (pid,)))
    with pytest.raises(StoreError) as caught:  # the transaction that hit the dead link
        pg.tx(lambda c: c.execute("SELECT 1").fetchone())
    assert caught.value.code == "store_unavailable"
    assert pg.tx(lambda c: c.execute("SELECT 2").fetchone()[0]) == 2  # a new connection
    pg.close()
    killer.close()


def test_pg_without_psycopg_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreError) as caught:
        Pg("postgresql:///x")
    assert caught.value.code == "postgres_unavailable"
    assert "principal-protocols[postgres]" in str(caught.value)


def test_protocol_cores_never_import_the_store_plumbing() -> None:
    code = (
        "import sys, pxp, handoff, vxp, parley, ppcheck\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('ppstore', 'psycopg'))\n"
        "print(bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- the cluster itself


def _processes_under(root: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\x00", b" ")
        except OSError:
            continue
        if str(root).encode() in cmdline:
            found.append(int(entry.name))
    return found


def test_a_stopped_cluster_leaves_no_server_process(postgres_cluster: Cluster) -> None:
    """Start a second cluster, stop it: no process remains and its folder is gone."""
    cluster = start_cluster()
    assert not isinstance(cluster, str), cluster
    root = cluster.root
    try:
        assert cluster.running()
        assert _processes_under(root)
    finally:
        cluster.stop()
    assert not cluster.running()
    assert _processes_under(root) == []
    assert not root.exists()


def test_a_dropped_helper_closes_its_connection(postgres_url: str) -> None:
    """No "deleted while still open" warning (an error under -W error) when a one-shot
    command drops its store without closing it."""
    import gc
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pg = Pg(postgres_url)
        conn = pg._conn
        assert conn is not None
        del pg
        gc.collect()
        assert conn.closed


def test_a_killed_test_run_leaves_no_server_behind(postgres_cluster: Cluster) -> None:
    """The run that started a cluster is SIGKILLed: its watchdog stops the cluster."""
    code = (
        "import sys, time\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "from tests.pgcluster import start_cluster\n"
        "cluster = start_cluster()\n"
        "print(cluster.root, flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    root = Path(proc.stdout.readline().strip())
    assert _processes_under(root)
    proc.kill()
    proc.wait(timeout=30)
    proc.stdout.close()
    deadline = time.monotonic() + 60
    while (_processes_under(root) or root.exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_under(root) == []
    assert not root.exists()


# ---------------------------------------------------------------- review of issue 23


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("postgresql://app@/db?host=/run/pg&password=TopSecretQ", "TopSecretQ"),
        ("postgresql://app:Top#SecretH@nohost.invalid/db", "Top#SecretH"),
        ("postgresql://app:Top/Secret3@db.invalid/appdb", "Top/Secret3"),
        ("postgresql://app:Top%zzSecretP@nohost.invalid/db", "Top%zzSecretP"),
        ("postgresql://app:TopSecret7@[::1/appdb", "TopSecret7"),
        ("postgresql://app@h/db?sslpassword=KeyPass9&sslmode=require", "KeyPass9"),
        ("postgresql://app:p%40ss@h/db", "p@ss"),
    ],
)
def test_no_message_echoes_a_password(url: str, secret: str) -> None:
    """Review #4: every spelling libpq accepts is masked, in the shown URL and in errors."""
    assert secret not in redact(url)
    assert secret not in url.replace(secret, "") + redact(url)
    with pytest.raises(StoreError) as caught:
        Pg(url.replace("/run/pg", "/nonexistent"))
    assert secret not in str(caught.value)
    assert caught.value.code in ("store_open", "bad_url")


def test_isolation_is_read_committed_whatever_the_database_default(postgres_url: str) -> None:
    """Review #2: a database defaulting to REPEATABLE READ does not change the stores'."""
    admin = Pg(postgres_url)
    name = postgres_url.split("?")[0].rsplit("/", 1)[1]
    admin.tx(
        lambda c: c.execute(
            f"ALTER DATABASE \"{name}\" SET default_transaction_isolation = 'repeatable read'"
        )
    )
    admin.close()
    pg = Pg(postgres_url)
    level = pg.tx(lambda c: c.execute("SHOW transaction_isolation").fetchone()[0])
    assert level == "read committed"
    pg.close()


def test_a_role_without_create_opens_a_migrated_store(
    postgres_url: str, postgres_cluster: Cluster
) -> None:
    """Review #3: the runtime role needs no CREATE once the owner has migrated."""
    owner = Pg(postgres_url)
    with owner.connection() as conn:
        migrate_postgres(conn, "demo", [V1])
        conn.execute("DROP ROLE IF EXISTS runtime_only")
        conn.execute("CREATE ROLE runtime_only LOGIN")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(f"GRANT SELECT ON {MIGRATION_TABLE} TO runtime_only")
    owner.close()
    runtime = Pg(postgres_url.replace("user=postgres", "user=runtime_only"))
    with runtime.connection() as conn:
        assert migrate_postgres(conn, "demo", [V1]) == 1
        with pytest.raises(StoreError) as caught:  # behind: it must not try to migrate
            migrate_postgres(conn, "demo", [V1, V2])
        assert caught.value.code == "migration_failed"
    runtime.close()


def test_a_negative_recorded_version_is_refused(tmp_path: Path) -> None:
    """Review #12: never apply only the tail of the migrations."""
    db = _sqlite(tmp_path / "s.sqlite")
    db.execute("PRAGMA user_version = -1")
    with pytest.raises(StoreError) as caught:
        migrate_sqlite(db, "demo", [V1, V2, ["CREATE TABLE c (x INTEGER)"]])
    assert caught.value.code == "wrong_store"
    assert db.execute("SELECT name FROM sqlite_master").fetchall() == []


# ---------------------------------------------------------------- timeouts (issue 25)


def _with(url: str, **params: str) -> str:
    return url + "".join(f"&{name}={value}" for name, value in params.items())


def test_the_url_carries_both_timeouts_with_documented_defaults() -> None:
    plain = parse_url("postgresql://app@db.example/parley?sslmode=require")
    assert (plain.lock_timeout_ms, plain.statement_timeout_ms) == (5000, 30000)
    given = parse_url(
        "postgresql://app@db/p?lock_timeout=250ms&sslmode=require&statement_timeout=2min"
    )
    assert (given.lock_timeout_ms, given.statement_timeout_ms) == (250, 120000)
    assert parse_url("postgresql:///p?lock_timeout=0&statement_timeout=7").lock_timeout_ms == 0
    assert parse_url("postgresql:///p?statement_timeout=7").statement_timeout_ms == 7
    assert parse_url("postgresql:///p?lock_timeout=3s").lock_timeout_ms == 3000
    # libpq reads the URL without them (it refuses a parameter it does not know)
    assert (
        libpq_url(
            "postgresql://app:pw@db/p?lock_timeout=250ms&sslmode=require&statement_timeout=2min"
        )
        == "postgresql://app:pw@db/p?sslmode=require"
    )
    assert libpq_url("postgresql://db/p?lock_timeout=1s") == "postgresql://db/p"
    assert libpq_url("postgresql://a:p?ss@db/p?lock_timeout=1s") == "postgresql://a:p?ss@db/p"
    assert libpq_url("postgresql://db/p?sslmode=require") == "postgresql://db/p?sslmode=require"


@pytest.mark.parametrize(
    "value",
    ["", "5 s", "5S", "-1", "1.5s", "01", "5sec", "1h", "s", "2147483648", "2147484s",
     "35792min", "1e3", "５", "5s&{name}=5s"],
)  # fmt: skip
def test_a_bad_timeout_is_refused_with_its_code(value: str) -> None:
    for name in ("lock_timeout", "statement_timeout"):
        url = f"postgresql://app:TopSecret@db/p?{name}={value.format(name=name)}"
        for call in (parse_url, libpq_url, Pg):
            with pytest.raises(StoreError) as caught:
                call(url)
            assert caught.value.code == "bad_timeout", (call, url)
            assert isinstance(caught.value, StoreUsageError)
            assert name in str(caught.value)
            assert "TopSecret" not in str(caught.value)


def test_the_timeouts_are_set_on_every_connection_whatever_the_database_says(
    postgres_url: str,
) -> None:
    admin = Pg(postgres_url)
    name = postgres_url.split("?")[0].rsplit("/", 1)[1]  # this test's database only
    admin.tx(lambda c: c.execute(f'ALTER DATABASE "{name}" SET statement_timeout = 0'))
    admin.tx(lambda c: c.execute(f'ALTER DATABASE "{name}" SET lock_timeout = 0'))
    try:
        show = "SELECT current_setting('lock_timeout'), current_setting('statement_timeout')"
        pg = Pg(postgres_url)
        assert pg.tx(lambda c: c.execute(show).fetchone()) == ("5s", "30s")
        pid = pg.tx(lambda c: c.execute("SELECT pg_backend_pid()").fetchone()[0])
        admin.tx(lambda c: c.execute("SELECT pg_terminate_backend(%s)", (pid,)))
        with pytest.raises(StoreError):
            pg.tx(lambda c: c.execute("SELECT 1"))
        assert pg.tx(lambda c: c.execute(show).fetchone()) == ("5s", "30s")  # reconnected
        pg.close()
        own = Pg(_with(postgres_url, lock_timeout="250ms", statement_timeout="2min"))
        assert own.tx(lambda c: c.execute(show).fetchone()) == ("250ms", "2min")
        assert dict(own.timeouts) == {"lock_timeout": 250, "statement_timeout": 120000}
        with pytest.raises(TypeError):  # read-only: the URL is the one place they are set
            own.timeouts["lock_timeout"] = -5  # type: ignore[index]
        own.close()
    finally:
        admin.close()


def test_a_transaction_blocked_on_a_row_lock_gives_up_at_the_lock_timeout(
    postgres_url: str,
) -> None:
    """Another connection holds a row lock and never lets go: the store's transaction is
    refused with ``store_timeout`` after the URL's lock_timeout, not left waiting."""
    import psycopg

    setup = Pg(postgres_url)
    setup.tx(lambda c: c.execute("CREATE TABLE spend (id text PRIMARY KEY, total int)"))
    setup.tx(lambda c: c.execute("INSERT INTO spend VALUES ('b1', 0)"))
    setup.close()
    holder = psycopg.connect(postgres_url)  # a transaction left open, holding the row
    holder.execute("SELECT total FROM spend WHERE id = 'b1' FOR UPDATE")
    try:
        pg = Pg(_with(postgres_url, lock_timeout="400ms"))
        update = "UPDATE spend SET total = total + 1 WHERE id = 'b1'"
        _times_out(pg, update, "lock_timeout", 400, "55P03")
        assert pg.tx(lambda c: c.execute("SELECT total FROM spend").fetchone()) == (0,)
        pg.close()
    finally:
        holder.close()


def test_a_runaway_statement_is_cancelled_at_the_statement_timeout(postgres_url: str) -> None:
    pg = Pg(_with(postgres_url, statement_timeout="300ms"))
    _times_out(pg, "SELECT pg_sleep(20)", "statement_timeout", 300, "57014")
    pg.close()


def _times_out(pg: Pg, statement: str, name: str, limit_ms: int, sqlstate: str) -> None:
    """``statement`` fails with ``store_timeout`` after ``limit_ms``, well before 3 s, saying
    which limit; the connection stays good for the next transaction."""
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as caught:
        pg.tx(lambda c: c.execute(statement))
    waited = time.monotonic() - started
    assert limit_ms / 1000 <= waited < 3.0, waited
    assert (caught.value.code, caught.value.sqlstate) == ("store_timeout", sqlstate)
    assert f"{name} ({limit_ms} ms)" in caught.value.message
    assert pg.tx(lambda c: c.execute("SELECT 1").fetchone()) == (1,)


def test_a_migration_blocked_on_a_lock_gives_up_too(postgres_url: str) -> None:
    """A replica opening its store while another holds the migration runner's lock (a
    migration stuck behind it) gives up at the lock timeout instead of queueing forever."""
    import psycopg

    holder = psycopg.connect(postgres_url)  # not autocommit: its migration stays open
    holder.execute("SELECT 1")
    migrate_postgres(holder, "demo", [V1])  # holds the runner's lock until it ends
    try:
        pg = Pg(_with(postgres_url, lock_timeout="300ms"))
        started = time.monotonic()
        with pg.connection() as conn, pytest.raises(StoreError) as caught:
            migrate_postgres(conn, "demo", [V1])
        assert time.monotonic() - started < 3.0
        assert (caught.value.code, caught.value.sqlstate) == ("store_timeout", "55P03")
        assert "lock_timeout (300 ms)" in caught.value.message
        pg.close()
    finally:
        holder.close()


def test_every_package_opens_its_postgres_store_with_the_timeouts(
    postgres_url: str, tmp_path: Path
) -> None:
    """libpq refuses a query parameter it does not know: every connection of every package
    (pxp's change listener included, as ``pxp serve`` opens it) takes the URL without ours."""
    import importlib.util
    import signal
    import socket

    import psycopg

    import handoff
    import parley
    import vxp

    url = _with(postgres_url, lock_timeout="1s", statement_timeout="10s")
    roles = handoff.Roles.from_json({"principal": "p", "principal_side": ["p-desk"]})
    records = handoff.open_store(url, roles=roles, extensions=handoff.EXTENSIONS)
    assert records.records() == []
    records.close()
    parley.open_store(url).close()
    log = vxp.MerkleLog("example/log", vxp.open_log_store(url, "example/log"))
    assert log.append(b"first") == 0
    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("uvicorn") is None:
        return  # pxp serve needs the extras principal-protocols[mcp,http]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pxp", "serve", "--port", str(port), "--state", url],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    listening = (
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND query LIKE 'LISTEN%%' AND pid <> pg_backend_pid()"
    )
    try:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            deadline = time.monotonic() + 60
            while conn.execute(listening).fetchone() != (1,):
                assert proc.poll() is None, "pxp serve ended"
                assert time.monotonic() < deadline, "pxp serve never listened for changes"
                time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert "lost its database connection" not in err, err


def test_a_store_opened_during_another_migration_is_an_outage_in_every_package(
    postgres_url: str,
) -> None:
    """Review adv #3 and #6: the migration runner's lock held past lock_timeout is the
    package's outage error (never "corrupt", never the peer's fault), naming the limit."""
    import psycopg

    import handoff
    import parley
    import pxp.server
    import vxp

    setup = Pg(postgres_url)
    with setup.connection() as conn:
        migrate_postgres(conn, "demo", [V1])  # the runner's table exists
    setup.close()
    url = _with(postgres_url, lock_timeout="300ms")
    holder = psycopg.connect(postgres_url)  # a replica's migration in progress
    holder.execute(f"LOCK TABLE {MIGRATION_TABLE} IN ACCESS EXCLUSIVE MODE")
    roles = handoff.Roles.from_json({"principal": "p", "principal_side": ["p-desk"]})
    try:
        with pytest.raises(handoff.HandoffError) as by_handoff:
            handoff.open_store(url, roles=roles, extensions=handoff.EXTENSIONS)
        with pytest.raises(parley.ParleyError) as by_parley:
            parley.open_store(url)
        with pytest.raises(pxp.PxpError) as by_pxp:
            pxp.server.service_for_url(url)
        with pytest.raises(vxp.VxpError) as by_vxp:
            vxp.open_log_store(url, "example/log")
    finally:
        holder.close()
    assert (by_handoff.value.code, by_handoff.value.reason) == ("store", "store_open")
    assert (by_parley.value.code, by_parley.value.reason) == ("unavailable", "store_unavailable")
    assert by_pxp.value.code == "store_unavailable"
    assert by_vxp.value.code == "log_store_error"
    with pytest.raises(parley.ParleyUsageError) as bad:  # the caller's URL, not the peer's
        parley.open_store(_with(postgres_url, lock_timeout="forever"))
    assert (bad.value.code, bad.value.reason) == ("bad_config", "bad_state")
    for caught in (by_handoff, by_parley, by_pxp, by_vxp):
        assert "lock_timeout (300 ms)" in str(caught.value), caught.value
