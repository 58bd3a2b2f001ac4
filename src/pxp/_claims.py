"""The claim-origin rules of enforcement (spec §5, rules 1-7) as one ordered table.

Each rule is ``(flag, predicate)``: the predicate reads a :class:`ClaimCheck` (one claim of
a draft, with what the room knows when it is checked) and returns the values that fill the
flag's sentence (:data:`pxp.rules.FLAG_SENTENCES`) when the rule holds, else ``None``. The
room walks :data:`CLAIM_RULES` in order for every claim; the first rule that holds records
its flag and the claim is stored ``assumed``. A rule only ever downgrades, so every rule
after the first that holds would see an ``assumed`` claim and none of them holds for one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ._card import IntentCard
from ._envelope import parse_claim_id
from ._jsstr import js_prefix
from ._text import contains_words, normalize

__all__ = ["CLAIM_RULES", "ClaimCheck", "ClaimRule", "cites_other", "repeats"]

_CLAIM_TOKEN = re.compile(r"(?<![A-Za-z0-9])[ABab][1-9][0-9]*\.[1-8](?![0-9])")
_OTHER_WORDS = re.compile(
    r"^\s*(?:the\s+)?(?:other|their|theirs|counterpart|counter-party|counterparty)\b"
    r"|\b(?:counterpart|counter-party|counterparty)"
    r"|\b(?:other|their)\s+(?:side|proxy|party|seat|agent|principal|claim|message)",
    re.I,
)


def claim_tokens(ref: str) -> list[str]:
    """Every claim id ``ref`` names, in either letter case, upper-cased, in order."""
    return [token.upper() for token in _CLAIM_TOKEN.findall(ref)]


def cites_other(ref: str, other: str, other_name: str | None) -> bool:
    """Whether ``ref`` cites the seat ``other`` (spec §5 rule 3): one of its claim ids, the
    words of the reference's test, ``seat B`` / ``side B`` / ``proxy B``, or its
    principal's display name as a word."""
    for token in claim_tokens(ref):
        parsed = parse_claim_id(token)
        if parsed is not None and parsed[0] == other:
            return True
    # the reference's test (a ref opening with other, their, counterpart or a seat
    # letter), narrowed to the other seat's letter, plus "seat B" / "side B" anywhere
    if _OTHER_WORDS.search(ref) is not None:
        return True
    if re.search(rf"^{other}\b|\b(?:seat|side|proxy)\s+{other}\b", ref, re.I) is not None:
        return True
    if not other_name or not normalize(other_name):
        return False
    return contains_words(ref, other_name)


def repeats(assumptions: Mapping[str, str], text: str) -> str | None:
    """The first earlier assumption (normalised text to claim id) that ``text`` repeats:
    one of the two normalised texts holds the other as whole words."""
    said = normalize(text)
    if not said:
        return None
    for known, cid in assumptions.items():
        if known and (f" {known} " in f" {said} " or f" {said} " in f" {known} "):
            return cid
    return None


@dataclass(frozen=True)
class ClaimCheck:
    """One claim of a draft as the claim rules read it."""

    id: str
    """The id the claim is stored under (``A3.1``)."""
    text: str
    """The claim's text."""
    origin: str
    """The origin the proxy tagged it with: ``stated``, ``sourced`` or ``assumed``."""
    ref: str | None
    """Its reference, if any."""
    card: IntentCard
    """The speaker's sealed card."""
    other: str
    """The other seat."""
    other_name: str | None
    """The other seat's principal's display name, if known."""
    cited_assumption: Callable[[str], str | None]
    """The first own claim id in a ref that is an unverified assumption (rule 4)."""
    assumptions: Mapping[str, str]
    """Earlier unverified assumptions of the room and the envelope: normalised text to id."""

    @property
    def quoted(self) -> str:
        """The first 60 UTF-16 code units of the text, as the reference quotes it."""
        return js_prefix(self.text, 60)


ClaimRule = tuple[str, Callable[[ClaimCheck], "dict[str, str] | None"]]
"""``(flag, predicate)``: the predicate's values fill the flag's sentence when it holds."""


def _ref_missing(c: ClaimCheck) -> dict[str, str] | None:
    if c.origin in ("stated", "sourced") and c.ref is None:
        return {"text": c.quoted, "origin": c.origin}
    return None


def _stated_cites_other_side(c: ClaimCheck) -> dict[str, str] | None:
    if c.origin == "stated" and c.ref is not None and cites_other(c.ref, c.other, c.other_name):
        return {"text": c.quoted}
    return None


def _sourced_cites_other_side(c: ClaimCheck) -> dict[str, str] | None:
    if c.origin == "sourced" and c.ref is not None and cites_other(c.ref, c.other, c.other_name):
        return {"claim": c.id}
    return None


def _cites_assumption(origin: str) -> Callable[[ClaimCheck], dict[str, str] | None]:
    def rule(c: ClaimCheck) -> dict[str, str] | None:
        if c.origin != origin or c.ref is None:
            return None
        cited = c.cited_assumption(c.ref)
        return None if cited is None else {"claim": c.id, "cited": cited}

    return rule


def _stated_cites_missing_clause(c: ClaimCheck) -> dict[str, str] | None:
    if c.origin == "stated" and c.ref is not None and c.card.clause(c.ref.strip()) is None:
        return {"claim": c.id, "clause": c.ref.strip()}
    return None


def _stated_cites_must_never(c: ClaimCheck) -> dict[str, str] | None:
    # a must_never is what the principal forbids, never what it asserts
    ref = c.ref.strip() if c.ref is not None else None
    if c.origin == "stated" and ref and re.fullmatch(r"must_never\[[0-9]+\]", ref):
        return {"claim": c.id, "clause": ref}
    return None


def _stated_text_not_in_clause(c: ClaimCheck) -> dict[str, str] | None:
    ref = c.ref.strip() if c.ref is not None else None
    if c.origin == "stated" and ref is not None:
        held = contains_words(str(c.card.clause(ref)), c.text)
        return None if held else {"claim": c.id, "clause": ref}
    return None


def _restated_assumption(c: ClaimCheck) -> dict[str, str] | None:
    # re-stating does not upgrade an origin (seed 3.2): a sourced claim that repeats an
    # unverified assumption, of either side, is that assumption again. A stated claim that
    # passed the rules above is its own principal's word (its card holds the text).
    if c.origin != "sourced":
        return None
    cited = repeats(c.assumptions, c.text)
    return None if cited is None else {"claim": c.id, "cited": cited}


CLAIM_RULES: tuple[ClaimRule, ...] = (
    ("ref_missing", _ref_missing),
    ("stated_cites_other_side", _stated_cites_other_side),
    ("sourced_cites_other_side", _sourced_cites_other_side),
    ("stated_cites_assumption", _cites_assumption("stated")),
    ("sourced_cites_assumption", _cites_assumption("sourced")),
    ("stated_cites_missing_clause", _stated_cites_missing_clause),
    ("stated_cites_must_never", _stated_cites_must_never),
    ("stated_text_not_in_clause", _stated_text_not_in_clause),
    ("restated_assumption", _restated_assumption),
)
"""The claim-origin rules in the order the room applies them (spec §5 rules 1-7): the first
that holds records its flag and stores the claim ``assumed``."""
