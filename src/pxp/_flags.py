"""The fixed sentences enforcement records as ``protocol_flags`` on a stored envelope.

Each rewrite the room makes to what a proxy sent is recorded with exactly one of these
sentences (``{claim}`` is replaced by a claim id, ``{clause}`` by a card clause reference).
They are part of the stored envelope, hence of its hash: changing a sentence changes hashes.
"""

from __future__ import annotations

__all__ = ["FLAG_SENTENCES", "flag"]

FLAG_SENTENCES: dict[str, str] = {
    "ref_missing": (
        "Claim {claim} was tagged {origin} without a ref, so it is recorded as assumed."
    ),
    "stated_cites_other_side": (
        "Claim {claim} was tagged stated but cites the other side, so it is recorded as "
        "assumed: a claim received from the other proxy is never stated for the receiver."
    ),
    "sourced_cites_other_side": (
        "Claim {claim} was tagged sourced but its source is the other side, so it is recorded "
        "as assumed: the other proxy is not a source."
    ),
    "stated_cites_missing_clause": (
        "Claim {claim} was tagged stated but cites {clause}, which its card does not hold, so "
        "it is recorded as assumed."
    ),
    "stated_cites_assumption": (
        "Claim {claim} was tagged stated but cites {cited}, an assumed claim, so it is recorded "
        "as assumed: citing an assumption does not make it stated."
    ),
    "sourced_cites_assumption": (
        "Claim {claim} was tagged sourced but cites {cited}, an assumed claim of its own side, "
        "so it is recorded as assumed: an assumption is not a source."
    ),
    "restated_other_side": (
        "Claim {claim} repeats a claim of the other side, so it is recorded as assumed: "
        "re-stating a claim does not upgrade its origin."
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
    "agree_with_counter_proposal": (
        "This envelope agreed while carrying its own proposal, so its status is recorded as "
        "continue and the proposal stands as a counter-offer."
    ),
    "agree_with_conflict": (
        "This envelope agreed while carrying a conflict review, so its status is recorded as "
        "continue."
    ),
    "agree_without_proposal": (
        "This envelope agreed but the other side has made no proposal, so its status is "
        "recorded as continue."
    ),
    "agree_wrong_hash": (
        "This envelope agreed to a proposal hash that is not the other side's latest proposal, "
        "so its status is recorded as continue."
    ),
    "agree_disputed_dependency": (
        "This envelope agreed to a proposal that depends on claim {claim}, which this seat "
        "disputed and its principal has not answered since, so its status is recorded as "
        "continue."
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
