"""Time (ours, issue 25): integer epoch seconds everywhere, an aware datetime accepted too.

An aware datetime is the whole seconds at or before it; a naive one names no instant, so it
is the caller's mistake (``bad_argument``/``naive_datetime``, a usage error).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import parley

from .runtime_harness import AGENT, PRINCIPAL, SERVICE_ID

NOW = 1_790_000_000
UTC_NOW = dt.datetime.fromtimestamp(NOW, tz=dt.UTC)
PARIS_NOW = UTC_NOW.astimezone(dt.timezone(dt.timedelta(hours=1)))


@pytest.mark.parametrize("now", [UTC_NOW, PARIS_NOW, UTC_NOW + dt.timedelta(microseconds=999_999)])
def test_an_aware_datetime_is_the_same_instant_as_its_epoch_seconds(now: dt.datetime) -> None:
    proof = parley.sign_proof(AGENT, aud="a", verb="ASK", target="t", ts=now)
    assert proof["ts"] == NOW
    assert parley.verify_proof(proof, aud="a", verb="ASK", target="t", now=now) == AGENT.public
    assert parley.GrantContext(SERVICE_ID, "ASK", "c", now).now == NOW  # type: ignore[arg-type]


def test_a_datetime_before_the_epoch_floors_to_the_second_before() -> None:
    before = dt.datetime(1969, 12, 31, 23, 59, 59, 500_000, tzinfo=dt.UTC)
    proof = parley.sign_proof(AGENT, aud="a", verb="ASK", target="t", ts=before)
    assert proof["ts"] == -1


def test_a_grant_minted_and_checked_with_datetimes_matches_one_with_seconds() -> None:
    caveats = [{"svc": [SERVICE_ID]}, {"exp": NOW + 60}]
    by_date = parley.mint_grant(PRINCIPAL, AGENT.public, caveats, iat=UTC_NOW, nonce="n")  # type: ignore[arg-type]
    by_int = parley.mint_grant(PRINCIPAL, AGENT.public, caveats, iat=NOW, nonce="n")
    assert by_date == by_int
    late = parley.GrantContext(SERVICE_ID, "ASK", "c", UTC_NOW + dt.timedelta(seconds=61))  # type: ignore[arg-type]
    check = parley.verify_grant(
        by_date, trusted=[PRINCIPAL.public], proof_key=AGENT.public, ctx=late
    )
    assert (check.ok, check.reason) == (False, "caveat_failed")


def test_a_service_answers_at_the_datetime_it_is_given() -> None:
    service = parley.Service(SERVICE_ID, name="Shop", clock=lambda: 0)
    (brief,) = service.handle({"parley": 1, "id": "a1", "verb": "HELLO"}, now=UTC_NOW)
    assert brief["kind"] == "BRIEF"


@pytest.mark.parametrize("bad", [1.5, "1790000000", True, None, dt.date(2026, 1, 1)])
def test_another_type_of_now_is_a_usage_error(bad: object) -> None:
    proof = parley.sign_proof(AGENT, aud="a", verb="ASK", target="t", ts=NOW)
    with pytest.raises(parley.ParleyUsageError) as caught:
        parley.verify_proof(proof, aud="a", verb="ASK", target="t", now=bad)  # type: ignore[arg-type]
    assert (caught.value.code, caught.value.reason) == ("bad_argument", "bad_clock")


# ---------------------------------------------------------------- every public time argument

CONSENT = {
    "proposal": "p1",
    "hash": "3YBSE3lWje0kWnzf3PaGMr3CI3aoO1qdYRLxUkmOJVU",
    "service": SERVICE_ID,
    "capability": "shop.buy",
    "principal": PRINCIPAL.public,
    "summary": "one thing",
    "expires": NOW + 600,
}
HELLO = {"parley": 1, "id": "a1", "verb": "HELLO"}


def _handles_at(when: object) -> object:
    store = parley.lens.MemoryHandleStore()
    parley.lens.park(store, {"h_x": list(range(50))}, key=None, now=when)  # type: ignore[arg-type]
    return parley.lens.expand(store, "h_x", 10_000, key=None, now=when)  # type: ignore[arg-type]


def _state_at(when: object) -> object:
    store = parley.stores.MemoryStore()
    parley.stores.load_state(store, {}, now=when)  # type: ignore[arg-type]
    return store.proposal("p1", now=NOW)


# Each public entry point that takes a time, called with the given time; its result must
# not depend on whether the time came as epoch seconds or as the same aware instant.
TIME_ENTRY_POINTS = {
    "sign_proof(ts=)": lambda t: parley.sign_proof(AGENT, aud="a", verb="ASK", target="t", ts=t),
    "verify_proof(now=)": lambda t: parley.verify_proof(
        parley.sign_proof(AGENT, aud="a", verb="ASK", target="t", ts=NOW),
        aud="a",
        verb="ASK",
        target="t",
        now=t,
    ),
    "GrantContext(now)": lambda t: parley.GrantContext(SERVICE_ID, "ASK", "c", t).now,
    "GrantContext(now=)": lambda t: parley.GrantContext(SERVICE_ID, "ASK", "c", now=t),
    "mint_grant(iat=)": lambda t: parley.mint_grant(PRINCIPAL, AGENT.public, [], iat=t, nonce="n"),
    "delegate(iat=)": lambda t: parley.delegate(
        parley.mint_grant(PRINCIPAL, AGENT.public, [], iat=NOW, nonce="n"),
        AGENT,
        PRINCIPAL.public,
        [],
        iat=t,
    ),
    "mint_consent_grant(iat=)": lambda t: parley.mint_consent_grant(
        PRINCIPAL, CONSENT, AGENT.public, iat=t, nonce="n"
    ),
    "Context(now=)": lambda t: parley.Context(SERVICE_ID, now=t, frame=HELLO).now,
    "Service.handle(now=)": lambda t: parley.Service(SERVICE_ID, name="S").handle(HELLO, now=t),
    "Service.recover(now=)": lambda t: parley.Service(SERVICE_ID, name="S").recover(now=t),
    "lens.park/expand(now=)": _handles_at,
    "stores.load_state(now=)": _state_at,
}


@pytest.mark.parametrize("entry", sorted(TIME_ENTRY_POINTS))
def test_every_public_time_argument_takes_seconds_or_an_aware_datetime(entry: str) -> None:
    call = TIME_ENTRY_POINTS[entry]
    assert call(NOW) == call(UTC_NOW) == call(PARIS_NOW)


class _BrokenZone(dt.tzinfo):
    """A time zone whose offset is not a timedelta (an application's broken tzinfo)."""

    def __init__(self, offset: object) -> None:
        self.offset = offset

    def utcoffset(self, when: dt.datetime | None) -> Any:
        return self.offset

    def dst(self, when: dt.datetime | None) -> None:
        return None


class _DividingZone(dt.tzinfo):
    """A time zone whose offset computation fails."""

    def utcoffset(self, when: dt.datetime | None) -> dt.timedelta:
        return dt.timedelta(seconds=1 // 0)

    def dst(self, when: dt.datetime | None) -> None:
        return None


@pytest.mark.parametrize("entry", sorted(TIME_ENTRY_POINTS))
@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (dt.datetime(2026, 12, 2, 8, 0, tzinfo=_BrokenZone("+01:00")), "bad_clock"),
        (dt.datetime(2026, 12, 2, 8, 0, tzinfo=_DividingZone()), "bad_clock"),
        (dt.datetime(2026, 12, 2, 8, 0), "naive_datetime"),
        (1.5, "bad_clock"),
        ("1790000000", "bad_clock"),
        (True, "bad_clock"),
        (2**60, "bad_clock"),
    ],
)
def test_every_public_time_argument_refuses_other_values_as_usage_errors(
    entry: str, bad: object, reason: str
) -> None:
    with pytest.raises(parley.ParleyUsageError) as caught:
        TIME_ENTRY_POINTS[entry](bad)
    assert (caught.value.code, caught.value.reason) == ("bad_argument", reason)


def test_the_public_time_arguments_are_annotated_to_take_a_datetime() -> None:
    import inspect

    functions = [
        parley.sign_proof,
        parley.verify_proof,
        parley.mint_grant,
        parley.delegate,
        parley.mint_consent_grant,
        parley.GrantContext,
        parley.Context,
        parley.Service.handle,
        parley.Service.recover,
        parley.lens.park,
        parley.lens.expand,
        parley.stores.load_state,
    ]
    for function in functions:
        params = inspect.signature(function).parameters
        (name,) = [n for n in ("now", "iat", "ts") if n in params]
        assert "datetime" in str(params[name].annotation), (function, params[name].annotation)
