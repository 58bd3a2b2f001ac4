"""The plain reference fitting loop of NOTES.md, kept as the oracle for :func:`parley.lens.fit`.

It re-renders the whole reply after every cut and walks every candidate every round,
exactly as the prose describes, with no caching. Tests compare the shipped fitter with it
on random replies and budgets, ``tools/vectorcases/parley_lens.py`` takes the fitting
vectors' expected outputs from it, and ``bench/bench_parley_lens.py`` measures how much
slower it is. It lives under ``tests/`` because nothing in production runs it (DESIGN.md,
"Speed without hidden state": one implementation of each rule in ``src/``).

Private imports: the oracle measures and cuts text with the Lens renderer's own private text
helpers (``compact_json``, ``js_items``, ``u16_len``, ``u16_slice`` of ``parley._lean``:
JSON.stringify and JavaScript string lengths), so it differs from the shipped fitter only in
the loop it runs, which is what it is the oracle of; where the fitter looks for deep
values (``_deep_roots``: the spec's list of reply members) is shared with it too.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from parley._fit import _deep_roots
from parley._lean import compact_json, js_items, u16_len, u16_slice
from parley.lens import estimate, lean, lens

__all__ = ["PLACEHOLDER", "fit_oracle"]

PLACEHOLDER = "h_XXXXXXXXXXXX"
_ROUNDS = 200
_LONG = 200

Path = tuple[str | int, ...]


def _get(root: Any, path: Path) -> tuple[bool, Any]:
    node = root
    for step in path:
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                return False, None
            node = node[step]
        else:
            if not isinstance(node, dict) or step not in node:
                return False, None
            node = node[step]
    return True, node


def _set(root: Any, path: Path, value: Any) -> None:
    node = root
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


def _list_roots(reply: dict[str, Any]) -> list[Path]:
    kind = reply.get("kind")
    if kind == "PROPOSALS":
        return [("proposals",)]
    if kind == "BRIEF":
        return [("capabilities",)]
    return []


def _walk(value: Any, path: Path, found: list[tuple[int, Path]]) -> None:
    if isinstance(value, str):
        if u16_len(value) > _LONG:
            found.append((u16_len(value), path))
    elif isinstance(value, list):
        if value:
            found.append((u16_len(compact_json(value)), path))
        for index, item in enumerate(value):
            _walk(item, (*path, index), found)
    elif isinstance(value, dict):
        for key, item in js_items(value):
            _walk(item, (*path, key), found)


def _pick(reply: dict[str, Any]) -> Path | None:
    found: list[tuple[int, Path]] = []
    for root in _deep_roots(reply):
        _walk(_get(reply, root)[1], root, found)
    if not found:
        for root in _list_roots(reply):
            ok, value = _get(reply, root)
            if ok and isinstance(value, list) and value:
                found.append((u16_len(compact_json(value)), root))
    best: tuple[int, Path] | None = None
    for candidate in found:
        if best is None or candidate[0] > best[0]:
            best = candidate
    return None if best is None else best[1]


def _mores(
    original: dict[str, Any], work: dict[str, Any], cuts: list[Path]
) -> list[tuple[str, int, int, Any]]:
    out: list[tuple[str, int, int, Any]] = []
    for path in cuts:
        ok, current = _get(work, path)
        if not ok:
            continue
        full = _get(original, path)[1]
        if isinstance(current, list):
            rest: Any = full[len(current) :]
            out.append((".".join(map(str, path)), len(rest), estimate(lean(rest)), rest))
        else:
            rest = u16_slice(full, u16_len(current) - 1)
            out.append((".".join(map(str, path)), u16_len(rest), estimate(rest), rest))
    return out


def _with_more(work: dict[str, Any], existing: list[Any], entries: list[dict[str, Any]]) -> Any:
    if not entries:
        return work
    return {**work, "more": [*existing, *entries]}


def fit_oracle(
    reply: dict[str, Any], budget: int, *, handles: Callable[[], str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fit ``reply`` to ``budget`` with the plain re-render-every-round loop."""
    work = copy.deepcopy(reply)
    lens(work)  # the reply must render at all
    existing = list(work.get("more") or [])
    cuts: list[Path] = []
    cut_strings: set[Path] = set()
    for _ in range(_ROUNDS):
        entries = [
            {"handle": PLACEHOLDER, "path": p, "remaining": n, "est": e}
            for p, n, e, _rest in _mores(reply, work, cuts)
        ]
        if estimate(lens(_with_more(work, existing, entries))) <= budget:
            break
        path = _pick(work)
        if path is None:
            break
        value = _get(work, path)[1]
        if isinstance(value, list):
            _set(work, path, value[: len(value) // 2])
        else:
            text = value[:-1] if path in cut_strings and value.endswith("…") else value
            keep = max(_LONG, u16_len(text) // 2)
            if keep >= u16_len(text):
                break
            _set(work, path, u16_slice(text, 0, keep) + "…")
            cut_strings.add(path)
        if path not in cuts:
            cuts.append(path)
    parked: dict[str, Any] = {}
    entries = []
    for p, n, e, rest in _mores(reply, work, cuts):
        handle = handles()
        parked[handle] = rest
        entries.append({"handle": handle, "path": p, "remaining": n, "est": e})
    return _with_more(work, existing, entries), parked
