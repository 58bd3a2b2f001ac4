"""Folding: order-free, idempotent, isolated per item; claims never settle; rejections."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import handoff

from .handoff_helpers import (
    EXTS,
    ROLES,
    amended,
    claimed,
    raised,
    rec,
    registry,
    reopened,
    settled,
    withdrawn,
)


def snapshot(reg: handoff.Registry) -> Any:
    return json.dumps(
        {
            "items": [s.to_json() for s in reg.states().values()],
            "conflicts": [c.to_json() for c in reg.conflicts()],
        },
        sort_keys=True,
    )


def fold_all(records: list[dict[str, Any]]) -> handoff.Registry:
    reg = registry()
    for record in records:
        reg.add(record)
    return reg


# --- a generator of admissible record sets ----------------------------------------------------


@st.composite
def record_sets(draw: st.DrawFn) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for k in range(draw(st.integers(1, 3))):
        key = f"k{k}"
        ext = draw(st.sampled_from(["demo-keep/0.3", "demo-stop/0.3"]))
        ids = [f"{key}-{i}" for i in range(draw(st.integers(1, 7)))]
        for rid in ids:
            others = [i for i in ids if i != rid] + ["ghost"]
            sup = sorted(set(draw(st.lists(st.sampled_from(others), min_size=1, max_size=2))))
            rev = draw(st.integers(1, 4))
            kind = draw(
                st.sampled_from(
                    ["raised", "amended", "withdrawn", "settled", "reopened", "claimed", "note",
                     "related"]
                )
            )  # fmt: skip
            if kind == "raised":
                r = raised(rid, key, ext=ext)
            elif kind == "amended":
                r = amended(rid, rev + 1, sup, key, ext=ext)
            elif kind == "withdrawn":
                r = withdrawn(rid, sup, key, ext=ext)
            elif kind == "settled":
                more: dict[str, Any] = {"ext": ext}
                if draw(st.booleans()):
                    more["supersedes"] = sup
                if draw(st.booleans()):
                    more["authority"] = {"kind": "attested", "decider": "alice-pa"}
                    more["evidence"] = {"basis": "seen"}
                    more["adopts"] = [i for i in ids if i != rid][:2]
                more["outcome"] = draw(st.sampled_from(["done", "declined"]))
                r = settled(rid, rev, key, **more)
            elif kind == "reopened":
                r = reopened(rid, sup, key, ext=ext)
            elif kind == "claimed":
                r = claimed(rid, key, ext=ext)
            elif kind == "note":
                r = rec(rid, "note", "agent", "helper-9", key, ext=ext, about={"key": key})
            else:
                target = {"uri": draw(st.sampled_from(["urn:x:1", "urn:x:2"]))}
                relation = {"kind": "same_as", "target": target, "active": draw(st.booleans())}
                r = rec(rid, "related", "principal", "alice-pa", key, ext=ext, relation=relation)
                if draw(st.booleans()):
                    r["supersedes"] = sup
            records.append(r)
            if draw(st.integers(0, 5)) == 0:
                variant = json.loads(json.dumps(r))
                variant["note"] = "another version"
                records.append(variant)
    return records


@settings(max_examples=120)
@given(records=record_sets(), data=st.data())
def test_fold_ignores_order_and_duplicates(
    records: list[dict[str, Any]], data: st.DataObject
) -> None:
    expected = snapshot(fold_all(records))
    shuffled = data.draw(st.permutations(records))
    doubled = shuffled + data.draw(st.lists(st.sampled_from(records), max_size=len(records)))
    assert snapshot(fold_all(doubled)) == expected
    # the functional form agrees with the registry
    states = handoff.fold(doubled, roles=ROLES, extensions=EXTS)
    assert [s.to_json() for s in states.values()] == json.loads(expected)["items"]


@settings(max_examples=120)
@given(records=record_sets(), data=st.data())
def test_adding_a_record_never_changes_another_item(
    records: list[dict[str, Any]], data: st.DataObject
) -> None:
    new = data.draw(st.sampled_from(records))
    rest = [r for r in records if r is not new]
    reg = fold_all(rest)
    before = {item: s.to_json() for item, s in reg.states().items()}
    added = reg.add(new)
    after = {item: s.to_json() for item, s in reg.states().items()}
    for item, state in before.items():
        if item != added.item:
            assert after[item] == state


@settings(max_examples=120)
@given(records=record_sets())
def test_a_claim_alone_never_settles(records: list[dict[str, Any]]) -> None:
    records = list({r["id"]: r for r in reversed(records)}.values())  # one version per id
    no_settlements = [r for r in records if r["type"] not in ("settled", "reopened")]
    for state in fold_all(no_settlements).states().values():
        assert state.state != "settled"
        assert state.outcome is None
    only_claims = [r for r in records if r["type"] == "claimed"]
    for state in fold_all(only_claims).states().values():
        assert state.state == "unknown"
    # adding claims to any set changes nothing but the claims list
    without = fold_all([r for r in records if r["type"] != "claimed"]).states()
    with_claims = fold_all(records).states()
    for item, state in without.items():
        got = with_claims[item].to_json()
        want = state.to_json()
        got["claims"] = want["claims"] = []
        got["adopted"] = want["adopted"] = []
        assert got == want


# --- the rules, one by one --------------------------------------------------------------------


def test_add_reports_status_state_and_conflicts() -> None:
    reg = registry()
    first = reg.add(raised())
    assert first.status == "accepted"
    assert first.state is not None
    assert first.state.state == "open"
    assert reg.add(raised()).status == "duplicate"
    other = raised()
    other["terms"] = {"text": "Pay twice"}
    added = reg.add(other)
    assert added.status == "conflict"
    assert [c.kind for c in added.conflicts] == ["same_id"]
    assert added.state is not None
    assert added.state.state == "conflicted"
    # the rewritten need hides the outcome: the item stays conflicted once settled
    assert reg.add(json.dumps(settled("s1"))).state.state == "conflicted"  # type: ignore[union-attr]
    ignored = reg.add(raised("z", ext="travel/0.3"))
    assert ignored.status == "ignored"
    assert ignored.state is None
    assert reg.ignored() == {"unknown_extension": 1}


def test_rejected_record_changes_nothing() -> None:
    reg = registry()
    reg.add(raised())
    before = snapshot(reg)
    bad = settled("s1")
    bad["by"] = "bot-1"
    with pytest.raises(handoff.HandoffError) as caught:
        reg.add(bad)
    assert (caught.value.code, caught.value.reason) == ("ownership", "not_principal_side")
    assert snapshot(reg) == before
    with pytest.raises(handoff.HandoffError):
        handoff.fold([raised(), bad], roles=ROLES, extensions=EXTS)


def test_state_shapes() -> None:
    reg = fold_all([raised(), amended("n2", 3, ["n1"]), settled("s1", 2)])
    state = reg.state(handoff.ItemId("demo-keep", "house", "k1"))
    assert (state.state, state.stale, state.terms_rev, state.held_terms_rev) == (
        "settled", True, 3, 3,
    )  # fmt: skip
    assert reg.state(handoff.ItemId("demo-keep", "house", "nope")).state == "unknown"
    assert len(reg) == 3
    assert [r["id"] for r in reg.records(state.item)] == ["n1", "n2", "s1"]


def test_withdrawal_policies() -> None:
    keep = fold_all([raised(), withdrawn("w1", ["n1"])]).states()
    stop = fold_all([raised(ext="demo-stop/0.3"), withdrawn("w1", ["n1"], ext="demo-stop/0.3")])
    [k] = keep.values()
    [s] = stop.states().values()
    assert (k.state, k.need_withdrawn) == ("open", True)
    assert (s.state, s.need_withdrawn) == ("withdrawn", True)


def test_extension_cannot_widen_the_table() -> None:
    with pytest.raises(handoff.HandoffError):
        handoff.Extension("x", "0.3", "act", pairs={("settled", "requester"): "p.json"})
    with pytest.raises(handoff.HandoffError):
        handoff.Extension("x", "0.3", "act", roles=frozenset({"principal"}))
    with pytest.raises(handoff.HandoffError):
        handoff.Extension.from_json(
            {"name": "x", "version": "0.3", "kind": "a", "pairs": [["note", "bot"]]}
        )
    restricted = handoff.Extension.from_json(
        {"name": "x", "version": "0.3", "kind": "a", "pairs": [["raised", "requester"]]}
    )
    reg = handoff.Registry(roles=ROLES, extensions=handoff.ExtensionRegistry([restricted]))
    reg.add(raised(ext="x/0.3"))
    with pytest.raises(handoff.HandoffError) as caught:
        reg.add(settled("s1", ext="x/0.3"))
    assert caught.value.code == "pair"


def test_extension_hook_runs() -> None:
    def needs_due(record: Any) -> None:
        if record["type"] == "raised" and "due" not in record["terms"]:
            raise handoff.HandoffError("record", "raised needs terms.due", reason="due_missing")

    ext = handoff.Extension("due", "0.3", "act", hook=needs_due)
    reg = handoff.Registry(roles=ROLES, extensions=handoff.ExtensionRegistry([ext]))
    with pytest.raises(handoff.HandoffError):
        reg.add(raised(ext="due/0.3"))
    ok = raised(ext="due/0.3")
    ok["terms"]["due"] = "2026-11-01"
    assert reg.add(ok).status == "accepted"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=300)
@given(junk=_JSON | st.dictionaries(st.sampled_from(sorted(raised())), _JSON, max_size=9))
def test_malformed_input_raises_only_handoff_error(junk: Any) -> None:
    reg = registry()
    with contextlib.suppress(handoff.HandoffError):
        reg.add(junk)
    for text in (json.dumps(junk, allow_nan=True), "{" + json.dumps(junk)):
        with contextlib.suppress(handoff.HandoffError):
            reg.add(text)


@settings(max_examples=200)
@given(
    record=record_sets().map(lambda rs: rs[0]),
    member=st.sampled_from(sorted(raised())),
    value=_JSON,
)
def test_mutated_records_raise_only_handoff_error(record: Any, member: str, value: Any) -> None:
    record[member] = value
    with contextlib.suppress(handoff.HandoffError):
        registry().add(record)


def test_record_round_trip() -> None:
    full = settled(
        "s1",
        supersedes=["s0"],
        evidence={"presented": "sha-256:" + "ab" * 32, "proof": {"vc": 1}, "x_more": 2},
        authority={"kind": "attested", "decider": "alice-pa", "x_note": "n"},
        adopts=["c1"],
        context="bulk-import",
        note="hi",
        x_private={"a": [1, 2]},
    )
    record = handoff.Record.from_json(full)
    assert record.to_json() == full
    assert record.item == handoff.ItemId("demo-keep", "house", "k1")
    assert record.authority is not None
    assert record.authority.extra == {"x_note": "n"}
    rel = rec(
        "l1",
        "related",
        "principal",
        "alice-pa",
        relation={"kind": "same_as", "target": {"uri": "urn:a"}, "active": False},
    )
    assert handoff.Record.from_json(rel).to_json() == rel
    note = rec("m1", "note", "agent", "h", about={"quote": "q"}, supersedes=[])
    assert handoff.Record.from_json(note).to_json() == note
    assert registry().add(handoff.Record.from_json(raised())).status == "accepted"
    with pytest.raises(handoff.HandoffError):
        handoff.Record.from_json({"ph": "0.3"})
    with pytest.raises(handoff.HandoffError):
        handoff.Record.from_json([])


def test_signing_input_and_digest() -> None:
    record = settled("s1", evidence={"proof": "eyJ..sig", "presented": "sha-256:" + "00" * 32})
    signed = handoff.digests.signing_input(record)
    assert b"proof" not in signed
    assert b"presented" in signed
    assert handoff.digests.digest(record).startswith("sha-256:")
    assert handoff.digests.presented_digest({"text": "Pay"}) == handoff.digests.digest(
        {"text": "Pay"}
    )
    with pytest.raises(handoff.HandoffError):
        handoff.digests.canonical({"a": 2**60})


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a":1,"a":2}', "duplicate_member"),
        ('{"a":{"b":1,"b":1}}', "duplicate_member"),
        ('{"a":Infinity}', "json_syntax"),
        ('{"a":"\\udc00"}', "lone_surrogate"),
        ('{"a":-9007199254740992}', "number_range"),
        ("[]", "not_object"),
        ("", "json_syntax"),
        (b"\xff", "json_syntax"),
        ("[" * 100000, "json_syntax"),
    ],
)
def test_parse_record_is_strict(text: str | bytes, reason: str) -> None:
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.parse_record(text)
    assert (caught.value.code, caught.value.reason) == ("parse", reason)


def test_python_objects_are_checked_like_text() -> None:
    bads: list[Any] = [
        {**raised(), "x": float("nan")},
        {**raised(), "x": 2**60},
        {**raised(), "x": object()},
        {**raised(), "x": "\ud800"},
        {**raised(), 3: 1},
    ]
    for bad in bads:
        with pytest.raises(handoff.HandoffError) as caught:
            registry().add(bad)
        assert caught.value.code == "parse"


def test_roles_configuration() -> None:
    with pytest.raises(handoff.HandoffError):
        handoff.Roles.from_json({"principal": "a", "principal_side": []})
    with pytest.raises(handoff.HandoffError):
        handoff.Roles.from_json({"principal": "a", "requesters": {"*": ["a"]}})
    with pytest.raises(handoff.HandoffError):
        handoff.Roles.from_json({"principal": "a", "requesters": {"p": "bot"}})
    roles = handoff.Roles.from_json({"principal": "a", "requesters": {"*": ["bot"]}})
    assert roles.principal_side == frozenset({"a"})
    assert roles.holds("bot", "requester", "any-project")
    assert not roles.holds("a", "agent", "p")
    assert handoff.Roles.from_json(roles.to_json()) == roles


def test_id_reused_across_items_is_reported_but_isolated() -> None:
    reg = registry()
    reg.add(raised("n1", "k1"))
    before = reg.state(handoff.ItemId("demo-keep", "house", "k1"))
    added = reg.add(raised("n1", "k2"))
    assert added.status == "accepted"
    assert [c.kind for c in added.conflicts] == ["id_reused"]
    assert reg.state(handoff.ItemId("demo-keep", "house", "k1")) == before
    assert [c.kind for c in reg.conflicts()] == ["id_reused"]
    assert [i.key for i in reg.items()] == ["k1", "k2"]


def test_registry_keeps_private_copies() -> None:
    reg = registry()
    record = raised()
    reg.add(record)
    record["terms"]["text"] = "changed behind its back"
    state = reg.state(handoff.ItemId("demo-keep", "house", "k1"))
    assert state.terms is not None
    assert state.terms["text"] == "Pay"
    held = reg.records(state.item)
    held[0]["terms"]["text"] = "again"
    assert reg.records(state.item)[0]["terms"]["text"] == "Pay"


def test_multiple_heads_reported_by_add() -> None:
    reg = registry()
    reg.add(raised())
    reg.add(amended("n2", 2, ["n1"]))
    added = reg.add(amended("n2b", 2, ["n1"]))
    assert [c.kind for c in added.conflicts] == ["multiple_heads"]
    assert added.conflicts[0].register == "need"


@pytest.mark.parametrize("order", [0, 1])
def test_highest_extension_version_sets_the_policy(order: int) -> None:
    newer = handoff.Extension("demo-keep", "0.10", "act", policy="stop")
    exts = EXTS.with_extension(newer)
    assert exts.knows_name("demo-keep")
    assert len(exts) == 3
    records = [raised(), withdrawn("w1", ["n1"], ext="demo-keep/0.10")]
    if order:
        records.reverse()
    [state] = handoff.fold(records, roles=ROLES, extensions=exts).values()
    assert (state.state, state.policy) == ("withdrawn", "stop")
    with pytest.raises(handoff.HandoffError):
        exts.with_extension(newer)


def test_check_record_verdicts() -> None:
    verdict = handoff.check_record(raised(), roles=ROLES, extensions=EXTS)
    assert verdict.to_json() == {"status": "accepted"}
    ignored = handoff.check_record({**raised(), "ph": "1.0"}, roles=ROLES, extensions=EXTS)
    assert ignored.to_json() == {"status": "ignored", "why": "unknown_version"}
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.check_record({**raised(), "ph": "v1"}, roles=ROLES, extensions=EXTS)
    assert caught.value.code == "schema"


def test_supersedes_never_reaches_into_another_item() -> None:
    """A requester of one item cannot retire another item's need by naming its id."""
    reg = fold_all([raised("a1", "k1"), raised("b1", "k2"), withdrawn("w1", ["b1"], "k1")])
    k1 = reg.state(handoff.ItemId("demo-keep", "house", "k1"))
    k2 = reg.state(handoff.ItemId("demo-keep", "house", "k2"))
    assert (k2.state, k2.need, k2.need_withdrawn) == ("open", "b1", False)
    assert k1.need in {"a1", "w1"}
    assert [c.kind for c in k1.conflicts] == ["multiple_heads"]


def test_claims_and_notes_cannot_supersede_need_records() -> None:
    sneaky = claimed("c1", supersedes=["n1"])
    [state] = fold_all([raised(), sneaky]).states().values()
    assert (state.state, state.need) == ("open", "n1")


@settings(max_examples=80)
@given(records=record_sets(), data=st.data())
def test_add_lines_equals_add(records: list[dict[str, Any]], data: st.DataObject) -> None:
    """The bulk text path folds exactly like adding records one at a time."""
    shuffled = data.draw(st.permutations(records))
    bulk = registry()
    bulk.add_lines(json.dumps(r) for r in shuffled)
    assert snapshot(bulk) == snapshot(fold_all(records))
    mixed = registry()
    half = len(shuffled) // 2
    mixed.add_many(shuffled[:half])
    mixed.add_lines(json.dumps(r).encode() for r in shuffled[half:])
    assert snapshot(mixed) == snapshot(bulk)


def test_id_reuse_is_found_after_the_bulk_path() -> None:
    reg = registry()
    reg.add_lines([json.dumps(raised("n1", "k1")), json.dumps(raised("n1", "k2"))])
    assert [c.to_json()["ids"] for c in reg.conflicts()] == [["n1"]]
    added = reg.add(raised("n1", "k3"))
    assert [c.kind for c in added.conflicts] == ["id_reused"]
    reg.add_lines([json.dumps(raised("n2", "k1"))])
    added = reg.add(raised("n2", "k4"))
    assert [c.kind for c in added.conflicts] == ["id_reused"]
    assert [c.ids for c in reg.conflicts() if c.kind == "id_reused"] == [("n1",), ("n2",)]
