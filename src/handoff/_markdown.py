"""The Acts Markdown binding: a project's state document (``STATE.md``) read and written.

A section (``## Acts`` by default) holds one checkbox line per act, ending in the
registrar's marker ``<!-- act:KEY -->``; after the marker the registrar may write a
status (``_(declined, stale)_``). A trailer line ``<!-- acts:listed KEY ... -->`` records
which keys the registrar last wrote, so that a line that disappears can be told from an
act that was never written. Every other line, inside the section or not, belongs to
whoever wrote it and is kept byte for byte.

:func:`read_state_document` turns a document into the records it implies (document
before, records out); :func:`write_state_document` renders a document from folded state
(records in, document after). Both are pure: the registry, the clock and the registrar's
identity are arguments.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._acts import ACTS, check_act_terms
from ._canonical import canonical
from ._check import check_record
from ._fold import ItemState, Registry
from ._records import ItemId
from ._time import Time, rfc3339
from .errors import HandoffError

__all__ = [
    "ActLine",
    "StateDocument",
    "SyncResult",
    "act_key_for",
    "parse_state_document",
    "read_state_document",
    "sync_state_document",
    "write_state_document",
]

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*\r?$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_BOX = re.compile(r"^([ \t]*)([-*+]) \[([ xX])\] (.*)$")
_MARKER = re.compile(r" <!-- act:([A-Za-z0-9._-]{1,64}) -->")
_TRAILER = re.compile(r"^<!-- acts:listed((?: [A-Za-z0-9._-]{1,64})*) -->\r?$")
_KEY = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


@dataclass(frozen=True)
class ActLine:
    """One checkbox line of the section: where it is, its box, text and key (if marked)."""

    index: int
    indent: str
    bullet: str
    checked: bool
    text: str
    key: str | None
    eol: str


@dataclass(frozen=True)
class StateDocument:
    """A parsed state document: its lines and what the Acts section holds.

    ``start``/``end`` delimit the section's body (``lines[start:end]``); ``start`` is
    ``None`` when the document has no such section. ``listed`` holds the keys of the
    trailer line (empty when there is none).
    """

    lines: tuple[str, ...]
    start: int | None
    end: int
    acts: tuple[ActLine, ...]
    listed: tuple[str, ...]
    trailer_lines: tuple[int, ...]
    final_newline: bool


def parse_state_document(text: str, *, section: str = "Acts") -> StateDocument:
    """Parse ``text`` and locate the section titled ``section`` (the first one)."""
    if not isinstance(text, str):
        raise HandoffError("markdown", "the state document is not text", reason="not_text")
    if "\x00" in text:
        raise HandoffError(
            "markdown", "the state document holds a NUL character", reason="not_text"
        )
    final_newline = text.endswith("\n")
    lines = tuple(text[:-1].split("\n") if final_newline else text.split("\n")) if text else ()
    start: int | None = None
    level = 0
    end = len(lines)
    fenced = False
    for index, line in enumerate(lines):
        if _FENCE.match(line[1:] if index == 0 and line.startswith("\ufeff") else line):
            fenced = not fenced
            continue
        if fenced:
            continue
        # a byte order mark opening the file is not part of the first heading
        match = _HEADING.match(line[1:] if index == 0 and line.startswith("\ufeff") else line)
        if match is None:
            continue
        if start is None and match.group(2) == section:
            start, level = index + 1, len(match.group(1))
        elif start is not None and len(match.group(1)) <= level:
            end = index
            break
    acts: list[ActLine] = []
    listed: tuple[str, ...] = ()
    trailers: list[int] = []
    if start is not None:
        fenced = False
        for index in range(start, end):
            raw = lines[index]
            if _FENCE.match(raw):
                fenced = not fenced
                continue
            if fenced:
                continue
            trailer = _TRAILER.match(raw)
            if trailer is not None:
                trailers.append(index)
                listed = tuple(trailer.group(1).split())
                continue
            act = _act_line(index, raw)
            if act is not None:
                acts.append(act)
    return StateDocument(lines, start, end, tuple(acts), listed, tuple(trailers), final_newline)


def _act_line(index: int, raw: str) -> ActLine | None:
    eol = "\r" if raw.endswith("\r") else ""
    line = raw[:-1] if eol else raw
    match = _BOX.match(line)
    if match is None:
        return None
    indent, bullet, box, rest = match.groups()
    markers = list(_MARKER.finditer(rest))
    key: str | None = None
    if markers:
        last = markers[-1]
        key = last.group(1)
        rest = rest[: last.start()]
    text = rest.strip()
    if not text or len(text) > 2000 or any(c in text for c in "\r\u2028\u2029"):
        return None
    try:
        check_act_terms({"text": text})
    except HandoffError:
        return None  # not something an act's text can be: a hand-written line
    return ActLine(index, indent, bullet, box != " ", text, key, eol)


def act_key_for(project: str, text: str, n: int = 0) -> str:
    """Return the key the registrar assigns to a new line: ``act-`` + 12 hex digits.

    Derived from the project, the line's text and a counter ``n`` (0 first, increased
    while the key is taken), so that two registrars reading the same document agree.
    """
    seed = f"{project}\n{text}" if n == 0 else f"{project}\n{text}\n{n}"
    return "act-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:12]


# --- reading: document before, records out ----------------------------------------------------


def _record_id(record: Mapping[str, Any]) -> str:
    # from the content alone, never the time: two syncs of the same line (another
    # machine, another minute) send one record, a repeat (docs/spec/handoff.md §10)
    content = {k: v for k, v in record.items() if k != "ts"}
    return "md-" + hashlib.sha256(canonical(content)).hexdigest()[:32]


def _stamp(record: dict[str, Any]) -> dict[str, Any]:
    record["id"] = _record_id(record)
    return {k: record[k] for k in sorted(record)}


def _act_states(registry: Registry, project: str) -> dict[str, ItemState]:
    return {
        item.key: registry.state(item)
        for item in registry.items()
        if item.ext == ACTS.name and item.project == project
    }


def _pending_claim(registry: Registry, item: ItemId, registrar: str, outcome: str) -> bool:
    records = registry.records(item)
    adopted = {a for r in records if r["type"] == "settled" for a in r.get("adopts", ())}
    return any(
        r["type"] == "claimed"
        and r["origin"] == "registrar"
        and r["by"] == registrar
        and r["outcome"] == outcome
        and r["id"] not in adopted
        for r in records
    )


def _assign_keys(
    doc: StateDocument, states: Mapping[str, ItemState], project: str
) -> dict[int, str]:
    """Give each unmarked line a key: the existing act with the same text, or a fresh one."""
    taken = set(states) | {a.key for a in doc.acts if a.key is not None}
    assigned: dict[int, str] = {}
    for act in doc.acts:
        if act.key is not None:
            continue
        n = 0
        while True:
            key = act_key_for(project, act.text, n)
            state = states.get(key)
            same_act = (
                state is not None
                and state.terms is not None
                and state.terms.get("text") == act.text
                and key not in assigned.values()
                and all(a.key != key for a in doc.acts)
            )
            if same_act or key not in taken:
                break
            n += 1
        assigned[act.index] = key
        taken.add(key)
    return assigned


def _base(project: str, registrar: str, now: Time, key: str) -> dict[str, Any]:
    return {
        "ph": "0.3",
        "ext": ACTS.ext,
        "project": project,
        "key": key,
        "by": registrar,
        "ts": rfc3339(now),
        "context": "state-document",
    }


def read_state_document(
    text: str,
    registry: Registry,
    *,
    project: str,
    registrar: str,
    now: Time,
    section: str = "Acts",
) -> list[dict[str, Any]]:
    """Return the records the document implies against what ``registry`` holds.

    A new line is ``raised``; changed text of a current act is ``amended``; a ticked box
    of an act that is not settled, and a listed act whose line is gone, become
    ``claimed`` records (``done``, ``removed``) from the ``registrar`` role. Nothing is
    ever withdrawn or settled. Records are returned in document order, ids derived from
    their content; they are not added to ``registry``. ``now`` is RFC 3339 text or an
    aware :class:`datetime.datetime` (written as UTC); a naive datetime raises
    :class:`~handoff.HandoffUsageError` ``usage``/``time``.
    """
    now = rfc3339(now)
    doc = parse_state_document(text, section=section)
    states = _act_states(registry, project)
    assigned = _assign_keys(doc, states, project)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for act in doc.acts:
        key = act.key if act.key is not None else assigned[act.index]
        if key in seen:
            continue  # a second line with the same key is left alone
        seen.add(key)
        state = states.get(key)
        item = ItemId(ACTS.name, project, key)
        if state is not None and state.state == "conflicted":
            continue  # an id sent with two contents: nothing is read against unknown terms
        if state is None or state.state == "unknown" or state.terms is None:
            raised = _base(project, registrar, now, key)
            raised.update(type="raised", origin="requester", terms={"text": act.text}, terms_rev=1)
            out.append(_stamp(raised))
        elif not state.need_withdrawn and state.terms.get("text") != act.text:
            amended = _base(project, registrar, now, key)
            amended.update(
                type="amended",
                origin="requester",
                terms={**dict(state.terms), "text": act.text},
                terms_rev=(state.held_terms_rev or state.terms_rev or 1) + 1,
                supersedes=[state.need] if state.need else [],
            )
            out.append(_stamp(amended))
        settled = state is not None and state.state == "settled"
        if (
            act.checked
            and not settled
            and (state is None or not _pending_claim(registry, item, registrar, "done"))
        ):
            claim = _base(project, registrar, now, key)
            claim.update(
                type="claimed",
                origin="registrar",
                outcome="done",
                evidence={"basis": "state-document: the box was ticked"},
            )
            out.append(_stamp(claim))
    for key in doc.listed:
        if key in seen or not _KEY.match(key):
            continue
        state = states.get(key)
        if state is None or state.state != "open":
            continue
        item = ItemId(ACTS.name, project, key)
        if _pending_claim(registry, item, registrar, "removed"):
            continue
        claim = _base(project, registrar, now, key)
        claim.update(
            type="claimed",
            origin="registrar",
            outcome="removed",
            evidence={"basis": "state-document: the line was removed"},
        )
        out.append(_stamp(claim))
        seen.add(key)
    return out


# --- writing: records in, document after ------------------------------------------------------


def _status(state: ItemState, claimed: bool, distrusted: bool = False) -> list[str]:
    words: list[str] = []
    if distrusted:
        words.append("settlement refused: its evidence does not verify")
    elif state.state == "settled":
        if state.outcome != "done":
            words.append(str(state.outcome))
        if state.stale:
            words.append("stale: the terms changed after it was settled")
    elif claimed:
        words.append("claimed done, awaiting the principal side")
    if state.need_withdrawn:
        words.append("withdrawn by the requester")
    return words


def _render(
    act_indent: str,
    bullet: str,
    state: ItemState,
    key: str,
    registry: Registry,
    registrar: str,
    distrusted: frozenset[str] = frozenset(),
) -> str:
    settled = state.state == "settled" and key not in distrusted
    claimed = not settled and _pending_claim(
        registry, ItemId(ACTS.name, state.item.project, key), registrar, "done"
    )
    text = str(state.terms.get("text")) if state.terms is not None else ""
    ticked = settled or claimed
    line = f"{act_indent}{bullet} [{'x' if ticked else ' '}] {text} <!-- act:{key} -->"
    words = _status(state, claimed, key in distrusted)
    if words:
        line += " _(" + "; ".join(words) + ")_"
    return line


def write_state_document(
    text: str,
    registry: Registry,
    *,
    project: str,
    registrar: str,
    section: str = "Acts",
    distrusted: frozenset[str] = frozenset(),
) -> str:
    """Return ``text`` with its Acts section rendered from the folded state in ``registry``.

    Each act in view gets one line: its current text, ticked when settled (or while a
    ``done`` claim of the registrar awaits the principal side), with its status after the
    marker. Lines of acts not yet written are added after the last act line, sorted by
    key; the trailer lists the keys written. Every line that is not an act line the
    registrar owns is kept exactly, in place. Acts whose keys are in ``distrusted`` (a
    settlement whose evidence the caller found forged) are never ticked for it; a
    ``conflicted`` act's line is left exactly as it was.
    """
    doc = parse_state_document(text, section=section)
    states = {k: s for k, s in _act_states(registry, project).items() if s.state != "withdrawn"}
    states = {
        k: s
        for k, s in states.items()
        if s.state != "unknown" and s.terms is not None and _KEY.match(k) is not None
    }
    assigned = _assign_keys(doc, states, project)
    lines = list(doc.lines)
    if doc.start is None:
        if not states:
            return text
        if lines and lines[-1] != "":
            lines.append("")
        lines += [f"## {section}", ""]
        start, end = len(lines), len(lines)
    else:
        start, end = doc.start, doc.end
    written: list[str] = []
    replaced: dict[int, str] = {}
    last_act: int | None = None
    for act in doc.acts:
        key = act.key if act.key is not None else assigned[act.index]
        state = states.get(key)
        last_act = act.index
        if key in written or state is None:
            continue
        if act.key is None and state.terms is not None and state.terms.get("text") != act.text:
            continue  # not yet read: leave the line as it is
        replaced[act.index] = _render(
            act.indent, act.bullet, state, key, registry, registrar, distrusted
        )
        replaced[act.index] += act.eol
        written.append(key)
    block = [
        _render("", "-", states[key], key, registry, registrar, distrusted)
        for key in sorted(k for k in states if k not in written)
    ]
    written += [k for k in states if k not in written]
    if written:
        block.append(f"<!-- acts:listed {' '.join(sorted(written))} -->")
    if lines and all(line.endswith("\r") for line in lines[:-1] or lines):
        block = [line + "\r" for line in block]  # a CRLF document stays CRLF
    body: list[str] = []
    at: int | None = None
    for index in range(start, end):
        if index in doc.trailer_lines:
            continue
        body.append(replaced.get(index, lines[index]))
        if index == last_act:
            at = len(body)
    if at is None and block:
        at = len(body)
        while at > 0 and body[at - 1].strip() == "":
            at -= 1
        if at > 0:
            block.insert(0, "")
        if at == len(body) and end < len(lines):
            block.append("")
    if at is not None:
        body[at:at] = block
    result = lines[:start] + body + lines[end:]
    out = "\n".join(result)
    return out + "\n" if (doc.final_newline or doc.start is None) else out


@dataclass(frozen=True)
class SyncResult:
    """What :func:`sync_state_document` did: the records emitted and the new document."""

    records: tuple[dict[str, Any], ...]
    document: str


def sync_state_document(
    text: str,
    registry: Registry,
    *,
    project: str,
    registrar: str,
    now: Time,
    section: str = "Acts",
    distrusted: frozenset[str] = frozenset(),
) -> SyncResult:
    """Read the document, add the implied records to ``registry``, then rewrite it.

    Every record is checked (ownership, schemas, Acts rules) before any is added, so a
    rejected one raises :class:`HandoffError` and leaves ``registry`` unchanged.
    ``now`` is RFC 3339 text or an aware :class:`datetime.datetime` (written as UTC); a
    naive datetime raises :class:`~handoff.HandoffUsageError` ``usage``/``time``.
    """
    records = read_state_document(
        text, registry, project=project, registrar=registrar, now=now, section=section
    )
    for record in records:
        check_record(record, roles=registry.roles, extensions=registry.extensions)
    for record in records:
        registry.add(record)
    document = write_state_document(
        text, registry, project=project, registrar=registrar, section=section, distrusted=distrusted
    )
    return SyncResult(tuple(records), document)
