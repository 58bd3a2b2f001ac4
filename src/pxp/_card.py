"""Intent cards: the principal's sealed instructions, their hash, and amendments."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ._canonical import canonical, sha256_hex
from ._jsstr import js_len, js_trim
from ._schemas import validator
from .errors import PxpError

__all__ = [
    "CLAUSE_FIELDS",
    "LIMITS",
    "Amendment",
    "IntentCard",
    "Principal",
    "SealedCard",
    "card_hash",
    "normalise_card",
    "resolve_clause",
    "seal_card",
]

CLAUSE_FIELDS = ("must_haves", "may_agree_to", "must_never", "escalate_when", "known_facts")
"""The list fields of a card whose items a claim or brief can cite as ``field[i]``."""

_LIST_FIELDS = CLAUSE_FIELDS
_KNOWN = {"pxp", "principal", "goal", "amendments", *_LIST_FIELDS}
_CLAUSE_REF = re.compile(
    r"^(must_haves|may_agree_to|must_never|escalate_when|known_facts|amendments)\[(0|[1-9][0-9]{0,3})\]$"
)


def _schema_check(name: str, value: Any, what: str, code: str) -> None:
    errors = sorted(validator(name).iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "".join(f"[{p!r}]" for p in first.absolute_path) or " (top level)"
        raise PxpError(code, f"{what}{where} does not match the schema: {first.message}")


@dataclass(frozen=True)
class Principal:
    """Who a proxy speaks for: display ``name``, optional ``role`` and ``org``."""

    name: str
    role: str | None = None
    org: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object, leaving out absent members."""
        out: dict[str, Any] = {"name": self.name}
        if self.role is not None:
            out["role"] = self.role
        if self.org is not None:
            out["org"] = self.org
        out.update(copy.deepcopy(dict(self.extra)))
        return out


@dataclass(frozen=True)
class Amendment:
    """A principal's later answer sealed into its card: ``question``, ``answer``, ``at``."""

    question: str
    answer: str
    at: str
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object."""
        out = {"question": self.question, "answer": self.answer, "at": self.at}
        out.update(copy.deepcopy(dict(self.extra)))
        return out


@dataclass(frozen=True)
class IntentCard:
    """A principal's intent card (PXP §1), validated against ``intent-card.schema.json``.

    ``amendments`` is ``None`` when the member is absent (a draft); a sealed card always
    carries the list, empty until the principal answers an escalation.
    """

    principal: Principal
    goal: str
    must_haves: tuple[str, ...]
    may_agree_to: tuple[str, ...] = ()
    must_never: tuple[str, ...] = ()
    escalate_when: tuple[str, ...] = ()
    known_facts: tuple[str, ...] = ()
    amendments: tuple[Amendment, ...] | None = None
    pxp: str = field(default="0")
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @classmethod
    def from_json(cls, value: Any, *, strict: bool = True) -> IntentCard:
        """Parse and validate a card given as parsed JSON.

        With ``strict`` (the default) unknown members (top level, ``principal``, an
        amendment) are refused (``card_invalid``/``unknown_member``): a sealed card is
        hashed whole, so nothing may ride along unseen. ``strict=False`` accepts what the
        published schema accepts and keeps unknown members in ``extra``, so that a card
        written by another implementation hashes exactly as given.
        """
        if not isinstance(value, Mapping):
            raise PxpError("card_invalid", "the intent card is not a JSON object")
        _schema_check("intent-card.schema.json", dict(value), "the intent card", "card_invalid")
        principal = value["principal"]
        amendments = value.get("amendments")
        if strict:
            unknown = [
                (f"the intent card has unknown member {k!r}") for k in sorted(set(value) - _KNOWN)
            ]
            unknown += [
                f"the card's principal has unknown member {k!r}"
                for k in sorted(set(principal) - {"name", "role", "org"})
            ]
            for i, item in enumerate(amendments or ()):
                unknown += [
                    f"amendments[{i}] has unknown member {k!r}"
                    for k in sorted(set(item) - {"question", "answer", "at"})
                ]
            if unknown:
                raise PxpError("card_invalid", unknown[0], reason="unknown_member")
        if not principal["name"].strip():
            raise PxpError("card_invalid", "the card's principal name is empty")
        parsed: tuple[Amendment, ...] | None = None
        if amendments is not None:
            parsed = tuple(
                Amendment(
                    a["question"],
                    a["answer"],
                    a["at"],
                    {k: v for k, v in a.items() if k not in ("question", "answer", "at")},
                )
                for a in amendments
            )
        return cls(
            principal=Principal(
                principal["name"],
                principal.get("role"),
                principal.get("org"),
                {k: v for k, v in principal.items() if k not in ("name", "role", "org")},
            ),
            goal=value["goal"],
            must_haves=tuple(value["must_haves"]),
            may_agree_to=tuple(value["may_agree_to"]),
            must_never=tuple(value["must_never"]),
            escalate_when=tuple(value["escalate_when"]),
            known_facts=tuple(value["known_facts"]),
            amendments=parsed,
            pxp=value["pxp"],
            extra={k: v for k, v in value.items() if k not in _KNOWN},
        )

    @classmethod
    def draft(
        cls,
        *,
        name: str,
        goal: str,
        must_haves: tuple[str, ...] | list[str] = (),
        may_agree_to: tuple[str, ...] | list[str] = (),
        must_never: tuple[str, ...] | list[str] = (),
        escalate_when: tuple[str, ...] | list[str] = (),
        known_facts: tuple[str, ...] | list[str] = (),
        role: str | None = None,
        org: str | None = None,
    ) -> IntentCard:
        """Build a card from keyword arguments (validated like :meth:`from_json`)."""
        body: dict[str, Any] = {
            "pxp": "0",
            "principal": Principal(name, role, org).to_json(),
            "goal": goal,
            "must_haves": list(must_haves),
            "may_agree_to": list(may_agree_to),
            "must_never": list(must_never),
            "escalate_when": list(escalate_when),
            "known_facts": list(known_facts),
        }
        return cls.from_json(body)

    def to_json(self) -> dict[str, Any]:
        """Return the card as JSON, in the member set the reference stores."""
        out: dict[str, Any] = {
            "pxp": self.pxp,
            "principal": self.principal.to_json(),
            "goal": self.goal,
            "must_haves": list(self.must_haves),
            "may_agree_to": list(self.may_agree_to),
            "must_never": list(self.must_never),
            "escalate_when": list(self.escalate_when),
            "known_facts": list(self.known_facts),
        }
        if self.amendments is not None:
            out["amendments"] = [a.to_json() for a in self.amendments]
        out.update(copy.deepcopy(dict(self.extra)))
        return out

    @property
    def hash(self) -> str:
        """``sha256hex(canonical(card))``: the card hash an envelope's ``intent_hash`` names."""
        return sha256_hex(canonical(self.to_json()))

    def amend(self, question: str, answer: str, at: str) -> IntentCard:
        """Return the card with one more amendment (the card hash changes)."""
        for what, text in (("question", question), ("answer", answer), ("at", at)):
            if not isinstance(text, str):
                raise PxpError("answer_invalid", f"the amendment {what} is not a string")
        if not answer.strip():
            raise PxpError("answer_invalid", "the principal's answer is empty")
        existing = self.amendments or ()
        return _replace_amendments(self, (*existing, Amendment(question, answer, at)))

    def clause(self, ref: str) -> str | None:
        """Return the text of clause ``ref`` (``goal`` or ``field[i]``), or ``None``."""
        return resolve_clause(self, ref)


def _replace_amendments(card: IntentCard, amendments: tuple[Amendment, ...]) -> IntentCard:
    return IntentCard(
        principal=card.principal,
        goal=card.goal,
        must_haves=card.must_haves,
        may_agree_to=card.may_agree_to,
        must_never=card.must_never,
        escalate_when=card.escalate_when,
        known_facts=card.known_facts,
        amendments=amendments,
        pxp=card.pxp,
        extra=card.extra,
    )


def resolve_clause(card: IntentCard, ref: str) -> str | None:
    """Return the text ``ref`` names in ``card`` (``goal``, ``must_haves[0]``, ...) or ``None``.

    An amendment resolves to its answer.
    """
    if ref == "goal":
        return card.goal
    if ref.startswith("amendment["):  # the reference's own instructions spell it so
        ref = "amendments" + ref[len("amendment") :]
    match = _CLAUSE_REF.match(ref)
    if match is None:
        return None
    name, index = match.group(1), int(match.group(2))
    if name == "amendments":
        items = card.amendments or ()
        return items[index].answer if index < len(items) else None
    values: tuple[str, ...] = getattr(card, name)
    return values[index] if index < len(values) else None


@dataclass(frozen=True)
class SealedCard:
    """A confirmed card with its hash: what a seat acts under."""

    card: IntentCard
    hash: str


def _as_card(card: IntentCard | Mapping[str, Any]) -> IntentCard:
    return card if isinstance(card, IntentCard) else IntentCard.from_json(card)


def card_hash(card: IntentCard | Mapping[str, Any]) -> str:
    """Return ``sha256hex(canonical(card))`` of a card (an :class:`IntentCard` or its JSON).

    A JSON card is validated against the published schema and hashed exactly as given,
    as the reference does: a card without an ``amendments`` member hashes differently
    from one with ``"amendments": []``, and members the schema does not name are hashed
    too (sealing a card in a room refuses them; see :func:`seal_card`).
    """
    if isinstance(card, IntentCard):
        return card.hash
    parsed = IntentCard.from_json(card, strict=False)
    return sha256_hex(canonical(parsed.to_json()))


# The reference's limits (``lib/pxp.js`` ``normaliseCard``), in UTF-16 code units, and its
# cap on the items of each list. The reference cuts silently; sealing refuses instead.
LIMITS: Mapping[str, int] = MappingProxyType(
    {"name": 80, "role": 120, "org": 120, "goal": 400, "item": 300, "items": 12}
)
"""Longest principal name, role and org, goal, list item; most items in one list."""


def _too_long(what: str, text: str, limit: int) -> PxpError:
    return PxpError(
        "card_invalid",
        f"{what} is {js_len(text)} characters long; at most {limit} are sealed",
        reason="too_long",
    )


def normalise_card(card: Mapping[str, Any]) -> dict[str, Any]:
    """Return the card JSON as the reference seals it, or refuse what it would lose.

    Kept meaning is normalised as the reference does: every string is trimmed, empty list
    items are dropped, an absent ``principal.role`` is stored as ``""``, an empty ``org`` is
    left out, absent lists are ``[]``, ``pxp`` is ``"0"`` and ``amendments`` is ``[]``. What
    the reference refuses is refused (``card_invalid``/``goal_missing``, ``must_have_missing``);
    where it would silently cut (a name over 80, role or org over 120, goal over 400, an item
    over 300 characters, a list over 12 items) this refuses (``too_long``, ``too_many``)
    instead of sealing a card that lost a clause. Members of the wrong type are left for the
    schema check to refuse.
    """
    out: dict[str, Any] = dict(card)
    out.setdefault("pxp", "0")
    principal = card.get("principal")
    if isinstance(principal, Mapping):
        who: dict[str, Any] = dict(principal)
        for key in ("name", "role", "org"):
            value = who.get(key)
            if isinstance(value, str):
                who[key] = js_trim(value)
                if js_len(who[key]) > LIMITS[key]:
                    raise _too_long(f"the principal's {key}", who[key], LIMITS[key])
        who.setdefault("role", "")
        if who.get("org") == "":
            del who["org"]
        out["principal"] = who
    goal = card.get("goal")
    if isinstance(goal, str):
        out["goal"] = js_trim(goal)
        if not out["goal"]:
            raise PxpError("card_invalid", "the card's goal is empty", reason="goal_missing")
        if js_len(out["goal"]) > LIMITS["goal"]:
            raise _too_long("the goal", out["goal"], LIMITS["goal"])
    for name in _LIST_FIELDS:
        items = card.get(name, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            continue
        kept = [js_trim(i) for i in items if js_trim(i)]
        for i, text in enumerate(kept):
            if js_len(text) > LIMITS["item"]:
                raise _too_long(f"{name} item {i + 1}", text, LIMITS["item"])
        if len(kept) > LIMITS["items"]:
            raise PxpError(
                "card_invalid",
                f"{name} has {len(kept)} items; at most {LIMITS['items']} are sealed",
                reason="too_many",
            )
        out[name] = kept
    if out.get("must_haves") == []:
        raise PxpError(
            "card_invalid",
            "the card has no must-have; add at least one",
            reason="must_have_missing",
        )
    out.setdefault("amendments", [])
    return out


def seal_card(card: IntentCard | Mapping[str, Any]) -> SealedCard:
    """Seal a principal-confirmed card, normalised as the reference seals it.

    The card (an :class:`IntentCard` or its JSON) goes through :func:`normalise_card`: a
    JSON card may leave out ``pxp``, ``principal.role`` and every list but ``must_haves``;
    then the whole card is hashed. Members the schema does not name are refused.
    """
    if isinstance(card, IntentCard):
        card = card.to_json()
    if not isinstance(card, Mapping):
        raise PxpError("card_invalid", "the intent card is not a JSON object")
    parsed = IntentCard.from_json(normalise_card(card), strict=False)
    if parsed.extra or parsed.principal.extra or any(a.extra for a in parsed.amendments or ()):
        raise PxpError(
            "card_invalid",
            "the card carries members the intent card schema does not name",
            reason="unknown_member",
        )
    if parsed.amendments is None:
        parsed = _replace_amendments(parsed, ())
    return SealedCard(parsed, parsed.hash)
