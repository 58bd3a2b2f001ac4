"""Conformance classes (§12): what a requester, a principal side, a verifiable principal side
and an observer MUST do, as checks over one record and the records already held.

Each ``check_*`` function raises :class:`HandoffError` naming the first rule broken (core
admission first, then the class's own rules), or returns normally. :func:`observe` is what
an observer computes: the folded state plus what it can check of each settlement's evidence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

from ._acts import ACTS
from ._canonical import canonical, digest, presented_digest
from ._check import check_record
from ._config import ExtensionRegistry
from ._decisions import DECISIONS, check_decision_outcome, option_status
from ._evidence import KeySet, presentation, verify_proof
from ._fold import ItemState, Registry
from ._records import ItemId
from ._time import Time, rfc3339
from ._wire import ObservedItem, SettledRecord
from .errors import HandoffError, HandoffProtocolError

__all__ = [
    "EXTENSIONS",
    "EvidenceCheck",
    "Mandate",
    "PrincipalSide",
    "check_principal_side_record",
    "check_requester_record",
    "claim_evidence",
    "current_settlement",
    "evidence_verdict",
    "make_settlement",
    "observe",
    "presentation_for",
    "presented_terms",
    "settlement_evidence",
    "terms_at",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Mandate:
    """A mandate or standing instruction the principal side can produce (``authority.under``).

    ``delegates`` are the parties that may decide under it; ``exts`` the extension names
    it covers (empty: every extension); ``text`` what it says, shown on request.
    """

    delegates: frozenset[str]
    exts: frozenset[str] = frozenset()
    text: str = ""


@dataclass(frozen=True)
class PrincipalSide:
    """A principal side's own configuration: its mandates and the principal's JWKS.

    ``verifiable`` makes it a *verifiable* principal side (§12): settlements of kind
    ``principal`` or ``confirmed`` must carry ``evidence.proof`` that verifies.
    """

    mandates: Mapping[str, Mandate] = field(default_factory=lambda: MappingProxyType({}))
    jwks: Mapping[str, Any] | None = None
    verifiable: bool = False
    _keys: list[KeySet] = field(default_factory=list, init=False, compare=False, repr=False)

    def key_set(self) -> KeySet | None:
        """The principal's keys from ``jwks``, parsed on first use and kept by this object."""
        if self.jwks is None:
            return None
        if not self._keys:
            self._keys.append(KeySet(self.jwks))
        return self._keys[0]

    @classmethod
    def from_json(cls, value: Any) -> PrincipalSide:
        """Build from ``{"mandates"?: {ref: {"delegates", "exts"?, "text"?}}, "jwks"?, ...}``."""
        if not isinstance(value, Mapping):
            raise _config("the principal side configuration is not an object")
        mandates: dict[str, Mandate] = {}
        raw = value.get("mandates", {})
        if not isinstance(raw, Mapping):
            raise _config("mandates is not an object")
        for ref, body in raw.items():
            if not isinstance(body, Mapping):
                raise _config(f"mandate {ref!r} is not an object")
            delegates = body.get("delegates")
            exts = body.get("exts", [])
            text = body.get("text", "")
            if not _strings(delegates) or not _strings(exts) or not isinstance(text, str):
                raise _config(f"mandate {ref!r} needs delegates (and exts) as lists of strings")
            mandates[str(ref)] = Mandate(frozenset(delegates or ()), frozenset(exts or ()), text)
        jwks = value.get("jwks")
        if jwks is not None and not isinstance(jwks, Mapping):
            raise _config("jwks is not an object")
        verifiable = value.get("verifiable", False)
        if not isinstance(verifiable, bool):
            raise _config("verifiable is not a boolean")
        return cls(MappingProxyType(mandates), jwks, verifiable)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _config(message: str) -> HandoffError:
    return HandoffError("config", message, reason="config_invalid")


def _item(record: Mapping[str, Any]) -> ItemId:
    return ItemId(str(record["ext"]).partition("/")[0], str(record["project"]), str(record["key"]))


def _need_versions(registry: Registry, item: ItemId, rev: int) -> list[dict[str, Any]]:
    return registry.records(item, types=("raised", "amended"), terms_rev=rev)


def terms_at(registry: Registry, item: ItemId, rev: int) -> Mapping[str, Any] | None:
    """Return the terms of ``item`` at revision ``rev`` as held, or ``None``.

    A need id held with several contents (``same_id``) names no terms: none of its
    versions is ever the answer. When several other need records carry that revision (a
    forked register), the current need's terms are used if it is one of them (they are
    what a principal side presents), and otherwise those of the record with the lowest
    digest; either way the answer does not depend on arrival order. What a settlement was
    made against is :func:`presented_terms`, which its digest decides.
    """
    state = registry.state(item)
    candidates = _need_versions(registry, item, rev)
    ids = [c["id"] for c in candidates]
    candidates = [c for c in candidates if ids.count(c["id"]) == 1]
    if not candidates:
        return None
    current = [c for c in candidates if c["id"] == state.need]
    chosen = current[0] if current else min(candidates, key=digest)
    terms: Mapping[str, Any] = chosen["terms"]
    return terms


def presented_terms(registry: Registry, record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Return the terms a settlement was made against: those its ``presented`` digest names.

    Every need record held at the settlement's ``terms_rev`` is tried, including each
    version of a rewritten id, so whatever arrives later, the digest keeps binding the
    terms the person saw. ``None`` when no held version gives the digest (or the
    settlement carries no ``presented``).
    """
    rev = _settled_rev(record)  # refuses anything but a settlement-shaped object
    return _bound_terms(record, _need_versions(registry, _item(record), rev))


def _bound_terms(
    record: Mapping[str, Any], versions: list[dict[str, Any]]
) -> Mapping[str, Any] | None:
    evidence = record.get("evidence")
    wanted = evidence.get("presented") if isinstance(evidence, Mapping) else None
    if not isinstance(wanted, str) or not isinstance(evidence, Mapping):
        return None
    rev = _settled_rev(record)
    item = _item(record)
    proposal = evidence.get("proposal")
    for need in versions:
        shown = presentation(
            ext=str(record["ext"]),
            project=item.project,
            key=item.key,
            terms_rev=rev,
            terms=need["terms"],
            proposal=proposal if isinstance(proposal, str) else None,
        )
        if presented_digest(shown) == wanted:
            terms: Mapping[str, Any] = need["terms"]
            return terms
    return None


def _settled_rev(record: Mapping[str, Any]) -> int:
    rev = record.get("terms_rev") if isinstance(record, Mapping) else None
    if (
        isinstance(rev, bool)
        or not isinstance(rev, int)
        or not all(isinstance(record.get(m), str) for m in ("ext", "project", "key"))
    ):
        raise HandoffError(
            "evidence",
            "a presentation needs a settlement with ext, project, key and terms_rev",
            reason="presentation",
        )
    return rev


def presentation_for(registry: Registry, record: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the presentation a settlement's ``evidence.presented`` must digest (§9).

    ``None`` when the need record at the settlement's ``terms_rev`` is not held.
    """
    _settled_rev(record)
    item = _item(record)
    terms = terms_at(registry, item, int(record["terms_rev"]))
    if terms is None:
        return None
    evidence = record.get("evidence")
    proposal = evidence.get("proposal") if isinstance(evidence, Mapping) else None
    return presentation(
        ext=str(record["ext"]),
        project=item.project,
        key=item.key,
        terms_rev=int(record["terms_rev"]),
        terms=terms,
        proposal=proposal if isinstance(proposal, str) else None,
    )


def make_settlement(
    registry: Registry,
    item: ItemId,
    outcome: str,
    *,
    by: str,
    ts: Time,
    kind: str = "principal",
    proposal: str | None = None,
    answer: str | None = None,
    record_id: str | None = None,
) -> SettledRecord:
    """Build the ``settled`` record a principal side emits for ``item`` (not yet signed).

    It settles against the current terms revision, names the principal as decider, carries
    ``evidence.presented`` (the §9 digest of what is shown) and, for ``confirmed``,
    ``evidence.proposal`` (adopted when it is a held claim), and supersedes the current
    settlement. The id defaults to ``s-`` + 24 hex digits of the record's digest. Sign it
    with :func:`handoff.attach_proof`; check it with :func:`check_principal_side_record`.
    ``ts`` is RFC 3339 text or an aware :class:`datetime.datetime` (written as UTC); a naive
    datetime raises :class:`~handoff.HandoffUsageError` ``usage``/``time``.
    """
    if kind not in ("principal", "confirmed"):
        raise HandoffError("settle", "only principal or confirmed are built here", reason="kind")
    if not isinstance(item, ItemId) or not isinstance(registry, Registry):
        raise HandoffError("usage", "make_settlement needs a Registry and an ItemId", reason="type")
    state = registry.state(item)
    extension = next((e for e in registry.extensions if e.name == item.ext), None)
    if state.state == "conflicted":
        raise HandoffError(
            "settle",
            f"{item.key!r} is conflicted (an id was sent with two contents): its terms are unknown",
            reason="conflicted",
        )
    if state.terms is None or state.terms_rev is None or extension is None:
        raise HandoffError("settle", f"no need record is held for {item.key!r}", reason="unknown")
    record: dict[str, Any] = {
        "ph": "0.3",
        "ext": extension.ext,
        "type": "settled",
        "origin": "principal",
        "by": by,
        "key": item.key,
        "project": item.project,
        "ts": rfc3339(ts, "ts"),
        "terms_rev": state.terms_rev,
        "outcome": outcome,
        "authority": {"kind": kind, "decider": registry.roles.principal},
    }
    if proposal is not None:
        record["evidence"] = {"proposal": proposal}
        if proposal in state.claims:
            record["adopts"] = [proposal]
    if answer is not None:
        record["answer"] = answer
    if extension.offered is not None:
        why = extension.offered(record, state.terms)
        if why is not None:
            raise HandoffError(
                "settle",
                f"{outcome!r} is not an outcome the terms of {item.key!r} offer",
                reason=why,
            )
    if state.settlement is not None:
        record["supersedes"] = [state.settlement]
    shown = presentation_for(registry, record)
    if shown is None:  # pragma: no cover - the current terms are always held
        raise HandoffError("settle", "the current terms are not held", reason="unknown")
    record["evidence"] = {"presented": presented_digest(shown), **record.get("evidence", {})}
    record["id"] = record_id or "s-" + hashlib.sha256(canonical(record)).hexdigest()[:24]
    return cast(SettledRecord, record)


def _fail(code: str, reason: str, message: str) -> HandoffError:
    return HandoffError(code, message, reason=reason)


def check_requester_record(record: Mapping[str, Any], registry: Registry) -> Mapping[str, Any]:
    """Check one record a requester emits against what ``registry`` holds (§12 requester).

    Returns ``record`` when it conforms; otherwise raises
    :class:`~handoff.HandoffProtocolError` naming the first rule broken.

    A requester emits only need records, claims, ``derived_from`` relations and notes, with
    origin ``requester`` (or, for an Acts registrar's claims and notes, ``registrar``);
    raises a key once; amends and withdraws the current need (listing it in
    ``supersedes``), never after withdrawing; and amends with ``terms_rev`` one above the
    highest held.
    """
    check_record(record, roles=registry.roles, extensions=registry.extensions)
    type_ = record["type"]
    if record["origin"] not in ("requester", "registrar") or type_ in ("settled", "reopened"):
        raise _fail("conformance", "not_requester_record", "a requester emits no such record")
    if type_ == "related" and record["relation"]["kind"] != "derived_from":
        raise _fail("conformance", "relation_kind", "a requester relates only with derived_from")
    state = registry.state(_item(record))
    if type_ == "raised":
        if state.need is not None:
            raise _fail("conformance", "key_reused", "the key is already raised; amend instead")
        return record
    if type_ not in ("amended", "withdrawn"):
        return record
    if state.need is None:
        raise _fail("conformance", "need_missing", f"a requester cannot {type_} an unraised item")
    if state.need_withdrawn:
        raise _fail("conformance", "need_withdrawn", "the need is already withdrawn")
    if state.need not in record.get("supersedes", ()):
        raise _fail(
            "conformance", "supersedes_current", f"{type_} must list the current need record"
        )
    if type_ == "amended" and record["terms_rev"] != (state.held_terms_rev or 0) + 1:
        raise _fail(
            "conformance", "terms_rev_step", "an amendment must raise terms_rev by exactly one"
        )
    return record


def check_principal_side_record(
    record: Mapping[str, Any], registry: Registry, side: PrincipalSide
) -> Mapping[str, Any]:
    """Check one record a principal side emits (§12 principal side, verifiable principal side).

    Returns ``record`` when it conforms; otherwise raises
    :class:`~handoff.HandoffProtocolError` naming the first rule broken (a JWKS in ``side``
    that cannot be used raises :class:`~handoff.HandoffUsageError` ``key``).

    Beyond core admission: a settlement that replaces one, and every reopening, lists the
    current settlement; ``principal``/``confirmed`` carry ``evidence.presented`` equal to
    the digest of the presentation at ``terms_rev`` (§9), ``confirmed`` its ``proposal``
    (and a proposal that is a held claim asserts the same outcome); ``delegated`` names a
    mandate the side holds, covering the decider and the extension; a decision's outcome
    is an option of the terms it was made against; a proof, when present, verifies
    against the principal's JWKS, and a verifiable side requires one on
    ``principal``/``confirmed``.
    """
    check_record(record, roles=registry.roles, extensions=registry.extensions)
    type_ = record["type"]
    if record["origin"] != "principal":
        raise _fail("conformance", "not_principal_record", "a principal side emits no such record")
    if type_ not in ("settled", "reopened"):
        return record
    item = _item(record)
    state = registry.state(item)
    if state.settlement is not None and state.settlement not in record.get("supersedes", ()):
        raise _fail(
            "conformance",
            "supersedes_current",
            f"a {type_} record must list the current settlement in supersedes",
        )
    if type_ != "reopened":
        _check_settlement(record, registry, side, item)
    return record


def _check_settlement(
    record: Mapping[str, Any], registry: Registry, side: PrincipalSide, item: ItemId
) -> None:
    authority = record["authority"]
    kind = authority["kind"]
    evidence = record.get("evidence", _EMPTY)
    terms = terms_at(registry, item, record["terms_rev"])
    if kind in ("principal", "confirmed"):
        if "presented" not in evidence:
            raise _fail("evidence", "presented_missing", f"a {kind} settlement needs presented")
        if kind == "confirmed" and "proposal" not in evidence:
            raise _fail("evidence", "proposal_missing", "a confirmed settlement needs proposal")
        shown = presentation_for(registry, record)
        if shown is None:
            raise _fail(
                "evidence", "terms_not_held", "the side holds no terms at the settled terms_rev"
            )
        if presented_digest(shown) != evidence["presented"]:
            raise _fail(
                "evidence", "presented_mismatch", "presented is not the digest of what was shown"
            )
        if kind == "confirmed":
            _check_proposal(record, registry, item, evidence["proposal"])
    if kind == "delegated":
        mandate = side.mandates.get(authority["under"])
        if mandate is None:
            raise _fail("authority", "mandate_unknown", "authority.under names no held mandate")
        if authority["decider"] not in mandate.delegates or (
            mandate.exts and item.ext not in mandate.exts
        ):
            raise _fail("authority", "mandate_scope", "the mandate does not cover this settlement")
    if item.ext == DECISIONS.name:
        check_decision_outcome(record, terms, f"record {record['id']!r}")
    if "proof" in evidence:
        if side.jwks is None:
            raise _fail("key", "jwks_missing", "a proof cannot be checked without the JWKS")
        verify_proof(record, side.key_set() or side.jwks)
    elif side.verifiable and kind in ("principal", "confirmed"):
        raise _fail("proof", "proof_missing", f"a verifiable side requires a proof on {kind}")


def _check_proposal(
    record: Mapping[str, Any], registry: Registry, item: ItemId, proposal: str
) -> None:
    # several claimants may reuse one id (id_reused): the settlement must agree with one
    claims = [h for h in registry.records(item) if h["id"] == proposal and h["type"] == "claimed"]
    if not claims:
        return
    if not any(h["outcome"] == record["outcome"] for h in claims):
        raise _fail(
            "evidence",
            "proposal_mismatch",
            "the confirmed claim asserts another outcome than the settlement",
        )
    if not any(
        h["outcome"] == record["outcome"] and h.get("answer") == record.get("answer")
        for h in claims
    ):
        raise _fail("evidence", "proposal_mismatch", "the confirmed claim gives another answer")


def _evidence_report(
    record: Mapping[str, Any], registry: Registry, jwks: KeySet | None
) -> dict[str, str]:
    evidence = record.get("evidence", _EMPTY)
    report: dict[str, str] = {}
    versions = _need_versions(registry, _item(record), _settled_rev(record))
    if "presented" not in evidence:
        report["presented"] = "absent"
    elif _bound_terms(record, versions) is not None:
        report["presented"] = "match"
    elif versions:
        report["presented"] = "mismatch"
    else:
        report["presented"] = "unverifiable"
    if "proof" not in evidence:
        report["proof"] = "absent"
    elif jwks is None:
        report["proof"] = "unverifiable"
    else:
        try:
            verify_proof(record, jwks)
            report["proof"] = "valid"
        except HandoffProtocolError as exc:  # an unusable JWKS is the caller's: it propagates
            report["proof"] = f"invalid:{exc.reason}"
    return report


@dataclass(frozen=True)
class EvidenceCheck:
    """What a settlement's evidence is worth: a report, never read as success.

    ``verdict`` is ``verified``, ``unverified`` or ``forged`` (see
    :func:`settlement_evidence`); ``presented`` (``match``, ``mismatch``, ``absent``,
    ``unverifiable``) and ``proof`` (``valid``, ``invalid:<reason>``, ``absent``,
    ``unverifiable``) say why. ``bool()`` of it raises :class:`TypeError`: a forged
    settlement must not pass an ``if``; compare ``.verdict`` (or use :attr:`verified`).
    """

    verdict: str
    presented: str
    proof: str

    @property
    def verified(self) -> bool:
        """Whether the verdict is ``verified``."""
        return self.verdict == "verified"

    def __bool__(self) -> bool:
        """Refused: an evidence check is a report; read ``.verdict``."""
        raise TypeError("handoff EvidenceCheck is a report; read .verdict")

    def to_json(self) -> dict[str, str]:
        """Return ``{"verdict", "presented", "proof"}``."""
        return {"verdict": self.verdict, "presented": self.presented, "proof": self.proof}


def current_settlement(registry: Registry, item: ItemId) -> dict[str, Any] | None:
    """Return the current ``settled`` record of ``item`` (also while it is conflicted)."""
    state = registry.state(item)
    if state.settlement is None:
        return None
    for record in registry.records(item, id=state.settlement, types=("settled",)):
        return record
    return None


def settlement_evidence(
    registry: Registry, item: ItemId, side: PrincipalSide
) -> EvidenceCheck | None:
    """Check the evidence of ``item``'s current settlement; ``None`` when it has none.

    Returns an :class:`EvidenceCheck` (a report: its ``bool()`` raises): ``presented``
    and ``proof`` as an
    observer reports them, and ``verdict`` ``forged`` (the presented digest names no terms
    held at that revision, a proof does not verify, or a verifiable side lacks a proof or a
    digest a person's settlement must carry), ``verified`` (a valid proof with the key of
    ``side.jwks``, and the digest matches where one is required) or ``unverified``
    (nothing false found, but not everything checkable: no proof, or no terms held).
    """
    record = current_settlement(registry, item)
    if record is None:
        return _reopening_evidence(registry, item, side)
    # every signature variant held counts: the best verdict among them (§10, ours)
    checks = [evidence_verdict(v, registry, side) for v in registry.signature_variants(record)]
    return min(checks, key=lambda c: _VERDICT_RANK[c.verdict])


_VERDICT_RANK = {"verified": 0, "unverified": 1, "forged": 2}


def _reopening_evidence(
    registry: Registry, item: ItemId, side: PrincipalSide
) -> EvidenceCheck | None:
    """On a verifiable side, the evidence of a current ``reopened`` record (ours).

    A reopening undoes a settlement: whoever can write one unsigned can undo a verified
    decision, so its proof is reported like a settlement's (no presented digest applies).
    """
    state = registry.state(item)
    if not side.verifiable or state.settlement is None:
        return None
    found = [
        r for r in registry.records(item) if r["id"] == state.settlement and r["type"] == "reopened"
    ]
    if not found:
        return None
    best: dict[str, str] | None = None
    for variant in registry.signature_variants(found[0]):
        evidence = variant.get("evidence", _EMPTY)
        keys = side.key_set()
        if "proof" not in evidence:
            report = {"verdict": "unverified", "presented": "absent", "proof": "absent"}
        elif keys is None:
            report = {"verdict": "unverified", "presented": "absent", "proof": "unverifiable"}
        else:
            try:
                verify_proof(variant, keys)
                report = {"verdict": "verified", "presented": "absent", "proof": "valid"}
            except HandoffProtocolError as exc:  # an unusable JWKS is the caller's: it propagates
                report = {
                    "verdict": "forged",
                    "presented": "absent",
                    "proof": f"invalid:{exc.reason}",
                }
        if best is None or _VERDICT_RANK[report["verdict"]] < _VERDICT_RANK[best["verdict"]]:
            best = report
    return None if best is None else EvidenceCheck(**best)


def evidence_verdict(
    record: Mapping[str, Any], registry: Registry, side: PrincipalSide
) -> EvidenceCheck:
    """Check one ``settled`` record's evidence against what ``registry`` holds.

    Returns an :class:`EvidenceCheck` (see :func:`settlement_evidence`). A record
    that is not settlement-shaped raises :class:`~handoff.HandoffProtocolError` ``evidence``.
    """
    authority = record.get("authority") if isinstance(record, Mapping) else None
    if not isinstance(authority, Mapping) or record.get("type") != "settled":
        raise HandoffError(
            "evidence", "evidence is checked on a settled record only", reason="presentation"
        )
    _settled_rev(record)
    report = _evidence_report(record, registry, side.key_set())
    presented, proof = report["presented"], report["proof"]
    person = record["authority"]["kind"] in ("principal", "confirmed")
    if (
        presented == "mismatch"
        or proof.startswith("invalid")
        or (person and side.verifiable and "absent" in (presented, proof))
    ):
        verdict = "forged"
    elif proof == "valid" and (presented == "match" or not person):
        verdict = "verified"
    else:
        verdict = "unverified"
    return EvidenceCheck(verdict, report["presented"], report["proof"])


def claim_evidence(registry: Registry, item: ItemId) -> list[dict[str, Any]]:
    """Report what each claim of ``item`` says it rests on (seed §7: claims SHOULD carry
    ``evidence.basis``).

    One entry per claim held, sorted by id then claimant: ``{"claim", "by", "outcome",
    "basis"}`` with ``basis`` the claim's ``evidence.basis`` or ``None`` when it gives
    none. A basis is the claimant's word: it is reported, never taken as proof.
    """
    out: list[dict[str, Any]] = []
    for record in registry.records(item):
        if record["type"] != "claimed":
            continue
        evidence = record.get("evidence")
        basis = evidence.get("basis") if isinstance(evidence, Mapping) else None
        out.append(
            {
                "claim": record["id"],
                "by": record["by"],
                "outcome": record["outcome"],
                "basis": basis if isinstance(basis, str) else None,
            }
        )
    out.sort(key=lambda entry: (entry["claim"], entry["by"]))
    return out


def observe(
    records: Iterable[Mapping[str, Any]],
    registry: Registry,
    *,
    jwks: Mapping[str, Any] | None = None,
) -> list[ObservedItem]:
    """Fold ``records`` into ``registry`` and report every item as an observer sees it (§12).

    Each item is its core state (``ItemState.to_json``) plus, when it holds claims,
    ``claim_evidence`` (:func:`claim_evidence`), and when settled, ``evidence``
    (``presented``: ``match``/``mismatch``/``absent``/``unverifiable``; ``proof``:
    ``valid``/``invalid:<reason>``/``absent``/``unverifiable``) and, for a decision,
    ``option_status`` (:func:`handoff.option_status`).
    """
    registry.add_many(records)
    keys = KeySet(jwks) if jwks is not None else None  # parsed once for every item
    out: list[dict[str, Any]] = []
    for item, state in registry.states().items():
        out.append(_observed(registry, item, state, keys))
    return cast(list[ObservedItem], out)


def _observed(
    registry: Registry, item: ItemId, state: ItemState, jwks: KeySet | None
) -> dict[str, Any]:
    shown = state.to_json()
    if state.claims:
        shown["claim_evidence"] = claim_evidence(registry, item)
    if state.state not in ("settled", "conflicted") or state.settlement is None:
        return shown
    settlement = next(
        r
        for r in registry.records(item)
        if r["id"] == state.settlement and r["type"] in ("settled", "reopened")
    )
    if settlement["type"] != "settled":
        return shown
    bound = presented_terms(registry, settlement)
    if bound is not None:
        shown["presented_terms"] = dict(bound)
    shown["evidence"] = _evidence_report(settlement, registry, jwks)
    if item.ext == DECISIONS.name:
        chosen = bound if bound is not None else terms_at(registry, item, settlement["terms_rev"])
        shown["option_status"] = option_status(settlement["outcome"], chosen, state.terms)
    return shown


EXTENSIONS = ExtensionRegistry([ACTS, DECISIONS])
"""The extensions this library implements: ``acts/0.3`` and ``decisions/0.3``."""
