"""Sans-IO parts: the line splitter, the params checker, the agent's reply correlation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley

from .runtime_harness import AGENT, PRINCIPAL, load_shop

NOW = 1_790_000_000


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b), max_size=8),
    st.lists(st.integers(min_value=1, max_value=17), min_size=1, max_size=10),
)
def test_line_buffer_is_independent_of_chunking(lines: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    buffer = parley.wire.LineBuffer(limit=20)
    out: list[bytes | None] = []
    start, index = 0, 0
    while start < len(stream):
        size = cuts[index % len(cuts)]
        out.extend(buffer.feed(stream[start : start + size]))
        start += size
        index += 1
    expected = [None if len(line) > 20 else line for line in lines if line.strip()]
    assert out == expected


def test_params_nested_arrays_and_times() -> None:
    schema = {
        "items": [{"sku": "string", "qty": "int"}],
        "when?": "datetime",
        "day?": "date",
        "tags?": "string[]",
        "where?": {"city": "string"},
    }
    good = {
        "items": [{"sku": "A", "qty": 1}],
        "when": "2026-09-24T15:00:00Z",
        "day": "2026-09-24",
        "tags": ["a"],
        "where": {"city": "Oslo"},
    }
    assert parley.service.check_params(schema, good) == good
    for bad, reason in (
        ({"items": [{"sku": "A", "qty": True}]}, "bad_type"),
        ({"items": {"sku": "A"}}, "bad_type"),
        ({"items": [], "when": "tomorrow"}, "bad_type"),
        ({"items": [], "day": "2026-13-01"}, "bad_type"),
        ({"items": [], "tags": "a"}, "bad_type"),
        ({"items": [], "where": {}}, "missing_param"),
        ({"items": [], "where": {"city": "x", "zip": 1}}, "unknown_param"),
    ):
        with pytest.raises(parley.service.ParamsError) as caught:
            parley.service.check_params(schema, bad)
        assert caught.value.reason == reason
    with pytest.raises(parley.service.ParamsError) as caught:
        parley.service.check_params(schema, {"items": [], "tags": "a"})
    assert caught.value.fix == [{"say": "wrap it in a list", "params": {"tags": ["a"]}}]


def test_merge_patch_follows_rfc7396() -> None:
    assert parley.service.merge_patch(
        {"a": 1, "b": {"c": 2}}, {"b": {"c": None, "d": 3}, "e": 4}
    ) == {
        "a": 1,
        "b": {"d": 3},
        "e": 4,
    }
    assert parley.service.merge_patch({"a": 1}, [1]) == [1]


def test_bad_schemas_are_refused_at_declaration() -> None:
    svc = parley.Service("x", name="x")
    for schema in ({"a": "strin"}, {"a": 5}, {"a": "x|"}, {"a": [1, 2]}):
        with pytest.raises(parley.ParleyError):
            svc.ask("x.y", params=schema)(lambda p, c: None)


def test_agent_correlates_by_re_and_files_events() -> None:
    agent = parley.Agent(AGENT, service="shop.example")
    first, second = agent.ask("a.b"), agent.ask("a.c")
    event = {"parley": 1, "id": "s1", "re": second["id"], "kind": "EVENT", "message": "m"}
    assert agent.receive(event) is None
    stray = {"parley": 1, "id": "s2", "re": "nobody", "kind": "ANSWER", "data": 1}
    assert agent.receive(stray) is None
    done = agent.receive(json.dumps({**stray, "re": second["id"]}).encode())
    assert done is not None
    assert done.request is second
    assert done.events == [event]
    assert list(agent.pending) == [first["id"]]
    with pytest.raises(parley.ParleyError):
        agent.receive(b"not json")


def test_agent_builds_consent_only_from_what_it_was_shown() -> None:
    shop = load_shop().build_service(trusted=[PRINCIPAL.public], clock=lambda: NOW)
    agent = parley.Agent(AGENT, [], service="shop.example", clock=lambda: NOW)
    intent = agent.intent("shop.gift_card", {"to": "a@example.com", "usd": 5})
    offered = agent.receive(shop.handle(intent, now=NOW)[-1])
    assert offered is not None
    assert offered.reply is not None
    proposal = offered.reply["proposals"][0]
    frame = agent.commit(proposal)
    honest: dict[str, Any] = {
        "parley": 1,
        "id": "s9",
        "re": frame["id"],
        "kind": "ERROR",
        "code": "consent_required",
        "message": "m",
        "consent": parley.consent_request(
            proposal, service="shop.example", principal=PRINCIPAL.public
        ),
    }
    result = agent.receive(honest)
    assert result is not None
    assert result.consent is not None
    assert result.consent["hash"] == proposal["hash"]
    frame = agent.commit(proposal)
    lying = json.loads(json.dumps(honest))
    lying["re"] = frame["id"]
    lying["consent"]["hash"] = parley.wire.b64url_encode(bytes(32))
    result = agent.receive(lying)
    assert result is not None
    assert result.consent is None, "a swapped hash is not signed"


def test_service_can_attach_lens() -> None:
    svc = parley.Service("x.example", name="X", lens=True)
    reply = svc.handle({"parley": 1, "id": "1", "verb": "HELLO"}, now=NOW)[-1]
    assert reply["lens"].startswith("# X (x.example)")
