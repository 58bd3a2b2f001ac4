"""Budget fitting (SPEC.md section 8) with exactly the reference loop's choices (NOTES.md).

The reference loop re-renders the whole reply after every cut. This module makes the same
decisions without re-rendering: the token estimate of a Lens text is additive over its
lines (no match of the section 8 pattern spans a line break except the indentation run
that starts it), so a :class:`_Meter` keeps the estimate of every unchanged sub-value and
a cut only re-measures the values on its path. ``tests/parley/fit_oracle.py`` keeps the
plain loop; the tests prove both return identical results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._estimate import estimate
from ._lean import (
    compact_json,
    copy_json,
    depth_guard,
    is_scalar,
    js_keys,
    js_number,
    json_quote,
    lean_key,
    scalar_text,
    u16_len,
    u16_slice,
)
from ._lens import (
    EntryBlock,
    Segment,
    TopBlock,
    body_segments,
    capability_line,
    more_line,
    proposal_attributes,
    proposal_segments,
    proposals_header,
    shared_attributes,
)
from .errors import ParleyError

__all__ = ["MAX_ROUNDS", "PLACEHOLDER", "fit"]

PLACEHOLDER = "h_XXXXXXXXXXXX"
"""The handle the loop renders while measuring (the real handles are assigned at the end)."""
MAX_ROUNDS = 200
"""The reference loop stops after this many rounds."""
_LONG = 200
_FITTED = frozenset({"ANSWER", "PROPOSALS", "RECEIPT", "BRIEF"})

Path = tuple[str | int, ...]


def _not_json(value: object) -> ParleyError:
    return ParleyError(
        "bad_frame",
        f"the reply holds a Python {type(value).__name__} value, which JSON cannot carry",
        reason="not_json",
    )


@dataclass
class _Suffix:
    """What the estimate of ``lean(full[k:])`` needs, for any ``k``, computed once."""

    full: list[Any]
    scalar_from: int
    table_from: int
    keys_tok: int = 0
    width: int = 0
    row_sums: list[int] = field(default_factory=list)
    item_sums: list[int] = field(default_factory=list)
    tok_sums: list[int] = field(default_factory=list)


@dataclass
class _Kids:
    """The best candidate of each member of an object, in ECMAScript property order.

    Kept per object so that a cut re-measures one member and finds the new best with two
    C-level scans (``max`` and ``index``) instead of re-walking every member in Python: a
    reply with tens of thousands of members would otherwise cost seconds to fit.
    """

    keys: list[Any]
    sizes: list[int]  # -1 when the member holds no candidate
    paths: list[Path]
    positions: dict[Any, int] | None = None


class _Meter:
    """Memoized token estimates and JSON sizes of lean renderings of sub-values.

    Container results are cached by object identity with the object kept alongside, so a
    cached entry is never confused with a later object that reuses the id.
    """

    def __init__(self) -> None:
        self.str_tok: dict[str, int] = {}
        self.key_text: dict[str, str] = {}
        self.line_tok: dict[str, int] = {}
        self.num_tok: dict[tuple[type, Any], int] = {}
        self.body: dict[int, tuple[Any, int]] = {}
        self.lists: dict[int, tuple[Any, int]] = {}
        self.items: dict[int, tuple[Any, int]] = {}
        self.rows: dict[int, tuple[Any, int]] = {}
        self.sigs: dict[int, tuple[Any, tuple[str, ...] | None]] = {}
        self.sizes: dict[int, tuple[Any, int]] = {}
        self.str_size: dict[str, int] = {}
        self.kids: dict[int, tuple[Any, _Kids]] = {}
        self.suffixes: dict[int, tuple[Any, _Suffix]] = {}

    # -------------------------------------------------------- token estimates

    def est(self, text: str) -> int:
        """Estimate of a line (memoized by text)."""
        found = self.line_tok.get(text)
        if found is None:
            found = self.line_tok[text] = estimate(text)
        return found

    def tok(self, value: Any) -> int:
        """Estimate of a scalar's lean text."""
        if type(value) is str:
            found = self.str_tok.get(value)
            if found is None:
                found = self.str_tok[value] = estimate(scalar_text(value))
            return found
        key = (type(value), value)
        try:
            found = self.num_tok.get(key)
        except TypeError:  # pragma: no cover - unhashable scalar subclass
            found = None
        if found is None:
            found = estimate(scalar_text(value))
            if value == value:  # NaN never equals itself; do not cache it
                self.num_tok[key] = found
        return found

    def key(self, key: object) -> str:
        """The lean text of an object key."""
        if type(key) is not str:
            if not isinstance(key, str):
                raise _not_json(key)
            key = str(key)
        found = self.key_text.get(key)
        if found is None:
            found = self.key_text[key] = lean_key(key)
        return found

    def entry(self, key_text: str, value: Any, flag: int) -> int:
        """Estimate of ``entry_lines(key_text, value, indent)``; ``flag`` is ``indent > 0``."""
        head = self.est(key_text) + flag
        if is_scalar(value):
            return head + 1 + self.tok(value)
        if isinstance(value, dict):
            if not value:
                return head + 3
            # dict_body inlined: one stack frame per level, as deep as lean() renders.
            cached = self.body.get(id(value))
            if cached is None or cached[0] is not value:
                total = 0
                for key, item in value.items():
                    total += self.entry(self.key(key), item, 1)
                cached = self.body[id(value)] = (value, total)
            return head + 1 + cached[1]
        if isinstance(value, list):
            return head + (3 if not value else self.list_tail(value))
        raise _not_json(value)

    def dict_body(self, value: dict[str, Any]) -> int:
        """Estimate of a non-empty object's entries at an indent of at least one."""
        cached = self.body.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1]
        total = 0
        for key, item in value.items():
            total += self.entry(self.key(key), item, 1)
        self.body[id(value)] = (value, total)
        return total

    def sig(self, item: Any) -> tuple[str, ...] | None:
        """The key tuple of a table row, or None when ``item`` cannot be a row."""
        cached = self.sigs.get(id(item))
        if cached is not None and cached[0] is item:
            return cached[1]
        result: tuple[str, ...] | None = None
        if isinstance(item, dict) and item and all(is_scalar(v) for v in item.values()):
            result = tuple(js_keys(item))
        self.sigs[id(item)] = (item, result)
        return result

    def row(self, row: dict[str, Any]) -> int:
        """Estimate of one table row line (at an indent of at least one)."""
        cached = self.rows.get(id(row))
        if cached is not None and cached[0] is row:
            return cached[1]
        total = len(row)  # K - 1 commas plus the indentation run
        for cell in row.values():
            total += self.tok(cell)
        self.rows[id(row)] = (row, total)
        return total

    def item(self, item: Any) -> int:
        """Estimate of one mixed-list element's lines (``- …``)."""
        if is_scalar(item):
            return 2 + self.tok(item)
        cached = self.items.get(id(item))
        if cached is not None and cached[0] is item:
            return cached[1]
        if isinstance(item, dict):
            if not item:
                total = 4
            else:  # dict_body inlined (stack depth)
                body = self.body.get(id(item))
                if body is None or body[0] is not item:
                    inner = 0
                    for key, value in item.items():
                        inner += self.entry(self.key(key), value, 1)
                    body = self.body[id(item)] = (item, inner)
                total = body[1] + 1
        elif isinstance(item, list):
            if all(is_scalar(x) for x in item):
                total = 4 + sum(self.tok(x) for x in item) + max(len(item) - 1, 0)
            else:
                total = 2 + estimate(compact_json(item))
        else:
            raise _not_json(item)
        self.items[id(item)] = (item, total)
        return total

    def _table_head(self, keys: tuple[str, ...]) -> int:
        return sum(self.est(self.key(k)) for k in keys) + len(keys) - 1

    def list_tail(self, value: list[Any]) -> int:
        """Estimate of a non-empty list entry's lines, without its key and indent flag."""
        cached = self.lists.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1]
        count = len(value)
        if all(is_scalar(x) for x in value):
            total = sum(self.tok(x) for x in value) + count + 2
        else:
            first = self.sig(value[0])
            if first is not None and all(self.sig(x) == first for x in value):
                total = 5 + self.est(str(count)) + self._table_head(first)
                total += sum(self.row(x) for x in value)
            else:
                total = 3 + self.est(str(count))
                for item in value:  # a loop, not a generator: one frame less per level
                    total += self.item(item)
        self.lists[id(value)] = (value, total)
        return total

    def top(self, value: Any) -> int:
        """Estimate of the top-level lean rendering of ``value``."""
        if is_scalar(value):
            return self.tok(value)
        if isinstance(value, dict):
            return 2 if not value else self.dict_body(value) - len(value)
        if isinstance(value, list):
            return self.entry("items", value, 0)
        raise _not_json(value)

    def segments(self, segments: list[Segment]) -> int:
        """Estimate of the joined lines of ``segments``."""
        total = 0
        for segment in segments:
            if isinstance(segment, str):
                total += self.est(segment) + (1 if segment.startswith("  ") else 0)
            elif isinstance(segment, EntryBlock):
                total += self.entry(segment.key_text, segment.value, 1 if segment.indent else 0)
            elif isinstance(segment, TopBlock):
                total += self.top(segment.value)
        if segments and isinstance(segments[0], str) and segments[0].startswith("  "):
            total -= 1
        return total

    # -------------------------------------------------------- remainders of lists

    def suffix(self, full: list[Any]) -> _Suffix:
        """The suffix tables of an original list (for ``lean(full[k:])``)."""
        cached = self.suffixes.get(id(full))
        if cached is not None and cached[0] is full:
            return cached[1]
        count = len(full)
        scalar_from = count
        while scalar_from > 0 and is_scalar(full[scalar_from - 1]):
            scalar_from -= 1
        table_from = count
        last = self.sig(full[-1]) if full else None
        if last is not None:
            while table_from > 0 and self.sig(full[table_from - 1]) == last:
                table_from -= 1
        info = _Suffix(full, scalar_from, table_from)
        if last is not None and table_from < count:
            info.keys_tok = self._table_head(last)
            info.width = len(last)
        self.suffixes[id(full)] = (full, info)
        return info

    @staticmethod
    def _sums(values: list[int]) -> list[int]:
        sums = [0] * (len(values) + 1)
        for index in range(len(values) - 1, -1, -1):
            sums[index] = sums[index + 1] + values[index]
        return sums

    def rest_top(self, full: list[Any], start: int) -> int:
        """Estimate of ``lean(full[start:])`` (a top-level list, ``start < len(full)``)."""
        info = self.suffix(full)
        count = len(full) - start
        head = self.est("items")
        if start >= info.scalar_from:
            if not info.tok_sums:
                info.tok_sums = self._sums(
                    [self.tok(x) if i >= info.scalar_from else 0 for i, x in enumerate(full)]
                )
            return head + info.tok_sums[start] + count + 2
        if start >= info.table_from:
            if not info.row_sums:
                info.row_sums = self._sums(
                    [self.row(x) if i >= info.table_from else 0 for i, x in enumerate(full)]
                )
            return head + 5 + self.est(str(count)) + info.keys_tok + info.row_sums[start]
        if not info.item_sums:
            info.item_sums = self._sums([self.item(x) for x in full])
        return head + 3 + self.est(str(count)) + info.item_sums[start]

    # -------------------------------------------------------- JSON sizes and candidates

    def text_size(self, text: str) -> int:
        """UTF-16 length of ``JSON.stringify(text)``."""
        found = self.str_size.get(text)
        if found is None:
            if text.isascii() and text.isprintable():
                found = len(text) + 2 + text.count('"') + text.count("\\")
            else:
                found = u16_len(json_quote(text))
            self.str_size[text] = found
        return found

    def size(self, value: Any) -> int:
        """UTF-16 length of ``JSON.stringify(value)``."""
        if type(value) is str:
            return self.text_size(value)
        if value is None or value is True:
            return 4
        if value is False:
            return 5
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            text = js_number(value)
            return 4 if text is None else len(text)
        cached = self.sizes.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1]
        if isinstance(value, list):
            total = 2 + max(len(value) - 1, 0)
            for item in value:  # a loop, not a generator: one frame less per level
                total += self.size(item)
        elif isinstance(value, dict):
            total = 2 + max(len(value) - 1, 0)
            for key, item in value.items():
                if not isinstance(key, str):
                    raise _not_json(key)
                total += self.text_size(key) + 1 + self.size(item)
        elif isinstance(value, str):
            total = self.text_size(str(value))
        else:
            raise _not_json(value)
        self.sizes[id(value)] = (value, total)
        return total

    def best(self, value: Any) -> tuple[int, Path] | None:
        """The first-found largest candidate inside ``value`` (relative path), if any.

        A non-empty list outweighs everything inside it (its JSON text contains theirs),
        so only lists and long strings not inside a list can win.
        """
        if isinstance(value, str):
            length = u16_len(value)
            return (length, ()) if length > _LONG else None
        if isinstance(value, list):
            return (self.size(value), ()) if value else None
        if not isinstance(value, dict):
            return None
        cached = self.kids.get(id(value))
        if cached is not None and cached[0] is value:
            kids = cached[1]
        else:  # built here, not in a helper: one stack frame per level of nesting
            keys = js_keys(value)
            sizes: list[int] = []
            paths: list[Path] = []
            for key in keys:
                inner = self.best(value[key])
                if inner is None:
                    sizes.append(-1)
                    paths.append(())
                else:
                    sizes.append(inner[0])
                    paths.append(inner[1])
            kids = _Kids(keys, sizes, paths)
            self.kids[id(value)] = (value, kids)
        if not kids.sizes:
            return None
        top = max(kids.sizes)
        if top < 0:
            return None
        index = kids.sizes.index(top)  # the first of equals: the walk's tie-break
        return top, (kids.keys[index], *kids.paths[index])

    def moved(self, old: dict[Any, Any], new: dict[Any, Any], key: Any, was: Any) -> None:
        """Carry the caches of ``old`` over to ``new``, a copy whose member ``key`` changed
        from ``was`` to ``new[key]``: constant work instead of re-measuring every member."""
        body = self.body.get(id(old))
        if body is not None and body[0] is old:
            key_text = self.key(key)
            total = body[1] - self.entry(key_text, was, 1) + self.entry(key_text, new[key], 1)
            self.body[id(new)] = (new, total)
        cached = self.kids.pop(id(old), None)
        if cached is not None and cached[0] is old:
            kids = cached[1]
            if kids.positions is None:
                kids.positions = {k: i for i, k in enumerate(kids.keys)}
            index = kids.positions[key]
            inner = self.best(new[key])
            kids.sizes[index] = -1 if inner is None else inner[0]
            kids.paths[index] = () if inner is None else inner[1]
            self.kids[id(new)] = (new, kids)


# ------------------------------------------------------------ paths


def _get(root: Any, path: Path) -> tuple[bool, Any]:
    node = root
    for step in path:
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                return False, None
        elif not isinstance(node, dict) or step not in node:
            return False, None
        node = node[step]
    return True, node


def _replace(node: Any, path: Path, value: Any, meter: _Meter) -> Any:
    """Return a copy of ``node`` with ``path`` set to ``value``, copying only the path.

    Each copied object hands its measurements to its copy (``_Meter.moved``), deepest
    first, so the next round does not re-measure its unchanged members.
    """
    if not path:
        return value
    step = path[0]
    was = node[step]
    changed = _replace(was, path[1:], value, meter)
    if isinstance(node, list):
        copied: Any = list(node)
        copied[step] = changed
    else:
        copied = dict(node)
        copied[step] = changed
        meter.moved(node, copied, step, was)
    return copied


def _deep_roots(reply: dict[str, Any]) -> list[Path]:
    kind = reply.get("kind")
    if kind == "ANSWER":
        return [("data",)] if "data" in reply else []
    if kind == "RECEIPT":
        receipt = reply.get("receipt")
        return [("receipt", "result")] if isinstance(receipt, dict) and "result" in receipt else []
    if kind == "PROPOSALS":
        proposals = reply.get("proposals")
        if not isinstance(proposals, list):
            return []
        return [
            ("proposals", i, "data")
            for i, p in enumerate(proposals)
            if isinstance(p, dict) and "data" in p
        ]
    return []


def _list_root(reply: dict[str, Any]) -> Path | None:
    kind = reply.get("kind")
    if kind == "PROPOSALS":
        return ("proposals",)
    if kind == "BRIEF":
        return ("capabilities",)
    return None


# ------------------------------------------------------------ the loop


@dataclass
class _Proposals:
    """The last measurement of a PROPOSALS list: per-proposal estimates and candidates.

    A cut inside one proposal's ``data`` changes only that proposal (the attributes, and
    so the shared header, do not depend on ``data``); updating one slot keeps a round
    from re-measuring thousands of proposals.
    """

    proposals: list[Any]
    shared: list[bool]
    head: int
    ests: list[int]
    sizes: list[int]  # the best candidate size in each proposal's data, -1 for none
    paths: list[Path]


class _Fitter:
    def __init__(self, reply: dict[str, Any]) -> None:
        self.original = reply
        self.meter = _Meter()
        self.cuts: list[Path] = []
        self.cut_strings: set[Path] = set()
        self.full: dict[Path, Any] = {}
        self.rest_est: dict[tuple[Path, int], int] = {}
        self.more_est: dict[tuple[Path, int], int] = {}
        self.attrs: dict[int, tuple[Any, list[str | None]]] = {}
        self.proposal_est_cache: dict[tuple[int, tuple[bool, ...]], tuple[Any, int]] = {}
        self.capability_est: dict[int, tuple[Any, int]] = {}
        self.state: _Proposals | None = None

    def entries(self, work: dict[str, Any]) -> list[tuple[Path, int, int]]:
        """``(path, kept length, remaining)`` of every cut still visible in ``work``."""
        out: list[tuple[Path, int, int]] = []
        for path in self.cuts:
            ok, current = _get(work, path)
            if not ok:
                continue
            full = self.full[path]
            if isinstance(current, list):
                out.append((path, len(current), len(full) - len(current)))
            else:
                kept = u16_len(current) - 1
                out.append((path, kept, u16_len(full) - kept))
        return out

    def est_of_rest(self, path: Path, kept: int) -> int:
        key = (path, kept)
        found = self.rest_est.get(key)
        if found is None:
            full = self.full[path]
            if isinstance(full, list):
                found = self.meter.rest_top(full, kept)
            else:
                found = estimate(u16_slice(full, kept))
            self.rest_est[key] = found
        return found

    def pick(self, work: dict[str, Any]) -> Path | None:
        state = self.state
        if state is not None and state.proposals is work.get("proposals"):
            if state.sizes:
                top = max(state.sizes)
                if top >= 0:
                    index = state.sizes.index(top)  # the first of equals
                    return ("proposals", index, "data", *state.paths[index])
            return ("proposals",) if state.proposals else None
        best: tuple[int, Path] | None = None
        for root in _deep_roots(work):
            found = self.meter.best(_get(work, root)[1])
            if found is not None and (best is None or found[0] > best[0]):
                best = (found[0], (*root, *found[1]))
        if best is not None:
            return best[1]
        list_root = _list_root(work)
        if list_root is not None:
            ok, value = _get(work, list_root)
            if ok and isinstance(value, list) and value:
                return list_root
        return None

    def proposal_est(self, proposal: Any, shared: list[bool]) -> int:
        """Estimate of one proposal's lines, given which attributes the header shares."""
        cached = self.attrs.get(id(proposal))
        if cached is None or cached[0] is not proposal:
            cached = (proposal, proposal_attributes(proposal))
            self.attrs[id(proposal)] = cached
        key = (id(proposal), tuple(shared))
        found = self.proposal_est_cache.get(key)
        if found is None or found[0] is not proposal:
            segments: list[Segment] = []
            proposal_segments(proposal, cached[1], shared, segments)
            found = (proposal, self.meter.segments(segments))
            self.proposal_est_cache[key] = found
        return found[1]

    def proposal_best(self, proposal: Any) -> tuple[int, Path]:
        """The best candidate in one proposal's ``data`` (size -1 when there is none)."""
        if not isinstance(proposal, dict) or "data" not in proposal:
            return -1, ()
        found = self.meter.best(proposal["data"])
        return (-1, ()) if found is None else found

    def proposals_total(self, proposals: list[Any]) -> int:
        """Estimate of a PROPOSALS body, re-measuring only the proposals that changed."""
        state = self.state
        if state is not None and state.proposals is proposals:
            return state.head + sum(state.ests)
        attributes: list[list[str | None]] = []
        for proposal in proposals:
            cached = self.attrs.get(id(proposal))
            if cached is None or cached[0] is not proposal:
                cached = (proposal, proposal_attributes(proposal))
                self.attrs[id(proposal)] = cached
            attributes.append(cached[1])
        shared = shared_attributes(attributes)
        shared_text = (
            [a for a, s in zip(attributes[0], shared, strict=True) if s and a] if attributes else []
        )
        head = self.meter.est(proposals_header(len(proposals), shared_text))
        ests = [self.proposal_est(proposal, shared) for proposal in proposals]
        bests = [self.proposal_best(proposal) for proposal in proposals]
        self.state = _Proposals(
            proposals, shared, head, ests, [b[0] for b in bests], [b[1] for b in bests]
        )
        return head + sum(ests)

    def proposal_changed(self, before: Any, after: Any, index: int) -> None:
        """Carry the PROPOSALS measurement over a cut inside proposal ``index``'s data."""
        state = self.state
        if state is None or state.proposals is not before or not isinstance(after, list):
            self.state = None
            return
        proposal = after[index]
        old = before[index]
        cached = self.attrs.get(id(old))
        if cached is not None and cached[0] is old:
            self.attrs[id(proposal)] = (proposal, cached[1])
        state.proposals = after
        state.ests[index] = self.proposal_est(proposal, state.shared)
        state.sizes[index], state.paths[index] = self.proposal_best(proposal)

    def brief_total(self, work: dict[str, Any]) -> int:
        """Estimate of a BRIEF body, measuring each capability line once."""
        head = {k: v for k, v in work.items() if k != "capabilities"}
        total = self.meter.segments(body_segments(head))
        for cap in work.get("capabilities") or []:
            found = self.capability_est.get(id(cap))
            if found is None or found[0] is not cap:
                line = capability_line(cap)
                found = (cap, self.meter.est(line) + (1 if line.startswith("  ") else 0))
                self.capability_est[id(cap)] = found
            total += found[1]
        return total

    def more_total(self, work: dict[str, Any]) -> int:
        total = 0
        for path, kept, remaining in self.entries(work):
            found = self.more_est.get((path, kept))
            if found is None:
                line = more_line(
                    {
                        "handle": PLACEHOLDER,
                        "path": ".".join(map(str, path)),
                        "remaining": remaining,
                        "est": self.est_of_rest(path, kept),
                    }
                )
                found = self.more_est[(path, kept)] = self.meter.est(line)
            total += found
        return total

    def run(self, work: dict[str, Any], budget: int, existing: list[Any]) -> dict[str, Any]:
        meter = self.meter
        for _ in range(MAX_ROUNDS):
            if work.get("kind") == "PROPOSALS":
                total = self.proposals_total(work.get("proposals") or [])
            elif work.get("kind") == "BRIEF":
                total = self.brief_total(work)
            else:
                total = meter.segments(body_segments(work))
            for entry in existing:
                total += meter.est(more_line(entry))
            total += self.more_total(work)
            if total <= budget:
                break
            picked = self.pick(work)
            if picked is None:
                break
            path = picked
            value = _get(work, path)[1]
            if path not in self.full:
                self.full[path] = _get(self.original, path)[1]
            before = work.get("proposals")
            if isinstance(value, list):
                work = _replace(work, path, value[: len(value) // 2], meter)
            else:
                text = value[:-1] if path in self.cut_strings and value.endswith("…") else value
                keep = max(_LONG, u16_len(text) // 2)
                if keep >= u16_len(text):
                    break
                work = _replace(work, path, u16_slice(text, 0, keep) + "…", meter)
                self.cut_strings.add(path)
            if path[0] == "proposals" and len(path) > 2 and isinstance(path[1], int):
                self.proposal_changed(before, work.get("proposals"), path[1])
            if path not in self.cuts:
                self.cuts.append(path)
        return work


def _check_budget(budget: object) -> int:
    if not isinstance(budget, int) or isinstance(budget, bool):
        raise ParleyError(
            "bad_argument", "the budget is an integer number of tokens", reason="bad_budget"
        )
    return budget


@depth_guard
def fit(
    reply: dict[str, Any], budget: int, *, handles: Callable[[], str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fit a reply to ``budget`` estimated tokens of Lens (SPEC.md section 8, NOTES.md).

    Elides only inside the deep roots (``ANSWER.data``, each proposal's ``data``,
    ``RECEIPT.receipt.result``) and, when nothing deep is left, drops trailing items of
    the list roots (``PROPOSALS.proposals``, ``BRIEF.capabilities``); never anything else
    of a proposal or capability. Returns ``(fitted, parked)``: a new reply carrying one
    ``More`` entry per elided path, and the elided remainders keyed by the handles that
    ``handles()`` returned (called once per entry, in order). Other reply kinds come
    back unchanged. The input is not modified; parked remainders may share unchanged
    sub-values with it. Raises :class:`ParleyError` for a reply that does not render or
    a budget that is not an integer.

    Use handles whose estimate is 3 tokens (``new_handle`` makes such handles): the loop
    measures with the placeholder ``h_XXXXXXXXXXXX``.

    >>> reply = {"kind": "ANSWER", "data": {"n": list(range(100))}}
    >>> fitted, parked = fit(reply, 40, handles=iter(["h_abc"]).__next__)
    >>> fitted["more"]
    [{'handle': 'h_abc', 'path': 'data.n', 'remaining': 94, 'est': 191}]
    >>> parked["h_abc"][:3]
    [6, 7, 8]
    """
    budget = _check_budget(budget)
    if isinstance(reply, dict) and reply.get("kind") == "BRIEF":
        # Round one measures every line; only the list itself is checked up front.
        body_segments({k: v for k, v in reply.items() if k != "capabilities"})
        caps = reply.get("capabilities")
        if caps is not None and not isinstance(caps, list):
            body_segments(reply)  # raises the renderer's own error
    else:
        body_segments(reply)
    existing = reply.get("more")
    if existing is not None and not isinstance(existing, list):
        raise ParleyError("bad_frame", "the reply's `more` is not a list", reason="bad_more")
    if reply.get("kind") not in _FITTED:
        return copy_json(reply), {}
    fitter = _Fitter(reply)
    work = fitter.run(dict(reply), budget, list(existing or []))
    parked: dict[str, Any] = {}
    entries: list[dict[str, Any]] = []
    for path, kept, remaining in fitter.entries(work):
        full = fitter.full[path]
        rest = full[kept:] if isinstance(full, list) else u16_slice(full, kept)
        handle = handles()
        if not isinstance(handle, str) or handle in parked:
            raise ParleyError(
                "internal",
                "the handle factory returned a repeated or non-string handle",
                reason="bad_handle",
            )
        parked[handle] = rest
        entries.append(
            {
                "handle": handle,
                "path": ".".join(map(str, path)),
                "remaining": remaining,
                "est": fitter.est_of_rest(path, kept),
            }
        )
    if entries:
        work = {**work, "more": [*(existing or []), *entries]}
    return copy_json(work), parked
