"""The fixed sentences enforcement records as ``protocol_flags`` on a stored envelope.

Each rewrite the room makes to what a proxy sent is recorded with exactly one of these
sentences (``{claim}`` is replaced by a claim id, ``{clause}`` by a card clause reference,
``{text}`` by the first 60 UTF-16 code units of the claim's text, ``{claims}`` by claim ids
joined with ", "). They are part of the stored envelope, hence of its hash: changing a
sentence changes hashes. The five rules the reference server (Behalf, ``lib/pxp.js``) also
enforces use its sentences word for word (``ref_missing``, ``stated_cites_other_side``,
``agree_with_conflict``, ``agree_without_proposal``, ``agree_disputed_dependency``); the
others are ours, for rules the reference does not have.
"""

from __future__ import annotations

__all__ = ["FLAG_SENTENCES", "flag"]

FLAG_SENTENCES: dict[str, str] = {
    "ref_missing": (
        'Claim "{text}" was tagged {origin} without a reference; downgraded to assumed.'
    ),
    "stated_cites_other_side": (
        'Claim "{text}" cited the other side as its authority; downgraded to assumed.'
    ),
    "sourced_cites_other_side": (
        "Claim {claim} was tagged sourced but its source is the other side, so it is recorded "
        "as assumed: the other proxy is not a source."
    ),
    "stated_cites_assumption": (
        "Claim {claim} was tagged stated but cites {cited}, an assumed claim, so it is recorded "
        "as assumed: citing an assumption does not make it stated."
    ),
    "sourced_cites_assumption": (
        "Claim {claim} was tagged sourced but cites {cited}, an assumed claim of its own side, "
        "so it is recorded as assumed: an assumption is not a source."
    ),
    "stated_cites_missing_clause": (
        "Claim {claim} was tagged stated but cites {clause}, which its card does not hold, so "
        "it is recorded as assumed."
    ),
    "stated_cites_must_never": (
        "Claim {claim} was tagged stated but cites {clause}, a must_never of its card, which "
        "forbids and asserts nothing, so it is recorded as assumed."
    ),
    "stated_text_not_in_clause": (
        "Claim {claim} was tagged stated but {clause} of its card does not hold its text, so "
        "it is recorded as assumed."
    ),
    "restated_assumption": (
        "Claim {claim} repeats {cited}, an unverified assumption, so it is recorded as "
        "assumed: re-stating a claim does not upgrade its origin."
    ),
    "backs_without_source": (
        "Claim {claim} names a claim it backs but is not sourced, so the backed claim stays "
        "unverified."
    ),
    "unreviewed_claim": (
        "Claim {claim} of the other side was not reviewed before replying, so it is recorded "
        "as challenged."
    ),
    "propose_must_never": (
        "This envelope proposed a term that is {clause} of its own card, so the proposal is "
        "not recorded: crossing a must_never needs the principal."
    ),
    "term_hidden_characters": (
        'This envelope proposed the term "{text}", which holds a format or control '
        "character that reads as nothing, so the proposal is not recorded."
    ),
    "agree_with_counter_proposal": (
        "This envelope agreed while carrying its own proposal, so its status is recorded as "
        "continue and the proposal stands as a counter-offer."
    ),
    "agree_with_conflict": ("Proxy tried to agree while flagging a conflict; agreement withheld."),
    "agree_without_proposal": (
        "Proxy agreed but there was no proposal from the other side; treated as continue."
    ),
    "agree_wrong_hash": (
        "This envelope agreed to a proposal hash that is not the other side's latest proposal, "
        "so its status is recorded as continue."
    ),
    "agree_disputed_dependency": (
        "Proxy tried to accept a proposal resting on {claims}, which it disputed; agreement "
        "withheld."
    ),
    "agree_must_never": (
        "This envelope agreed to a term that is {clause} of its own card, so its status is "
        "recorded as continue: crossing a must_never needs the principal."
    ),
}
"""Flag name to sentence template, in the order the room applies the checks."""


def flag(name: str, **values: str) -> str:
    """Return the fixed sentence ``name`` with its placeholders filled."""
    return FLAG_SENTENCES[name].format(**values)
