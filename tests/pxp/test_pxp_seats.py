"""Issue 20, what the last session left open: who holds seat B, principal-answer claims and
their review, and long-polls per client.

* The invite handed to the creator for seat B is spent at the first join, which answers the
  joining agent its own seat link; presented again, the invite contests the seat: the ledger
  records it, a running room ends without agreement and the brief says so, so an agent of
  A's side that joined B's seat first cannot hold it silently.
* A principal's answer recorded as a ``<seat><seq>.0`` claim is its principal's own word,
  private like the card: it is never reviewed, so nothing the other side agrees to may rest
  on it.
* ``wait_for_turn`` calls waiting at once are capped per client as well, with a coded refusal.

The MCP tests run a real uvicorn on 127.0.0.1 and the SDK's client over loopback.

Private imports: ``pxp._cli.build_parser`` and ``pxp._server_cli.server_config`` turn
``pxp serve``'s argv into the server's configuration in process (the CLI's public contract
is its argv; no public cli module, by decision).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import pxp
from pxp.server import SqliteLinkStore

from . import test_pxp_origins as bike
from ._mcp_harness import call, mcp_client, refused
from .test_mcp_attacks import CARD_A, CARD_B, CountingService, create, pages_in, server, sqlite
from .test_pxp_origins import active_room, msg

_SEAT_LINK = r"http://127\.0\.0\.1:\d+/room/[0-9a-f]{16}\?seat=B&t=[A-Za-z0-9_-]{43}"


async def join(client: Client, link: str, agent: str) -> tuple[dict[str, Any], list[str]]:
    """join_room; return the answer and the principal page links in the user's block."""
    result = await client.call_tool("join_room", {"link": link, "agent_name": agent})
    assert not result.is_error, result.content
    data: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    return data, pages_in(result)


def ledger(service: Any, room_id: str, kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in service.export(room_id)["ledger"] if e["type"] == kind]


# ------------------------------------------------------------------ 1. the invite


def test_the_invite_is_spent_at_the_first_join_for_a_seat_link_of_its_own(
    tmp_path: Path,
) -> None:
    """Defect: the counterpart's invite stayed seat B's credential for good, so A's side,
    which handed it over, could read B's card (get_room) and send as B at any time."""
    service = sqlite(tmp_path)

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b:
            made = await create(a)
            invite = made["invite_link_for_counterpart"]
            # before the join the invite only joins
            text = await refused(b, "seal_intent_card", {"link": invite, "card": CARD_B})
            assert "invite_link:" in text
            joined, pages = await join(b, invite, "bo-agent")
            mine = joined["your_link"]
            assert re.fullmatch(_SEAT_LINK, mine)
            assert mine != invite
            assert len(pages) == 1  # B's page, for B's human, only here
            assert joined["you"]["seat"] == "B"
            # the exchanged link is B's credential; the invite opens nothing any more
            await call(a, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
            view = await call(b, "seal_intent_card", {"link": mine, "card": CARD_B})
            assert view["status"] == "negotiating"
            for tool, args in (
                ("get_room", {}),
                ("wait_for_turn", {"timeout_seconds": 1}),
                ("send_envelope", {"message": "m", "status": "continue"}),
                ("answer_escalation", {"answer": "yes"}),
                ("get_brief", {}),
                ("seal_intent_card", {"card": CARD_B}),
            ):
                text = await refused(a, tool, {"link": invite, **args})
                assert "invite_link:" in text, (tool, text)
                assert "SECRET" not in text
            # the same agent joining again with its own link changes nothing
            again, pages = await join(b, mine, "bo-agent")
            assert pages == []
            assert "your_link" not in again
        rows = SqliteLinkStore(tmp_path / "rooms.sqlite").rows(made["room_id"])
        assert sorted((r.seat, r.kind) for r in rows) == [
            ("A", "principal"),
            ("A", "seat"),
            ("B", "invite"),
            ("B", "principal"),
            ("B", "seat"),
        ]

    with server(service) as base:
        asyncio.run(go(base))


def test_an_agent_of_a_that_joined_b_first_cannot_hold_the_seat_silently(
    tmp_path: Path,
) -> None:
    """Defect (finding 6): A's client joined B's seat with the invite, took B's page and
    sealed B's card "via web"; the real B agent was refused ``seat_taken`` and the room
    went on as if B were there. Now the real B presenting the invite contests the seat:
    the ledger records it, the room ends without agreement, and the brief names both."""
    service = sqlite(tmp_path)

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b, httpx2.AsyncClient() as web:
            made = await create(a)
            invite = made["invite_link_for_counterpart"]
            stolen, pages = await join(a, invite, "bo-agent")  # the impostor takes B's name
            posted = await web.post(
                pages[0] + "/card",
                data={"card": json.dumps(CARD_B)},
                headers={"Origin": base, "Sec-Fetch-Site": "same-origin"},
            )
            assert posted.status_code == 303
            await call(a, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
            # the real B arrives with the invite it was sent (same agent name, even)
            text = await refused(b, "join_room", {"link": invite, "agent_name": "bo-agent"})
            assert "seat_contested:" in text
            assert "SECRET" not in text
            assert "/p/" not in text
            # the room has ended for everyone; the impostor can no longer act as B
            view = await call(a, "get_room", {"link": made["your_link"]})
            assert view["status"] == "stalled"
            assert view["next_action"].startswith("No agreement: seat B's invite was presented")
            offer = {"link": stolen["your_link"], "message": "Yes.", "status": "agree"}
            assert "invalid_transition" in await refused(a, "send_envelope", offer)
            brief = await call(a, "get_brief", {"link": made["your_link"]})
            assert brief["brief"]["outcome"] == "no_agreement"
            contests = brief["brief"]["parties"]["B"]["contests"]
            assert [(c["agent"], c["holder"], c["state"]) for c in contests] == [
                ("bo-agent", "bo-agent", "active")
            ]
            assert "Seat B was contested" in brief["markdown"]
            page = (await web.get(pages[0])).text
            assert "contested" in page

        assert ledger(service, made["room_id"], "seat_contested") == [
            {"seat": "B", "agent": "bo-agent"}
        ]

    with server(service) as base:
        asyncio.run(go(base))


def test_a_contest_after_an_impostors_agreement_is_in_the_brief(tmp_path: Path) -> None:
    """An impostor that raced the room to an agreement before the real B arrived still
    cannot keep it quiet: the contest is appended after the end, and the brief (its ledger
    head too) says seat B was contested after the agreement."""
    service = sqlite(tmp_path)

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b:
            made = await create(a)
            invite, link_a = made["invite_link_for_counterpart"], made["your_link"]
            stolen, _ = await join(a, invite, "sneaky")
            link_b = stolen["your_link"]
            await call(a, "seal_intent_card", {"link": link_a, "card": CARD_A})
            await call(a, "seal_intent_card", {"link": link_b, "card": CARD_B})
            offer = {"message": "Offer.", "status": "continue", "proposal": {"terms": ["4700"]}}
            await call(a, "send_envelope", {"link": link_a, **offer})
            await call(a, "send_envelope", {"link": link_b, "message": "Yes.", "status": "agree"})
            before = await call(a, "get_brief", {"link": link_a})
            assert before["brief"]["parties"]["B"]["contests"] == []
            text = await refused(b, "join_room", {"link": invite, "agent_name": "bo-agent"})
            assert "seat_contested:" in text
            after = await call(a, "get_brief", {"link": link_a})
            assert after["brief"]["outcome"] == "agreed"  # what was agreed stays on record
            assert after["ledger_head"] != before["ledger_head"]
            (contest,) = after["brief"]["parties"]["B"]["contests"]
            assert (contest["agent"], contest["holder"], contest["state"]) == (
                "bo-agent",
                "sneaky",
                "agreed",
            )
            assert "after the room had agreed" in after["markdown"]

    with server(service) as base:
        asyncio.run(go(base))


def test_the_principal_releases_the_seat_for_a_new_agent(tmp_path: Path) -> None:
    """An agent that lost its seat link cannot present the spent invite again without
    contesting the seat; the seat's principal sees on its page which agent holds the seat and
    can release it: the agent's link stops working, the invite A holds stays dead, and the
    page shows a fresh invite once, for the principal's next agent."""
    service = sqlite(tmp_path)
    same_site = {"Sec-Fetch-Site": "same-origin"}

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b, httpx2.AsyncClient() as web:
            made = await create(a)
            invite = made["invite_link_for_counterpart"]
            joined, pages = await join(b, invite, "bo-agent")
            old = joined["your_link"]
            await call(a, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
            await call(b, "seal_intent_card", {"link": old, "card": CARD_B})
            shown = (await web.get(pages[0])).text
            assert "bo-agent" in shown
            assert 'action="' in shown
            assert "/release" in shown
            foreign = await web.post(
                pages[0] + "/release",
                data={"release": "yes"},
                headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
            )
            assert foreign.status_code == 403
            posted = await web.post(
                pages[0] + "/release",
                data={"release": "yes"},
                headers={"Origin": base, **same_site},
            )
            assert posted.status_code == 200
            (fresh,) = re.findall(_SEAT_LINK, posted.text.replace("&amp;", "&"))
            assert fresh not in (invite, old)
            assert "link_revoked" in await refused(b, "get_room", {"link": old})
            text = await refused(a, "join_room", {"link": invite, "agent_name": "sneaky"})
            assert "link_unknown" in text  # the invite A handed over is dead
            again = await web.get(pages[0])
            assert fresh.rsplit("=", 1)[1] not in again.text  # shown once only
            # the page with the invite was lost: the page issues it again, the first stops
            lost = fresh
            assert "Issue a new invite" in again.text
            posted = await web.post(
                pages[0] + "/release",
                data={"release": "yes"},
                headers={"Origin": base, **same_site},
            )
            assert posted.status_code == 200
            (fresh,) = re.findall(_SEAT_LINK, posted.text.replace("&amp;", "&"))
            assert fresh != lost
            assert "link_unknown" in await refused(
                b, "join_room", {"link": lost, "agent_name": "x"}
            )
            now, more_pages = await join(b, fresh, "bo-agent-2")
            assert more_pages == []  # the principal keeps its page
            view = await call(b, "get_room", {"link": now["your_link"]})
            assert view["status"] == "negotiating"
            assert view["you"]["card_sealed"] is True
            await call(
                a,
                "send_envelope",
                {"link": made["your_link"], "message": "m", "status": "continue"},
            )
            await call(
                b, "send_envelope", {"link": now["your_link"], "message": "m", "status": "continue"}
            )
            nothing = await web.post(
                pages[0] + "/release",
                data={"release": "yes"},
                headers={"Origin": base, **same_site},
            )
            assert nothing.status_code == 200  # bo-agent-2 released in turn
        assert ledger(service, made["room_id"], "seat_released") == [
            {"seat": "B", "agent": "bo-agent"},
            {"seat": "B", "agent": "bo-agent-2"},
        ]
        room = pxp.Room.from_export(service.export(made["room_id"]))
        assert room.agent("B") is None
        assert room.agents("B") == ("bo-agent", "bo-agent-2")

    with server(service) as base:
        asyncio.run(go(base))


def test_a_refused_release_changes_no_link(tmp_path: Path) -> None:
    from pxp.server import SeatGrant

    service = sqlite(tmp_path)
    made = service.create_room(
        topic="t", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    page_b = SeatGrant(made.room_id, "B", "principal")
    rows = SqliteLinkStore(tmp_path / "rooms.sqlite").rows
    before = rows(made.room_id)
    with pytest.raises(pxp.PxpError) as err:
        service.release(page_b)  # nobody holds seat B yet
    assert err.value.code == "seat_invalid"
    assert rows(made.room_id) == before
    with pytest.raises(pxp.PxpError) as err:
        service.release(SeatGrant(made.room_id, "B", "seat"))  # only a principal link
    assert err.value.code == "link_unknown"
    invite = made.link("http://x", "B", "invite")
    service.join(service.grant(invite, ("seat", "invite")), "bo")
    with pytest.raises(pxp.PxpError) as err:
        service.join(service.grant(invite, ("seat", "invite")), "other")
    assert err.value.code == "seat_contested"
    before = rows(made.room_id)
    with pytest.raises(pxp.PxpError) as err:
        service.release(page_b)  # the room has ended
    assert err.value.code == "invalid_transition"
    assert rows(made.room_id) == before


def test_a_contest_replays_from_the_ledger() -> None:
    room, now = active_room()
    room.join("B", agent="sneaky", now=now())
    with pytest.raises(pxp.PxpError) as err:
        room.contest("A", agent="x", now=now())  # seat A has no agent: nothing to contest
    assert err.value.code == "seat_invalid"
    room.contest("B", agent="bo-agent", now=now())
    assert room.status == "ended"
    assert room.turn is None
    with pytest.raises(pxp.PxpError) as err:
        room.send("A", msg(), now=now())
    assert err.value.code == "invalid_transition"
    again = pxp.Room.from_export(room.export(), head=room.head)
    assert again.status == "ended"
    assert again.brief() == room.brief()
    assert again.brief()["parties"]["B"]["contests"][0]["agent"] == "bo-agent"


# ------------------------------------------------------------------ 2. `.0` claims


def _answered() -> tuple[pxp.Room, Any]:
    room, now = active_room()
    room.send("A", msg("escalate", escalation={"question": "440?", "reason": "r"}), now=now())
    room.answer("A", "Yes, 440 EUR is fine", now=now(), via="mcp")
    assert room.claims["A1.0"].speaker == "principal"
    return room, now


def test_a_proposal_cannot_rest_on_its_own_principal_answer_claim() -> None:
    """``A1.0`` is A's principal's own word, private like A's card: B never sees it before
    the end, so nothing B agrees to may rest on it. A claim id names a claim of an envelope
    (index from 1), so ``depends_on`` refuses ``A1.0`` by its shape; the answer reaches the
    other side only as a claim of an envelope, stated from ``amendments[0]``, which B must
    review like any other."""
    room, now = _answered()
    head = room.head
    draft = msg(proposal={"terms": ["440 EUR"], "depends_on": ["A1.0"]})
    with pytest.raises(pxp.PxpError) as err:
        room.send("A", draft, now=now())
    assert (err.value.code, err.value.reason) == ("envelope_invalid", "depends_on_invalid")
    assert room.head == head
    cite = {"text": "440 EUR is fine", "origin": "stated", "ref": "amendments[0]"}
    proposal = {"terms": ["440 EUR"], "depends_on": ["new1"]}
    room.send("A", msg(claims=[cite], proposal=proposal), now=now())
    assert room.claims["A2.1"].origin == "stated"
    assert room.unreviewed("B") == ("A2.1",)  # A1.0 is never owed a review
    sent = room.send("B", msg(), now=now())  # B did not review: only A2.1 is challenged
    assert [r["claim_id"] for r in sent.envelope["reviews"]] == ["A2.1"]


@pytest.mark.parametrize("where", ["review", "depends_on"])
def test_the_other_sides_principal_answer_claim_cannot_be_named(where: str) -> None:
    """B can neither review nor depend on ``A1.0``, and the refusal is the same whether A's
    principal answered or not (a ``.0`` id is refused by its shape), so it tells B nothing
    about what no view of B shows."""
    room, now = _answered()
    room.send("A", msg(), now=now())

    def refusal(cid: str) -> tuple[str, str | None]:
        if where == "review":
            draft = msg(reviews=[{"claim_id": cid, "verdict": "challenge"}])
        else:
            draft = msg(proposal={"terms": ["430 EUR"], "depends_on": [cid]})
        with pytest.raises(pxp.PxpError) as err:
            room.send("B", draft, now=now())
        return err.value.code, err.value.reason

    answered, never = refusal("A1.0"), refusal("A2.0")
    assert answered == never
    assert answered in (
        ("envelope_invalid", "review_claim_id"),
        ("envelope_invalid", "depends_on_invalid"),
    )
    assert "A1.0" not in room.claims_seen_by("B")
    assert "A1.0" in room.claims_seen_by("A")


# ------------------------------------------------------------------ 3. waits per client


@contextlib.asynccontextmanager
async def client_from(base: str, address: str) -> AsyncIterator[Client]:
    """An SDK client whose connections leave from ``address`` (a loopback address)."""
    transport = httpx2.AsyncHTTPTransport(local_address=address)
    async with (
        httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        yield client


def _counting(tmp_path: Path) -> CountingService:
    service = sqlite(tmp_path, CountingService)
    assert isinstance(service, CountingService)
    return service


async def _until_views(service: CountingService, n: int) -> None:
    """Wait until seat A's views were read ``n`` times since the last reset: a waiting call
    reads the view only once it holds its place, so the places are taken then."""
    for _ in range(4000):
        if service.views["A"] >= n:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"seat A was not viewed {n} times")


def test_wait_for_turn_is_capped_per_client(tmp_path: Path) -> None:
    """Defect: one client could hold every server-wide wait place by spreading its waits over
    rooms and seats (each seat within its own cap); now a client (told apart by its address,
    or its agent key) has its own cap. Over it a call from an address answers at once
    (wait_busy: an address may be shared); a signed-in agent key is refused (wait_limit)."""
    service = _counting(tmp_path)

    async def go(base: str) -> None:
        async with client_from(base, "127.0.0.2") as hog, client_from(base, "127.0.0.3") as fair:
            links = []
            for _ in range(3):
                made = await create(hog)
                await call(hog, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
                links.append(made["your_link"])
            theirs = await create(fair)
            await call(fair, "seal_intent_card", {"link": theirs["your_link"], "card": CARD_A})
            service.views.update(A=0, B=0)
            waits = [
                asyncio.create_task(
                    call(hog, "wait_for_turn", {"link": link, "timeout_seconds": 3})
                )
                for link in links[:2]
            ]
            await _until_views(service, 2)  # both waits have their places
            # an address may be shared (review 3, finding 4): over its cap a call does not
            # wait and is not refused either; it answers at once, wait_busy
            started = asyncio.get_running_loop().time()
            busy = await call(hog, "wait_for_turn", {"link": links[2], "timeout_seconds": 3})
            assert busy["wait_busy"] is True
            assert busy["timed_out"] is True
            assert asyncio.get_running_loop().time() - started < 2.5
            # another client still waits for real (no wait_busy, a full timeout)
            started = asyncio.get_running_loop().time()
            other = await call(
                fair, "wait_for_turn", {"link": theirs["your_link"], "timeout_seconds": 1}
            )
            assert "wait_busy" not in other
            assert other["timed_out"] is True
            assert asyncio.get_running_loop().time() - started >= 0.9
            for done in await asyncio.gather(*waits):
                assert done["timed_out"] is True
            # places are given back when the calls return
            again = await call(hog, "wait_for_turn", {"link": links[2], "timeout_seconds": 1})
            assert again["timed_out"] is True

    with server(service, max_waiters_per_client=2) as base:
        asyncio.run(go(base))


def test_clients_with_agent_keys_have_a_cap_each(tmp_path: Path) -> None:
    """Behind one address (a proxy), clients that send a valid agent key are told apart by
    it; an unknown key counts as the address, so inventing keys buys no places."""
    service = _counting(tmp_path)
    keys = ("k-" + "1" * 40, "k-" + "2" * 40)

    async def go(base: str) -> None:
        def auth(key: str) -> dict[str, str]:
            return {"Authorization": f"Bearer {key}"}

        async with (
            mcp_client(base, headers=auth(keys[0])) as one,
            mcp_client(base, headers=auth(keys[1])) as two,
            mcp_client(base, headers=auth(keys[0])) as one_again,
            mcp_client(base, headers=auth("k-" + "9" * 40)) as forged,
            mcp_client(base) as plain,
        ):
            links = []
            for client in (one, two, one):
                made = await create(client)
                await call(client, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
                links.append(made["your_link"])
            service.views.update(A=0, B=0)
            held = [
                asyncio.create_task(
                    call(client, "wait_for_turn", {"link": link, "timeout_seconds": 2})
                )
                for client, link in ((one, links[0]), (two, links[1]))
            ]
            await _until_views(service, 2)  # both waits have their places
            text = await refused(
                one_again, "wait_for_turn", {"link": links[2], "timeout_seconds": 2}
            )
            assert "wait_limit:" in text
            # the forged key is the plain address: one place, taken by the first
            first = asyncio.create_task(
                call(plain, "wait_for_turn", {"link": links[2], "timeout_seconds": 2})
            )
            await _until_views(service, 3)
            busy = await call(forged, "wait_for_turn", {"link": links[2], "timeout_seconds": 2})
            assert busy["wait_busy"] is True
            for done in await asyncio.gather(*held, first):
                assert done["timed_out"] is True

    with server(service, agent_keys=keys, max_waiters_per_client=1) as base:
        asyncio.run(go(base))


# ------------------------------------------------------------------ third review


def test_a_forwarded_seat_link_never_shares_the_seat_silently(tmp_path: Path) -> None:
    """Review 3, finding 1: A's side spent the invite itself and forwarded the seat link it
    got (the invite's shape) to the real B; B's join under the default name was "the same
    name again" and changed nothing: two agents sat in seat B unrecorded. Every join on a
    held seat is now recorded, both agents are told, and the brief warns."""
    service = sqlite(tmp_path)

    async def go(base: str) -> None:
        async with mcp_client(base) as a, mcp_client(base) as b:
            made = await create(a)
            spent = await a.call_tool("join_room", {"link": made["invite_link_for_counterpart"]})
            forwarded = json.loads(spent.content[0].text)["your_link"]  # type: ignore[union-attr]
            result = await b.call_tool("join_room", {"link": forwarded})  # the real B
            assert not result.is_error
            data = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert "already joined" in data["seat_notice"]
            assert "already joined" in result.content[1].text  # type: ignore[union-attr]
            await call(a, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
            await call(b, "seal_intent_card", {"link": forwarded, "card": CARD_B})
            offer = {"message": "Offer.", "status": "continue", "proposal": {"terms": ["1 EUR"]}}
            await call(a, "send_envelope", {"link": made["your_link"], **offer})
            await call(
                a, "send_envelope", {"link": forwarded, "message": "Yes.", "status": "agree"}
            )
            brief = await call(a, "get_brief", {"link": made["your_link"]})
            (rejoin,) = brief["brief"]["parties"]["B"]["rejoins"]
            assert (rejoin["agent"], rejoin["holder"]) == ("unnamed agent", "unnamed agent")
            assert "**Seat B's link joined again**" in brief["markdown"]
            assert "two agents shared the seat's link" in brief["markdown"]
        assert ledger(service, made["room_id"], "seat_rejoined") == [
            {"seat": "B", "agent": "unnamed agent"}
        ]

    with server(service) as base:
        asyncio.run(go(base))


def test_a_release_by_whoever_held_the_page_is_in_the_brief_and_the_join(
    tmp_path: Path,
) -> None:
    """Review 3, findings 2 and 5: A's side took seat B, sealed B's card on B's page, released
    the seat and forwarded the fresh invite; the real B joined with no contest, and the brief
    said nothing of the release. Now the real B's join is told who held the seat and that its
    card was sealed before, and both briefs show the release, the page that acted and how the
    card had been sealed."""
    service = sqlite(tmp_path)
    fake = {"principal": {"name": "Bo"}, "goal": "Sell chairs", "must_haves": ["above 1 EUR"]}

    async def go(base: str) -> None:
        headers = {"Origin": base, "Sec-Fetch-Site": "same-origin"}
        async with mcp_client(base) as a, mcp_client(base) as b, httpx2.AsyncClient() as web:
            made = await create(a)
            _, pages = await join(a, made["invite_link_for_counterpart"], "mallory")
            posted = await web.post(
                pages[0] + "/card", data={"card": json.dumps(fake)}, headers=headers
            )
            assert posted.status_code == 303
            posted = await web.post(pages[0] + "/release", data={"release": "yes"}, headers=headers)
            (fresh,) = re.findall(_SEAT_LINK, posted.text.replace("&amp;", "&"))
            joined, more = await join(b, fresh, "bo-agent")
            assert more == []
            notice = joined["seat_notice"]
            assert "held by agent mallory" in notice
            assert "sealed before the release" in notice
            await call(a, "seal_intent_card", {"link": made["your_link"], "card": CARD_A})
            offer = {"message": "Offer.", "status": "continue", "proposal": {"terms": ["2 EUR"]}}
            await call(a, "send_envelope", {"link": made["your_link"], **offer})
            await call(
                b,
                "send_envelope",
                {"link": joined["your_link"], "message": "Yes.", "status": "agree"},
            )
            for link in (made["your_link"], joined["your_link"]):
                brief = await call(
                    b if link != made["your_link"] else a, "get_brief", {"link": link}
                )
                (release,) = brief["brief"]["parties"]["B"]["releases"]
                assert release["agent"] == "mallory"
                assert release["by"]["agent"] == "mallory"
                assert release["sealed_by"]["link"] == "principal"
                assert "**Seat B was released**" in brief["markdown"]
                assert "its card had been sealed before, via web" in brief["markdown"]

    with server(service) as base:
        asyncio.run(go(base))


def test_pxp_serve_takes_the_per_client_wait_cap() -> None:
    from pxp._cli import build_parser
    from pxp._server_cli import server_config

    args = build_parser().parse_args(["serve", "--max-waiters-per-client", "3"])
    assert server_config(args).max_waiters_per_client == 3
    assert server_config(build_parser().parse_args(["serve"])).max_waiters_per_client == 16


@pytest.mark.parametrize("via", ["mcp", "web"])
def test_a_claim_resting_on_a_relayed_answer_says_so_in_the_brief(via: str) -> None:
    """Review 3, finding 9: a stated claim citing an amendment its proxy relayed read
    "stated from amendments[0], verified" in the depends-on list, without the marker the
    answer itself carries."""
    room, now = active_room()
    room.send("A", msg("escalate", escalation={"question": "Warranty?", "reason": "r"}), now=now())
    room.answer("A", "The bike has a 5-year warranty", now=now(), via=via)
    claim = {"text": "The bike has a 5-year warranty", "origin": "stated", "ref": "amendments[0]"}
    proposal = {"terms": ["440 EUR"], "depends_on": ["new1"]}
    room.send("A", msg(claims=[claim], proposal=proposal), now=now())
    room.send("B", msg("agree", reviews=[{"claim_id": "A2.1", "verdict": "accept"}]), now=now())
    brief = room.brief()
    (dep,) = brief["depends_on"]
    text = pxp.brief_markdown(brief)
    line = next(x for x in text.splitlines() if x.startswith("- A2.1"))
    if via == "mcp":
        assert dep["via"] == "mcp"
        assert "stated from amendments[0] (relayed by the proxy (mcp))" in line
    else:
        assert "via" not in dep
        assert "relayed" not in line


@pytest.mark.parametrize(
    ("kind", "data", "refusal"),
    [
        ("seat_contested", {"seat": "B", "agent": " "}, ("agent_invalid", None)),
        ("seat_contested", {"seat": "B", "agent": "x" * 201}, ("agent_invalid", None)),
        (
            "seat_contested",
            {"seat": "B", "agent": "x", "note": "extra"},
            ("import_invalid", "entry_members"),
        ),
        ("seat_rejoined", {"seat": "B", "agent": ""}, ("agent_invalid", None)),
        ("seat_contested", {"seat": "A", "agent": "x"}, ("seat_invalid", None)),
        (
            "seat_released",
            {"seat": "B", "agent": "sneaky", "via": "web"},
            ("import_invalid", "entry_members"),
        ),
        ("seat_released", {"seat": "B", "agent": "someone else"}, ("import_invalid", "order")),
    ],
)
def test_the_import_checks_seat_entries_as_the_live_rules_do(
    kind: str, data: dict[str, Any], refusal: tuple[str, str | None]
) -> None:
    """Review 3, finding 10: the replay took any string as the agent, extra members, and any
    number of contests; each is now refused by Room.apply with the code live play gives
    (issue 25); what live play never writes (extra members, another agent released) is
    import_invalid."""
    room, now = active_room()
    room.join("B", agent="sneaky", now=now())
    export = room.export()
    ledger_ = export["ledger"]
    prev = ledger_[-1]["hash"]
    body = {"n": len(ledger_) + 1, "type": kind, "at": ledger_[-1]["at"], "data": data}
    digest = pxp.wire.sha256_hex(prev + pxp.wire.canonical(body))
    ledger_.append({**body, "prev": prev, "hash": digest})
    with pytest.raises(pxp.PxpError) as err:
        pxp.Room.from_export(export)
    assert (err.value.code, err.value.reason) == refusal


def test_the_import_refuses_a_fifth_contest() -> None:
    room, now = active_room()
    room.join("B", agent="sneaky", now=now())
    for i in range(4):
        room.contest("B", agent=f"x{i}", now=now())
    export = room.export()
    ledger_ = export["ledger"]
    prev = ledger_[-1]["hash"]
    data = {"seat": "B", "agent": "x4"}
    body = {"n": len(ledger_) + 1, "type": "seat_contested", "at": ledger_[-1]["at"], "data": data}
    ledger_.append(
        {**body, "prev": prev, "hash": pxp.wire.sha256_hex(prev + pxp.wire.canonical(body))}
    )
    assert pxp.Room.from_export(room.export()).status == "ended"
    with pytest.raises(pxp.PxpError) as err:
        pxp.Room.from_export(export)
    assert (err.value.code, err.value.reason) == ("invalid_transition", "contest_limit")
    # live play refuses a fifth contest with the same code (issue 25: one Room.apply)
    with pytest.raises(pxp.PxpError) as live:
        room.contest("B", agent="x4", now=now())
    assert (live.value.code, live.value.reason) == ("invalid_transition", "contest_limit")


# ------------------------------------------------- one agent per seat, private answers (review 2)


def _answered_service() -> tuple[Any, Any, Any]:
    from pxp.server import RoomService, SeatGrant

    svc = RoomService(clock=bike.clock())
    made = svc.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    a, b = SeatGrant(made.room_id, "A", "seat"), SeatGrant(made.room_id, "B", "seat")
    svc.join(b, "bo-agent")
    svc.seal(a, {"principal": {"name": "Ann"}, "goal": "Buy chairs", "must_haves": ["June"]}, "mcp")
    card_b = {
        "principal": {"name": "Bo"},
        "goal": "Sell chairs",
        "must_haves": ["floor 3000 EUR"],
        "escalate_when": ["Price under 4600 EUR"],
    }
    svc.seal(b, card_b, "mcp")
    svc.send(a, {"message": "4500?", "status": "continue", "proposal": {"terms": ["4500 EUR"]}})
    escalation = {"question": "May I accept 4500 EUR?", "reason": "Price under 4600 EUR"}
    svc.send(b, {"message": "asking", "status": "escalate", "escalation": escalation})
    svc.answer(SeatGrant(made.room_id, "B", "principal"), "SECRET: as low as 2600 EUR", "web")
    return svc, made.room_id, made


def test_the_other_seats_principal_answer_is_on_no_view_of_this_seat() -> None:
    from pxp.server import SeatGrant

    svc, room_id, made = _answered_service()
    a_seat, a_page = SeatGrant(room_id, "A", "seat"), SeatGrant(room_id, "A", "principal")
    assert "2600" not in json.dumps(svc.view(a_seat), ensure_ascii=False)
    page = svc.page_view(a_page)
    assert "2600" not in json.dumps(page, ensure_ascii=False)

    async def go(base: str) -> None:  # the page A's principal is served
        async with httpx2.AsyncClient() as web:
            html = (await web.get(made.link(base, "A", "principal"))).text
        assert "Bo" in html
        assert "2600" not in html

    with server(svc) as base:
        asyncio.run(go(base))
    # B's own page still shows its principal's answer as a claim
    b_page = svc.page_view(SeatGrant(room_id, "B", "principal"))
    assert any(c["id"] == "B2.0" for c in b_page["claims"])


def test_claims_seen_by_hides_the_other_principal_until_the_end() -> None:
    room, now = bike.active_room()
    room.send("A", bike.msg(), now=now())
    room.send("B", bike.msg("escalate", escalation={"question": "Go?", "reason": "r"}), now=now())
    room.answer("B", "yes, down to 300", now=now())
    assert "B2.0" in room.claims
    assert "B2.0" not in room.claims_seen_by("A")
    assert "B2.0" in room.claims_seen_by("B")


def test_a_look_alike_agent_cannot_take_the_seat_or_its_page(tmp_path: Path) -> None:
    from pxp import SqliteRoomStore
    from pxp.server import RoomService, SeatGrant, SqliteLinkStore

    db = tmp_path / "rooms.sqlite"
    svc = RoomService(SqliteRoomStore(db), SqliteLinkStore(db), clock=bike.clock())
    made = svc.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    b = SeatGrant(made.room_id, "B", "seat")
    page = svc.join(b, "bo-agent").page_token
    assert page is not None
    before = SqliteLinkStore(db).room_digests(made.room_id)
    with pytest.raises(pxp.PxpError) as err:
        svc.join(b, "b\u043e-agent")  # Cyrillic o
    assert err.value.code == "seat_taken"
    # the same name with an invisible character is the same agent: nothing is issued
    again = svc.join(b, "bo\u200b-agent").page_token
    assert again is None
    assert SqliteLinkStore(db).room_digests(made.room_id) == before
    # only the operator re-issues, and the old page stops working
    token = svc.reissue_principal_link(made.room_id, "B")
    after = SqliteLinkStore(db).room_digests(made.room_id)
    assert after[("B", "principal")] != before[("B", "principal")]
    assert token


def test_pxp_links_reissue_prints_a_new_page_link(tmp_path: Path) -> None:
    from pxp import SqliteRoomStore
    from pxp.server import RoomService, SqliteLinkStore

    db = tmp_path / "rooms.sqlite"
    svc = RoomService(SqliteRoomStore(db), SqliteLinkStore(db))
    made = svc.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    old = SqliteLinkStore(db).room_digests(made.room_id)[("A", "principal")]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pxp",
            "links",
            "reissue",
            made.room_id,
            "--seat",
            "A",
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"A principal http://127.0.0.1:8765/p/{made.room_id}/" in done.stdout
    assert SqliteLinkStore(db).room_digests(made.room_id)[("A", "principal")] != old


def test_the_brief_numbers_each_join_and_marks_a_look_alike() -> None:
    room, now = bike.active_room()
    room.join("B", agent="bo-agent", now=now())
    room.join("B", agent="b\u043e-agent", now=now())
    room.send("A", bike.msg(proposal={"terms": ["440 EUR"]}), now=now())
    room.send("B", bike.msg("agree"), now=now())
    text = pxp.brief_markdown(room.brief())
    assert "agents: #1 bo-agent, #2 b\u043e-agent (reads like #1)" in text


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_slower_process_never_overwrites_a_later_issued_link(store: str, tmp_path: Path) -> None:
    from pxp.server import MemoryLinkStore, SqliteLinkStore

    links = MemoryLinkStore() if store == "memory" else SqliteLinkStore(tmp_path / "l.sqlite")
    links.add_room("r1", {("A", "seat"): "s", ("B", "seat"): "t"})
    # process 2 issued at ledger entry 11 and wrote first; process 1 issued at 10, writes late
    assert links.set_link("r1", "B", "principal", "later", issued_at=11)
    assert not links.set_link("r1", "B", "principal", "earlier", issued_at=10)
    assert links.room_digests("r1")[("B", "principal")] == "later"
    assert links.set_link("r1", "B", "principal", "newest", issued_at=12)
    assert links.room_digests("r1")[("B", "principal")] == "newest"


def test_two_services_on_one_file_agree_with_the_ledger(tmp_path: Path) -> None:
    from pxp import SqliteRoomStore
    from pxp.server import RoomService, SeatGrant, SqliteLinkStore, check_link

    db = tmp_path / "rooms.sqlite"
    one = RoomService(SqliteRoomStore(db), SqliteLinkStore(db))
    two = RoomService(SqliteRoomStore(db), SqliteLinkStore(db))
    made = one.create_room(
        topic="t", your_principal="a", counterpart="b", counterpart_proxy="external"
    )
    first = one.join(SeatGrant(made.room_id, "B", "seat"), "bo").page_token
    token = two.reissue_principal_link(made.room_id, "B")
    assert first is not None
    room = one._load(made.room_id)
    assert room.principal_link("B") == {"issued_at": len(room.ledger), "agent": None}
    check_link(SqliteLinkStore(db), f"{made.room_id}.{token}", "principal")
    with pytest.raises(pxp.PxpError):
        check_link(SqliteLinkStore(db), f"{made.room_id}.{first}", "principal")
