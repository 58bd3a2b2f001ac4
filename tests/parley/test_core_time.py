"""Time (ours, issue 25): integer epoch seconds everywhere, an aware datetime accepted too.

An aware datetime is the whole seconds at or before it; a naive one names no instant, so it
is the caller's mistake (``bad_argument``/``naive_datetime``, a usage error).
"""

from __future__ import annotations

import datetime as dt

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
