"""Acts and Decisions plug into the core; §12 classes; observers agree whatever the order."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import handoff

from .ext_fixtures import ROLES, TS, ed_key, raised, rec, registry, settlement


def test_extension_tables_only_restrict_the_core() -> None:
    for ext in (handoff.acts.ACTS, handoff.decisions.DECISIONS):
        for type_, origin in ext.pairs:
            assert (type_, origin) in handoff.records.CORE_PAIRS or origin in ext.roles
            assert ext.pairs[(type_, origin)] in handoff.schema_names()
    assert handoff.acts.ACTS.policy == "keep"
    assert handoff.decisions.DECISIONS.policy == "stop"
    assert ("settled", "registrar") not in handoff.acts.ACTS.pairs


def _keywords(node: object) -> set[str]:
    if not isinstance(node, dict):
        return set()
    found = set(node)
    for name, sub in node.items():
        if name == "properties":
            for inner in sub.values():
                found |= _keywords(inner)
        elif name == "items":
            found |= _keywords(sub)
    return found


def test_extension_schemas_use_only_the_allowed_keywords() -> None:
    names = [n for n in handoff.schema_names() if n.startswith(("acts/", "decisions/"))]
    assert len(names) >= 28
    annotations = {"$schema", "title", "description"}
    for name in names:
        assert (
            _keywords(handoff.load_schema(name)) <= handoff.schemas.ALLOWED_KEYWORDS | annotations
        )


@pytest.mark.parametrize("fast", [True, False])
def test_both_validators_agree_on_act_terms(fast: bool) -> None:
    good = raised()
    handoff.schemas.check_schema("acts/raised.requester.json", good, fast=fast)
    bad = {**good, "terms": {**good["terms"], "amount": 1.0}}
    with pytest.raises(handoff.HandoffError):
        handoff.schemas.check_schema("acts/raised.requester.json", bad, fast=fast)


def test_option_status() -> None:
    old = {"options": [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}]}
    assert handoff.decisions.option_status("a", old, old) == "current"
    assert (
        handoff.decisions.option_status("a", old, {"options": [{"id": "a", "text": "A2"}]})
        == "changed"
    )
    assert (
        handoff.decisions.option_status("a", old, {"options": [{"id": "b", "text": "B"}]}) == "gone"
    )
    assert handoff.decisions.option_status("a", None, old) == "unknown"
    assert handoff.decisions.option_status("free", None, None) == "current"


def test_decision_outcome_against_terms() -> None:
    terms = {"options": [{"id": "a", "text": "A"}], "free_answer": False}
    handoff.decisions.check_decision_outcome({"outcome": "a"}, terms)
    handoff.decisions.check_decision_outcome({"outcome": "declined"}, terms)
    for record, reason in [
        ({"outcome": "b"}, "outcome_not_offered"),
        ({"outcome": "free", "answer": "x"}, "free_answer_not_allowed"),
        ({"outcome": "free"}, "answer_missing"),
        ({"outcome": "a", "answer": "x"}, "answer_unexpected"),
    ]:
        with pytest.raises(handoff.HandoffError) as info:
            handoff.decisions.check_decision_outcome(record, terms)
        assert info.value.reason == reason


def test_principal_side_config_from_json() -> None:
    side = handoff.PrincipalSide.from_json(
        {"mandates": {"m1": {"delegates": ["bot"], "exts": ["acts"]}}, "verifiable": True}
    )
    assert side.mandates["m1"].delegates == frozenset({"bot"})
    for bad in [[], {"mandates": []}, {"mandates": {"m": {"delegates": "bot"}}}, {"jwks": 1}]:
        with pytest.raises(handoff.HandoffError) as info:
            handoff.PrincipalSide.from_json(bad)
        assert info.value.code == "config"


def test_verifiable_side_end_to_end() -> None:
    key = ed_key()
    side = handoff.PrincipalSide(jwks=handoff.public_jwks(key), verifiable=True)
    reg = registry()
    reg.add(raised())
    record = settlement(reg)
    with pytest.raises(handoff.HandoffError) as info:
        handoff.check_principal_side_record(record, reg, side)
    assert info.value.reason == "proof_missing"
    signed = handoff.attach_proof(record, key)
    handoff.check_principal_side_record(signed, reg, side)
    reg.add(signed)
    assert reg.state(handoff.ItemId("acts", "web", "k1")).state == "settled"


def _records() -> list[dict[str, object]]:
    reg = registry()
    need = raised()
    reg.add(need)
    first = handoff.attach_proof(settlement(reg), ed_key())
    amended = rec(
        "n2",
        "amended",
        "requester",
        "agent-1",
        terms={"text": "Pay the hosting invoice", "amount": "99.00", "currency": "EUR"},
        terms_rev=2,
        supersedes=["n1"],
    )
    claim = rec("c1", "claimed", "agent", "pa-bot", outcome="failed")
    other = raised("m1", "k2")
    return [need, first, amended, claim, other]


RECORDS = _records()
JWKS = handoff.public_jwks(ed_key())


def _observe(records: list[dict[str, object]]) -> list[dict[str, object]]:
    reg = handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS)
    return handoff.observe(records, reg, jwks=JWKS)


EXPECTED = _observe(RECORDS)


def test_observer_report() -> None:
    first = EXPECTED[0]
    assert first["state"] == "settled"
    assert first["stale"] is True
    assert first["evidence"] == {"presented": "match", "proof": "valid"}
    assert EXPECTED[1]["state"] == "open"


@settings(max_examples=40)
@given(order=st.permutations(range(len(RECORDS))), twice=st.sets(st.integers(0, 4)))
def test_observers_agree_whatever_the_order(order: list[int], twice: set[int]) -> None:
    shuffled = [RECORDS[i] for i in order] + [RECORDS[i] for i in sorted(twice)]
    assert _observe(shuffled) == EXPECTED


def test_every_permutation_of_a_small_history() -> None:
    for order in itertools.permutations(RECORDS[:4]):
        assert _observe(list(order))[0] == EXPECTED[0]


def test_make_settlement_confirmed_adopts_the_claim() -> None:
    reg = registry()
    reg.add(raised())
    reg.add(rec("c1", "claimed", "agent", "pa-bot", outcome="done"))
    item = handoff.ItemId("acts", "web", "k1")
    record = handoff.make_settlement(
        reg,
        item,
        "done",
        by="alice-desk",
        ts="2026-11-30T10:00:00Z",
        kind="confirmed",
        proposal="c1",
    )
    assert record["adopts"] == ["c1"]
    assert record["evidence"]["proposal"] == "c1"
    handoff.check_principal_side_record(record, reg, handoff.PrincipalSide())
    reg.add(record)
    again = handoff.make_settlement(reg, item, "failed", by="alice-desk", ts="2026-11-30T11:00:00Z")
    assert again["supersedes"] == [record["id"]]
    handoff.check_principal_side_record(again, reg, handoff.PrincipalSide())


@pytest.mark.parametrize(
    ("item", "kind"),
    [
        (handoff.ItemId("acts", "web", "nope"), "principal"),
        (handoff.ItemId("acts", "web", "k1"), "attested"),
    ],
)
def test_make_settlement_refuses(item: handoff.ItemId, kind: str) -> None:
    reg = registry()
    reg.add(raised())
    with pytest.raises(handoff.HandoffError) as info:
        handoff.make_settlement(
            reg, item, "done", by="alice-desk", ts="2026-11-30T10:00:00Z", kind=kind
        )
    assert info.value.code == "settle"


def test_a_confirmed_settlement_agrees_with_one_of_the_claims_its_proposal_names() -> None:
    from .ext_fixtures import ROLES as EXT_ROLES
    from .ext_fixtures import raised as act_raised
    from .ext_fixtures import rec as act_rec

    reg = handoff.Registry(roles=EXT_ROLES, extensions=handoff.EXTENSIONS)
    reg.add(act_raised())
    honest = act_rec("c1", "claimed", "agent", "helper-1", outcome="done")
    rival = act_rec("c1", "claimed", "agent", "helper-2", outcome="declined")
    reg.add(honest)
    reg.add(rival)
    item = handoff.ItemId("acts", "web", "k1")
    record = handoff.make_settlement(
        reg, item, "done", by="alice-desk", ts=TS, kind="confirmed", proposal="c1"
    )
    handoff.check_principal_side_record(record, reg, handoff.PrincipalSide())
    wrong = handoff.make_settlement(
        reg, item, "failed", by="alice-desk", ts=TS, kind="confirmed", proposal="c1"
    )
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.check_principal_side_record(wrong, reg, handoff.PrincipalSide())
    assert caught.value.reason == "proposal_mismatch"
