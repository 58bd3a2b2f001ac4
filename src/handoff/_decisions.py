"""The Decisions extension (``decisions/0.3``): choices only the principal may make.

Terms are the question (``text``), ``options`` (each ``{"id", "text"}``), the working
``assumption`` agents proceed on meanwhile (optionally naming an ``assumed_option``),
``due`` and ``free_answer``. A settlement's ``outcome`` is a chosen option id, ``free``
with an ``answer`` where the terms allow a free answer, or ``declined``. Under the
``stop`` policy a withdrawn question is no longer presented. A settlement made against
outdated options is reported stale with the status of the option it chose
(:func:`option_status`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ._acts import check_due
from ._config import Extension
from .errors import HandoffError

__all__ = [
    "DECISIONS",
    "DECISIONS_REASONS",
    "RESERVED_OUTCOMES",
    "check_decision_outcome",
    "check_decision_terms",
    "option_status",
]

RESERVED_OUTCOMES = frozenset({"free", "declined"})
"""Outcomes that are never option ids: a free answer, and a refusal to choose."""
DECISIONS_REASONS = frozenset(
    {"answered_elsewhere", "no_longer_needed", "superseded", "raised_in_error"}
)
"""Why a requester may withdraw a decision."""


def _bad(where: str, message: str, reason: str) -> HandoffError:
    return HandoffError("record", f"{where}: {message}", reason=reason)


def check_decision_terms(
    terms: Mapping[str, Any], where: str = "the decision"
) -> Mapping[str, Any]:
    """Apply the Decisions rules the schema cannot express to ``terms``; return ``terms``.

    Option ids are unique and not reserved; there is at least one option unless a free
    answer is allowed; ``assumed_option`` names an option; ``due`` is a real date. Anything
    else raises :class:`~handoff.HandoffProtocolError` ``record``.
    """
    if not isinstance(terms, Mapping):
        raise _bad(where, "terms is not an object", "terms_invalid")
    options = terms.get("options")
    if not isinstance(options, list):
        raise _bad(where, "terms.options is not an array", "options_invalid")
    ids = [o.get("id") for o in options if isinstance(o, Mapping)]
    if len(ids) != len(options) or len(set(ids)) != len(ids):
        raise _bad(where, "terms.options has a repeated or missing id", "options_invalid")
    if RESERVED_OUTCOMES & set(ids):
        raise _bad(where, "an option id is a reserved outcome (free, declined)", "options_invalid")
    if not ids and terms.get("free_answer") is not True:
        raise _bad(where, "a decision without options must allow a free answer", "options_invalid")
    assumed = terms.get("assumed_option")
    if assumed is not None and assumed not in ids:
        raise _bad(where, "terms.assumed_option names no option", "options_invalid")
    if "due" in terms:
        check_due(terms["due"], where)
    return terms


def check_decision_outcome(
    record: Mapping[str, Any], terms: Mapping[str, Any] | None, where: str = "the settlement"
) -> Mapping[str, Any]:
    """Check a settlement's or claim's outcome against the ``terms`` it was made against;
    return ``record``.

    ``terms`` is ``None`` when the receiver does not hold the need at that revision; then
    only the form is checked. ``free`` needs ``answer`` and terms that allow it; any
    other outcome forbids ``answer``. Anything else raises
    :class:`~handoff.HandoffProtocolError` ``record``.
    """
    if not isinstance(record, Mapping):
        raise _bad(where, "the record is not an object", "record_invalid")
    if terms is not None and not isinstance(terms, Mapping):
        raise _bad(where, "terms is not an object", "terms_invalid")
    outcome = record.get("outcome")
    has_answer = "answer" in record
    if outcome == "free":
        if not has_answer:
            raise _bad(where, "a free outcome must carry answer", "answer_missing")
        if terms is not None and terms.get("free_answer") is not True:
            raise _bad(where, "the terms do not allow a free answer", "free_answer_not_allowed")
        return record
    if has_answer:
        raise _bad(where, "answer is allowed only with the outcome free", "answer_unexpected")
    if outcome == "declined" or terms is None:
        return record
    options = terms.get("options")
    ids = (
        {o.get("id") for o in options if isinstance(o, Mapping)}
        if isinstance(options, list)
        else set()
    )
    if outcome not in ids:
        raise _bad(
            where,
            "the outcome is no option of the terms it was made against",
            "outcome_not_offered",
        )
    return record


def option_status(
    outcome: str, chosen_terms: Mapping[str, Any] | None, current_terms: Mapping[str, Any] | None
) -> str:
    """Say how the option a settlement chose fares under the current terms.

    ``"current"``: the same id with the same text is still offered (or the outcome is
    ``free``/``declined``, which options cannot outdate); ``"changed"``: the id is offered
    with other text; ``"gone"``: the id is no longer offered; ``"unknown"``: the terms
    the settlement saw or the current terms are not held.
    """
    if outcome in RESERVED_OUTCOMES:
        return "current"
    if chosen_terms is None or current_terms is None:
        return "unknown"

    def texts(terms: Mapping[str, Any]) -> dict[Any, Any]:
        options = terms.get("options")
        if not isinstance(options, list):
            return {}
        return {o.get("id"): o.get("text") for o in options if isinstance(o, Mapping)}

    now = texts(current_terms)
    if outcome not in now:
        return "gone"
    return "current" if texts(chosen_terms).get(outcome) == now[outcome] else "changed"


def _hook(record: Mapping[str, Any]) -> None:
    where = f"record {record.get('id')!r}"
    terms = record.get("terms")
    if isinstance(terms, Mapping):
        check_decision_terms(terms, where)
    if record.get("type") in ("settled", "claimed"):
        check_decision_outcome(record, None, where)


def _offered(record: Mapping[str, Any], terms: Mapping[str, Any]) -> str | None:
    try:
        check_decision_outcome(record, terms)
    except HandoffError as exc:
        return exc.reason
    return None


_PAIRS = {
    (t, o): f"decisions/{t}.{o}.json"
    for t, o in [
        ("raised", "requester"),
        ("amended", "requester"),
        ("withdrawn", "requester"),
        ("settled", "principal"),
        ("reopened", "principal"),
        ("claimed", "requester"),
        ("claimed", "agent"),
        ("related", "principal"),
        ("related", "requester"),
        ("note", "requester"),
        ("note", "principal"),
        ("note", "agent"),
    ]
}

DECISIONS = Extension(
    name="decisions",
    version="0.3",
    kind="decide",
    policy="stop",
    outcomes=None,
    claim_outcomes=None,
    reasons=DECISIONS_REASONS,
    pairs=MappingProxyType(_PAIRS),
    hook=_hook,
    offered=_offered,
)
"""The ``decisions/0.3`` extension, ready for an :class:`ExtensionRegistry`."""
