"""A join retry (spec §9a) against what lands between its check and its save (review
pxp-adv2, findings 1 to 4).

Real stores: one SQLite file, and one PostgreSQL database (a throwaway cluster). The
operator's commands run on a store object of their own (their own connection, as the
``pxp links`` CLI in another process would); the race is forced by running them right
after the retry's check (a wrapper round ``RoomService._retried``) and before its save.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

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

JOIN_ID = "bo-join-7f3c9a1e5d2b4c68"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


Setup = tuple[RoomService, LinkStore, Clock, RoomService]


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., Setup]:
    """``make(link_ttl=...)``: a service on real stores, the operator's own link store on
    the same database, the clock, and a second service (another replica: its own stores,
    its own connections) on the same database."""

    def make(link_ttl: timedelta | None = timedelta(days=30)) -> Setup:
        clock = Clock()
        if request.param == "sqlite":
            db = tmp_path / "rooms.sqlite"
            service, replica = (
                RoomService(
                    pxp.SqliteRoomStore(db), SqliteLinkStore(db), clock=clock, link_ttl=link_ttl
                )
                for _ in range(2)
            )
            return service, SqliteLinkStore(db), clock, replica
        from pxp.postgres import PostgresLinkStore, PostgresRoomStore

        url = request.getfixturevalue("postgres_url")
        service, replica = (
            RoomService(
                PostgresRoomStore(url), PostgresLinkStore(url), clock=clock, link_ttl=link_ttl
            )
            for _ in range(2)
        )
        return service, PostgresLinkStore(url), clock, replica

    return make


def _joined(service: RoomService) -> tuple[MintedLinks, SeatGrant, str]:
    made = service.create_room(
        topic="Chairs", your_principal="Ann", counterpart="Bo", counterpart_proxy="external"
    )
    grant = service.grant(made.link("http://x", "B", "invite"), ("seat", "invite"))
    first = service.join(grant, "bo-agent", join_id=JOIN_ID)
    assert first.seat_token is not None
    return made, grant, first.seat_token


def _between(service: RoomService, step: Callable[[], object]) -> list[str]:
    """Run ``step`` once, right after the retry's check (before its save)."""
    checked = service._retried
    ran: list[str] = []

    def retried(*args: object, **kwargs: object) -> object:
        out = checked(*args, **kwargs)  # type: ignore[arg-type]
        if not ran:
            ran.append("ran")
            step()
        return out

    service._retried = retried  # type: ignore[method-assign]
    return ran


def _rows(links: LinkStore, room_id: str) -> dict[tuple[str, str], Any]:
    return {(r.seat, r.kind): r for r in links.rows(room_id) if r.seat == "B"}


def _types(service: RoomService, room_id: str) -> list[str]:
    return [e["type"] for e in service.export(room_id)["ledger"]]


def test_an_operator_revoke_between_check_and_save_stands(stores: Callable[..., Setup]) -> None:
    """``pxp links revoke --seat B`` lands after the retry's check: the retry is refused as
    the revoked invite is (``link_revoked``), the rows stay revoked, the ledger is
    unchanged (before: the retry rewrote them live and its seat link worked)."""
    service, operator, *_ = stores()
    made, grant, _ = _joined(service)
    ledger = _types(service, made.room_id)
    ran = _between(service, lambda: operator.revoke(made.room_id, seat="B"))
    with pytest.raises(PxpError) as refused:
        service.join(grant, "bo-agent", join_id=JOIN_ID)
    assert ran == ["ran"]
    assert refused.value.code == "link_revoked"
    assert all(row.revoked for row in _rows(operator, made.room_id).values())
    assert _types(service, made.room_id) == ledger


def test_a_seat_link_revoke_between_check_and_save_makes_it_a_contest(
    stores: Callable[..., Setup],
) -> None:
    """Only B's seat link is revoked in between; the invite is still good: the live rule
    for a seat link that was revoked applies (the presentation contests the seat), and
    the seat link stays revoked."""
    service, operator, *_ = stores()
    made, grant, seat_token = _joined(service)
    _between(service, lambda: operator.revoke(made.room_id, seat="B", kind="seat"))
    with pytest.raises(PxpError) as refused:
        service.join(grant, "bo-agent", join_id=JOIN_ID)
    assert refused.value.code == "seat_contested"
    assert _rows(operator, made.room_id)[("B", "seat")].revoked
    assert _types(service, made.room_id)[-1] == "seat_contested"
    own = MintedLinks(made.room_id, {("B", "seat"): seat_token}).link("http://x", "B", "seat")
    with pytest.raises(PxpError, match="revoked"):
        service.grant(own, "seat")


def test_a_release_between_check_and_save_stands(stores: Callable[..., Setup]) -> None:
    """B's principal releases the seat (on another replica) after the retry's check: the
    released agent gets no live seat link, and the old invite does not join the freed
    seat."""
    service, operator, _, other = stores()
    made, grant, _ = _joined(service)
    _between(service, lambda: other.release(SeatGrant(made.room_id, "B", "principal")))
    with pytest.raises(PxpError) as refused:
        service.join(grant, "bo-agent", join_id=JOIN_ID)
    assert refused.value.code in ("link_revoked", "link_unknown")
    rows = _rows(operator, made.room_id)
    assert rows[("B", "seat")].revoked
    assert service.export(made.room_id)["seats"]["B"]["agent"] is None
    assert _types(service, made.room_id)[-1] == "seat_released"


def test_an_expiry_set_between_check_and_save_is_kept(stores: Callable[..., Setup]) -> None:
    """The operator shortens B's links in between: the retry is redone and answered, and
    the expiry the operator set stands."""
    service, operator, *_ = stores()
    made, grant, _ = _joined(service)
    soon = "2026-01-01T01:00:00.000Z"
    _between(service, lambda: operator.set_expiry(made.room_id, soon, seat="B"))
    again = service.join(grant, "bo-agent", join_id=JOIN_ID)
    assert again.seat_token is not None
    rows = _rows(operator, made.room_id)
    assert rows[("B", "seat")].expires_at == soon
    assert rows[("B", "principal")].expires_at == soon


@pytest.mark.parametrize("ttl", [timedelta(days=30), None])
def test_a_retry_keeps_the_expiry_the_links_had(
    stores: Callable[..., Setup], ttl: timedelta | None
) -> None:
    """An expiry the operator set before the retry is kept (before: now + ttl, or never)."""
    service, operator, clock, _ = stores(link_ttl=ttl)
    made, grant, _ = _joined(service)
    soon = "2026-01-01T01:00:00.000Z"
    assert operator.set_expiry(made.room_id, soon, seat="B") == 3
    clock.now += timedelta(seconds=30)
    assert service.join(grant, "bo-agent", join_id=JOIN_ID).seat_token is not None
    rows = _rows(operator, made.room_id)
    assert rows[("B", "seat")].expires_at == soon
    assert rows[("B", "principal")].expires_at == soon


def test_no_retry_once_the_seat_was_contested(stores: Callable[..., Setup]) -> None:
    """A contest after the join means the invite is known to two parties: the right
    join_id is then refused too, also past the contest cap (finding 2)."""
    service, operator, *_ = stores()
    made, grant, _ = _joined(service)
    for i in range(6):  # past MAX_CONTESTS_PER_SEAT: later guesses are not recorded
        with pytest.raises(PxpError, match="seat_contested"):
            service.join(grant, "bo-agent", join_id=f"a-wrong-guess-{i:04d}-xyz")
    before = _rows(operator, made.room_id)
    with pytest.raises(PxpError) as refused:
        service.join(grant, "bo-agent", join_id=JOIN_ID)
    assert refused.value.code == "seat_contested"
    assert _rows(operator, made.room_id) == before


def test_the_join_id_digest_is_bound_to_room_and_seat(stores: Callable[..., Setup]) -> None:
    """The same join_id in two rooms is stored as two digests (no table serves every
    room), and a row written before the binding (the plain digest) still retries."""
    service, operator, *_ = stores()
    one, grant, _ = _joined(service)
    two, _, _ = _joined(service)
    first = _rows(operator, one.room_id)[("B", "seat")].joined_by
    second = _rows(operator, two.room_id)[("B", "seat")].joined_by
    assert first is not None
    assert second is not None
    assert first != second
    plain = hashlib.sha256(("pxp-join:" + JOIN_ID).encode()).hexdigest()
    assert plain not in (first, second)
    # a row of the earlier v2 layout: the unbound digest of the same join_id
    row = _rows(operator, one.room_id)[("B", "seat")]
    assert operator.set_link(
        one.room_id,
        "B",
        "seat",
        row.digest,
        expires_at=row.expires_at,
        issued_at=row.issued_at,
        joined_by=plain,
    )
    assert service.join(grant, "bo-agent", join_id=JOIN_ID).seat_token is not None


def _memory_joined(
    rooms: pxp.MemoryRoomStore,
) -> tuple[RoomService, MemoryLinkStore, str, SeatGrant]:
    links = MemoryLinkStore()
    service = RoomService(rooms, links, clock=Clock())
    made, grant, _ = _joined(service)
    return service, links, made.room_id, grant


def test_split_stores_a_revoke_before_the_save_stands() -> None:
    """Separate room and link stores (no shared transaction): a revoke between the check
    and the save is seen just before the links are written; the retry is refused."""
    service, links, room_id, grant = _memory_joined(pxp.MemoryRoomStore())
    _between(service, lambda: links.revoke(room_id, seat="B"))
    with pytest.raises(PxpError) as refused:
        service.join(grant, "bo-agent", join_id=JOIN_ID)
    assert refused.value.code == "link_revoked"
    assert all(row.revoked for row in _rows(links, room_id).values())


def test_split_stores_a_failed_save_does_not_undo_a_revoke() -> None:
    """Separate stores: the retry wrote its links, the operator revoked B's seat link,
    then the room's save failed: putting the links back leaves the revoke in place
    (before: the row as it was before the retry came back live)."""
    armed: list[MemoryLinkStore] = []

    class Failing(pxp.MemoryRoomStore):
        def save(self, room: pxp.Room) -> None:
            if armed:
                armed[0].revoke(room.id, seat="B", kind="seat")
                raise OSError("injected room save failure")
            super().save(room)

    service, links, room_id, grant = _memory_joined(Failing())
    armed.append(links)
    with pytest.raises(OSError, match="injected"):
        service.join(grant, "bo-agent", join_id=JOIN_ID)
    assert _rows(links, room_id)[("B", "seat")].revoked
