"""Folding records into item state (§6, §7, §10): the :class:`Registry` and :func:`fold`.

The registry holds every admitted record once per (item, id). State is computed from
what is held, never from arrival order or ``ts``, so any permutation of the same records,
with any of them delivered more than once, gives the same state and the same conflicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain
from types import MappingProxyType
from typing import Any

from ._canonical import canonical, digest, identity
from ._check import admit_fast, check_record
from ._config import Extension, ExtensionRegistry, Roles
from ._json import copy_json, parse_line, parse_stored, text_size
from ._records import ItemId, Record
from .errors import HandoffError

__all__ = ["Added", "Conflict", "ItemState", "Registry", "RelationState", "fold"]


@dataclass(frozen=True)
class Conflict:
    """Something a receiver holds that the owners' rules say should not happen (reported).

    ``kind`` is ``same_id`` (one id, different contents in one owner's slot: every version
    is held, none is chosen, and a rewritten need or settlement makes the item
    ``conflicted``), ``multiple_heads`` (several unsuperseded records in one register:
    one was chosen),
    ``supersedes_cycle`` (every record of a register is superseded: one was chosen), or
    ``id_reused`` (one id in several items, or used by several owners within one item:
    each keeps its own record), ``terms_rev_not_raised`` (an amended whose ``terms_rev``
    is not above a need record it supersedes), ``outcome_not_offered`` or
    ``outcome_unchecked`` (a settlement whose outcome the held terms do not offer: it does
    not stand). ``register`` is
    ``need``, ``settlement``, ``relation`` or ``None``; ``ids`` lists the record ids (or,
    for ``same_id``, the digests of the versions) and ``chosen`` the one kept (``None``
    for ``same_id`` and ``id_reused``).
    """

    kind: str
    item: ItemId
    register: str | None
    ids: tuple[str, ...]
    chosen: str | None

    def to_json(self) -> dict[str, Any]:
        """Return the JSON form used in vectors and ``handoff state --json``."""
        out: dict[str, Any] = {"kind": self.kind, "item": self.item.to_json()}
        if self.register is not None:
            out["register"] = self.register
        out["ids"] = list(self.ids)
        if self.chosen is not None:
            out["chosen"] = self.chosen
        return out


@dataclass(frozen=True)
class RelationState:
    """An active relation of an item: its kind, target and the record that holds it."""

    kind: str
    target: Mapping[str, Any]
    record: str

    def to_json(self) -> dict[str, Any]:
        """Return ``{"kind", "target", "record"}``."""
        return {"kind": self.kind, "target": dict(self.target), "record": self.record}


@dataclass(frozen=True)
class ItemState:
    """The current state of one item (§6) and what else the receiver holds about it.

    ``state`` is ``open``, ``settled``, ``withdrawn``, ``unknown`` or ``conflicted`` (a
    need, settlement or relation id was sent with two contents: the terms and the outcome
    are unknown until the owner resolves it); ``outcome``,
    ``stale`` and ``authority`` describe the current settlement when settled;
    ``need_withdrawn`` is reported in every state. ``terms``/``terms_rev`` are those of
    the current need record, ``held_terms_rev`` the highest ``terms_rev`` held in the need
    register. ``claims``, ``adopted`` (claims the current settlement adopts), ``relations``
    and ``notes`` change no register.
    """

    item: ItemId
    state: str
    outcome: str | None = None
    stale: bool = False
    need_withdrawn: bool = False
    policy: str = "keep"
    need: str | None = None
    settlement: str | None = None
    authority: str | None = None
    terms: Mapping[str, Any] | None = None
    terms_rev: int | None = None
    held_terms_rev: int | None = None
    settled_terms_rev: int | None = None
    claims: tuple[str, ...] = ()
    adopted: tuple[str, ...] = ()
    relations: tuple[RelationState, ...] = ()
    notes: tuple[str, ...] = ()
    conflicts: tuple[Conflict, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """Return the JSON form used in vectors and ``handoff state --json``."""
        out: dict[str, Any] = {**self.item.to_json(), "state": self.state}
        for name in ("outcome", "authority", "settled_terms_rev"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        out["stale"] = self.stale
        out["need_withdrawn"] = self.need_withdrawn
        out["policy"] = self.policy
        for name in ("need", "settlement", "terms_rev", "held_terms_rev"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.terms is not None:
            out["terms"] = dict(self.terms)
        out["claims"] = list(self.claims)
        out["adopted"] = list(self.adopted)
        out["relations"] = [r.to_json() for r in self.relations]
        out["notes"] = list(self.notes)
        out["conflicts"] = [c.to_json() for c in self.conflicts]
        return out


@dataclass(frozen=True)
class Added:
    """What :meth:`Registry.add` did with one record.

    ``status`` is ``accepted`` (new), ``duplicate`` (identical content already held:
    nothing changed), ``conflict`` (same id, different content: both held, the item
    ``conflicted`` when a register's id was rewritten) or ``ignored`` (an extension or
    version this receiver does not implement: ``why`` says which). ``state`` is the
    item's new state (``None`` when ignored) and ``conflicts`` the conflicts of that
    item or id that this record introduced.
    """

    status: str
    item: ItemId | None
    state: ItemState | None
    conflicts: tuple[Conflict, ...] = ()
    why: str | None = None

    def __bool__(self) -> bool:
        """Refused: what :meth:`Registry.add` did is a report, not a success; read ``.status``."""
        raise TypeError("handoff Added is a report; read .status")


# --- per-item storage ---------------------------------------------------------------------

_NEED = frozenset({"raised", "amended", "withdrawn"})
_SETTLEMENT = frozenset({"settled", "reopened"})


def _no_literals(source: str | bytes | None) -> bool:
    """Whether a record's text certainly holds no ``true`` or ``false`` value."""
    if isinstance(source, str):
        return "true" not in source and "false" not in source
    if isinstance(source, bytes):
        return b"true" not in source and b"false" not in source
    return False


_SORTED = json.JSONEncoder(sort_keys=True, ensure_ascii=False, check_circular=False).encode
_TYPE_NAMES = {t: t for t in (*_NEED, *_SETTLEMENT, "claimed", "note", "related")}
_REGISTER_SLOT = dict.fromkeys(_NEED, "need") | dict.fromkeys(_SETTLEMENT, "settlement")
# the slots whose rewrite makes an item conflicted: the two registers and the relations
# (owned by the requester and the principal side); a claimant's or author's own slot
# (claims, notes) cannot make another owner's item conflicted
_SLOT_REGISTER = {"need": "need", "settlement": "settlement", "related": "relation"}


def _slot(obj: Mapping[str, Any]) -> str:
    """Who owns a record's id within its item: a register, or a claimant's or author's own.

    Two contents of one id are a ``same_id`` conflict only within one slot, so a record of
    another owner that reuses an id (a requester's need, an agent's claim or note reusing
    a settlement's id) never touches the owner's record: both are held, and the reuse is
    reported as ``id_reused``.
    """
    type_ = obj["type"]
    if type_ in _NEED:
        return "need"
    if type_ in _SETTLEMENT:
        return "settlement"
    if type_ == "related":
        return f"related/{obj['origin']}"
    return f"{type_}/{obj['by']}"


def _repeat(items: dict[Any, _Item], obj: dict[str, Any], line: str | bytes) -> bool:
    """Whether ``obj`` repeats the record first held under its item and id (JCS-equal)."""
    ext, project, key, rid = obj.get("ext"), obj.get("project"), obj.get("key"), obj.get("id")
    if not (type(ext) is str and type(project) is str and type(key) is str and type(rid) is str):
        return False
    data = items.get((ext.partition("/")[0], project, key))
    held = data.records.get(rid) if data is not None else None
    if held is None:
        return False
    incoming = _Held.__new__(_Held)
    incoming.source, incoming._body = line, obj
    return held.same_as(incoming)


def _version(extension: Extension) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in extension.version.split("."))
    except ValueError:
        return ()


class _Held:
    """One held record: what the fold reads of every record, and its full body on demand.

    Records that arrived as text keep only the text (one string) plus the four members the
    fold reads for every record, so a registry of a million records stays small; the body
    is parsed again only for the few records state computation looks into.
    """

    __slots__ = ("_body", "id", "source", "supersedes", "terms_rev", "type")

    def __init__(self, obj: dict[str, Any], source: str | bytes | None) -> None:
        self.id: str = obj["id"]
        # one shared string per record type: a million held records keep no copies
        type_ = obj["type"]
        self.type: str = _TYPE_NAMES.get(type_, type_)
        self.supersedes: list[str] | None = obj.get("supersedes")
        self.terms_rev: int | None = obj.get("terms_rev")
        self.source = source
        self._body: dict[str, Any] | None = obj if source is None else None

    def body(self) -> dict[str, Any]:
        if self._body is None:
            assert self.source is not None
            # the text passed the strict parse when it was admitted, so the plain parser
            # gives the very same object (no duplicate members, numbers in range)
            self._body = json.loads(self.source)
        return self._body

    def slot(self) -> tuple[str, str]:
        """``(id, slot)``: the key under which versions of this record compete."""
        return (self.id, _REGISTER_SLOT.get(self.type) or _slot(self.body()))

    def same_as(self, other: _Held) -> bool:
        if self.source is not None and self.source == other.source:
            return True
        left, right = self.body(), other.body()
        if left != right:  # Python equality is coarser than JCS (True == 1): never finer
            return False
        if _no_literals(self.source) and _no_literals(other.source):
            # without true or false anywhere in either text, Python equality is JCS
            # equality: 1 == 1.0 and -0.0 == 0 are equal in JCS too
            return True
        # sorted-key JSON tells True from 1 as JCS does (C speed); only text that differs
        # there (1.0 against 1) needs JCS itself
        return _SORTED(left) == _SORTED(right) or canonical(left) == canonical(right)


class _Item:
    """The records of one item.

    ``records`` maps each id to the record of the first owner that used it (the common
    case, and the bulk path's only lookup); ``others`` holds, by ``(id, slot)``, the records
    of other owners reusing a held id. Which of two owners lands in which mapping depends on
    arrival order, but every reader takes both together, so state does not.
    """

    __slots__ = ("extension", "others", "records", "signed", "variants")

    def __init__(self, extension: Extension) -> None:
        self.extension = extension
        self.records: dict[str, _Held] = {}
        self.others: dict[tuple[str, str], _Held] = {}
        self.variants: dict[tuple[str, str], dict[str, _Held]] = {}
        # signature variants of one record (same identity, other proof bytes) by digest
        self.signed: dict[tuple[str, str], dict[str, _Held]] = {}

    def held(self) -> list[_Held]:
        """Every record held: each (id, slot), and every version of a rewritten one."""
        out = [*self.records.values(), *self.others.values()]
        if self.variants:
            present = {id(record) for record in out}
            for versions in self.variants.values():
                out += [v for v in versions.values() if id(v) not in present]
        return out

    def put(self, record: _Held) -> str:
        rid = record.id
        first = self.records.get(rid)
        if first is None:
            self.records[rid] = record
            return "accepted"
        key = record.slot()
        if first.slot() == key:
            return self._version(key, first, record, self.records, rid)
        other = self.others.get(key)
        if other is None:
            self.others[key] = record
            return "accepted"
        return self._version(key, other, record, self.others, key)

    def _version(self, key: tuple[str, str], held: _Held, record: _Held, into: Any, at: Any) -> str:
        if held is record or held.same_as(record):
            return "duplicate"
        versions = self.variants.get(key)
        known = versions if versions is not None else {identity(held.body()): held}
        new = identity(record.body())
        same = known.get(new)
        if same is not None:
            # the same record up to its proof's signature bytes (or, unsigned, its ts): a
            # repeat. Every signature variant is kept for the evidence verdict (the best
            # counts); the fold holds the lowest digest, whichever arrived first
            group = self.signed.get(key)
            if group is None:
                group = self.signed[key] = {digest(same.body()): same}
            group.setdefault(digest(record.body()), record)
            if digest(record.body()) < digest(same.body()):
                known[new] = record
                if into[at] is same:
                    into[at] = record
            return "duplicate"
        # an id names one content: every version is held and none replaces another
        if versions is None:
            versions = self.variants[key] = known
        versions[new] = record
        return "conflict"


def _heads(records: list[_Held]) -> tuple[list[_Held], bool]:
    # ids of other registers or items in supersedes never match a record of this list,
    # so they need no filtering.
    superseded = set(chain.from_iterable([r.supersedes for r in records if r.supersedes]))
    heads = [r for r in records if r.id not in superseded]
    if not heads:
        return list(records), True
    return heads, False


def _need_key(record: _Held) -> tuple[int, int, str]:
    # withdrawn first, then the highest terms_rev, then the lowest digest.
    withdrawn = 0 if record.type == "withdrawn" else 1
    return (withdrawn, -(record.terms_rev or 0), digest(record.body()))


def _settlement_key(record: _Held) -> tuple[int, int, str]:
    # reopened first (the item stays in view), then the highest terms_rev, then digest.
    reopened = 0 if record.type == "reopened" else 1
    return (reopened, -(record.terms_rev or 0), digest(record.body()))


def _relation_key(record: _Held) -> tuple[int, str]:
    # a retraction first, then the lowest digest.
    return (1 if record.body()["relation"]["active"] else 0, digest(record.body()))


def _choose(
    item: ItemId,
    register: str,
    records: list[_Held],
    key: Any,
    conflicts: list[Conflict],
) -> _Held | None:
    if not records:
        return None
    heads, cycle = _heads(records)
    if len(heads) == 1:
        return heads[0]
    chosen: _Held = min(heads, key=key)
    conflicts.append(
        Conflict(
            "supersedes_cycle" if cycle else "multiple_heads",
            item,
            register,
            tuple(sorted(r.id for r in heads)),
            chosen.id,
        )
    )
    return chosen


_TARGET_MEMBERS = ("ext", "project", "key", "uri")


def _target_key(target: Mapping[str, Any]) -> str:
    known = {k: target[k] for k in _TARGET_MEMBERS if k in target}
    return json.dumps(known, sort_keys=True, ensure_ascii=False)


def _canonical_copy(value: Any) -> Any:
    """A deep copy with every integral number an ``int``, as JCS writes it (``1.0`` is 1).

    Two records equal in JCS are one record; showing the canonical number means what is
    shown never depends on which of the two spellings arrived first.
    """
    if isinstance(value, dict):
        return {k: _canonical_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical_copy(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    return value


def _not_offered(
    data: _Item, settlement: _Held | None, need: list[_Held], extensions: ExtensionRegistry
) -> tuple[str, str] | None:
    """``(kind, id)`` when ``settlement``'s outcome is not one the held terms offered.

    The terms at its revision are checked, each with the offered check of the extension
    version that made them (ours). When the item holds terms but none at that revision (a
    settlement ahead of everything held), its outcome stands only if some held terms offer
    it: otherwise ``outcome_unchecked``. Without any terms held only its form is checked.
    """
    if settlement is None or settlement.type != "settled":
        return None
    with_terms = [r for r in need if r.type != "withdrawn"]
    if not with_terms:
        return None
    rev = settlement.terms_rev
    seen = [r for r in with_terms if r.terms_rev == rev]
    body = settlement.body()

    def offered(record: _Held) -> bool:
        made = record.body()
        extension = extensions._by_ext.get(made["ext"], data.extension)
        check = extension.offered
        return check is None or check(body, made["terms"]) is None

    if seen:
        return None if any(offered(r) for r in seen) else ("outcome_not_offered", settlement.id)
    return None if any(offered(r) for r in with_terms) else ("outcome_unchecked", settlement.id)


def _not_raised(item: ItemId, need: list[_Held], conflicts: list[Conflict]) -> None:
    """Report each amended whose ``terms_rev`` is not above a need record it supersedes."""
    revs = {r.id: r.terms_rev or 0 for r in need if r.type != "withdrawn"}
    for record in need:
        if record.type != "amended" or not record.supersedes:
            continue
        if any(revs.get(old, 0) >= (record.terms_rev or 0) for old in record.supersedes):
            conflicts.append(Conflict("terms_rev_not_raised", item, "need", (record.id,), None))


def _compute(item: ItemId, data: _Item, extensions: ExtensionRegistry) -> ItemState:
    need: list[_Held] = []
    settlement: list[_Held] = []
    claims: list[str] = []
    notes: list[str] = []
    relations: dict[tuple[str, str], list[_Held]] = {}
    for record in data.held():
        type_ = record.type
        if type_ in _NEED:
            need.append(record)
        elif type_ in _SETTLEMENT:
            settlement.append(record)
        elif type_ == "claimed":
            claims.append(record.id)
        elif type_ == "note":
            notes.append(record.id)
        else:
            rel = record.body()["relation"]
            relations.setdefault((rel["kind"], _target_key(rel["target"])), []).append(record)
    conflicts: list[Conflict] = []
    rewritten: set[str] = set()
    for rid, slot in sorted(data.variants):
        versions = data.variants[(rid, slot)]
        register = _SLOT_REGISTER.get(slot.partition("/")[0])
        if register is not None:
            rewritten.add(register)
        digests = tuple(sorted(digest(v.body()) for v in versions.values()))
        conflicts.append(Conflict("same_id", item, register, digests, None))
    for rid in sorted({rid for rid, _ in data.others}):
        conflicts.append(Conflict("id_reused", item, None, (rid,), None))
    # a claim sent with two contents is never adopted: which one was confirmed is unknown
    rewritten_claims = {rid for rid, slot in data.variants if slot.startswith("claimed/")}
    if rewritten:
        # an owner sent one id with two contents: which terms (or which settlement) it
        # meant is unknown, so neither is shown and nothing is chosen for it
        if "need" in rewritten:
            need = []
        if "settlement" in rewritten:
            settlement = []
        if "relation" in rewritten:
            relations = {}
    current_need = _choose(item, "need", need, _need_key, conflicts)
    current_settlement = _choose(item, "settlement", settlement, _settlement_key, conflicts)
    active: list[RelationState] = []
    for group_key in sorted(relations):
        current = _choose(item, "relation", relations[group_key], _relation_key, conflicts)
        if current is not None and current.body()["relation"]["active"]:
            rel = current.body()["relation"]
            target = rel["target"]
            known = {k: target[k] for k in _TARGET_MEMBERS if k in target}
            active.append(RelationState(rel["kind"], MappingProxyType(known), current.id))
    _not_raised(item, need, conflicts)
    revs = [r.terms_rev for r in need if r.terms_rev is not None]
    held_rev = max(revs) if revs else None
    need_withdrawn = current_need is not None and current_need.type == "withdrawn"
    terms_source = current_need
    if current_need is not None and current_need.type == "withdrawn":
        with_terms = [r for r in need if r.type != "withdrawn"]
        terms_source = min(with_terms, key=_need_key) if with_terms else None
    terms_body = terms_source.body() if terms_source is not None else None
    policy = data.extension.policy
    outcome = authority = settled_rev = None
    adopted: tuple[str, ...] = ()
    stale = False
    refused = _not_offered(data, current_settlement, need, extensions)
    if refused is not None:
        # the terms it was made against are held and never offered its outcome: it does
        # not stand (it stays the current settlement, so a new one must supersede it)
        conflicts.append(Conflict(refused[0], item, "settlement", (refused[1],), None))
    if refused is None and current_settlement is not None and current_settlement.type == "settled":
        state = "settled"
        body = current_settlement.body()
        outcome = body["outcome"]
        authority = body["authority"]["kind"]
        settled_rev = current_settlement.terms_rev
        stale = held_rev is not None and settled_rev is not None and settled_rev < held_rev
        if not stale and terms_body is not None:
            # ours: terms held at the settled revision other than the ones shown mean the
            # revision was reused for other terms; which were settled cannot be told from
            # the revision, so the settlement does not stand for what is shown
            shown = canonical(terms_body["terms"])
            stale = any(
                canonical(r.body()["terms"]) != shown
                for r in need
                if r.terms_rev == settled_rev and r.type != "withdrawn"
            )
        adopted = tuple(sorted(set(body.get("adopts", ())) & set(claims) - rewritten_claims))
    elif current_need is None:
        state = "unknown"
    elif need_withdrawn:
        state = "open" if policy == "keep" else "withdrawn"
    else:
        state = "open"
    if rewritten:
        state, outcome, stale, terms_body = "conflicted", None, False, None
    conflicts.sort(key=lambda c: (c.kind, c.register or "", c.ids))
    return ItemState(
        item=item,
        state=state,
        outcome=outcome,
        stale=stale,
        need_withdrawn=need_withdrawn,
        policy=policy,
        need=current_need.id if current_need is not None else None,
        settlement=current_settlement.id if current_settlement is not None else None,
        authority=authority,
        terms=MappingProxyType(_canonical_copy(terms_body["terms"])) if terms_body else None,
        terms_rev=terms_body.get("terms_rev") if terms_body else None,
        held_terms_rev=held_rev,
        settled_terms_rev=settled_rev,
        claims=tuple(sorted(set(claims))),
        adopted=adopted,
        relations=tuple(active),
        notes=tuple(sorted(set(notes))),
        conflicts=tuple(conflicts),
    )


# --- the registry ---------------------------------------------------------------------------


class Registry:
    """An incremental receiver: add records one at a time, ask for state at any time.

    ``roles`` is the deployment's configuration; ``extensions`` the extensions this
    receiver implements. A rejected record raises :class:`HandoffError` and changes
    nothing; an ignored one is counted; everything else is held and folded.
    """

    def __init__(self, *, roles: Roles, extensions: ExtensionRegistry) -> None:
        self.roles = roles
        self.extensions = extensions
        self._items: dict[ItemId, _Item] = {}
        self._cache: dict[ItemId, ItemState] = {}
        # record id -> an item holding it, and ids held by several items; the bulk path
        # (add_lines) skips this index and drops it, and it is rebuilt when next needed
        self._first_item: dict[str, Any] | None = {}
        self._reused: dict[str, set[Any]] = {}
        self._ignored: dict[str, int] = {}
        self._role_changed: list[dict[str, Any]] = []
        self._rejected: list[dict[str, Any]] = []

    def note_role_changed(self, where: Any, error: HandoffError) -> None:
        """Report a record the current roles refuse but that was held before (§3, ours).

        ``where`` says which record (a line number of a file, the id of a store's record);
        ``error`` is the refusal.
        The record is not folded: who held which role when it was sent cannot be known
        from a plain file.
        """
        self._role_changed.append({"at": where, "code": error.code, "reason": error.reason})

    def role_changed(self) -> list[dict[str, Any]]:
        """The records reported by :meth:`note_role_changed`, in the order reported."""
        return [dict(entry) for entry in self._role_changed]

    def note_rejected(self, where: Any, error: HandoffError) -> None:
        """Report a held record that could not be read back (a store row, ours).

        A store reads every other row: one refused row (over the size limit, written
        before the limit held on the canonical form) never makes the store unreadable.
        """
        self._rejected.append({"at": where, "code": error.code, "reason": error.reason})

    def rejected(self) -> list[dict[str, Any]]:
        """The records reported by :meth:`note_rejected`, in the order reported."""
        return [dict(entry) for entry in self._rejected]

    def add(self, record: Record | Mapping[str, Any] | str | bytes) -> Added:
        """Admit and fold one record; return what happened and the item's new state.

        ``record`` may be a :class:`Record`, its JSON object, or one line of JSON text.
        """
        obj = self._object(record)
        item, status, why = self._add(obj)
        rid = obj.get("id")
        if item is None:
            return Added(status, None, None, why=why)
        state = self.state(item)
        new: tuple[Conflict, ...] = ()
        if status == "conflict":
            new = tuple(c for c in state.conflicts if c.kind == "same_id")
        elif status == "accepted":
            new = tuple(c for c in state.conflicts if rid in c.ids)
            if rid in self._reused:
                new += (self._reuse_conflict(rid),)
        return Added(status, item, state, new, why)

    def add_many(self, records: Iterable[Record | Mapping[str, Any] | str | bytes]) -> None:
        """Admit and fold many records; state is computed lazily on request.

        Stops at the first rejected record, raising its :class:`HandoffError` (records
        before it stay held).
        """
        for record in records:
            self._add(self._object(record))

    def add_lines(self, lines: Iterable[str | bytes], *, roles: Roles | None = None) -> None:
        """Like :meth:`add_many` for JSON lines (the fast path; parsing is strict).

        ``roles``: admit under these roles instead of the registry's (a store reads each
        record under the roles it was admitted under, never under today's).
        """
        self._add_lines(lines, roles, stored=False)

    def _add_lines(
        self, lines: Iterable[str | bytes], roles: Roles | None, *, stored: bool
    ) -> None:
        """:meth:`add_lines`; ``stored``: rows a store holds, under their size rule
        (``parse_stored``)."""
        extensions, put = self.extensions, self._put
        parse: Callable[[Any], dict[str, Any]] = parse_stored if stored else parse_line
        size: Callable[[Any], int] = len if stored else text_size
        # a repeat of a record this registry admitted under these very roles is the same
        # record: admitting it again could only give the same answer, so it is skipped
        repeats = roles is None or roles is self.roles
        roles = self.roles if roles is None else roles
        items, cache = self._items, self._cache
        self._first_item = None
        names: dict[str, str] = {}
        for line in lines:
            obj = parse(line)
            if repeats and items and _repeat(items, obj, line):
                continue
            found = admit_fast(obj, roles, extensions, size(line), stored)
            if isinstance(found, str):
                self._ignored[found] = self._ignored.get(found, 0) + 1
                continue
            # the common case inline: a new id of an item whose extension is known
            ext = obj["ext"]
            name = names.get(ext)
            if name is None:
                name = names[ext] = ext[: ext.index("/")]
            item: Any = (name, obj["project"], obj["key"])
            data = items.get(item)
            rid = obj["id"]
            if data is None or data.extension is not found or rid in data.records or cache:
                put(obj, found, line, False)
                continue
            data.records[rid] = _Held(obj, line)

    def _object(self, record: Record | Mapping[str, Any] | str | bytes) -> dict[str, Any]:
        if isinstance(record, Record):
            return record.to_json()
        if isinstance(record, str | bytes):
            return parse_line(record)
        if isinstance(record, Mapping):
            return record if isinstance(record, dict) else dict(record)
        raise HandoffError("parse", "a record must be a Record, an object or a JSON line")

    def _add(self, obj: dict[str, Any]) -> tuple[ItemId | None, str, str | None]:
        verdict = check_record(obj, roles=self.roles, extensions=self.extensions)
        if verdict.extension is None:
            why = verdict.why or ""
            self._ignored[why] = self._ignored.get(why, 0) + 1
            return None, "ignored", verdict.why
        # hold a private copy: the caller's object may change after this call
        obj = copy_json(obj)
        status = self._put(obj, verdict.extension)
        return ItemId(obj["ext"].partition("/")[0], obj["project"], obj["key"]), status, None

    def _put(
        self,
        obj: dict[str, Any],
        extension: Extension,
        source: str | bytes | None = None,
        track: bool = True,
    ) -> str:
        ext = obj["ext"]
        # a plain tuple hashes and compares like the ItemId NamedTuple, and is cheaper
        item: Any = (ext[: ext.index("/")], obj["project"], obj["key"])
        data = self._items.get(item)
        if data is None:
            data = self._items[item] = _Item(extension)
        elif extension is not data.extension and (_version(extension), extension.version) > (
            _version(data.extension),
            data.extension.version,
        ):
            # several implemented versions of one extension: the highest one's policy
            # applies, whatever the arrival order.
            data.extension = extension
            self._cache.pop(item, None)
        rid = obj["id"]
        if rid not in data.records:
            data.records[rid] = _Held(obj, source)
            status = "accepted"
        else:
            # a second record under a held id: keep the parsed object at hand, since
            # telling a repeat from a rewrite reads it
            incoming = _Held(obj, source)
            incoming._body = obj
            status = data.put(incoming)
            if status == "duplicate":
                # a repeat may have replaced the held record by its lower-digest variant
                self._cache.pop(item, None)
                return status
        if self._cache:
            self._cache.pop(item, None)
        if track:
            first = self._index().setdefault(rid, item)
            if first != item:
                self._reused.setdefault(rid, {first}).add(item)
        return status

    def _index(self) -> dict[str, Any]:
        if self._first_item is None:
            first: dict[str, Any] = {}
            reused: dict[str, set[Any]] = {}
            for item in sorted(self._items):
                for rid in self._items[item].records:
                    held = first.setdefault(rid, item)
                    if held != item:
                        reused.setdefault(rid, {held}).add(item)
            self._first_item, self._reused = first, reused
        return self._first_item

    def _reuse_conflict(self, rid: str) -> Conflict:
        items = sorted(self._reused[rid])
        return Conflict("id_reused", ItemId(*items[0]), None, (rid,), None)

    def state(self, item: ItemId) -> ItemState:
        """Return the current state of ``item`` (``unknown`` when nothing is held)."""
        cached = self._cache.get(item)
        if cached is not None:
            return cached
        data = self._items.get(item)
        if data is None:
            return ItemState(item=item, state="unknown")
        state = self._cache[item] = _compute(ItemId(*item), data, self.extensions)
        return state

    def states(self) -> dict[ItemId, ItemState]:
        """Return the state of every item held, keyed and sorted by item."""
        return {ItemId(*item): self.state(item) for item in sorted(self._items)}

    def items(self) -> Iterator[ItemId]:
        """Iterate over the items held, sorted."""
        return iter([ItemId(*item) for item in sorted(self._items)])

    def conflicts(self) -> tuple[Conflict, ...]:
        """Every conflict held: per item, plus ids reused across items."""
        found = [c for s in self.states().values() for c in s.conflicts]
        self._index()
        found += [self._reuse_conflict(rid) for rid in sorted(self._reused)]
        return tuple(found)

    def ignored(self) -> dict[str, int]:
        """How many records were consumed without acting, by why."""
        return dict(sorted(self._ignored.items()))

    def records(
        self,
        item: ItemId,
        *,
        id: str | None = None,
        types: Collection[str] | None = None,
        terms_rev: int | None = None,
    ) -> list[dict[str, Any]]:
        """The records held for ``item``, sorted by id, in their canonical (JCS) form.

        Records of different owners that reuse one id are all held (see ``id_reused``),
        and so is every version of an id sent with several contents (``same_id``).
        ``id``, ``types`` and ``terms_rev`` keep only the records with that id, of those
        types and at that terms revision (the others are never copied, so looking one
        record up costs no copy of the rest).
        """
        data = self._items.get(item)
        if data is None:
            return []
        held = data.held()
        if id is not None:
            held = [record for record in held if record.id == id]
        if types is not None:
            held = [record for record in held if record.type in types]
        if terms_rev is not None:
            held = [record for record in held if record.terms_rev == terms_rev]
        bodies = [_canonical_copy(record.body()) for record in held]
        # versions of one id in one slot (same_id) follow each other in the order of
        # their sorted-key JSON: an order of the content alone, never of arrival
        bodies.sort(key=lambda body: (body["id"], _slot(body), _SORTED(body)))
        return bodies

    def signature_variants(self, record: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every held copy of ``record`` that differs from it in signature bytes only.

        ``record`` is one held record (for example the current settlement); the answer
        holds it and each signature variant held (§10, ours), in JCS form, sorted by
        digest: an evidence verdict takes the best of them, so a copy with junk bytes
        never displaces a genuine proof.
        """
        ext = record.get("ext")
        if not isinstance(ext, str):
            return [_canonical_copy(dict(record))]
        project, key = record.get("project"), record.get("key")
        data = (
            self._items.get(ItemId(ext, project, key))
            if isinstance(project, str) and isinstance(key, str)
            else None
        )
        wanted = identity(record)
        found = {digest(record): _canonical_copy(dict(record))}
        if data is not None:
            for (rid, _), group in data.signed.items():
                if rid != record.get("id"):
                    continue
                for dig, held in group.items():
                    if identity(held.body()) == wanted:
                        found.setdefault(dig, _canonical_copy(held.body()))
        return [found[d] for d in sorted(found)]

    def __len__(self) -> int:
        return sum(len(d.records) for d in self._items.values())


def fold(
    records: Iterable[Record | Mapping[str, Any] | str | bytes],
    *,
    roles: Roles,
    extensions: ExtensionRegistry,
) -> dict[ItemId, ItemState]:
    """Fold ``records`` into ``{item: ItemState}`` (§6); raise on the first rejected one."""
    registry = Registry(roles=roles, extensions=extensions)
    registry.add_many(records)
    return registry.states()
