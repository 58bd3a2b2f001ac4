"""``now``/``ts``: RFC 3339 text as before, or an aware datetime; a naive one is a usage error."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pytest

import handoff

ROLES = handoff.Roles.from_json(
    {
        "principal": "alice",
        "principal_side": ["alice-pa"],
        "requesters": {"*": ["bot", "registrar"]},
        "roles": {"registrar": ["registrar"]},
    }
)
ACT = handoff.ItemId("acts", "p", "k")
TEXT = "2026-10-27T10:00:00Z"
PARIS = datetime.timezone(datetime.timedelta(hours=1))
AWARE = datetime.datetime(2026, 10, 27, 11, 0, tzinfo=PARIS)  # 10:00 UTC
NAIVE = datetime.datetime(2026, 10, 27, 10, 0)


def _registry(raised: bool = True) -> handoff.Registry:
    registry = handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS)
    if raised:
        registry.add(handoff.make_raised(registry, ACT, {"text": "Pay"}, by="bot", ts=TEXT))
    return registry


def _calls() -> dict[str, Callable[[Any], Any]]:
    return {
        "make_raised": lambda t: handoff.make_raised(
            _registry(False), ACT, {"text": "Pay"}, by="bot", ts=t
        ),
        "make_amended": lambda t: handoff.make_amended(
            _registry(), ACT, {"text": "Pay more"}, by="bot", ts=t
        ),
        "make_note": lambda t: handoff.make_note(_registry(), ACT, "soon", by="bot", ts=t),
        "make_settlement": lambda t: handoff.make_settlement(
            _registry(), ACT, "done", by="alice-pa", ts=t
        ),
        "read_state_document": lambda t: handoff.markdown.read_state_document(
            "# Acts\n\n- [ ] Call the plumber\n",
            _registry(False),
            project="p",
            registrar="registrar",
            now=t,
        )[0],
    }


@pytest.mark.parametrize("name", sorted(_calls()))
def test_an_aware_datetime_is_written_as_utc_text(name: str) -> None:
    call = _calls()[name]
    from_text = call(TEXT)
    from_datetime = call(AWARE)
    assert from_datetime["ts"] == TEXT
    assert from_datetime == from_text


@pytest.mark.parametrize("name", sorted(_calls()))
@pytest.mark.parametrize("bad", [NAIVE, 1_800_000_000, None, datetime.date(2026, 10, 27)])
def test_a_naive_datetime_or_another_type_is_a_usage_error(name: str, bad: Any) -> None:
    with pytest.raises(handoff.HandoffUsageError) as caught:
        _calls()[name](bad)
    assert (caught.value.code, caught.value.reason) == ("usage", "time")


def test_microseconds_are_kept_and_text_is_passed_through() -> None:
    registry = _registry(False)
    at = datetime.datetime(2026, 10, 27, 10, 0, 0, 250_000, tzinfo=datetime.UTC)
    record = handoff.make_raised(registry, ACT, {"text": "Pay"}, by="bot", ts=at)
    assert record["ts"] == "2026-10-27T10:00:00.25Z"
    offset = "2026-10-27T11:00:00+01:00"
    kept = handoff.make_raised(registry, ACT, {"text": "Pay"}, by="bot", ts=offset)
    assert kept["ts"] == offset


def test_sync_state_document_takes_an_aware_now() -> None:
    registry = _registry(False)
    done = handoff.markdown.sync_state_document(
        "# Acts\n\n- [ ] Call the plumber\n",
        registry,
        project="p",
        registrar="registrar",
        now=AWARE,
    )
    assert [r["ts"] for r in done.records] == [TEXT]
    with pytest.raises(handoff.HandoffUsageError):
        handoff.markdown.sync_state_document(
            "# Acts\n", _registry(False), project="p", registrar="registrar", now=NAIVE
        )


@pytest.mark.parametrize("name", sorted(_calls()))
@pytest.mark.parametrize("bad", ["yesterday", "2026-10-27", "2026-10-27T10:00:00", ""])
def test_text_that_is_not_rfc_3339_is_the_callers_error(name: str, bad: str) -> None:
    """``now`` is the caller's argument: bad text is a usage error, never the record's fault."""
    with pytest.raises(handoff.HandoffUsageError) as caught:
        _calls()[name](bad)
    assert (caught.value.code, caught.value.reason) == ("usage", "time")
