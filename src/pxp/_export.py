"""Import of a room export (ours or the reference server's) by replaying its ledger."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._canonical import sha256_hex
from ._card import IntentCard, SealedCard, _replace_amendments
from ._envelope import SEATS, envelope_hash, validate_draft, validate_envelope
from ._ledger import Ledger, LedgerEntry, verify_ledger
from .errors import PxpError

if TYPE_CHECKING:
    from ._room import Room

__all__ = ["import_room", "load_room"]


_POST_HASH = ("answer", "answer_via")


# our seat entries (spec section 4): ledger type -> (transition action, outcome)
_SEAT_EVENTS = {
    "seat_contested": ("contest", "contested"),
    "seat_released": ("release", "released"),
    "seat_rejoined": ("rejoin", "rejoined"),
}


def _seat_event(
    room: Room, data: Mapping[str, Any], action: str, where: str
) -> tuple[str, str, dict[str, str]]:
    """Check a replayed seat entry as strictly as the live rule: a transition the table
    allows, not between an envelope and the entry it owes, exactly ``{seat, agent}``, a seat
    an agent holds, an agent name the room takes (for a release: the agent held), and within
    the caps. Return the seat, the agent and the outcomes."""
    from ._room import MAX_CONTESTS_PER_SEAT, MAX_REJOINS_PER_SEAT, TRANSITIONS

    seat = _seat_of(data, where)
    record = room._seats[seat]
    agent = data.get("agent")
    state = TRANSITIONS.get((room.status, action))
    counted = {"contest": (record.contests, MAX_CONTESTS_PER_SEAT)}
    counted["rejoin"] = (record.rejoins, MAX_REJOINS_PER_SEAT)
    done, cap = counted.get(action, ([], 1))
    if (
        state is None
        or room._replay_outcome is not None  # the last envelope's entry is still owed
        or set(data) != {"seat", "agent"}
        or record.agent is None
        or not (isinstance(agent, str) and agent.strip() and len(agent) <= 200)
        or (action == "release" and agent != record.agent)
        or len(done) >= cap
    ):
        raise _bad(f"{where} does not fit seat {seat} as the ledger left it", "order")
    return seat, str(agent), state


def _bad(message: str, reason: str) -> PxpError:
    return PxpError("import_invalid", message, reason=reason)


def _get(mapping: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(mapping, Mapping) or key not in mapping:
        raise _bad(f"{where} has no {key!r} member", "missing_member")
    value = mapping[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise _bad(f"{where}.{key} has the wrong type", "wrong_type")
    return value


def load_room(value: Any) -> Room:
    """Load a room from JSON text or parsed JSON (see :meth:`Room.from_export`)."""
    from ._room import Room

    if isinstance(value, str | bytes):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise _bad("the room export is not valid JSON", "json") from None
    return Room.from_export(value)


def import_room(cls: type[Room], data: Any, *, head: str | None = None) -> Room:
    """Replay ``data`` (a room export) into a new room of class ``cls``."""
    if not isinstance(data, Mapping):
        raise _bad("the room export is not a JSON object", "not_object")
    try:
        data = copy.deepcopy(data)  # the room must not share objects with the caller
    except RecursionError:
        raise _bad("the room export is nested too deeply", "not_object") from None
    room_id = _get(data, "id", str, "the room")
    entries = _get(data, "ledger", list, "the room")
    verify_ledger(entries, head=head)
    seats = _get(data, "seats", Mapping, "the room")
    envelopes = _get(data, "envelopes", list, "the room")
    max_turns = data.get("maxTurns", 10)
    if type(max_turns) is not int or max_turns < 1:
        raise _bad("the room's maxTurns is not a positive integer", "wrong_type")
    if not entries or entries[0]["type"] != "room_opened":
        raise _bad("the ledger does not start with room_opened", "first_entry")
    topic = _get(entries[0]["data"], "topic", str, "ledger entry 0 data")
    room = cls(room_id, topic, entries[0]["at"], max_turns)
    cards: dict[str, IntentCard] = {}
    answers_left: dict[str, int] = {}
    for seat in SEATS:
        record = seats.get(seat) if isinstance(seats, Mapping) else None
        if not isinstance(record, Mapping):
            continue
        token = record.get("token")
        if isinstance(token, str):
            room._seats[seat].token = token
        name = record.get("name")
        if isinstance(name, str):
            room._seats[seat].name = name
        card = record.get("card")
        if card is not None:
            try:
                cards[seat] = IntentCard.from_json(card, strict=False)
            except PxpError as exc:
                raise _bad(f"seat {seat}'s card is invalid: {exc.message}", "card") from None
        draft = record.get("draft")
        if isinstance(draft, Mapping):
            try:
                room._seats[seat].draft = IntentCard.from_json(draft)
            except PxpError:
                raise _bad(f"seat {seat}'s draft card is invalid", "card") from None
        answers_left[seat] = sum(
            1 for e in entries if e["type"] == "principal_answer" and e["data"].get("seat") == seat
        )
    by_seq: dict[int, Any] = {}
    for i, env in enumerate(envelopes):
        seq = env.get("seq") if isinstance(env, Mapping) else None
        if type(seq) is not int or seq in by_seq:
            raise _bad(f"envelopes[{i}] has a missing or repeated seq", "envelope_seq")
        by_seq[seq] = env
    used: set[int] = set()
    for index, entry in enumerate(entries[1:], start=1):
        _replay(room, index, entry, cards, answers_left, by_seq, used)
    # The reference appends ``agreement`` only after an await (it maps authority first) and
    # ``turn_limit`` on the next pass of its loop: a crash in between leaves a room whose
    # last envelope agreed, or used the last turn, without that entry (its "finalise gap").
    # Both entries carry nothing the envelopes do not determine, so the import completes
    # them below; a missing ``escalation`` entry cannot arise that way and stays an error.
    finish = room._replay_outcome
    if finish not in (None, "agree", "turn_limit"):
        raise _bad(
            f"the ledger ends before the {finish} entry its last event requires", "truncated"
        )
    for seat in SEATS:
        record = seats.get(seat)
        if isinstance(record, Mapping) and room._seats[seat].agent is None:
            agent, mode = record.get("agent"), record.get("mode")
            if isinstance(agent, str):
                room._do_join(seat, agent, mode if isinstance(mode, str) else None)
            elif isinstance(mode, str):
                room._seats[seat].mode = mode
    if room._late_answers:
        raise _bad("an envelope carries an answer the ledger does not record", "answer_unrecorded")
    if used != set(by_seq):
        raise _bad("the export holds envelopes the ledger does not record", "extra_envelope")
    room.ledger = Ledger(
        LedgerEntry(e["n"], e["type"], e["at"], e["data"], e["prev"], e["hash"]) for e in entries
    )
    room._replay_outcome = None
    at = entries[-1]["at"]
    if finish == "agree":
        agreement = room._agreement
        assert agreement is not None
        room.ledger.append(
            "agreement",
            at,
            {
                "proposal_hash": agreement["proposal_hash"],
                "proposed_by": agreement["proposed_by"],
                "accepted_by": agreement["accepted_by"],
            },
        )
        room._move("send", "agree")
    elif finish == "turn_limit":
        room.ledger.append("turn_limit", at, {"turns": room.turns, "max_turns": room.max_turns})
        room.status, room.turn = "ended", None
    return room


def _draft_of(env: Mapping[str, Any]) -> dict[str, Any]:
    """The draft a proxy sent for a stored envelope (ids of its own claims back to newN)."""
    own = f"{env['from']['seat']}{env['seq']}."
    draft: dict[str, Any] = {"message": env["message"], "status": env["status"]}
    draft["claims"] = [
        {k: c[k] for k in ("text", "origin", "ref") if k in c} for c in env["claims"]
    ]
    draft["reviews"] = [
        {k: r[k] for k in ("claim_id", "verdict", "reason") if k in r} for r in env["reviews"]
    ]
    if "proposal" in env:
        deps = [
            f"new{d[len(own) :]}" if isinstance(d, str) and d.startswith(own) else d
            for d in env["proposal"].get("depends_on", [])
        ]
        draft["proposal"] = {"terms": list(env["proposal"]["terms"]), "depends_on": deps}
    if "escalation" in env:
        draft["escalation"] = dict(env["escalation"])
    return draft


def _note_stricter(room: Room, env: Mapping[str, Any]) -> None:
    """Run this library's enforcement on the draft behind an imported envelope and note
    every flag it would have recorded that the stored envelope lacks (a looser server's
    room: a must_never agreed to, a laundered stated claim). The import is not refused:
    the notes go to the brief as ``Import: would be flagged here: ...``."""
    seat = env["from"]["seat"]
    stored_flags = set(env.get("protocol_flags") or ())
    try:
        _ours, flags = room._enforce(seat, validate_draft(_draft_of(env)))
    except PxpError as exc:
        room._import_notes.append(
            {"seq": env["seq"], "seat": seat, "flag": f"Import: would be refused here: {exc}"}
        )
        return
    for text in flags:
        if text not in stored_flags:
            room._import_notes.append(
                {"seq": env["seq"], "seat": seat, "flag": f"Import: would be flagged here: {text}"}
            )


def _check_agreeing(room: Room, env: Mapping[str, Any], where: str) -> None:
    """An imported ``agree`` must be one enforcement lets through (ours and the reference's
    alike): it accepts the other side's latest proposal by its hash, carries no conflict
    review, and that proposal depends on no claim this seat disputed without a principal's
    answer since."""
    seat = env["from"]["seat"]
    theirs = room._proposals.get("B" if seat == "A" else "A")
    accepts = env["accepts"]
    if (
        theirs is None
        or accepts.get("proposal_hash") != theirs["proposal_hash"]
        or accepts.get("seq", theirs["seq"]) != theirs["seq"]
    ):
        raise _bad(
            f"{where}: the envelope accepts a proposal that is not the other side's latest",
            "agreement",
        )
    verdicts = [r.get("verdict") for r in env["reviews"]]
    if "conflict" in verdicts:
        raise _bad(f"{where}: the envelope agrees while raising a conflict", "agreement")
    disputing = {r.get("claim_id") for r in env["reviews"] if r.get("verdict") != "accept"}
    for dep in theirs["depends_on"]:
        if dep in disputing or room.disputed(seat, dep):
            raise _bad(
                f"{where}: the accepted proposal depends on {dep}, which this seat disputed",
                "agreement_disputed",
            )


def _seat_of(data: Mapping[str, Any], where: str) -> str:
    seat = data.get("seat")
    if seat not in SEATS:
        raise _bad(f"{where} names no valid seat", "seat")
    return str(seat)


def _replay(
    room: Room,
    index: int,
    entry: Mapping[str, Any],
    cards: dict[str, IntentCard],
    answers_left: dict[str, int],
    by_seq: dict[int, Any],
    used: set[int],
) -> None:
    kind, data = entry["type"], entry["data"]
    where = f"ledger entry {index} ({kind})"
    late: dict[int, dict[str, Any]] = room._late_answers
    if kind == "agent_joined":
        seat = _seat_of(data, where)
        # the reference lets an external seat's agent rename itself at any time
        agent = data.get("agent", data.get("name"))
        if not isinstance(agent, str):
            agent = "unknown agent"
        mode = data.get("mode")
        room._do_join(seat, agent, mode if isinstance(mode, str) else None)
    elif kind == "principal_link":
        seat = _seat_of(data, where)
        agent = data.get("agent")
        if room.status in ("agreed", "ended") or not (agent is None or isinstance(agent, str)):
            raise _bad(f"{where} is out of order or names no agent", "principal_link")
        room._do_issue(seat, agent, index + 1)
    elif kind == "card_sealed":
        seat = _seat_of(data, where)
        if room.status != "open" or room._seats[seat].card is not None:
            raise _bad(f"{where} seals a card out of order", "order")
        card = cards.get(seat)
        if card is None:
            raise _bad(f"{where}: the export has no card for seat {seat}", "card_missing")
        amendments = card.amendments or ()
        keep = len(amendments) - answers_left[seat]
        if keep < 0:
            raise _bad(f"{where}: seat {seat} has fewer amendments than answers", "card")
        first = _replace_amendments(card, amendments[:keep])
        if first.hash != data.get("card_hash"):
            raise _bad(f"{where}: seat {seat}'s card does not hash to the sealed hash", "card_hash")
        via = data.get("via")
        room._do_seal(seat, SealedCard(first, first.hash), via if isinstance(via, str) else None)
        room._after_seal()
    elif kind == "envelope":
        seq = data.get("seq")
        if (
            room.status != "active"
            or room._replay_outcome is not None  # the last envelope's entry is still owed
            or type(seq) is not int
            or seq != len(room._envelopes) + 1
        ):
            raise _bad(f"{where} is out of order", "order")
        env = by_seq.get(seq)
        if env is None:
            raise _bad(f"{where}: the export has no envelope {seq}", "envelope_missing")
        try:
            stored = validate_envelope(env, strict=False)
        except PxpError as exc:
            raise _bad(f"{where}: {exc.message}", "envelope") from None
        if envelope_hash(env) != data.get("envelope_hash"):
            # The reference writes the principal's answer onto the escalating envelope
            # (``answer``, ``answer_via``) after hashing it: those two members are not
            # covered by the recorded hash, and are checked against the answer entry instead.
            bare = {k: v for k, v in env.items() if k not in _POST_HASH}
            if len(bare) == len(env) or envelope_hash(bare) != data.get("envelope_hash"):
                raise _bad(
                    f"{where}: envelope {seq} does not hash to the recorded hash", "envelope_hash"
                )
            late[seq] = {k: env[k] for k in _POST_HASH if k in env}
            # keep the envelope as hashed: the answer is the principal's private word (it is
            # sealed into the card), and a view must not show it to the other side's proxy
            stored = {k: v for k, v in stored.items() if k not in _POST_HASH}
        seat = stored["from"]["seat"]
        if seat != data.get("seat") or seat != room.turn or stored["status"] != data.get("status"):
            raise _bad(f"{where} disagrees with envelope {seq}", "envelope")
        if stored["room"] != room.id:
            raise _bad(
                f"{where}: envelope {seq} belongs to room {stored['room']!r}", "envelope_room"
            )
        if stored["intent_hash"] != room._seats[seat].card_hash:
            raise _bad(f"{where}: envelope {seq} names a card hash its seat did not hold", "intent")
        if stored["status"] == "agree":
            _check_agreeing(room, stored, where)
        _note_stricter(room, stored)
        used.add(seq)
        result = room._apply_envelope(dict(stored), ledger_n=index + 1)
        room._replay_outcome = None if result == "continue" else result
    elif kind == "escalation":
        outcome = getattr(room, "_replay_outcome", None)
        pending = room._escalations[-1] if room._escalations else None
        if outcome != "escalate" or pending is None or pending.answer is not None:
            raise _bad(f"{where} follows no escalating envelope", "order")
        if data.get("seq") != pending.seq or data.get("seat") != pending.seat:
            raise _bad(f"{where} names another envelope", "escalation")
        if data.get("question_hash") != sha256_hex(pending.question):
            raise _bad(f"{where}: the question does not hash to question_hash", "question_hash")
        room._replay_outcome = None
        room._move("send", "escalate")
    elif kind == "principal_answer":
        seat = _seat_of(data, where)
        pending = room.pending
        if pending is None or pending.seat != seat:
            raise _bad(f"{where} answers no pending escalation of seat {seat}", "order")
        card = cards[seat]
        current = room._seats[seat].card
        assert current is not None
        have = len(current.amendments or ())
        full = card.amendments or ()
        if have >= len(full):
            raise _bad(f"{where}: the card has no amendment for this answer", "card")
        amendment = full[have]
        amended = _replace_amendments(current, (*(current.amendments or ()), amendment))
        if amended.hash != data.get("card_hash"):
            raise _bad(f"{where}: the amended card does not hash to card_hash", "card_hash")
        if sha256_hex(amendment.answer) != data.get("answer_hash"):
            raise _bad(f"{where}: the answer does not hash to answer_hash", "answer_hash")
        via = data.get("via")
        written = late.pop(pending.seq, None)
        if written is not None and (
            written.get("answer") != amendment.answer or written.get("answer_via", via) != via
        ):
            raise _bad(
                f"{where}: envelope {pending.seq} carries another answer than the ledger's",
                "answer_mismatch",
            )
        answers_left[seat] -= 1
        try:
            confirms = room._check_confirms(data.get("confirms", []))
        except PxpError as exc:
            raise _bad(f"{where}: {exc.message}", "confirms") from None
        room._do_answer(
            seat,
            amended,
            amendment.answer,
            via if isinstance(via, str) else "web",
            entry["at"],
            index + 1,
            confirms,
        )
        if room._after_answer() == "turn_limit":
            room._replay_outcome = "turn_limit"
        room._move("answer", "resumed")
    elif kind == "agreement":
        outcome = getattr(room, "_replay_outcome", None)
        agreement = room._agreement
        if outcome != "agree" or agreement is None:
            raise _bad(f"{where} follows no agreeing envelope", "order")
        proposer, accepter = agreement["proposed_by"], agreement["accepted_by"]
        # a seat, or (as another implementation may write it) that seat's principal name
        if (
            data.get("proposal_hash") != agreement["proposal_hash"]
            or data.get("proposed_by") not in (proposer, room._seats[proposer].name)
            or data.get("accepted_by") not in (accepter, room._seats[accepter].name)
        ):
            raise _bad(f"{where} disagrees with the agreeing envelope", "agreement")
        room._replay_outcome = None
        room._move("send", "agree")
    elif kind in _SEAT_EVENTS:
        action, outcome = _SEAT_EVENTS[kind]
        seat, agent, state = _seat_event(room, data, action, where)
        if kind == "seat_contested":
            room._do_contest(seat, agent, entry["at"], index + 1, state[outcome])
        elif kind == "seat_released":
            room._do_release(seat, entry["at"], index + 1, state[outcome])
        else:
            room._do_rejoin(seat, agent, entry["at"], index + 1, state[outcome])
    elif kind == "turn_limit":
        if room._replay_outcome != "turn_limit" or room.status != "active":
            raise _bad(f"{where} comes before the turn limit", "order")
        room._replay_outcome = None
        room.status = "ended"
        room.turn = None
    else:
        raise _bad(f"{where} has a type this implementation does not know", "entry_type")
