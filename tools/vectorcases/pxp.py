"""Vector cases of pxp: card, envelope and proposal hashes, ledgers, enforcement, briefs.

Hashes that can be known independently are stated: the reference server's own values from
its sample room (vectors/third_party/pxp/sample-room.json), or ``sha256(json.dumps(...,
sort_keys=True, separators=(",", ":"), ensure_ascii=False))`` computed here, which equals
the reference's canonical form for data without floats or astral-plane keys. Clocks are
fixed. Negative cases are derived from good ones, one per mutation class.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from vectorlib import SUITES, Case, Mutation, derive, suite

TOP = Path(__file__).resolve().parents[2]
SAMPLE: dict[str, Any] = json.loads(
    (TOP / "vectors" / "third_party" / "pxp" / "sample-room.json").read_text(encoding="utf-8")
)
ZERO = "0" * 64

NOTES = {
    "derived": "negative case derived mechanically from a good case",
    "reference": "value taken from the reference server's sample room",
    "reference-shape": (
        "a room built as the reference server stores one (answer written onto the envelope "
        "after hashing, claim-id gaps, duplicate reviews, unknown depends_on)"
    ),
}


def _derive(suite_name: str, good: Case, mutations: list[Mutation]) -> Iterator[Case]:
    """``derive`` that also gives each mutation class a note (its comment) in the suite."""
    for mutation in mutations:
        SUITES[suite_name].notes.setdefault(mutation.name, mutation.comment)
    yield from derive(good, mutations)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _t(second: int) -> str:
    return f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}.000Z"


# ----------------------------------------------------------------------------- cards

CARD_FULL: dict[str, Any] = {
    "pxp": "0",
    "principal": {"name": "Maya Chen", "role": "owner", "org": "Chen Ceramics"},
    "goal": "Have the shop website rebuilt before spring.",
    "must_haves": ["Launch by 1 March", "Total price at most 4000 EUR"],
    "may_agree_to": ["Two revision rounds"],
    "must_never": ["Share customer data with third parties"],
    "escalate_when": ["Price above 3500 EUR"],
    "known_facts": ["The shop runs on Shopify"],
    "amendments": [
        {"question": "May I accept 3800 EUR?", "answer": "Yes.", "at": "2026-01-02T10:00:00.000Z"}
    ],
}


@suite(
    "pxp.card_hash",
    description=(
        "sha256hex(canonical(card)) of an intent card, validated and hashed exactly as given."
    ),
    notes={
        **NOTES,
        "amendments-absent": "a card without the amendments member hashes differently from []",
        "non-ascii": "strings outside ASCII are hashed as raw UTF-8, not escaped",
    },
)
def card_hash_cases() -> Iterator[Case]:
    for seat in ("A", "B"):
        record = SAMPLE["seats"][seat]
        yield Case(
            f"reference-sample-card-{seat.lower()}",
            {"card": record["card"]},
            output={"card_hash": record["cardHash"]},
            comment=f"The sample room's seat {seat} card and the card hash the reference recorded.",
            flags=("reference",),
        )
    good = Case(
        "full-card-with-amendment",
        {"card": CARD_FULL},
        output={"card_hash": _sha(_canon(CARD_FULL))},
        comment="Every member, one amendment.",
    )
    yield good
    no_amend = {k: v for k, v in CARD_FULL.items() if k != "amendments"}
    yield Case(
        "card-without-amendments-member",
        {"card": no_amend},
        output={"card_hash": _sha(_canon(no_amend))},
        comment="A draft card without amendments: hashed as given, no member is added.",
        flags=("amendments-absent",),
    )
    unicode_card = copy.deepcopy(CARD_FULL)
    unicode_card["principal"]["name"] = "Zoë Åberg-Müller"
    unicode_card["goal"] = "Vendre la céramique \u2014 vite.\n"
    yield Case(
        "non-ascii-card",
        {"card": unicode_card},
        output={"card_hash": _sha(_canon(unicode_card))},
        comment="Non-ASCII text and an escaped newline.",
        flags=("non-ascii",),
    )
    invalid = {"code": "card_invalid"}

    def drop(key: str) -> Any:
        return lambda c: c["card"].pop(key)

    def setter(key: str, value: Any) -> Any:
        return lambda c: c["card"].__setitem__(key, value)

    yield from _derive(
        "pxp.card_hash",
        good,
        [
            Mutation("missing-goal", "The goal is required.", drop("goal"), error=invalid),
            Mutation(
                "missing-pxp", "pxp is required in a stored card.", drop("pxp"), error=invalid
            ),
            Mutation("wrong-pxp", 'pxp must be "0".', setter("pxp", "1"), error=invalid),
            Mutation(
                "must-haves-not-list",
                "must_haves is a list of strings.",
                setter("must_haves", "Launch"),
                error=invalid,
            ),
            Mutation(
                "unknown-member",
                "The published schema allows other members; the hash covers them "
                "(sealing refuses them).",
                setter("budget", 4000),
                output={"card_hash": _sha(_canon({**CARD_FULL, "budget": 4000}))},
            ),
            Mutation(
                "principal-without-name",
                "The principal needs a name.",
                lambda c: c["card"]["principal"].pop("name"),
                error=invalid,
            ),
            Mutation(
                "amendment-without-at",
                "An amendment has question, answer and at.",
                lambda c: c["card"]["amendments"][0].pop("at"),
                error=invalid,
            ),
        ],
    )
    yield Case(
        "card-not-an-object",
        {"card": ["not", "a", "card"]},
        error=invalid,
        comment="A card is a JSON object.",
    )


@suite(
    "pxp.seal_card",
    description=(
        "Seal a principal-confirmed card, normalised as the reference seals it (trimmed "
        'strings, empty items dropped, role "" when absent, absent lists and amendments '
        "filled), then hash; refuse what the reference refuses or would silently cut."
    ),
    notes={
        **NOTES,
        "normalised": "the reference's normaliseCard gives the same card and hash",
        "stricter-than-reference": (
            "the reference cuts this silently (goal 400, item 300, name 80, role and org 120 "
            "UTF-16 code units, 12 items); sealing refuses instead of losing a clause"
        ),
    },
)
def seal_card_cases() -> Iterator[Case]:
    stored = SAMPLE["seats"]["A"]["card"]
    minimal = {
        "principal": stored["principal"],
        "goal": stored["goal"],
        "must_haves": stored["must_haves"],
    }
    yield Case(
        "reference-sample-card-from-seal-tool-fields",
        {"card": minimal},
        output={"card": stored, "card_hash": SAMPLE["seats"]["A"]["cardHash"]},
        comment=(
            "Only the fields the MCP seal_intent_card tool "
            "requires; sealed equals the sample's card."
        ),
        flags=("reference",),
    )
    sealed = dict(CARD_FULL)
    yield Case(
        "already-complete-card",
        {"card": CARD_FULL},
        output={"card": sealed, "card_hash": _sha(_canon(sealed))},
        comment="A complete card is sealed unchanged.",
    )
    # Normalisation as the reference's normaliseCard (lib/pxp.js): the expected card is
    # written out by hand, its hash computed here.
    messy = {
        "principal": {"name": "  Ana Silva ", "org": "   "},
        "goal": "\ufeff Sell the van.\n",
        "must_haves": ["  At least 5000 EUR", "", "   "],
        "may_agree_to": ["Pickup in Lyon\t"],
        "known_facts": [],
    }
    clean = {
        "pxp": "0",
        "principal": {"name": "Ana Silva", "role": ""},
        "goal": "Sell the van.",
        "must_haves": ["At least 5000 EUR"],
        "may_agree_to": ["Pickup in Lyon"],
        "must_never": [],
        "escalate_when": [],
        "known_facts": [],
        "amendments": [],
    }
    yield Case(
        "normalised-as-the-reference",
        {"card": messy},
        output={"card": clean, "card_hash": _sha(_canon(clean))},
        comment=(
            "Strings trimmed as JavaScript trims (U+FEFF too), empty items dropped, an empty "
            "org left out, an absent role stored as an empty string."
        ),
        flags=("normalised",),
    )
    with_role = {**clean, "principal": {"name": "Ana Silva", "role": "seller", "org": "Vans"}}
    yield Case(
        "role-and-org-kept",
        {"card": {**messy, "principal": {"name": "Ana Silva", "role": " seller", "org": "Vans "}}},
        output={"card": with_role, "card_hash": _sha(_canon(with_role))},
        comment="A role and an org are trimmed and kept.",
        flags=("normalised",),
    )
    at_limits = {
        **clean,
        "principal": {"name": "N" * 80, "role": "r" * 120, "org": "o" * 120},
        "goal": "g" * 398 + "\U0001f600",
        "must_haves": [f"item {i}" for i in range(12)],
        "may_agree_to": ["x" * 300],
    }
    yield Case(
        "at-every-limit",
        {"card": at_limits},
        output={"card": at_limits, "card_hash": _sha(_canon(at_limits))},
        comment="Name 80, role and org 120, goal 400, item 300 characters, 12 items: sealed.",
        flags=("normalised",),
    )
    over: list[tuple[str, str, Any, str]] = [
        ("goal-over-400", "goal", "g" * 401, "too_long"),
        ("goal-over-400-utf16", "goal", "\U0001f600" * 200 + "g", "too_long"),
        ("item-over-300", "may_agree_to", ["x" * 301], "too_long"),
        ("list-over-12", "must_haves", [f"item {i}" for i in range(13)], "too_many"),
        ("name-over-80", "principal", {"name": "N" * 81}, "too_long"),
        ("role-over-120", "principal", {"name": "Ana", "role": "r" * 121}, "too_long"),
        ("org-over-120", "principal", {"name": "Ana", "org": "o" * 121}, "too_long"),
        ("goal-blank", "goal", " \n ", "goal_missing"),
        ("must-haves-all-blank", "must_haves", ["", "  "], "must_have_missing"),
    ]
    for case_id, key, value, reason in over:
        yield Case(
            case_id,
            {"card": {**messy, key: value}},
            error={"code": "card_invalid", "reason": reason},
            comment=(
                f"{key} {reason.replace('_', ' ')}: "
                + (
                    "refused where the reference would cut silently."
                    if reason.startswith("too")
                    else "refused, as the reference refuses it."
                )
            ),
            flags=("stricter-than-reference",) if reason.startswith("too") else ("normalised",),
        )
    good = Case("minimal", {"card": minimal}, comment="The minimal card again.")
    yield from _derive(
        "pxp.seal_card",
        good,
        [
            Mutation(
                "missing-must-haves",
                (
                    "must_haves is required, as the seal tool requires "
                    "it; the optional lists are filled."
                ),
                lambda c: c["card"].pop("must_haves"),
                error={"code": "card_invalid"},
            ),
            Mutation(
                "unknown-member",
                "Sealing refuses a member the card schema does not name: "
                "it would be hashed unseen.",
                lambda c: c["card"].__setitem__("budget", 4000),
                error={"code": "card_invalid", "reason": "unknown_member"},
            ),
            Mutation(
                "goal-not-string",
                "The goal is a string.",
                lambda c: c["card"].__setitem__("goal", 7),
                error={"code": "card_invalid"},
            ),
        ],
    )


# ----------------------------------------------------------------------------- envelopes

SAMPLE_ENVELOPE = SAMPLE["envelopes"][0]
AGREE_ENVELOPE: dict[str, Any] = {
    "pxp": "0",
    "room": "r1",
    "seq": 4,
    "from": {"seat": "B", "principal": "Tom Okafor", "speaker": "proxy"},
    "intent_hash": "c329ce370feb5414e0e0c75171360662489d4208626d355ebcae94afbe471bbc",
    "message": "Agreed.",
    "claims": [
        {
            "id": "B4.1",
            "text": "Tom's rate is 400 EUR a day",
            "origin": "stated",
            "ref": "known_facts[0]",
        }
    ],
    "reviews": [{"claim_id": "A3.1", "verdict": "accept"}],
    "status": "agree",
    "accepts": {"seq": 3, "proposal_hash": _sha(_canon(["Fixed price 3800 EUR"]))},
    "protocol_flags": [
        (
            "Claim A3.2 of the other side was not reviewed before "
            "replying, so it is recorded as challenged."
        )
    ],
}
PROPOSAL_ENVELOPE: dict[str, Any] = {
    "pxp": "0",
    "room": "r1",
    "seq": 3,
    "from": {"seat": "A", "principal": "Maya Chen", "speaker": "proxy"},
    "intent_hash": "83a05bea371eca4164e405717c3fdd17c7c2785b36d8bee359f0f36511f58dd7",
    "message": "Offer.",
    "claims": [
        {
            "id": "A3.1",
            "text": "The shop runs on Shopify",
            "origin": "stated",
            "ref": "known_facts[0]",
        },
        {"id": "A3.2", "text": "About 8 days of work", "origin": "assumed"},
    ],
    "reviews": [],
    "proposal": {"terms": ["Fixed price 3800 EUR"], "depends_on": ["A3.1", "A3.2"]},
    "status": "continue",
}


@suite(
    "pxp.envelope_hash",
    description=(
        "Validate a stored envelope (schema plus protocol "
        "rules) and return sha256hex(canonical(envelope))."
    ),
    notes=NOTES,
)
def envelope_hash_cases() -> Iterator[Case]:
    yield Case(
        "reference-sample-escalation",
        {"envelope": SAMPLE_ENVELOPE},
        output={"envelope_hash": SAMPLE["ledger"][3]["data"]["envelope_hash"]},
        comment="The sample room's escalating envelope and the hash its ledger recorded.",
        flags=("reference",),
    )
    good = Case(
        "proposal",
        {"envelope": PROPOSAL_ENVELOPE},
        output={"envelope_hash": _sha(_canon(PROPOSAL_ENVELOPE))},
        comment="Two claims, a proposal depending on both.",
    )
    yield good
    agree = Case(
        "agree-with-accepts-and-flags",
        {"envelope": AGREE_ENVELOPE},
        output={"envelope_hash": _sha(_canon(AGREE_ENVELOPE))},
        comment="A stored agreement: accepts and protocol_flags are covered by the hash.",
    )
    yield agree

    def err(reason: str) -> dict[str, str]:
        return {"code": "envelope_invalid", "reason": reason}

    def env(fn: Any) -> Any:
        return lambda c: fn(c["envelope"])

    yield from _derive(
        "pxp.envelope_hash",
        good,
        [
            Mutation(
                "claim-id-out-of-order",
                "Claim ids are <seat><seq>.<i>, numbered from 1.",
                env(lambda e: e["claims"][1].__setitem__("id", "A3.3")),
                error=err("claim_id"),
            ),
            Mutation(
                "claim-id-other-seat",
                "A claim id names the sending seat.",
                env(lambda e: e["claims"][0].__setitem__("id", "B3.1")),
                error=err("claim_id"),
            ),
            Mutation(
                "stated-without-ref",
                "A stored stated claim carries its ref.",
                env(lambda e: e["claims"][0].pop("ref")),
                error=err("ref_missing"),
            ),
            Mutation(
                "nine-claims",
                "At most 8 claims.",
                env(
                    lambda e: e.__setitem__(
                        "claims",
                        [{"id": f"A3.{i}", "text": "t", "origin": "assumed"} for i in range(1, 10)],
                    )
                ),
                error={"code": "envelope_invalid"},
            ),
            Mutation(
                "unknown-origin",
                "origin is stated, sourced or assumed.",
                env(lambda e: e["claims"][1].__setitem__("origin", "rumoured")),
                error={"code": "envelope_invalid"},
            ),
            Mutation(
                "escalate-without-question",
                "escalate needs a question.",
                env(lambda e: e.__setitem__("status", "escalate")),
                error=err("escalation_question_missing"),
            ),
            Mutation(
                "uppercase-intent-hash",
                "Hashes are lowercase hex.",
                env(lambda e: e.__setitem__("intent_hash", e["intent_hash"].upper())),
                error={"code": "envelope_invalid"},
            ),
            Mutation(
                "seat-c",
                "A v0 room has seats A and B.",
                env(lambda e: e["from"].__setitem__("seat", "C")),
                error=err("seat"),
            ),
            Mutation(
                "unknown-member",
                "Members outside the protocol are refused.",
                env(lambda e: e.__setitem__("signature", "x")),
                error=err("unknown_member"),
            ),
            Mutation(
                "wrong-pxp",
                'pxp is "0".',
                env(lambda e: e.__setitem__("pxp", "1")),
                error={"code": "envelope_invalid"},
            ),
            Mutation(
                "duplicate-review",
                "A claim is reviewed at most once per envelope.",
                env(
                    lambda e: e.__setitem__(
                        "reviews",
                        [
                            {"claim_id": "B2.1", "verdict": "accept"},
                            {"claim_id": "B2.1", "verdict": "challenge"},
                        ],
                    )
                ),
                error=err("review_duplicate"),
            ),
        ],
    )
    yield from _derive(
        "pxp.envelope_hash",
        agree,
        [
            Mutation(
                "agree-without-accepts",
                "A stored agreement names what it accepts.",
                env(lambda e: e.pop("accepts")),
                error=err("accepts_missing"),
            ),
            Mutation(
                "agree-with-proposal",
                "An agreement carries no counter-proposal.",
                env(lambda e: e.__setitem__("proposal", {"terms": ["x"]})),
                error=err("agree_with_proposal"),
            ),
            Mutation(
                "accepts-on-continue",
                "Only agree names an accepted proposal.",
                env(lambda e: e.__setitem__("status", "continue")),
                error=err("accepts_not_agree"),
            ),
        ],
    )


@suite(
    "pxp.proposal_hash",
    description=(
        "sha256hex(canonical(terms)): the hash of a proposal's terms (depends_on is not covered)."
    ),
    notes={**NOTES, "non-ascii": "terms outside ASCII are hashed as raw UTF-8"},
)
def proposal_hash_cases() -> Iterator[Case]:
    for case_id, terms, flags in (
        ("one-term", ["Fixed price 3800 EUR"], ()),
        (
            "five-terms",
            ["Rebuild on Shopify", "Launch by 1 March", "3800 EUR", "30% upfront", "Two revisions"],
            (),
        ),
        ("order-matters", ["Launch by 1 March", "Rebuild on Shopify"], ()),
        (
            "quotes-and-unicode",
            ['Deliver the "premium" tier', "Prix: 3 800 €\u00a0TTC"],
            ("non-ascii",),
        ),
    ):
        yield Case(
            case_id,
            {"terms": terms},
            output={"proposal_hash": _sha(_canon(terms))},
            comment="Terms in order, canonical JSON array.",
            flags=flags,
        )
    yield Case(
        "term-not-string",
        {"terms": ["3800 EUR", 3800]},
        error={"code": "proposal_invalid"},
        comment="Terms are strings.",
    )


# ----------------------------------------------------------------------------- ledgers


def _chain(specs: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    prev = ZERO
    for n, (kind, at, data) in enumerate(specs, start=1):
        digest = _sha(prev + _canon({"n": n, "type": kind, "at": at, "data": data}))
        entries.append({"n": n, "type": kind, "at": at, "data": data, "prev": prev, "hash": digest})
        prev = digest
    return entries


LEDGER = _chain(
    [
        ("room_opened", _t(0), {"topic": "Shop website rebuild", "protocol": "PXP/0"}),
        ("agent_joined", _t(1), {"seat": "B", "agent": "claude-desktop", "mode": "external"}),
        (
            "card_sealed",
            _t(2),
            {"seat": "A", "principal": "Maya Chen", "card_hash": "a" * 64, "via": "web"},
        ),
        (
            "card_sealed",
            _t(3),
            {"seat": "B", "principal": "Tom Okafor", "card_hash": "b" * 64, "via": "mcp"},
        ),
        (
            "envelope",
            _t(4),
            {"seq": 1, "seat": "A", "status": "continue", "envelope_hash": "c" * 64},
        ),
        (
            "envelope",
            _t(5),
            {"seq": 2, "seat": "B", "status": "escalate", "envelope_hash": "d" * 64},
        ),
        ("escalation", _t(6), {"seat": "B", "seq": 2, "question_hash": _sha("May I go to 3800?")}),
        (
            "principal_answer",
            _t(7),
            {
                "seat": "B",
                "speaker": "principal",
                "via": "mcp",
                "answer_hash": _sha("Yes."),
                "card_hash": "e" * 64,
            },
        ),
        ("envelope", _t(8), {"seq": 3, "seat": "B", "status": "agree", "envelope_hash": "f" * 64}),
        ("agreement", _t(9), {"proposal_hash": "1" * 64, "proposed_by": "A", "accepted_by": "B"}),
    ]
)


def _invalid(index: int, reason: str) -> dict[str, Any]:
    return {"valid": False, "index": index, "reason": reason}


@suite(
    "pxp.verify_ledger",
    description=(
        "Verify a hash-chained ledger, optionally against the head "
        "it must end at; a failure names the first bad entry."
    ),
    notes=NOTES,
)
def verify_ledger_cases() -> Iterator[Case]:
    yield Case(
        "reference-sample-ledger",
        {"entries": SAMPLE["ledger"]},
        output={"valid": True, "head": SAMPLE["ledger"][-1]["hash"]},
        comment="The reference server's ledger of the sample room.",
        flags=("reference",),
    )
    yield Case(
        "reference-sample-ledger-with-head",
        {"entries": SAMPLE["ledger"], "head": SAMPLE["ledger"][-1]["hash"]},
        output={"valid": True, "head": SAMPLE["ledger"][-1]["hash"]},
        comment="Checked against the head a brief would carry.",
        flags=("reference",),
    )
    yield Case(
        "empty",
        {"entries": []},
        output={"valid": True, "head": ZERO},
        comment="No entries: head is 64 zeros.",
    )
    head = LEDGER[-1]["hash"]
    good = Case(
        "every-entry-type",
        {"entries": LEDGER, "head": head},
        output={"valid": True, "head": head},
        comment="Ten entries of every type a room writes, with the head.",
    )
    yield good

    def at(i: int, key: str, value: Any) -> Any:
        return lambda c: c["entries"][i].__setitem__(key, value)

    def swap(c: dict[str, Any]) -> None:
        e = c["entries"]
        e[4], e[5] = e[5], e[4]

    def forged_insert(c: dict[str, Any]) -> None:
        # a correctly hashed entry chained to entry 3, slipped in before entry 4
        prev = c["entries"][3]["hash"]
        body = {
            "n": 5,
            "type": "envelope",
            "at": _t(4),
            "data": {"seq": 1, "seat": "B", "status": "agree", "envelope_hash": "9" * 64},
        }
        forged = {**body, "prev": prev, "hash": _sha(prev + _canon(body))}
        c["entries"].insert(4, forged)

    yield from _derive(
        "pxp.verify_ledger",
        good,
        [
            Mutation(
                "changed-data",
                "An envelope's recorded status changed after the fact.",
                lambda c: c["entries"][4]["data"].__setitem__("status", "agree"),
                output=_invalid(4, "hash_mismatch"),
            ),
            Mutation(
                "changed-at",
                "A time rewritten.",
                at(2, "at", _t(30)),
                output=_invalid(2, "hash_mismatch"),
            ),
            Mutation(
                "changed-type",
                "An entry's type rewritten.",
                at(6, "type", "agreement"),
                output=_invalid(6, "hash_mismatch"),
            ),
            Mutation(
                "changed-hash",
                (
                    "A stored hash changed: that entry no longer hashes to it, "
                    "so it fails before the next entry's prev does."
                ),
                at(
                    9,
                    "hash",
                    "0" + LEDGER[9]["hash"][1:]
                    if LEDGER[9]["hash"][0] != "0"
                    else "1" + LEDGER[9]["hash"][1:],
                ),
                output=_invalid(9, "hash_mismatch"),
            ),
            Mutation(
                "wrong-prev",
                "prev is not the previous entry's hash.",
                at(3, "prev", "f" * 64),
                output=_invalid(3, "wrong_prev"),
            ),
            Mutation(
                "wrong-n", "n does not count from 1.", at(5, "n", 7), output=_invalid(5, "wrong_n")
            ),
            Mutation("reordered", "Two entries swapped.", swap, output=_invalid(4, "wrong_n")),
            Mutation(
                "dropped",
                "An entry removed from the middle.",
                lambda c: c["entries"].pop(6),
                output=_invalid(6, "wrong_n"),
            ),
            Mutation(
                "inserted",
                "A forged, correctly hashed entry inserted.",
                forged_insert,
                output=_invalid(5, "wrong_n"),
            ),
            Mutation(
                "truncated-against-head",
                "The last two entries cut off; only the head shows it.",
                lambda c: c.__setitem__("entries", c["entries"][:8]),
                output=_invalid(8, "head_mismatch"),
            ),
            Mutation(
                "extended-against-head",
                "The head of entry 7 was kept; the ledger goes on.",
                lambda c: c.__setitem__("head", LEDGER[7]["hash"]),
                output=_invalid(8, "extended"),
            ),
            Mutation(
                "extra-member",
                "An entry with a member outside {n,type,at,data,prev,hash}.",
                lambda c: c["entries"][1].__setitem__("sig", "x"),
                output=_invalid(1, "malformed_entry"),
            ),
            Mutation(
                "n-as-string",
                "n is an integer.",
                at(0, "n", "1"),
                output=_invalid(0, "malformed_entry"),
            ),
        ],
    )
    yield Case(
        "head-not-hex",
        {"entries": LEDGER, "head": "HEAD"},
        error={"code": "head_invalid"},
        comment="The expected head itself is malformed.",
    )


# ----------------------------------------------------------------------------- rooms

CARD_A: dict[str, Any] = {
    "principal": {"name": "Ana Silva"},
    "goal": "Sell the van.",
    "must_haves": ["At least 5000 EUR"],
    "may_agree_to": ["Pickup in Lyon"],
    "must_never": ["Deliver abroad"],
    "known_facts": ["The van has 80000 km"],
}
CARD_B: dict[str, Any] = {
    "principal": {"name": "Bo Berg"},
    "goal": "Buy a van.",
    "must_haves": ["Below 6000 EUR"],
    "known_facts": ["I live in Lyon"],
}
ROOM = {"id": "van-1", "topic": "Used van", "opened_at": _t(0), "max_turns": 10}
SEALED = [
    {"seat": "A", "at": _t(1), "seal": CARD_A, "via": "web"},
    {"seat": "B", "at": _t(2), "seal": CARD_B, "via": "mcp"},
]
OFFER = {
    "seat": "A",
    "at": _t(3),
    "send": {
        "message": "5500 EUR, pickup in Lyon.",
        "claims": [
            {"text": "The van has 80000 km", "origin": "stated", "ref": "known_facts[0]"},
            {"text": "Vans like this sell for 5500 EUR", "origin": "assumed"},
        ],
        "proposal": {"terms": ["5500 EUR", "Pickup in Lyon"], "depends_on": ["new1", "new2"]},
        "status": "continue",
    },
}
OFFER_HASH = _sha(_canon(["5500 EUR", "Pickup in Lyon"]))
ACCEPT_BOTH = [{"claim_id": "A3.1", "verdict": "accept"}, {"claim_id": "A3.2", "verdict": "accept"}]
FLAG = {
    # the reference server's own sentences (lib/pxp.js), for the rules it shares
    "ref": 'Claim "{text}" was tagged {origin} without a reference; downgraded to assumed.',
    "stated_other": 'Claim "{text}" cited the other side as its authority; downgraded to assumed.',
    "conflict": "Proxy tried to agree while flagging a conflict; agreement withheld.",
    "no_proposal": (
        "Proxy agreed but there was no proposal from the other side; treated as continue."
    ),
    "disputed": (
        "Proxy tried to accept a proposal resting on {claims}, which it disputed; agreement "
        "withheld."
    ),
    # ours, for rules the reference does not have
    "not_in_clause": (
        "Claim {claim} was tagged stated but {clause} of its card does not hold its text, so "
        "it is recorded as assumed."
    ),
    "restated": (
        "Claim {claim} repeats {cited}, an unverified assumption, so it is recorded as "
        "assumed: re-stating a claim does not upgrade its origin."
    ),
    "unreviewed": (
        "Claim {claim} of the other side was not reviewed "
        "before replying, so it is recorded as challenged."
    ),
    "wrong_hash": (
        "This envelope agreed to a proposal hash that is not the other side's latest proposal, "
        "so its status is recorded as continue."
    ),
}


def _room_input(
    steps: list[dict[str, Any]], seat: str, second: int, draft: dict[str, Any]
) -> dict[str, Any]:
    return {
        "room": ROOM,
        "steps": [*SEALED, *steps],
        "envelope": {"seat": seat, "at": _t(second), "send": draft},
    }


def _stored(
    seat: str,
    seq: int,
    message: str,
    intent: str,
    *,
    claims: list[dict[str, Any]] | None = None,
    reviews: list[dict[str, Any]] | None = None,
    status: str = "continue",
    extra: dict[str, Any] | None = None,
    flags: list[str] | None = None,
) -> dict[str, Any]:
    env: dict[str, Any] = {
        "pxp": "0",
        "room": ROOM["id"],
        "seq": seq,
        "from": {
            "seat": seat,
            "principal": "Ana Silva" if seat == "A" else "Bo Berg",
            "speaker": "proxy",
        },
        "intent_hash": intent,
        "message": message,
        "claims": claims or [],
        "reviews": reviews or [],
        "status": status,
    }
    env.update(extra or {})
    # as the reference stores them: every review and escalation has a reason, a proposal
    # has depends_on and the envelope its proposal_hash
    env["reviews"] = [{"reason": "", **r} for r in env["reviews"]]
    if "escalation" in env:
        env["escalation"] = {"reason": "", **env["escalation"]}
    if "proposal" in env:
        env["proposal"] = {"depends_on": [], **env["proposal"]}
        env["proposal_hash"] = _sha(_canon(env["proposal"]["terms"]))
    if flags:
        env["protocol_flags"] = flags
    return env


def _card_hash(card: dict[str, Any]) -> str:
    full = {
        "pxp": "0",
        "may_agree_to": [],
        "must_never": [],
        "escalate_when": [],
        "known_facts": [],
        **card,
        "principal": {"role": "", **card["principal"]},
        "amendments": [],
    }
    return _sha(_canon(full))


HASH_A, HASH_B = _card_hash(CARD_A), _card_hash(CARD_B)
ENFORCE_NOTES = {
    **NOTES,
    "reference-rules": "the bytes the reference's buildEnvelope stores for this draft",
    "stricter-than-reference": (
        "the reference stores this draft unflagged; this library's stricter rule (origins, "
        "bundled terms) rewrites it, so the bytes differ from the reference's"
    ),
    "rewrite": "the room rewrote what the proxy sent and recorded a protocol flag",
    "refused": "the room refused the envelope; nothing changed",
}


def _expect(envelope: dict[str, Any], status: str = "active") -> dict[str, Any]:
    # envelope_hash and ledger_head are left to the library (checked elsewhere); see _fill
    return {"envelope": envelope, "flags": envelope.get("protocol_flags", []), "status": status}


def _without_blank_ref(claim: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in claim.items() if k != "ref" or v.strip()}


def _one_claim(
    case: Callable[..., Case],
    case_id: str,
    comment: str,
    seat: str,
    claim: dict[str, Any],
    origin: str,
    flag: str,
    *,
    reviews: list[dict[str, Any]] | None = None,
    tags: tuple[str, ...] = ("rewrite",),
) -> Case:
    """A case of one claim the room rewrites: seat A opening (seq 1), or seat B answering
    ``OFFER`` with ``reviews`` (seq 2); the claim is stored with ``origin`` and ``flag``."""
    draft: dict[str, Any] = {"message": "m", "status": "continue"}
    if reviews is not None:
        draft["reviews"] = reviews
    draft["claims"] = [claim]
    seq, intent = (1, HASH_A) if seat == "A" else (2, HASH_B)
    stored = _stored(
        seat,
        seq,
        "m",
        intent,
        # a ref that trims to nothing is left out (spec section 3)
        claims=[{"id": f"{seat}{seq}.1", **_without_blank_ref(claim), "origin": origin}],
        reviews=reviews,
        flags=[flag],
    )
    inp = _room_input([], "A", 3, draft) if seat == "A" else _room_input([OFFER], "B", 4, draft)
    return case(case_id, comment, inp, _expect(stored), tags)


@suite(
    "pxp.enforce",
    description=(
        "Play a room's steps, send one more envelope draft, and return the envelope as stored "
        "after enforcement, its flags, its hash, the room status and the ledger head."
    ),
    notes=ENFORCE_NOTES,
)
def enforce_cases() -> Iterator[Case]:
    yield from _enforce_cases()


def _enforce_cases() -> Iterator[Case]:
    import pxp  # the library fills the two hashes of each expected output

    def case(
        case_id: str,
        comment: str,
        inp: dict[str, Any],
        expected: dict[str, Any] | None,
        flags: tuple[str, ...] = (),
        error: dict[str, str] | None = None,
    ) -> Case:
        output = None
        if expected is not None:
            output = {
                **expected,
                "envelope_hash": pxp.envelope_hash(expected["envelope"]),
            }
            # the ledger head depends on every step: take the library's, keep the rest stated
            from ppcheck import run

            got = run("pxp.enforce", inp)
            if got.output is not None:
                output["ledger_head"] = got.output["ledger_head"]
            output = {
                k: output[k]
                for k in ("envelope", "flags", "envelope_hash", "status", "ledger_head")
                if k in output
            }
        return Case(case_id, inp, output=output, error=error, comment=comment, flags=flags)

    offer_stored = _stored(
        "A",
        1,
        OFFER["send"]["message"],
        HASH_A,
        claims=[
            {
                "id": "A1.1",
                "text": "The van has 80000 km",
                "origin": "stated",
                "ref": "known_facts[0]",
            },
            {"id": "A1.2", "text": "Vans like this sell for 5500 EUR", "origin": "assumed"},
        ],
        extra={
            "proposal": {"terms": ["5500 EUR", "Pickup in Lyon"], "depends_on": ["A1.1", "A1.2"]}
        },
    )
    first = {**OFFER}
    inp = {"room": ROOM, "steps": SEALED, "envelope": {**first, "at": _t(3)}}
    yield case(
        "first-offer",
        "A clean first envelope: ids assigned, newN resolved.",
        inp,
        _expect(offer_stored),
    )

    # --- origin rewrites
    for case_id, comment, claim in (
        (
            "stated-without-ref",
            "A stated claim without ref is recorded as assumed.",
            {"text": "Price is fair", "origin": "stated"},
        ),
        (
            "sourced-with-empty-ref",
            "A sourced claim with an empty ref is recorded as assumed.",
            {"text": "Listed on a site", "origin": "sourced", "ref": ""},
        ),
    ):
        yield _one_claim(
            case,
            case_id,
            comment,
            "A",
            claim,
            "assumed",
            FLAG["ref"].format(text=claim["text"], origin=claim["origin"]),
        )
    yield _one_claim(
        case,
        "stated-citing-the-other-side",
        "B cites A's claim as stated: recorded as assumed.",
        "B",
        {"text": "Vans like this sell for 5500 EUR", "origin": "stated", "ref": "A1.2"},
        "assumed",
        FLAG["stated_other"].format(text="Vans like this sell for 5500 EUR"),
        reviews=[
            {"claim_id": "A1.1", "verdict": "accept"},
            {"claim_id": "A1.2", "verdict": "challenge"},
        ],
    )
    yield _one_claim(
        case,
        "restating-the-other-side",
        "B repeats A's claim as stated with a ref to a clause that says something else: assumed.",
        "B",
        {"text": "The van has 80000 km", "origin": "stated", "ref": "known_facts[0]"},
        "assumed",
        FLAG["not_in_clause"].format(claim="B2.1", clause="known_facts[0]"),
        reviews=[
            {"claim_id": "A1.1", "verdict": "accept"},
            {"claim_id": "A1.2", "verdict": "accept"},
        ],
    )
    draft = {
        "message": "m",
        "status": "continue",
        "reviews": [{"claim_id": "A1.2", "verdict": "accept"}],
    }
    yield case(
        "unreviewed-claim",
        "B replies without reviewing A1.1: recorded as challenged.",
        _room_input([OFFER], "B", 4, draft),
        _expect(
            _stored(
                "B",
                2,
                "m",
                HASH_B,
                reviews=[
                    {"claim_id": "A1.2", "verdict": "accept"},
                    {"claim_id": "A1.1", "verdict": "challenge", "reason": "not reviewed"},
                ],
                flags=[FLAG["unreviewed"].format(claim="A1.1")],
            )
        ),
        ("rewrite",),
    )
    # --- agreement
    accept_all = [
        {"claim_id": "A1.1", "verdict": "accept"},
        {"claim_id": "A1.2", "verdict": "accept"},
    ]
    draft = {"message": "Deal.", "status": "agree", "reviews": accept_all}
    yield case(
        "agree",
        "B accepts A's proposal: accepts names seq and proposal hash; the room is agreed.",
        _room_input([OFFER], "B", 4, draft),
        _expect(
            _stored(
                "B",
                2,
                "Deal.",
                HASH_B,
                reviews=accept_all,
                status="agree",
                extra={"accepts": {"seq": 1, "proposal_hash": OFFER_HASH}},
            ),
            "agreed",
        ),
    )
    good_agree = Case("agree", _room_input([OFFER], "B", 4, draft))
    for mutation_id, comment, change, flag_text in (
        (
            "with-conflict",
            "An agree carrying a conflict review becomes continue.",
            lambda d: d["reviews"].__setitem__(1, {"claim_id": "A1.2", "verdict": "conflict"}),
            [FLAG["disputed"].format(claims="A1.2"), FLAG["conflict"]][::-1],
        ),
        (
            "wrong-hash",
            "An agree naming another proposal hash becomes continue.",
            lambda d: d.__setitem__("accepts", {"proposal_hash": "0" * 64}),
            [FLAG["wrong_hash"]],
        ),
        (
            "challenged-dependency",
            "An agree to a proposal depending on a claim this seat challenges becomes continue.",
            lambda d: d["reviews"].__setitem__(1, {"claim_id": "A1.2", "verdict": "challenge"}),
            [FLAG["disputed"].format(claims="A1.2")],
        ),
    ):
        mutated = copy.deepcopy(good_agree.input)
        change(mutated["envelope"]["send"])
        send = mutated["envelope"]["send"]
        yield case(
            f"agree-{mutation_id}",
            comment,
            mutated,
            _expect(_stored("B", 2, "Deal.", HASH_B, reviews=send["reviews"], flags=flag_text)),
            ("derived", "rewrite"),
        )
    yield case(
        "agree-without-proposal",
        "Nothing to accept: agree becomes continue.",
        _room_input([], "A", 3, {"message": "Deal.", "status": "agree"}),
        _expect(_stored("A", 1, "Deal.", HASH_A, flags=[FLAG["no_proposal"]])),
        ("rewrite",),
    )
    # dispute, escalation, answer, then agree
    steps = [
        OFFER,
        {
            "seat": "B",
            "at": _t(4),
            "send": {
                "message": "Source?",
                "status": "escalate",
                "reviews": [
                    {"claim_id": "A1.1", "verdict": "accept"},
                    {"claim_id": "A1.2", "verdict": "challenge", "reason": "No source."},
                ],
                "escalation": {
                    "question": "A says vans sell for 5500 EUR without a source. Accept anyway?"
                },
            },
        },
        {"seat": "B", "at": _t(5), "answer": "Yes, 5500 is fine.", "via": "mcp"},
    ]
    amended = {
        "pxp": "0",
        "may_agree_to": [],
        "must_never": [],
        "escalate_when": [],
        "known_facts": [],
        **CARD_B,
        "principal": {"role": "", **CARD_B["principal"]},
        "amendments": [
            {
                "question": "A says vans sell for 5500 EUR without a source. Accept anyway?",
                "answer": "Yes, 5500 is fine.",
                "at": _t(5),
            }
        ],
    }
    yield case(
        "agree-after-principal-answer",
        (
            "The dispute was escalated and answered: B may "
            "agree; its intent hash is the amended card's."
        ),
        _room_input(steps, "B", 6, {"message": "Deal.", "status": "agree"}),
        _expect(
            _stored(
                "B",
                3,
                "Deal.",
                _sha(_canon(amended)),
                status="agree",
                extra={"accepts": {"seq": 1, "proposal_hash": OFFER_HASH}},
            ),
            "agreed",
        ),
    )
    yield case(
        "escalate",
        "An escalation pauses the room.",
        _room_input(
            [],
            "A",
            3,
            {
                "message": "m",
                "status": "escalate",
                "escalation": {"question": "May I go lower?", "reason": "Outside may_agree_to"},
            },
        ),
        _expect(
            _stored(
                "A",
                1,
                "m",
                HASH_A,
                status="escalate",
                extra={
                    "escalation": {"question": "May I go lower?", "reason": "Outside may_agree_to"}
                },
            ),
            "paused",
        ),
    )
    # --- more rewrites and acceptances
    review_a = [
        {"claim_id": "A1.1", "verdict": "accept"},
        {"claim_id": "A1.2", "verdict": "accept"},
    ]
    yield _one_claim(
        case,
        "sourced-citing-the-other-side",
        "B names A's principal as its source: the other side is not a source.",
        "B",
        {"text": "Vans sell for 5500 EUR", "origin": "sourced", "ref": "Ana Silva"},
        "assumed",
        "Claim B2.1 was tagged sourced but its source is the other side, so it is "
        "recorded as assumed: the other proxy is not a source.",
        reviews=review_a,
    )
    draft = {
        "message": "m",
        "status": "continue",
        "reviews": review_a,
        "claims": [{"text": "The van has 80000 km", "origin": "stated", "ref": "known_facts[0]"}],
    }
    steps_b = [
        {"seat": "A", "at": _t(1), "seal": CARD_A, "via": "web"},
        {
            "seat": "B",
            "at": _t(2),
            "seal": {**CARD_B, "known_facts": ["The van has 80000 km"]},
            "via": "mcp",
        },
        OFFER,
    ]
    yield case(
        "restating-backed-by-own-card",
        "B's own card states the same fact: its stated claim stays stated.",
        {"room": ROOM, "steps": steps_b, "envelope": {"seat": "B", "at": _t(4), "send": draft}},
        _expect(
            _stored(
                "B",
                2,
                "m",
                _card_hash({**CARD_B, "known_facts": ["The van has 80000 km"]}),
                claims=[
                    {
                        "id": "B2.1",
                        "text": "The van has 80000 km",
                        "origin": "stated",
                        "ref": "known_facts[0]",
                    }
                ],
                reviews=review_a,
            )
        ),
    )
    reply = {
        "seat": "B",
        "at": _t(4),
        "send": {
            "message": "Why 5500?",
            "status": "continue",
            "reviews": [
                {"claim_id": "A1.1", "verdict": "accept"},
                {"claim_id": "A1.2", "verdict": "challenge"},
            ],
        },
    }
    backing = {
        "message": "Here is the listing.",
        "status": "continue",
        "claims": [
            {
                "text": "Argus lists this model at 5600 EUR",
                "origin": "sourced",
                "ref": "https://argus.example/van",
                "backs": "A1.2",
            }
        ],
    }
    yield case(
        "backing-an-assumed-claim",
        "A backs its own assumed claim A1.2 with a sourced claim naming it.",
        _room_input([OFFER, reply], "A", 5, backing),
        _expect(
            _stored(
                "A",
                3,
                "Here is the listing.",
                HASH_A,
                claims=[
                    {
                        "id": "A3.1",
                        "text": "Argus lists this model at 5600 EUR",
                        "origin": "sourced",
                        "ref": "https://argus.example/van",
                        "backs": "A1.2",
                    }
                ],
            )
        ),
    )
    counter = {
        "message": "Deal at 5200?",
        "status": "agree",
        "reviews": review_a,
        "proposal": {"terms": ["5200 EUR"]},
    }
    yield case(
        "agree-with-counter-proposal",
        "An agree carrying its own proposal becomes continue; the proposal stands.",
        _room_input([OFFER], "B", 4, counter),
        _expect(
            _stored(
                "B",
                2,
                "Deal at 5200?",
                HASH_B,
                reviews=review_a,
                extra={"proposal": {"terms": ["5200 EUR"]}},
                flags=[
                    "This envelope agreed while carrying its own proposal, so its status is "
                    "recorded as continue and the proposal stands as a counter-offer."
                ],
            )
        ),
        ("rewrite",),
    )
    abroad = {
        "seat": "B",
        "at": _t(4),
        "send": {
            "message": "Deliver it to Spain.",
            "status": "continue",
            "reviews": review_a,
            "proposal": {"terms": ["5500 EUR", "Deliver abroad"]},
        },
    }
    yield case(
        "agree-to-a-must-never-term",
        "A term equal to A's must_never[0]: A's agree becomes continue.",
        _room_input([OFFER, abroad], "A", 5, {"message": "Fine.", "status": "agree"}),
        _expect(
            _stored(
                "A",
                3,
                "Fine.",
                HASH_A,
                flags=[
                    "This envelope agreed to a term that is must_never[0] of its own card, so its "
                    "status is recorded as continue: crossing a must_never needs the principal."
                ],
            )
        ),
        ("rewrite",),
    )
    # --- refusals
    for case_id, comment, seat, draft_, error in (
        (
            "not-your-turn",
            "B may not send first.",
            "B",
            {"message": "m", "status": "continue"},
            {"code": "not_your_turn"},
        ),
        (
            "review-unknown-claim",
            "Reviews name existing claims.",
            "A",
            {
                "message": "m",
                "status": "continue",
                "reviews": [{"claim_id": "B9.1", "verdict": "accept"}],
            },
            {"code": "envelope_rejected", "reason": "review_unknown_claim"},
        ),
        (
            "depends-on-unknown",
            "depends_on names existing claims.",
            "A",
            {
                "message": "m",
                "status": "continue",
                "proposal": {"terms": ["x"], "depends_on": ["B9.1"]},
            },
            {"code": "envelope_rejected", "reason": "depends_on_unknown"},
        ),
        (
            "escalate-without-question",
            "An escalation needs a question.",
            "A",
            {"message": "m", "status": "escalate"},
            {"code": "envelope_invalid", "reason": "escalation_question_missing"},
        ),
        (
            "nine-claims",
            "At most 8 claims.",
            "A",
            {
                "message": "m",
                "status": "continue",
                "claims": [{"text": "t", "origin": "assumed"}] * 9,
            },
            {"code": "envelope_invalid"},
        ),
        (
            "backs-other-seat",
            "Only an own assumed claim can be backed.",
            "A",
            {
                "message": "m",
                "status": "continue",
                "claims": [{"text": "t", "origin": "sourced", "ref": "doc", "backs": "B1.1"}],
            },
            {"code": "envelope_rejected", "reason": "backs_unknown"},
        ),
    ):
        yield case(
            case_id, comment, _room_input([], seat, 3, draft_), None, ("refused",), error=error
        )

    forged_card = {
        **CARD_A,
        "amendments": [{"question": "May I pay 9000 EUR?", "answer": "Yes.", "at": _t(1)}],
    }
    yield case(
        "seal-with-amendments",
        "A card that arrives carrying amendments is refused at sealing: amendments are a "
        "principal's answers and come only from answered escalations.",
        {
            "room": ROOM,
            "steps": [{"seat": "A", "at": _t(1), "seal": forged_card, "via": "mcp"}],
            "envelope": {"seat": "A", "at": _t(3), "send": {"message": "m", "status": "continue"}},
        },
        None,
        ("refused",),
        error={"code": "card_invalid", "reason": "amendments_at_seal"},
    )

    # --- origin upgrades through refs (adversarial review)
    sourced_assumption = (
        "Claim {claim} was tagged sourced but cites {cited}, an assumed claim of its own side, "
        "so it is recorded as assumed: an assumption is not a source."
    )
    stated_assumption = (
        "Claim {claim} was tagged stated but cites {cited}, an assumed claim, so it is recorded "
        "as assumed: citing an assumption does not make it stated."
    )
    draft = {
        "message": "m",
        "status": "continue",
        "claims": [
            {"text": "Price holds all year", "origin": "sourced", "ref": "see A1.2"},
            {"text": "Prices rise in spring", "origin": "assumed"},
        ],
    }
    yield case(
        "sourced-citing-a-later-own-claim",
        "A sourced claim whose source is a claim of its own envelope not yet made (here an "
        "assumption) is recorded as assumed.",
        _room_input([], "A", 3, draft),
        _expect(
            _stored(
                "A",
                1,
                "m",
                HASH_A,
                claims=[
                    {
                        "id": "A1.1",
                        "text": "Price holds all year",
                        "origin": "assumed",
                        "ref": "see A1.2",
                    },
                    {"id": "A1.2", "text": "Prices rise in spring", "origin": "assumed"},
                ],
                flags=[sourced_assumption.format(claim="A1.1", cited="A1.2")],
            )
        ),
        ("rewrite",),
    )
    draft = {
        "message": "m",
        "status": "continue",
        "claims": [{"text": "Market price is 5500 EUR", "origin": "stated", "ref": "a1.2"}],
    }
    yield case(
        "stated-citing-own-assumption-lowercase",
        "A claim id cited in lower case still counts: citing the seat's own assumption A1.2 "
        "does not make a claim stated.",
        _room_input(
            [
                OFFER,
                {
                    "seat": "B",
                    "at": _t(4),
                    "send": {
                        "message": "m",
                        "status": "continue",
                        "reviews": [
                            {"claim_id": "A1.1", "verdict": "accept"},
                            {"claim_id": "A1.2", "verdict": "accept"},
                        ],
                    },
                },
            ],
            "A",
            5,
            draft,
        ),
        _expect(
            _stored(
                "A",
                3,
                "m",
                HASH_A,
                claims=[
                    {
                        "id": "A3.1",
                        "text": "Market price is 5500 EUR",
                        "origin": "assumed",
                        "ref": "a1.2",
                    }
                ],
                flags=[stated_assumption.format(claim="A3.1", cited="A1.2")],
            )
        ),
        ("rewrite",),
    )
    draft = {
        "message": "m",
        "status": "continue",
        "claims": [
            {"text": "The van was serviced in May", "origin": "stated", "ref": "known_facts[3]"}
        ],
    }
    yield case(
        "stated-citing-a-missing-clause",
        "A stated claim citing a clause its own card does not hold (A has one known fact) is "
        "recorded as assumed.",
        _room_input([], "A", 3, draft),
        _expect(
            _stored(
                "A",
                1,
                "m",
                HASH_A,
                claims=[
                    {
                        "id": "A1.1",
                        "text": "The van was serviced in May",
                        "origin": "assumed",
                        "ref": "known_facts[3]",
                    }
                ],
                flags=[
                    "Claim A1.1 was tagged stated but cites known_facts[3], which its card does "
                    "not hold, so it is recorded as assumed."
                ],
            )
        ),
        ("rewrite",),
    )
    draft = {
        "message": "m",
        "status": "continue",
        "proposal": {"terms": ["5500 EUR", "Deliver abroad"]},
    }
    yield case(
        "proposal-crossing-own-must-never",
        "A proposal binds its proxy: a term that is the seat's own must_never is not offered "
        "(the proposal is dropped and flagged).",
        _room_input([], "A", 3, draft),
        _expect(
            _stored(
                "A",
                1,
                "m",
                HASH_A,
                flags=[
                    "This envelope proposed a term that is must_never[0] of its own card, so "
                    "the proposal is not recorded: crossing a must_never needs the principal."
                ],
            )
        ),
        ("rewrite",),
    )
    for case_id, ref in (
        ("stated-citing-the-other-side-lowercase", "a1.2"),
        ("stated-citing-their-proxy", "their proxy said so"),
        ("stated-citing-seat-a", "seat A"),
    ):
        yield _one_claim(
            case,
            case_id,
            f"B's stated claim cites the other side as {ref!r}: recorded as assumed.",
            "B",
            {"text": "Such vans fetch 5500 EUR", "origin": "stated", "ref": ref},
            "assumed",
            FLAG["stated_other"].format(text="Such vans fetch 5500 EUR"),
            reviews=[
                {"claim_id": "A1.1", "verdict": "accept"},
                {"claim_id": "A1.2", "verdict": "challenge"},
            ],
        )

    yield from _reference_room_rebuilds(case)
    yield from _stricter_cases(case)


REFERENCE_ROOMS: dict[str, Any] = json.loads(
    (TOP / "vectors" / "third_party" / "pxp" / "rooms.v0.json").read_text(encoding="utf-8")
)["rooms"]


def _draft_of(env: dict[str, Any]) -> dict[str, Any]:
    """The send_envelope fields a proxy sent for a stored reference envelope."""
    draft: dict[str, Any] = {"message": env["message"], "status": env["status"]}
    if env["claims"]:
        draft["claims"] = [
            {k: c[k] for k in ("text", "origin", "ref") if k in c} for c in env["claims"]
        ]
    if env["reviews"]:
        draft["reviews"] = [dict(r) for r in env["reviews"]]
    if "proposal" in env:
        draft["proposal"] = copy.deepcopy(env["proposal"])
    if "escalation" in env:
        draft["escalation"] = dict(env["escalation"])
    return draft


def _reference_room_rebuilds(case: Any) -> Iterator[Case]:
    """Each envelope of the reference's seven rooms, rebuilt from the draft that made it."""
    rooms = REFERENCE_ROOMS.values() if isinstance(REFERENCE_ROOMS, dict) else REFERENCE_ROOMS
    for ref_room in rooms:
        envelopes = ref_room["envelopes"]
        if not envelopes:
            continue
        recorded = {
            e["data"]["seq"]: e["data"]["envelope_hash"]
            for e in ref_room["ledger"]
            if e["type"] == "envelope"
        }
        sealed = [e for e in ref_room["ledger"] if e["type"] == "card_sealed"]
        spec = {
            "id": ref_room["id"],
            "topic": ref_room["topic"],
            "opened_at": ref_room["createdAt"],
            "max_turns": ref_room["maxTurns"],
        }
        steps: list[dict[str, Any]] = [
            {
                "seat": e["data"]["seat"],
                "at": e["at"],
                "seal": {
                    k: v
                    for k, v in ref_room["seats"][e["data"]["seat"]]["card"].items()
                    if k != "amendments"
                },
                "via": e["data"]["via"],
            }
            for e in sealed
        ]
        at = sealed[-1]["at"]
        for env in envelopes:
            inp = {
                "room": spec,
                "steps": copy.deepcopy(steps),
                "envelope": {"seat": env["from"]["seat"], "at": at, "send": _draft_of(env)},
            }
            made = case(
                f"reference-{ref_room['id']}-{env['seq']}",
                (
                    f"Envelope {env['seq']} of the reference's room {ref_room['id']}, rebuilt "
                    "from its draft: the stored bytes and the hash its ledger recorded."
                ),
                inp,
                _expect(
                    copy.deepcopy(env),
                    "agreed"
                    if env["status"] == "agree"
                    else ("paused" if env["status"] == "escalate" else "active"),
                ),
                ("reference",),
            )
            if made.output["envelope_hash"] != recorded[env["seq"]]:
                raise AssertionError(f"{made.id}: not the hash the reference recorded")
            yield made
            steps.append({"seat": env["from"]["seat"], "at": at, "send": _draft_of(env)})


def _stricter_cases(case: Any) -> Iterator[Case]:
    """Drafts the reference stores unflagged, where this library's stricter rules rewrite."""
    rules = {
        "restated": FLAG["restated"],
        "not_in_clause": FLAG["not_in_clause"],
        "never": (
            "This envelope agreed to a term that is {clause} of its own card, so its status is "
            "recorded as continue: crossing a must_never needs the principal."
        ),
    }
    guess = {
        "text": "Vans like this sell for 5500 EUR.",
        "origin": "sourced",
        "ref": "https://x.test/",
    }
    accept = [{"claim_id": "A1.1", "verdict": "accept"}, {"claim_id": "A1.2", "verdict": "accept"}]
    restated = rules["restated"].format(claim="B2.1", cited="A1.2")
    yield _one_claim(
        case,
        "sourced-repeat-of-an-assumption",
        "B repeats A's assumption word for word tagged sourced: it keeps A's origin, assumed.",
        "B",
        guess,
        "assumed",
        restated,
        reviews=accept,
        tags=("stricter-than-reference",),
    )
    # finding 4 of the second review: restating by containment after the shared normaliser
    for case_id, text in (
        ("trailing-zero-width-space", "Vans like this sell for 5500 EUR\u200b"),
        ("full-width-letter", "\uff36ans like this sell for 5500 EUR"),
        ("embedded", "I checked: vans like this sell for 5500 EUR, really"),
    ):
        yield _one_claim(
            case,
            f"sourced-repeat-of-an-assumption-{case_id}",
            "B restates A's assumption written differently, tagged sourced: one normalised "
            "text holds the other, so it keeps A's origin, assumed.",
            "B",
            {"text": text, "origin": "sourced", "ref": "https://x.test/"},
            "assumed",
            restated,
            reviews=accept,
            tags=("stricter-than-reference",),
        )
    embeds = {
        "text": "The van has 80000 km and a new gearbox",
        "origin": "stated",
        "ref": "known_facts[0]",
    }
    yield _one_claim(
        case,
        "stated-claim-embedding-its-clause",
        "A stated claim must be held by its clause, never the reverse: a text that embeds "
        "known_facts[0] and adds to it is assumed.",
        "A",
        embeds,
        "assumed",
        rules["not_in_clause"].format(claim="A1.1", clause="known_facts[0]"),
        tags=("stricter-than-reference",),
    )
    forbidden = {"text": "Deliver abroad", "origin": "stated", "ref": "must_never[0]"}
    yield _one_claim(
        case,
        "stated-citing-a-must-never",
        "A must_never clause forbids, it asserts nothing: a stated claim citing it is assumed.",
        "A",
        forbidden,
        "assumed",
        "Claim A1.1 was tagged stated but cites must_never[0], a must_never of its "
        "card, which forbids and asserts nothing, so it is recorded as assumed.",
        tags=("stricter-than-reference",),
    )
    unrelated = {"text": "The buyer pays cash", "origin": "stated", "ref": "goal"}
    yield _one_claim(
        case,
        "stated-citing-an-unrelated-clause",
        "A stated claim whose clause neither holds nor is held by its text: assumed.",
        "A",
        unrelated,
        "assumed",
        rules["not_in_clause"].format(claim="A1.1", clause="goal"),
        tags=("stricter-than-reference",),
    )
    bundled = {
        "seat": "B",
        "at": _t(3),
        "send": {
            "message": "m",
            "status": "continue",
            "proposal": {"terms": ["5200 EUR, deliver abroad"]},
        },
    }
    opening = {"seat": "A", "at": _t(3), "send": {"message": "m", "status": "continue"}}
    yield case(
        "agree-to-a-bundled-must-never",
        "A agrees to B's term '5200 EUR, deliver abroad', which holds A's must_never.",
        {
            "room": ROOM,
            "steps": [*SEALED, opening, {**bundled, "at": _t(4)}],
            "envelope": {"seat": "A", "at": _t(5), "send": {"message": "m", "status": "agree"}},
        },
        _expect(
            _stored("A", 3, "m", HASH_A, flags=[rules["never"].format(clause="must_never[0]")])
        ),
        ("stricter-than-reference",),
    )
    # finding 3 of the second review: one shared normaliser, so look-alikes still cross
    for case_id, term in (
        ("full-width", "\uff44\uff45\uff4c\uff49\uff56\uff45\uff52 abroad"),
        ("cyrillic-letter", "d\u0435liver abroad"),
        ("hyphen", "deliver-abroad"),
        ("underscore", "deliver_abroad"),
        ("no-space", "deliverabroad"),
        ("spaced-letters", "d e l i v e r abroad"),
        ("punctuation", "Deliver Abroad!?"),
    ):
        variant = {**bundled, "send": {**bundled["send"], "proposal": {"terms": [term]}}}
        yield case(
            f"agree-to-a-must-never-{case_id}",
            f"A agrees to B's term {term!r}: A's must_never 'Deliver abroad' after the shared "
            "normaliser (NFKC, case fold, Cf and marks removed, look-alikes to Latin, "
            "punctuation to space; or equal with spaces removed).",
            {
                "room": ROOM,
                "steps": [*SEALED, opening, {**variant, "at": _t(4)}],
                "envelope": {
                    "seat": "A",
                    "at": _t(5),
                    "send": {"message": "m", "status": "agree"},
                },
            },
            _expect(
                _stored("A", 3, "m", HASH_A, flags=[rules["never"].format(clause="must_never[0]")])
            ),
            ("stricter-than-reference",),
        )
    for case_id, term in (
        ("zero-width-space", "5500\u200bEUR"),
        ("bidi-override", "5500 \u202eRUE"),
    ):
        hidden = {"message": "m", "status": "continue", "proposal": {"terms": [term]}}
        yield case(
            f"proposal-term-with-{case_id}",
            f"A term holding a format character ({term!r}) reads as nothing on a page: the "
            "proposal is not recorded, whatever the card says.",
            _room_input([], "A", 3, hidden),
            _expect(
                _stored(
                    "A",
                    1,
                    "m",
                    HASH_A,
                    flags=[
                        f'This envelope proposed the term "{term}", which holds a format or '
                        "control character that reads as nothing, so the proposal is not "
                        "recorded."
                    ],
                )
            ),
            ("stricter-than-reference",),
        )
    padded = {
        "message": "  5500 EUR.\n",
        "status": "continue",
        "claims": [
            {"text": " The van has 80000 km ", "origin": "stated", "ref": " known_facts[0]"}
        ],
        "proposal": {"terms": [" 5500 EUR"]},
    }
    yield case(
        "trimmed-as-the-reference",
        (
            "Strings trimmed, depends_on [] and proposal_hash filled, as the reference's "
            "buildEnvelope stores them."
        ),
        _room_input([], "A", 3, padded),
        _expect(
            _stored(
                "A",
                1,
                "5500 EUR.",
                HASH_A,
                claims=[
                    {
                        "id": "A1.1",
                        "text": "The van has 80000 km",
                        "origin": "stated",
                        "ref": "known_facts[0]",
                    }
                ],
                extra={"proposal": {"terms": ["5500 EUR"]}},
            )
        ),
        ("reference-rules",),
    )


@suite(
    "pxp.brief",
    description="Play a room to its end and return the decision brief as JSON and Markdown.",
    notes=NOTES,
)
def brief_cases() -> Iterator[Case]:
    agree = {
        "seat": "B",
        "at": _t(4),
        "send": {
            "message": "Deal.",
            "status": "agree",
            "reviews": [
                {"claim_id": "A1.1", "verdict": "accept"},
                {"claim_id": "A1.2", "verdict": "accept"},
            ],
        },
    }
    yield Case(
        "agreed-with-unverified-assumption",
        {"room": ROOM, "steps": [*SEALED, OFFER, agree]},
        comment="Agreed at once; A1.2 is an unverified assumption the agreement depends on.",
    )
    steps = [
        {"seat": "A", "at": _t(0), "join": "behalf-builtin", "mode": "builtin"},
        {"seat": "B", "at": _t(0), "join": "claude-desktop"},
        *SEALED,
        OFFER,
        {
            "seat": "B",
            "at": _t(4),
            "send": {
                "message": "Source?",
                "status": "escalate",
                "reviews": [
                    {"claim_id": "A1.1", "verdict": "accept"},
                    {"claim_id": "A1.2", "verdict": "challenge", "reason": "No source."},
                ],
                "escalation": {"question": "Accept 5500 EUR without a source?"},
            },
        },
        {"seat": "B", "at": _t(5), "answer": "Yes, 5500 EUR is fine.", "via": "mcp"},
        {"seat": "B", "at": _t(6), "send": {"message": "Deal.", "status": "agree"}},
    ]
    yield Case(
        "agreed-after-escalation",
        {"room": ROOM, "steps": steps},
        comment="A challenged dependency, an escalation answered via MCP, then agreement.",
    )
    cash = {
        **CARD_A,
        "must_haves": ["Payment in cash, never by bank transfer"],
        "may_agree_to": ["5500 EUR"],
    }
    negated = [
        {"seat": "A", "at": _t(1), "seal": cash, "via": "web"},
        SEALED[1],
        {"seat": "A", "at": _t(3), "send": {"message": "m", "status": "continue"}},
        {
            "seat": "B",
            "at": _t(4),
            "send": {
                "message": "m",
                "status": "continue",
                "proposal": {"terms": ["bank transfer", "5500", "Payment in cash", "5500 EUR"]},
            },
        },
        {"seat": "A", "at": _t(5), "send": {"message": "m", "status": "agree"}},
    ]
    yield Case(
        "authority-by-whole-phrase",
        {"room": ROOM, "steps": negated},
        comment=(
            "A part rests on a clause only when equal (after the normaliser) to the clause or "
            "a whole phrase of it that is not negated: 'bank transfer' and '5500' rest on "
            "nothing, 'Payment in cash' on must_haves[0], '5500 EUR' on may_agree_to[0]."
        ),
    )
    look_alike = [
        {"seat": "B", "at": _t(0), "join": "bo-agent"},
        {"seat": "B", "at": _t(0), "join": "b\u043e-agent"},
        *SEALED,
        OFFER,
        agree,
    ]
    yield Case(
        "agents-numbered-with-a-look-alike",
        {"room": ROOM, "steps": look_alike},
        comment=(
            "Two agents in seat B, the second named with a Cyrillic o: the Markdown numbers "
            "each join and marks the second as reading like the first."
        ),
    )
    contested = [
        {"seat": "B", "at": _t(0), "join": "sneaky"},
        *SEALED,
        OFFER,
        agree,
        {"seat": "B", "at": _t(5), "contest": "bo-agent"},
    ]
    yield Case(
        "contested-after-agreement",
        {"room": ROOM, "steps": contested},
        comment=(
            "An agent seated in B agrees; then another presents B's invite: the agreement "
            "stays on record, the contest is listed and the Markdown warns under the outcome."
        ),
    )
    short = {**ROOM, "max_turns": 2}
    yield Case(
        "turn-limit",
        {
            "room": short,
            "steps": [
                *SEALED,
                OFFER,
                {
                    "seat": "B",
                    "at": _t(4),
                    "send": {
                        "message": "No.",
                        "status": "continue",
                        "reviews": [
                            {"claim_id": "A1.1", "verdict": "accept"},
                            {"claim_id": "A1.2", "verdict": "conflict"},
                        ],
                    },
                },
            ],
        },
        comment="No agreement within the turn limit.",
    )
    yield Case(
        "room-not-finished",
        {"room": ROOM, "steps": [*SEALED, OFFER]},
        error={"code": "invalid_transition", "reason": "active_brief"},
        comment="No brief while the room is still negotiating.",
    )


@suite(
    "pxp.import_room",
    description=(
        "Import a room export (the reference server's storage shape) "
        "by replaying its ledger; report the derived state."
    ),
    notes=NOTES,
)
def import_room_cases() -> Iterator[Case]:
    good = Case(
        "reference-sample-room",
        {"room": SAMPLE},
        output={
            "status": "paused",
            "turn": "A",
            "turns": 1,
            "ledger_head": SAMPLE["ledger"][-1]["hash"],
            "card_hashes": {
                "A": SAMPLE["seats"]["A"]["cardHash"],
                "B": SAMPLE["seats"]["B"]["cardHash"],
            },
            "pending": {"seat": "A", "seq": 1, "question": "May I go higher?"},
        },
        comment="The reference's paused room: every body matches the hash its ledger recorded.",
        flags=("reference",),
    )
    yield good

    def bad(reason: str) -> dict[str, str]:
        return {"code": "import_invalid", "reason": reason}

    yield from _derive(
        "pxp.import_room",
        good,
        [
            Mutation(
                "card-changed",
                "A card body that no longer matches its sealed hash.",
                lambda c: c["room"]["seats"]["B"]["card"].__setitem__("goal", "Other"),
                error=bad("card_hash"),
            ),
            Mutation(
                "envelope-changed",
                "An envelope body that no longer matches its hash.",
                lambda c: c["room"]["envelopes"][0].__setitem__("message", "x"),
                error=bad("envelope_hash"),
            ),
            Mutation(
                "escalation-entry-dropped",
                "The ledger stops before the escalation its last envelope requires.",
                lambda c: c["room"].__setitem__("ledger", c["room"]["ledger"][:4]),
                error=bad("truncated"),
            ),
            Mutation(
                "ledger-changed",
                "A ledger entry rewritten: the chain breaks.",
                lambda c: c["room"]["ledger"][1]["data"].__setitem__("via", "web"),
                error={"code": "ledger_invalid", "reason": "hash_mismatch"},
            ),
            Mutation(
                "head-mismatch",
                "Checked against another head.",
                lambda c: c.__setitem__("head", "1" * 64),
                error={"code": "ledger_invalid", "reason": "head_mismatch"},
            ),
        ],
    )
    yield from _reference_import_cases()
    yield from _seat_cases()
    yield from _replay_attack_cases()
    yield from _one_answer_cases()


def _seat_room(*entries: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """The paused sample room with B's agent joined, then ``entries``, chained here."""
    room = copy.deepcopy(SAMPLE)
    joined = ("agent_joined", {"seat": "B", "agent": "bo-agent", "mode": "external"})
    for second, (type_, data) in enumerate((joined, *entries), start=6):
        ledger = room["ledger"]
        prev, n, at = ledger[-1]["hash"], len(ledger) + 1, _t(second)
        digest = _sha(prev + _canon({"n": n, "type": type_, "at": at, "data": data}))
        ledger.append({"n": n, "type": type_, "at": at, "data": data, "prev": prev, "hash": digest})
    return room


def _seat_cases() -> Iterator[Case]:
    """Ours: a contested seat ends a running room; a released seat leaves it as it was."""
    order = {"code": "import_invalid", "reason": "order"}

    def rewrite(seat: str | None = None, agent: str | None = None) -> Any:
        def change(case: dict[str, Any]) -> None:
            data = case["room"]["ledger"][-1]["data"]
            data.update({k: v for k, v in (("seat", seat), ("agent", agent)) if v is not None})
            _rechain(case["room"])
            case.pop("head", None)

        return change

    cases = [
        (
            "seat-contested-ends-the-room",
            ("seat_contested", {"seat": "B", "agent": "sneaky"}),
            {"status": "ended", "turn": None, "pending": None},
            "Seat B's invite presented again after bo-agent joined with it: the paused room "
            "ends there, its pending escalation unanswered (spec section 4, contest).",
            Mutation(
                "contest-of-a-seat-nobody-holds",
                "The contest names seat A, which no agent joined: refused as live play "
                "refuses it (seat_invalid).",
                rewrite(seat="A"),
                error={"code": "seat_invalid"},
            ),
        ),
        (
            "seat-released-keeps-the-room",
            ("seat_released", {"seat": "B", "agent": "bo-agent"}),
            {
                "status": "paused",
                "turn": "A",
                "pending": {"seat": "A", "seq": 1, "question": "May I go higher?"},
            },
            "B's principal released bo-agent from seat B: the room stays as it was "
            "(spec section 4, release).",
            Mutation(
                "release-of-another-agent",
                "The release names an agent that does not hold the seat: refused.",
                rewrite(agent="sneaky"),
                error=order,
            ),
        ),
    ]
    for name, entry, state, comment, mutation in cases:
        room = _seat_room(entry)
        good = Case(
            name,
            {"room": room, "head": room["ledger"][-1]["hash"]},
            output={
                **state,
                "turns": 1,
                "ledger_head": room["ledger"][-1]["hash"],
                "card_hashes": {s: SAMPLE["seats"][s]["cardHash"] for s in ("A", "B")},
            },
            comment=comment,
        )
        yield good
        yield from _derive("pxp.import_room", good, [mutation])


def _reference_answered_room() -> dict[str, Any]:
    """The sample room carried on exactly as the reference server stores a room: the
    principal's answer is written onto the escalating envelope (``answer``, ``answer_via``)
    after that envelope was hashed; claim ids skip a number (a blank claim was dropped after
    numbering); the proposal's envelope carries ``proposal_hash`` and ``from.agent``; a claim
    is reviewed twice; ``depends_on`` names a claim nobody made. Hashes are computed here
    independently of the library."""
    room = copy.deepcopy(SAMPLE)

    def append(type_: str, data: dict[str, Any], second: int) -> None:
        ledger = room["ledger"]
        prev, n, at = ledger[-1]["hash"], len(ledger) + 1, _t(second)
        digest = _sha(prev + _canon({"n": n, "type": type_, "at": at, "data": data}))
        ledger.append({"n": n, "type": type_, "at": at, "data": data, "prev": prev, "hash": digest})

    def send(env: dict[str, Any], second: int) -> None:
        room["envelopes"].append(env)
        data = {
            "seq": env["seq"],
            "seat": env["from"]["seat"],
            "status": env["status"],
            "envelope_hash": _sha(_canon(env)),
        }
        append("envelope", data, second)

    answer = "Yes, up to 10."
    seat_a = room["seats"]["A"]
    seat_a["card"]["amendments"].append(
        {"question": "May I go higher?", "answer": answer, "at": _t(5)}
    )
    seat_a["cardHash"] = _sha(_canon(seat_a["card"]))
    append(
        "principal_answer",
        {
            "seat": "A",
            "speaker": "principal",
            "via": "web",
            "answer_hash": _sha(answer),
            "card_hash": seat_a["cardHash"],
        },
        5,
    )
    room["envelopes"][0].update({"answer": answer, "answer_via": "web"})  # after hashing
    terms = ["Price is 10"]
    digest = _sha(_canon(terms))
    base = {"pxp": "0", "room": SAMPLE["id"], "message": ""}
    send(
        {
            **base,
            "seq": 2,
            "from": {
                "seat": "A",
                "principal": "Fixture A",
                "speaker": "proxy",
                "agent": "External agent",
            },
            "intent_hash": seat_a["cardHash"],
            "claims": [
                {"id": "A2.1", "text": "Budget is 10", "origin": "stated", "ref": "amendment"},
                {"id": "A2.3", "text": "B can deliver", "origin": "assumed"},
            ],
            "reviews": [],
            "status": "continue",
            "proposal": {"terms": terms, "depends_on": ["A2.3", "zzz"]},
            "proposal_hash": digest,
        },
        6,
    )
    review = {"claim_id": "A2.1", "verdict": "accept", "reason": ""}
    send(
        {
            **base,
            "seq": 3,
            "from": {"seat": "B", "principal": "Fixture B", "speaker": "proxy"},
            "intent_hash": SAMPLE["seats"]["B"]["cardHash"],
            "claims": [],
            "reviews": [review, review, {"claim_id": "A2.3", "verdict": "accept", "reason": ""}],
            "status": "agree",
            "accepts": {"seq": 2, "proposal_hash": digest},
        },
        7,
    )
    append("agreement", {"proposal_hash": digest, "proposed_by": "A", "accepted_by": "B"}, 7)
    room["status"], room["pending"], room["turnCount"] = "agreed", None, 3
    return room


def _rechain(room: dict[str, Any]) -> None:
    """Recompute every envelope hash and the chain: a forger who holds no head."""
    by_seq = {e["seq"]: e for e in room["envelopes"]}
    prev = ZERO
    for entry in room["ledger"]:
        if entry["type"] == "envelope":
            env = by_seq[entry["data"]["seq"]]
            bare = {k: v for k, v in env.items() if k not in ("answer", "answer_via")}
            entry["data"]["envelope_hash"] = _sha(_canon(bare))
        body = {k: entry[k] for k in ("n", "type", "at", "data")}
        entry["prev"], entry["hash"] = prev, _sha(prev + _canon(body))
        prev = entry["hash"]


def _extend(case: dict[str, Any], type_: str, data: dict[str, Any]) -> None:
    """Append one entry to the case's ledger, chained; the head given no longer fits."""
    ledger = case["room"]["ledger"]
    prev, n, at = ledger[-1]["hash"], len(ledger) + 1, _t(len(ledger) + 1)
    digest = _sha(prev + _canon({"n": n, "type": type_, "at": at, "data": data}))
    ledger.append({"n": n, "type": type_, "at": at, "data": data, "prev": prev, "hash": digest})
    case.pop("head", None)


def _forge_disputed_agreement(case: dict[str, Any]) -> None:
    case["room"]["envelopes"][2]["reviews"][2]["verdict"] = "challenge"
    _rechain(case["room"])
    case.pop("head", None)


def _amend_card(room: dict[str, Any], seat: str, answer: str) -> None:
    """Seal into ``seat``'s exported card an answer to the sample's question."""
    record = room["seats"][seat]
    record["card"]["amendments"].append(
        {"question": "May I go higher?", "answer": answer, "at": _t(5)}
    )
    record["cardHash"] = _sha(_canon(record["card"]))


def _skip_a_turn(case: dict[str, Any]) -> None:
    """Envelope 3 sent by seat A again, in seat B's turn (and no agreement after it)."""
    room = case["room"]
    env = room["envelopes"][2]
    env["from"] = {"seat": "A", "principal": "Fixture A", "speaker": "proxy"}
    env["intent_hash"], env["status"], env["reviews"] = (
        room["seats"]["A"]["cardHash"],
        "continue",
        [],
    )
    del env["accepts"]
    entry = next(e for e in room["ledger"] if e["type"] == "envelope" and e["data"]["seq"] == 3)
    entry["data"].update({"seat": "A", "status": "continue"})
    room["ledger"] = [e for e in room["ledger"] if e["type"] != "agreement"]
    _rechain(room)
    case.pop("head", None)


def _reorder(case: dict[str, Any]) -> None:
    """Seat A's first envelope moved before seat B sealed its card."""
    ledger = case["room"]["ledger"]
    ledger[2], ledger[3] = ledger[3], ledger[2]
    for n, entry in enumerate(ledger, start=1):
        entry["n"] = n
    _rechain(case["room"])
    case.pop("head", None)


def _insert(case: dict[str, Any], at: int, type_: str, data: dict[str, Any]) -> None:
    """Insert one entry before ledger position ``at`` and re-chain (no head)."""
    ledger = case["room"]["ledger"]
    ledger.insert(at, {"n": 0, "type": type_, "at": ledger[at - 1]["at"], "data": data})
    for n, entry in enumerate(ledger, start=1):
        entry["n"] = n
    _rechain(case["room"])
    case.pop("head", None)


def _agree_on_unproposed_hash(case: dict[str, Any]) -> None:
    """Seat B accepts, and the agreement entry records, the hash of terms nobody proposed."""
    room = case["room"]
    forged = _sha(_canon(["Price is 1"]))
    room["envelopes"][2]["accepts"]["proposal_hash"] = forged
    room["ledger"][-1]["data"]["proposal_hash"] = forged
    _rechain(room)
    case.pop("head", None)


def _answer_by_the_other_seat(case: dict[str, Any]) -> None:
    """The paused sample answered by seat B's principal, whose card carries the answer."""
    room = case["room"]
    _amend_card(room, "B", "Yes.")
    data = {
        "seat": "B",
        "speaker": "principal",
        "via": "web",
        "answer_hash": _sha("Yes."),
        "card_hash": room["seats"]["B"]["cardHash"],
    }
    _extend(case, "principal_answer", data)


def _seal_an_unanswered_amendment(case: dict[str, Any]) -> None:
    """Seat A's card sealed already carrying an answer no principal_answer entry records."""
    room = case["room"]
    _amend_card(room, "A", "Yes, any price.")
    room["ledger"][1]["data"]["card_hash"] = room["seats"]["A"]["cardHash"]
    _rechain(room)
    case.pop("head", None)


def _paused_case(
    case_id: str,
    room: dict[str, Any],
    comment: str,
    *,
    head: bool = True,
    flags: tuple[str, ...] = (),
) -> Case:
    """``room``, the sample paused on seat A's question, as a good import (checked against
    its head unless ``head`` is false)."""
    given: dict[str, Any] = {"room": room}
    if head:
        given["head"] = room["ledger"][-1]["hash"]
    return Case(
        case_id,
        given,
        output={
            "status": "paused",
            "turn": "A",
            "turns": 1,
            "ledger_head": room["ledger"][-1]["hash"],
            "card_hashes": {s: SAMPLE["seats"][s]["cardHash"] for s in ("A", "B")},
            "pending": {"seat": "A", "seq": 1, "question": "May I go higher?"},
        },
        comment=comment,
        flags=flags,
    )


def _answered_case(case_id: str, comment: str) -> Case:
    """The answered and agreed room of :func:`_reference_answered_room` as a good import."""
    room = _reference_answered_room()
    return Case(
        case_id,
        {"room": room, "head": room["ledger"][-1]["hash"]},
        output={
            "status": "agreed",
            "turn": None,
            "turns": 3,
            "ledger_head": room["ledger"][-1]["hash"],
            "card_hashes": {
                "A": room["seats"]["A"]["cardHash"],
                "B": SAMPLE["seats"]["B"]["cardHash"],
            },
            "pending": None,
        },
        comment=comment,
        flags=("reference-shape",),
    )


def _replay_attack_cases() -> Iterator[Case]:
    """Ours (issue 25): an imported ledger is replayed through Room.apply, the gate live play
    goes through, so each forgery below (consistently re-chained, checked without a head)
    is refused with the code live play gives for the same act."""
    good = _answered_case(
        "replay-attacks-base",
        "The answered and agreed reference room each forgery below starts from.",
    )
    yield good
    yield from _derive(
        "pxp.import_room",
        good,
        [
            Mutation(
                "turn-skipped",
                "Seat A sends envelope 3 in seat B's turn.",
                _skip_a_turn,
                error={"code": "not_your_turn"},
            ),
            Mutation(
                "entries-reordered",
                "Seat A's first envelope recorded before seat B sealed its card.",
                _reorder,
                error={"code": "invalid_transition", "reason": "open_send"},
            ),
            Mutation(
                "seat-event-forged",
                "A seat_released entry for seat B, which no agent ever joined.",
                lambda c: _insert(c, 3, "seat_released", {"seat": "B", "agent": "bo-agent"}),
                error={"code": "seat_invalid"},
            ),
            Mutation(
                "card-sealed-after-agreement",
                "A card_sealed entry after the agreement: the finished room is re-entered.",
                lambda c: _extend(c, "card_sealed", dict(c["room"]["ledger"][2]["data"])),
                error={"code": "invalid_transition", "reason": "agreed_seal"},
            ),
            Mutation(
                "agreement-on-unproposed-hash",
                "Seat B agrees, and the agreement entry records, a hash no proposal had.",
                _agree_on_unproposed_hash,
                error={"code": "import_invalid", "reason": "agreement"},
            ),
        ],
    )
    paused = _paused_case(
        "replay-attacks-paused-base",
        copy.deepcopy(SAMPLE),
        "The paused reference sample the two forgeries below start from.",
        head=False,
        flags=("reference",),
    )
    yield paused
    yield from _derive(
        "pxp.import_room",
        paused,
        [
            Mutation(
                "answer-by-the-other-seat",
                "Seat B's principal answers seat A's pending escalation.",
                _answer_by_the_other_seat,
                error={"code": "not_your_escalation"},
            ),
            Mutation(
                "sealed-with-an-unanswered-amendment",
                "Seat A's card sealed carrying an answer no principal ever gave in this room.",
                _seal_an_unanswered_amendment,
                error={"code": "card_invalid", "reason": "amendments_at_seal"},
            ),
        ],
    )


def _change_entry(index: int, change: Callable[[dict[str, Any]], None]) -> Any:
    """A mutation: ledger entry ``index`` changed by ``change``, re-chained, no head."""

    def mutate(case: dict[str, Any]) -> None:
        change(case["room"]["ledger"][index])
        _rechain(case["room"])
        case.pop("head", None)

    return mutate


# times live play never writes (it writes format_time: RFC 3339 UTC, milliseconds, Z)
_OTHER_TIMES = {
    "no-milliseconds": "2026-01-01T00:00:01Z",
    "offset": "2026-01-01T00:00:01.000+00:00",
    "no-such-day": "2026-02-30T00:00:01.000Z",
    "non-ascii-year": "\u0968\u0966\u0968\u096c-01-01T00:00:01.000Z",  # Devanagari digits
}


def _unreview_dependency(case: dict[str, Any]) -> None:
    """Seat B's agreeing envelope reviews A2.1 only: A2.3, the claim the accepted proposal
    depends on, is left unreviewed (live: recorded as challenged, agreement withheld)."""
    reviews = case["room"]["envelopes"][2]["reviews"]
    reviews[:] = [r for r in reviews if r["claim_id"] != "A2.3"]
    _rechain(case["room"])
    case.pop("head", None)


def _forbid_the_agreed_term(case: dict[str, Any]) -> None:
    """Seat B's card forbids the term it agrees to (live: agreement withheld)."""
    room = case["room"]
    record = room["seats"]["B"]
    record["card"]["must_never"] = ["Price is 10"]
    record["cardHash"] = _sha(_canon(record["card"]))
    sealed = next(
        e for e in room["ledger"] if e["type"] == "card_sealed" and e["data"]["seat"] == "B"
    )
    sealed["data"]["card_hash"] = record["cardHash"]
    room["envelopes"][2]["intent_hash"] = record["cardHash"]
    _rechain(room)
    case.pop("head", None)


def _bound_turn_limit_room() -> dict[str, Any]:
    """The paused sample as this library opens a room: ``room_opened`` holds ``max_turns``."""
    room = copy.deepcopy(SAMPLE)
    room["ledger"][0]["data"]["max_turns"] = room["maxTurns"]
    _rechain(room)
    return room


def _one_answer_cases() -> Iterator[Case]:
    """Ours (review i25b): an import reaches the state live play would, or is refused. Its
    entries are held to the form live play writes (each negative case below is derived
    mechanically, one per entry and mutation class), its turn limit is in the chain, and
    an agreement live play would withhold is refused."""
    good = _answered_case(
        "entry-forms-base",
        "The answered and agreed reference room each entry mutation below starts from.",
    )
    yield good

    def bad(reason: str) -> dict[str, str]:
        return {"code": "import_invalid", "reason": reason}

    mutations: list[Mutation] = []
    for i, entry in enumerate(good.input["room"]["ledger"]):
        kind = entry["type"]
        mutations.append(
            Mutation(
                f"entry-{i}-extra-member",
                f"Ledger entry {i} ({kind}) holds a member live play never writes.",
                _change_entry(i, lambda e: e["data"].__setitem__("note", 1)),
                error=bad("entry_members"),
            )
        )
        # one time form per entry, the forms taken in turn
        for name, at in [list(_OTHER_TIMES.items())[i % len(_OTHER_TIMES)]]:
            mutations.append(
                Mutation(
                    f"entry-{i}-time-{name}",
                    f"Ledger entry {i} ({kind}) stamped {at}: not a time live play writes.",
                    _change_entry(i, lambda e, at=at: e.__setitem__("at", at)),
                    error=bad("entry_time"),
                )
            )
        fixed = {"room_opened": ("protocol", "PXP/1"), "principal_answer": ("speaker", "proxy")}
        if kind in fixed:
            key, value = fixed[kind]
            mutations.append(
                Mutation(
                    f"entry-{i}-{key}",
                    f"Ledger entry {i} ({kind}) names {key} {value!r}; live play always "
                    f"writes {entry['data'][key]!r}.",
                    _change_entry(
                        i, lambda e, key=key, value=value: e["data"].__setitem__(key, value)
                    ),
                    error=bad("entry_value"),
                )
            )
    mutations += [
        Mutation(
            "agreement-on-an-unreviewed-dependency",
            "Seat B agrees without reviewing A2.3, on which the proposal rests: live play "
            "records A2.3 as challenged and withholds the agreement.",
            _unreview_dependency,
            error=bad("agreement_withheld"),
        ),
        Mutation(
            "agreement-over-a-must-never",
            "Seat B agrees to a term its own card forbids: live play withholds it.",
            _forbid_the_agreed_term,
            error=bad("agreement_withheld"),
        ),
    ]
    yield from _derive("pxp.import_room", good, mutations)

    bound = _bound_turn_limit_room()
    good = _paused_case(
        "turn-limit-in-the-chain",
        bound,
        "room_opened holds max_turns, as this library writes it: the chain binds it.",
    )
    yield good
    yield from _derive(
        "pxp.import_room",
        good,
        [
            Mutation(
                "max-turns-changed-in-the-export",
                "The export's maxTurns differs from the turn limit the ledger opened with.",
                lambda c: c["room"].__setitem__("maxTurns", 12),
                error=bad("max_turns"),
            ),
            Mutation(
                "max-turns-out-of-range",
                "room_opened holds a turn limit live play cannot open with (1).",
                lambda c: (
                    _change_entry(0, lambda e: e["data"].__setitem__("max_turns", 1))(c),
                    c["room"].pop("maxTurns"),
                ),
                error=bad("max_turns"),
            ),
        ],
    )


def _reference_import_cases() -> Iterator[Case]:
    good = _answered_case(
        "reference-answered-and-agreed",
        (
            "A room as the reference stores it after an answered escalation and an agreement: "
            "the envelope hash recorded for the escalating envelope excludes the answer and "
            "answer_via members the reference writes onto it afterwards."
        ),
    )
    yield good

    def bad(reason: str) -> dict[str, str]:
        return {"code": "import_invalid", "reason": reason}

    yield from _derive(
        "pxp.import_room",
        good,
        [
            Mutation(
                "late-answer-changed",
                "The answer written onto the escalating envelope is not the answer the ledger "
                "hashed.",
                lambda c: c["room"]["envelopes"][0].__setitem__("answer", "Yes, up to 1000."),
                error=bad("answer_mismatch"),
            ),
            Mutation(
                "late-answer-via-changed",
                "The answer's channel on the envelope differs from the ledger's.",
                lambda c: c["room"]["envelopes"][0].__setitem__("answer_via", "mcp"),
                error=bad("answer_mismatch"),
            ),
            Mutation(
                "late-answer-on-unanswered-envelope",
                "An answer member on an envelope no principal_answer entry answers.",
                lambda c: c["room"]["envelopes"][1].__setitem__("answer", "forged"),
                error=bad("answer_unrecorded"),
            ),
            Mutation(
                "agent-joins-after-agreement",
                "An agent_joined entry after the agreement (the reference lets an agent rename "
                "itself at any time): live play refuses a join in a finished room, and so does "
                "the import, with the same code.",
                lambda c: _extend(c, "agent_joined", {"seat": "B", "agent": "Late agent"}),
                error={"code": "invalid_transition", "reason": "agreed_join"},
            ),
            Mutation(
                "forged-agreement-on-disputed-claim",
                "A rewritten, consistently re-chained history in which the accepting seat "
                "challenged a claim the proposal depends on and still agreed: enforcement "
                "never stores that, so the import refuses it.",
                _forge_disputed_agreement,
                error=bad("agreement_disputed"),
            ),
        ],
    )
    gap = copy.deepcopy(good.input["room"])
    agreement = gap["ledger"][-1]
    del gap["ledger"][-1:]  # the agreement entry never written
    last = gap["ledger"][-1]
    body = {"n": last["n"] + 1, "type": "agreement", "at": last["at"], "data": agreement["data"]}
    yield Case(
        "reference-finalise-gap",
        {"room": gap, "head": last["hash"]},
        output={
            **good.output,
            "ledger_head": _sha(last["hash"] + _canon(body)),
        },
        comment=(
            "The reference appends the agreement entry only after an await; a room stored "
            "in between ends with the agreeing envelope. The import completes the agreement "
            "entry, stamped with the time of the last entry."
        ),
        flags=("reference-shape",),
    )
    sample = copy.deepcopy(SAMPLE)
    sample["envelopes"][0]["answer"] = "forged"
    yield Case(
        "reference-sample-room-forged-answer",
        {"room": sample},
        error=bad("answer_unrecorded"),
        comment="The paused sample room with an answer written on its pending escalation.",
        flags=("reference-shape",),
    )


@suite(
    "pxp.canonical",
    description=(
        "The canonical JSON text the reference hashes (JSON.stringify with sorted keys, no "
        "whitespace) and the SHA-256 of its UTF-8 bytes."
    ),
    notes={
        "key-order": "keys sort by UTF-16 code units, not by code points",
        "number": "numbers are written as ECMAScript Number::toString writes them",
        "number-spelling": (
            "the spelling in the vector file decides: a number spelled as an integer (no "
            "fraction, no exponent) beyond +-(2^53-1) is refused; one spelled with a fraction "
            "or an exponent is the double JSON.parse reads, written by Number::toString"
        ),
        "escape": "string escapes are those of JSON.stringify",
    },
)
def canonical_cases() -> Iterator[Case]:
    def out(text: str) -> dict[str, Any]:
        return {"text": text, "sha256": _sha(text)}

    yield Case(
        "nested-object",
        {"value": {"b": [1, {"d": None, "c": True}], "a": "x"}},
        output=out('{"a":"x","b":[1,{"c":true,"d":null}]}'),
        comment="Keys sorted at every level; no whitespace.",
    )
    yield Case(
        "astral-key-before-private-use",
        {"value": {"\ue000": 1, "\U0001f600": 2, "z": 3}},
        output=out('{"z":3,"\U0001f600":2,"\ue000":1}'),
        comment="U+1F600 is the surrogate pair D83D DE00, which sorts before U+E000 in UTF-16.",
        flags=("key-order",),
    )
    for case_id, value, text in (
        ("integral-float", 5.0, "5"),
        ("fraction", 0.1, "0.1"),
        ("large", 1e21, "1e+21"),
        ("below-exponent-threshold", 1e20, "100000000000000000000"),
        ("small", 1e-7, "1e-7"),
        ("small-plain", 0.000001, "0.000001"),
        ("negative-zero", -0.0, "0"),
        ("max-safe-integer", 9007199254740991, "9007199254740991"),
        ("min-safe-integer", -9007199254740991, "-9007199254740991"),
    ):
        spelled = case_id in ("large", "below-exponent-threshold")
        yield Case(
            f"number-{case_id}",
            {"value": {"n": value}},
            output=out('{"n":' + text + "}"),
            comment="ECMAScript number formatting."
            + (
                " Spelled with an exponent in the file: a double, never refused." if spelled else ""
            ),
            flags=("number", "number-spelling") if spelled else ("number",),
        )
    yield Case(
        "number-beyond-safe-spelled-as-float",
        {"value": {"n": 9007199254740993.0}},
        output=out('{"n":9007199254740992}'),
        comment=(
            "2^53 + 1 spelled with a fraction is the double 2^53 (the file holds "
            "9007199254740992.0): a double, written by Number::toString, never refused."
        ),
        flags=("number", "number-spelling"),
    )
    for case_id, value in (
        ("two-to-the-53", 9007199254740992),
        ("unsafe-negative-integer", -9007199254740993),
    ):
        yield Case(
            f"number-{case_id}",
            {"value": {"n": value}},
            error={"code": "canonical_invalid"},
            comment=(
                "Spelled as an integer, outside +-(2^53-1): refused, even where the double "
                "would be exact (2^53), since the spelling alone decides."
            ),
            flags=("number", "number-spelling"),
        )
    yield Case(
        "string-escapes",
        {"value": 'tab\t nl\n quote" back\\ bell\x07 del\x7f e\u0301 line\u2028'},
        output=out('"tab\\t nl\\n quote\\" back\\\\ bell\\u0007 del\x7f e\u0301 line\u2028"'),
        comment="Short escapes, lowercase \\u00xx for other controls; DEL and U+2028 raw.",
        flags=("escape",),
    )
    yield Case(
        "lone-surrogate",
        {"value": {"s": "a\ud800b", "\udfff": 1}},
        output=out('{"s":"a\\ud800b","\\udfff":1}'),
        comment="JSON.stringify (ES2019) writes a lone surrogate as a lowercase \\udxxx escape.",
        flags=("escape",),
    )
    yield Case(
        "lone-surrogate-key-order",
        {"value": {"\ud800": 1, "\U0001f600": 2, "\uffff": 3}},
        output=out('{"\\ud800":1,"\U0001f600":2,"\uffff":3}'),
        comment="A lone D800 sorts before D83D DE00 (the emoji), which sorts before FFFF.",
        flags=("key-order", "escape"),
    )
    yield Case(
        "unsafe-integer",
        {"value": {"n": 9007199254740993}},
        error={"code": "canonical_invalid"},
        comment="Beyond 2**53-1 JavaScript would round: refused.",
        flags=("number", "number-spelling"),
    )
