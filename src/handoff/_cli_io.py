"""What every ``handoff`` subcommand shares: the configuration file and the record store.

Every command reads one configuration form (``{"roles", "extensions"?, "side"?}``) and
names its records by one target: a JSON Lines file (``records.jsonl``, ``-`` for standard
input) or a store URL (``sqlite:PATH``, ``postgresql://…``). Appending to a file never
damages it: a file whose last line lacks its newline gets one first, and a torn last line
(a crash in the middle of a write) is reported and never extended.

A file and standard input are read by one reader (docs/spec/handoff.md, "Using it", ours):
a line ends at LF, a CR right before the LF belongs to the line end, and any other CR is
part of the line. A line over the record size limit or not in UTF-8 is handed on as it is
(a long one cut just past the limit), so the one strict parse refuses it as one bad record
with its line number, as it refuses any other.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from _ppcli.rules import MAX_INPUT_BYTES, InputTooLargeError, read_input

from ._canonical import canonical
from ._config import Extension, ExtensionRegistry, Roles
from ._fold import Registry
from ._json import MAX_RECORD_BYTES, parse_line
from ._store import SQLiteStore
from .errors import HandoffError

if TYPE_CHECKING:
    from ._postgres import PostgresStore

__all__ = ["Config", "Target", "load_config", "read_lines", "target"]

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Config:
    """A deployment as the command line reads it: roles, extensions, the principal side."""

    roles: Roles
    extensions: ExtensionRegistry
    side: Any  # a PrincipalSide (imported lazily: the conformance module imports the CLI's)
    jwks_named: bool


def _read_text(path: str, what: str) -> str:
    try:
        data = read_input(path)  # at most _ppcli.rules.MAX_INPUT_BYTES
    except OSError as exc:
        raise HandoffError("io", f"cannot read {what} {path}: {exc.strerror}") from None
    if data.startswith(_BOM):
        raise _bom(f"{what} {path}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise HandoffError(
            "parse", f"{what} {path} is not UTF-8 text", reason="json_syntax"
        ) from None


def load_config(path: str) -> Config:
    """Read the configuration file every command takes (``--config``).

    ``extensions`` lists built-in names (``"acts/0.3"``) or JSON descriptions; without it
    the built-in extensions are used. ``side`` configures the principal side (mandates,
    ``jwks``, ``verifiable``).
    """
    from ._conformance import EXTENSIONS, PrincipalSide

    value = parse_line(_read_text(path, "config"), where=f"config {path}")
    if "roles" not in value:
        raise HandoffError("config", f"config {path} has no roles", reason="config_invalid")
    listed = value.get("extensions")
    if listed is None:
        extensions = EXTENSIONS
    elif not isinstance(listed, list):
        raise HandoffError(
            "config", f"config {path}: extensions is not a list", reason="config_invalid"
        )
    else:
        chosen = []
        for entry in listed:
            if isinstance(entry, str):
                builtin = EXTENSIONS.get(entry)
                if builtin is None:
                    raise HandoffError(
                        "config",
                        f"config {path}: no built-in extension {entry!r}",
                        reason="config_invalid",
                    )
                chosen.append(builtin)
            else:
                chosen.append(Extension.from_json(entry))
        extensions = ExtensionRegistry(chosen)
    side_value = value.get("side", {})
    side = PrincipalSide.from_json(side_value)
    keys = side.key_set()
    if keys is not None:
        # an unusable JWKS would make every genuine settlement read as forged: refused here
        try:
            usable = keys.keys()
        except HandoffError as exc:
            raise HandoffError(
                "config", f"config {path}: side.jwks: {exc.message}", reason="config_invalid"
            ) from None
        if not usable:
            raise HandoffError(
                "config",
                f"config {path}: side.jwks holds no Ed25519 or P-256 key",
                reason="config_invalid",
            )
    return Config(Roles.from_json(value["roles"]), extensions, side, side.jwks is not None)


def _bom(name: str) -> HandoffError:
    return HandoffError(
        "parse",
        f"{name} starts with a byte order mark (U+FEFF); save it as UTF-8 without one",
        reason="json_syntax",
    )


def _lines(stream: BinaryIO, name: str) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` for every non-blank line of ``stream``, without its line end.

    A line longer than :data:`MAX_RECORD_BYTES` is cut just past the limit (the parse
    refuses it) and the rest of it skipped, up to ``MAX_INPUT_BYTES`` without its line end:
    a line that never ends stops the command (:class:`InputTooLargeError`) instead of being
    read forever. A line of JSON whitespace only (spaces, tabs, CRs) is blank.
    """
    bound = MAX_RECORD_BYTES + 2  # the longest line that is not over the limit, CR LF included
    number = 0
    while raw := stream.readline(bound):
        number += 1
        if number == 1 and raw.startswith(_BOM):
            raise _bom(name)
        if raw.endswith(b"\n"):
            line = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
        elif len(raw) < bound:  # the last line, without a line end
            line = raw
        else:
            line = raw[: MAX_RECORD_BYTES + 1]
            size, tail = len(raw), raw[-2:]
            while not tail.endswith(b"\n") and (raw := stream.readline(1 << 20)):
                size, tail = size + len(raw), (tail + raw)[-2:]
                # what may be the line end (LF, CR LF, or a CR whose LF is still to come)
                end = 2 if tail == b"\r\n" else 1 if tail.endswith((b"\n", b"\r")) else 0
                if size - end > MAX_INPUT_BYTES:
                    raise InputTooLargeError(f"line {number} of {name}", MAX_INPUT_BYTES)
        if line.strip(b" \t\r"):
            yield number, line


def read_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line number, line)`` for every non-blank line of a JSON Lines file (``-``:
    standard input, read line by line, so a stream of records has no total bound)."""
    if path == "-":
        stream = getattr(sys.stdin, "buffer", None)  # None: file descriptor 0 was closed
        if stream is None:
            raise HandoffError("io", "standard input is closed")
        yield from _lines(stream, "standard input")
        return
    try:
        data = read_input(path)  # at most _ppcli.rules.MAX_INPUT_BYTES
    except OSError as exc:
        raise HandoffError("io", f"cannot read records {path}: {exc.strerror}") from None
    yield from _lines(io.BytesIO(data), f"records {path}")


class Target:
    """Where a command's records live: a JSON Lines file, a SQLite or a PostgreSQL store."""

    def __init__(self, spec: str, config: Config, *, create: bool) -> None:
        self.spec = spec
        self.config = config
        self.store: SQLiteStore | PostgresStore | None = None
        if spec.startswith("sqlite:"):
            db = spec[len("sqlite:") :]
            if not db:
                raise HandoffError("usage", "sqlite: needs a path (sqlite:PATH)", reason="url")
            if not create and not Path(db).exists():
                raise HandoffError("io", f"no SQLite store at {db}", reason="store_missing")
            self.store = SQLiteStore(
                db,
                roles=config.roles,
                extensions=config.extensions,
                keys=config.side.key_set(),
                verifiable=config.side.verifiable,
            )
        elif spec.startswith(("postgresql://", "postgres://")):
            from ._postgres import PostgresStore

            self.store = PostgresStore(
                spec,
                roles=config.roles,
                extensions=config.extensions,
                keys=config.side.key_set(),
                verifiable=config.side.verifiable,
                create=create,
            )
        elif "://" in spec:
            from ppstore import redact

            raise HandoffError("usage", f"unsupported store URL {redact(spec)!r}", reason="url")

    def close(self) -> None:
        """Close the store, if one is open."""
        if self.store is not None:
            self.store.close()

    def registry(self, *, strict: bool, missing_ok: bool = False) -> tuple[Registry, list[str]]:
        """Fold every record held; return the registry and the rejections reported.

        ``strict``: the first rejected line of a file raises (a command about to act);
        otherwise each is reported and the rest folded. A records file that does not
        exist is an error (``io``/``records_missing``) unless ``missing_ok`` (a command
        that creates it, ``md sync``).
        """
        if self.store is not None:
            registry = self.store.registry()
            found = [
                f"{self.spec}: record {bad['at']!r}: rejected {bad['code']}/{bad['reason']}"
                for bad in registry.rejected()
            ]
            if strict and found:
                raise HandoffError(
                    "store",
                    f"{found[0]} (the store holds a row it cannot read)",
                    reason="store_row_rejected",
                )
            return registry, found
        registry = Registry(roles=self.config.roles, extensions=self.config.extensions)
        rejected: list[str] = []
        if self.spec != "-" and not Path(self.spec).exists():
            if not missing_ok:
                raise HandoffError("io", f"no records file {self.spec}", reason="records_missing")
            return registry, rejected
        for number, line in read_lines(self.spec):
            try:
                registry.add_lines([line])
            except HandoffError as exc:
                where = f"{self.spec}:{number}"
                if exc.code in ("ownership", "authority"):
                    # who held which role when a line was written cannot be known from a
                    # plain file: a refusal by today's roles is reported, never dropped
                    # silently (docs/spec/handoff.md §3)
                    registry.note_role_changed(number, exc)
                    print(f"{where}: role_changed {describe(exc)}", file=sys.stderr)
                    continue
                if strict:
                    raise HandoffError(
                        exc.code, f"{where}: {exc.message}", reason=exc.reason
                    ) from None
                rejected.append(f"{where}: rejected {describe(exc)}")
        return registry, rejected

    def append(self, records: list[dict[str, Any]]) -> None:
        """Append ``records`` (already checked); to a file, never damaging what is there."""
        if not records:
            return
        if self.store is not None:
            for record in records:
                self.store.append(record)
            return
        append_lines(self.spec, [canonical(r).decode("utf-8") for r in records])


def append_lines(path: str, lines: list[str]) -> None:
    """Append JSON lines to ``path``; a last line without newline gets one, a torn one stops it."""
    try:
        with open(path, "a+b") as handle:
            size = handle.seek(0, 2)
            prefix = b""
            if size:
                handle.seek(max(0, size - MAX_RECORD_BYTES))
                tail = handle.read()
                if not tail.endswith(b"\n"):
                    last = tail.rsplit(b"\n", 1)[-1]
                    try:
                        parse_line(last.decode("utf-8"))
                    except (HandoffError, UnicodeDecodeError):
                        raise HandoffError(
                            "io",
                            f"{path}: the last line is torn (cut off in a write); repair it "
                            "before anything is appended",
                            reason="torn_line",
                        ) from None
                    prefix = b"\n"
            handle.write(prefix + "".join(line + "\n" for line in lines).encode("utf-8"))
    except OSError as exc:
        raise HandoffError("io", f"cannot append to {path}: {exc.strerror}") from None


def describe(exc: HandoffError) -> str:
    """``code/reason: message`` as every command prints a rejection."""
    tag = exc.code if exc.reason is None else f"{exc.code}/{exc.reason}"
    return f"{tag}: {exc.message}"


def target(args: Any, config: Config, *, create: bool = False) -> Target:
    """The target named by ``FILE``, ``--state URL`` or ``--db PATH`` (exactly one)."""
    given = [
        v
        for v in (
            getattr(args, "file", None),
            getattr(args, "state_url", None),
            f"sqlite:{args.db}" if getattr(args, "db", None) else None,
        )
        if v is not None
    ]
    if len(given) != 1:
        raise HandoffError("usage", "give exactly one of FILE, --state URL or --db PATH")
    return Target(given[0], config, create=create)
