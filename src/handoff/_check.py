"""Admitting one record: version, schemas, pair table, record rules, ownership, authority.

Every check here depends only on the record and the deployment configuration, never on
other records, so whether a record is admitted does not depend on arrival order. The
stages run in a fixed order and the first failing one names the error ``code``:
``parse`` → ``schema`` → ``pair`` → ``record`` → ``ownership`` → ``authority``.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._canonical import canonical
from ._config import Extension, ExtensionRegistry, Roles
from ._json import MAX_RECORD_BYTES, MAX_SAFE_INTEGER, check_json_value, parse_line, text_size
from ._validate import compiled_validator, ecma_pattern
from .errors import HandoffError

__all__ = ["PH_VERSION", "Verdict", "admit", "admit_fast", "admit_line", "check_record"]

PH_VERSION = "0.3"
"""The core version this library implements (§14)."""

_PH_SHAPE = ecma_pattern("^[0-9]{1,6}\\.[0-9]{1,6}$").search


@dataclass(frozen=True)
class Verdict:
    """The outcome of admitting one record that was not rejected.

    ``status`` is ``"accepted"`` (it will be folded) or ``"ignored"`` (consumed without
    acting: ``why`` is ``unknown_version``, ``unknown_extension`` or
    ``unknown_extension_version``).
    """

    status: str
    why: str | None = None
    extension: Extension | None = None

    def __bool__(self) -> bool:
        """Refused: a verdict is a report (``ignored`` is not ``accepted``); read ``.status``."""
        raise TypeError("a handoff Verdict is a report; read .status")

    def to_json(self) -> dict[str, Any]:
        """Return ``{"status", "why"?}``."""
        out: dict[str, Any] = {"status": self.status}
        if self.why is not None:
            out["why"] = self.why
        return out


def _reject(code: str, reason: str, message: str) -> HandoffError:
    return HandoffError(code, message, reason=reason)


def check_record(
    record: Mapping[str, Any], *, roles: Roles, extensions: ExtensionRegistry
) -> Verdict:
    """Admit one record given as its parsed JSON object.

    Returns a :class:`Verdict` (``accepted`` or ``ignored``; a report, so ``bool()`` of it
    raises) or raises :class:`~handoff.HandoffProtocolError` naming the first stage that
    fails (docs/spec/handoff.md, "Admission"); anything that is not an object, of any
    Python type, is ``parse``/``not_object``. The object is first checked to be I-JSON (no
    lone surrogates, safe integers, only JSON types), as :func:`handoff.parse_record`
    guarantees for text.
    """
    if not isinstance(record, Mapping):
        raise _reject("parse", "not_object", "a record must be a JSON object")
    check_json_value(record)
    if not isinstance(record, dict):
        record = dict(record)
    return admit(record, roles, extensions)


def _core_check() -> Any:
    return compiled_validator("record.schema.json")


_CORE = _core_check()


def admit(
    record: dict[str, Any], roles: Roles, extensions: ExtensionRegistry, size: int | None = None
) -> Verdict:
    """Admit an I-JSON record object (hot path; see :func:`check_record`).

    ``size``: the size in UTF-8 bytes of the text it was parsed from, when it was (see
    :func:`admit_fast`).
    """
    found = admit_fast(record, roles, extensions, size)
    if isinstance(found, str):
        return Verdict("ignored", found)
    return Verdict("accepted", None, found)


def admit_line(line: str | bytes, roles: Roles, extensions: ExtensionRegistry) -> Verdict:
    """Admit one record given as JSON text: the path every file and store read takes.

    :func:`handoff.parse_record`'s strict parse (which applies the same nesting and size
    limits as :func:`check_record` does to objects), then :func:`admit`.
    """
    return admit(parse_line(line), roles, extensions, text_size(line))


def _where(record: dict[str, Any]) -> str:
    rid = record.get("id")
    return f"record {rid!r}" if isinstance(rid, str) and len(rid) <= 256 else "the record"


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
# JCS writes a number at most 21/4 times as long as its shortest JSON spelling (``1e20``)
# and every other token at most as long (in UTF-8 bytes: it never escapes what the source
# could write raw), so text under MAX/6 bytes is certainly within the limit
_EXPANSION = 6


def _check_size(record: dict[str, Any], size: int | None, stored: bool = False) -> None:
    """Refuse a record whose JCS form (what every store writes) is over the size limit;
    ``stored``: a row a store holds, measured in characters (see ``parse_stored``)."""
    if size is None:
        size = text_size(_COMPACT(record))
    if size * _EXPANSION <= MAX_RECORD_BYTES:
        return
    jcs = canonical(record)
    length = len(jcs.decode("utf-8")) if stored else len(jcs)
    if length > MAX_RECORD_BYTES:
        unit = "characters" if stored else "bytes"
        raise _reject(
            "parse",
            "too_large",
            f"{_where(record)} is {length} {unit} in its canonical (JCS) form, more "
            f"than the limit of {MAX_RECORD_BYTES}",
        )


def admit_fast(
    record: dict[str, Any],
    roles: Roles,
    extensions: ExtensionRegistry,
    size: int | None = None,
    stored: bool = False,
) -> Extension | str:
    """Admit a record: its extension when accepted, the reason when ignored.

    This is the one admission function every path runs (objects, lines, files, stores).
    ``size`` is the size in UTF-8 bytes of the text the record was parsed from, if any: it
    bounds the JCS form cheaply; without it the record is measured (docs/spec/handoff.md
    §13, ours). ``stored``: a row a store holds (``size`` then counts characters).
    """
    _check_size(record, size, stored)
    ph = record.get("ph")
    if ph != PH_VERSION:
        if not isinstance(ph, str) or _PH_SHAPE(ph) is None:
            raise _reject(
                "schema", "record_schema", f"{_where(record)}: ph is missing or not a version"
            )
        return "unknown_version"
    problem = _CORE(record)
    if problem is not None:
        raise _reject("schema", "record_schema", f"{_where(record)}: the record {problem}")
    ext = record["ext"]
    extension = extensions._by_ext.get(ext)
    if extension is None:
        name = ext.partition("/")[0]
        why = "unknown_extension_version" if extensions.knows_name(name) else "unknown_extension"
        return why
    type_ = record["type"]
    origin = record["origin"]
    pair_check = extension.pair_checks.get((type_, origin))
    if pair_check is None:
        schema = extension.schema_for(type_, origin)
        if schema is None:
            raise _reject(
                "pair",
                "unknown_pair",
                f"{_where(record)}: ({type_}, {origin}) is not a pair {ext} lists",
            )
        pair_check = extension.pair_checks[(type_, origin)] = compiled_validator(schema)
    problem = pair_check(record)
    if problem is not None:
        raise _reject(
            "schema", "pair_schema", f"{_where(record)}: as a {type_} record it {problem}"
        )
    _record_rules(record, type_, extension)
    if extension.hook is not None:
        extension.hook(record)
    by = record["by"]
    if (type_ == "claimed" and (by in roles.principal_side or by == roles.principal)) or (
        not roles.holds(by, origin, record["project"])
    ):
        _ownership(record, type_, origin, roles)  # raises, naming the rule broken
    if type_ == "settled":
        _authority(record, roles)
    return extension


_NEEDS_SUPERSEDES = frozenset({"amended", "withdrawn", "reopened"})


def _record_rules(record: dict[str, Any], type_: str, ext: Extension) -> None:
    supersedes = record.get("supersedes")
    if supersedes is not None and record["id"] in supersedes:
        raise _reject(
            "record", "supersedes_self", f"{_where(record)} lists its own id in supersedes"
        )
    if type_ in _NEEDS_SUPERSEDES and not supersedes:
        raise _reject(
            "record",
            "supersedes_missing",
            f"{_where(record)}: a {type_} record must list the record it replaces in supersedes",
        )
    rev = record.get("terms_rev")
    if rev is not None:
        if type_ == "settled" and rev < 1:
            raise _reject(
                "record", "terms_rev_settled", f"{_where(record)}: a settled needs terms_rev ≥ 1"
            )
        if rev > MAX_SAFE_INTEGER or rev < 1:
            raise _reject(
                "record", "terms_rev_range", f"{_where(record)}: terms_rev must be 1 or more"
            )
        if type_ == "amended" and rev < 2:
            raise _reject(
                "record", "terms_rev_amended", f"{_where(record)}: an amended needs terms_rev ≥ 2"
            )
    if "adopts" in record:
        if type_ != "settled":
            raise _reject(
                "record", "adopts_type", f"{_where(record)}: only a settled record may adopt"
            )
        if record["authority"]["kind"] not in ("confirmed", "attested"):
            raise _reject(
                "record",
                "adopts_kind",
                f"{_where(record)}: adopts is allowed only on kinds confirmed and attested",
            )
    if type_ == "settled":
        _settlement_rules(record, ext)
    elif type_ == "claimed":
        allowed = ext.claim_outcomes
        if allowed is not None and record["outcome"] not in allowed:
            raise _reject(
                "record",
                "outcome_unknown",
                f"{_where(record)}: outcome is not one {ext.ext} defines",
            )
    elif type_ == "withdrawn":
        if ext.reasons is not None and record["reason"] not in ext.reasons:
            raise _reject(
                "record", "reason_unknown", f"{_where(record)}: reason is not one {ext.ext} defines"
            )
    elif type_ == "related":
        target = record["relation"]["target"]
        family = sum(1 for m in ("ext", "project", "key") if m in target)
        uri = "uri" in target
        if not ((family == 3 and not uri) or (family == 0 and uri)):
            raise _reject(
                "record",
                "relation_target",
                f"{_where(record)}: relation.target must be either ext+project+key or uri alone",
            )
    elif type_ == "note":
        about = record["about"]
        if ("key" in about) == ("quote" in about):
            raise _reject(
                "record",
                "about_form",
                f"{_where(record)}: about must carry exactly one of key or quote",
            )
        if "key" in about and about["key"] != record["key"]:
            raise _reject(
                "record", "about_key", f"{_where(record)}: about.key differs from the record's key"
            )


def _settlement_rules(record: dict[str, Any], ext: Extension) -> None:
    if ext.outcomes is not None and record["outcome"] not in ext.outcomes:
        raise _reject(
            "record", "outcome_unknown", f"{_where(record)}: outcome is not one {ext.ext} defines"
        )
    authority = record["authority"]
    kind = authority["kind"]
    if kind == "delegated" and ("under" not in authority or "chain" not in authority):
        raise _reject(
            "record",
            "delegation_incomplete",
            f"{_where(record)}: a delegated settlement needs authority.under and .chain",
        )
    if kind == "attested" and "basis" not in record.get("evidence", {}):
        raise _reject(
            "record",
            "basis_missing",
            f"{_where(record)}: an attested settlement must carry evidence.basis",
        )


def _ownership(record: dict[str, Any], type_: str, origin: str, roles: Roles) -> None:
    by = record["by"]
    if type_ == "claimed" and (by in roles.principal_side or by == roles.principal):
        raise _reject(
            "ownership",
            "claim_by_principal_side",
            f"{_where(record)}: the principal side records settlements, not claims",
        )
    if not roles.holds(by, origin, record["project"]):
        reason = {
            "requester": "not_requester",
            "principal": "not_principal_side",
        }.get(origin, "role_not_held")
        raise _reject(
            "ownership",
            reason,
            f"{_where(record)}: {by!r} lacks the {origin} role for project {record['project']!r}",
        )


def _authority(record: dict[str, Any], roles: Roles) -> None:
    authority = record["authority"]
    kind = authority["kind"]
    decider = authority["decider"]
    if kind in ("principal", "confirmed"):
        if decider != roles.principal:
            raise _reject(
                "authority",
                "decider_not_principal",
                f"{_where(record)}: a settlement of kind {kind} must name the principal as decider",
            )
        # seed §5: representative is a MUST; evidence of the power to represent is a
        # SHOULD (reported by observers), a MUST only for a verifiable principal side
        if not roles.principal_is_person and "representative" not in authority:
            raise _reject(
                "authority",
                "representative_missing",
                f"{_where(record)}: for an organisation, kind {kind} needs the representative "
                "who acted for it",
            )
        return
    if _looks_like(decider, roles.principal):
        raise _reject(
            "authority",
            "delegate_is_principal",
            f"{_where(record)}: a settlement of kind {kind} cannot name the principal "
            "(or an identifier that reads like it) as decider",
        )
    if kind == "attested" and decider not in roles.principal_side:
        raise _reject(
            "authority",
            "attester_not_principal_side",
            f"{_where(record)}: an attested settlement is decided by the principal side itself",
        )
    if kind == "delegated":
        chain = authority["chain"]
        if len(chain) < 2 or chain[0] != roles.principal or chain[-1] != decider:
            raise _reject(
                "authority",
                "chain_broken",
                f"{_where(record)}: authority.chain must run from the principal to the decider",
            )
        if any(_looks_like(party, roles.principal) for party in chain[1:]):
            raise _reject(
                "authority",
                "chain_broken",
                f"{_where(record)}: authority.chain returns to the principal",
            )
        if len({_fold_id(party) for party in chain}) != len(chain):
            raise _reject(
                "authority",
                "chain_broken",
                f"{_where(record)}: authority.chain names a party twice",
            )


def _fold_id(party: str) -> str:
    return unicodedata.normalize("NFKC", party).casefold()


def _looks_like(party: str, principal: str) -> bool:
    """Whether ``party`` is the principal identifier or reads the same (case, NFKC)."""
    return party == principal or _fold_id(party) == _fold_id(principal)
