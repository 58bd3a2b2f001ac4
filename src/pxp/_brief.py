"""The decision brief (PXP §7) as JSON and as Markdown."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ._card import IntentCard
from ._envelope import SEATS, parse_claim_id
from ._ledger import verify_ledger
from ._text import normalize
from ._wire import Brief
from .errors import LedgerError, PxpError

if TYPE_CHECKING:
    from ._room import Room

__all__ = ["brief_markdown", "build_brief"]


def _norm(text: str) -> str:
    return normalize(text)


_PARTS = re.compile(r"\s*(?:[,;+&]|\band\b|\bplus\b)\s*", re.I)


def term_parts(term: str) -> list[str]:
    """The parts of a bundled term ("440 EUR, ship abroad"): split at , ; + & and "and"."""
    return [p for p in (x.strip() for x in _PARTS.split(term)) if _norm(p)]


_PHRASES = re.compile(r"\s*(?:[,;]|\band\b)\s*", re.I)
_NEGATION = frozenset(("never", "not", "no", "without", "nor", "don't", "dont", "cannot"))


def _answer_gives(answer: str, part: str) -> bool:
    """Whether a principal's answer gives ``part``: a phrase of the answer (split as a
    clause) holds ``part`` as whole words and is not negated. An answer is free text in
    the principal's words ("Yes, 5500 EUR is fine."), so it is read more widely than a card
    clause, but never through a negation ("yes, but never by bank transfer")."""
    wanted = normalize(part)
    if not wanted:
        return False
    for phrase in _PHRASES.split(answer):
        said = normalize(phrase)
        if f" {wanted} " in f" {said} " and not _NEGATION.intersection(said.split()):
            return True
    return False


def _covers(clause: str, part: str) -> bool:
    """Whether ``clause`` gives ``part``: after the shared normaliser, ``part`` equals the
    whole clause or one whole phrase of it (the clause split at , ; and "and"), and that
    phrase is not negated (holds none of never, not, no, without, nor, cannot).

    A word or two inside a clause is not what the clause gives ("bank transfer" inside
    "Payment in cash, never by bank transfer"; "440" inside "440 EUR"), and a clause that
    occurs inside a larger term ("440 EUR" in "440 EUR, ship abroad") does not authorise
    the rest of the term.
    """
    wanted = normalize(part)
    if not wanted:
        return False
    for phrase in [clause, *_PHRASES.split(clause)]:
        said = normalize(phrase)
        if said == wanted and not _NEGATION.intersection(said.split()):
            return True
    return False


def _matching_clauses(card: IntentCard, part: str) -> list[str]:
    """Clauses of ``card`` that give ``part``: may_agree_to, must_haves, then amendments
    (by the principal's answer only; the question is not authority)."""
    found: list[str] = []
    for name in ("may_agree_to", "must_haves"):
        for i, text in enumerate(getattr(card, name)):
            if _covers(text, part):
                found.append(f"{name}[{i}]")
    for i, amendment in enumerate(card.amendments or ()):
        if _answer_gives(amendment.answer, part):
            found.append(f"amendments[{i}]")
    return found


def _refs(card: IntentCard, refs: list[str], vias: list[str | None]) -> list[dict[str, Any]]:
    """Each ref with its text and kind; an amendment relayed over MCP says so (``via``)."""
    out: list[dict[str, Any]] = []
    for r in refs:
        item: dict[str, Any] = {"ref": r, "text": card.clause(r)}
        item["kind"] = "amendment" if r.startswith("am") else "clause"
        if item["kind"] == "amendment":
            index = int(r[r.index("[") + 1 : -1])
            if index < len(vias) and vias[index] == "mcp":
                item["via"] = "mcp"
        out.append(item)
    return out


def _authority_row(room: Room, term: str) -> dict[str, Any]:
    """What each seat's side of ``term`` rests on.

    A term made of several parts rests on a clause only when every part does; each part's
    own refs are listed under ``parts``. A term nothing gives rests on the proxy's judgment.
    """
    parts = term_parts(term) or [term]
    row: dict[str, Any] = {"term": term}
    split: list[dict[str, Any]] = [{"part": p} for p in parts]
    for seat in SEATS:
        card = room.card(seat)
        if card is None:
            row[seat] = []
            for item in split:
                item[seat] = []
            continue
        per_part = [_matching_clauses(card, p) for p in parts]
        vias = [e.via for e in room.escalations if e.seat == seat and e.answer is not None]
        for item, refs in zip(split, per_part, strict=True):
            item[seat] = _refs(card, refs, vias)
        whole: list[str] = []
        if all(per_part):
            for refs in per_part:
                whole += [r for r in refs if r not in whole]
        row[seat] = _refs(card, whole, vias)
    if len(parts) > 1:
        row["parts"] = split
    return row


def _numbered_agents(agents: list[str]) -> str:
    """Agents in join order, each with its join number ("#1 bo-agent, #2 bо-agent (reads
    like #1)"): a look-alike name is told apart by its number and marked."""
    out: list[str] = []
    for i, agent in enumerate(agents, start=1):
        like = next(
            (
                j
                for j, earlier in enumerate(agents[: i - 1], start=1)
                if earlier != agent and normalize(earlier) == normalize(agent)
            ),
            None,
        )
        out.append(f"#{i} {agent}" + (f" (reads like #{like})" if like else ""))
    return ", ".join(out)


_AMENDMENT_REF = re.compile(r"amendments?\[(0|[1-9][0-9]{0,3})\]")


def _claim_json(room: Room, cid: str) -> dict[str, Any]:
    rec = room.claims[cid]
    out: dict[str, Any] = {
        "id": rec.id,
        "seat": rec.seat,
        "text": rec.text,
        "origin": rec.origin,
        "verified": rec.verified,
    }
    if rec.ref is not None:
        out["ref"] = rec.ref
    if rec.backed_by is not None:
        out["backed_by"] = rec.backed_by
    if rec.speaker != "proxy":
        out["speaker"] = rec.speaker
    if rec.confirmed_by is not None:
        out["confirmed_by"] = rec.confirmed_by
    if rec.speaker == "principal" and rec.via is not None:
        out["via"] = rec.via
    elif rec.origin == "stated" and rec.ref is not None:
        # a stated claim resting on an answer the proxy relayed is only as good as the
        # proxy's word: say so wherever the claim is shown (ours, third review)
        cited = _AMENDMENT_REF.fullmatch(rec.ref.strip())
        vias = [e.via for e in room.escalations if e.seat == rec.seat and e.answer is not None]
        index = int(cited.group(1)) if cited is not None else len(vias)
        if index < len(vias) and vias[index] == "mcp":
            out["via"] = "mcp"
    return out


def build_brief(room: Room) -> Brief:
    """Build the decision brief of ``room`` (the shape of ``brief.schema.json``).

    :meth:`Room.brief` is the same brief, refused (``invalid_transition``) until the room
    has agreed or ended; this function builds one for a room in any state.
    """
    agreement = room.agreement
    try:
        verify_ledger(room.ledger.to_json())
        verifies = True
    except LedgerError:
        verifies = False
    parties: dict[str, Any] = {}
    for seat in SEATS:
        parties[seat] = {
            "principal": room.seat_name(seat),
            "card_hash": room.card_hash(seat),
            "sealed_card_hash": room.first_card_hash(seat),
            "sealed_via": room.sealed_via(seat),
            "sealed_by": room.sealed_by(seat),
            "principal_link": room.principal_link(seat),
            "agents": list(room.agents(seat)),
            "contests": room.contests(seat),
            "releases": room.releases(seat),
            "rejoins": room.rejoins(seat),
        }
    depends: list[dict[str, Any]] = []
    unverified: list[str] = []
    authority: list[dict[str, Any]] = []
    agreed: dict[str, Any] | None = None
    if agreement is not None:
        agreed = {
            "terms": agreement["terms"],
            "proposal_hash": agreement["proposal_hash"],
            "proposed_by": {"seat": agreement["proposed_by"], "seq": agreement["proposal_seq"]},
            "accepted_by": {"seat": agreement["accepted_by"], "seq": agreement["accept_seq"]},
        }
        for cid in agreement["depends_on"]:
            if cid not in room.claims:
                # only an imported room can name a claim nobody made (the reference keeps
                # depends_on as sent); it backs nothing
                parsed = parse_claim_id(cid)
                item = {
                    "id": cid,
                    "seat": parsed[0] if parsed else agreement["proposed_by"],
                    "text": "",
                    "origin": "assumed",
                    "verified": False,
                    "unknown": True,
                    "reviews": [],
                }
                depends.append(item)
                unverified.append(cid)
                continue
            item = _claim_json(room, cid)
            reviews = room.reviews_of(cid)
            item["reviews"] = [
                {"seat": s, "verdict": v[0], "seq": v[1]} for s, v in sorted(reviews.items())
            ]
            # a claim the other seat disputed stays unverified even once a principal's
            # answer cleared the block (PXP section 7), whatever its origin
            disputed_by = sorted(s for (s, c) in room._disputes if c == cid and s != item["seat"])
            if disputed_by:
                item["verified"] = False
                item["disputed_by"] = disputed_by
            depends.append(item)
            if not item["verified"]:
                unverified.append(cid)
        for term in agreement["terms"]:
            authority.append(_authority_row(room, term))
    challenged: list[dict[str, Any]] = []
    for cid in room.claims:
        for seat, (verdict, seq, reason) in sorted(room.reviews_of(cid).items()):
            if verdict in ("challenge", "conflict"):
                entry = _claim_json(room, cid)
                entry.update(
                    {
                        "by": seat,
                        "verdict": verdict,
                        "seq": seq,
                        "cleared_by_principal": not room.disputed(seat, cid),
                    }
                )
                if reason is not None:
                    entry["reason"] = reason
                challenged.append(entry)
    in_record = [
        {k: v for k, v in _claim_json(room, cid).items() if k != "backed_by"}
        for cid, rec in room.claims.items()
        if not rec.verified
    ]
    escalations = [
        {
            "seat": e.seat,
            "seq": e.seq,
            "question": e.question,
            "reason": e.reason,
            "answer": e.answer,
            "via": e.via,
            "answered_at": e.answered_at,
            "confirms": list(e.confirms),
            "acted_by": dict(e.acted_by) if e.acted_by is not None else None,
        }
        for e in room.escalations
    ]
    judgments: list[dict[str, Any]] = []
    if agreement is not None:
        for seat, role in (
            (agreement["proposed_by"], "proposed"),
            (agreement["accepted_by"], "accepted"),
        ):
            judgments.append(
                {
                    "seat": seat,
                    "statement": (
                        f"The proxy of seat {seat} {role} these terms on its own judgment that no "
                        "term crosses its principal's must_never, that each stays within "
                        "may_agree_to or a principal amendment, and that no escalate_when "
                        "condition held."
                    ),
                }
            )
    if agreement is not None and unverified:
        seat = agreement["accepted_by"]
        judgments.append(
            {
                "seat": seat,
                "statement": (
                    f"The proxy of seat {seat} agreed although the agreement depends on "
                    f"unverified assumptions ({', '.join(unverified)}), on its own judgment "
                    "that none of them touches its principal's must_haves."
                ),
            }
        )
    brief = {
        "pxp": "0",
        "room": room.id,
        "topic": room.topic,
        "outcome": "agreed" if agreement is not None else "no_agreement",
        "agreement": agreed,
        "authority": authority,
        "depends_on": depends,
        "unverified": unverified,
        "unverified_in_record": in_record,
        "challenged": challenged,
        "escalations": escalations,
        "protocol_flags": [dict(f) for f in (*room.protocol_flags, *room.import_notes)],
        "judgments": judgments,
        "parties": parties,
        "turns": {"used": room.turns, "max": room.max_turns},
        "ledger": {"head": room.head, "entries": len(room.ledger), "verifies": verifies},
    }
    return cast(Brief, brief)


def _get(brief: Mapping[str, Any], key: str) -> Any:
    if key not in brief:
        raise PxpError("brief_invalid", f"the brief has no {key!r} member")
    return brief[key]


def brief_markdown(brief: Mapping[str, Any]) -> str:
    """Render a brief (from :func:`build_brief`) as Markdown a principal can act on."""
    if not isinstance(brief, Mapping):
        raise PxpError("brief_invalid", "the brief is not a JSON object")
    try:
        return _render(_inert(brief, 0))
    except (KeyError, TypeError, IndexError, AttributeError, RecursionError):
        raise PxpError(
            "brief_invalid", "the brief does not have the shape build_brief makes"
        ) from None


_MD_SPECIAL = re.compile(
    r"(?P<keep>(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])|\[[0-9]{1,4}\](?![(\[:]))|[\\`*_\[\]|~]"
)
_LINE_BREAKS = re.compile("[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")
_INVISIBLE = re.compile(
    "[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
)
_BLOCK_START = re.compile(r"^(\s*)([#+=-])")
_LIST_NUMBER = re.compile(r"^(\s*)(\d+)([.)])")


def _displayable(text: str) -> str:
    """``text`` with each lone surrogate (hashable, but not printable) shown as U+FFFD."""
    text = text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")
    return re.sub("[\ud800-\udfff]", "\ufffd", text)


def _md(value: Any) -> str:
    """Text from a proxy or principal as inert Markdown: one line, no markup, no HTML."""
    text = _LINE_BREAKS.sub(" ", _displayable(str(value)))
    text = _INVISIBLE.sub(lambda m: f"U+{ord(m.group(0)):04X}", text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(_escape_md, text)
    text = _LIST_NUMBER.sub(r"\1\2\\\3", text)
    return _BLOCK_START.sub(r"\1\\\2", text)


def _escape_md(match: re.Match[str]) -> str:
    # ``may_agree_to[0]`` stays readable: an underscore inside a word never emphasises
    # (CommonMark), and ``[0]`` links nowhere unless ``(``, ``[`` or ``:`` follows it
    if match.group("keep") is not None:
        return match.group(0)
    return "\\" + match.group(0)


def _inert(value: Any, depth: int) -> Any:
    """A copy of a brief with every string made inert Markdown (see :func:`_md`)."""
    if depth > 32:
        raise PxpError("brief_invalid", "the brief is nested too deeply")
    if isinstance(value, str):
        return _md(value)
    if isinstance(value, Mapping):
        return {k: _inert(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_inert(v, depth + 1) for v in value]
    return value


def _code(value: Any) -> str:
    """A hash shown as code: anything but hex digits is dropped from an imported brief."""
    return "`" + re.sub(r"[^0-9a-fA-F]", "", str(value)) + "`"


def _origin(claim: Mapping[str, Any]) -> str:
    """``stated from must_haves[0]``, ``sourced from <ref>``, ``assumed``, plus who said it."""
    text = str(claim["origin"])
    if claim.get("ref"):
        text += f" from {claim['ref']}"
    if claim.get("speaker") == "principal":
        text += ", said by the principal"
        if claim.get("via") == "mcp":
            text += ", relayed by the proxy (mcp)"
    elif claim.get("via") == "mcp":
        text += " (relayed by the proxy (mcp))"
    if claim.get("confirmed_by"):
        text += f", confirmed by seat {claim['confirmed_by']}'s principal"
    return text


def _acted(acted: Any, via: Any) -> str:
    """How an action arrived: ``via web, through the principal link issued at ledger entry 4
    to agent X``; just ``via web`` when the room issued no link (a room used as a library)."""
    if not isinstance(acted, Mapping):
        return f"via {via}" if via else "(how is not recorded)"
    agent = acted.get("agent")
    if acted.get("link") == "principal":
        issued = acted.get("link_issued_at")
        if not issued:
            return "via web"
        who = f"agent {agent}" if agent else "the room's creator"
        return f"via web, through the principal link issued at ledger entry {issued} to {who}"
    if not agent:
        return f"via {acted.get('via')}"
    return f"via {acted.get('via')}, through the seat link by agent {agent}"


def _contest_lines(parties: Mapping[str, Any], name: Mapping[str, str]) -> list[str]:
    """The seat history a principal must not miss, right under the outcome: every contest,
    release and rejoin of a seat (see ``Room.contest``, ``Room.release``, ``Room.rejoin``).
    Each is a hand-over nobody can vouch for: a seat's links are bearer links, and the
    invite travelled through the other side."""
    lines: list[str] = []
    for seat in SEATS:
        party = parties[seat]
        for c in party.get("contests") or []:
            done = {"agreed": "agreed", "ended": "ended"}.get(c["state"])
            when = f", after the room had {done}" if done else ""
            then = (
                f"what it records for seat {seat} may not be {name[seat]}'s (the side that "
                "forwarded the invite can also write this)."
                if done
                else "so the room ended there, without agreement."
            )
            lines += [
                f"**Seat {seat} was contested** (ledger entry {c['n']}, {c['at']}): agent "
                f"{c['agent']} presented seat {seat}'s invite after agent {c['holder']} had "
                f"joined with it{when}. Nobody can tell which of the two acts for "
                f"{name[seat]}: {then}",
                "",
            ]
        for r in party.get("releases") or []:
            by = r.get("by") or {}
            page = f"the principal page issued at ledger entry {by.get('issued_at')} to " + (
                f"agent {by['agent']}" if by.get("agent") else "the room's creator"
            )
            sealed = (
                f"; its card had been sealed before, {_acted(r['sealed_by'], None)}"
                if r.get("sealed_by")
                else ""
            )
            lines += [
                f"**Seat {seat} was released** (ledger entry {r['n']}, {r['at']}) from agent "
                f"{r['agent']} through {page}{sealed}. Whoever held that page handed the seat "
                "on: any agent after it did not seal that card, and that page still acts for "
                f"{name[seat]}.",
                "",
            ]
        for r in party.get("rejoins") or []:
            lines += [
                f"**Seat {seat}'s link joined again** (ledger entry {r['n']}, {r['at']}) as "
                f"agent {r['agent']} while agent {r['holder']} held the seat. If that was not "
                "the same agent, two agents shared the seat's link.",
                "",
            ]
    return lines


def _rests_on(row: Mapping[str, Any], name: Mapping[str, str]) -> str:
    parts = []
    for seat in SEATS:
        refs = row[seat]
        if refs:
            cited = "; ".join(
                f'{r["kind"]} {r["ref"]} "{r["text"]}"'
                + (" (relayed by the proxy (mcp))" if r.get("via") == "mcp" else "")
                for r in refs
            )
            parts.append(f"{name[seat]}: {cited}")
        else:
            parts.append(f"{name[seat]}: its proxy's judgment (no clause or amendment)")
    return " | ".join(parts)


def _render(brief: Mapping[str, Any]) -> str:
    parties = _get(brief, "parties")
    name = {s: parties[s]["principal"] or f"seat {s}" for s in SEATS}
    lines = [f"# Decision brief: {_get(brief, 'topic')}", ""]
    agreement = _get(brief, "agreement")
    if agreement is not None:
        p, a = agreement["proposed_by"], agreement["accepted_by"]
        lines += [
            "**Outcome: agreed.** "
            f"{name[p['seat']]}'s proxy proposed (message {p['seq']}), "
            f"{name[a['seat']]}'s proxy accepted (message {a['seq']}).",
            "",
            *_contest_lines(parties, name),
            "## What was agreed",
            "",
        ]
        lines += [f"{i}. {t}" for i, t in enumerate(agreement["terms"], start=1)]
        lines += ["", f"Proposal hash: {_code(agreement['proposal_hash'])}", ""]
        lines += ["## On whose authority", ""]
        for row in brief["authority"]:
            lines.append(f"- {row['term']}: " + _rests_on(row, name))
            for part in row.get("parts", []):
                lines.append(f"  - part {part['part']}: " + _rests_on(part, name))
        lines.append("")
        lines += ["## What the agreement depends on", ""]
        if not brief["depends_on"]:
            lines.append("- No claims are named as dependencies.")
        for claim in brief["depends_on"]:
            state = "verified" if claim["verified"] else "**UNVERIFIED**"
            lines.append(
                f"- {claim['id']} ({name[claim['seat']]}, {_origin(claim)}, {state}): "
                f"{claim['text']}"
            )
        lines.append("")
    else:
        lines += ["**Outcome: no agreement.**", "", *_contest_lines(parties, name)]
    if brief["unverified"]:
        lines += [
            "## Unverified assumptions",
            "",
            "The agreement still rests on these assumptions nobody has backed with a "
            "principal's word or a source: " + ", ".join(brief["unverified"]) + ".",
            "",
        ]
    others = [
        c for c in brief.get("unverified_in_record", []) if c["id"] not in brief["unverified"]
    ]
    if others:
        lines += [
            "## Other unverified claims in the record",
            "",
            "Assumptions made during the exchange that nobody backed; the agreement does not "
            "name them as dependencies.",
            "",
        ]
        lines += [f"- {c['id']} ({name[c['seat']]}, {_origin(c)}): {c['text']}" for c in others]
        lines.append("")
    lines += ["## Challenged claims", ""]
    if not brief["challenged"]:
        lines.append("- None.")
    for c in brief["challenged"]:
        cleared = "cleared by the principal" if c["cleared_by_principal"] else "still disputed"
        lines.append(
            f'- {c["id"]} ({name[c["seat"]]}, {_origin(c)}) "{c["text"]}": {c["verdict"]} by '
            f"{name[c['by']]} (message {c['seq']}), {cleared}"
        )
    lines += ["", "## Escalations", ""]
    if not brief["escalations"]:
        lines.append("- None.")
    for e in brief["escalations"]:
        answer = (
            f'answered "{e["answer"]}" ({_acted(e.get("acted_by"), e["via"])})'
            if e["answer"] is not None
            else "not answered"
        )
        if e.get("confirms"):
            answer += ", confirming " + ", ".join(e["confirms"])
        lines.append(f'- {name[e["seat"]]} was asked "{e["question"]}": {answer}')
    if brief["judgments"]:
        lines += ["", "## The proxies' own judgment", ""]
        lines += [f"- {j['statement']}" for j in brief["judgments"]]
    lines += ["", "## Protocol flags", ""]
    if not brief["protocol_flags"]:
        lines.append("- None.")
    for f in brief["protocol_flags"]:
        lines.append(f"- message {f['seq']} ({name[f['seat']]}): {f['flag']}")
    lines += ["", "## Parties", ""]
    for seat in SEATS:
        p = parties[seat]
        agents = _numbered_agents(p["agents"]) or "none recorded"
        sealed = _acted(p.get("sealed_by"), p.get("sealed_via"))
        lines.append(
            f"- Seat {seat}: {name[seat]}, card {_code(p['card_hash'])} sealed {sealed}, "
            f"agents: {agents}"
        )
    ledger = brief["ledger"]
    lines += [
        "",
        f"Turns: {brief['turns']['used']} of {brief['turns']['max']}. "
        f"Ledger: {ledger['entries']} entries, head {_code(ledger['head'])}, "
        + (
            "hash chain verifies (integrity only, not authenticity)."
            if ledger["verifies"]
            else "**DOES NOT VERIFY**."
        ),
        "",
    ]
    return "\n".join(lines)
