"""Coded errors for the protocol packages: one table of codes per package, two kinds of error.

Every package (:mod:`pxp`, :mod:`handoff`, :mod:`vxp`, :mod:`parley`, :mod:`ppbind`) declares
one :class:`CodeTable`: each :class:`Code` names its kind, the stage it belongs to and a
sentence saying what it means. The package's errors derive from :class:`CodedError`:

.. code-block:: python

    CODES = CodeTable("pxp", [
        Code("bad_argument", "usage", "call", "An argument has the wrong type or value."),
        Code("not_json", "protocol", "parse", "The bytes are not one JSON value."),
    ])

    class PxpError(CodedError):
        codes = CODES                  # the family root: it owns the table

    class PxpUsageError(PxpError):
        kind = "usage"                 # the caller broke the rules

    class PxpProtocolError(PxpError):
        kind = "protocol"              # the peer's data is bad

A **usage** code is the caller's own mistake (a wrong argument type, a naive datetime, a bad
configuration); a **protocol** code is about data that came from a peer (a token, a frame, a
record), whatever the Python type it arrived in. ``PxpError("not_json", "…")`` builds a
``PxpProtocolError``: the table, not the raise site, decides the class, so a caller can catch
``PxpProtocolError`` for "their data" and ``PxpUsageError`` for "my bug". A code the table lacks
is refused with :class:`UnknownCodeError` (a :class:`LookupError`, never a
:class:`ValueError`, so it cannot pass for bad input): a raise site cannot invent a code,
including one built at run time. Asking a kind's class for a code of the other kind is refused
the same way.

Each family may also close its set of ``reason`` values (``CodeTable(..., reasons=...)``);
``reason=None`` is always allowed.

:meth:`CodeTable.markdown` renders the table the docs carry (``tools/gen_code_docs.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self

__all__ = ["Code", "CodeTable", "CodedError", "Kind", "UnknownCodeError"]

Kind = Literal["usage", "protocol"]
"""Who broke the rules: ``"usage"`` is the caller, ``"protocol"`` is the peer's data."""

_KINDS: frozenset[str] = frozenset(("usage", "protocol"))
_NAME = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)*")


class UnknownCodeError(LookupError):
    """A raise site used a code its package's table lacks, or a code of the other kind.

    This is a defect in the library, not bad input, so it is not a :class:`ValueError`."""


@dataclass(frozen=True, slots=True)
class Code:
    """One entry of a package's code table."""

    name: str
    """The stable machine code (``snake_case``, dots allowed for namespaces)."""
    kind: Kind
    """``"usage"`` (the caller's mistake) or ``"protocol"`` (the peer's data)."""
    stage: str
    """The stage the check belongs to (``parse``, ``signature``, ``chain``, ``policy``, …)."""
    sentence: str
    """One sentence saying what the code means, for the docs."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or _NAME.fullmatch(self.name) is None:
            raise UnknownCodeError(f"code name {self.name!r} is not snake_case")
        if self.kind not in _KINDS:
            raise UnknownCodeError(f"code {self.name!r} has kind {self.kind!r}")
        if not self.stage or not self.sentence.strip():
            raise UnknownCodeError(f"code {self.name!r} needs a stage and a sentence")


class CodeTable(Mapping[str, Code]):
    """The closed, ordered set of codes one package may raise (a read-only mapping by name)."""

    __slots__ = ("_codes", "_reasons", "package")

    def __init__(
        self, package: str, codes: Iterable[Code], *, reasons: Mapping[str, str] | None = None
    ) -> None:
        self.package = package
        table: dict[str, Code] = {}
        for code in codes:
            if code.name in table:
                raise UnknownCodeError(f"{package} declares the code {code.name!r} twice")
            table[code.name] = code
        self._codes = table
        self._reasons = None if reasons is None else dict(reasons)

    def __getitem__(self, name: str) -> Code:
        return self._codes[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._codes)

    def __len__(self) -> int:
        return len(self._codes)

    @property
    def reasons(self) -> Mapping[str, str] | None:
        """The closed set of ``reason`` values (name → sentence), or None when open."""
        return self._reasons

    def entry(self, name: object) -> Code:
        """Return the entry for ``name`` or raise :class:`UnknownCodeError`."""
        code = self._codes.get(name) if isinstance(name, str) else None
        if code is None:
            raise UnknownCodeError(f"{name!r} is not a code in {self.package}'s table")
        return code

    def check_reason(self, reason: object) -> None:
        """Refuse a ``reason`` outside the closed set (None is always allowed)."""
        if reason is None or self._reasons is None:
            return
        if not isinstance(reason, str) or reason not in self._reasons:
            raise UnknownCodeError(f"{reason!r} is not a reason in {self.package}'s table")

    def markdown(self) -> str:
        """The table as Markdown: code, kind, stage, meaning (then the reasons, if closed)."""
        lines = ["| code | kind | stage | meaning |", "| --- | --- | --- | --- |"]
        lines += [
            f"| `{c.name}` | {c.kind} | {c.stage} | {_cell(c.sentence)} |"
            for c in self._codes.values()
        ]
        if self._reasons is not None:
            lines += ["", "| reason | meaning |", "| --- | --- |"]
            lines += [f"| `{r}` | {_cell(s)} |" for r, s in self._reasons.items()]
        return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


class CodedError(ValueError):
    """The base of every package's errors: a code from the package's table and a sentence.

    Subclass it once as the family root (setting :attr:`codes`), then once per :data:`Kind`
    (setting :attr:`kind`). Building the root (or any class above the kinds) returns an
    instance of the class the code's kind names; further subclasses of a kind class (a
    special error carrying more fields) keep their own class and accept only that kind.
    """

    codes: ClassVar[CodeTable]
    """The family's table (set on the family root)."""
    kind: ClassVar[Kind | None] = None
    """The kind this class carries (set on the two kind classes)."""
    _by_kind: ClassVar[dict[str, type[CodedError]]]

    code: str
    """The stable machine code, a key of :attr:`codes`."""
    reason: str | None
    """An optional finer, equally stable code naming the precise failing check."""
    message: str
    """One sentence saying what was wrong and where."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "codes" in cls.__dict__:
            cls._by_kind = {}
        kind = cls.__dict__.get("kind")
        if kind is not None:
            if kind not in _KINDS:
                raise UnknownCodeError(f"{cls.__name__} declares the kind {kind!r}")
            cls._by_kind.setdefault(kind, cls)

    def __new__(cls, code: str, message: str, *args: Any, **kwargs: Any) -> Self:
        """Pick the class the code's kind names (see the class docstring)."""
        entry = cls.codes.entry(code)
        cls.codes.check_reason(kwargs.get("reason"))
        if cls.kind is None:
            target = cls._by_kind.get(entry.kind)
            if target is None or not issubclass(target, cls):
                raise UnknownCodeError(f"{cls.__name__} has no class for {entry.kind} codes")
        elif entry.kind != cls.kind:
            raise UnknownCodeError(
                f"{code!r} is a {entry.kind} code; {cls.__name__} carries {cls.kind} codes"
            )
        else:
            target = cls
        return super().__new__(target, message)

    def __init__(self, code: str, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    @property
    def stage(self) -> str:
        """The stage the code belongs to, from the table."""
        return self.codes[self.code].stage

    def __str__(self) -> str:
        tag = self.code if self.reason is None else f"{self.code}/{self.reason}"
        return f"{tag}: {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.code, self.message), dict(self.__dict__))


def _rebuild(cls: type[CodedError], code: str, message: str) -> CodedError:
    """Unpickle an error whose constructor takes more than its message."""
    error = ValueError.__new__(cls, message)
    ValueError.__init__(error, message)
    return error
