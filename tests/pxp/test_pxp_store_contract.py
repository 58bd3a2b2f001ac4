"""One contract for the PXP room and link stores: memory, SQLite and PostgreSQL (issue 23).

Then PostgreSQL only: the ledger is append-only in the database, two server apps on one
database (two replicas) wake each other's ``wait_for_turn`` through ``LISTEN/NOTIFY``
with the periodic re-read set to 30 s, and two ``pxp serve --state postgresql://…``
processes serve one room with both seats sending at once.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import pxp

pytest.importorskip("mcp", reason="the MCP server tests need principal-protocols[mcp]")
pytest.importorskip("uvicorn", reason="the MCP server tests need principal-protocols[http]")

import httpx2

from pxp.server import (
    MemoryLinkStore,
    ServerConfig,
    SqliteLinkStore,
    create_app,
    service_for_url,
)

from ._mcp_harness import call, free_socket, mcp_client, running
from .test_mcp_rooms import OFFER, open_room

COUNTER = {"message": "4200 EUR, and delivery by June.", "status": "continue"}
T0 = datetime(2026, 1, 1, tzinfo=UTC)
CARD = {"principal": {"name": "Ana"}, "goal": "Sell", "must_haves": ["5000 EUR"]}
pytestmark = pytest.mark.slow  # servers, processes and a database


def _room(room_id: str = "store-1") -> pxp.Room:
    return pxp.Room.open(room_id, topic="t", now=T0, tokens={"A": "a" * 24, "B": "b" * 24})


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Any, Any]]:
    """``(room store, another handle on it, link store)``."""
    opened: list[Any] = []
    if request.param == "memory":
        room = pxp.MemoryRoomStore()
        yield room, room, MemoryLinkStore()
        return
    if request.param == "sqlite":
        path = tmp_path / "rooms.sqlite"
        found = (pxp.SqliteRoomStore(path), pxp.SqliteRoomStore(path), SqliteLinkStore(path))
    else:
        from pxp.postgres import PostgresLinkStore, PostgresRoomStore

        url = request.getfixturevalue("postgres_url")
        found = (PostgresRoomStore(url), PostgresRoomStore(url), PostgresLinkStore(url))
    opened.extend(found)
    yield found
    for store in opened:
        if hasattr(store, "close"):
            store.close()


def test_rooms_round_trip_and_refuse_a_stale_copy(stores: tuple[Any, Any, Any]) -> None:
    store, other, _ = stores
    store.create(_room())
    with pytest.raises(pxp.PxpError) as caught:
        other.create(_room())
    assert caught.value.code == "store_conflict"
    first, second = store.load("store-1"), other.load("store-1")
    first.seal("A", CARD, now=T0 + timedelta(seconds=1))
    store.save(first)
    assert other.load("store-1").export() == first.export()
    second.seal("B", CARD, now=T0 + timedelta(seconds=2))
    with pytest.raises(pxp.PxpError) as stale:
        other.save(second)  # saved in between: its ledger does not extend the stored one
    assert stale.value.code == "store_conflict"
    assert other.room_ids() == ["store-1"]
    assert other.locate("b" * 24) == ("store-1", "B")
    assert other.locate("nope") is None
    with pytest.raises(pxp.PxpError) as unknown:
        other.load("other")
    assert unknown.value.code == "room_unknown"
    clash = pxp.Room.open("store-2", topic="t", now=T0, tokens={"A": "a" * 24, "B": "c" * 24})
    with pytest.raises(pxp.PxpError) as taken:
        store.create(clash)  # seat A's token already opens a seat of store-1
    assert taken.value.code == "store_conflict"
    assert "store-2" not in store.room_ids()  # nothing half-applied


def test_a_stale_save_never_overwrites_a_change_without_a_ledger_entry(
    stores: tuple[Any, Any, Any],
) -> None:
    # review pg2 #1: a draft changes the snapshot only; a copy loaded before it, with a
    # ledger entry added, extends the stored ledger and used to wipe the draft
    store, other, _ = stores
    store.create(_room())
    first, second = store.load("store-1"), other.load("store-1")
    first.draft_card("A", CARD)
    store.save(first)
    second.join("B", agent="bob", now=T0)
    with pytest.raises(pxp.PxpError) as stale:
        other.save(second)
    assert stale.value.code == "store_conflict"
    kept = other.load("store-1")
    assert kept.draft("A") is not None
    assert len(kept.ledger) == len(first.ledger)  # nothing half-applied
    # reloaded and redone, the join goes through and the draft stays
    kept.join("B", agent="bob", now=T0)
    other.save(kept)
    kept.seal("B", CARD, now=T0 + timedelta(seconds=1))
    other.save(kept)  # the saved copy is the base of its next save
    final = store.load("store-1")
    assert final.draft("A") is not None
    assert final.export() == kept.export()
    first.seal("A", CARD, now=T0 + timedelta(seconds=2))
    with pytest.raises(pxp.PxpError) as behind:
        store.save(first)  # saved earlier through this very store, then overtaken
    assert behind.value.code == "store_conflict"
    stranger = pxp.Room.from_export(final.export())
    with pytest.raises(pxp.PxpError) as unloaded:
        store.save(stranger)  # a copy this store never handed out has no known base
    assert unloaded.value.code == "store_conflict"
    assert store.load("store-1").export() == final.export()


def test_concurrent_saves_of_one_room_keep_one_history(stores: tuple[Any, Any, Any]) -> None:
    store, other, _ = stores
    store.create(_room())
    copies = [store.load("store-1"), other.load("store-1")]
    for n, copy in enumerate(copies):
        copy.seal("AB"[n], CARD, now=T0 + timedelta(seconds=1))
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def save(n: int) -> None:
        start.wait()
        try:
            (store, other)[n].save(copies[n])
            outcomes.append("saved")
        except pxp.PxpError as exc:
            outcomes.append(exc.code)

    threads = [threading.Thread(target=save, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["saved", "store_conflict"]
    kept = store.load("store-1")
    assert pxp.verify_ledger(kept.export()["ledger"]) == kept.head


def test_ids_that_are_not_utf8_find_nothing_and_write_nothing(
    stores: tuple[Any, Any, Any],
) -> None:
    # review pg2 #3: a lone surrogate (what json.loads makes of "\\ud800") raised a raw
    # UnicodeEncodeError from the database stores; look-ups find nothing, writes refuse
    store, other, links = stores
    store.create(_room())
    bad = "\ud800"
    with pytest.raises(pxp.PxpError) as unknown:
        other.load(bad)
    assert unknown.value.code == "room_unknown"
    assert other.locate(bad) is None
    assert other.locate("a" * 23 + bad) is None
    assert links.rows(bad) == []
    assert links.room_digests(bad) == {}
    assert links.revoke(bad) == 0
    assert links.set_expiry(bad, None) == 0
    writes = [
        lambda: links.add_room(bad, {("A", "seat"): "d"}),
        lambda: links.add_room("r2", {("A", "seat"): bad}),
        lambda: links.set_link(bad, "A", "principal", "d", issued_at=1),
        lambda: links.set_link("r2", "A", "principal", bad, issued_at=1),
    ]
    for write in writes:
        with pytest.raises(pxp.PxpError) as refused:
            write()
        assert refused.value.code == "argument_invalid"
    assert links.rows("r2") == []  # nothing half-applied
    assert other.room_ids() == ["store-1"]


def test_link_digests(stores: tuple[Any, Any, Any]) -> None:
    _, _, links = stores
    links.add_room("r1", {("A", "seat"): "da", ("B", "seat"): "db"}, expires_at="2027-01-01T00:00Z")
    with pytest.raises(pxp.PxpError) as caught:
        links.add_room("r1", {("A", "seat"): "x"})
    assert caught.value.code == "room_exists"
    assert links.set_link("r1", "A", "principal", "pa", issued_at=2) is True
    assert links.set_link("r1", "B", "seat", "db2", issued_at=5) is True
    assert links.set_link("r1", "B", "seat", "db-old", issued_at=4) is False  # a later issue won
    assert links.set_link("unknown", "B", "seat", "d") is False
    assert links.room_digests("r1") == {
        ("A", "principal"): "pa",
        ("A", "seat"): "da",
        ("B", "seat"): "db2",
    }
    # seat B's invite is a kind of its own in every store (a PostgreSQL store once read it
    # back as a principal link, so a spent invite's seat link opened nothing)
    assert links.set_link("r2-invite", "B", "invite", "inv", issued_at=1) is False
    links.add_room("r2", {("A", "seat"): "ea", ("B", "invite"): "inv"})
    assert {(r.seat, r.kind) for r in links.rows("r2")} == {("A", "seat"), ("B", "invite")}
    assert links.revoke("r1", seat="A") == 2
    assert links.set_expiry("r1", None, kind="seat") == 2
    rows = {(r.seat, r.kind): (r.expires_at, r.revoked) for r in links.rows("r1")}
    assert rows == {
        ("A", "principal"): (None, True),
        ("A", "seat"): (None, True),
        ("B", "seat"): (None, False),
    }
    assert links.rows("unknown") == []


# ---------------------------------------------------------------- PostgreSQL only


def test_postgres_ledger_is_append_only_in_the_database(postgres_url: str) -> None:
    import psycopg

    from pxp.postgres import PostgresRoomStore

    store = PostgresRoomStore(postgres_url)
    room = _room()
    room.seal("A", CARD, now=T0 + timedelta(seconds=1))
    store.create(room)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for statement in (
            "UPDATE pxp_ledger SET entry = '{}'",
            "DELETE FROM pxp_ledger",
            "TRUNCATE pxp_ledger CASCADE",
            "INSERT INTO pxp_ledger (room_id, n, hash, prev, entry)"
            " VALUES ('store-1', 9, 'h', 'p', '{}')",
            "INSERT INTO pxp_ledger (room_id, n, hash, prev, entry)"
            " VALUES ('store-1', 1, 'h', repeat('0', 64), '{}')",
        ):
            with pytest.raises(psycopg.Error):
                conn.execute(statement)
    assert store.load("store-1").export() == room.export()
    store.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE pxp_ledger DISABLE TRIGGER pxp_ledger_extends")
    with pytest.raises(pxp.PxpError) as caught:  # the guards are checked on open
        PostgresRoomStore(postgres_url)
    assert caught.value.code == "store_corrupt"


def test_a_store_written_by_a_newer_version_is_corrupt_not_an_outage(postgres_url: str) -> None:
    """Stores review S1, the other side: only a store the code cannot read (its migrations
    are newer than the code's) is ``store_corrupt``; an outage while the migrations run
    (another replica holding their lock past ``lock_timeout``) is ``store_unavailable``,
    held on a real lock in tests/ppstore/test_ppstore.py (every package)."""
    import psycopg

    service_for_url(postgres_url)  # the store exists, at the code's version
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("INSERT INTO ppstore_migrations (store, version) VALUES ('pxp', 999)")
    with pytest.raises(pxp.PxpError) as caught:
        service_for_url(postgres_url)
    assert caught.value.code == "store_corrupt"
    assert "999" in str(caught.value)


def test_a_join_whose_link_write_fails_changes_nothing_on_postgres(postgres_url: str) -> None:
    """Review i25b #4: rooms and links on one database are saved in one transaction: a
    failure injected into the link table (a trigger) leaves the room unjoined."""
    import psycopg

    service = service_for_url(postgres_url)
    made = service.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    grant = service.grant(made.link("http://x", "B", "invite"), ("seat", "invite"))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION inject_failure() RETURNS trigger LANGUAGE plpgsql AS $$"
            " BEGIN RAISE EXCEPTION 'injected link write failure'; END $$"
        )
        conn.execute(
            "CREATE TRIGGER inject_failure BEFORE INSERT OR UPDATE ON pxp_server_links"
            " FOR EACH ROW EXECUTE FUNCTION inject_failure()"
        )
    with pytest.raises(pxp.PxpError) as caught:
        service.join(grant, "bo-agent")
    assert caught.value.code == "store_unavailable"
    assert service.export(made.room_id)["seats"]["B"]["agent"] is None
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TRIGGER inject_failure ON pxp_server_links")
    assert service.join(grant, "bo-agent").seat_token is not None


def test_a_waiter_on_one_replica_is_woken_by_a_send_on_the_other(postgres_url: str) -> None:
    """Two apps, each its own stores on one database; the re-read is every 30 s, so only
    the NOTIFY of the other replica's write can wake the waiter in time."""
    one, two = service_for_url(postgres_url), service_for_url(postgres_url)
    sock1, sock2 = free_socket(), free_socket()
    port1, port2 = sock1.getsockname()[1], sock2.getsockname()[1]
    app1 = create_app(one, ServerConfig(public_url=f"http://127.0.0.1:{port1}", poll_seconds=30))
    app2 = create_app(two, ServerConfig(public_url=f"http://127.0.0.1:{port2}", poll_seconds=30))

    async def go(base1: str, base2: str) -> float:
        async with mcp_client(base1) as a, mcp_client(base2) as b:
            links = await open_room(a, b)  # A on replica 1, B on replica 2
            started = time.monotonic()
            waited, sent = await asyncio.gather(
                call(b, "wait_for_turn", {"link": links["b"], "timeout_seconds": 25}),
                _later(call(a, "send_envelope", {"link": links["a"], **OFFER})),
            )
            took = time.monotonic() - started
            assert sent["accepted_envelope"]["claims"][0]["id"] == "A1.1"
            assert waited["ready"] is True
            assert waited["your_turn"] is True
            assert [c["id"] for c in waited["claims_to_review"]] == ["A1.1"]
            return took

    try:
        with running(app1, sock1) as base1, running(app2, sock2) as base2:
            took = asyncio.run(go(base1, base2))
    finally:
        for service in (one, two):
            service._rooms.close()  # type: ignore[attr-defined]
            service._links.close()  # type: ignore[attr-defined]
    assert took < 20, took  # woken by the other replica's write, not by the 30 s re-read


def test_the_listener_wakes_every_waiter_after_a_reconnect_and_logs_it(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # review pg2 #4: a NOTIFY sent while the listening connection is down is lost; after
    # the reconnect every waiter must look again at once (and the drop must be logged)
    import psycopg

    from pxp.postgres import PostgresRoomStore

    store = PostgresRoomStore(postgres_url)
    rooms: list[str] = []
    everyone = threading.Event()
    halt = store.listen(rooms.append, wake_all=everyone.set)
    caplog.set_level("WARNING", logger="pxp")
    try:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            listening = "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            listening += " AND query LIKE 'LISTEN%%' AND pid <> pg_backend_pid()"
            _until(lambda: conn.execute(listening).fetchone() is not None)
            conn.execute("NOTIFY pxp_rooms, 'before'")
            _until(lambda: rooms == ["before"])
            assert not everyone.is_set()
            (pid,) = conn.execute(listening).fetchone() or (None,)
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
            conn.execute("NOTIFY pxp_rooms, 'lost'")  # nobody listens just now
            assert everyone.wait(15), "no wake-all after the reconnect"
            _until(lambda: conn.execute(listening).fetchone() is not None)
            conn.execute("NOTIFY pxp_rooms, 'after'")
            _until(lambda: rooms[-1:] == ["after"])
    finally:
        halt()
        store.close()
    assert any("listen" in r.getMessage() for r in caplog.records), caplog.records


def _until(check: Any) -> None:
    deadline = time.monotonic() + 15
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


async def _later(job: Any) -> Any:
    await asyncio.sleep(1.0)  # the waiter is waiting by then (it would wait 30 s)
    return await job


class Replica:
    """``python -m pxp serve --state URL`` as a child process."""

    def __init__(self, url: str) -> None:
        sock = free_socket()
        self.port = sock.getsockname()[1]
        sock.close()
        self.base = f"http://127.0.0.1:{self.port}"
        argv = [sys.executable, "-m", "pxp", "serve", "--port", str(self.port), "--state", url]
        argv += ["--poll-seconds", "30"]  # only the other replica's NOTIFY wakes in time
        self.proc = subprocess.Popen(argv, env=dict(os.environ), stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx2.get(self.base + "/s/x/y", timeout=1)
                return
            except httpx2.TransportError:
                assert self.proc.poll() is None, self.stop()
                assert time.monotonic() < deadline
                time.sleep(0.1)

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        return err


def test_two_pxp_serve_replicas_share_one_room(postgres_url: str) -> None:
    one, two = Replica(postgres_url), Replica(postgres_url)

    async def go() -> tuple[list[Any], str]:
        async with mcp_client(one.base) as a, mcp_client(two.base) as b:
            links = await open_room(a, b)
            # both seats send at once, each through its own replica. It is A's turn: A's
            # envelope is accepted; B's is refused (it came first: not B's turn) or
            # accepted after A's (then it is B's turn). Never two envelopes at one place.
            both = await asyncio.gather(
                a.call_tool("send_envelope", {"link": links["a"], **OFFER}),
                b.call_tool("send_envelope", {"link": links["b"], **OFFER}),
            )
            assert not both[0].is_error, both[0].content
            if both[1].is_error:
                assert "not_your_turn" in both[1].content[0].text  # type: ignore[union-attr]
            # whoever is to move next answers on its replica while the other one waits on
            # the other replica: only the NOTIFY wakes it before its 30 s re-read
            mover, waiter = ("b", "a") if both[1].is_error else ("a", "b")
            clients = {"a": a, "b": b}
            started = time.monotonic()
            waited, _ = await asyncio.gather(
                call(clients[waiter], "wait_for_turn",
                     {"link": links[waiter], "timeout_seconds": 25}),
                _later(call(clients[mover], "send_envelope", {"link": links[mover], **COUNTER})),
            )  # fmt: skip
            assert time.monotonic() - started < 20
            assert waited["ready"] is True
            assert waited["your_turn"] is True
            return list(both), str(waited["room_id"])

    try:
        both, room_id = asyncio.run(go())
    finally:
        errors = [one.stop(), two.stop()]
    from pxp.postgres import PostgresRoomStore

    store = PostgresRoomStore(postgres_url)
    room = store.load(room_id)  # re-verifies the whole ledger
    store.close()
    ledger = room.export()["ledger"]
    assert pxp.verify_ledger(ledger) == room.head
    sent = [e for e in ledger if "envelope" in e["type"]]
    accepted = sum(not r.is_error for r in both) + 1  # and the answer after the wait
    assert len(sent) == accepted, [e["type"] for e in ledger]  # one chain, nothing lost
    assert "(rooms in postgresql://" in errors[0]
