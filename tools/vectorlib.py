"""The case registry behind tools/gen_vectors.py (the only writer of vectors/).

A protocol's cases live in ``tools/vectorcases/<protocol>.py``. Each suite is a generator
function decorated with :func:`suite`; it yields :class:`Case` objects. A case states its
``input`` and, where the generator knows it independently, its expected ``output`` or
``error``; gen_vectors then runs every case through the library (``ppcheck.run``) and
refuses to write a file when the library disagrees with a stated expectation. A case that
states neither takes the library's answer (use that only where the expectation is checked
elsewhere, e.g. by a unit test or an upstream vector).

Files that follow another format (``vectors/parley/upstream-format/``) register with
:func:`raw_file` and return the whole JSON document.

Negative cases are derived mechanically from good ones with :func:`derive` and the
mutation helpers below: one vector per mutation class.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "RAW_FILES",
    "SUITES",
    "Case",
    "Mutation",
    "RawFile",
    "Suite",
    "derive",
    "dumps",
    "flip_char",
    "raw_file",
    "suite",
]


@dataclass(frozen=True)
class Case:
    """One vector. ``output`` or ``error`` (``{"code", "reason"?}``) may be left ``None``."""

    id: str
    input: dict[str, Any]
    output: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    comment: str = ""
    flags: tuple[str, ...] = ()
    notes: dict[str, str] = field(default_factory=dict)
    """Notes this case brings for its own flags; a note the suite declares wins."""


@dataclass(frozen=True)
class Suite:
    """A registered suite: one file ``vectors/<file>``."""

    name: str
    file: str
    description: str
    notes: dict[str, str]
    cases: Callable[[], Iterable[Case]]


@dataclass(frozen=True)
class RawFile:
    """A registered file in a format other than the common one."""

    file: str
    build: Callable[[], Any]


SUITES: dict[str, Suite] = {}
RAW_FILES: dict[str, RawFile] = {}


def suite(
    name: str,
    *,
    description: str,
    notes: dict[str, str] | None = None,
    file: str | None = None,
) -> Callable[[Callable[[], Iterable[Case]]], Callable[[], Iterable[Case]]]:
    """Register a generator of cases as suite ``name`` (``<package>.<operation>``).

    The file defaults to ``<package>/<operation with _ as ->.json``.
    """
    package, _, operation = name.partition(".")
    target = file or f"{package}/{operation.replace('_', '-')}.json"

    def register(fn: Callable[[], Iterable[Case]]) -> Callable[[], Iterable[Case]]:
        if name in SUITES:
            raise RuntimeError(f"suite {name} registered twice")
        if any(s.file == target for s in SUITES.values()):
            raise RuntimeError(f"file {target} registered twice")
        SUITES[name] = Suite(name, target, description, dict(notes or {}), fn)
        return fn

    return register


def raw_file(path: str) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    """Register a function returning a file written to ``vectors/<path>``.

    A returned ``str`` is written as it is (a README); anything else is a JSON document
    serialized with :func:`dumps`.
    """

    def register(fn: Callable[[], Any]) -> Callable[[], Any]:
        if path in RAW_FILES:
            raise RuntimeError(f"raw file {path} registered twice")
        RAW_FILES[path] = RawFile(path, fn)
        return fn

    return register


def dumps(value: Any) -> str:
    """Serialize a vector document byte-stably: 2-space indent, ASCII, trailing newline."""
    return json.dumps(value, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


@dataclass(frozen=True)
class Mutation:
    """A named mutation class applied to a deep copy of a good case's input."""

    name: str
    comment: str
    apply: Callable[[dict[str, Any]], None]
    error: dict[str, str] | None = None
    output: dict[str, Any] | None = None
    extra_flags: tuple[str, ...] = field(default=())


def derive(good: Case, mutations: Iterable[Mutation]) -> Iterator[Case]:
    """Yield one case per mutation class: ``<good id>-<mutation name>``, flagged with it."""
    for mutation in mutations:
        mutated = copy.deepcopy(good.input)
        mutation.apply(mutated)
        if mutated == good.input:
            raise RuntimeError(f"mutation {mutation.name} left case {good.id} unchanged")
        yield Case(
            id=f"{good.id}-{mutation.name}",
            input=mutated,
            output=mutation.output,
            error=mutation.error,
            comment=mutation.comment,
            flags=("derived", mutation.name, *mutation.extra_flags),
            notes={
                "derived": "mechanically derived from a good vector",
                mutation.name: mutation.comment,
            },
        )


_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def flip_char(text: str, index: int) -> str:
    """Return ``text`` with the character at ``index`` replaced by a different one.

    Base64url characters are replaced within the alphabet, so the result still decodes
    and the change reaches the bytes underneath; other characters are replaced by ``x``
    (or ``y`` when already ``x``).
    """
    char = text[index]
    if char in _B64URL:
        replacement = _B64URL[(_B64URL.index(char) + 1) % len(_B64URL)]
    else:
        replacement = "y" if char == "x" else "x"
    return text[:index] + replacement + text[index + 1 :]
