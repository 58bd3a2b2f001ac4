"""Spec §11: every code :mod:`pxp` raises is in its table (``pxp.errors.CODES``), every code
in the table is raised (by a vector or here, through the public API), and the table decides
the class: usage for the caller's mistakes, protocol for a peer's data."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import pxp
from pxp.errors import CODES, LedgerError, PxpError, PxpProtocolError, PxpUsageError
from pxp.ledger import Ledger, load_ledger
from pxp.server import (
    MemoryLinkStore,
    RoomService,
    ServerConfig,
    SqliteLinkStore,
    check_link,
    service_for_url,
)
from tests.codecheck import literal_codes, raises_code, vector_codes

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 1, 1, tzinfo=UTC)
CARD_A = {"principal": {"name": "Ana"}, "goal": "Sell the van", "must_haves": ["5000 EUR"]}
CARD_B = {"principal": {"name": "Bo"}, "goal": "Buy a van", "must_haves": ["Before June"]}


def _ticks() -> Callable[[], datetime]:
    t = [NOW]

    def now() -> datetime:
        t[0] += timedelta(seconds=1)
        return t[0]

    return now


def _active_a() -> pxp.Room:
    room = pxp.Room.open("r1", topic="Van", now=NOW)
    room.seal("A", CARD_A, now=NOW)
    return room


def _active() -> pxp.Room:
    room = pxp.Room.open("r1", topic="Van", now=NOW)
    room.seal("A", CARD_A, now=NOW)
    room.seal("B", CARD_B, now=NOW)
    return room


def _paused() -> pxp.Room:
    room = _active()
    room.send(
        "A", {"message": "m", "status": "escalate", "escalation": {"question": "Q?"}}, now=NOW
    )
    return room


def _cli(*args: str, pre: str = "") -> str:
    """Run ``python -m pxp`` (after ``pre``) and return its stderr."""
    code = f"{pre}\nimport sys, runpy\nsys.argv = ['pxp', *{list(args)!r}]\n"
    code += "runpy.run_module('pxp', run_name='__main__')"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0
    return done.stderr


# code -> (error class, a call through the public API that raises it)
TRIGGERS: dict[str, tuple[type[PxpError], Callable[[], object]]] = {
    "time_invalid": (
        PxpUsageError,
        lambda: pxp.Room.open("r", topic="t", now=datetime(2026, 1, 1)),
    ),
    "via_invalid": (
        PxpUsageError,
        lambda: pxp.Room.open("r", topic="t", now=NOW).seal("A", CARD_A, now=NOW, via="fax"),
    ),
    "mode_invalid": (
        PxpUsageError,
        lambda: pxp.Room.open("r", topic="t", now=NOW).join("A", agent="x", now=NOW, mode="root"),
    ),
    "room_invalid": (PxpUsageError, lambda: pxp.Room.open("bad id!", topic="t", now=NOW)),
    "head_invalid": (PxpUsageError, lambda: pxp.verify_ledger([], head="HEAD")),
    "ledger_append": (PxpUsageError, lambda: Ledger().append("", "t", {})),
    "config_invalid": (PxpUsageError, lambda: ServerConfig(public_url="ftp://x")),
    "random_invalid": (
        PxpUsageError,
        lambda: RoomService(random_bytes=lambda n: b"").create_room(
            topic="t", your_principal="a", counterpart="b", counterpart_proxy="external"
        ),
    ),
    "schema_unknown": (PxpUsageError, lambda: pxp.load_schema("nope.schema.json")),
    "script_exhausted": (
        PxpUsageError,
        lambda: pxp.ScriptedProxy([]).next_envelope(_active().view("A")),
    ),
    "room_not_active": (
        PxpUsageError,
        lambda: pxp.run_room(pxp.Room.open("r", topic="t", now=NOW), {}, {}, clock=_ticks()),
    ),
    "room_runaway": (
        PxpUsageError,
        lambda: pxp.run_room(
            _active(),
            {s: pxp.ScriptedProxy([{"message": "m", "status": "continue"}] * 20) for s in "AB"},
            {},
            clock=_ticks(),
            max_steps=1,
        ),
    ),
    "canonical_invalid": (PxpProtocolError, lambda: pxp.wire.canonical({"x": float("nan")})),
    "card_invalid": (PxpProtocolError, lambda: pxp.seal_card({"goal": "x"})),
    "envelope_invalid": (PxpProtocolError, lambda: pxp.validate_envelope(7)),
    "proposal_invalid": (PxpProtocolError, lambda: pxp.proposal_hash("terms")),
    "answer_invalid": (PxpProtocolError, lambda: _paused().answer("A", " ", now=NOW)),
    "agent_invalid": (
        PxpProtocolError,
        lambda: pxp.Room.open("r", topic="t", now=NOW).join("A", agent=7, now=NOW),
    ),  # type: ignore[arg-type]
    "seat_invalid": (
        PxpProtocolError,
        lambda: pxp.Room.open("r", topic="t", now=NOW).seal(None, CARD_A, now=NOW),
    ),  # type: ignore[arg-type]
    "argument_invalid": (
        PxpProtocolError,
        lambda: RoomService().create_room(
            topic="t", your_principal="a", counterpart="b", counterpart_proxy="robot"
        ),
    ),
    "ledger_json": (PxpProtocolError, lambda: load_ledger("{not json")),
    "invalid_transition": (
        PxpProtocolError,
        lambda: pxp.Room.open("r", topic="t", now=NOW).send("A", {}, now=NOW),
    ),
    "not_your_turn": (
        PxpProtocolError,
        lambda: _active().send("B", {"message": "m", "status": "continue"}, now=NOW),
    ),
    "not_your_escalation": (PxpProtocolError, lambda: _paused().answer("B", "yes", now=NOW)),
    "card_sealed": (PxpProtocolError, lambda: _active_a().seal("A", CARD_A, now=NOW)),
    "card_missing": (
        PxpProtocolError,
        lambda: pxp.Room.open("r", topic="t", now=NOW).seal("A", now=NOW),
    ),
    "envelope_rejected": (
        PxpProtocolError,
        lambda: _active().send(
            "A",
            {
                "message": "m",
                "status": "continue",
                "reviews": [{"claim_id": "B1.1", "verdict": "accept"}],
            },
            now=NOW,
        ),
    ),
    "import_invalid": (PxpProtocolError, lambda: pxp.load_room("[]")),
    "brief_invalid": (PxpProtocolError, lambda: pxp.brief_markdown({})),
    "room_unknown": (PxpProtocolError, lambda: pxp.MemoryRoomStore().load("nope")),
    "link_unknown": (
        PxpProtocolError,
        lambda: check_link(MemoryLinkStore(), "http://x/room/r?seat=A&t=zz", "seat"),
    ),
    "builtin_unavailable": (
        PxpProtocolError,
        lambda: RoomService().create_room(
            topic="t", your_principal="a", counterpart="b", counterpart_proxy="builtin"
        ),
    ),
}


def test_every_literal_code_at_a_raise_site_is_in_the_table() -> None:
    found = literal_codes("pxp", {"PxpError", "PxpUsageError", "PxpProtocolError"})
    missing = {code: where for code, where in found.items() if code not in CODES}
    assert not missing, missing


@pytest.mark.parametrize("code", sorted(TRIGGERS))
def test_the_public_api_raises_the_code_with_the_class_its_kind_names(code: str) -> None:
    error, call = TRIGGERS[code]
    assert CODES[code].kind == error.kind
    raises_code(call, error, code)


def test_every_code_in_the_table_is_raised_by_a_vector_or_a_test_here() -> None:
    here = set(TRIGGERS) | set(SERVED) | set(CLI) | set(MCP) | {"ledger_invalid"}  # LedgerError
    assert set(CODES) - vector_codes("pxp") - here == set()


# codes the served rooms raise (pxp.server, through RoomService and its link check)
def _served(code: str, tmp: Path) -> None:
    service = RoomService(clock=_ticks())
    made = service.create_room(
        topic="Van", your_principal="Ana", counterpart="Bo", counterpart_proxy="external"
    )
    invite = service.grant(made.link("http://x", "B", "invite"), ("seat", "invite"))
    joined = service.join(invite, "bo-agent")
    if code == "seat_contested":
        service.join(invite, "another-agent")
    elif code == "invite_link":
        service.grant(made.link("http://x", "B", "invite"), "seat")
    elif code == "seat_taken":
        assert joined.seat_token is not None
        seat = service.grant(f"http://x/room/{made.room_id}?seat=B&t={joined.seat_token}", "seat")
        service.join(seat, "other-agent")
    elif code == "agent_limit":
        page = service.grant(made.link("http://x", "A", "principal"), "principal")
        link = made.link("http://x", "A", "seat")
        for i in range(100):
            service.join(service.grant(link, ("seat", "invite")), f"agent-{i}")
            link = f"http://x/room/{made.room_id}?seat=A&t={service.release(page)}"
    elif code == "link_revoked":
        links = SqliteLinkStore(tmp / "l.sqlite")
        service = RoomService(links=links, clock=_ticks())
        made = service.create_room(
            topic="Van", your_principal="Ana", counterpart="Bo", counterpart_proxy="external"
        )
        links.revoke(made.room_id)
        service.grant(made.link("http://x", "A", "seat"), "seat")
    elif code == "link_expired":
        service = RoomService(clock=_ticks(), link_ttl=timedelta(seconds=1))
        made = service.create_room(
            topic="Van", your_principal="Ana", counterpart="Bo", counterpart_proxy="external"
        )
        for _ in range(3):
            service.view(service.grant(made.link("http://x", "A", "seat"), "seat"))
    elif code == "room_exists":
        links = MemoryLinkStore()
        links.add_room("r1", {})
        links.add_room("r1", {})
    elif code == "store_conflict":
        store = pxp.MemoryRoomStore()
        store.create(pxp.Room.open("r1", topic="t", now=NOW))
        first, second = store.load("r1"), store.load("r1")
        first.join("A", agent="x", now=NOW)
        second.join("A", agent="y", now=NOW)
        store.save(first)
        store.save(second)
    elif code == "store_corrupt":
        (tmp / "bad.sqlite").write_bytes(b"not a database" * 100)
        pxp.SqliteRoomStore(tmp / "bad.sqlite")
    elif code == "store_unavailable":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        service_for_url(f"postgresql://nobody@127.0.0.1:{port}/none?connect_timeout=2")


SERVED = {
    "seat_contested": PxpProtocolError,
    "invite_link": PxpProtocolError,
    "seat_taken": PxpProtocolError,
    "agent_limit": PxpProtocolError,
    "link_revoked": PxpProtocolError,
    "link_expired": PxpProtocolError,
    "room_exists": PxpUsageError,
    "store_conflict": PxpProtocolError,
    "store_corrupt": PxpUsageError,
    "store_unavailable": PxpUsageError,
}


@pytest.mark.parametrize("code", sorted(SERVED))
def test_the_server_and_stores_raise_their_codes(code: str, tmp_path: Path) -> None:
    raises_code(lambda: _served(code, tmp_path), SERVED[code], code)


CLI = ("file_unreadable", "json_invalid", "listen_failed", "extra_missing", "schemas_missing")


def test_the_command_line_and_a_broken_install_raise_their_codes(tmp_path: Path) -> None:
    assert "file_unreadable" in _cli("brief", str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    assert "json_invalid" in _cli("brief", str(tmp_path / "bad.json"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        assert "listen_failed" in _cli("serve", "--port", port, "--db", str(tmp_path / "x"))
    # the MCP SDK cannot be imported: the server needs its extra
    blocked = "import sys; sys.modules['mcp'] = None; sys.modules['uvicorn'] = None"
    assert "extra_missing" in _cli("serve", "--port", "0", "--db", str(tmp_path / "y"), pre=blocked)
    # a copy of the package with no schemas beside it, installed nowhere
    shutil.copytree(ROOT / "src" / "pxp", tmp_path / "lib" / "pxp")
    shutil.rmtree(tmp_path / "lib" / "pxp" / "_schemas", ignore_errors=True)
    code = f"import sys; sys.path.insert(0, {str(tmp_path / 'lib')!r}); import pxp\n"
    code += "print(pxp.__file__); pxp.load_schema('brief.schema.json')"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert "schemas_missing" in done.stderr, done.stderr
    for name in CLI:
        assert CODES[name].kind == "usage"


def test_a_ledger_error_is_a_protocol_error_with_an_index() -> None:
    entries = pxp.simulate().export()["ledger"]
    entries[2]["data"] = {"changed": True}
    with pytest.raises(LedgerError) as caught:
        pxp.verify_ledger(entries)
    assert isinstance(caught.value, PxpProtocolError)
    assert (caught.value.code, caught.value.reason, caught.value.index) == (
        "ledger_invalid",
        "hash_mismatch",
        2,
    )


@pytest.mark.parametrize("junk", [7, None, 1.5, b"bytes", ["list"]])
def test_protocol_data_of_any_python_type_is_a_protocol_error(junk: Any) -> None:
    """The kind rule: an argument that carries protocol data raises the protocol error when
    malformed, whatever its Python type."""
    for call in (
        lambda: pxp.seal_card(junk),
        lambda: pxp.validate_envelope(junk),
        lambda: pxp.validate_draft(junk),
        lambda: pxp.verify_ledger(junk),
        lambda: pxp.load_room(junk),
        lambda: _active().send("A", junk, now=NOW),
        lambda: pxp.Room.from_export({"id": junk, "ledger": [], "seats": {}, "envelopes": []}),
    ):
        with pytest.raises(PxpProtocolError):
            call()


@pytest.mark.parametrize(
    "call",
    [
        lambda now: pxp.Room.open("r", topic="t", now=now),
        lambda now: _active().send("A", {"message": "m", "status": "continue"}, now=now),
        lambda now: _paused().answer("A", "yes", now=now),
        lambda now: pxp.Room.open("r", topic="t", now=NOW).join("A", agent="x", now=now),
        lambda now: pxp.Room.open("r", topic="t", now=NOW).seal("A", CARD_A, now=now),
        lambda now: pxp.wire.format_time(now),
        lambda now: check_link(MemoryLinkStore(), "http://x/room/r?seat=A&t=zz", "seat", now=now),
    ],
)
def test_a_naive_now_is_a_usage_error(call: Callable[[datetime], object]) -> None:
    raises_code(lambda: call(datetime(2026, 1, 1, 12)), PxpUsageError, "time_invalid")


def test_checks_return_the_verified_value() -> None:
    """The verification convention: a pass/fail check returns what it verified or raises
    the protocol error; pxp has no report object that could be read as success."""
    room = pxp.simulate()
    export = room.export()
    assert pxp.verify_ledger(export["ledger"], head=room.head) == room.head
    assert pxp.load_room(json.dumps(export)).head == room.head
    envelope = room.envelopes[0]
    assert pxp.validate_envelope(envelope) == envelope
    sealed = pxp.seal_card(CARD_A)
    assert sealed.hash == pxp.card_hash(sealed.card)


# codes only the MCP tools raise, over a real server on loopback
MCP = ("link_required", "wait_invalid", "wait_limit")


def test_the_mcp_tools_raise_their_codes() -> None:
    import asyncio

    pytest.importorskip("mcp", reason="the MCP server needs principal-protocols[mcp]")
    pytest.importorskip("uvicorn", reason="the MCP server needs principal-protocols[http]")
    from pxp.server import ServerConfig, create_app

    from ._mcp_harness import free_socket, mcp_client, refused, running

    key = "agent-key-" + "7" * 20
    sock = free_socket()
    config = ServerConfig(
        public_url=f"http://127.0.0.1:{sock.getsockname()[1]}",
        agent_keys=(key,),
        max_waiters_per_client=1,
    )
    headers = {"Authorization": f"Bearer {key}"}

    async def go(base: str) -> None:
        async with mcp_client(base, headers=headers) as a, mcp_client(base, headers=headers) as b:
            created = await a.call_tool(
                "create_room", {"topic": "t", "your_principal": "A", "counterpart": "B"}
            )
            link = json.loads(created.content[0].text)["your_link"]  # type: ignore[union-attr]
            assert "link_required:" in await refused(a, "get_brief", {})
            waits = {"link": link, "timeout_seconds": 0}
            assert "wait_invalid:" in await refused(a, "wait_for_turn", waits)
            # with seat A's card sealed it is the other side's move: a wait holds its place
            await a.call_tool("seal_intent_card", {"link": link, "card": CARD_A})
            held = asyncio.create_task(
                a.call_tool("wait_for_turn", {"link": link, "timeout_seconds": 3})
            )
            await asyncio.sleep(0.5)
            waits = {"link": link, "timeout_seconds": 3}
            assert "wait_limit:" in await refused(b, "wait_for_turn", waits)
            await held

    with running(create_app(RoomService(), config), sock) as base:
        asyncio.run(go(base))
