"""The reference server's sample room: every hash it records is reproduced here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import pxp

TOP = Path(__file__).resolve().parents[2]
FOLDER = TOP / "vectors" / "third_party" / "pxp"
SAMPLE = json.loads((FOLDER / "sample-room.json").read_text(encoding="utf-8"))


def test_sha256sums_match_the_vendored_files() -> None:
    for line in (FOLDER / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        assert hashlib.sha256((FOLDER / name).read_bytes()).hexdigest() == digest


def test_vendored_schemas_equal_the_ones_we_validate_with() -> None:
    for name in ("envelope.schema.json", "intent-card.schema.json"):
        ours = json.loads((TOP / "schemas" / "pxp" / name).read_text(encoding="utf-8"))
        theirs = json.loads((FOLDER / name).read_text(encoding="utf-8"))
        assert ours == theirs


@pytest.mark.parametrize("seat", ["A", "B"])
def test_card_hashes(seat: str) -> None:
    record = SAMPLE["seats"][seat]
    assert pxp.card_hash(record["card"]) == record["cardHash"]
    assert pxp.IntentCard.from_json(record["card"]).hash == record["cardHash"]
    assert pxp.seal_card(record["card"]).hash == record["cardHash"]


def test_card_sealed_from_mcp_fields_matches() -> None:
    card = dict(SAMPLE["seats"]["A"]["card"])
    for member in ("pxp", "may_agree_to", "must_never", "escalate_when", "known_facts"):
        card.pop(member)
    card.pop("amendments")
    assert pxp.seal_card(card).hash == SAMPLE["seats"]["A"]["cardHash"]


def test_envelope_hash_and_question_hash() -> None:
    envelope = SAMPLE["envelopes"][0]
    pxp.validate_envelope(envelope)
    assert pxp.envelope_hash(envelope) == SAMPLE["ledger"][3]["data"]["envelope_hash"]
    question = envelope["escalation"]["question"]
    assert pxp.wire.sha256_hex(question) == SAMPLE["ledger"][4]["data"]["question_hash"]
    assert envelope["intent_hash"] == SAMPLE["seats"]["A"]["cardHash"]


def test_ledger_verifies() -> None:
    head = pxp.verify_ledger(SAMPLE["ledger"])
    assert head == SAMPLE["ledger"][-1]["hash"]
    assert pxp.verify_ledger(SAMPLE["ledger"], head=head) == head
    for entry in SAMPLE["ledger"]:
        assert entry["hash"] == pxp.ledger.entry_hash(
            entry["prev"], entry["n"], entry["type"], entry["at"], entry["data"]
        )


def test_ledger_against_an_earlier_head_fails_as_extended() -> None:
    with pytest.raises(pxp.errors.LedgerError) as caught:
        pxp.verify_ledger(SAMPLE["ledger"], head=SAMPLE["ledger"][2]["hash"])
    assert caught.value.reason == "extended"
    assert caught.value.index == 3


def test_room_import_replays_the_sample() -> None:
    room = pxp.Room.from_export(SAMPLE)
    assert room.status == "paused"
    assert room.turn == "A"
    assert room.turns == 1
    pending = room.pending
    assert pending is not None
    assert (pending.seat, pending.seq, pending.question) == ("A", 1, "May I go higher?")
    assert room.head == SAMPLE["ledger"][-1]["hash"]
    assert room.envelopes[0] == SAMPLE["envelopes"][0]


def test_sample_room_resumes_with_our_engine() -> None:
    from datetime import UTC, datetime

    room = pxp.Room.from_export(SAMPLE)
    now = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    new_hash = room.answer("A", "Yes, up to 10% more.", now=now, via="web")
    assert new_hash != SAMPLE["seats"]["A"]["cardHash"]
    result = room.send("A", {"message": "Going higher.", "status": "continue"}, now=now)
    assert result.envelope["intent_hash"] == new_hash
    again = pxp.Room.from_export(json.loads(json.dumps(room.export())))
    assert again.head == room.head
    assert pxp.verify_ledger(room.export()["ledger"])[:8] == room.head[:8]


def test_import_refuses_a_tampered_card() -> None:
    tampered = json.loads(json.dumps(SAMPLE))
    tampered["seats"]["B"]["card"]["goal"] = "Something else"
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(tampered)
    assert caught.value.code == "import_invalid"
    assert caught.value.reason == "card_hash"


def test_import_refuses_a_tampered_envelope() -> None:
    tampered = json.loads(json.dumps(SAMPLE))
    tampered["envelopes"][0]["message"] = "Need nothing."
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(tampered)
    assert caught.value.reason == "envelope_hash"


def test_import_refuses_a_changed_question() -> None:
    tampered = json.loads(json.dumps(SAMPLE))
    tampered["envelopes"][0]["escalation"]["question"] = "May I go lower?"
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(tampered)
    assert caught.value.reason == "envelope_hash"


def test_card_hash_covers_members_the_schema_does_not_name() -> None:
    card = {**SAMPLE["seats"]["A"]["card"], "notes": {"x": 1}}
    expected = hashlib.sha256(
        json.dumps(card, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    assert pxp.card_hash(card) == expected
    with pytest.raises(pxp.PxpError) as caught:
        pxp.seal_card(card)
    assert caught.value.reason == "unknown_member"
    lenient = pxp.IntentCard.from_json(card, strict=False)
    assert lenient.to_json() == card
    with pytest.raises(pxp.PxpError):
        pxp.seal_card(lenient)


def test_reference_room_with_extra_card_members_imports() -> None:
    room = json.loads(json.dumps(SAMPLE))
    room["seats"]["B"]["card"]["principal"]["team"] = "QA"
    digest = pxp.card_hash(room["seats"]["B"]["card"])
    room["seats"]["B"]["cardHash"] = digest
    # the sealed hash in the ledger no longer matches: the import must refuse
    with pytest.raises(pxp.PxpError) as caught:
        pxp.Room.from_export(room)
    assert caught.value.reason == "card_hash"


def test_the_spec_lists_every_flag_sentence() -> None:
    spec = (TOP / "docs" / "spec" / "pxp.md").read_text(encoding="utf-8")
    flat = " ".join(spec.replace("*", "").split())
    for name, sentence in pxp.rules.FLAG_SENTENCES.items():
        assert " ".join(sentence.split()) in flat, name


def test_the_mcp_guide_tells_an_agent_every_claim_origin_rule() -> None:
    """Issue 20, "Done when": the guide a client author reads describes the claim-origin
    rules, naming each rewrite a claim can meet."""
    guide = (TOP / "docs" / "guide" / "pxp-mcp.md").read_text(encoding="utf-8")
    claim_rules = [
        name for name, sentence in pxp.rules.FLAG_SENTENCES.items() if sentence.startswith("Claim ")
    ]
    assert len(claim_rules) == 11
    for name in claim_rules:
        assert f"`{name}`" in guide, name


def test_import_tolerates_unknown_members_in_a_foreign_envelope() -> None:
    room = json.loads(json.dumps(SAMPLE))
    envelope = room["envelopes"][0]
    envelope["escalation"]["options"] = ["yes", "no"]
    envelope["ts"] = 5
    with pytest.raises(pxp.PxpError):
        pxp.validate_envelope(envelope)
    pxp.validate_envelope(envelope, strict=False)
    digest = pxp.envelope_hash(envelope)
    # a ledger that recorded this exact envelope imports; ours is rebuilt to match
    ledger = pxp.ledger.Ledger()
    for entry in room["ledger"][:3]:
        ledger.append(entry["type"], entry["at"], entry["data"])
    data = dict(room["ledger"][3]["data"], envelope_hash=digest)
    ledger.append("envelope", room["ledger"][3]["at"], data)
    ledger.append("escalation", room["ledger"][4]["at"], room["ledger"][4]["data"])
    room["ledger"] = ledger.to_json()
    imported = pxp.Room.from_export(room)
    assert imported.status == "paused"
    assert imported.envelopes[0]["ts"] == 5
