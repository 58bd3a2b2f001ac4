"""Typed views of what a room hands its caller: :class:`Agreement` and the decision :class:`Brief`.

These are :class:`typing.TypedDict` classes: the values stay the plain JSON dicts that
:attr:`pxp.Room.agreement` and :meth:`pxp.Room.brief` always returned, and a type checker
now knows their members, so ``brief["agreement"]["terms"]`` type-checks and
``brief["outcome"] == "agreeed"`` does not. :class:`Brief` follows
``schemas/pxp/brief.schema.json`` member for member (a test holds the two equal).
"""

# No `from __future__ import annotations` here: on Python 3.11 a TypedDict sees
# NotRequired only in evaluated annotations (its __required_keys__ are read at run time).
from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "ActedBy",
    "Agreement",
    "AuthorityPart",
    "AuthorityRow",
    "AuthoritySource",
    "Brief",
    "BriefAgreement",
    "BriefClaim",
    "BriefEscalation",
    "BriefFlag",
    "BriefJudgment",
    "BriefLedger",
    "BriefParties",
    "BriefParty",
    "BriefReview",
    "BriefTurns",
    "ChallengedClaim",
    "ClaimOrigin",
    "PrincipalLink",
    "SeatAt",
    "SeatName",
    "UnverifiedClaim",
]

SeatName = Literal["A", "B"]
"""A seat of a room."""

ClaimOrigin = Literal["stated", "sourced", "assumed"]
"""Where a claim comes from: said by its seat, backed by a source, or assumed."""


class Agreement(TypedDict):
    """:attr:`pxp.Room.agreement`: the accepted proposal, who proposed and accepted it at
    which ledger ``seq``, its terms and the claims it ``depends_on``."""

    proposal_hash: str
    proposed_by: SeatName
    accepted_by: SeatName
    proposal_seq: int
    accept_seq: int
    terms: list[str]
    depends_on: list[str]


class SeatAt(TypedDict):
    """A seat and the ledger ``seq`` at which it acted."""

    seat: SeatName
    seq: int


class BriefAgreement(TypedDict):
    """The brief's ``agreement``: the terms and the hash of the proposal agreed."""

    terms: list[str]
    proposal_hash: str
    proposed_by: SeatAt
    accepted_by: SeatAt


class AuthoritySource(TypedDict):
    """A card clause or principal amendment that authorizes a term."""

    ref: str
    text: str | None
    kind: Literal["clause", "amendment"]
    via: NotRequired[Literal["mcp"]]


class AuthorityPart(TypedDict):
    """The authority for one part of a term that several clauses cover together."""

    part: str
    A: list[AuthoritySource]
    B: list[AuthoritySource]


class AuthorityRow(TypedDict):
    """What authorizes one agreed ``term`` on each side."""

    term: str
    A: list[AuthoritySource]
    B: list[AuthoritySource]
    parts: NotRequired[list[AuthorityPart]]


class BriefReview(TypedDict):
    """One seat's latest review of a claim."""

    seat: SeatName
    verdict: Literal["accept", "challenge", "conflict"]
    seq: int


class _Claim(TypedDict):
    id: str
    seat: SeatName
    text: str
    origin: ClaimOrigin
    verified: bool
    ref: NotRequired[str]
    speaker: NotRequired[Literal["principal"]]
    confirmed_by: NotRequired[SeatName]
    via: NotRequired[str]


class BriefClaim(_Claim):
    """A claim the agreement depends on, with its reviews.

    ``unknown`` marks a claim an imported room names but nobody made; ``disputed_by`` the
    seats that disputed it (it then stays unverified).
    """

    backed_by: NotRequired[str]
    reviews: NotRequired[list[BriefReview]]
    unknown: NotRequired[bool]
    disputed_by: NotRequired[list[SeatName]]


class UnverifiedClaim(_Claim):
    """A claim in the record that is not verified (``unverified_in_record``)."""


class ChallengedClaim(_Claim):
    """A claim a seat challenged or found in conflict, and whether a principal cleared it."""

    backed_by: NotRequired[str]
    by: SeatName
    verdict: Literal["challenge", "conflict"]
    seq: int
    cleared_by_principal: bool
    reason: NotRequired[str]


class ActedBy(TypedDict):
    """Which link and agent acted for a principal (``via``: ``web`` or ``mcp``)."""

    via: str | None
    link: Literal["principal", "seat"]
    link_issued_at: int | None
    agent: str | None


class BriefEscalation(TypedDict):
    """An escalation to a principal and its answer (``None`` while unanswered)."""

    seat: SeatName
    seq: int
    question: str
    reason: str | None
    answer: str | None
    via: Literal["web", "mcp"] | None
    answered_at: str | None
    confirms: NotRequired[list[str]]
    acted_by: NotRequired[ActedBy | None]


class BriefFlag(TypedDict):
    """A protocol flag recorded at ledger ``seq`` against ``seat``."""

    seq: int
    seat: SeatName
    flag: str


class BriefJudgment(TypedDict):
    """A judgment a seat's proxy made on its own (the principal may want to check it)."""

    seat: SeatName
    statement: str


class PrincipalLink(TypedDict):
    """When the principal's page link of a seat was issued, and to which agent."""

    issued_at: int
    agent: str | None


class SeatContest(TypedDict):
    """Another agent presented the seat's invite after its agent joined (ours)."""

    agent: str
    holder: str | None
    state: Literal["open", "active", "paused", "agreed", "ended"]
    at: str
    n: int


class SeatRelease(TypedDict):
    """The seat's principal page released the seat's agent (ours): the page link that
    acted (``by``) and how the card had been sealed (``sealed_by``)."""

    agent: str | None
    at: str
    n: int
    by: dict[str, Any] | None
    sealed_by: dict[str, Any] | None


class SeatRejoin(TypedDict):
    """The seat's link joined again while an agent held the seat (ours)."""

    agent: str
    holder: str | None
    at: str
    n: int


class BriefParty(TypedDict):
    """One side of the room: its principal, card hashes, how the card was sealed, agents."""

    principal: str | None
    card_hash: str | None
    sealed_card_hash: str | None
    sealed_via: Literal["web", "mcp"] | None
    agents: list[str]
    sealed_by: NotRequired[ActedBy | None]
    principal_link: NotRequired[PrincipalLink | None]
    contests: NotRequired[list[SeatContest]]
    releases: NotRequired[list[SeatRelease]]
    rejoins: NotRequired[list[SeatRejoin]]


class BriefParties(TypedDict):
    """Both sides of the room."""

    A: BriefParty
    B: BriefParty


class BriefTurns(TypedDict):
    """Turns used and allowed."""

    used: int
    max: int


class BriefLedger(TypedDict):
    """The ledger head, its length, and whether it verifies."""

    head: str
    entries: int
    verifies: bool


class Brief(TypedDict):
    """:meth:`pxp.Room.brief`: what a principal needs without the transcript (PXP section 7)."""

    pxp: Literal["0"]
    room: str
    topic: str
    outcome: Literal["agreed", "no_agreement"]
    agreement: BriefAgreement | None
    authority: list[AuthorityRow]
    depends_on: list[BriefClaim]
    unverified: list[str]
    unverified_in_record: NotRequired[list[UnverifiedClaim]]
    challenged: list[ChallengedClaim]
    escalations: list[BriefEscalation]
    protocol_flags: list[BriefFlag]
    judgments: list[BriefJudgment]
    parties: BriefParties
    turns: BriefTurns
    ledger: BriefLedger
