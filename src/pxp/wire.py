"""PXP's wire format: canonical JSON and hashes, claim ids, limits, schemas, and the typed
views of the JSON a room hands back (:class:`Brief`, :class:`Agreement`, ...).

What a port or a tool that reads PXP objects needs beside :mod:`pxp` itself:

* :func:`canonical`, :func:`canonical_bytes`, :func:`sha256_hex`, :data:`ZERO_HASH`: the
  reference's canonical JSON (``JSON.stringify`` with sorted keys) and its hashes;
* :func:`claim_id`, :func:`parse_claim_id`, :data:`MAX_CLAIMS`, :data:`LIMITS`: the shapes an
  envelope and a card must keep;
* :func:`normalise_card`, :func:`resolve_clause`: a card as the reference stores it, and the
  text a clause reference (``must_haves[0]``) names;
* :func:`format_time`: the reference's time stamps (``toISOString``);
* the :class:`typing.TypedDict` views of :meth:`pxp.Room.brief` and
  :attr:`pxp.Room.agreement`.
"""

from __future__ import annotations

from ._canonical import ZERO_HASH, canonical, canonical_bytes, sha256_hex
from ._card import LIMITS, normalise_card, resolve_clause
from ._envelope import MAX_CLAIMS, claim_id, parse_claim_id
from ._room import format_time
from ._wire import (
    ActedBy,
    Agreement,
    AuthorityPart,
    AuthorityRow,
    AuthoritySource,
    Brief,
    BriefAgreement,
    BriefClaim,
    BriefEscalation,
    BriefFlag,
    BriefJudgment,
    BriefLedger,
    BriefParties,
    BriefParty,
    BriefReview,
    BriefTurns,
    ChallengedClaim,
    ClaimOrigin,
    PrincipalLink,
    SeatAt,
    SeatContest,
    SeatName,
    SeatRejoin,
    SeatRelease,
    UnverifiedClaim,
)

__all__ = [
    "LIMITS",
    "MAX_CLAIMS",
    "ZERO_HASH",
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
    "SeatContest",
    "SeatName",
    "SeatRejoin",
    "SeatRelease",
    "UnverifiedClaim",
    "canonical",
    "canonical_bytes",
    "claim_id",
    "format_time",
    "normalise_card",
    "parse_claim_id",
    "resolve_clause",
    "sha256_hex",
]
