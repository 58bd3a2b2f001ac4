"""Typed views of the Parley wire objects a user reads: replies, proposals, receipts, consent.

These are :class:`typing.TypedDict` classes, so the objects stay plain JSON dicts at run
time and only a type checker sees the difference: under ``mypy --strict``, code that reads
``reply["items"]`` where an ``ANSWER`` holds ``reply["data"]``, or compares
``result.kind == "RECIEPT"``, fails to type-check. A reply is the union :data:`Reply`,
told apart by its ``kind`` (a :data:`ReplyKind`): ``if reply["kind"] == "PROPOSALS":``
narrows it to :class:`ProposalsReply`.

They describe what a conforming service sends (SPEC.md sections 2, 4, 5, 6.6, 7 and
docs/spec/parley-runtime.md); a reply from a peer is not checked against them field by
field, which is why :class:`parley.Result`'s accessors check the part they return and raise
``bad_frame`` (reason ``bad_reply``) when a peer sent something else.
"""

# No `from __future__ import annotations` here: on Python 3.11 a TypedDict sees
# NotRequired only in evaluated annotations (its __required_keys__ are read at run time).
from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "AnswerReply",
    "BriefCapability",
    "BriefReply",
    "BriefService",
    "ClarifyOption",
    "ClarifyReply",
    "ConsentRequestJSON",
    "CostJSON",
    "EffectJSON",
    "ErrorCode",
    "ErrorReply",
    "EventFrame",
    "FinalReply",
    "FixJSON",
    "GrantBlockJSON",
    "GrantInspection",
    "MoreJSON",
    "ProposalJSON",
    "ProposalsReply",
    "ReceiptJSON",
    "ReceiptReply",
    "Reply",
    "ReplyKind",
    "Risk",
]

ReplyKind = Literal["BRIEF", "ANSWER", "PROPOSALS", "CLARIFY", "RECEIPT", "ERROR", "EVENT"]
"""The ``kind`` of a reply frame (SPEC.md section 2.1)."""

ErrorCode = Literal[
    "bad_frame",
    "unknown_capability",
    "invalid_params",
    "unauthorized",
    "forbidden",
    "consent_required",
    "not_found",
    "expired",
    "conflict",
    "limit",
    "unavailable",
    "internal",
]
"""The closed set of ``ERROR`` codes (SPEC.md section 7)."""

Risk = Literal["low", "medium", "high"]
"""A proposal's or capability's risk level."""


class CostJSON(TypedDict):
    """A cost on the wire: ``amount`` in minor units of ``currency`` (``1500`` = 15.00)."""

    amount: int
    currency: str


class EffectJSON(TypedDict):
    """One effect of a proposal: ``op`` (create, update, delete, send, charge, other) on
    ``target``."""

    op: Literal["create", "update", "delete", "send", "charge", "other"]
    target: str


class UndoWindowJSON(TypedDict):
    """A proposal's undo window in seconds."""

    window: int


class UndoUntilJSON(TypedDict):
    """A receipt's undo deadline (Unix seconds; at or after it, ``UNDO`` is ``expired``)."""

    until: int


class ProposalJSON(TypedDict):
    """One proposal of a ``PROPOSALS`` reply (SPEC.md section 5.1).

    ``hash`` covers everything but ``data`` (sent, not hashed); ``expires`` is Unix seconds;
    ``undo`` is ``None`` for an irreversible proposal.
    """

    id: str
    capability: str
    summary: str
    effects: list[EffectJSON]
    cost: CostJSON | None
    risk: Risk
    undo: UndoWindowJSON | None
    expires: int
    hash: str
    data: NotRequired[Any]


class ReceiptJSON(TypedDict):
    """The receipt of a ``COMMIT`` or ``UNDO`` (SPEC.md section 5.2).

    A reversal receipt (from ``UNDO``) names the receipt it ``undoes`` and has
    ``effects: []``, ``cost: None`` and ``undo: None``.
    """

    id: str
    proposal: str
    capability: str
    summary: str
    at: int
    effects: list[EffectJSON]
    cost: CostJSON | None
    undo: UndoUntilJSON | None
    result: NotRequired[Any]
    undoes: NotRequired[str]


class ConsentRequestJSON(TypedDict):
    """The ``consent`` object of a ``consent_required`` error (SPEC.md section 6.6).

    What to put to the principal; :func:`parley.mint_consent_grant` turns an approval of it
    into a consent grant.
    """

    proposal: str
    hash: str
    service: str
    capability: str
    principal: str
    summary: str
    expires: int


class MoreJSON(TypedDict):
    """One cut a budget made: ``EXPAND`` ``handle`` for the rest of the value at ``path``."""

    handle: str
    path: str
    remaining: int
    est: int


class FixJSON(TypedDict):
    """A suggestion in an ``ERROR``: what to ``say`` and, where it helps, the ``params``
    (an RFC 7396 merge patch) to send instead."""

    say: str
    params: NotRequired[dict[str, Any]]


class BriefService(TypedDict):
    """The ``service`` of a ``BRIEF``."""

    id: str
    name: str
    summary: NotRequired[str]


class BriefCapability(TypedDict):
    """One capability entry of a ``BRIEF``."""

    name: str
    kind: Literal["ask", "intent"]
    summary: NotRequired[str]
    params: NotRequired[dict[str, Any]]
    risk: NotRequired[Risk]


class ClarifyOption(TypedDict):
    """One way to answer a ``CLARIFY``: a ``label`` and the ``params`` patch it stands for."""

    label: str
    params: dict[str, Any]


class _Frame(TypedDict):
    parley: Literal[1]
    id: str
    re: str | None
    more: NotRequired[list[MoreJSON]]
    lens: NotRequired[str]


class BriefReply(_Frame):
    """``BRIEF``: the service and its capabilities (the answer to ``HELLO``)."""

    kind: Literal["BRIEF"]
    service: BriefService
    capabilities: list[BriefCapability]


class AnswerReply(_Frame):
    """``ANSWER``: the ``data`` an ``ASK`` (or an ``EXPAND``) returns."""

    kind: Literal["ANSWER"]
    data: Any


class ProposalsReply(_Frame):
    """``PROPOSALS``: the offers an ``INTENT`` returns, to be committed by id and hash."""

    kind: Literal["PROPOSALS"]
    proposals: list[ProposalJSON]


class ClarifyReply(_Frame):
    """``CLARIFY``: a question the ``INTENT`` needs answered, with its options."""

    kind: Literal["CLARIFY"]
    question: str
    options: list[ClarifyOption]


class ReceiptReply(_Frame):
    """``RECEIPT``: what a ``COMMIT``, an ``UNDO`` or an auto ``INTENT`` did.

    ``replay`` is set when the receipt is the answer to a repeat; ``auto`` when an auto
    ``INTENT`` committed.
    """

    kind: Literal["RECEIPT"]
    receipt: ReceiptJSON
    auto: NotRequired[bool]
    replay: NotRequired[bool]


class ErrorReply(_Frame):
    """``ERROR``: a :data:`ErrorCode`, a sentence, and (**ours**) the failing check's
    ``reason``; ``consent`` comes with ``consent_required``, ``retry`` is seconds or
    ``None`` (read it with ``.get``: a service of another implementation may leave it out)."""

    kind: Literal["ERROR"]
    code: ErrorCode
    message: str
    reason: NotRequired[str]
    fix: NotRequired[list[FixJSON]]
    need: NotRequired[list[Any]]
    consent: NotRequired[ConsentRequestJSON]
    retry: NotRequired[int | None]  # this library always sends it; SPEC.md section 7 need not


class EventFrame(_Frame):
    """``EVENT``: progress sent before a request's final reply."""

    kind: Literal["EVENT"]
    message: str
    progress: NotRequired[float]
    data: NotRequired[Any]


FinalReply = BriefReply | AnswerReply | ProposalsReply | ClarifyReply | ReceiptReply | ErrorReply
"""A reply that ends a request (every kind but ``EVENT``)."""

Reply = FinalReply | EventFrame
"""Any reply frame; ``reply["kind"]`` tells which."""


class GrantBlockJSON(TypedDict):
    """One block of a grant as :func:`parley.inspect_grant` lists it."""

    id: str
    sub: str
    iat: int
    caveats: list[Any]


class GrantInspection(TypedDict):
    """What :func:`parley.inspect_grant` says of a grant, without trusting it.

    ``caveats`` are the effective caveats (one narrowest per kind) as JSON; ``malformed``
    the raw caveats that would fail closed; ``signatures`` whether every signature and
    ``prev`` link checks out.
    """

    grant: str
    principal: str
    holder: str
    depth: int
    signatures: bool
    blocks: list[GrantBlockJSON]
    caveats: list[dict[str, Any]]
    malformed: list[Any]
