"""PXP MCP server under attack: each test is a defect found in review, kept as a regression.

A real uvicorn on 127.0.0.1 (ephemeral port), the MCP SDK's streamable-HTTP client as the
proxies, real form posts as the principals, rooms and links in SQLite.

Private imports: ``pxp._server_cli.server_config`` turns ``pxp serve``'s parsed argv into
the server's configuration, driven in process (the CLI's public contract is its argv; no
public cli module, by decision); ``pxp._mcp_server._HostGuard`` and
``pxp._server_web.origin_allowed`` are given Host and Origin values with Unicode digits
(``²``, Arabic-Indic digits) that an HTTP client will not put on the wire, so the checks
are called directly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from pxp import SqliteRoomStore
from pxp._server_cli import server_config
from pxp.rules import MAX_REJOINS_PER_SEAT
from pxp.server import (
    MAX_AGENTS_PER_SEAT,
    SIGN_IN_REFUSAL,
    RoomService,
    SeatGrant,
    ServerConfig,
    SqliteLinkStore,
    create_app,
)

from ._mcp_harness import call, free_socket, mcp_client, refused, running

pytestmark = pytest.mark.slow

_PAGE = r"http://127\.0\.0\.1:\d+/p/[0-9a-f]{16}/[A-Za-z0-9_-]{43}"
KEY = "k-" + "5" * 40
CARD_A = {"principal": {"name": "Ann"}, "goal": "Buy chairs", "must_haves": ["Delivery by June"]}
CARD_B = {
    "principal": {"name": "Bo"},
    "goal": "Sell chairs",
    "must_haves": ["3000 EUR, a SECRET floor"],
    "may_agree_to": ["SECRET we could go down to 2500 EUR"],
    "escalate_when": ["Price under 4600 EUR"],
}


class CountingService(RoomService):
    """A RoomService that counts (across threads) how often each seat's view is read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.views = {"A": 0, "B": 0}
        self._count = threading.Lock()

    def view(self, seat: SeatGrant) -> dict[str, Any]:
        data = super().view(seat)
        with self._count:
            self.views[seat.seat] += 1
        return data


@contextlib.contextmanager
def server(service: RoomService, **config: Any) -> Iterator[str]:
    sock = free_socket()
    cfg = ServerConfig(public_url=f"http://127.0.0.1:{sock.getsockname()[1]}", **config)
    with running(create_app(service, cfg), sock) as base:
        yield base


def sqlite(tmp_path: Path, cls: type[RoomService] = RoomService) -> RoomService:
    db = tmp_path / "rooms.sqlite"
    return cls(SqliteRoomStore(db), SqliteLinkStore(db))


def pages_in(result: Any) -> list[str]:
    texts = [c.text for c in result.content[1:]]
    return re.findall(_PAGE, " ".join(texts))


async def create(a: Client) -> dict[str, Any]:
    result = await a.call_tool(
        "create_room", {"topic": "Chairs", "your_principal": "Ann", "counterpart": "Bo"}
    )
    assert not result.is_error
    made: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    made["pages"] = pages_in(result)
    return made


async def join_b(b: Client, made: dict[str, Any], agent: str = "b") -> tuple[str, list[str]]:
    """Join seat B with the invite; return B's own seat link (the invite is spent) and the
    principal pages the join handed to B's human."""
    result = await b.call_tool(
        "join_room", {"link": made["invite_link_for_counterpart"], "agent_name": agent}
    )
    assert not result.is_error, result.content
    link: str = json.loads(result.content[0].text)["your_link"]  # type: ignore[union-attr]
    return link, pages_in(result)


# --- the counterpart's principal page never reaches the creator ---------------------------


def test_create_room_hands_the_creator_only_its_own_page(tmp_path: Path) -> None:
    """Defect: create_room gave seat A's side seat B's principal link, so A's side could seal
    B's card or answer B's escalations as B's principal ("via web")."""
    service = sqlite(tmp_path)
    question = "May I accept 4500 EUR?"

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b, httpx2.AsyncClient() as web:
            made = await create(a)
            assert len(made["pages"]) == 1
            page_a = made["pages"][0]
            assert "seat <b>A</b>" in (await web.get(page_a)).text
            room_id = made["room_id"]
            # Before B's agent joins, seat B has no principal link at all.
            stored = SqliteLinkStore(tmp_path / "rooms.sqlite").room_digests(room_id)
            assert sorted(stored) == [("A", "principal"), ("A", "seat"), ("B", "invite")]
            # A's own joins never mint anything.
            joined_a = await a.call_tool(
                "join_room", {"link": made["your_link"], "agent_name": "a"}
            )
            assert pages_in(joined_a) == []
            # B's first join mints B's page, addressed to B's human only, once.
            joined_b = await b.call_tool(
                "join_room", {"link": made["invite_link_for_counterpart"], "agent_name": "b"}
            )
            page_b = pages_in(joined_b)
            assert len(page_b) == 1
            assert joined_b.content[1].annotations.audience == ["user"]  # type: ignore[union-attr]
            assert "/p/" not in joined_b.content[0].text  # type: ignore[union-attr]
            link_b = json.loads(joined_b.content[0].text)["your_link"]  # type: ignore[union-attr]
            # Another agent name on the seat is refused (second review, finding 2): B's page
            # is never re-issued by a join and stays valid.
            taken = await refused(b, "join_room", {"link": link_b, "agent_name": "b2"})
            assert "seat_taken" in taken
            same = await b.call_tool("join_room", {"link": link_b, "agent_name": "b"})
            assert pages_in(same) == []
            assert "seat <b>B</b>" in (await web.get(page_b[0])).text
            # B escalates; A's page and A's seat link cannot answer for B.
            await call(a, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
            await call(b, "seal_intent_card", {"link": link_b, "card": CARD_B})
            await call(
                a,
                "send_envelope",
                {
                    "link": made["your_link"],
                    "message": "4500 EUR?",
                    "proposal": {"terms": ["Price 4500 EUR"]},
                    "status": "continue",
                },
            )
            paused = await call(
                b,
                "send_envelope",
                {
                    "link": link_b,
                    "message": "Checking.",
                    "status": "escalate",
                    "escalation": {"question": question},
                },
            )
            head = paused["room"]["ledger_head"]
            posted = await web.post(
                page_a + "/answer", data={"answer": "Yes, accept."}, headers={"Origin": base}
            )
            assert posted.status_code == 409
            text = await refused(
                a, "answer_escalation", {"link": made["your_link"], "answer": "Yes"}
            )
            assert "not_your_escalation" in text
            view = await call(b, "get_room", {"link": link_b})
            assert view["ledger_head"] == head
            assert view["status"] == "paused"
            # B's own principal answers from B's page, as a browser would post it.
            posted = await web.post(
                page_b[0] + "/answer",
                data={"answer": "Yes, accept."},
                headers={"Origin": base, "Sec-Fetch-Site": "same-origin"},
            )
            assert posted.status_code == 303
        export = service.export(room_id)
        answers = [e["data"] for e in export["ledger"] if e["type"] == "principal_answer"]
        assert [(x["seat"], x["via"]) for x in answers] == [("B", "web")]
        # The late-minted links are stored, so they survive a restart.
        assert len(SqliteLinkStore(tmp_path / "rooms.sqlite").room_digests(room_id)) == 5

    with server(service) as base:
        asyncio.run(go(base))


# --- the brief never quotes the other side's card -----------------------------------------


def test_seat_a_side_using_the_invite_is_named_in_the_brief_and_cannot_pass_as_b(
    tmp_path: Path,
) -> None:
    """Defect (issue 20, finding 6): A's client joined B's seat with the counterpart link,
    got B's principal page, sealed B's card "via web", and the real B agent never got a page.
    Now the brief names the agent and link that sealed B's card; the operator can still hand
    B's principal a new page (the stolen one stops working); and the real B presenting its
    invite contests the seat, so the room cannot reach an agreement in B's name
    (tests/pxp/test_pxp_seats.py holds the contest itself)."""
    service = sqlite(tmp_path)

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b, httpx2.AsyncClient() as web:
            made = await create(a)
            link_b, stolen = await join_b(a, made, "sneaky")
            assert len(stolen) == 1
            posted = await web.post(stolen[0] + "/card", data={"card": json.dumps(CARD_B)})
            assert posted.status_code == 303
            token = service.reissue_principal_link(made["room_id"], "B")
            mine = [f"{base}/p/{made['room_id']}/{token}"]
            assert mine != stolen
            assert (await web.get(stolen[0])).status_code == 404
            assert "seat <b>B</b>" in (await web.get(mine[0])).text
            await call(a, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
            offer = {"link": made["your_link"], "message": "Offer.", "status": "continue"}
            await call(a, "send_envelope", {**offer, "proposal": {"terms": ["4700 EUR"]}})
            await call(a, "send_envelope", {"link": link_b, "message": "Yes.", "status": "agree"})
            brief = await call(a, "get_brief", {"link": link_b})
            party = brief["brief"]["parties"]["B"]
            assert party["sealed_by"]["agent"] == "sneaky"
            assert party["sealed_by"]["link"] == "principal"
            assert party["principal_link"]["agent"] is None  # the operator's re-issue
            assert party["agents"] == ["sneaky"]
            issued = party["sealed_by"]["link_issued_at"]
            assert (
                f"sealed via web, through the principal link issued at ledger entry {issued} "
                "to agent sneaky" in brief["markdown"]
            )
            # the real B arrives late: refused, and the brief says the seat was contested
            taken = await refused(
                b,
                "join_room",
                {"link": made["invite_link_for_counterpart"], "agent_name": "bo-agent"},
            )
            assert "seat_contested" in taken
            later = await call(a, "get_brief", {"link": made["your_link"]})
            assert later["brief"]["parties"]["B"]["contests"][0]["holder"] == "sneaky"

    with server(service) as base:
        asyncio.run(go(base))


def test_brief_withholds_the_other_sides_clause_text(tmp_path: Path) -> None:
    """Defect: the brief quoted every clause of both cards that an agreed term matched; a
    term that is only punctuation matched every clause, so A read B's private card (such a
    term now matches nothing; a term one of B's clauses gives still shows only its ref)."""

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b, httpx2.AsyncClient() as web:
            made = await create(a)
            link_b, pages = await join_b(b, made)
            page_b = pages[0]
            await call(a, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
            await call(b, "seal_intent_card", {"link": link_b, "card": CARD_B})
            await call(
                a,
                "send_envelope",
                {
                    "link": made["your_link"],
                    "message": "Agree to this?",
                    "proposal": {"terms": ["3000 EUR"]},
                    "status": "continue",
                },
            )
            done = await call(
                b,
                "send_envelope",
                {
                    "link": link_b,
                    "message": "Fine.",
                    "status": "agree",
                },
            )
            assert done["room"]["status"] == "agreed"
            mine = await call(a, "get_brief", {"link": made["your_link"]})
            assert "SECRET" not in json.dumps(mine)
            refs = mine["brief"]["authority"][0]["B"]
            assert refs, "the references stay; only the text is withheld"
            assert {r["text"] for r in refs} == {"(private to seat B)"}
            assert "SECRET" not in (await web.get(made["pages"][0])).text
            # B's own brief and page still quote B's clauses.
            theirs = await call(b, "get_brief", {"link": link_b})
            assert "3000 EUR, a SECRET floor" in json.dumps(theirs["brief"])
            assert "3000 EUR, a SECRET floor" in theirs["markdown"]
            assert "3000 EUR, a SECRET floor" in (await web.get(page_b)).text
            assert mine["ledger_head"] == theirs["ledger_head"]

    with server(sqlite(tmp_path)) as base:
        asyncio.run(go(base))


# --- malformed arguments and sign-in order ------------------------------------------------


def test_malformed_arguments_get_one_clean_sentence(tmp_path: Path) -> None:
    """Defect: ill-typed arguments got pydantic's multi-line report, echoing the values sent
    (a link among them); ``timeout_seconds`` took ``true`` and ``"3"``."""

    async def go(base: str) -> None:
        async with mcp_client(base) as a:
            made = await create(a)
            link = made["your_link"]
            token = link.rsplit("/", 1)[-1]
            cases: list[tuple[str, dict[str, Any]]] = [
                ("get_room", {}),
                ("get_room", {"link": None}),
                ("get_room", {"link": 5}),
                ("get_room", {"link": [link]}),
                ("get_room", {"link": {"link": link}}),
                ("join_room", {"link": link, "agent_name": [link]}),
                ("wait_for_turn", {"link": link, "timeout_seconds": True}),
                ("wait_for_turn", {"link": link, "timeout_seconds": "3"}),
                ("wait_for_turn", {"link": link, "timeout_seconds": "NaN"}),
                ("wait_for_turn", {"link": link, "timeout_seconds": 0.5}),
                ("wait_for_turn", {"link": link, "timeout_seconds": 1e308}),
                ("wait_for_turn", {"link": link, "timeout_seconds": 10**400}),
                ("wait_for_turn", {"link": link, "timeout_seconds": -(10**400)}),
                ("wait_for_turn", {"link": link, "timeout_seconds": [5]}),
                ("seal_intent_card", {"link": link}),
                ("seal_intent_card", {"link": link, "card": "not json"}),
                ("seal_intent_card", {"link": link, "card": [link]}),
                ("seal_intent_card", {"link": link, "card": {"principal": link}}),
                ("seal_intent_card", {"link": link, "card": {**CARD_A, "goal": [link]}}),
                ("seal_intent_card", {"link": link, "card": {**CARD_A, "goal": ["x" * 9000]}}),
                ("send_envelope", {"link": link, "message": {"m": link}, "status": "continue"}),
                ("send_envelope", {"link": link, "message": "m", "status": ["agree"]}),
                ("send_envelope", {"link": link, "message": "m", "status": "x", "claims": "c"}),
                ("send_envelope", {"link": link, "message": "m", "status": "x", "claims": [1]}),
                ("send_envelope", {"link": link, "message": "m", "status": "x", "proposal": 1}),
                ("answer_escalation", {"link": link, "answer": [link]}),
                ("answer_escalation", {"link": link}),
                ("get_brief", {"link": link, "room_id": [link]}),
                ("get_brief", {"link": 7}),
                ("create_room", {"topic": [link], "your_principal": "a", "counterpart": "b"}),
                ("create_room", {"topic": "t", "your_principal": "a"}),
                ("create_room", {"topic": "t", "your_principal": "a", "counterpart": {}}),
            ]
            for tool, args in cases:
                text = await refused(a, tool, args)
                assert text.startswith(f"Error executing tool {tool}: "), (tool, args, text)
                assert "\n" not in text, (tool, args, text)
                assert token not in text, (tool, args)
                assert "pydantic" not in text
                assert "input_value" not in text
                assert len(text) < 600, (tool, args)
            # The call that counts still works: nothing above left a trace.
            view = await call(a, "get_room", {"link": link})
            assert view["transcript"] == []
            assert view["you"]["agent"] is None

    with server(sqlite(tmp_path)) as base:
        asyncio.run(go(base))


def test_sign_in_is_checked_before_the_arguments(tmp_path: Path) -> None:
    """Defect: with sign-in on, a create_room without a key but with an ill-typed argument
    got the argument report instead of the fixed sign-in sentence."""
    service = sqlite(tmp_path)

    async def go(base: str) -> None:
        async with mcp_client(base) as anonymous:
            for args in ({}, {"topic": 5}, {"topic": "t", "your_principal": [], "counterpart": 1}):
                text = await refused(anonymous, "create_room", args)
                assert text.endswith(SIGN_IN_REFUSAL), text
        async with mcp_client(base, headers={"Authorization": f"Bearer {KEY}"}) as signed:
            text = await refused(signed, "create_room", {"topic": 5})
            assert "argument_invalid" in text
            assert SIGN_IN_REFUSAL not in text
        assert SqliteRoomStore(tmp_path / "rooms.sqlite").room_ids() == []

    with server(service, agent_keys=(KEY,)) as base:
        asyncio.run(go(base))


# --- long-polls are bounded ---------------------------------------------------------------


def test_wait_for_turn_caps_the_waiting_calls(tmp_path: Path) -> None:
    """Defect: any number of wait_for_turn calls could wait at once, each re-reading and
    re-verifying its room from SQLite twice a second, and every write in any room woke
    every waiter of every room."""
    service = sqlite(tmp_path, CountingService)
    assert isinstance(service, CountingService)

    async def until_views(seat: str, n: int) -> None:
        for _ in range(2000):
            if service.views[seat] >= n:
                return
            await asyncio.sleep(0.005)
        raise AssertionError(f"seat {seat} was not viewed {n} times")

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b:
            made, other_room = await create(a), await create(b)
            link_a, link_b = made["your_link"], other_room["your_link"]
            # A sealed seat waiting for the other card has nothing to do: each call waits.
            await call(a, "seal_intent_card", {"link": link_a, "card": CARD_A})
            await call(b, "seal_intent_card", {"link": link_b, "card": CARD_A})
            service.views.update(A=0, B=0)
            # the three waiters must still be waiting while the next calls are made: 5 s
            # leaves a loaded machine room for them (2 s did not), and they time out then
            wait_a = {"link": link_a, "timeout_seconds": 5}
            first = [asyncio.create_task(call(a, "wait_for_turn", wait_a)) for _ in range(2)]
            await until_views("A", 2)
            # over a cap the call answers at once (second review, finding 8), never refuses
            busy = await call(a, "wait_for_turn", wait_a)
            assert busy["wait_busy"] is True
            assert busy["timed_out"] is True
            other = asyncio.create_task(
                call(b, "wait_for_turn", {"link": link_b, "timeout_seconds": 5})
            )
            await until_views("A", 4)  # the two waiters, the busy answer, the third waiter
            busy = await call(b, "wait_for_turn", {"link": link_b, "timeout_seconds": 2})
            assert busy["wait_busy"] is True  # the server-wide cap: an answer, not a refusal
            assert busy["status"] == "drafting"
            # An unknown link never takes a place.
            bogus = link_a[:-4] + ("AAAA" if not link_a.endswith("AAAA") else "BBBB")
            text = await refused(a, "wait_for_turn", {"link": bogus, "timeout_seconds": 2})
            assert "link_unknown" in text
            for result in await asyncio.gather(*first, other):
                assert result["timed_out"] is True
            # Places are given back when the calls return.
            again = await call(a, "wait_for_turn", {"link": link_a, "timeout_seconds": 1})
            assert again["timed_out"] is True

    with server(service, max_waiters_per_seat=2, max_waiters=3) as base:
        asyncio.run(go(base))


def test_waiter_limits_are_checked() -> None:
    from pxp.errors import PxpError

    for bad in ({"max_waiters": 0}, {"max_waiters_per_seat": 0}):
        with pytest.raises(PxpError, match="waiter limits"):
            ServerConfig(**bad)  # type: ignore[arg-type]
    for poll in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(PxpError, match="poll_seconds"):
            ServerConfig(poll_seconds=poll)


# --- the principal's page -----------------------------------------------------------------


def test_page_forms_refuse_bombs_without_a_server_error(tmp_path: Path) -> None:
    """Defect: a form with more than 8 fields, or a card nested past Python's recursion
    limit, raised inside the handler (HTTP 500 and a traceback in the log)."""

    async def go(base: str) -> None:
        async with mcp_client(base) as a, httpx2.AsyncClient() as web:
            page = (await create(a))["pages"][0]
            form = {"content-type": "application/x-www-form-urlencoded", "origin": base}
            many = "&".join(f"f{i}=x" for i in range(9)).encode()
            r = await web.post(page + "/card", content=many, headers=form)
            assert r.status_code == 400
            for body in ("card=" + "[" * 100_000, "card=" + '{"a":' * 40_000, "card=" + "9" * 5000):
                r = await web.post(page + "/card", content=body.encode(), headers=form)
                assert r.status_code == 409
                assert "not valid JSON" in r.text
            # The page still works and nothing was sealed.
            r = await web.get(page)
            assert r.status_code == 200
            assert "No card yet" in r.text

    with server(sqlite(tmp_path)) as base:
        asyncio.run(go(base))


def test_serve_accepts_the_public_host_behind_a_proxy() -> None:
    """Defect: with --public-url and no --allowed-host, every request through the public
    name was refused (421) while the origin of the same URL was allowed."""
    args = argparse.Namespace(
        host="127.0.0.1",
        port=8765,
        public_url="https://rooms.example.org",
        allowed_host=[],
        allowed_origin=[],
        agent_keys_file=None,
    )
    config = server_config(args)
    assert "rooms.example.org" in config.allowed_hosts
    assert "https://rooms.example.org" in config.allowed_origins
    explicit = server_config(argparse.Namespace(**{**vars(args), "allowed_host": ["x.test"]}))
    assert explicit.allowed_hosts == ("x.test",)

    async def go(base: str) -> None:
        async with httpx2.AsyncClient() as web:
            r = await web.get(base + "/s/0/0", headers={"host": "rooms.example.org"})
            assert r.status_code == 200
            r = await web.get(base + "/s/0/0", headers={"host": "rooms.example.org.evil.test"})
            assert r.status_code == 421

    # Embedded with create_app: the public name of public_url is allowed without listing it.
    sock = free_socket()
    cfg = ServerConfig(public_url="https://rooms.example.org")
    with running(create_app(RoomService(), cfg), sock) as base:
        asyncio.run(go(base))


def test_a_seat_cannot_grow_the_ledger_by_renaming_its_agent(tmp_path: Path) -> None:
    """Defect: every join_room with a new agent name appended a ledger entry, without limit,
    and every request re-reads and re-verifies the whole ledger."""

    service = sqlite(tmp_path)

    async def go(base: str) -> None:
        async with mcp_client(base) as a:
            made = await create(a)
            link = made["your_link"]
            await call(a, "join_room", {"link": link, "agent_name": "agent-0"})
            for i in range(1, MAX_AGENTS_PER_SEAT + 1):
                text = await refused(a, "join_room", {"link": link, "agent_name": f"agent-{i}"})
                assert "seat_taken" in text
            # every such join is recorded (review 3, finding 1), at most MAX_REJOINS_PER_SEAT
            ledger = service.export(made["room_id"])["ledger"]
            rejoins = [e for e in ledger if e["type"] == "seat_rejoined"]
            assert len(rejoins) == MAX_REJOINS_PER_SEAT
            last = "agent-0"
            same = await call(a, "join_room", {"link": link, "agent_name": last})
            assert same["ledger_head"] == ledger[-1]["hash"]
            assert same["you"]["agent"] == last

    with server(service) as base:
        asyncio.run(go(base))


class _BrokenProxy:
    """A plugged-in built-in proxy that crashes (a language model timing out, say)."""

    name = "broken built-in"

    def next_envelope(self, view: Any) -> dict[str, Any]:
        raise RuntimeError("model endpoint unreachable")


def test_a_crashing_builtin_proxy_does_not_fail_the_callers_saved_action(
    tmp_path: Path,
) -> None:
    """Defect: when the plugged-in proxy raised anything but PxpError, the external seat's
    send_envelope failed with an opaque error although its envelope was already stored."""

    def builtin(topic: str, counterpart: str) -> tuple[dict[str, Any], Any]:
        return {**CARD_B, "principal": {"name": counterpart}}, _BrokenProxy()

    db = tmp_path / "rooms.sqlite"
    service = RoomService(SqliteRoomStore(db), SqliteLinkStore(db), builtin=builtin)

    async def go(base: str) -> None:
        async with mcp_client(base) as a:
            made = await call(
                a,
                "create_room",
                {
                    "topic": "Chairs",
                    "your_principal": "Ann",
                    "counterpart": "Chairs Inc",
                    "counterpart_proxy": "builtin",
                },
            )
            await call(a, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
            sent = await call(
                a,
                "send_envelope",
                {"link": made["your_link"], "message": "Offer: 4500 EUR.", "status": "continue"},
            )
            assert sent["accepted_envelope"]["seq"] == 1
            assert sent["room"]["your_turn"] is False
            assert sent["room"]["next_action"] == "The other side's turn. Call wait_for_turn."

    with server(service) as base:
        asyncio.run(go(base))


def test_one_card_or_envelope_cannot_bloat_the_room(tmp_path: Path) -> None:
    """Defect: a card or an envelope could fill the whole 256 KiB request body, and every
    later request (and every waiting long-poll) re-reads and re-verifies the whole room."""

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b, httpx2.AsyncClient() as web:
            made = await create(a)
            link = made["your_link"]
            huge = {**CARD_A, "known_facts": ["x" * 1000] * 40}
            text = await refused(a, "seal_intent_card", {"link": link, "card": huge})
            assert "larger than" in text
            form = {"card": json.dumps(huge)}
            posted = await web.post(made["pages"][0] + "/card", data=form, headers={"Origin": base})
            assert posted.status_code == 409
            assert "larger than" in posted.text
            await call(a, "seal_intent_card", {"link": link, "card": CARD_A})
            link_b, _ = await join_b(b, made)
            await call(b, "seal_intent_card", {"link": link_b, "card": CARD_B})
            before = await call(a, "get_room", {"link": link})
            long = {"link": link, "message": "é" * 20_000, "status": "continue"}
            text = await refused(a, "send_envelope", long)
            assert "larger than" in text
            reviews = [{"claim_id": f"B{i}.1", "verdict": "accept"} for i in range(2000)]
            text = await refused(
                a,
                "send_envelope",
                {"link": link, "message": "m", "status": "continue", "reviews": reviews},
            )
            assert "larger than" in text
            after = await call(a, "get_room", {"link": link})
            assert after["ledger_head"] == before["ledger_head"]
            sent = await call(a, "send_envelope", {**long, "message": "é" * 2000})
            assert sent["accepted_envelope"]["seq"] == 1

    with server(sqlite(tmp_path)) as base:
        asyncio.run(go(base))


def test_pages_escape_every_field_the_other_side_or_a_card_wrote(tmp_path: Path) -> None:
    """Every text on the page that came from a proxy, a card or the other side: topic, names,
    agents, drafts in a textarea, messages, claims, terms, questions, reasons, answers and
    the brief. Nothing may open a tag."""
    evil = "</textarea></pre><script>alert(1)</script><img src=x onerror=alert(1)>\"'&"
    db = tmp_path / "rooms.sqlite"
    service = RoomService(SqliteRoomStore(db), SqliteLinkStore(db), confirm_on_web=True)

    def clean(page: str) -> None:
        for tag in ("<script", "<img", "</textarea></pre>"):
            assert tag not in page

    card = {
        "principal": {"name": evil, "role": evil, "org": evil},
        "goal": evil,
        "must_haves": [evil],
        "may_agree_to": [evil],
        "must_never": ["Pay in advance"],
        "escalate_when": ["Price under 4600 EUR"],
        "known_facts": [evil],
    }

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b, httpx2.AsyncClient() as web:
            result = await a.call_tool(
                "create_room", {"topic": evil, "your_principal": evil, "counterpart": evil}
            )
            made = json.loads(result.content[0].text)  # type: ignore[union-attr]
            page_a = pages_in(result)[0]
            link_a = made["your_link"]
            await call(a, "join_room", {"link": link_a, "agent_name": evil})
            link_b, pages = await join_b(b, made, evil)
            page_b = pages[0]
            origin = {"Origin": base}
            for link, page in ((link_a, page_a), (link_b, page_b)):
                proxy = a if link == link_a else b
                drafted = await call(proxy, "seal_intent_card", {"link": link, "card": card})
                assert drafted["you"]["card_sealed"] is False
                shown = await web.get(page)
                clean(shown.text)
                assert html.escape(json.dumps(card["goal"])[1:-1]) in shown.text
                posted = await web.post(
                    page + "/card", data={"card": json.dumps(drafted["your_draft"])}, headers=origin
                )
                assert posted.status_code == 303, posted.text
            await call(
                a,
                "send_envelope",
                {
                    "link": link_a,
                    "message": evil,
                    "claims": [{"text": evil, "origin": "assumed"}],
                    "proposal": {"terms": [evil], "depends_on": ["new1"]},
                    "status": "continue",
                },
            )
            await call(
                b,
                "send_envelope",
                {
                    "link": link_b,
                    "message": evil,
                    "reviews": [{"claim_id": "A1.1", "verdict": "accept", "reason": evil}],
                    "status": "escalate",
                    "escalation": {"question": evil, "reason": evil},
                },
            )
            for page in (page_a, page_b):
                clean((await web.get(page)).text)
            assert html.escape(evil) in (await web.get(page_b)).text
            posted = await web.post(page_b + "/answer", data={"answer": evil}, headers=origin)
            assert posted.status_code == 303
            done = await call(
                b, "send_envelope", {"link": link_b, "message": evil, "status": "agree"}
            )
            assert done["room"]["status"] == "agreed", done
            for page in (page_a, page_b):
                text = (await web.get(page)).text
                assert "Decision brief" in text
                clean(text)

    with server(service) as base:
        asyncio.run(go(base))


def test_no_idle_sse_stream_can_be_held_open(tmp_path: Path) -> None:
    """Defect: GET /mcp opened a standalone SSE stream that, in stateless mode, never carries
    anything and never ends: anyone could hold any number of connections open."""

    async def go(base: str) -> None:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30)) as http:
            for headers in (
                {"Accept": "text/event-stream"},
                {"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-06-18"},
            ):
                r = await http.get(base + "/mcp", headers=headers)
                assert r.status_code == 405
                assert r.headers["allow"] == "POST"
            r = await http.get(base + "/mcp", headers={"Host": "evil.example"})
            assert r.status_code == 421  # the Host check still comes first
        # The SDK client, in both protocol modes, works without the stream.
        for mode in ("auto", "legacy"):
            async with mcp_client(base, mode=mode) as a:
                made = await create(a)
                view = await call(a, "get_room", {"link": made["your_link"]})
                assert view["you"]["seat"] == "A"

    with server(sqlite(tmp_path)) as base:
        asyncio.run(go(base))


def test_wildcard_ports_are_ascii_digits_only() -> None:
    """Hardening: str.isdigit() also accepts "²" and other Unicode digits as a port."""
    from pxp._mcp_server import _HostGuard
    from pxp._server_web import origin_allowed

    allowed = ("http://127.0.0.1:*",)
    assert origin_allowed("http://127.0.0.1:8765", allowed)
    assert not origin_allowed("http://127.0.0.1:\u00b2", allowed)
    assert not origin_allowed("http://127.0.0.1:\u0661\u0662", allowed)
    guard = _HostGuard(RoomService, ("127.0.0.1:*",))  # type: ignore[arg-type]
    assert guard._ok("127.0.0.1:8765")
    assert not guard._ok("127.0.0.1:\u00b2")
    assert not guard._ok("127.0.0.1:")
