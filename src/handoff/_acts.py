"""The Acts extension (``acts/0.3``): work only the principal can do (pay, sign, buy).

Terms are ``text`` (one line), and optionally ``due``, ``amount`` with ``currency``, and
``how_to``. Settlements say ``done``, ``declined`` or ``failed``; claims may also say
``removed`` (the registrar saw the line disappear from the state document). Under the
``keep`` policy a withdrawn act whose settlement is open stays in front of the principal,
because money may already be moving. The extension role ``registrar`` emits the claims a
state document shows (docs/spec/handoff-extensions.md).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ._config import Extension
from .errors import HandoffError

__all__ = [
    "ACTS",
    "ACTS_CLAIM_OUTCOMES",
    "ACTS_OUTCOMES",
    "ACTS_REASONS",
    "check_act_terms",
    "check_due",
]

ACTS_OUTCOMES = frozenset({"done", "declined", "failed"})
"""What a settlement of an act says."""
ACTS_CLAIM_OUTCOMES = ACTS_OUTCOMES | {"removed"}
"""What a claim about an act may assert (``removed``: its line left the state document)."""
ACTS_REASONS = frozenset({"no_longer_needed", "done_elsewhere", "superseded", "raised_in_error"})
"""Why a requester may withdraw an act."""


_UNSHOWABLE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)
"""Control characters (tab aside) and bidirectional formatting characters."""


def _bad_terms(where: str, message: str, reason: str) -> HandoffError:
    return HandoffError("record", f"{where}: {message}", reason=reason)


def check_due(value: Any, where: str) -> None:
    """Check that ``terms.due`` is a real calendar date or RFC 3339 date-time."""
    if not isinstance(value, str):
        raise _bad_terms(where, "terms.due is not a string", "due_invalid")
    try:
        if len(value) == 10:
            datetime.date.fromisoformat(value)
        else:
            text = value.upper()
            text = text[:-1] + "+00:00" if text.endswith("Z") else text
            datetime.datetime.fromisoformat(text)
    except ValueError:
        raise _bad_terms(where, "terms.due is not a valid date", "due_invalid") from None


def check_act_terms(terms: Mapping[str, Any], where: str = "the act") -> Mapping[str, Any]:
    """Apply the Acts rules the schema cannot express to ``terms``; return ``terms``.

    ``text`` has no surrounding whitespace, no ``<!--`` (the Markdown binding's
    marker), no ``<`` at all (raw HTML) and no control or bidirectional formatting
    character (tab aside);
    ``amount`` and ``currency`` come together; ``due`` is a real date. Anything else
    raises :class:`~handoff.HandoffProtocolError` ``record`` (``terms_invalid`` when
    ``terms`` is not an object at all).
    """
    if not isinstance(terms, Mapping):
        raise _bad_terms(where, "terms is not an object", "terms_invalid")
    text = terms.get("text")
    if not isinstance(text, str) or text != text.strip() or not text:
        raise _bad_terms(where, "terms.text is empty or has surrounding spaces", "text_invalid")
    if "<!--" in text or "-->" in text:
        raise _bad_terms(where, "terms.text may not hold an HTML comment marker", "text_invalid")
    if "<" in text:
        # the state document is Markdown, which renders raw HTML: an act's text is shown
        # as text, never as markup (ours)
        raise _bad_terms(where, "terms.text may not hold '<' (raw HTML)", "text_invalid")
    if _UNSHOWABLE.search(text) is not None:
        # a control character would make the state document unreadable (NUL) or show the
        # person other text than is recorded (bidirectional overrides)
        raise _bad_terms(
            where,
            "terms.text holds a control or bidirectional formatting character",
            "text_invalid",
        )
    if ("amount" in terms) != ("currency" in terms):
        raise _bad_terms(where, "terms.amount and terms.currency come together", "amount_currency")
    if "due" in terms:
        check_due(terms["due"], where)
    return terms


def _hook(record: Mapping[str, Any]) -> None:
    terms = record.get("terms")
    if isinstance(terms, Mapping):
        check_act_terms(terms, f"record {record.get('id')!r}")


_PAIRS = {
    (t, o): f"acts/{t}.{o}.json"
    for t, o in [
        ("raised", "requester"),
        ("amended", "requester"),
        ("withdrawn", "requester"),
        ("settled", "principal"),
        ("reopened", "principal"),
        ("claimed", "requester"),
        ("claimed", "agent"),
        ("claimed", "registrar"),
        ("related", "principal"),
        ("related", "requester"),
        ("note", "requester"),
        ("note", "principal"),
        ("note", "agent"),
        ("note", "registrar"),
    ]
}

ACTS = Extension(
    name="acts",
    version="0.3",
    kind="act",
    policy="keep",
    outcomes=ACTS_OUTCOMES,
    claim_outcomes=ACTS_CLAIM_OUTCOMES,
    reasons=ACTS_REASONS,
    pairs=MappingProxyType(_PAIRS),
    roles=frozenset({"registrar"}),
    hook=_hook,
)
"""The ``acts/0.3`` extension, ready for an :class:`ExtensionRegistry`."""
