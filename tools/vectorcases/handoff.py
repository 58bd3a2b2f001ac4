"""Vector cases of Principal Handoff Core (docs/vectors/handoff.md).

Expected outputs are stated independently of the library: tie-breaks that depend on a
record digest are computed here with ``rfc8785`` + ``hashlib`` directly.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator
from typing import Any

import rfc8785

from vectorlib import Case, Mutation, derive, suite

ROLES: dict[str, Any] = {
    "principal": "alice",
    "principal_side": ["alice-pa"],
    "requesters": {"house": ["bot-1", "registrar"]},
    "roles": {"auditor": ["audit-1"]},
}
KEEP: dict[str, Any] = {
    "name": "demo-keep",
    "version": "0.3",
    "kind": "act",
    "policy": "keep",
    "outcomes": ["done", "declined"],
    "reasons": ["obsolete", "done_elsewhere"],
    "roles": ["auditor"],
}
STOP: dict[str, Any] = {
    "name": "demo-stop",
    "version": "0.3",
    "kind": "decide",
    "policy": "stop",
    "outcomes": ["answered", "declined"],
    "reasons": ["obsolete"],
}
EXTS = [KEEP, STOP]
TS = "2026-10-27T10:00:00Z"
TS2 = "2026-10-28T10:00:00Z"
HEX = "3f" * 32


def dig(record: dict[str, Any]) -> str:
    return "sha-256:" + hashlib.sha256(rfc8785.dumps(record)).hexdigest()


def rec(
    rid: str, type_: str, origin: str, by: str, *, key: str = "k1", **more: Any
) -> dict[str, Any]:
    ext = more.pop("ext", "demo-keep/0.3")
    out = {
        "ph": "0.3",
        "ext": ext,
        "id": rid,
        "type": type_,
        "origin": origin,
        "by": by,
        "key": key,
        "project": more.pop("project", "house"),
        "ts": more.pop("ts", TS),
    }
    out.update(more)
    return out


def raised(rid: str = "n1", text: str = "Pay invoice 42", **more: Any) -> dict[str, Any]:
    return rec(rid, "raised", "requester", "bot-1", terms={"text": text}, terms_rev=1, **more)


def amended(rid: str, rev: int, sup: list[str], text: str = "", **more: Any) -> dict[str, Any]:
    terms = {"text": text or f"Pay invoice 42 (rev {rev})"}
    return rec(
        rid, "amended", "requester", "bot-1", terms=terms, terms_rev=rev, supersedes=sup, **more
    )


def withdrawn(rid: str, sup: list[str], **more: Any) -> dict[str, Any]:
    return rec(rid, "withdrawn", "requester", "bot-1", reason="obsolete", supersedes=sup, **more)


def settled(
    rid: str, rev: int = 1, outcome: str = "done", kind: str = "principal", **more: Any
) -> dict[str, Any]:
    authority: dict[str, Any] = {"kind": kind, "decider": "alice"}
    if kind == "delegated":
        authority = {
            "kind": kind,
            "decider": "bot-boss",
            "under": "mandate-7",
            "chain": ["alice", "bot-boss"],
        }
    if kind == "attested":
        authority = {"kind": kind, "decider": "alice-pa"}
        more.setdefault("evidence", {"basis": "bank statement line 2026-10-27 #4"})
    return rec(
        rid,
        "settled",
        "principal",
        "alice-pa",
        terms_rev=rev,
        outcome=outcome,
        authority=authority,
        **more,
    )


def reopened(rid: str, sup: list[str], **more: Any) -> dict[str, Any]:
    return rec(rid, "reopened", "principal", "alice-pa", supersedes=sup, **more)


def claimed(rid: str, by: str = "helper-9", origin: str = "agent", **more: Any) -> dict[str, Any]:
    return rec(
        rid,
        "claimed",
        origin,
        by,
        outcome="done",
        evidence={"basis": "the principal said so"},
        **more,
    )


def related(
    rid: str, kind: str, target: dict[str, Any], active: bool = True, **more: Any
) -> dict[str, Any]:
    origin, by = ("principal", "alice-pa") if kind == "same_as" else ("requester", "bot-1")
    return rec(
        rid,
        "related",
        origin,
        by,
        relation={"kind": kind, "target": target, "active": active},
        **more,
    )


def note(
    rid: str, about: dict[str, Any], origin: str = "agent", by: str = "helper-9", **more: Any
) -> dict[str, Any]:
    return rec(rid, "note", origin, by, about=about, note="the due date moved", **more)


def cfg(**more: Any) -> dict[str, Any]:
    return {"roles": copy.deepcopy(ROLES), "extensions": copy.deepcopy(EXTS), **more}


ACCEPTED = {"status": "accepted"}


# --- handoff.validate ------------------------------------------------------------------


def _set(path: str, value: Any) -> Any:
    def apply(inp: dict[str, Any]) -> None:
        node = inp["record"]
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = value

    return apply


def _drop(path: str) -> Any:
    def apply(inp: dict[str, Any]) -> None:
        node = inp["record"]
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[part]
        del node[parts[-1]]

    return apply


def _err(code: str, reason: str) -> dict[str, str]:
    return {"code": code, "reason": reason}


SCHEMA_CORE = _err("schema", "record_schema")
SCHEMA_PAIR = _err("schema", "pair_schema")


@suite(
    "handoff.validate",
    description="Admit one record: version, core and pair schemas, pair table, record rules, "
    "ownership and authority. Output is the verdict; a rejection is an error.",
    notes={
        "derived": "derived mechanically from the good case named by the id prefix",
        "valid": "a record every receiver accepts",
        "ignored": "consumed without acting (extension or version not implemented)",
        "unknown-members": "unknown members are ignored, not rejected",
        "line": "the input is JSON text, parsed strictly (I-JSON)",
        "ecma-dollar": "plain jsonschema accepts this: Python re matches $ before a final LF",
        "integer-float": "plain jsonschema would accept this: 1.0 taken as an integer",
        "ownership": "the emitter does not own what it wrote (§3)",
        "authority": "the settlement's authority does not fit the deployment (§5)",
        "staleness": "terms_rev rules of §6",
        "organisation": "the principal is a legal person",
        **{
            m: f"mutation class {m}"
            for m in (
                "id-whitespace",
                "id-missing",
                "id-too-long",
                "ph-number",
                "ph-not-version",
                "type-unknown",
                "terms-missing",
                "terms-text-missing",
                "terms-rev-two",
                "terms-rev-float",
                "terms-rev-bool",
                "ts-newline",
                "ts-unicode-digits",
                "origin-principal",
                "by-other",
                "other-project",
                "supersedes-self",
                "terms-rev-one",
                "supersedes-missing",
                "supersedes-empty",
                "terms-rev-zero",
                "by-requester",
                "decider-other",
                "adopts-on-principal",
                "outcome-unknown",
                "presented-newline",
                "presented-upper",
                "authority-missing",
                "chain-missing",
                "chain-broken",
                "decider-principal",
                "basis-missing",
                "by-principal-side",
                "origin-principal-claim",
                "adopts-on-claim",
                "kind-swapped",
                "both-forms",
                "partial-target",
                "about-both",
                "about-key-mismatch",
                "reason-unknown",
                "withdrawn-no-supersedes",
                "representative-missing",
                "ext-role-other",
                "relation-active-missing",
                "decider-principal-case",
                "chain-cycle-case",
                "attester-requester",
            )
        },
        "config": "the deployment configuration itself is refused",
    },
)
def validate_cases() -> Iterator[Case]:
    good_raised = Case(
        "raised",
        cfg(record=raised()),
        output=ACCEPTED,
        comment="a raised record from the project's requester",
        flags=("valid",),
    )
    yield good_raised
    for who, party in (("principal", "alice"), ("principal-side", "alice-pa")):
        both = cfg(record=raised())
        both["roles"]["requesters"]["house"] = ["bot-1", party]
        yield Case(
            f"config-{who}-as-requester",
            both,
            error=_err("config", "config_invalid"),
            comment=f"the {who.replace('-', ' ')} listed as a project's requester: the two "
            "registers would have one owner",
            flags=("config",),
        )
    yield from derive(
        good_raised,
        [
            Mutation(
                "id-whitespace", "ids carry no whitespace", _set("id", "n 1"), error=SCHEMA_CORE
            ),
            Mutation("id-missing", "id is required", _drop("id"), error=SCHEMA_CORE),
            Mutation(
                "id-too-long",
                "ids are at most 256 characters",
                _set("id", "n" * 257),
                error=SCHEMA_CORE,
            ),
            Mutation("ph-number", "ph is a string", _set("ph", 0.3), error=SCHEMA_CORE),
            Mutation(
                "ph-not-version",
                "ph is MAJOR.MINOR; anything else cannot be classified",
                _set("ph", "v1"),
                error=SCHEMA_CORE,
            ),
            Mutation(
                "type-unknown",
                "type is one of the eight",
                _set("type", "resolved"),
                error=SCHEMA_CORE,
            ),
            Mutation("terms-missing", "raised carries terms", _drop("terms"), error=SCHEMA_PAIR),
            Mutation(
                "terms-text-missing",
                "terms.text is always present",
                _set("terms", {"due": "2026-11-01"}),
                error=SCHEMA_CORE,
            ),
            Mutation(
                "terms-rev-two", "raised is terms_rev 1", _set("terms_rev", 2), error=SCHEMA_PAIR
            ),
            Mutation(
                "ts-newline",
                "$ does not match before a trailing newline",
                _set("ts", TS + "\n"),
                error=SCHEMA_CORE,
                extra_flags=("ecma-dollar",),
            ),
            Mutation(
                "ts-unicode-digits",
                "digits are ASCII",
                _set("ts", "٢٠٢٦-10-27T10:00:00Z"),
                error=SCHEMA_CORE,
            ),
            Mutation(
                "origin-principal",
                "(raised, principal) is not in the table",
                _set("origin", "principal"),
                error=_err("pair", "unknown_pair"),
            ),
            Mutation(
                "by-other",
                "only a requester of the project may raise",
                _set("by", "helper-9"),
                error=_err("ownership", "not_requester"),
                extra_flags=("ownership",),
            ),
            Mutation(
                "other-project",
                "requester roles are per project",
                _set("project", "garden"),
                error=_err("ownership", "not_requester"),
                extra_flags=("ownership",),
            ),
            Mutation(
                "supersedes-self",
                "a record cannot replace itself",
                _set("supersedes", ["n1"]),
                error=_err("record", "supersedes_self"),
            ),
        ],
    )
    float_rev = raised()
    float_rev["terms_rev"] = 1.0
    yield Case(
        "raised-terms-rev-float",
        cfg(record=float_rev),
        error=SCHEMA_CORE,
        comment="1.0 is not a JSON integer here (plain jsonschema would accept it)",
        flags=("integer-float",),
    )
    bool_rev = raised()
    bool_rev["terms_rev"] = True
    yield Case(
        "raised-terms-rev-bool",
        cfg(record=bool_rev),
        error=SCHEMA_CORE,
        comment="true is not an integer",
    )
    unknown = raised("n9")
    unknown["x_trace"] = {"span": "a1"}
    unknown["terms"]["x_colour"] = "red"
    unknown["priority"] = 3
    yield Case(
        "unknown-members",
        cfg(record=unknown),
        output=ACCEPTED,
        comment="members a receiver does not recognise are ignored",
        flags=("valid", "unknown-members"),
    )
    good_amended = Case(
        "amended",
        cfg(record=amended("n2", 2, ["n1"])),
        output=ACCEPTED,
        comment="amended lists the current need",
        flags=("valid",),
    )
    yield good_amended
    yield from derive(
        good_amended,
        [
            Mutation(
                "terms-rev-one",
                "an amended needs terms_rev 2 or more",
                _set("terms_rev", 1),
                error=_err("record", "terms_rev_amended"),
                extra_flags=("staleness",),
            ),
            Mutation(
                "supersedes-missing",
                "amended must list the current need",
                _drop("supersedes"),
                error=SCHEMA_PAIR,
            ),
            Mutation(
                "supersedes-empty",
                "amended must list the current need",
                _set("supersedes", []),
                error=_err("record", "supersedes_missing"),
            ),
        ],
    )
    yield Case(
        "amended-skipped-rev",
        cfg(record=amended("n3", 7, ["n1"])),
        output=ACCEPTED,
        comment="a skipped terms_rev is accepted",
        flags=("valid", "staleness"),
    )
    good_withdrawn = Case(
        "withdrawn",
        cfg(record=withdrawn("w1", ["n1"])),
        output=ACCEPTED,
        comment="the requester withdraws",
        flags=("valid",),
    )
    yield good_withdrawn
    yield from derive(
        good_withdrawn,
        [
            Mutation(
                "reason-unknown",
                "reason values come from the extension",
                _set("reason", "bored"),
                error=_err("record", "reason_unknown"),
            ),
            Mutation(
                "withdrawn-no-supersedes",
                "withdrawn must list the current need",
                _drop("supersedes"),
                error=SCHEMA_PAIR,
            ),
        ],
    )
    good_settled = Case(
        "settled",
        cfg(record=settled("s1", evidence={"presented": "sha-256:" + HEX})),
        output=ACCEPTED,
        comment="the principal decided on the principal side",
        flags=("valid",),
    )
    yield good_settled
    yield from derive(
        good_settled,
        [
            Mutation(
                "terms-rev-zero",
                "a settled needs terms_rev 1 or more",
                _set("terms_rev", 0),
                error=_err("record", "terms_rev_settled"),
                extra_flags=("staleness",),
            ),
            Mutation(
                "by-requester",
                "settlements come only from the principal side",
                _set("by", "bot-1"),
                error=_err("ownership", "not_principal_side"),
                extra_flags=("ownership",),
            ),
            Mutation(
                "decider-other",
                "kind principal names the principal",
                _set("authority.decider", "mallory"),
                error=_err("authority", "decider_not_principal"),
                extra_flags=("authority",),
            ),
            Mutation(
                "adopts-on-principal",
                "adopts only on confirmed or attested",
                _set("adopts", ["c1"]),
                error=_err("record", "adopts_kind"),
            ),
            Mutation(
                "outcome-unknown",
                "outcome values come from the extension",
                _set("outcome", "maybe"),
                error=_err("record", "outcome_unknown"),
            ),
            Mutation(
                "presented-newline",
                "$ does not match before a trailing newline",
                _set("evidence.presented", "sha-256:" + HEX + "\n"),
                error=SCHEMA_CORE,
                extra_flags=("ecma-dollar",),
            ),
            Mutation(
                "presented-upper",
                "the digest is lowercase hex",
                _set("evidence.presented", "sha-256:" + HEX.upper()),
                error=SCHEMA_CORE,
            ),
            Mutation(
                "authority-missing",
                "settled carries authority",
                _drop("authority"),
                error=SCHEMA_PAIR,
            ),
        ],
    )
    yield Case(
        "settled-newer-rev",
        cfg(record=settled("s1", rev=9)),
        output=ACCEPTED,
        comment="a settlement newer than any need is accepted",
        flags=("valid", "staleness"),
    )
    yield Case(
        "settled-confirmed-adopts",
        cfg(record=settled("s1", kind="confirmed", adopts=["c1"], evidence={"proposal": "c1"})),
        output=ACCEPTED,
        comment="a confirmed settlement adopts a claim",
        flags=("valid",),
    )
    good_delegated = Case(
        "settled-delegated",
        cfg(record=settled("s1", kind="delegated")),
        output=ACCEPTED,
        comment="a delegate decided under a mandate",
        flags=("valid",),
    )
    yield good_delegated
    yield from derive(
        good_delegated,
        [
            Mutation(
                "chain-missing",
                "delegated carries a chain",
                _drop("authority.chain"),
                error=_err("record", "delegation_incomplete"),
            ),
            Mutation(
                "chain-broken",
                "the chain runs from the principal to the decider",
                _set("authority.chain", ["bob", "bot-boss"]),
                error=_err("authority", "chain_broken"),
                extra_flags=("authority",),
            ),
            Mutation(
                "decider-principal",
                "a delegate is never the principal",
                _set("authority.decider", "alice"),
                error=_err("authority", "delegate_is_principal"),
                extra_flags=("authority",),
            ),
            Mutation(
                "decider-principal-case",
                "a delegate named like the principal in other letter case is refused",
                lambda inp: (
                    _set("authority.decider", "ALICE")(inp),
                    _set("authority.chain", ["alice", "ALICE"])(inp),
                ),
                error=_err("authority", "delegate_is_principal"),
                extra_flags=("authority",),
            ),
            Mutation(
                "chain-cycle-case",
                "the chain returns to the principal (spelled in full-width letters)",
                _set("authority.chain", ["alice", "\uff41lice", "bot-boss"]),
                error=_err("authority", "chain_broken"),
                extra_flags=("authority",),
            ),
        ],
    )
    good_attested = Case(
        "settled-attested",
        cfg(record=settled("s1", kind="attested", adopts=["c1"])),
        output=ACCEPTED,
        comment="attested on a bank statement, adopting a claim",
        flags=("valid",),
    )
    yield good_attested
    yield from derive(
        good_attested,
        [
            Mutation(
                "basis-missing",
                "attested says what the evidence was",
                _drop("evidence"),
                error=_err("record", "basis_missing"),
            ),
            Mutation(
                "attester-requester",
                "only the principal side itself attests, never a requester",
                _set("authority.decider", "bot-1"),
                error=_err("authority", "attester_not_principal_side"),
                extra_flags=("authority",),
            ),
        ],
    )
    org = cfg(record=settled("s1", kind="confirmed", evidence={"proposal": "c1"}))
    org["roles"]["principal_is_person"] = False
    org["record"]["authority"]["representative"] = "carol"
    good_org = Case(
        "settled-organisation",
        org,
        output=ACCEPTED,
        comment="an organisation principal's representative confirmed",
        flags=("valid", "organisation"),
    )
    yield good_org
    bare_org = copy.deepcopy(org)
    bare_org["record"]["authority"] = {"kind": "principal", "decider": "alice",
                                       "representative": "carol"}  # fmt: skip
    yield Case(
        "settled-organisation-without-evidence",
        bare_org,
        output=ACCEPTED,
        comment="seed §5: an organisation's settlement needs its representative; evidence of "
        "the power to represent is a SHOULD (required only by a verifiable principal side)",
        flags=("valid", "organisation"),
    )
    yield from derive(
        good_org,
        [
            Mutation(
                "representative-missing",
                "an organisation needs its representative",
                _drop("authority.representative"),
                error=_err("authority", "representative_missing"),
                extra_flags=("authority",),
            )
        ],
    )
    yield Case(
        "reopened",
        cfg(record=reopened("s2", ["s1"])),
        output=ACCEPTED,
        comment="the principal side reopens",
        flags=("valid",),
    )
    good_claim = Case(
        "claimed",
        cfg(record=claimed("c1")),
        output=ACCEPTED,
        comment="an agent heard the principal say it is done",
        flags=("valid",),
    )
    yield good_claim
    yield from derive(
        good_claim,
        [
            Mutation(
                "by-principal-side",
                "the principal side settles, it does not claim",
                _set("by", "alice-pa"),
                error=_err("ownership", "claim_by_principal_side"),
                extra_flags=("ownership",),
            ),
            Mutation(
                "origin-principal-claim",
                "(claimed, principal) is not in the table",
                _set("origin", "principal"),
                error=_err("pair", "unknown_pair"),
            ),
            Mutation(
                "adopts-on-claim",
                "only settlements adopt",
                _set("adopts", ["c0"]),
                error=_err("record", "adopts_type"),
            ),
        ],
    )
    yield Case(
        "claimed-by-requester",
        cfg(record=claimed("c2", by="registrar", origin="requester")),
        output=ACCEPTED,
        comment="a registrar saw the declared line disappear",
        flags=("valid",),
    )
    good_role = Case(
        "claimed-by-extension-role",
        cfg(record=claimed("c3", by="audit-1", origin="auditor")),
        output=ACCEPTED,
        comment="an extension-defined role may claim",
        flags=("valid",),
    )
    yield good_role
    yield from derive(
        good_role,
        [
            Mutation(
                "ext-role-other",
                "the party must hold the extension role",
                _set("by", "helper-9"),
                error=_err("ownership", "role_not_held"),
                extra_flags=("ownership",),
            )
        ],
    )
    good_same = Case(
        "related-same-as",
        cfg(record=related("l1", "same_as", {"ext": "demo-keep", "project": "house", "key": "k2"})),
        output=ACCEPTED,
        comment="the principal side links two items",
        flags=("valid",),
    )
    yield good_same
    yield from derive(
        good_same,
        [
            Mutation(
                "kind-swapped",
                "same_as comes from the principal side only",
                lambda i: i["record"].update(origin="requester", by="bot-1"),
                error=SCHEMA_PAIR,
                extra_flags=("ownership",),
            ),
            Mutation(
                "both-forms",
                "exactly one target form",
                _set("relation.target.uri", "https://example.org/t/1"),
                error=_err("record", "relation_target"),
            ),
            Mutation(
                "partial-target",
                "all three of ext, project, key",
                _drop("relation.target.key"),
                error=_err("record", "relation_target"),
            ),
            Mutation(
                "relation-active-missing",
                "active is required",
                _drop("relation.active"),
                error=SCHEMA_CORE,
            ),
        ],
    )
    yield Case(
        "related-derived-from",
        cfg(record=related("l2", "derived_from", {"uri": "a2a:task/7f3"})),
        output=ACCEPTED,
        comment="the requester derived the item from an A2A task",
        flags=("valid",),
    )
    good_note = Case(
        "note",
        cfg(record=note("m1", {"key": "k1"})),
        output=ACCEPTED,
        comment="a note about a keyed item",
        flags=("valid",),
    )
    yield good_note
    yield from derive(
        good_note,
        [
            Mutation(
                "about-both",
                "about carries key or quote, not both",
                _set("about.quote", "the invoice"),
                error=_err("record", "about_form"),
            ),
            Mutation(
                "about-key-mismatch",
                "about.key is the record's key",
                _set("about.key", "k2"),
                error=_err("record", "about_key"),
            ),
        ],
    )
    yield Case(
        "note-quote",
        cfg(
            record=note(
                "m2", {"quote": "that thing about the roof"}, origin="principal", by="alice-pa"
            )
        ),
        output=ACCEPTED,
        comment="the principal side notes something never keyed",
        flags=("valid",),
    )
    yield Case(
        "unknown-extension",
        cfg(record=raised(ext="travel/0.3")),
        output={"status": "ignored", "why": "unknown_extension"},
        comment="an extension this receiver does not implement",
        flags=("ignored",),
    )
    yield Case(
        "unknown-extension-version",
        cfg(record=raised(ext="demo-keep/0.4")),
        output={"status": "ignored", "why": "unknown_extension_version"},
        comment="a version of a known extension this receiver does not implement",
        flags=("ignored",),
    )
    future = raised()
    future["ph"] = "0.4"
    future["terms_rev"] = "one"
    yield Case(
        "unknown-core-version",
        cfg(record=future),
        output={"status": "ignored", "why": "unknown_version"},
        comment="a future core version is consumed without acting, whatever its members",
        flags=("ignored",),
    )
    yield Case(
        "line",
        cfg(
            line='{"ph":"0.3","ext":"demo-keep/0.3","id":"n1","type":"raised","origin":"requester","by":"bot-1","key":"k1","project":"house","ts":"2026-10-27T10:00:00Z","terms":{"text":"Pay"},"terms_rev":1}'
        ),
        output=ACCEPTED,
        comment="one JSON line",
        flags=("valid", "line"),
    )
    bad_lines = [
        (
            "line-duplicate-member",
            '{"ph":"0.3","ph":"0.3"}',
            "duplicate_member",
            "two parsers could read a duplicated member differently",
        ),
        ("line-nan", '{"ph":"0.3","x":NaN}', "json_syntax", "NaN is not JSON"),
        (
            "line-lone-surrogate",
            '{"ph":"0.3","note":"\\ud800"}',
            "lone_surrogate",
            "a lone surrogate is not Unicode text",
        ),
        (
            "line-big-integer",
            '{"ph":"0.3","terms_rev":9007199254740993}',
            "number_range",
            "integers beyond 2^53-1 are not I-JSON",
        ),
        (
            "line-huge-number",
            '{"ph":"0.3","x":1e400}',
            "number_range",
            "1e400 does not fit a double",
        ),
        ("line-array", '["ph","0.3"]', "not_object", "a record is an object"),
        ("line-trailing-garbage", '{"ph":"0.3"} x', "json_syntax", "one JSON text per line"),
    ]
    for cid, text, reason, comment in bad_lines:
        yield Case(
            cid, cfg(line=text), error=_err("parse", reason), comment=comment, flags=("line",)
        )


# --- handoff.fold ------------------------------------------------------------------------


def item(
    key: str = "k1", state: str = "open", ext: str = "demo-keep", **fields: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"ext": ext, "project": "house", "key": key, "state": state}
    for name in ("outcome", "authority", "settled_terms_rev"):
        if name in fields:
            out[name] = fields.pop(name)
    out["stale"] = fields.pop("stale", False)
    out["need_withdrawn"] = fields.pop("need_withdrawn", False)
    out["policy"] = fields.pop("policy", "keep" if ext == "demo-keep" else "stop")
    for name in ("need", "settlement", "terms_rev", "held_terms_rev", "terms"):
        if name in fields:
            out[name] = fields.pop(name)
    out["claims"] = fields.pop("claims", [])
    out["adopted"] = fields.pop("adopted", [])
    out["relations"] = fields.pop("relations", [])
    out["notes"] = fields.pop("notes", [])
    out["conflicts"] = fields.pop("conflicts", [])
    assert not fields, fields
    return out


def ok(*statuses: str) -> list[dict[str, str]]:
    return [{"status": s} for s in statuses]


def conflict(
    kind: str, register: str | None, ids: list[str], chosen: str | None, key: str = "k1"
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": kind,
        "item": {"ext": "demo-keep", "project": "house", "key": key},
    }
    if register is not None:
        out["register"] = register
    out["ids"] = sorted(ids)
    if chosen is not None:
        out["chosen"] = chosen
    return out


def fold_case(
    cid: str,
    records: list[dict[str, Any]],
    statuses: list[dict[str, str]],
    items: list[dict[str, Any]],
    comment: str,
    flags: tuple[str, ...],
    conflicts: list[dict[str, Any]] | None = None,
) -> Case:
    return Case(
        cid,
        cfg(records=records),
        output={
            "statuses": statuses,
            "items": items,
            "conflicts": conflicts or [c for i in items for c in i["conflicts"]],
        },
        comment=comment,
        flags=flags,
    )


T1 = {"text": "Pay invoice 42"}


def t(rev: int) -> dict[str, str]:
    return {"text": f"Pay invoice 42 (rev {rev})"}


@suite(
    "handoff.fold",
    description="Add records in order to a fresh registry; output each record's status, the "
    "state of every item (sorted by ext, project, key) and every conflict. Any permutation "
    "of the same records gives the same items and conflicts.",
    notes={
        "supersession": "the current record is the head no held record supersedes",
        "order": "records arrive before what they supersede; ts is never used",
        "multiple-heads": "several heads: deterministic choice, conflict reported",
        "staleness": "terms_rev and stale settlements",
        "skipped-revision": "a skipped terms_rev is accepted",
        "withdrawal": "withdrawal under the keep and stop policies",
        "duplicates": "at-least-once delivery: identical records are idempotent",
        "same-id": "one id, different contents in one owner's slot: both held, none chosen; "
        "a rewritten need, settlement or relation makes the item conflicted",
        "claims": "claims change no register",
        "relations": "relations and their retraction",
        "notes": "notes change no register",
        "unknown": "unknown extensions and versions are consumed without acting",
        "ownership": "a record breaking ownership is rejected, never folded",
        "isolation": "one item's records never change another item",
    },
)
def fold_cases() -> Iterator[Case]:
    yield fold_case(
        "raised-only",
        [raised()],
        ok("accepted"),
        [item(need="n1", terms_rev=1, held_terms_rev=1, terms=T1)],
        "one need, no settlement: open",
        ("supersession",),
    )
    chain = [raised(), amended("n2", 2, ["n1"]), amended("n3", 3, ["n2"])]
    chain_state = item(need="n3", terms_rev=3, held_terms_rev=3, terms=t(3))
    yield fold_case(
        "amendment-chain",
        chain,
        ok("accepted", "accepted", "accepted"),
        [chain_state],
        "each amendment supersedes the current need",
        ("supersession",),
    )
    rev_chain = list(reversed(chain))
    for index, record in enumerate(rev_chain):
        record["ts"] = f"2026-10-2{index + 1}T10:00:00Z"
    yield fold_case(
        "amendment-chain-reversed",
        rev_chain,
        ok("accepted", "accepted", "accepted"),
        [chain_state],
        "the same records in reverse, with ts running backwards: same state",
        ("supersession", "order"),
    )
    yield fold_case(
        "skipped-revision",
        [raised(), amended("n4", 4, ["n1"])],
        ok("accepted", "accepted"),
        [item(need="n4", terms_rev=4, held_terms_rev=4, terms=t(4))],
        "rev 2 and 3 never arrived: rev 4 is accepted and current",
        ("skipped-revision", "staleness"),
    )
    yield fold_case(
        "settled",
        [raised(), settled("s1")],
        ok("accepted", "accepted"),
        [
            item(
                state="settled",
                outcome="done",
                authority="principal",
                settled_terms_rev=1,
                need="n1",
                settlement="s1",
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
            )
        ],
        "settled against the current terms",
        ("staleness",),
    )
    yield fold_case(
        "stale-settlement",
        [raised(), settled("s1"), amended("n2", 2, ["n1"])],
        ok("accepted", "accepted", "accepted"),
        [
            item(
                state="settled",
                outcome="done",
                authority="principal",
                settled_terms_rev=1,
                stale=True,
                need="n2",
                settlement="s1",
                terms_rev=2,
                held_terms_rev=2,
                terms=t(2),
            )
        ],
        "the terms moved on after the settlement: settled, stale",
        ("staleness",),
    )
    yield fold_case(
        "settlement-newer-than-need",
        [raised(), settled("s1", rev=3)],
        ok("accepted", "accepted"),
        [
            item(
                state="settled",
                outcome="done",
                authority="principal",
                settled_terms_rev=3,
                need="n1",
                settlement="s1",
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
            )
        ],
        "the settlement saw terms this receiver does not hold yet: not stale",
        ("staleness", "skipped-revision"),
    )
    yield fold_case(
        "withdrawn-keep",
        [raised(), withdrawn("w1", ["n1"])],
        ok("accepted", "accepted"),
        [item(need_withdrawn=True, need="w1", terms_rev=1, held_terms_rev=1, terms=T1)],
        "keep policy: still open, and the principal side knows to ask",
        ("withdrawal",),
    )
    stop = [raised(ext="demo-stop/0.3"), withdrawn("w1", ["n1"], ext="demo-stop/0.3")]
    yield fold_case(
        "withdrawn-stop",
        stop,
        ok("accepted", "accepted"),
        [
            item(
                state="withdrawn",
                ext="demo-stop",
                need_withdrawn=True,
                need="w1",
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
            )
        ],
        "stop policy: no longer presented",
        ("withdrawal",),
    )
    stop_settled = [*stop, settled("s1", ext="demo-stop/0.3", outcome="answered")]
    yield fold_case(
        "late-answer-after-withdrawal",
        stop_settled,
        ok("accepted", "accepted", "accepted"),
        [
            item(
                state="settled",
                ext="demo-stop",
                outcome="answered",
                authority="principal",
                settled_terms_rev=1,
                need_withdrawn=True,
                need="w1",
                settlement="s1",
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
            )
        ],
        "a late answer does not undo the withdrawal, and stays settled",
        ("withdrawal",),
    )
    yield fold_case(
        "reopened",
        [raised(), settled("s1"), reopened("s2", ["s1"])],
        ok("accepted", "accepted", "accepted"),
        [item(need="n1", settlement="s2", terms_rev=1, held_terms_rev=1, terms=T1)],
        "reopened supersedes the settlement: open again",
        ("supersession",),
    )
    yield fold_case(
        "replacing-settlement",
        [raised(), settled("s2", outcome="declined", supersedes=["s1"]), settled("s1")],
        ok("accepted", "accepted", "accepted"),
        [
            item(
                state="settled",
                outcome="declined",
                authority="principal",
                settled_terms_rev=1,
                need="n1",
                settlement="s2",
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
            )
        ],
        "the replacing settlement arrives first; the one it replaces never becomes current",
        ("supersession", "order"),
    )
    a = amended("n2", 2, ["n1"], text="Pay invoice 42 by card")
    b = amended("n2b", 2, ["n1"], text="Pay invoice 42 by transfer")
    win = min((a, b), key=dig)
    yield fold_case(
        "multiple-need-heads",
        [raised(), a, b],
        ok("accepted", "accepted", "accepted"),
        [
            item(
                need=win["id"],
                terms_rev=2,
                held_terms_rev=2,
                terms=win["terms"],
                conflicts=[conflict("multiple_heads", "need", ["n2", "n2b"], win["id"])],
            )
        ],
        "two amendments of the same revision: the lower digest is chosen",
        ("multiple-heads",),
    )
    a3 = amended("n3", 3, ["n1"])
    w = withdrawn("w1", ["n1"])
    yield fold_case(
        "multiple-need-heads-withdrawal",
        [raised(), a3, w],
        ok("accepted", "accepted", "accepted"),
        [
            item(
                need="w1",
                need_withdrawn=True,
                terms_rev=3,
                held_terms_rev=3,
                terms=t(3),
                conflicts=[conflict("multiple_heads", "need", ["n3", "w1"], "w1")],
            )
        ],
        "a withdrawal and an amendment race: the withdrawal is chosen, newest terms shown",
        ("multiple-heads", "withdrawal"),
    )
    s1 = settled("s1")
    s1b = settled("s1b", outcome="declined")
    swin = min((s1, s1b), key=dig)
    yield fold_case(
        "multiple-settlement-heads",
        [raised(), s1b, s1],
        ok("accepted", "accepted", "accepted"),
        [
            item(
                state="settled",
                outcome=swin["outcome"],
                authority="principal",
                settled_terms_rev=1,
                need="n1",
                settlement=swin["id"],
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
                conflicts=[conflict("multiple_heads", "settlement", ["s1", "s1b"], swin["id"])],
            )
        ],
        "two settlements, neither superseding the other",
        ("multiple-heads",),
    )
    yield fold_case(
        "settled-and-reopened-heads",
        [raised(), settled("s2", supersedes=["s1"]), reopened("s3", ["s1"]), settled("s1")],
        ok("accepted", "accepted", "accepted", "accepted"),
        [
            item(
                need="n1",
                settlement="s3",
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
                conflicts=[conflict("multiple_heads", "settlement", ["s2", "s3"], "s3")],
            )
        ],
        "a reopening and a settlement race: reopened is chosen, the item stays in view",
        ("multiple-heads",),
    )
    c2 = amended("n2", 2, ["n1", "n3"])
    c3 = amended("n3", 3, ["n2"])
    cwin = min((c2, c3), key=lambda r: (-r["terms_rev"], dig(r)))
    yield fold_case(
        "supersedes-cycle",
        [raised(), c2, c3],
        ok("accepted", "accepted", "accepted"),
        [
            item(
                need=cwin["id"],
                terms_rev=3,
                held_terms_rev=3,
                terms=t(3),
                conflicts=[
                    conflict("supersedes_cycle", "need", ["n1", "n2", "n3"], cwin["id"]),
                    conflict("terms_rev_not_raised", "need", ["n2"], None),
                ],
            )
        ],
        "every need record is superseded: all are candidates, highest terms_rev chosen; n2 "
        "supersedes n3 at a higher revision (terms_rev_not_raised)",
        ("multiple-heads",),
    )
    # a revision names one set of terms: after the settlement of revision 2, the requester
    # sends a new amended at revision 2 with other terms (review H1)
    r2 = amended("n2", 2, ["n1"], text="Pay invoice 42")
    swap = amended("n3", 2, ["n2"], text="Pay invoice 4200")
    reused = item(
        state="settled",
        outcome="done",
        authority="principal",
        settled_terms_rev=2,
        stale=True,
        need="n3",
        settlement="s1",
        terms_rev=2,
        held_terms_rev=2,
        terms={"text": "Pay invoice 4200"},
        conflicts=[conflict("terms_rev_not_raised", "need", ["n3"], None)],
    )
    yield fold_case(
        "terms-rev-reused-after-settlement",
        [raised(), r2, settled("s1", 2), swap],
        ok("accepted", "accepted", "accepted", "accepted"),
        [reused],
        "an amended reusing the settled revision for other terms: the settlement is stale "
        "(terms held at its revision differ from those shown) and terms_rev_not_raised is "
        "reported",
        ("staleness",),
    )
    yield fold_case(
        "terms-rev-reused-first",
        [swap, settled("s1", 2), r2, raised()],
        ok("accepted", "accepted", "accepted", "accepted"),
        [reused],
        "the same records in another order: the same state",
        ("staleness", "order"),
    )
    # a signed record's ts is signed: another ts is another content; other signature
    # bytes are a signature variant (a repeat) (review M1)
    signed = settled("s1", evidence={"proof": "eyJhbGciOiJFZERTQSJ9..AAAA"})
    later = settled("s1", evidence={"proof": "eyJhbGciOiJFZERTQSJ9..AAAA"}, ts=TS2)
    variant = settled("s1", evidence={"proof": "eyJhbGciOiJFZERTQSJ9..BBBB"})
    yield fold_case(
        "signed-ts-is-content",
        [raised(), signed, variant, later],
        ok("accepted", "accepted", "duplicate", "conflict"),
        [
            item(
                state="conflicted",
                need="n1",
                held_terms_rev=1,
                conflicts=[
                    conflict(
                        "same_id", "settlement", [min(dig(signed), dig(variant)), dig(later)], None
                    ),
                ],
            )
        ],
        "a copy with other proof signature bytes repeats a signed settlement; one with "
        "another ts (which the proof signs) rewrites it",
        ("same-id", "duplicates"),
    )
    yield fold_case(
        "unsigned-ts-is-not-content",
        [raised(), raised(ts=TS2)],
        ok("accepted", "duplicate"),
        [item(need="n1", terms_rev=1, held_terms_rev=1, terms=T1)],
        "an unsigned record sent again at another time is a repeat",
        ("duplicates",),
    )
    yield fold_case(
        "duplicates",
        [raised(), raised(), settled("s1"), settled("s1")],
        ok("accepted", "duplicate", "accepted", "duplicate"),
        [
            item(
                state="settled",
                outcome="done",
                authority="principal",
                settled_terms_rev=1,
                need="n1",
                settlement="s1",
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
            )
        ],
        "every record delivered twice: nothing changes",
        ("duplicates",),
    )
    v1 = raised(text="Pay invoice 42")
    v2 = raised(text="Pay invoice 43")
    vlow, vhigh = sorted((v1, v2), key=dig)
    same = [conflict("same_id", "need", [dig(v1), dig(v2)], None)]
    # (the item shows no terms and no current need: which content n1 means is unknown)
    state = item(state="conflicted", conflicts=same)
    yield fold_case(
        "same-id-conflict",
        [vlow, vhigh],
        ok("accepted", "conflict"),
        [state],
        "one need id, two contents: the item is conflicted, its terms unknown, nothing chosen",
        ("same-id",),
    )
    yield fold_case(
        "same-id-conflict-reversed",
        [vhigh, vlow],
        ok("accepted", "conflict"),
        [state],
        "the same two versions in the other order: same result",
        ("same-id", "order"),
    )
    # the rewrite attack: after the principal settled against "Pay invoice 42", the
    # requester re-sends n1 with other terms; the settlement's outcome is not shown as
    # standing, and no version of n1 becomes the terms
    genuine = raised(text="Pay invoice 42")
    rewrite = next(
        r
        for r in (raised(text="Pay invoice 4200", x_pad=n) for n in range(10_000))
        if dig(r) < dig(genuine)
    )
    rewritten = item(
        state="conflicted",
        authority="principal",
        settled_terms_rev=1,
        settlement="s1",
        conflicts=[conflict("same_id", "need", [dig(genuine), dig(rewrite)], None)],
    )
    yield fold_case(
        "same-id-rewrite-after-settlement",
        [genuine, settled("s1"), rewrite],
        ok("accepted", "accepted", "conflict"),
        [rewritten],
        "a settled item whose need id is re-sent with other terms (of a lower digest) is "
        "conflicted: the outcome is withheld and neither version's terms are shown",
        ("same-id",),
    )
    yield fold_case(
        "same-id-rewrite-first",
        [rewrite, settled("s1"), genuine],
        ok("accepted", "accepted", "conflict"),
        [rewritten],
        "the rewrite arriving first changes nothing: the fold is order-free",
        ("same-id", "order"),
    )
    s_low, s_high = settled("s1"), settled("s1", outcome="declined")
    yield fold_case(
        "same-id-settlement-rewrite",
        [raised(), s_low, s_high],
        ok("accepted", "accepted", "conflict"),
        [
            item(
                state="conflicted",
                need="n1",
                held_terms_rev=1,
                conflicts=[conflict("same_id", "settlement", [dig(s_low), dig(s_high)], None)],
            )
        ],
        "the principal side re-sends its settlement id with another outcome: conflicted, "
        "no outcome shown",
        ("same-id",),
    )
    # an agent reuses the principal side's settlement id, its content ground so that its
    # digest is the lower one: it must not displace the settlement (different owners)
    s1 = settled("s1")
    spoof = next(
        c for c in (claimed("s1", context=f"grind {n}") for n in range(10_000)) if dig(c) < dig(s1)
    )
    reuse = conflict("id_reused", None, ["s1"], None)
    reuse_state = item(
        state="settled",
        outcome="done",
        authority="principal",
        settled_terms_rev=1,
        need="n1",
        settlement="s1",
        terms_rev=1,
        held_terms_rev=1,
        terms=T1,
        claims=["s1"],
        conflicts=[reuse],
    )
    for suffix, order in (("", [raised(), s1, spoof]), ("-reversed", [raised(), spoof, s1])):
        yield fold_case(
            "id-reused-by-claim" + suffix,
            order,
            ok("accepted", "accepted", "accepted"),
            [reuse_state],
            "a claim reusing the settlement's id (lower digest) is held beside it, never instead",
            ("same-id", "ownership") + (("order",) if suffix else ()),
        )
    need_spoof = next(
        r
        for r in (amended("s1", 2, ["n1"], text=f"Pay invoice 42 v{n}") for n in range(10_000))
        if dig(r) < dig(s1)
    )
    yield fold_case(
        "id-reused-by-need",
        [raised(), s1, need_spoof],
        ok("accepted", "accepted", "accepted"),
        [
            item(
                state="settled",
                outcome="done",
                authority="principal",
                settled_terms_rev=1,
                stale=True,
                need="s1",
                settlement="s1",
                terms_rev=2,
                held_terms_rev=2,
                terms=need_spoof["terms"],
                conflicts=[reuse],
            )
        ],
        "a requester's amendment reusing the settlement's id: both registers keep their record",
        ("same-id", "ownership"),
    )
    yield fold_case(
        "claim-alone",
        [raised(), claimed("c1")],
        ok("accepted", "accepted"),
        [item(need="n1", terms_rev=1, held_terms_rev=1, terms=T1, claims=["c1"])],
        "a claim never settles and never removes the item",
        ("claims",),
    )
    yield fold_case(
        "claim-without-need",
        [claimed("c1")],
        ok("accepted"),
        [item(state="unknown", claims=["c1"])],
        "only a claim is held: unknown",
        ("claims",),
    )
    adopt = settled("s1", kind="confirmed", adopts=["c1", "c-missing"], evidence={"proposal": "c1"})
    yield fold_case(
        "adopted-claim",
        [raised(), claimed("c1"), adopt],
        ok("accepted", "accepted", "accepted"),
        [
            item(
                state="settled",
                outcome="done",
                authority="confirmed",
                settled_terms_rev=1,
                need="n1",
                settlement="s1",
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
                claims=["c1"],
                adopted=["c1"],
            )
        ],
        "the principal confirmed the claim; an adopted id not held is not listed",
        ("claims",),
    )
    tgt = {"ext": "demo-keep", "project": "house", "key": "k2"}
    l1 = related("l1", "same_as", tgt)
    l2 = related("l2", "same_as", tgt, active=False, supersedes=["l1"])
    l3 = related("l3", "same_as", tgt, supersedes=["l2"])
    base = [raised()]
    yield fold_case(
        "relation-active",
        [*base, l1],
        ok("accepted", "accepted"),
        [
            item(
                need="n1",
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
                relations=[{"kind": "same_as", "target": tgt, "record": "l1"}],
            )
        ],
        "the principal side says two items are the same",
        ("relations",),
    )
    yield fold_case(
        "relation-retracted",
        [*base, l2, l1],
        ok("accepted", "accepted", "accepted"),
        [item(need="n1", terms_rev=1, held_terms_rev=1, terms=T1)],
        "a retraction supersedes the assertion",
        ("relations", "order"),
    )
    yield fold_case(
        "relation-reasserted",
        [*base, l3, l1, l2],
        ok("accepted", "accepted", "accepted", "accepted"),
        [
            item(
                need="n1",
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
                relations=[{"kind": "same_as", "target": tgt, "record": "l3"}],
            )
        ],
        "re-asserted after a retraction",
        ("relations", "order"),
    )
    l1b = related("l1b", "same_as", tgt, active=False)
    yield fold_case(
        "relation-heads",
        [*base, l1, l1b],
        ok("accepted", "accepted", "accepted"),
        [
            item(
                need="n1",
                terms_rev=1,
                held_terms_rev=1,
                terms=T1,
                conflicts=[conflict("multiple_heads", "relation", ["l1", "l1b"], "l1b")],
            )
        ],
        "an assertion and a retraction race: the retraction is chosen",
        ("relations", "multiple-heads"),
    )
    yield fold_case(
        "note",
        [raised(), note("m1", {"key": "k1"})],
        ok("accepted", "accepted"),
        [item(need="n1", terms_rev=1, held_terms_rev=1, terms=T1, notes=["m1"])],
        "a note changes no register",
        ("notes",),
    )
    yield fold_case(
        "unknown-extension",
        [raised(), raised(ext="travel/0.3"), settled("s1", ext="demo-keep/0.9")],
        [
            {"status": "accepted"},
            {"status": "ignored", "why": "unknown_extension"},
            {"status": "ignored", "why": "unknown_extension_version"},
        ],
        [item(need="n1", terms_rev=1, held_terms_rev=1, terms=T1)],
        "records of unknown extensions or versions are consumed without acting",
        ("unknown",),
    )
    bad = settled("s1")
    bad["by"] = "bot-1"
    yield fold_case(
        "ownership-rejected",
        [raised(), bad],
        [
            {"status": "accepted"},
            {"status": "rejected", "code": "ownership", "reason": "not_principal_side"},
        ],
        [item(need="n1", terms_rev=1, held_terms_rev=1, terms=T1)],
        "a requester cannot settle: rejected, never folded",
        ("ownership",),
    )
    other = raised("n1", key="k2")
    yield fold_case(
        "id-reused-across-items",
        [raised(), other],
        ok("accepted", "accepted"),
        [
            item(need="n1", terms_rev=1, held_terms_rev=1, terms=T1),
            item(key="k2", need="n1", terms_rev=1, held_terms_rev=1, terms=T1),
        ],
        "one id in two items: each item keeps its own record; reported",
        ("isolation", "same-id"),
        conflicts=[
            {
                "kind": "id_reused",
                "item": {"ext": "demo-keep", "project": "house", "key": "k1"},
                "ids": ["n1"],
            }
        ],
    )
    cross = amended("n2", 2, ["s1"])
    yield fold_case(
        "supersedes-other-register",
        [raised(), settled("s1"), cross],
        ok("accepted", "accepted", "accepted"),
        [
            item(
                state="settled",
                outcome="done",
                authority="principal",
                settled_terms_rev=1,
                stale=True,
                need="n2",
                settlement="s1",
                terms_rev=2,
                held_terms_rev=2,
                terms=t(2),
                conflicts=[conflict("multiple_heads", "need", ["n1", "n2"], "n2")],
            )
        ],
        "supersedes counts only within its register: the need has two heads",
        ("supersession", "multiple-heads"),
    )


# --- handoff.schema ----------------------------------------------------------------------


@suite(
    "handoff.schema",
    description="Validate an instance against one of the record schemas with both validators "
    "(strict jsonschema and the compiled one); they must agree.",
    notes={
        "ecma-dollar": "plain jsonschema accepts this: Python re matches $ before a final LF",
        "integer-float": "plain jsonschema accepts this: 1.0 counted as an integer",
        "valid": "accepted by every validator",
        "shorthand": "ECMA-262 and Python disagree on \\d, \\w, \\s: classes are spelled out",
    },
)
def schema_cases() -> Iterator[Case]:
    yield Case(
        "digest-ok",
        {"schema": "def.digest.json", "instance": "sha-256:" + HEX},
        output={"valid": True},
        flags=("valid",),
        comment="a lowercase sha-256 digest",
    )
    yield Case(
        "digest-trailing-newline",
        {"schema": "def.digest.json", "instance": "sha-256:" + HEX + "\n"},
        output={"valid": False},
        flags=("ecma-dollar",),
        comment="ECMA-262 $ matches only at the end",
    )
    yield Case(
        "timestamp-trailing-newline",
        {"schema": "def.timestamp.json", "instance": TS + "\n"},
        output={"valid": False},
        flags=("ecma-dollar",),
        comment="ECMA-262 $ matches only at the end",
    )
    yield Case(
        "timestamp-arabic-digits",
        {"schema": "def.timestamp.json", "instance": "٢٠٢٦-10-27T10:00:00Z"},
        output={"valid": False},
        flags=("shorthand",),
        comment="only ASCII digits",
    )
    yield Case(
        "identifier-nbsp",
        {"schema": "def.identifier.json", "instance": "a\u00a0b"},
        output={"valid": False},
        flags=("shorthand",),
        comment="no-break space is whitespace",
    )
    yield Case(
        "identifier-bom",
        {"schema": "def.identifier.json", "instance": "a\ufeffb"},
        output={"valid": False},
        flags=("shorthand",),
        comment="U+FEFF is whitespace to ECMA-262, not to Python",
    )
    yield Case(
        "identifier-astral",
        {"schema": "def.identifier.json", "instance": "\U0001f600" * 256},
        output={"valid": True},
        flags=("valid",),
        comment="256 code points (512 UTF-16 units) fit: lengths count code points",
    )
    yield Case(
        "raised-rev-float",
        {
            "schema": "pair.raised.requester.json",
            "instance": {"type": "raised", "origin": "requester", "terms": T1, "terms_rev": 1.0},
        },
        output={"valid": False},
        flags=("integer-float",),
        comment="1.0 is not the integer 1 here",
    )
    yield Case(
        "raised-rev-int",
        {
            "schema": "pair.raised.requester.json",
            "instance": {"type": "raised", "origin": "requester", "terms": T1, "terms_rev": 1},
        },
        output={"valid": True},
        flags=("valid",),
        comment="the integer 1",
    )
    yield Case(
        "record-rev-float",
        {"schema": "record.schema.json", "instance": {**raised(), "terms_rev": 2.0}},
        output={"valid": False},
        flags=("integer-float",),
        comment="type integer refuses 2.0",
    )
    yield Case(
        "record-id-trailing-newline",
        {"schema": "record.schema.json", "instance": {**raised(), "id": "n1\n"}},
        output={"valid": False},
        flags=("ecma-dollar",),
        comment="the strict pattern also applies through $ref (def.identifier.json)",
    )
    yield Case(
        "record-ts-trailing-newline",
        {"schema": "record.schema.json", "instance": {**raised(), "ts": TS + "\n"}},
        output={"valid": False},
        flags=("ecma-dollar",),
        comment="the strict pattern also applies through $ref (def.timestamp.json)",
    )
    yield Case(
        "record-ok",
        {"schema": "record.schema.json", "instance": raised()},
        output={"valid": True},
        flags=("valid",),
        comment="a raised record",
    )


# --- handoff.digest ----------------------------------------------------------------------


@suite(
    "handoff.digest",
    description="The JCS (RFC 8785) form of a value and its sha-256: lowercase-hex digest, "
    "used to keep the lower of two same-id versions and to break ties between heads.",
    notes={"jcs": "JCS ordering or number form matters here"},
)
def digest_cases() -> Iterator[Case]:
    for cid, value, comment in [
        ("record", raised(), "a raised record"),
        (
            "member-order",
            {"\u20ac": 1, "\r": 2, "\ufb33": 3, "1": 4, "\U0001f600": 5, "\u0080": 6},
            "members sorted by UTF-16 code units",
        ),
        ("numbers", {"a": 1.0, "b": 1e21, "c": -0.0, "d": 0.000001}, "ECMAScript number forms"),
    ]:
        text = rfc8785.dumps(value)
        yield Case(
            cid,
            {"value": value},
            output={
                "canonical": text.decode("utf-8"),
                "digest": "sha-256:" + hashlib.sha256(text).hexdigest(),
            },
            comment=comment,
            flags=("jcs",),
        )
