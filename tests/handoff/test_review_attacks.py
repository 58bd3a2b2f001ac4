"""Regressions for defects found by an adversarial review of the handoff package."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import handoff

from .handoff_helpers import (
    EXTS,
    ROLES,
    TS,
    claimed,
    raised,
    rec,
    registry,
    settled,
)

ITEM = handoff.ItemId("demo-keep", "house", "k1")


def _lower_than(record: dict[str, Any], make: Any) -> dict[str, Any]:
    """A record from ``make(n)`` whose digest is below ``record``'s (ground, as an attacker)."""
    target = handoff.digests.digest(record)
    return next(r for r in (make(n) for n in range(10_000)) if handoff.digests.digest(r) < target)


def _spoofs() -> list[dict[str, Any]]:
    s1 = settled("s1")
    claim = _lower_than(s1, lambda n: claimed("s1", context=f"grind {n}"))
    need = _lower_than(
        s1,
        lambda n: rec("s1", "raised", "requester", "bot-1", terms={"text": f"x{n}"}, terms_rev=1),
    )
    note = _lower_than(
        s1, lambda n: rec("s1", "note", "agent", "helper-9", about={"key": "k1"}, note=f"{n}")
    )
    return [claim, need, note]


@pytest.mark.parametrize("index", range(3))
@pytest.mark.parametrize("first", [True, False])
def test_reused_id_never_displaces_the_settlement(index: int, first: bool) -> None:
    spoof = _spoofs()[index]
    reg = registry()
    reg.add(raised())
    order = [spoof, settled("s1")] if first else [settled("s1"), spoof]
    statuses = [reg.add(r).status for r in order]
    assert statuses == ["accepted", "accepted"]
    state = reg.state(ITEM)
    assert (state.state, state.settlement, state.outcome) == ("settled", "s1", "done")
    assert [c.kind for c in state.conflicts if c.kind == "id_reused"] == ["id_reused"]
    assert sorted(r["type"] for r in reg.records(ITEM) if r["id"] == "s1") == sorted(
        ["settled", spoof["type"]]
    )


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_reused_id_in_stores(tmp_path: Path, kind: str) -> None:
    store: Any
    if kind == "memory":
        store = handoff.stores.MemoryStore(roles=ROLES, extensions=EXTS)
    else:
        store = handoff.stores.SQLiteStore(tmp_path / "h.sqlite", roles=ROLES, extensions=EXTS)
    store.append(raised())
    store.append(settled("s1"))
    store.append(_spoofs()[0])
    assert store.state(ITEM).state == "settled"
    assert store.state(ITEM).settlement == "s1"


def test_same_slot_conflict_holds_every_version_and_chooses_none() -> None:
    v1, v2 = claimed("c1", context="a"), claimed("c1", context="b")
    both = sorted((v1, v2), key=lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False))
    for order in ([v1, v2], [v2, v1]):
        reg = registry()
        assert [reg.add(r).status for r in order] == ["accepted", "conflict"]
        assert reg.records(ITEM) == both
        [conflict] = reg.state(ITEM).conflicts
        assert (conflict.kind, conflict.chosen) == ("same_id", None)
        # a claimant's own slot never makes the owners' item conflicted
        assert reg.state(ITEM).state == "unknown"


@pytest.mark.parametrize("party", ["alice", "alice-pa"])
@pytest.mark.parametrize("project", ["house", "*"])
def test_principal_and_principal_side_cannot_be_requesters(party: str, project: str) -> None:
    config = {
        "principal": "alice",
        "principal_side": ["alice-pa"],
        "requesters": {project: ["bot-1", party]},
    }
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.Roles.from_json(config)
    assert caught.value.reason == "config_invalid"


def _check(record: dict[str, Any]) -> None:
    handoff.check_record(record, roles=ROLES, extensions=EXTS)


def test_attested_only_by_the_principal_side() -> None:
    good = settled("s1", authority={"kind": "attested", "decider": "alice-pa"})
    good["evidence"] = {"basis": "bank line 4"}
    _check(good)
    for decider in ("bot-1", "helper-9"):
        bad = {**good, "authority": {"kind": "attested", "decider": decider}}
        with pytest.raises(handoff.HandoffError) as caught:
            _check(bad)
        assert caught.value.reason == "attester_not_principal_side"


@pytest.mark.parametrize("lookalike", ["ALICE", "Alice", "\uff41lice", "\U0001d41alice"])
def test_delegate_reading_like_the_principal_is_refused(lookalike: str) -> None:
    authority = {"kind": "delegated", "decider": lookalike, "under": "m", "chain": ["alice"]}
    authority["chain"] = ["alice", lookalike]
    with pytest.raises(handoff.HandoffError) as caught:
        _check(settled("s1", authority=authority))
    assert caught.value.reason == "delegate_is_principal"
    looping = {**authority, "decider": "boss", "chain": ["alice", lookalike, "boss"]}
    with pytest.raises(handoff.HandoffError) as caught:
        _check(settled("s1", authority=looping))
    assert caught.value.reason == "chain_broken"


@pytest.mark.parametrize("value", [[1], "x", 3, None, ["ph", "0.3"]])
def test_check_record_of_a_non_object(value: Any) -> None:
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.check_record(value, roles=ROLES, extensions=EXTS)
    assert caught.value.code == "parse"


# --- proofs ----------------------------------------------------------------------------------

SMALL_ORDER = [
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0100000000000000000000000000000000000000000000000000000000000000",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.mark.parametrize("point", SMALL_ORDER)
def test_small_order_ed25519_key_is_refused(point: str) -> None:
    jwk = {"kty": "OKP", "crv": "Ed25519", "x": _b64(bytes.fromhex(point))}
    record = settled("s1")
    members = json.dumps(jwk, separators=(",", ":"), sort_keys=True).encode()
    kid = _b64(hashlib.sha256(members).digest())  # RFC 7638 thumbprint
    header = _b64(
        json.dumps({"alg": "Ed25519", "kid": kid, "typ": handoff.evidence.PROOF_TYP}).encode()
    )
    record["evidence"] = {"proof": f"{header}..{_b64(bytes.fromhex(point) + bytes(32))}"}
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.verify_proof(record, {"keys": [jwk]})
    assert caught.value.reason == "jwks_invalid"


def test_ordinary_ed25519_keys_still_verify() -> None:
    from .ext_fixtures import ed_key

    for seed in range(1, 40):
        key = ed_key(seed)
        signed = handoff.attach_proof(settled("s1"), key)
        handoff.verify_proof(signed, handoff.public_jwks(key))


def test_proposal_matches_one_of_several_claims_with_that_id() -> None:
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


# --- Markdown binding ------------------------------------------------------------------------


def _acts_registry() -> handoff.Registry:
    from .ext_fixtures import registry as acts_registry

    return acts_registry()


def test_state_document_with_a_byte_order_mark() -> None:
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


def test_crlf_state_document_stays_crlf() -> None:
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


# --- SQLite store ----------------------------------------------------------------------------


def test_insert_or_replace_cannot_remove_a_record(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        store.append(raised())
        store.append(settled("s1"))
    db = sqlite3.connect(path)
    seq, rid, dig, body = db.execute(
        "SELECT seq, id, digest, body FROM handoff_records WHERE id = 's1'"
    ).fetchone()
    other = raised("zz", key="k9")
    with pytest.raises(sqlite3.DatabaseError):
        db.execute(
            "INSERT OR REPLACE INTO handoff_records (seq, id, digest, ext, project, key, body)"
            " VALUES (?, ?, ?, 'demo-keep', 'house', 'k9', ?)",
            (seq, "zz", handoff.digests.digest(other), handoff.digests.canonical(other).decode()),
        )
    db.execute(
        "REPLACE INTO handoff_records (id, digest, ext, project, key, body, roles_version)"
        " VALUES (?, ?, 'demo-keep', 'house', 'k1', ?, 1)",
        (rid, dig, body),
    )
    db.commit()
    assert db.execute("SELECT seq FROM handoff_records WHERE id = 's1'").fetchall() == [(seq,)]
    db.close()
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        assert store.state(ITEM).state == "settled"
        assert store.append(settled("s1")) == "duplicate"
        assert len(store) == 2


def test_a_body_changed_behind_the_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        store.append(raised())
        store.append(settled("s1"))
    db = sqlite3.connect(path)
    db.execute("DROP TRIGGER handoff_records_no_update")
    forged = settled("s1", outcome="declined")
    db.execute(
        "UPDATE handoff_records SET body = ? WHERE id = 's1'",
        (handoff.digests.canonical(forged).decode(),),
    )
    db.commit()
    db.close()
    with handoff.stores.SQLiteStore(path, roles=ROLES, extensions=EXTS) as store:
        with pytest.raises(handoff.HandoffError) as caught:
            store.state(ITEM)
        assert caught.value.reason == "store_tampered"


# --- order independence with ids reused across owners ------------------------------------------

_POOL = [
    raised(),
    raised("x"),
    settled("s1"),
    settled("x", rev=2, supersedes=["s1"]),
    claimed("s1"),
    claimed("x", context="other"),
    claimed("x", context="again"),
    rec("n1", "note", "agent", "helper-9", about={"key": "k1"}, note="reuses the need id"),
    rec("s1", "reopened", "principal", "alice-pa", supersedes=["x"]),
]


@given(st.permutations(_POOL), st.lists(st.sampled_from(_POOL), max_size=4))
@settings(max_examples=60, deadline=None)
def test_fold_with_reused_ids_is_order_free(order: list[dict[str, Any]], again: list[Any]) -> None:
    reference = registry()
    reference.add_many(_POOL)
    reg = registry()
    reg.add_many([*order, *again])
    assert reg.states() == reference.states()
    assert reg.conflicts() == reference.conflicts()
    lines = registry()
    lines.add_lines([handoff.digests.canonical(r) for r in [*again, *order]])
    assert lines.states() == reference.states()


# --- the settle prompt -------------------------------------------------------------------------


def test_settle_prompt_escapes_what_a_terminal_would_not_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from handoff._cli import main

    from .ext_fixtures import ROLES_JSON, ed_key
    from .ext_fixtures import raised as act_raised

    principal = ed_key()
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"roles": ROLES_JSON, "side": {"jwks": handoff.public_jwks(principal)}}),
        encoding="utf-8",
    )
    terms = {"text": "Pay the invoice", "how_to": "Card \u202e4242\x9b2J ok"}
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(act_raised(terms=terms)) + "\n", encoding="utf-8")
    key = tmp_path / "alice.jwk"
    key.write_text(json.dumps(principal), encoding="utf-8")
    argv = ["settle", str(records), "--config", str(config), "--ext", "acts"]
    argv += ["--project", "web", "--key", "k1", "--outcome", "done", "--yes"]
    argv += ["--principal-key", str(key), "--now", "2026-11-30T10:00:00Z"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "\u202e" not in out
    assert "\x9b" not in out
    assert "\\u202e4242\\u009b2J" in out


# --- presented digest with a forked need register ----------------------------------------------


def _forked() -> tuple[handoff.Registry, handoff.ItemId]:
    from .ext_fixtures import raised as act_raised
    from .ext_fixtures import rec as act_rec

    reg = _acts_registry()
    reg.add(act_raised())

    def amend(rid: str, text: str) -> dict[str, Any]:
        terms = {"text": text}
        return act_rec(
            rid, "amended", "requester", "agent-1", terms=terms, terms_rev=2, supersedes=["n1"]
        )

    mallory = amend("a-first-by-id", "Pay 1000 EUR to mallory")
    honest = next(
        r
        for r in (amend(f"b{n}", f"Pay 10 EUR ({n})") for n in range(1000))
        if handoff.digests.digest(r) < handoff.digests.digest(mallory)
    )
    reg.add(mallory)
    reg.add(honest)
    return reg, handoff.ItemId("acts", "web", "k1")


def test_presented_digest_is_over_the_terms_shown() -> None:
    reg, item = _forked()
    state = reg.state(item)
    assert str(state.terms["text"]).startswith("Pay 10 EUR")  # type: ignore[index]
    record = handoff.make_settlement(reg, item, "done", by="alice-desk", ts=TS)
    shown = handoff.evidence.presentation_for(reg, record)
    assert shown is not None
    assert shown["terms"] == dict(state.terms)  # type: ignore[arg-type]
    assert handoff.evidence.terms_at(reg, item, 2) == state.terms
    handoff.check_principal_side_record(record, reg, handoff.PrincipalSide())


def test_settle_prompt_shows_what_is_digested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from handoff._cli import main

    from .ext_fixtures import ROLES_JSON, ed_key

    reg, item = _forked()
    principal = ed_key()
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"roles": ROLES_JSON, "side": {"jwks": handoff.public_jwks(principal)}}),
        encoding="utf-8",
    )
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in reg.records(item)), encoding="utf-8")
    key = tmp_path / "alice.jwk"
    key.write_text(json.dumps(principal), encoding="utf-8")
    argv = ["settle", str(records), "--config", str(config), "--ext", "acts"]
    argv += ["--project", "web", "--key", "k1", "--outcome", "done", "--yes"]
    argv += ["--principal-key", str(key), "--now", "2026-11-30T10:00:00Z"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "mallory" not in out
    assert "several heads" in out
    settled_line = json.loads(records.read_text(encoding="utf-8").splitlines()[-1])
    shown = out.split("digested):\n", 1)[1].split("\n", 1)[0]
    assert (
        handoff.digests.presented_digest(json.loads(shown)) == settled_line["evidence"]["presented"]
    )


# --- malformed input of any shape raises HandoffError only --------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False),
    st.text(max_size=6),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
_MEMBERS = sorted({*settled("s1"), "authority", "evidence", "relation", "about", "terms"})


@given(
    st.sampled_from([raised(), settled("s1"), claimed("c1")]),
    st.lists(st.tuples(st.sampled_from(_MEMBERS), _JSON), min_size=1, max_size=3),
    _JSON,
)
@settings(max_examples=150, deadline=None)
def test_malformed_input_raises_only_handoff_error(
    base: dict[str, Any], changes: list[tuple[str, Any]], other: Any
) -> None:
    record = dict(base)
    for member, value in changes:
        record[member] = value
    reg = _acts_registry()
    calls: list[Any] = [
        lambda: handoff.check_record(record, roles=ROLES, extensions=EXTS),
        lambda: registry().add(record),
        lambda: handoff.Record.from_json(record),
        lambda: handoff.verify_proof(record, other),
        lambda: handoff.evidence.presentation_for(reg, record),
        lambda: handoff.check_principal_side_record(record, reg, handoff.PrincipalSide()),
        lambda: handoff.Roles.from_json(other),
        lambda: handoff.ExtensionRegistry.from_json(other),
        lambda: handoff.PrincipalSide.from_json(other),
        lambda: handoff.attach_proof(other, ROLES.to_json()),
    ]
    for call in calls:
        with contextlib.suppress(handoff.HandoffError):
            call()


@pytest.mark.parametrize("parties", [["bot-1"], "alice-pa", 5, frozenset({1})])
def test_roles_built_directly_need_sets_of_identifiers(parties: Any) -> None:
    with pytest.raises(handoff.HandoffError) as caught:
        handoff.Roles("alice", frozenset({"alice-pa"}), {"house": parties})
    assert caught.value.reason == "config_invalid"
