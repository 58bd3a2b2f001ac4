"""Records (§4) as frozen dataclasses, with ``from_json``/``to_json``.

``from_json`` takes the record's JSON object as parsed; it checks shapes but not the
protocol rules (those live in :func:`handoff.check_record`). Members a receiver does not
recognise are kept in ``extra`` so that ``to_json`` gives back exactly what was read and
the record's digest does not change on a round trip.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from .errors import HandoffError

__all__ = [
    "NEED_TYPES",
    "RECORD_TYPES",
    "SETTLEMENT_TYPES",
    "About",
    "Authority",
    "Evidence",
    "ItemId",
    "Record",
    "Relation",
    "Target",
]

RECORD_TYPES = (
    "raised",
    "amended",
    "withdrawn",
    "settled",
    "reopened",
    "claimed",
    "related",
    "note",
)
"""Every record type of the core (§4)."""
NEED_TYPES = frozenset({"raised", "amended", "withdrawn"})
"""Types that belong to the need register (owner: requester)."""
SETTLEMENT_TYPES = frozenset({"settled", "reopened"})
"""Types that belong to the settlement register (owner: principal side)."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class _ItemFields(NamedTuple):
    ext: str
    project: str
    key: str


class ItemId(_ItemFields):
    """An item: (extension name without version, project, key) (§1).

    ``ext`` may be given as records spell it (``"decisions/0.3"``): an item is one across
    versions of its extension, so the version is dropped (``ItemId("decisions/0.3", ...)
    == ItemId("decisions", ...)``).
    """

    __slots__ = ()

    def __new__(cls, ext: str, project: str, key: str) -> ItemId:
        """Build the item, keeping only the extension name of ``ext``."""
        if isinstance(ext, str):
            ext = ext.partition("/")[0]
        return super().__new__(cls, ext, project, key)

    def to_json(self) -> dict[str, str]:
        """Return ``{"ext", "project", "key"}``."""
        return {"ext": self.ext, "project": self.project, "key": self.key}


def _bad(where: str, what: str) -> HandoffError:
    return HandoffError("schema", f"{where} {what}", reason="record_shape")


def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _bad(where, "is not an object")
    return value


def _str(obj: Mapping[str, Any], name: str, where: str, *, required: bool = False) -> str | None:
    value = obj.get(name)
    if value is None and name not in obj:
        if required:
            raise _bad(where, f"lacks the required member {name!r}")
        return None
    if not isinstance(value, str):
        raise _bad(f"{where}.{name}", "is not a string")
    return value


def _strs(obj: Mapping[str, Any], name: str, where: str) -> tuple[str, ...] | None:
    if name not in obj:
        return None
    value = obj[name]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise _bad(f"{where}.{name}", "is not an array of strings")
    return tuple(value)


def _extra(obj: Mapping[str, Any], known: frozenset[str]) -> Mapping[str, Any]:
    rest = {k: v for k, v in obj.items() if k not in known}
    return MappingProxyType(rest) if rest else _EMPTY


def _put(out: dict[str, Any], name: str, value: Any) -> None:
    if value is not None:
        out[name] = list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class Authority:
    """``authority`` of a settlement (§5): kind, decider, mandate and chain."""

    kind: str
    decider: str
    under: str | None = None
    chain: tuple[str, ...] | None = None
    representative: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    _KNOWN = frozenset({"kind", "decider", "under", "chain", "representative"})

    @classmethod
    def from_json(cls, value: Any, where: str = "authority") -> Authority:
        """Build from the JSON object; :class:`HandoffError` on a wrong shape."""
        obj = _obj(value, where)
        return cls(
            kind=_str(obj, "kind", where, required=True) or "",
            decider=_str(obj, "decider", where, required=True) or "",
            under=_str(obj, "under", where),
            chain=_strs(obj, "chain", where),
            representative=_str(obj, "representative", where),
            extra=_extra(obj, cls._KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object (unknown members included)."""
        out: dict[str, Any] = {"kind": self.kind, "decider": self.decider}
        _put(out, "under", self.under)
        _put(out, "chain", self.chain)
        _put(out, "representative", self.representative)
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class Evidence:
    """``evidence`` (§5): what was presented, the proposal, the basis and a proof."""

    presented: str | None = None
    proposal: str | None = None
    basis: str | None = None
    proof: str | Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    _KNOWN = frozenset({"presented", "proposal", "basis", "proof"})

    @classmethod
    def from_json(cls, value: Any, where: str = "evidence") -> Evidence:
        """Build from the JSON object; :class:`HandoffError` on a wrong shape."""
        obj = _obj(value, where)
        proof = obj.get("proof")
        if proof is not None and not isinstance(proof, str | Mapping):
            raise _bad(f"{where}.proof", "is neither a string nor an object")
        return cls(
            presented=_str(obj, "presented", where),
            proposal=_str(obj, "proposal", where),
            basis=_str(obj, "basis", where),
            proof=proof,
            extra=_extra(obj, cls._KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object (unknown members included)."""
        out: dict[str, Any] = {}
        _put(out, "presented", self.presented)
        _put(out, "proposal", self.proposal)
        _put(out, "basis", self.basis)
        _put(out, "proof", dict(self.proof) if isinstance(self.proof, Mapping) else self.proof)
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class Target:
    """A relation's target: ``ext``/``project``/``key`` of a family item, or a ``uri``."""

    ext: str | None = None
    project: str | None = None
    key: str | None = None
    uri: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    _KNOWN = frozenset({"ext", "project", "key", "uri"})

    @classmethod
    def from_json(cls, value: Any, where: str = "relation.target") -> Target:
        """Build from the JSON object; :class:`HandoffError` on a wrong shape."""
        obj = _obj(value, where)
        return cls(
            ext=_str(obj, "ext", where),
            project=_str(obj, "project", where),
            key=_str(obj, "key", where),
            uri=_str(obj, "uri", where),
            extra=_extra(obj, cls._KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object (unknown members included)."""
        out: dict[str, Any] = {}
        for name in ("ext", "project", "key", "uri"):
            _put(out, name, getattr(self, name))
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class Relation:
    """``relation`` of a ``related`` record (§7)."""

    kind: str
    target: Target
    active: bool = True
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    _KNOWN = frozenset({"kind", "target", "active"})

    @classmethod
    def from_json(cls, value: Any, where: str = "relation") -> Relation:
        """Build from the JSON object; :class:`HandoffError` on a wrong shape."""
        obj = _obj(value, where)
        active = obj.get("active", True)
        if not isinstance(active, bool):
            raise _bad(f"{where}.active", "is not a boolean")
        if "target" not in obj:
            raise _bad(where, "lacks the required member 'target'")
        return cls(
            kind=_str(obj, "kind", where, required=True) or "",
            target=Target.from_json(obj["target"], f"{where}.target"),
            active=active,
            extra=_extra(obj, cls._KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object (unknown members included)."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "target": self.target.to_json(),
            "active": self.active,
        }
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class About:
    """``about`` of a note (§7): ``key`` of a keyed item, or a ``quote``."""

    key: str | None = None
    quote: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    _KNOWN = frozenset({"key", "quote"})

    @classmethod
    def from_json(cls, value: Any, where: str = "about") -> About:
        """Build from the JSON object; :class:`HandoffError` on a wrong shape."""
        obj = _obj(value, where)
        return cls(
            key=_str(obj, "key", where),
            quote=_str(obj, "quote", where),
            extra=_extra(obj, cls._KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object (unknown members included)."""
        out: dict[str, Any] = {}
        _put(out, "key", self.key)
        _put(out, "quote", self.quote)
        out.update(self.extra)
        return out


_RECORD_KNOWN = frozenset(
    {
        "ph", "ext", "id", "type", "origin", "by", "key", "project", "ts", "supersedes",
        "terms", "terms_rev", "outcome", "authority", "evidence", "relation", "reason",
        "adopts", "about", "note", "context",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Record:
    """One Handoff record (§4). Build with :meth:`from_json`; check with ``check_record``.

    ``terms`` is kept as the JSON object the extension defines (``text`` always present);
    unknown top-level members are kept in ``extra``.
    """

    ph: str
    ext: str
    id: str
    type: str
    origin: str
    by: str
    key: str
    project: str
    ts: str
    supersedes: tuple[str, ...] = ()
    terms: Mapping[str, Any] | None = None
    terms_rev: int | None = None
    outcome: str | None = None
    authority: Authority | None = None
    evidence: Evidence | None = None
    relation: Relation | None = None
    reason: str | None = None
    adopts: tuple[str, ...] | None = None
    about: About | None = None
    note: str | None = None
    context: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)
    has_supersedes: bool = field(default=False, compare=False, repr=False)

    @property
    def item(self) -> ItemId:
        """The item this record is about: (extension name, project, key)."""
        return ItemId(self.ext.partition("/")[0], self.project, self.key)

    @classmethod
    def from_json(cls, value: Any) -> Record:
        """Build a record from its parsed JSON object (shape only; rules come later)."""
        obj = _obj(value, "the record")
        where = "the record"
        required = {n: _str(obj, n, where, required=True) or "" for n in _REQUIRED}
        rev = obj.get("terms_rev")
        if rev is not None and (not isinstance(rev, int) or isinstance(rev, bool)):
            raise _bad("the record.terms_rev", "is not an integer")
        terms = obj.get("terms")
        if terms is not None and not isinstance(terms, Mapping):
            raise _bad("the record.terms", "is not an object")
        return cls(
            **required,
            supersedes=_strs(obj, "supersedes", where) or (),
            terms=MappingProxyType(dict(terms)) if terms is not None else None,
            terms_rev=rev,
            outcome=_str(obj, "outcome", where),
            authority=Authority.from_json(obj["authority"]) if "authority" in obj else None,
            evidence=Evidence.from_json(obj["evidence"]) if "evidence" in obj else None,
            relation=Relation.from_json(obj["relation"]) if "relation" in obj else None,
            reason=_str(obj, "reason", where),
            adopts=_strs(obj, "adopts", where),
            about=About.from_json(obj["about"]) if "about" in obj else None,
            note=_str(obj, "note", where),
            context=_str(obj, "context", where),
            extra=_extra(obj, _RECORD_KNOWN),
            has_supersedes="supersedes" in obj,
        )

    def to_json(self) -> dict[str, Any]:
        """Return the record's JSON object, unknown members included."""
        out: dict[str, Any] = {n: getattr(self, n) for n in _REQUIRED}
        if self.supersedes or self.has_supersedes:
            out["supersedes"] = list(self.supersedes)
        if self.terms is not None:
            out["terms"] = dict(self.terms)
        _put(out, "terms_rev", self.terms_rev)
        _put(out, "outcome", self.outcome)
        if self.authority is not None:
            out["authority"] = self.authority.to_json()
        if self.evidence is not None:
            out["evidence"] = self.evidence.to_json()
        if self.relation is not None:
            out["relation"] = self.relation.to_json()
        _put(out, "reason", self.reason)
        _put(out, "adopts", self.adopts)
        if self.about is not None:
            out["about"] = self.about.to_json()
        _put(out, "note", self.note)
        _put(out, "context", self.context)
        out.update(self.extra)
        return out


_REQUIRED = ("ph", "ext", "id", "type", "origin", "by", "key", "project", "ts")
