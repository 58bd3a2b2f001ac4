"""Links that expire and can be revoked (with ``pxp links``), a SQLite load that reads one
state, and reference rooms served with ``pxp serve --import`` (issue 20, finding 8).

Private imports: ``pxp._server_cli.import_rooms`` is the import step of ``pxp serve
--import``, driven in process to show that a restart importing the same file again mints
no new links; the CLI's public contract is its argv and output (no public cli module, by
decision), which the subprocess tests above hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

import pxp
from pxp import SqliteRoomStore
from pxp._server_cli import import_rooms
from pxp.server import LINK_EXPIRED, LINK_REVOKED, RoomService, SqliteLinkStore

from ..listening import listening
from ._mcp_harness import call, free_socket, mcp_client, refused

pytestmark = pytest.mark.slow

TOP = Path(__file__).resolve().parents[2]
REFERENCE_ROOMS = TOP / "vectors" / "third_party" / "pxp" / "rooms.v0.json"
CARD = {"principal": {"name": "Ann"}, "goal": "Buy chairs", "must_haves": ["June"]}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _service(db: Path, clock: Clock, ttl: timedelta | None = timedelta(days=2)) -> RoomService:
    return RoomService(SqliteRoomStore(db), SqliteLinkStore(db), clock=clock, link_ttl=ttl)


def _made(service: RoomService) -> tuple[str, str, str]:
    made = service.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    base = "http://127.0.0.1:1"
    return made.room_id, made.link(base, "A", "seat"), made.link(base, "B", "invite")


def test_links_expire_after_their_time(tmp_path: Path) -> None:
    clock = Clock()
    service = _service(tmp_path / "r.sqlite", clock)
    _, link_a, _ = _made(service)
    assert service.grant(link_a, "seat").seat == "A"
    clock.now += timedelta(days=2) - timedelta(milliseconds=1)
    assert service.grant(link_a, "seat").seat == "A"
    clock.now += timedelta(milliseconds=1)
    with pytest.raises(pxp.PxpError) as caught:
        service.grant(link_a, "seat")
    assert (caught.value.code, caught.value.message) == ("link_expired", LINK_EXPIRED)


def test_a_principal_link_reissued_to_a_new_agent_gets_a_fresh_term(tmp_path: Path) -> None:
    clock = Clock()
    service = _service(tmp_path / "r.sqlite", clock)
    room_id, _, link_b = _made(service)
    clock.now += timedelta(days=1)
    joined = service.join(service.grant(link_b, ("seat", "invite")), "bo-agent")
    assert joined.page_token is not None
    assert joined.seat_token is not None
    rows = {(r.seat, r.kind): r for r in SqliteLinkStore(tmp_path / "r.sqlite").rows(room_id)}
    assert rows[("B", "principal")].expires_at == "2026-12-04T00:00:00.000Z"
    assert rows[("B", "seat")].expires_at == "2026-12-04T00:00:00.000Z"  # spent invite's link
    assert rows[("B", "invite")].expires_at == "2026-12-03T00:00:00.000Z"


def _pxp(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pxp", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_pxp_links_revokes_extends_and_ends_links(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    clock = Clock()
    service = _service(db, clock)
    room_id, link_a, link_b = _made(service)
    listed = _pxp("links", "list", room_id, "--db", str(db)).stdout
    assert "A seat      expires 2026-12-03T00:00:00.000Z" in listed
    assert link_a[-43:] not in listed  # never a secret
    out = _pxp("links", "revoke", room_id, "--db", str(db), "--seat", "B").stdout
    assert out.startswith("revoked 1 link(s)")  # B has only its invite before it joins
    with pytest.raises(pxp.PxpError) as caught:
        service.grant(link_b, ("seat", "invite"))
    assert (caught.value.code, caught.value.message) == ("link_revoked", LINK_REVOKED)
    assert service.grant(link_a, "seat").seat == "A"
    _pxp("links", "expire", room_id, "--db", str(db), "--kind", "seat", "--never")
    clock.now += timedelta(days=400)
    assert service.grant(link_a, "seat").seat == "A"
    _pxp("links", "expire", room_id, "--db", str(db), "--at", "2026-12-02T00:00:00Z")
    with pytest.raises(pxp.PxpError) as caught:
        service.grant(link_a, "seat")
    assert caught.value.code == "link_expired"
    bad = _pxp("links", "expire", room_id, "--db", str(db), "--at", "tomorrow", check=False)
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: time_invalid")
    unknown = _pxp("links", "list", "nosuchroom", "--db", str(db), check=False)
    assert unknown.returncode == 1
    assert "room_unknown" in unknown.stderr


def test_an_older_link_table_gains_expiry_and_revocation(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    with contextlib.closing(sqlite3.connect(db)) as old:
        old.execute(
            "CREATE TABLE pxp_server_links (room_id TEXT NOT NULL, seat TEXT NOT NULL,"
            " kind TEXT NOT NULL, digest TEXT NOT NULL, PRIMARY KEY (room_id, seat, kind))"
        )
        old.execute("INSERT INTO pxp_server_links VALUES ('r1', 'A', 'seat', ?)", ("0" * 64,))
        old.commit()
    store = SqliteLinkStore(db)
    (row,) = store.rows("r1")
    assert (row.expires_at, row.revoked) == (None, False)
    assert store.revoke("r1") == 1
    assert store.rows("r1")[0].revoked


def test_a_load_reads_snapshot_and_ledger_from_one_state(tmp_path: Path) -> None:
    """Defect: the snapshot and the ledger were read in two statements without a read
    transaction, so a write committed between them (by another process) made the load fail
    (1 in 386 loads under a concurrent writer). The writer here commits exactly between the
    two statements of the load, or waits for the load's read transaction to end."""
    db = tmp_path / "r.sqlite"
    start = datetime(2026, 12, 1, tzinfo=UTC)
    room = pxp.Room.open("r1", topic="t", now=start)
    reader, writer = SqliteRoomStore(db), SqliteRoomStore(db)
    reader.create(room)
    writer._db.execute("PRAGMA busy_timeout = 100")
    outcome: list[str] = []

    def between(statement: str) -> None:
        if statement.startswith("SELECT entry FROM pxp_ledger") and not outcome:
            later = writer.load("r1")
            later.join("A", agent="other process", now=start + timedelta(seconds=1))
            try:
                writer.save(later)
                outcome.append("committed")
            except sqlite3.OperationalError:
                outcome.append("waited")

    reader._db.set_trace_callback(between)
    loaded = reader.load("r1")
    reader._db.set_trace_callback(None)
    assert outcome
    assert loaded.head == room.head  # the state as it was when the load began
    assert len(reader.load("r1").ledger) == (2 if outcome == ["committed"] else 1)


@contextlib.contextmanager
def _serve(*args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    argv = [sys.executable, "-m", "pxp", "serve", "--port", str(port), *args]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if not listening(proc.pid, port):  # this child, not whoever took the port
                    raise httpx2.TransportError("not listening yet")
                httpx2.get(base + "/s/x/y", timeout=1)
                break
            except httpx2.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline
                time.sleep(0.1)
        yield base, proc
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


def test_pxp_serve_imports_reference_rooms_and_serves_them(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    rooms: dict[str, Any] = json.loads(REFERENCE_ROOMS.read_text(encoding="utf-8"))["rooms"]
    with _serve("--db", str(db), "--import", str(REFERENCE_ROOMS)) as (base, proc):
        # the links are printed once, before the server says where it listens
        lines: list[str] = []
        assert proc.stderr is not None
        while not any("/mcp" in line for line in lines):
            lines.append(proc.stderr.readline())
        text = "".join(lines)
        links = dict(re.findall(r"imported room (\w+)[^\n]*\n  A seat +(\S+)", text, flags=re.M))
        assert set(links) == set(rooms)
        pages = dict(re.findall(r"imported room (\w+)(?:[^\n]*\n){4}  B principal (\S+)", text))
        assert "fake-token" not in text

        async def go() -> None:
            async with mcp_client(base) as client:
                view = await call(client, "get_room", {"link": links["paused0001"]})
                assert view["status"] == "paused"
                assert view["pending_question"] == "May I go higher?"
                agreed = await call(client, "get_room", {"link": links["finalgap01"]})
                assert agreed["status"] == "agreed"
                brief = await call(client, "get_brief", {"link": links["finalgap01"]})
                assert brief["brief"]["agreement"]["terms"] == ["Fixture term"]
                # the export's own clear tokens open nothing here
                old = f"{base}/room/paused0001?seat=A&t=fake-token-a-paused0001"
                assert "link_unknown" in await refused(client, "get_room", {"link": old})
            async with httpx2.AsyncClient() as web:
                page = await web.get(pages["waiting001"])
                assert page.status_code == 200

        asyncio.run(go())
    # importing the same file again (a restart) mints no new links and serves the rooms
    before = SqliteLinkStore(db).rows("paused0001")
    service = RoomService(SqliteRoomStore(db), SqliteLinkStore(db))
    assert import_rooms(service, REFERENCE_ROOMS, "http://127.0.0.1:1") == []
    assert SqliteLinkStore(db).rows("paused0001") == before
