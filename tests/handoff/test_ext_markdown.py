"""The Acts Markdown binding: read (document → records), write (records → document), sync."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import handoff

from .ext_fixtures import TS, rec, registry, settlement

NOW = "2026-11-30T12:00:00Z"
KW = {"project": "web", "registrar": "registrar"}


def sync(text: str, reg: handoff.Registry) -> handoff.markdown.SyncResult:
    return handoff.markdown.sync_state_document(text, reg, now=NOW, **KW)


DOC = """# Relaunch

By hand.

## Acts

- [ ] Pay the hosting invoice
- [x] Sign the contract
A remark.

## Log
- [ ] outside
"""


def test_first_sync_raises_claims_and_marks() -> None:
    reg = registry()
    result = sync(DOC, reg)
    kinds = [(r["type"], r.get("outcome")) for r in result.records]
    assert kinds == [("raised", None), ("raised", None), ("claimed", "done")]
    assert all(r["by"] == "registrar" for r in result.records)
    assert result.records[2]["origin"] == "registrar"
    assert "<!-- act:act-" in result.document
    assert "- [ ] outside\n" in result.document
    assert "A remark.\n" in result.document
    assert "<!-- acts:listed " in result.document
    states = reg.states()
    assert all(s.state == "open" for s in states.values())  # a claim never settles


def test_settled_act_is_ticked_and_stale_marked() -> None:
    reg = registry()
    first = sync(DOC, reg)
    key = first.records[0]["key"]
    reg.add(settlement(reg, key=key))
    amended_doc = first.document.replace("Pay the hosting invoice", "Pay the hosting invoice now")
    result = sync(amended_doc, reg)
    assert [r["type"] for r in result.records] == ["amended"]
    line = next(x for x in result.document.split("\n") if key in x and "act:" in x)
    assert line.startswith("- [x] Pay the hosting invoice now")
    assert "stale" in line


def test_withdrawal_only_when_the_requester_says_so() -> None:
    reg = registry()
    first = sync(DOC, reg)
    key = first.records[0]["key"]
    gone = "\n".join(x for x in first.document.split("\n") if f"act:{key}" not in x)
    result = sync(gone, reg)
    assert [(r["type"], r.get("outcome")) for r in result.records] == [("claimed", "removed")]
    assert f"act:{key}" in result.document  # the act stays in view
    state = reg.state(handoff.ItemId("acts", "web", key))
    assert state.state == "open"
    assert not state.need_withdrawn
    reg.add(
        rec(
            "w1",
            "withdrawn",
            "requester",
            "agent-1",
            key,
            reason="no_longer_needed",
            supersedes=[state.need],
        )
    )
    again = sync(result.document, reg)
    assert again.records == ()
    assert "withdrawn by the requester" in again.document  # keep policy: still shown


def test_a_rejected_record_leaves_the_registry_unchanged() -> None:
    roles = handoff.Roles.from_json(
        {"principal": "alice", "principal_side": ["alice-desk"], "requesters": {"web": ["x"]}}
    )
    reg = handoff.Registry(roles=roles, extensions=handoff.EXTENSIONS)
    with pytest.raises(handoff.HandoffError) as info:
        sync(DOC, reg)
    assert info.value.code == "ownership"
    assert len(reg) == 0


def test_not_text_is_an_error() -> None:
    with pytest.raises(handoff.HandoffError):
        handoff.markdown.parse_state_document(b"## Acts")  # type: ignore[arg-type]
    with pytest.raises(handoff.HandoffError):
        handoff.markdown.parse_state_document("a\x00b")


def test_crlf_lines_keep_their_endings() -> None:
    reg = registry()
    doc = "## Acts\r\n- [ ] Renew the domain\r\nnote\r\n"
    out = sync(doc, reg).document
    assert "note\r\n" in out
    assert out.split("\n")[1].endswith("-->\r")


# --- properties -------------------------------------------------------------------------------

WORDS = st.sampled_from(["Pay", "sign", "the", "invoice", "lease", "42", "EUR", "(urgent)", "é"])
TEXT = st.lists(WORDS, min_size=1, max_size=4).map(" ".join)
ACT = st.builds(
    lambda box, text, bullet: f"{bullet} [{box}] {text}",
    st.sampled_from([" ", "x", "X"]),
    TEXT,
    st.sampled_from(["-", "*", "+"]),
)
HAND = st.one_of(
    st.just(""),
    st.text(alphabet="abcXYZ .,:;!?()0123456789", max_size=20).map(lambda t: "Note " + t),
    st.just("- a plain bullet"),
    st.just("  indented prose"),
    st.just("### A sub-heading"),
    st.just("- [ ] "),
)
SECTION = st.lists(st.one_of(ACT, HAND), max_size=8)
OUTSIDE = st.lists(HAND, max_size=3)


def _doc(before: list[str], section: list[str], after: list[str], ending: str) -> str:
    lines = [*before, "## Acts", *section]
    if after:
        lines += ["## After", *after]
    return "\n".join(lines) + ending


@settings(max_examples=60, deadline=None)
@given(before=OUTSIDE, section=SECTION, after=OUTSIDE, ending=st.sampled_from(["", "\n"]))
def test_rewriting_from_its_own_records_is_a_fixed_point(
    before: list[str], section: list[str], after: list[str], ending: str
) -> None:
    reg = registry()
    first = sync(_doc(before, section, after, ending), reg)
    second = sync(first.document, reg)
    assert second.records == ()
    assert second.document == first.document
    assert handoff.markdown.write_state_document(first.document, reg, **KW) == first.document


@settings(max_examples=60, deadline=None)
@given(
    before=OUTSIDE,
    section=SECTION,
    after=OUTSIDE,
    settle=st.lists(st.booleans(), max_size=8),
)
def test_a_hand_written_line_always_survives(
    before: list[str], section: list[str], after: list[str], settle: list[bool]
) -> None:
    doc = _doc(before, section, after, "\n")
    hand = Counter(
        line for line in doc.split("\n") if line and not line.startswith(("-", "*", "+"))
    )
    hand.update(line for line in doc.split("\n") if line in ("- a plain bullet", "- [ ] "))
    reg = registry()
    first = sync(doc, reg)
    keys = sorted({r["key"] for r in first.records})
    for index, (key, do) in enumerate(zip(keys, settle, strict=False)):
        if do:
            reg.add(settlement(reg, key=key, rid=f"s{index}"))
    out = handoff.markdown.write_state_document(first.document, reg, **KW)
    got = Counter(out.split("\n"))
    for line, count in hand.items():
        assert got[line] >= count, line


def test_acts_with_keys_unsafe_for_a_document_are_not_bound() -> None:
    reg = registry()
    reg.add(
        rec("n1", "raised", "requester", "agent-1", "ключ/1", terms={"text": "Pay"}, terms_rev=1)
    )
    doc = "## Acts\n"
    out = handoff.markdown.write_state_document(doc, reg, **KW)
    assert out == doc
    assert sync(out, reg).records == ()


def test_a_line_that_cannot_be_an_acts_text_is_hand_written() -> None:
    reg = registry()
    doc = "## Acts\n- [ ] one\u2028two\n- [ ] Pay <!-- not a marker\n"
    result = sync(doc, reg)
    assert result.records == ()
    assert result.document == doc


def test_a_keyed_line_unknown_to_the_records_is_raised_with_its_key() -> None:
    reg = registry()
    result = sync("## Acts\n- [ ] Sign the lease <!-- act:lease-2026 -->\n", reg)
    assert [(r["type"], r["key"]) for r in result.records] == [("raised", "lease-2026")]


def _acts_registry() -> handoff.Registry:
    from .ext_fixtures import registry as acts_registry

    return acts_registry()


def test_a_state_document_with_a_byte_order_mark_keeps_it() -> None:
    reg = _acts_registry()
    doc = "\ufeff## Acts\n- [ ] Pay rent\nmy own note\n"
    first = handoff.markdown.sync_state_document(
        doc, reg, project="web", registrar="registrar", now=TS
    )
    assert [r["type"] for r in first.records] == ["raised"]
    assert first.document.startswith("\ufeff## Acts\n- [ ] Pay rent <!-- act:")
    assert "my own note\n" in first.document
    again = handoff.markdown.sync_state_document(
        first.document, reg, project="web", registrar="registrar", now=TS
    )
    assert again.records == ()
    assert again.document == first.document


def test_a_crlf_state_document_stays_crlf() -> None:
    reg = _acts_registry()
    doc = "# P\r\n\r\n## Acts\r\n- [ ] Pay rent\r\nmine\r\n"
    out = handoff.markdown.sync_state_document(
        doc, reg, project="web", registrar="registrar", now=TS
    )
    assert out.document.count("\r\n") == out.document.count("\n")


@pytest.mark.parametrize("text", ["Pay\x00now", "Pay \u202e00.021", "a\x1b[2Jb", "a\x85b"])
def test_act_text_that_would_poison_the_document_is_refused(text: str) -> None:
    from .ext_fixtures import raised as act_raised

    reg = _acts_registry()
    with pytest.raises(handoff.HandoffError) as caught:
        reg.add(act_raised("n1", "k1", terms={"text": text}))
    assert caught.value.reason == "text_invalid"
