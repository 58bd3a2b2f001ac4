"""A first join with an invite against a revoke, an expiry or a release that lands between
the invite's check and the join's save (spec §9a; review pxp-join, finding 1).

Real stores: one SQLite file, and one PostgreSQL database (a throwaway cluster). The
operator's command or the principal's release runs on store objects of their own (their
own connections, as another process would); the race is forced by running it right after
the join's invite check (a wrapper round ``RoomService._invite_still_good``) and before
its save. The save is then refused, the join redone on the links as they now stand, and
refused as the invite now is.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import pxp
from pxp import PxpError
from pxp.server import (
    LinkStore,
    MemoryLinkStore,
    MintedLinks,
    RoomService,
    SeatGrant,
    SqliteLinkStore,
)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


Setup = tuple[RoomService, LinkStore, RoomService]


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Setup:
    """A service on real stores, the operator's own link store on the same database, and
    a second service (another replica: its own stores and connections) on it."""
    if request.param == "sqlite":
        db = tmp_path / "rooms.sqlite"
        service, replica = (
            RoomService(pxp.SqliteRoomStore(db), SqliteLinkStore(db), clock=Clock())
            for _ in range(2)
        )
        return service, SqliteLinkStore(db), replica
    from pxp.postgres import PostgresLinkStore, PostgresRoomStore

    url = request.getfixturevalue("postgres_url")
    service, replica = (
        RoomService(PostgresRoomStore(url), PostgresLinkStore(url), clock=Clock()) for _ in range(2)
    )
    return service, PostgresLinkStore(url), replica


def _room(service: RoomService) -> tuple[MintedLinks, SeatGrant]:
    made = service.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    grant = service.grant(made.link("http://x", "B", "invite"), ("seat", "invite"))
    return made, grant


def _between(service: RoomService, step: Callable[[], object]) -> list[int]:
    """Run ``step`` once, right after the join's first invite check (before its save);
    return the list of checks made (one per attempt)."""
    check = service._invite_still_good
    calls: list[int] = []

    def checked(*args: object) -> None:
        calls.append(len(calls))
        check(*args)  # type: ignore[arg-type]
        if len(calls) == 1:
            step()

    service._invite_still_good = checked  # type: ignore[method-assign]
    return calls


def _types(service: RoomService, room_id: str) -> list[str]:
    return [e["type"] for e in service.export(room_id)["ledger"]]


def _agent_b(service: RoomService, room_id: str) -> object:
    return service.export(room_id)["seats"]["B"]["agent"]


def test_an_invite_revoked_between_check_and_save_is_not_spent(stores: Setup) -> None:
    """``pxp links revoke --seat B --kind invite`` lands after the check: the join is
    refused ``link_revoked`` (before: the agent joined with the revoked invite and got a
    live seat link and page), the ledger and the links are as the revoke left them."""
    service, operator, _ = stores
    made, grant = _room(service)
    ledger = _types(service, made.room_id)
    calls = _between(service, lambda: operator.revoke(made.room_id, seat="B", kind="invite"))
    with pytest.raises(PxpError) as refused:
        service.join(grant, "bo-agent")
    assert refused.value.code == "link_revoked"
    assert len(calls) == 2  # the save was refused and the join redone
    assert _types(service, made.room_id) == ledger
    assert _agent_b(service, made.room_id) is None
    rows = {(r.seat, r.kind): r for r in operator.rows(made.room_id)}
    assert rows[("B", "invite")].revoked
    assert ("B", "seat") not in rows
    assert ("B", "principal") not in rows


def test_an_invite_expired_between_check_and_save_is_not_spent(stores: Setup) -> None:
    """The operator ends B's links (an expiry in the past) after the check: refused
    ``link_expired``, nothing joined."""
    service, operator, _ = stores
    made, grant = _room(service)
    past = "2025-12-31T00:00:00.000Z"
    _between(service, lambda: operator.set_expiry(made.room_id, past, seat="B"))
    with pytest.raises(PxpError) as refused:
        service.join(grant, "bo-agent")
    assert refused.value.code == "link_expired"
    assert _agent_b(service, made.room_id) is None


def test_an_invite_expired_now_between_check_and_save_is_not_spent(stores: Setup) -> None:
    """``pxp links expire --in-days 0`` after the check, while the clock moves on: the redo
    reads the clock again, so the expiry (later than the join's start, earlier than the
    redo) refuses the invite (review pxp-join-2 #1: the redo used the join's first time and
    joined with a fresh 30-day seat link)."""
    service, operator, _ = stores
    made, grant = _room(service)
    clock = service._clock
    assert isinstance(clock, Clock)

    def expire_now() -> None:
        clock.now += timedelta(seconds=5)
        operator.set_expiry(made.room_id, clock.now.strftime("%Y-%m-%dT%H:%M:%S.000Z"), seat="B")
        clock.now += timedelta(seconds=1)

    calls = _between(service, expire_now)
    with pytest.raises(PxpError) as refused:
        service.join(grant, "bo-agent")
    assert refused.value.code == "link_expired"
    assert len(calls) == 2
    assert _agent_b(service, made.room_id) is None


def test_an_invite_issued_again_by_a_release_between_check_and_save(stores: Setup) -> None:
    """Seat B was released and its fresh invite handed to a new agent; the principal
    releases again (on another replica: the invite shown was lost, a third is issued)
    after the new agent's check: the second invite no longer joins (``link_unknown``)."""
    service, _, replica = stores
    made, grant = _room(service)
    service.join(grant, "bo-agent")
    page = SeatGrant(made.room_id, "B", "principal")
    second = MintedLinks(made.room_id, {("B", "invite"): replica.release(page)})
    grant2 = service.grant(second.link("http://x", "B", "invite"), ("seat", "invite"))
    _between(service, lambda: replica.release(page))
    with pytest.raises(PxpError) as refused:
        service.join(grant2, "bo-next")
    assert refused.value.code == "link_unknown"
    assert _agent_b(service, made.room_id) is None
    assert _types(service, made.room_id)[-1] == "seat_released"


def test_a_revoke_between_check_and_contest_refuses_the_contest(stores: Setup) -> None:
    """A spent invite presented again contests the seat; revoked after the check, it is
    refused as revoked instead, and no contest is recorded."""
    service, operator, _ = stores
    made, grant = _room(service)
    service.join(grant, "bo-agent")
    ledger = _types(service, made.room_id)
    _between(service, lambda: operator.revoke(made.room_id, seat="B", kind="invite"))
    with pytest.raises(PxpError) as refused:
        service.join(grant, "someone-else")
    assert refused.value.code == "link_revoked"
    assert _types(service, made.room_id) == ledger


def test_split_stores_an_invite_revoked_before_the_save_is_not_spent() -> None:
    """Separate room and link stores: the revoke is seen just before the links are
    written, and the join is refused."""
    links = MemoryLinkStore()
    service = RoomService(pxp.MemoryRoomStore(), links, clock=Clock())
    made, grant = _room(service)
    _between(service, lambda: links.revoke(made.room_id, seat="B", kind="invite"))
    with pytest.raises(PxpError) as refused:
        service.join(grant, "bo-agent")
    assert refused.value.code == "link_revoked"
    assert _agent_b(service, made.room_id) is None
    assert {(r.seat, r.kind) for r in links.rows(made.room_id)} == {
        ("A", "principal"),
        ("A", "seat"),
        ("B", "invite"),
    }
