"""Requester-side builders: ``raised``, ``amended`` and ``note`` records, checked as built.

They match :func:`handoff.make_settlement` on the principal side: an embedder names the
item, the terms and who sends it, and gets a record that the requester conformance class
(§12) accepts against what the registry holds, instead of copying a dozen members from
an example. Ids default to a digest of the content (never of the time), so building the
same record twice gives the same id, a repeat rather than a rewrite.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ._canonical import canonical
from ._check import check_record
from ._config import Extension
from ._conformance import check_requester_record
from ._fold import Registry
from ._records import ItemId
from ._time import Time, rfc3339
from .errors import HandoffError

__all__ = ["make_amended", "make_note", "make_raised"]


def _extension(registry: Registry, item: ItemId) -> Extension:
    if not isinstance(item, ItemId) or not isinstance(registry, Registry):
        raise HandoffError("usage", "a builder needs a Registry and an ItemId", reason="type")
    found = [e for e in registry.extensions if e.name == item.ext]
    if not found:
        raise HandoffError(
            "build", f"the registry implements no extension {item.ext!r}", reason="unknown_ext"
        )

    # several versions implemented: build with the highest (numerically, 0.10 above 0.9)
    def version(extension: Extension) -> tuple[int, ...]:
        return tuple(int(p) for p in extension.version.split(".") if p.isdigit())

    chosen: Extension = max(found, key=version)
    return chosen


def _base(
    registry: Registry, item: ItemId, type_: str, origin: str, by: str, ts: Time
) -> dict[str, Any]:
    return {
        "ph": "0.3",
        "ext": _extension(registry, item).ext,
        "type": type_,
        "origin": origin,
        "by": by,
        "key": item.key,
        "project": item.project,
        "ts": rfc3339(ts, "ts"),
    }


def _finish(record: dict[str, Any], prefix: str, record_id: str | None) -> dict[str, Any]:
    if record_id is None:
        content = {k: v for k, v in record.items() if k != "ts"}
        record_id = prefix + hashlib.sha256(canonical(content)).hexdigest()[:24]
    record["id"] = record_id
    return {k: record[k] for k in sorted(record)}


def _terms(terms: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(terms, Mapping):
        raise HandoffError("build", "terms must be an object", reason="terms")
    return dict(terms)


def make_raised(
    registry: Registry,
    item: ItemId,
    terms: Mapping[str, Any],
    *,
    by: str,
    ts: Time,
    record_id: str | None = None,
) -> dict[str, Any]:
    """Build the ``raised`` record that opens ``item`` with ``terms`` (``terms_rev`` 1).

    Raises :class:`HandoffError` when the record would not be admitted (terms the
    extension refuses, ``by`` not a requester of the project) or the key is already
    raised (``conformance``/``key_reused``: amend instead). ``ts`` is RFC 3339 text or an
    aware :class:`datetime.datetime` (written as UTC); a naive datetime raises
    :class:`~handoff.HandoffUsageError` ``usage``/``time``.
    """
    record = _base(registry, item, "raised", "requester", by, ts)
    record.update(terms=_terms(terms), terms_rev=1)
    record = _finish(record, "n-", record_id)
    check_requester_record(record, registry)
    return record


def make_amended(
    registry: Registry,
    item: ItemId,
    terms: Mapping[str, Any],
    *,
    by: str,
    ts: Time,
    record_id: str | None = None,
) -> dict[str, Any]:
    """Build the ``amended`` record that replaces ``item``'s current terms with ``terms``.

    ``terms_rev`` is one above the highest held and ``supersedes`` names the current need,
    as a conforming requester must; refused for an item not raised, withdrawn or
    ``conflicted``. ``ts`` is RFC 3339 text or an aware :class:`datetime.datetime`
    (written as UTC); a naive datetime raises :class:`~handoff.HandoffUsageError`
    ``usage``/``time``.
    """
    state = registry.state(item)
    if state.state == "conflicted":
        raise HandoffError(
            "build", f"{item.key!r} is conflicted: resolve it before amending", reason="conflicted"
        )
    if state.need is None:
        raise HandoffError("build", f"{item.key!r} is not raised", reason="need_missing")
    record = _base(registry, item, "amended", "requester", by, ts)
    record.update(
        terms=_terms(terms),
        terms_rev=(state.held_terms_rev or 0) + 1,
        supersedes=[state.need],
    )
    record = _finish(record, "n-", record_id)
    check_requester_record(record, registry)
    return record


def make_note(
    registry: Registry,
    item: ItemId,
    text: str,
    *,
    by: str,
    ts: Time,
    origin: str = "requester",
    record_id: str | None = None,
) -> dict[str, Any]:
    """Build a ``note`` about ``item`` carrying ``text`` (it changes no register, §7).

    ``origin`` is the role ``by`` holds (``requester``, ``principal``, ``agent`` or an
    extension role such as ``registrar``); the record is checked for admission.
    ``ts`` is RFC 3339 text or an aware :class:`datetime.datetime` (written as UTC); a naive
    datetime raises :class:`~handoff.HandoffUsageError` ``usage``/``time``.
    """
    if not isinstance(text, str) or not text:
        raise HandoffError("build", "a note needs its text", reason="note")
    record = _base(registry, item, "note", origin, by, ts)
    record.update(about={"key": item.key}, note=text)
    record = _finish(record, "note-", record_id)
    check_record(record, roles=registry.roles, extensions=registry.extensions)
    return record
