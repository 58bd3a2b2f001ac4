"""Regressions from an adversarial review of the engine: each test pins one defect fixed."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pxp
from pxp._envelope import envelope_hash, proposal_hash
from pxp._ledger import entry_hash

SAMPLE = Path(__file__).resolve().parents[2] / "vectors/third_party/pxp/sample-room.json"
TOP = Path(__file__).resolve().parents[2]

CARD_A = {
    "principal": {"name": "Ana Silva"},
    "goal": "Sell the van.",
    "must_haves": ["At least 5000 EUR"],
    "may_agree_to": ["Pickup in Lyon"],
    "must_never": ["Deliver abroad"],
    "known_facts": ["The van has 80000 km"],
}
CARD_B = {
    "principal": {"name": "Bo Berg"},
    "goal": "Buy a van.",
    "must_haves": ["Below 6000 EUR"],
    "known_facts": ["I live in Lyon"],
}


def clock() -> Callable[[], datetime]:
    ticks: Iterator[datetime] = (
        datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i) for i in range(10_000)
    )
    return lambda: next(ticks)


def active_room() -> tuple[pxp.Room, Callable[[], datetime]]:
    now = clock()
    room = pxp.Room.open("room-1", topic="Van", now=now())
    room.seal("A", CARD_A, now=now())
    room.seal("B", CARD_B, now=now(), via="mcp")
    return room, now


def msg(status: str = "continue", **extra: Any) -> dict[str, Any]:
    return {"message": "m", "status": status, **extra}


# ------------------------------------------------------------------ reference room import


def _append(room: dict[str, Any], type_: str, data: dict[str, Any], at: str) -> None:
    ledger = room["ledger"]
    prev, n = ledger[-1]["hash"], len(ledger) + 1
    ledger.append(
        {
            "n": n,
            "type": type_,
            "at": at,
            "data": data,
            "prev": prev,
            "hash": entry_hash(prev, n, type_, at, data),
        }
    )


def _send(room: dict[str, Any], env: dict[str, Any], at: str) -> None:
    room["envelopes"].append(env)
    data = {
        "seq": env["seq"],
        "seat": env["from"]["seat"],
        "status": env["status"],
        "envelope_hash": envelope_hash(env),
    }
    _append(room, "envelope", data, at)


def reference_room_agreed() -> dict[str, Any]:
    """The sample room carried on as the reference server stores it: the answer written
    onto the escalating envelope after hashing, claim ids with a gap, a top-level
    proposal_hash, from.agent, a duplicate review, depends_on naming no claim, and an
    agent_joined after the agreement."""
    room = json.loads(SAMPLE.read_text(encoding="utf-8"))
    answer = "Yes, up to 10."
    env = room["envelopes"][0]
    env["answer"], env["answer_via"] = answer, "web"
    seat = room["seats"]["A"]
    seat["card"]["amendments"].append(
        {"question": "May I go higher?", "answer": answer, "at": "2026-01-01T00:00:05.000Z"}
    )
    seat["cardHash"] = pxp.card_hash(seat["card"])
    _append(
        room,
        "principal_answer",
        {
            "seat": "A",
            "speaker": "principal",
            "via": "web",
            "answer_hash": hashlib.sha256(answer.encode()).hexdigest(),
            "card_hash": seat["cardHash"],
        },
        "2026-01-01T00:00:05.000Z",
    )
    terms = ["Price is 10"]
    digest = proposal_hash(terms)
    base = {"pxp": "0", "room": "paused0001", "message": ""}
    _send(
        room,
        {
            **base,
            "seq": 2,
            "from": {
                "seat": "A",
                "principal": "Fixture A",
                "speaker": "proxy",
                "agent": "External agent",
            },
            "intent_hash": seat["cardHash"],
            "claims": [
                {"id": "A2.1", "text": "Budget is 10", "origin": "stated", "ref": "amendment"},
                {"id": "A2.3", "text": "B can deliver", "origin": "assumed"},
            ],
            "reviews": [],
            "status": "continue",
            "proposal": {"terms": terms, "depends_on": ["A2.3", "zzz"]},
            "proposal_hash": digest,
        },
        "2026-01-01T00:00:06.000Z",
    )
    review = {"claim_id": "A2.1", "verdict": "accept", "reason": ""}
    _send(
        room,
        {
            **base,
            "seq": 3,
            "from": {"seat": "B", "principal": "Fixture B", "speaker": "proxy"},
            "intent_hash": room["seats"]["B"]["cardHash"],
            "claims": [],
            "reviews": [review, review, {"claim_id": "A2.3", "verdict": "accept", "reason": ""}],
            "status": "agree",
            "accepts": {"seq": 2, "proposal_hash": digest},
        },
        "2026-01-01T00:00:07.000Z",
    )
    agreement = {"proposal_hash": digest, "proposed_by": "A", "accepted_by": "B"}
    _append(room, "agreement", agreement, "2026-01-01T00:00:07.000Z")
    return room


def test_reference_room_with_an_answered_escalation_imports() -> None:
    data = reference_room_agreed()
    room = pxp.Room.from_export(copy.deepcopy(data), head=data["ledger"][-1]["hash"])
    assert room.status == "agreed"
    assert room.escalations[0].answer == "Yes, up to 10."
    brief = room.brief()
    assert brief["ledger"]["verifies"] is True
    # the claim nobody made is carried as unverified, not a crash
    assert brief["unverified"] == ["A2.3", "zzz"]
    assert brief["depends_on"][1]["unknown"] is True
    again = pxp.Room.from_export(room.export())
    assert again.head == room.head
    assert again.status == "agreed"


@pytest.mark.parametrize(
    ("member", "value", "reason"),
    [("answer", "Yes, up to 1000.", "answer_mismatch"), ("answer_via", "mcp", "answer_mismatch")],
)
def test_an_answer_written_on_the_envelope_must_match_the_ledger(
    member: str, value: str, reason: str
) -> None:
    data = reference_room_agreed()
    data["envelopes"][0][member] = value
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(data)
    assert caught.value.reason == reason


def test_an_answer_on_an_unanswered_envelope_is_refused() -> None:
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    data["envelopes"][0]["answer"] = "forged"
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(data)
    assert caught.value.reason == "answer_unrecorded"


def test_our_own_envelopes_still_must_number_claims_without_gaps() -> None:
    env = reference_room_agreed()["envelopes"][1]
    with pytest.raises(pxp.PxpError):
        pxp.validate_envelope({k: v for k, v in env.items() if k != "proposal_hash"})


# ------------------------------------------------------------------ canonical JSON


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # what JSON.stringify (ES2019, Node 12+) writes
        ("\ud800", '"\\ud800"'),
        ("a\udc00b", '"a\\udc00b"'),
        ("\ud83d\ude00", '"\U0001f600"'),  # a split pair is one character in JavaScript
        # UTF-16 code unit order: U+D800 < U+D83D U+DE00 (the emoji) < U+FFFF
        ({"\ud800": 1, "\uffff": 2, "\U0001f600": 3}, '{"\\ud800":1,"\U0001f600":3,"\uffff":2}'),
        ("\u2028\u2029", '"\u2028\u2029"'),
    ],
)
def test_canonical_writes_lone_surrogates_as_javascript(value: Any, expected: str) -> None:
    assert pxp.wire.canonical(value) == expected


def test_raw_text_hash_treats_a_lone_surrogate_as_node_does() -> None:
    assert pxp.wire.sha256_hex("a\ud800") == hashlib.sha256("a\ufffd".encode()).hexdigest()


def test_a_lone_surrogate_survives_the_sqlite_store(tmp_path: Path) -> None:
    room, now = active_room()
    room.send("A", msg(message="half \ud83d pair"), now=now())
    store = pxp.SqliteRoomStore(tmp_path / "rooms.db")
    store.create(room)
    loaded = store.load(room.id)
    assert loaded.head == room.head
    assert loaded.envelopes[0]["message"] == "half \ud83d pair"
    store.close()


def test_ledger_data_that_cannot_be_hashed_reports_its_index() -> None:
    room, _now = active_room()
    entries = room.ledger.to_json()
    entries[2]["data"]["x"] = float("nan")
    with pytest.raises(pxp.errors.LedgerError) as caught:
        pxp.verify_ledger(entries)
    assert caught.value.index == 2


# ------------------------------------------------------------------ origin upgrades


def _claim_origin(room: pxp.Room, seat: str, claim: dict[str, Any], now: Any) -> str:
    result = room.send(seat, msg(claims=[claim]), now=now())
    return str(result.envelope["claims"][-1]["origin"])


@pytest.mark.parametrize(
    "ref", ["b1.1", "their proxy said so", "The counterpart", "seat B", "B's message"]
)
def test_stated_citing_the_other_side_in_any_spelling_is_assumed(ref: str) -> None:
    room, now = active_room()
    room.send("A", msg(), now=now())
    room.send("B", msg(claims=[{"text": "Lyon pickup is free", "origin": "assumed"}]), now=now())
    claim = {"text": "Pickup is free of charge", "origin": "stated", "ref": ref}
    reviews = [{"claim_id": "B2.1", "verdict": "accept"}]
    result = room.send("A", msg(claims=[claim], reviews=reviews), now=now())
    assert result.envelope["claims"][0]["origin"] == "assumed"


def test_sourced_citing_an_own_assumption_is_assumed() -> None:
    room, now = active_room()
    room.send("A", msg(claims=[{"text": "The van is rust-free", "origin": "assumed"}]), now=now())
    room.send("B", msg(reviews=[{"claim_id": "A1.1", "verdict": "challenge"}]), now=now())
    backer = {"text": "Inspection says rust-free", "origin": "sourced", "ref": "see A1.1"}
    result = room.send("A", msg(claims=[{**backer, "backs": "A1.1"}]), now=now())
    assert result.envelope["claims"][0]["origin"] == "assumed"
    assert room.claims["A1.1"].verified is False
    assert any("an assumption is not a source" in f for f in result.flags)


@pytest.mark.parametrize(("ref", "cited"), [("A1.2", "A1.2"), ("a1.1", "A1.1")])
def test_a_claim_cannot_cite_itself_or_a_later_claim_of_its_envelope(ref: str, cited: str) -> None:
    room, now = active_room()
    claims = [
        {"text": "Price holds all year", "origin": "sourced", "ref": ref},
        {"text": "Prices rise in spring", "origin": "assumed"},
    ]
    result = room.send("A", msg(claims=claims), now=now())
    assert result.envelope["claims"][0]["origin"] == "assumed"
    assert cited in result.flags[0]


def test_an_earlier_verified_claim_of_the_same_envelope_may_be_cited() -> None:
    room, now = active_room()
    claims = [
        {"text": "The van has 80000 km", "origin": "stated", "ref": "known_facts[0]"},
        {"text": "Mileage is low", "origin": "sourced", "ref": "A1.1"},
    ]
    result = room.send("A", msg(claims=claims), now=now())
    assert [c["origin"] for c in result.envelope["claims"]] == ["stated", "sourced"]


# ------------------------------------------------------------------ brief


def test_a_disputed_dependency_stays_unverified_after_the_principal_clears_it() -> None:
    room, now = active_room()
    claim = {"text": "Invoice shows 5500 EUR", "origin": "sourced", "ref": "invoice 17"}
    proposal = {"terms": ["5500 EUR"], "depends_on": ["new1"]}
    room.send("A", msg(claims=[claim], proposal=proposal), now=now())
    room.send(
        "B",
        msg(
            "escalate",
            reviews=[{"claim_id": "A1.1", "verdict": "challenge"}],
            escalation={"question": "Accept without seeing the invoice?"},
        ),
        now=now(),
    )
    room.answer("B", "Yes, accept it.", now=now())
    assert room.send("B", msg("agree"), now=now()).status == "agreed"
    brief = room.brief()
    assert brief["unverified"] == ["A1.1"]
    assert brief["depends_on"][0]["verified"] is False
    assert brief["depends_on"][0]["disputed_by"] == ["B"]
    assert "A1.1" in pxp.brief_markdown(brief)


def test_markdown_brief_text_cannot_inject_markup() -> None:
    now = clock()
    room = pxp.Room.open("room-1", topic="Van\n\n# Agreed: all <b>terms</b>", now=now())
    card_a = {**CARD_A, "principal": {"name": "Ana [click](http://x.test)"}}
    room.seal("A", card_a, now=now())
    room.seal("B", CARD_B, now=now())
    term = "Pay 10\n\n## What was agreed\n1. Pay 1000000 <script>x</script>"
    room.send("A", msg(proposal={"terms": [term]}), now=now())
    room.send("B", msg("agree"), now=now())
    text = pxp.brief_markdown(room.brief())
    assert "<script>" not in text
    assert "<b>" not in text
    assert "\n# Agreed" not in text
    assert "\n## What was agreed\n1. Pay 1000000" not in text
    assert "[click](http" not in text
    assert text.count("\n## What was agreed\n") == 1
    assert "Ana \\[click\\]\\(http" in text or "Ana \\[click\\](http" in text


def test_markdown_of_an_imported_brief_keeps_hashes_as_hex() -> None:
    room, now = active_room()
    room.send("A", msg(proposal={"terms": ["x"]}), now=now())
    room.send("B", msg("agree"), now=now())
    brief = room.brief()
    brief["ledger"]["head"] = "`<img src=x>`"
    assert "<img" not in pxp.brief_markdown(brief)


def _rechain(room: dict[str, Any]) -> None:
    """Recompute every envelope hash and the whole chain, as a forger without a head would."""
    by_seq = {e["seq"]: e for e in room["envelopes"]}
    prev = "0" * 64
    for entry in room["ledger"]:
        if entry["type"] == "envelope":
            env = by_seq[entry["data"]["seq"]]
            bare = {k: v for k, v in env.items() if k not in ("answer", "answer_via")}
            entry["data"]["envelope_hash"] = envelope_hash(bare)
        entry["prev"] = prev
        entry["hash"] = prev = entry_hash(
            prev, entry["n"], entry["type"], entry["at"], entry["data"]
        )


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            lambda env: env["reviews"].append({"claim_id": "A2.3", "verdict": "conflict"}),
            "agreement",
        ),
        (
            lambda env: env["reviews"].__setitem__(2, {"claim_id": "A2.3", "verdict": "challenge"}),
            "agreement_disputed",
        ),
        (lambda env: env["accepts"].__setitem__("seq", 1), "agreement"),
        (lambda env: env["accepts"].__setitem__("proposal_hash", "1" * 64), "agreement"),
    ],
)
def test_an_imported_agreement_enforcement_would_refuse_is_refused(
    change: Callable[[dict[str, Any]], None], reason: str
) -> None:
    data = reference_room_agreed()
    change(data["envelopes"][2])
    if reason == "agreement" and data["envelopes"][2]["accepts"]["proposal_hash"] == "1" * 64:
        data["ledger"][-2]["data"]["proposal_hash"] = "1" * 64
    _rechain(data)
    pxp.verify_ledger(data["ledger"])  # the forged chain itself is consistent
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(data)
    assert caught.value.reason == reason


def test_an_imported_agreement_on_a_dispute_cleared_by_an_answer_is_kept() -> None:
    room, now = active_room()
    claim = {"text": "Invoice shows 5500 EUR", "origin": "sourced", "ref": "invoice 17"}
    room.send(
        "A",
        msg(claims=[claim], proposal={"terms": ["5500 EUR"], "depends_on": ["new1"]}),
        now=now(),
    )
    room.send(
        "B",
        msg(
            "escalate",
            reviews=[{"claim_id": "A1.1", "verdict": "challenge"}],
            escalation={"question": "Accept?"},
        ),
        now=now(),
    )
    room.answer("B", "Yes.", now=now())
    room.send("B", msg("agree"), now=now())
    again = pxp.Room.from_export(room.export(), head=room.head)
    assert again.status == "agreed"


def test_an_answer_is_authority_only_for_terms_it_mentions() -> None:
    room, now = active_room()
    room.send("A", msg(proposal={"terms": ["5500 EUR", "Delivery to Paris"]}), now=now())
    room.send("B", msg("escalate", escalation={"question": "May I pay 5500 EUR?"}), now=now())
    room.answer("B", "Yes, you may pay 5500 EUR.", now=now())
    room.send("B", msg("agree"), now=now())
    rows = {row["term"]: row["B"] for row in room.brief()["authority"]}
    assert [r["ref"] for r in rows["5500 EUR"]] == ["amendments[0]"]
    assert rows["Delivery to Paris"] == []


# ------------------------------------------------------------------ robustness fuzz

_ATOMS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from(["", "A", "B", "A2.1", "x", "0" * 64, "\ud800", 2**60, 1.5]),
    st.just([]),
    st.just({}),
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*path, i))


_REFERENCE = reference_room_agreed()
_REFERENCE_PATHS = [p for p in _paths(_REFERENCE) if p]


@given(st.lists(st.tuples(st.sampled_from(_REFERENCE_PATHS), _ATOMS, st.booleans()), max_size=3))
@settings(max_examples=150, deadline=None)
def test_a_mangled_reference_room_raises_only_pxp_errors(
    edits: list[tuple[tuple[Any, ...], Any, bool]],
) -> None:
    data = copy.deepcopy(_REFERENCE)
    for path, value, delete in edits:
        target: Any = data
        try:
            for key in path[:-1]:
                target = target[key]
            if delete and isinstance(target, dict):
                target.pop(path[-1], None)
            else:
                target[path[-1]] = copy.deepcopy(value)
        except (KeyError, IndexError, TypeError):
            continue
    try:
        room = pxp.Room.from_export(data)
    except pxp.PxpError:
        return
    room.view("A")
    room.export()
    if room.status in ("agreed", "ended"):
        pxp.brief_markdown(room.brief())


# ------------------------------------------------------------------ stores and seats


def test_a_room_cannot_give_both_seats_one_token() -> None:
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.open("r", topic="t", now=clock()(), tokens={"A": "t" * 16, "B": "t" * 16})
    assert caught.value.code == "room_invalid"


def test_sqlite_refuses_a_token_that_opens_another_room(tmp_path: Path) -> None:
    now = clock()
    store = pxp.SqliteRoomStore(tmp_path / "rooms.db")
    store.create(pxp.Room.open("r1", topic="t", now=now(), tokens={"A": "a" * 16}))
    with pytest.raises(pxp.PxpError) as caught:
        store.create(pxp.Room.open("r2", topic="t", now=now(), tokens={"B": "a" * 16}))
    assert caught.value.code == "store_conflict"
    assert store.locate("a" * 16) == ("r1", "A")
    assert store.room_ids() == ["r1"]
    store.close()


def test_sqlite_reports_a_damaged_snapshot_as_a_pxp_error(tmp_path: Path) -> None:
    import sqlite3

    store = pxp.SqliteRoomStore(tmp_path / "rooms.db")
    store.create(pxp.Room.open("r1", topic="t", now=clock()()))
    store.close()
    db = sqlite3.connect(tmp_path / "rooms.db")
    db.execute("UPDATE pxp_rooms SET snapshot = '{not json' WHERE id = 'r1'")
    db.commit()
    db.close()
    store = pxp.SqliteRoomStore(tmp_path / "rooms.db")
    with pytest.raises(pxp.PxpError) as caught:
        store.load("r1")
    assert caught.value.code == "store_corrupt"
    store.close()


def test_an_imported_answer_is_not_shown_to_the_other_side() -> None:
    room = pxp.Room.from_export(reference_room_agreed())
    for seat in ("A", "B"):
        assert all("answer" not in e for e in room.view(seat).envelopes)
    assert "answer" not in room.export()["envelopes"][0]
    assert room.card("A") is not None
    assert room.card("A").to_json()["amendments"][0]["answer"] == "Yes, up to 10."


# ------------------------------------------------------------------ canonical against Node

# Our own JavaScript statement of the reference's rule (sorted keys by the default sort,
# JSON.stringify for keys and leaves, no whitespace); it reads JSON lines and writes, per
# line, the canonical text and the SHA-256 Node computes of that text and of a string value.
_NODE_CANONICAL = r"""
const { createHash } = require('crypto');
const sha = (s) => createHash('sha256').update(s).digest('hex');
function canon(v) {
  if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
  if (v !== null && typeof v === 'object') {
    const parts = [];
    for (const k of Object.keys(v).sort()) {
      if (v[k] !== undefined) parts.push(JSON.stringify(k) + ':' + canon(v[k]));
    }
    return '{' + parts.join(',') + '}';
  }
  return JSON.stringify(v);
}
const out = [];
for (const line of require('fs').readFileSync(0, 'utf8').split('\n')) {
  if (!line) continue;
  const v = JSON.parse(line);
  const c = canon(v);
  out.push(JSON.stringify([c, sha(c), typeof v === 'string' ? sha(v) : null]));
}
process.stdout.write(out.join('\n'));
"""

_TEXT = st.text(
    st.characters(codec=None, categories=None, exclude_categories=()), max_size=8
) | st.sampled_from(["\ud800", "a\udfffb", "\ud83d\ude00", "\u2028", "\x7f\x00\x1f"])
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
@given(st.lists(_JSON, min_size=1, max_size=60))
@settings(max_examples=8, deadline=None)
def test_canonical_and_text_hashes_match_node(values: list[Any]) -> None:
    lines = "\n".join(json.dumps(v) for v in values) + "\n"
    done = subprocess.run(
        ["node", "-e", _NODE_CANONICAL],
        input=lines.encode("ascii"),
        capture_output=True,
        timeout=60,
        check=True,
    )
    rows = done.stdout.decode("utf-8").split("\n")
    assert len(rows) == len(values)
    for value, row in zip(values, rows, strict=True):
        text, digest, text_digest = json.loads(row)
        assert pxp.wire.canonical(value) == text
        assert pxp.wire.sha256_hex(pxp.wire.canonical(value)) == digest
        if isinstance(value, str):
            assert pxp.wire.sha256_hex(value) == text_digest


def _fixture_room(room_id: str, envelopes: list[dict[str, Any]]) -> dict[str, Any]:
    """A room of the reference's own test fixtures (the sample room's cards and times)."""
    room = json.loads(SAMPLE.read_text(encoding="utf-8"))
    room.update({"id": room_id, "topic": f"Fixture room {room_id}", "status": "negotiating"})
    room.update({"envelopes": [], "pending": None, "turnCount": len(envelopes)})
    first = {"topic": room["topic"], "protocol": "PXP/0"}
    room["ledger"] = [
        {
            "n": 1,
            "type": "room_opened",
            "at": "2026-01-01T00:00:00.000Z",
            "data": first,
            "prev": "0" * 64,
            "hash": entry_hash("0" * 64, 1, "room_opened", "2026-01-01T00:00:00.000Z", first),
        }
    ]
    for second, seat in ((1, "A"), (2, "B")):
        data = {
            "seat": seat,
            "principal": f"Fixture {seat}",
            "card_hash": room["seats"][seat]["cardHash"],
            "via": "mcp",
        }
        _append(room, "card_sealed", data, f"2026-01-01T00:00:0{second}.000Z")
    for second, env in enumerate(envelopes, start=3):
        _send(room, env, f"2026-01-01T00:00:0{second}.000Z")
    return room


def test_the_reference_finalise_gap_room_hashes_and_imports_as_agreed() -> None:
    # finalgap01 of the reference's test fixtures: B's agreeing envelope is stored, the
    # agreement entry is not (the server stopped between the two)
    terms = ["Fixture term"]
    digest = proposal_hash(terms)
    assert digest == "f5ce04f61ac1fa32e918443654de22fabc564e8149b69f66c033b06f0c7814d3"
    sender = {"principal": "Fixture A", "seat": "A", "speaker": "proxy"}
    offer = {
        "pxp": "0",
        "room": "finalgap01",
        "seq": 1,
        "from": sender,
        "intent_hash": "83a05bea371eca4164e405717c3fdd17c7c2785b36d8bee359f0f36511f58dd7",
        "message": "Offer.",
        "claims": [],
        "reviews": [],
        "status": "continue",
        "proposal": {"terms": terms, "depends_on": []},
        "proposal_hash": digest,
    }
    accept = {
        **offer,
        "seq": 2,
        "from": {**sender, "seat": "B", "principal": "Fixture B"},
        "intent_hash": "c329ce370feb5414e0e0c75171360662489d4208626d355ebcae94afbe471bbc",
        "message": "Agreed.",
        "status": "agree",
        "accepts": {"seq": 1, "proposal_hash": digest},
    }
    del accept["proposal"], accept["proposal_hash"]
    data = _fixture_room("finalgap01", [offer, accept])
    assert [e["hash"] for e in data["ledger"]][-2:] == [
        "01e58ce2062fb822b5a94c3db2cfcc5847751a4564ddd2f59427ca7cf54caab8",
        "96cdcd95dfc21823d10fe880a302df7084b12cb405feb0514268f9e5707a4788",
    ]
    room = pxp.Room.from_export(data, head=data["ledger"][-1]["hash"])
    assert room.status == "agreed"
    assert [e.type for e in room.ledger][-2:] == ["envelope", "agreement"]
    assert room.brief()["agreement"]["terms"] == terms


# ------------------------------------------------------------------ input robustness


@pytest.mark.parametrize("load", [pxp.load_room, pxp.ledger.load_ledger])
def test_deeply_nested_json_text_is_a_pxp_error(load: Callable[[str], Any]) -> None:
    with pytest.raises(pxp.PxpError):
        load("[" * 100_000)


def _room_with_a_lone_surrogate() -> pxp.Room:
    room, now = active_room()
    room.send("A", msg(message="x", proposal={"terms": ["Pay \ud800 now"]}), now=now())
    room.send("B", msg("agree"), now=now())
    return room


def test_markdown_shows_a_lone_surrogate_as_a_replacement_character() -> None:
    text = pxp.brief_markdown(_room_with_a_lone_surrogate().brief())
    assert "Pay \ufffd now" in text
    text.encode("utf-8")


@pytest.mark.parametrize("extra", [[], ["--markdown"]])
def test_cli_brief_prints_a_room_holding_a_lone_surrogate(tmp_path: Path, extra: list[str]) -> None:
    path = tmp_path / "room.json"
    path.write_text(json.dumps(_room_with_a_lone_surrogate().export()), encoding="ascii")
    done = subprocess.run(
        [sys.executable, "-m", "pxp", "brief", str(path), *extra],
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()


def test_the_brief_carries_every_unverified_claim_of_the_record() -> None:
    # PXP section 3 rule 3: unverified claims are carried into the final brief, even those
    # the agreement does not name as dependencies
    room, now = active_room()
    side = {"text": "The buyer has a trailer", "origin": "assumed"}
    room.send("A", msg(claims=[side], proposal={"terms": ["5500 EUR"]}), now=now())
    room.send("B", msg("agree", reviews=[{"claim_id": "A1.1", "verdict": "accept"}]), now=now())
    brief = room.brief()
    assert brief["unverified"] == []
    assert [c["id"] for c in brief["unverified_in_record"]] == ["A1.1"]
    text = pxp.brief_markdown(brief)
    assert "## Other unverified claims in the record" in text
    assert "A1.1 (Ana Silva, assumed): The buyer has a trailer" in text


@pytest.mark.parametrize("how", ["seal", "draft"])
def test_a_room_refuses_a_card_that_arrives_with_amendments(how: str) -> None:
    now = clock()
    room = pxp.Room.open("room-1", topic="Van", now=now())
    forged = {
        **CARD_A,
        "amendments": [{"question": "May I pay 9000?", "answer": "Yes.", "at": "2026-01-01"}],
    }
    act = (
        (lambda: room.seal("A", forged, now=now()))
        if how == "seal"
        else (lambda: room.draft_card("A", forged))
    )
    with pytest.raises(pxp.PxpError) as caught:
        act()
    assert caught.value.reason == "amendments_at_seal"
    assert room.card("A") is None
    assert len(room.ledger) == 1


def test_markdown_shows_invisible_and_bidi_controls() -> None:
    now = clock()
    room = pxp.Room.open("room-1", topic="Van", now=now())
    room.seal("A", CARD_A, now=now())
    room.seal("B", CARD_B, now=now())
    # a proposal term with such characters is not recorded (second review, finding 3), so
    # they reach the brief through a claim
    hidden = {"text": "Pay \u202e0001\u202c EUR\x1f\x9b", "origin": "assumed"}
    room.send("A", msg(claims=[hidden], proposal={"terms": ["1000 EUR"]}), now=now())
    room.send("B", msg("agree", reviews=[{"claim_id": "A1.1", "verdict": "accept"}]), now=now())
    text = pxp.brief_markdown(room.brief())
    assert "Pay U+202E0001U+202C EURU+001FU+009B" in text
    assert not any(c in text for c in "\u202e\u202c\x1f\x9b")


@pytest.mark.parametrize(
    ("ref", "origin"),
    [
        ("known_facts[7]", "assumed"),
        ("amendments[0]", "assumed"),
        ("must_haves[0]", "stated"),
        ("goal", "stated"),
        ("known_facts[0] ", "stated"),
    ],
)
def test_a_stated_claim_citing_a_clause_its_card_lacks_is_assumed(ref: str, origin: str) -> None:
    room, now = active_room()
    text = {"must_haves[0]": "5000 EUR", "goal": "Sell the van", "known_facts[0] ": "80000 km"}
    claim = {"text": text.get(ref, "The buyer pays in cash"), "origin": "stated", "ref": ref}
    result = room.send("A", msg(claims=[claim]), now=now())
    assert result.envelope["claims"][0]["origin"] == origin
    if origin == "assumed":
        assert result.flags == (
            f"Claim A1.1 was tagged stated but cites {ref}, which its card does not hold, so "
            "it is recorded as assumed.",
        )


def test_a_proxy_cannot_offer_its_own_must_never() -> None:
    room, now = active_room()
    # "Deliver abroad" is must_never[0] of A's card
    result = room.send("A", msg(proposal={"terms": ["5500 EUR", "deliver abroad."]}), now=now())
    assert "proposal" not in result.envelope
    assert result.flags == (
        "This envelope proposed a term that is must_never[0] of its own card, so the proposal "
        "is not recorded: crossing a must_never needs the principal.",
    )
    agreed = room.send("B", msg("agree"), now=now())
    assert agreed.status == "active"


def test_an_import_refuses_an_envelope_where_an_escalation_entry_is_owed() -> None:
    room, now = active_room()
    room.send("A", msg("escalate", escalation={"question": "Q?"}), now=now())
    room.answer("A", "Yes.", now=now())
    room.send("A", msg(), now=now())
    data = room.export()
    # drop the escalation entry from the middle and re-chain: A's two envelopes now follow
    # each other with no escalation recorded between them
    owed = ("escalation", "principal_answer")
    data["ledger"] = [e for e in data["ledger"] if e["type"] not in owed]
    data["seats"]["A"]["card"]["amendments"] = []
    data["envelopes"][1]["intent_hash"] = data["envelopes"][0]["intent_hash"]
    for i, entry in enumerate(data["ledger"], start=1):
        entry["n"] = i
    _rechain(data)
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(data)
    assert caught.value.reason == "order"
