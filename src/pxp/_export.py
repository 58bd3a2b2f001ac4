"""Import of a room export (ours or the reference server's): its ledger applied entry by
entry through :meth:`Room.apply`, the one gate live play goes through too.

What the export holds beside the ledger is only what the ledger hashes (cards, envelopes,
answers: each given to :meth:`Room.apply` as the body of its entry) and what the ledger does
not record at all (seat tokens, names known before sealing, join modes, drafts). Status,
turn, agents, claims and the pending escalation are derived from the replay, never read
from the export.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._card import IntentCard, _replace_amendments
from ._envelope import SEATS, envelope_hash
from ._ledger import LedgerEntry, verify_ledger
from .errors import PxpError

if TYPE_CHECKING:
    from ._room import Room

__all__ = ["import_room", "load_room"]

# the reference writes the principal's answer onto the escalating envelope after hashing it
_POST_HASH = ("answer", "answer_via")


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


class _Export:
    """The parts of an export that are not ledger entries, checked for type."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.room_id: str = _get(data, "id", str, "the room")
        self.entries: list[Any] = _get(data, "ledger", list, "the room")
        self.seats: Mapping[str, Any] = _get(data, "seats", Mapping, "the room")
        envelopes = _get(data, "envelopes", list, "the room")
        max_turns = data.get("maxTurns")
        if max_turns is not None and (type(max_turns) is not int or max_turns < 1):
            raise _bad("the room's maxTurns is not a positive integer", "wrong_type")
        # None: the turn limit the ledger opened with (Room.apply checks it either way)
        self.max_turns: int | None = max_turns
        self.names: dict[str, str] = {}
        self.tokens: dict[str, str] = {}
        self.modes: dict[str, str] = {}
        self.cards: dict[str, IntentCard] = {}
        self.drafts: dict[str, IntentCard] = {}
        for seat in SEATS:
            record = self.seats.get(seat)
            if isinstance(record, Mapping):
                self._seat(seat, record)
        # Ours: seat tokens that live play would refuse (shorter than 16 characters, or one
        # token for both seats, as a reference fixture has) open no seat after an import.
        self.tokens = {s: t for s, t in self.tokens.items() if len(t) >= 16}
        if len(set(self.tokens.values())) < len(self.tokens):
            self.tokens = {}
        self.by_seq: dict[int, Any] = {}
        for i, env in enumerate(envelopes):
            seq = env.get("seq") if isinstance(env, Mapping) else None
            if type(seq) is not int or seq in self.by_seq:
                raise _bad(f"envelopes[{i}] has a missing or repeated seq", "envelope_seq")
            self.by_seq[seq] = env

    def _seat(self, seat: str, record: Mapping[str, Any]) -> None:
        texts = (("token", self.tokens), ("name", self.names), ("mode", self.modes))
        for key, text in texts:
            if isinstance(record.get(key), str):
                text[seat] = record[key]
        for key, strict, into in (("card", False, self.cards), ("draft", True, self.drafts)):
            card = record.get(key)
            if card is None or (key == "draft" and not isinstance(card, Mapping)):
                continue
            try:
                into[seat] = IntentCard.from_json(card, strict=strict)
            except PxpError as exc:
                raise _bad(f"seat {seat}'s {key} card is invalid: {exc.message}", "card") from None


def import_room(
    cls: type[Room], data: Any, *, head: str | None = None, stored: bool = False
) -> Room:
    """Replay ``data`` (a room export) into a new room of class ``cls``.

    ``stored``: the room comes back from a store, which kept it when an older release's
    import admitted it; what the review i25b checks refuse (an entry's form, an agreement
    live play withholds) is noted in the brief instead, so the room still loads."""
    if not isinstance(data, Mapping):
        raise _bad("the room export is not a JSON object", "not_object")
    try:
        data = copy.deepcopy(data)  # the room must not share objects with the caller
    except RecursionError:
        raise _bad("the room export is nested too deeply", "not_object") from None
    export = _Export(data)
    verify_ledger(export.entries, head=head)
    # a ledger of LedgerEntry objects verifies as their JSON does
    export.entries = [e.to_json() if isinstance(e, LedgerEntry) else e for e in export.entries]
    entries = export.entries
    if not entries:
        raise _bad("the ledger does not start with room_opened", "first_entry")
    max_turns = export.max_turns
    if max_turns is None:
        opened = entries[0].get("data") if isinstance(entries[0], Mapping) else None
        bound = opened.get("max_turns") if isinstance(opened, Mapping) else None
        max_turns = bound if type(bound) is int and 2 <= bound <= 1000 else 10
    try:
        room = cls(
            export.room_id,
            max_turns=max_turns,
            names=export.names,
            tokens=export.tokens,
            modes=export.modes,
        )
    except PxpError as exc:
        raise _bad(f"the room's seats cannot be set up: {exc.message}", "room") from None
    room._stored = stored
    replay = _Replay(room, export)
    for index, entry in enumerate(entries):
        replay.apply(index, entry)
        if index == 0:
            replay.drafts()
    replay.finish()
    return room


class _Replay:
    """Feeds each ledger entry and its body to :meth:`Room.apply`."""

    def __init__(self, room: Room, export: _Export) -> None:
        self.room = room
        self.export = export
        self.answers = {
            seat: sum(
                1
                for e in export.entries
                if e["type"] == "principal_answer" and e["data"].get("seat") == seat
            )
            for seat in SEATS
        }
        self.answered = dict.fromkeys(SEATS, 0)
        self.late: dict[int, dict[str, Any]] = {}
        self.used: set[int] = set()

    def apply(self, index: int, entry: Mapping[str, Any]) -> None:
        kind, data = entry["type"], entry["data"]
        try:
            self.room.apply(entry, self._body(kind, data))
        except PxpError as exc:
            raise type(exc)(
                exc.code, f"ledger entry {index} ({kind}): {exc.message}", reason=exc.reason
            ) from None
        if kind == "envelope":
            self.used.add(data["seq"])
        elif kind == "principal_answer":
            self.answered[data["seat"]] += 1

    def _body(self, kind: str, data: Mapping[str, Any]) -> Any:
        seat = data.get("seat")
        if not isinstance(seat, str):
            seat = None  # Room.apply refuses the entry's seat (seat_invalid)
        if kind == "card_sealed" and seat in self.export.cards:
            card = self.export.cards[seat]
            amendments = card.amendments or ()
            # the card as sealed: without the amendments the answers in the ledger add (a
            # card short of amendments is refused at the answer that has none)
            keep = max(0, len(amendments) - self.answers[seat])
            return _replace_amendments(card, amendments[:keep])
        if kind == "principal_answer" and seat in self.export.cards:
            amendments = self.export.cards[seat].amendments or ()
            k = self.answered[seat]
            return amendments[k] if k < len(amendments) else None
        if kind == "envelope":
            return self._envelope(data)
        return None

    def _envelope(self, data: Mapping[str, Any]) -> Any:
        seq = data.get("seq")
        env = self.export.by_seq.get(seq) if type(seq) is int else None
        if not isinstance(env, Mapping) or not any(k in env for k in _POST_HASH):
            return env
        bare = {k: v for k, v in env.items() if k not in _POST_HASH}
        try:
            if envelope_hash(env) == data.get("envelope_hash"):
                return env
            if envelope_hash(bare) != data.get("envelope_hash"):
                return env
        except PxpError:
            return env  # Room.apply says what is wrong with it
        # Those two members are not covered by the recorded hash; they are checked against
        # the answer entry instead, and the room keeps the envelope as hashed: the answer is
        # the principal's private word (sealed into the card), not for the other side's view.
        assert type(seq) is int
        self.late[seq] = {k: env[k] for k in _POST_HASH if k in env}
        return bare

    def drafts(self) -> None:
        for seat, draft in self.export.drafts.items():
            try:
                self.room.draft_card(seat, draft)
            except PxpError as exc:
                raise _bad(f"seat {seat}'s draft card is invalid: {exc.message}", "card") from None

    def finish(self) -> None:
        room = self.room
        by_seq = {e.seq: e for e in room.escalations}
        for seq, written in sorted(self.late.items()):
            answered = by_seq.get(seq)
            if answered is None or answered.answer is None:
                raise _bad(
                    "an envelope carries an answer the ledger does not record", "answer_unrecorded"
                )
            if written.get("answer") != answered.answer or (
                written.get("answer_via", answered.via) != answered.via
            ):
                raise _bad(
                    f"envelope {seq} carries another answer than the ledger's", "answer_mismatch"
                )
        if self.used != set(self.export.by_seq):
            raise _bad("the export holds envelopes the ledger does not record", "extra_envelope")
        # The reference appends ``agreement`` only after an await (it maps authority first) and
        # ``turn_limit`` on the next pass of its loop: a crash in between leaves a room whose
        # last envelope agreed, or used the last turn, without that entry (its "finalise
        # gap"). Both entries carry nothing the envelopes do not determine, so the import
        # completes them; a missing ``escalation`` entry cannot arise that way.
        owed = room.owed
        if owed == "escalation":
            raise _bad(
                "the ledger ends before the escalation entry its last event requires", "truncated"
            )
        if owed is not None:
            last = room.ledger.entries[-1].at
            room.apply({"type": owed, "at": last, "data": room.owed_data()})
