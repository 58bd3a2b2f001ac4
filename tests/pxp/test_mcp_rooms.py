"""PXP over MCP, end to end: two external proxies (the SDK's streamable-HTTP client) negotiate
through a real uvicorn on 127.0.0.1, with rooms in SQLite; principals use the web page.

Covers the issue's "done when": one room agrees; one escalates, is answered through the web
page by a real form post and then agrees; the brief fetched over MCP verifies against the
ledger; bad input of every kind named there; and a server restart in the middle of a room.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import logging
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from pxp import RoomView, ScriptedProxy, SqliteRoomStore, verify_ledger
from pxp.server import (
    UNKNOWN_LINK,
    RoomService,
    SeatGrant,
    ServerConfig,
    SqliteLinkStore,
    create_app,
)

from ._mcp_harness import call, free_socket, mcp_client, refused, running

pytestmark = pytest.mark.slow

CARD_A = {
    "principal": {"name": "Ann Lee", "role": "buyer", "org": "Lee Studio"},
    "goal": "Buy 200 chairs for the new office",
    "must_haves": ["Delivery by June"],
    "may_agree_to": ["Price up to 4800 EUR"],
    "must_never": ["Pay in advance"],
    "escalate_when": ["Price above 4800 EUR"],
    "known_facts": ["Budget is 5000 EUR"],
}
CARD_B = {
    "principal": {"name": "Bo Chen", "role": "seller"},
    "goal": "Sell 200 chairs",
    "must_haves": ["Price at least 4000 EUR"],
    "escalate_when": ["Price under 4600 EUR"],
}
OFFER = {
    "message": "We offer 4500 EUR for 200 chairs delivered by June.",
    "claims": [{"text": "Budget is 5000 EUR", "origin": "stated", "ref": "known_facts[0]"}],
    "proposal": {"terms": ["Price 4500 EUR", "Delivery by June"], "depends_on": ["new1"]},
    "status": "continue",
}


class WatchedService(RoomService):
    """A RoomService that signals (across threads) when a seat's view is read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.viewed = {"A": threading.Event(), "B": threading.Event()}

    def view(self, seat: SeatGrant) -> dict[str, Any]:
        data = super().view(seat)
        self.viewed[seat.seat].set()
        return data


@contextlib.contextmanager
def server(
    db: Path, port: int = 0, service: RoomService | None = None, **config: Any
) -> Iterator[str]:
    sock = free_socket(port)
    bound = sock.getsockname()[1]
    if service is None:
        service = RoomService(SqliteRoomStore(db), SqliteLinkStore(db))
    cfg = ServerConfig(public_url=f"http://127.0.0.1:{bound}", **config)
    with running(create_app(service, cfg), sock) as base:
        yield base


_PAGE = r"http://127\.0\.0\.1:\d+/p/[0-9a-f]{16}/[A-Za-z0-9_-]{43}"


async def open_room(a: Client, b: Client) -> dict[str, Any]:
    """Create a room as A, join both seats, seal both cards; return links and principal links."""
    result = await a.call_tool(
        "create_room",
        {"topic": "Office chairs", "your_principal": "Ann Lee", "counterpart": "Bo Chen"},
    )
    assert not result.is_error
    made = json.loads(result.content[0].text)  # type: ignore[union-attr]
    # The principal links travel only in content addressed to the human (audience "user").
    for_model = result.content[0]
    for_user = result.content[1]
    assert for_model.annotations is None
    assert for_user.annotations is not None
    assert for_user.annotations.audience == ["user"]
    pages = re.findall(_PAGE, for_user.text)  # type: ignore[union-attr]
    # Only seat A's own page: whatever create_room returns reaches seat A's side, and seat
    # B's page would let A's side seal B's card or answer B's escalations "as the web".
    assert len(pages) == 1
    assert "/p/" not in json.dumps(made)
    joined_a = await a.call_tool(
        "join_room", {"link": made["your_link"], "agent_name": "claude-desktop (Ann)"}
    )
    joined = json.loads(joined_a.content[0].text)  # type: ignore[union-attr]
    assert joined["you"]["seat"] == "A"
    assert joined["status"] == "drafting"
    assert re.findall(_PAGE, joined_a.content[1].text) == []  # type: ignore[union-attr]
    # B's page link is minted when B's agent first joins, for B's human only, and once.
    joined_b = await b.call_tool(
        "join_room", {"link": made["invite_link_for_counterpart"], "agent_name": "bo-assistant"}
    )
    assert not joined_b.is_error
    assert joined_b.content[1].annotations.audience == ["user"]  # type: ignore[union-attr]
    pages_b = re.findall(_PAGE, joined_b.content[1].text)  # type: ignore[union-attr]
    assert len(pages_b) == 1
    assert "/p/" not in joined_b.content[0].text  # type: ignore[union-attr]
    # the invite is spent for B's own seat link (ours), B's credential from now on
    own_b = json.loads(joined_b.content[0].text)["your_link"]  # type: ignore[union-attr]
    assert own_b != made["invite_link_for_counterpart"]
    links = {
        "a": made["your_link"],
        "b": own_b,
        "page_a": pages[0],
        "page_b": pages_b[0],
    }
    again_b = await b.call_tool("join_room", {"link": links["b"], "agent_name": "bo-assistant"})
    again = json.loads(again_b.content[0].text)  # type: ignore[union-attr]
    assert again["you"]["seat"] == "B"  # idempotent
    assert re.findall(_PAGE, again_b.content[1].text) == []  # type: ignore[union-attr]
    await call(a, "seal_intent_card", {"link": links["a"], "card": CARD_A})
    view = await call(b, "seal_intent_card", {"link": links["b"], "card": CARD_B})
    assert view["status"] == "negotiating"
    assert view["your_turn"] is False
    # The other side sees name and card hash only, never the card body.
    assert view["counterpart"]["principal"] == "Ann Lee"
    assert "card" not in view["counterpart"]
    assert "Budget is 5000 EUR" not in json.dumps(view)
    return links


def _no_secrets(data: object, *secrets: str) -> None:
    text = json.dumps(data)
    for secret in secrets:
        assert secret.rsplit("/", 1)[-1] not in text


def check_brief(data: dict[str, Any], *, answered_via: str | None) -> dict[str, Any]:
    """The brief over MCP verifies against its ledger and names agents and channels."""
    ledger = data["ledger"]
    head = verify_ledger(ledger)
    brief = data["brief"]
    assert head == data["ledger_head"] == brief["ledger"]["head"]
    assert brief["ledger"]["verifies"] is True
    assert brief["ledger"]["entries"] == len(ledger)
    assert verify_ledger(ledger, head=head) == head
    with pytest.raises(ValueError, match=r"."):
        verify_ledger(ledger[:-1], head=head)
    assert brief["outcome"] == "agreed"
    assert brief["agreement"]["terms"] == OFFER["proposal"]["terms"]  # type: ignore[index]
    joined = [e["data"] for e in ledger if e["type"] == "agent_joined"]
    assert {"seat": "A", "agent": "claude-desktop (Ann)", "mode": "external"} in joined
    assert {"seat": "B", "agent": "bo-assistant", "mode": "external"} in joined
    answers = [e["data"] for e in ledger if e["type"] == "principal_answer"]
    if answered_via is None:
        assert answers == []
    else:
        assert [a["via"] for a in answers] == [answered_via]
        assert [e["via"] for e in brief["escalations"]] == [answered_via]
    assert data["markdown"].startswith("#")
    assert head in data["markdown"]
    return brief


def test_two_external_proxies_reach_agreement(tmp_path: Path) -> None:
    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base, mode="legacy") as b:
            links = await open_room(a, b)
            # B long-polls while A sends: the wait wakes on A's envelope (or finds it sent).
            waited, sent = await asyncio.gather(
                call(b, "wait_for_turn", {"link": links["b"], "timeout_seconds": 20}),
                call(a, "send_envelope", {"link": links["a"], **OFFER}),
            )
            assert sent["accepted_envelope"]["claims"][0]["id"] == "A1.1"
            assert "protocol_flags" not in sent["accepted_envelope"]
            assert waited["ready"] is True
            assert waited["your_turn"] is True
            assert [c["id"] for c in waited["claims_to_review"]] == ["A1.1"]
            done = await call(
                b,
                "send_envelope",
                {
                    "link": links["b"],
                    "message": "Agreed: 4500 EUR, delivery by June.",
                    "reviews": [{"claim_id": "A1.1", "verdict": "accept"}],
                    "status": "agree",
                },
            )
            assert done["accepted_envelope"]["status"] == "agree"
            assert done["room"]["status"] == "agreed"
            ended = await call(a, "wait_for_turn", {"link": links["a"], "timeout_seconds": 5})
            assert ended["ready"] is True
            assert ended["status"] == "agreed"
            brief_a = await call(a, "get_brief", {"link": links["a"]})
            brief_b = await call(
                b, "get_brief", {"link": links["b"], "room_id": brief_a["room_id"]}
            )
            assert brief_a["ledger_head"] == brief_b["ledger_head"]
            check_brief(brief_b, answered_via=None)
            for data in (brief_a, brief_b, done, ended):
                _no_secrets(data, *links.values())

    with server(tmp_path / "rooms.sqlite") as base:
        asyncio.run(go(base))


def test_escalation_answered_on_the_web_page_then_agreed(tmp_path: Path) -> None:
    question = "May I accept 4500 EUR, below our 4600 EUR line?"

    async def go(base: str) -> None:
        async with (
            mcp_client(base, mode="legacy") as a,
            mcp_client(base) as b,
            httpx2.AsyncClient() as web,
        ):
            links = await open_room(a, b)
            await call(a, "send_envelope", {"link": links["a"], **OFFER})
            escalate = {
                "link": links["b"],
                "message": "I need to check with my principal.",
                "reviews": [{"claim_id": "A1.1", "verdict": "accept"}],
                "status": "escalate",
                "escalation": {"question": question, "reason": "escalate_when[0]"},
            }
            # A is already waiting when B escalates: the pause wakes A's wait at once.
            watched.viewed["A"].clear()
            waiting = asyncio.create_task(
                call(a, "wait_for_turn", {"link": links["a"], "timeout_seconds": 20})
            )
            assert await asyncio.to_thread(watched.viewed["A"].wait, 20)
            paused = await call(b, "send_envelope", escalate)
            waited = await waiting
            assert paused["room"]["status"] == "paused"
            assert waited["ready"] is True
            assert waited["timed_out"] is False
            assert waited["status"] == "paused"
            assert waited["next_action"] == (
                "Paused while the other principal answers their proxy. Call wait_for_turn."
            )
            # A pause that is already there is waited out, not returned at once.
            still = await call(a, "wait_for_turn", {"link": links["a"], "timeout_seconds": 1})
            assert still["ready"] is False
            assert still["timed_out"] is True
            # The question is shown to B's principal, not to A's side.
            assert waited["pending_question"] is None
            page_b = await web.get(links["page_b"])
            assert page_b.status_code == 200
            assert html.escape(question) in page_b.text
            page_a = await web.get(links["page_a"])
            assert page_a.status_code == 200
            # A's principal reads the other side's question, with nothing to answer there.
            assert html.escape(question) in page_a.text
            assert "Your proxy asks you" not in page_a.text
            assert "/answer" not in page_a.text
            # A proxy holding a seat link cannot reach the page or post as the web.
            seat_post = await web.post(links["b"] + "/answer", data={"answer": "yes"})
            assert seat_post.status_code in (404, 405)
            room_id, token = links["b"].split("/room/")[1].split("?")[0], links["b"][-43:]
            seat_as_page = f"{base}/p/{room_id}/{token}"
            assert (
                await web.post(seat_as_page + "/answer", data={"answer": "yes"})
            ).status_code == 404
            # The principal answers with a real form post from the page.
            answer = "Yes: 4500 EUR is fine if delivery is by June."
            posted = await web.post(
                links["page_b"] + "/answer", data={"answer": answer}, headers={"Origin": base}
            )
            assert posted.status_code == 303
            after = await web.get(base + posted.headers["location"].split(base, 1)[-1])
            assert "Your answer was sealed" in after.text
            assert html.escape(answer) in after.text
            # A second answer has nothing to answer.
            again = await web.post(
                links["page_b"] + "/answer", data={"answer": "no"}, headers={"Origin": base}
            )
            assert again.status_code == 409
            resumed = await call(b, "wait_for_turn", {"link": links["b"], "timeout_seconds": 20})
            assert resumed["ready"] is True
            assert resumed["your_turn"] is True
            assert resumed["you"]["card"]["amendments"][0]["answer"] == answer
            done = await call(
                b, "send_envelope", {"link": links["b"], "message": "Agreed.", "status": "agree"}
            )
            assert done["room"]["status"] == "agreed", done["accepted_envelope"]
            data = await call(a, "get_brief", {"link": links["a"]})
            brief = check_brief(data, answered_via="web")
            assert brief["escalations"][0]["answer"] == answer
            page = await web.get(links["page_a"])
            assert "Decision brief" in page.text
            assert data["ledger_head"] in page.text
            # The escalation list says B answered; the brief (seed 7) says how.
            assert "answered by their principal" in page.text

    db = tmp_path / "rooms.sqlite"
    watched = WatchedService(SqliteRoomStore(db), SqliteLinkStore(db))
    with server(db, service=watched) as base:
        asyncio.run(go(base))


def test_bad_input_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base, mode="legacy") as b:
            links = await open_room(a, b)
            before = await call(a, "get_room", {"link": links["a"]})
            # Out of turn: B may not send while it is A's turn.
            text = await refused(
                b, "send_envelope", {"link": links["b"], "message": "hi", "status": "continue"}
            )
            assert "not_your_turn" in text
            # Schema-invalid envelopes, each refused by the same enforcement as built-in proxies.
            for bad in (
                {"message": "x", "status": "maybe"},
                {
                    "message": "x",
                    "status": "continue",
                    "claims": [{"text": "t", "origin": "rumour"}],
                },
                {"message": "x", "status": "escalate"},  # no question
                {"message": "x", "status": "continue", "proposal": {"terms": "all"}},
                {
                    "message": "x",
                    "status": "continue",
                    "reviews": [{"claim_id": "B9.1", "verdict": "accept"}],
                },
                {
                    "message": "x",
                    "status": "continue",
                    "claims": [{"text": f"c{i}", "origin": "assumed"} for i in range(9)],
                },
            ):
                text = await refused(a, "send_envelope", {"link": links["a"], **bad})
                assert text.startswith("Error executing tool send_envelope:"), text
            # A proxy cannot invent its principal's words by sealing a card with amendments
            # (here on a fresh room, where sealing is still open).
            fresh = await call(
                a, "create_room", {"topic": "T", "your_principal": "Ann", "counterpart": "Bo"}
            )
            forged = {**CARD_A, "amendments": [{"question": "q", "answer": "yes", "at": "x"}]}
            text = await refused(
                a, "seal_intent_card", {"link": fresh["your_link"], "card": forged}
            )
            assert "may not carry amendments" in text
            # A principal link is not a seat link, and an unknown or mangled one opens nothing.
            for wrong in (links["page_a"], links["a"][:-2] + "zz", links["a"] + "x", "room-1/abc"):
                text = await refused(a, "get_room", {"link": wrong})
                assert UNKNOWN_LINK in text
                assert links["page_a"].rsplit("/", 1)[-1] not in text
            # get_brief needs a link of the very room named, and the room must have ended.
            text = await refused(
                a, "get_brief", {"room_id": "ffffffffffffffff", "link": links["a"]}
            )
            assert "link_unknown" in text
            early = await call(a, "get_brief", {"link": links["a"]})
            assert early == {
                "status": "negotiating",
                "brief": None,
                "note": "No brief yet. The room has not ended.",
            }
            # Nothing to answer: no escalation is pending, for either seat.
            text = await refused(b, "answer_escalation", {"link": links["b"], "answer": "yes"})
            assert "invalid_transition" in text
            # wait_for_turn's bound is enforced.
            text = await refused(a, "wait_for_turn", {"link": links["a"], "timeout_seconds": 600})
            assert "wait_invalid" in text
            after = await call(a, "get_room", {"link": links["a"]})
            assert after["ledger_head"] == before["ledger_head"]

            # Now A escalates; B's link cannot answer A's escalation, and a proxy that says
            # "web" is still recorded as relaying (via mcp).
            await call(
                a,
                "send_envelope",
                {
                    "link": links["a"],
                    **OFFER,
                    "status": "escalate",
                    "escalation": {"question": "Should we also ask for assembly?"},
                },
            )
            text = await refused(b, "answer_escalation", {"link": links["b"], "answer": "yes"})
            assert "not_your_escalation" in text
            relayed = await a.call_tool(
                "answer_escalation", {"link": links["a"], "answer": "No.", "via": "web"}
            )
            assert not relayed.is_error
            view = json.loads(relayed.content[0].text)  # type: ignore[union-attr]
            assert view["status"] == "negotiating"
            export = service.export(view["room_id"])
            answers = [
                e["data"]["via"] for e in export["ledger"] if e["type"] == "principal_answer"
            ]
            assert answers == ["mcp"]

    db = tmp_path / "rooms.sqlite"
    service = RoomService(SqliteRoomStore(db), SqliteLinkStore(db))
    with server(db, service=service) as base:
        asyncio.run(go(base))


def test_server_restart_mid_room_loses_nothing(tmp_path: Path) -> None:
    db = tmp_path / "rooms.sqlite"
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()

    async def go() -> None:
        first = server(db, port)
        base = first.__enter__()
        # The same two clients stay open across the restart (stateless HTTP: no session).
        async with mcp_client(base) as a, mcp_client(base, mode="legacy") as b:
            try:
                links = await open_room(a, b)
                await call(a, "send_envelope", {"link": links["a"], **OFFER})
                before = await call(b, "get_room", {"link": links["b"]})
            finally:
                first.__exit__(None, None, None)
            with server(db, port):
                after = await call(b, "get_room", {"link": links["b"]})
                assert after["ledger_head"] == before["ledger_head"]
                assert after["transcript"] == before["transcript"]
                assert after["your_turn"] is True
                assert after["you"]["proxy"] == "external"
                done = await call(
                    b,
                    "send_envelope",
                    {
                        "link": links["b"],
                        "message": "Agreed.",
                        "reviews": [{"claim_id": "A1.1", "verdict": "accept"}],
                        "status": "agree",
                    },
                )
                assert done["room"]["status"] == "agreed"
                check_brief(await call(a, "get_brief", {"link": links["a"]}), answered_via=None)
                async with httpx2.AsyncClient() as web:
                    assert (await web.get(links["page_a"])).status_code == 200

    asyncio.run(go())


def test_builtin_counterpart_runs_a_plugged_in_proxy(tmp_path: Path) -> None:
    def accept_all(view: RoomView) -> dict[str, Any]:
        reviews = [{"claim_id": c, "verdict": "accept"} for c in view.unreviewed]
        return {"message": "Fine by us.", "reviews": reviews, "status": "agree"}

    def builtin(topic: str, counterpart: str) -> tuple[dict[str, Any], ScriptedProxy]:
        card = {**CARD_B, "principal": {"name": counterpart, "role": "seller"}}
        return card, ScriptedProxy([accept_all])

    db = tmp_path / "rooms.sqlite"
    service = RoomService(SqliteRoomStore(db), SqliteLinkStore(db), builtin=builtin)

    async def go(base: str) -> None:
        async with mcp_client(base) as a:
            args = {"topic": "Chairs", "your_principal": "Ann Lee", "counterpart": "Chairs Inc"}
            made = await call(a, "create_room", {**args, "counterpart_proxy": "builtin"})
            assert made["invite_link_for_counterpart"] is None
            link = made["your_link"]
            await call(a, "join_room", {"link": link, "agent_name": "agent-a"})
            view = await call(a, "seal_intent_card", {"link": link, "card": CARD_A})
            assert view["counterpart"]["proxy"] == "built-in Claude proxy"
            sent = await call(a, "send_envelope", {"link": link, **OFFER})
            # The built-in proxy answered through the same Room.send enforcement.
            assert sent["room"]["status"] == "agreed"
            assert sent["room"]["transcript"][-1]["from"].startswith("B ")
            data = await call(a, "get_brief", {"link": link})
            joined = [e["data"] for e in data["ledger"] if e["type"] == "agent_joined"]
            assert {"seat": "B", "agent": "built-in ScriptedProxy", "mode": "builtin"} in joined
            assert verify_ledger(data["ledger"]) == data["brief"]["ledger"]["head"]

    with server(db, service=service) as base:
        asyncio.run(go(base))


def test_builtin_counterpart_without_a_proxy_is_refused(tmp_path: Path) -> None:
    async def go(base: str) -> None:
        async with mcp_client(base) as a:
            args = {"topic": "Chairs", "your_principal": "Ann", "counterpart": "Bo"}
            text = await refused(a, "create_room", {**args, "counterpart_proxy": "builtin"})
            assert "builtin_unavailable" in text
            text = await refused(a, "create_room", {**args, "counterpart_proxy": "robot"})
            assert "argument_invalid" in text
            text = await refused(a, "create_room", {**args, "topic": "   "})
            assert "argument_invalid" in text

    with server(tmp_path / "rooms.sqlite") as base:
        asyncio.run(go(base))


def test_cards_confirmed_on_the_web_page(tmp_path: Path) -> None:
    db = tmp_path / "rooms.sqlite"
    service = RoomService(SqliteRoomStore(db), SqliteLinkStore(db), confirm_on_web=True)

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b, httpx2.AsyncClient() as web:
            made = await a.call_tool(
                "create_room", {"topic": "Chairs", "your_principal": "Ann", "counterpart": "Bo"}
            )
            room = json.loads(made.content[0].text)  # type: ignore[union-attr]
            pages = re.findall(r"http://\S+/p/\S+?(?=[ .]|$)", made.content[1].text)  # type: ignore[union-attr]
            drafted = await call(a, "seal_intent_card", {"link": room["your_link"], "card": CARD_A})
            # Over MCP the card is only a draft until the principal confirms it.
            assert drafted["you"]["card_sealed"] is False
            assert drafted["your_draft"]["goal"] == CARD_A["goal"]
            page = await web.get(pages[0])
            assert "Confirm and seal" in page.text
            assert html.escape(CARD_A["goal"]) in page.text  # type: ignore[arg-type]
            # A broken card is refused on the page and seals nothing.
            bad = await web.post(pages[0] + "/card", data={"card": "{not json"})
            assert bad.status_code == 409
            assert "not valid JSON" in bad.text
            posted = await web.post(
                pages[0] + "/card",
                data={"card": json.dumps(drafted["your_draft"])},
                headers={"Origin": base},
            )
            assert posted.status_code == 303
            # B's principal writes their card on the page without any draft; B's page link
            # came with B's agent's first join_room.
            joined = await b.call_tool(
                "join_room",
                {"link": room["invite_link_for_counterpart"], "agent_name": "bo-assistant"},
            )
            pages += re.findall(_PAGE, joined.content[1].text)  # type: ignore[union-attr]
            own_b = json.loads(joined.content[0].text)["your_link"]  # type: ignore[union-attr]
            posted = await web.post(pages[1] + "/card", data={"card": json.dumps(CARD_B)})
            assert posted.status_code == 303
            view = await call(b, "get_room", {"link": own_b})
            assert view["status"] == "negotiating"
            assert view["you"]["card_sealed"] is True
            # Cards can no longer be changed once sealed, from either channel.
            text = await refused(a, "seal_intent_card", {"link": room["your_link"], "card": CARD_A})
            assert "invalid_transition" in text
            # Opened in a browser, a seat link only says what it is for.
            note = await web.get(room["your_link"])
            assert note.status_code == 200
            assert "seat link for an AI agent" in note.text
        export = service.export(room["room_id"])
        vias = [e["data"]["via"] for e in export["ledger"] if e["type"] == "card_sealed"]
        assert vias == ["web", "web"]

    with server(db, service=service) as base:
        asyncio.run(go(base))


def test_server_never_logs_a_link_even_at_debug(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    async def go(base: str) -> dict[str, Any]:
        async with mcp_client(base) as a, mcp_client(base) as b, httpx2.AsyncClient() as web:
            links = await open_room(a, b)
            await call(a, "send_envelope", {"link": links["a"], **OFFER})
            await refused(a, "send_envelope", {"link": links["a"], **OFFER})  # out of turn
            await refused(b, "get_room", {"link": links["page_b"]})  # wrong kind of link
            await refused(b, "get_room", {"link": links["b"][:-3] + "abc"})  # mangled
            await web.get(links["page_a"])
            await web.post(links["page_b"] + "/answer", data={"answer": "x"})  # nothing pending
            return links

    with server(tmp_path / "rooms.sqlite") as base:
        links = asyncio.run(go(base))
    secrets = [link.rsplit("/", 1)[-1] for link in links.values()]
    server_side = [
        r
        for r in caplog.records
        if r.name.startswith(("mcp.server", "uvicorn", "starlette", "pxp"))
    ]
    assert server_side  # the server did log (at debug), just never a link
    for record in server_side:
        text = record.getMessage() + str(record.args or "")
        for secret in secrets:
            assert secret not in text, record.name


def test_page_escapes_everything_a_proxy_or_principal_wrote(tmp_path: Path) -> None:
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)>'

    async def go(base: str) -> None:
        async with mcp_client(base) as a, httpx2.AsyncClient() as web:
            made = await a.call_tool(
                "create_room", {"topic": evil, "your_principal": evil, "counterpart": evil}
            )
            room = json.loads(made.content[0].text)  # type: ignore[union-attr]
            page_link = re.findall(r"http://\S+/p/\S+?(?=[ .]|$)", made.content[1].text)[0]  # type: ignore[union-attr]
            await call(a, "join_room", {"link": room["your_link"], "agent_name": evil})
            card = {**CARD_A, "principal": {"name": evil}, "goal": evil}
            await call(a, "seal_intent_card", {"link": room["your_link"], "card": card})
            page = await web.get(page_link)
            assert page.status_code == 200
            assert "<script>" not in page.text
            assert "<img" not in page.text
            assert html.escape(evil) in page.text
            assert "script-src" not in page.headers["content-security-policy"]
            assert page.headers["content-security-policy"].startswith("default-src 'none'")

    with server(tmp_path / "rooms.sqlite") as base:
        asyncio.run(go(base))


# --- issue 20, finding 3: what clients read back is the reference's ---------------------

_VIEW_KEYS = {
    "room_id",
    "topic",
    "status",
    "you",
    "counterpart",
    "your_turn",
    "pending_question",
    "next_action",
    "turn_count",
    "max_turns",
    "transcript",
    "claims_to_review",
    "unverified_assumptions",
    "web_view",
    "brief_url",
}


def test_outputs_have_the_reference_shapes_and_words(tmp_path: Path) -> None:
    """An agent prompted for the reference server reads the same names and words back."""

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b:
            args = {"topic": "Chairs", "your_principal": "Ann Lee", "counterpart": "Bo Chen"}
            result = await a.call_tool("create_room", args)
            made = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert set(made) == {
                "room_id",
                "your_link",
                "invite_link_for_counterpart",
                "counterpart_proxy",
                "next_action",
            }
            seat_link = re.compile(
                re.escape(base) + r"/room/[0-9a-f]{16}\?seat=([AB])&t=[A-Za-z0-9_-]{43}$"
            )
            assert seat_link.match(made["your_link"]).group(1) == "A"  # type: ignore[union-attr]
            invite = made["invite_link_for_counterpart"]
            assert seat_link.match(invite).group(1) == "B"  # type: ignore[union-attr]
            assert made["next_action"].startswith(
                "Give invite_link_for_counterpart privately to Bo Chen."
            )
            # The principal's link stands alone at the end of its line: nothing to catch.
            note = result.content[1].text  # type: ignore[union-attr]
            assert re.search(_PAGE + "$", note)
            # A link that names the wrong seat opens nothing.
            wrong = invite.replace("seat=B", "seat=A")
            assert UNKNOWN_LINK in await refused(b, "get_room", {"link": wrong})
            view = await call(a, "join_room", {"link": made["your_link"], "agent_name": "ann"})
            assert set(view) >= _VIEW_KEYS
            assert view["status"] == "drafting"
            assert view["next_action"] == (
                "Ask your principal for every Intent Card field (do not invent any), confirm "
                "the card with them, then call seal_intent_card."
            )
            assert view["counterpart"]["proxy"] == "external agent (not joined yet)"
            joined = await call(b, "join_room", {"link": invite, "agent_name": "bo"})
            assert set(joined) >= _VIEW_KEYS | {"your_link"}  # ours: the invite is spent
            invite = joined["your_link"]
            assert seat_link.match(invite).group(1) == "B"  # type: ignore[union-attr]
            sealed = await call(a, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
            assert sealed["next_action"] == (
                "Your card is sealed. Waiting for Bo Chen to seal theirs. Call wait_for_turn."
            )
            await call(b, "seal_intent_card", {"link": invite, "card": CARD_B})
            sent = await call(a, "send_envelope", {"link": made["your_link"], **OFFER})
            line = sent["accepted_envelope"]
            assert line["from"] == "A (Ann Lee's proxy, ann)"
            assert line["proposal"]["hash"] == line["proposal"]["hash"].lower()
            assert line["claims"] == [
                {
                    "id": "A1.1",
                    "origin": "stated",
                    "ref": "known_facts[0]",
                    "text": OFFER["claims"][0]["text"],
                }  # type: ignore[index]
            ]
            theirs = await call(b, "get_room", {"link": invite})
            assert theirs["status"] == "negotiating"
            assert theirs["your_turn"] is True
            assert theirs["next_action"] == (
                "Your turn. Review every claim in claims_to_review, then call send_envelope."
            )
            assert theirs["claims_to_review"] == line["claims"]
            assert theirs["transcript"] == [line]
            early = await call(b, "get_brief", {"link": invite})
            assert early["brief"] is None
            assert early["note"] == "No brief yet. The room has not ended."

    with server(tmp_path / "rooms.sqlite") as base:
        asyncio.run(go(base))
