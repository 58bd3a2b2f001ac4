"""Schema validation for the restricted JSON Schema subset Handoff uses.

The draft limits record schemas to ``type``, ``required``, ``properties``, ``enum``,
``const``, ``pattern``, ``items`` and a relative ``$ref`` (annotations such as ``title``
and ``description`` are allowed too), "so that a small validator suffices". Two
validators are offered, and a property test keeps them equal:

* :func:`boundary_validator` -- ``jsonschema`` (Draft 2020-12) with two keywords made
  strict: ``type: integer`` accepts only JSON integers written without a fraction
  (``1.0`` is refused, and so is ``true``) and ``pattern`` is evaluated as ECMA-262, where
  ``$`` matches only at the very end (Python's ``re`` also matches before a final ``\\n``).
* :func:`compiled_validator` -- the same rules compiled into plain Python closures for the
  hot path (folding a million records).

Plain ``jsonschema`` differs from both on exactly those two points; the differences are
deliberate and documented in docs/spec/handoff.md.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from ._schemas import own_schema, schema_names
from .errors import HandoffError

__all__ = [
    "ALLOWED_KEYWORDS",
    "ANNOTATION_KEYWORDS",
    "Check",
    "boundary_validator",
    "check_restricted",
    "check_schema",
    "compiled_validator",
    "ecma_pattern",
]

ALLOWED_KEYWORDS = frozenset(
    {"type", "required", "properties", "enum", "const", "pattern", "items", "$ref"}
)
"""The validation keywords the draft allows in record schemas (§4)."""

ANNOTATION_KEYWORDS = frozenset({"$schema", "$id", "$comment", "title", "description", "examples"})
"""Keywords that carry no validation and may appear beside the allowed ones."""

Check = Callable[[Any], "str | None"]
"""A compiled schema: returns ``None`` when valid, else where and why it failed."""


_ECMA_SPACE = (
    "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)
_POSITIVE = {"d": "0-9", "w": "A-Za-z0-9_", "s": _ECMA_SPACE}


def ecma_pattern(pattern: str) -> re.Pattern[str]:
    """Compile an ECMA-262 ``pattern`` (``u`` flag semantics) into an equivalent Python regex.

    The differences that matter are translated: an unescaped ``$`` outside a character
    class becomes ``\\Z`` (end of input only; Python's ``$`` also matches before a final
    newline), the shorthand classes ``\\d``, ``\\w`` and ``\\s`` (and their negations) are
    spelled out with ECMA-262's definitions (Python's are Unicode-wide), and ``\\b`` uses
    ASCII word characters. A negated shorthand inside a bracket class is accepted only as
    the "any character" idiom (``[\\s\\S]`` and the like); otherwise the pattern is refused
    (:class:`~handoff.HandoffUsageError` ``schema_invalid``). Nothing is remembered
    between calls.
    """
    if not isinstance(pattern, str):
        raise HandoffError("schema_invalid", "a pattern must be a string")
    out: list[str] = []
    index = 0
    length = len(pattern)
    while index < length:
        char = pattern[index]
        if char == "\\":
            nxt = pattern[index + 1 : index + 2]
            if nxt.lower() in _POSITIVE:
                body = _POSITIVE[nxt.lower()]
                out.append(f"[{body}]" if nxt.islower() else f"[^{body}]")
            else:
                out.append(pattern[index : index + 2])
            index += 2
            continue
        if char == "[":
            index = _translate_class(pattern, index, out)
            continue
        if char == "$":
            out.append(r"\Z")
        elif char == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        else:
            out.append(char)
        index += 1
    try:
        return re.compile("".join(out), re.ASCII)
    except re.error as exc:
        raise HandoffError(
            "schema_invalid", f"pattern {pattern!r} does not compile: {exc}"
        ) from None


own_pattern = functools.cache(ecma_pattern)
""":func:`ecma_pattern` remembered for the patterns of this package's own schemas only."""


def _translate_class(pattern: str, start: int, out: list[str]) -> int:
    index = start + 1
    parts: list[str] = []
    negated_shorthands: set[str] = set()
    positive_shorthands: set[str] = set()
    if pattern[index : index + 1] == "^":
        parts.append("^")
        index += 1
    if pattern[index : index + 1] == "]":
        parts.append("\\]")
        index += 1
    while index < len(pattern) and pattern[index] != "]":
        char = pattern[index]
        if char == "\\":
            nxt = pattern[index + 1 : index + 2]
            if nxt in _POSITIVE:
                parts.append(_POSITIVE[nxt])
                positive_shorthands.add(nxt)
            elif nxt.lower() in _POSITIVE:
                negated_shorthands.add(nxt.lower())
            else:
                parts.append(pattern[index : index + 2])
            index += 2
            continue
        parts.append("\\[" if char == "[" else char)
        index += 1
    if index >= len(pattern):
        raise HandoffError("schema_invalid", f"pattern {pattern!r} has an unclosed class")
    if negated_shorthands:
        if not negated_shorthands <= positive_shorthands or parts[:1] == ["^"]:
            raise HandoffError(
                "schema_invalid",
                f"pattern {pattern!r} negates a shorthand inside a class; spell it out",
            )
        out.append("(?s:.)")
    else:
        out.append("[" + "".join(parts) + "]")
    return index + 1


# --- the boundary validator: jsonschema with strict integer and ECMA-262 pattern -------


def _is_integer(checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not own_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_StrictValidator = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    validators={"pattern": _pattern},
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
)


def _without_dialect(contents: dict[str, Any]) -> dict[str, Any]:
    # jsonschema picks the validator class of a referenced schema from its "$schema";
    # without this, every $ref'd file would be checked by the plain (lenient) class.
    return {k: v for k, v in contents.items() if k != "$schema"}


@functools.cache
def _strict_registry() -> Registry[Any]:
    return Registry().with_resources(
        (n, DRAFT202012.create_resource(_without_dialect(own_schema(n)))) for n in schema_names()
    )


@functools.cache
def boundary_validator(name: str) -> Any:
    """Return the strict ``jsonschema`` validator for schema ``name`` (see module doc)."""
    base = _without_dialect(own_schema(name))
    base.setdefault("$id", name)
    return _StrictValidator(base, registry=_strict_registry())


# --- the compiled validator ---------------------------------------------------------------


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _json_equal(left: Any, right: Any) -> bool:
    """JSON equality as jsonschema computes it, but ``1`` and ``1.0`` stay distinct."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            _json_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if type(left) is not type(right):
        return False
    return bool(left == right)


def _resolve(base: str, ref: str) -> tuple[str, dict[str, Any]]:
    if "://" in ref or ref.startswith("/"):
        raise HandoffError("schema_invalid", f"$ref {ref!r} in {base} is not a relative path")
    path, _, fragment = ref.partition("#")
    folder = base.rsplit("/", 1)[0] + "/" if "/" in base else ""
    name = base if not path else _normalise(folder + path)
    node: Any = own_schema(name)
    for part in [p for p in fragment.split("/") if p]:
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return name, node


def _normalise(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in {"", "."}:
            parts.append(part)
    return "/".join(parts)


class _CodeGen:
    """Generate one Python function per schema: straight-line checks, ``$ref`` inlined.

    A ``$ref`` that refers back to a schema being generated (recursion) becomes a call to
    a separately generated function instead.
    """

    def __init__(self) -> None:
        self.consts: dict[str, Any] = {"_json_equal": _json_equal}
        self.functions: dict[tuple[str, str], str] = {}
        self.sources: list[str] = []
        self.stack: list[tuple[str, str]] = []
        self.counter = 0

    def const(self, value: Any) -> str:
        name = f"_k{len(self.consts)}"
        self.consts[name] = value
        return name

    def fresh(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    def function(self, name: str, fragment: str, node: Any) -> str:
        key = (name, fragment)
        if key in self.functions:
            return self.functions[key]
        fn = f"_f{len(self.functions)}"
        self.functions[key] = fn
        self.stack.append(key)
        body = self.emit(node, name, "v0", "", 1)
        self.stack.pop()
        self.sources.append("\n".join([f"def {fn}(v0):", *body, "    return None", ""]))
        return fn

    def emit(self, schema: Any, base: str, var: str, where: str, depth: int) -> list[str]:
        pad = "    " * depth
        at = repr(where or "the value")
        if schema is True:
            return []
        if schema is False:
            return [f"{pad}return {at} + ' is not allowed'"]
        if not isinstance(schema, dict):
            raise HandoffError("schema_invalid", f"a schema in {base} is not an object")
        out: list[str] = []
        kind: set[str] = set()
        if "type" in schema:
            wanted = schema["type"]
            names = [wanted] if isinstance(wanted, str) else list(wanted)
            tests = " or ".join(_TYPE_TESTS[n].format(v=var) for n in names)
            out.append(f"{pad}if not ({tests}):")
            out.append(f"{pad}    return {at} + ' is not of type {'/'.join(names)}'")
            kind = set(names)
        if "const" in schema:
            const = schema["const"]
            if isinstance(const, str):
                test = f"{var} == {self.const(const)}"
                if kind != {"string"}:
                    test = f"isinstance({var}, str) and {test}"
            else:
                test = f"_json_equal({var}, {self.const(const)})"
            out.append(f"{pad}if not ({test}):")
            out.append(f"{pad}    return {at} + ' is not ' + {repr(const)!r}")
        if "enum" in schema:
            options = list(schema["enum"])
            if all(isinstance(o, str) for o in options):
                test = f"{var} in {self.const(frozenset(options))}"
                if kind != {"string"}:
                    test = f"isinstance({var}, str) and {test}"
            else:
                opts = self.const(options)
                test = f"any(_json_equal({var}, o) for o in {opts})"
            out.append(f"{pad}if not ({test}):")
            out.append(f"{pad}    return {at} + ' is not an allowed value'")
        if "pattern" in schema:
            search = self.const(own_pattern(schema["pattern"]).search)
            guard = "" if kind == {"string"} else f"isinstance({var}, str) and "
            shortcut = _SHORTCUTS.get(schema["pattern"])
            if shortcut is not None:
                # a cheaper test that implies the pattern matches; the regex decides otherwise
                guard += f"not ({shortcut.format(v=var)}) and "
            out.append(f"{pad}if {guard}{search}({var}) is None:")
            out.append(f"{pad}    return {at} + ' does not match ' + {repr(schema['pattern'])!r}")
        object_checks: list[str] = []
        if "required" in schema:
            for name in schema["required"]:
                object_checks.append(f"{pad}    if {name!r} not in {var}:")
                object_checks.append(
                    f"{pad}        return {at} + ' lacks required member ' + {repr(name)!r}"
                )
        if "properties" in schema:
            required = set(schema.get("required", ()))
            for name, sub in schema["properties"].items():
                inner = self.fresh()
                if name in required:
                    body = self.emit(sub, base, inner, f"{where}.{name}", depth + 1)
                    if body:
                        object_checks.append(f"{pad}    {inner} = {var}[{name!r}]")
                        object_checks.extend(body)
                    continue
                body = self.emit(sub, base, inner, f"{where}.{name}", depth + 2)
                if body:
                    object_checks.append(f"{pad}    if {name!r} in {var}:")
                    object_checks.append(f"{pad}        {inner} = {var}[{name!r}]")
                    object_checks.extend(body)
        if object_checks:
            if kind == {"object"}:
                out.extend(line[4:] for line in object_checks)
            else:
                out.append(f"{pad}if isinstance({var}, dict):")
                out.extend(object_checks)
        if "items" in schema:
            inner = self.fresh()
            body = self.emit(schema["items"], base, inner, f"{where}[]", depth + 2)
            if body:
                out.append(f"{pad}if isinstance({var}, list):")
                out.append(f"{pad}    for {inner} in {var}:")
                out.extend(body)
        if "$ref" in schema:
            ref = schema["$ref"]
            name, node = _resolve(base, ref)
            key = (name, ref.partition("#")[2])
            if key in self.stack or key in self.functions:
                fn = self.function(name, key[1], node)
                problem = self.fresh()
                out.append(f"{pad}{problem} = {fn}({var})")
                out.append(f"{pad}if {problem} is not None:")
                out.append(f"{pad}    return {at} + ': ' + {problem}")
            else:
                self.stack.append(key)
                out.extend(self.emit(node, name, var, where, depth))
                self.stack.pop()
        return out


_IDENTIFIER = (
    "^[^\\u0009-\\u000d\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029"
    "\\u202f\\u205f\\u3000\\ufeff]{1,256}$"
)
_SHORTCUTS = {
    # every character the identifier pattern excludes is unprintable to Python except the
    # space, so a printable string without a space of 1 to 256 code points matches it.
    _IDENTIFIER: "{v}.isprintable() and ' ' not in {v} and 0 < len({v}) <= 256",
}

_TYPE_TESTS = {
    "object": "isinstance({v}, dict)",
    "array": "isinstance({v}, list)",
    "string": "isinstance({v}, str)",
    "integer": "(isinstance({v}, int) and not isinstance({v}, bool))",
    "number": "(isinstance({v}, (int, float)) and not isinstance({v}, bool))",
    "boolean": "isinstance({v}, bool)",
    "null": "{v} is None",
}


def _generate(name: str) -> Check:
    gen = _CodeGen()
    entry = gen.function(name, "", own_schema(name))
    namespace: dict[str, Any] = {**gen.consts, "_MISSING": _MISSING}
    exec(compile("\n".join(gen.sources), f"<handoff schema {name}>", "exec"), namespace)  # noqa: S102
    check: Check = namespace[entry]
    return check


_MISSING = object()


@functools.cache
def compiled_validator(name: str) -> Check:
    """Return the compiled check of schema ``name``: ``None`` when valid, else the problem.

    Accepts exactly what :func:`boundary_validator` accepts (a hypothesis property in the
    test-suite keeps the two equal).
    """
    check_restricted(name)
    return _generate(name)


def _walk_schema(node: Any, where: str) -> Iterator[str]:
    if isinstance(node, bool):
        return
    if not isinstance(node, dict):
        yield f"{where}: a schema must be an object"
        return
    for key, value in node.items():
        if key not in ALLOWED_KEYWORDS and key not in ANNOTATION_KEYWORDS:
            yield f"{where}: keyword {key!r} is outside the allowed subset"
        elif key == "properties":
            if not isinstance(value, dict):
                yield f"{where}: properties must be an object"
                continue
            for name, sub in value.items():
                yield from _walk_schema(sub, f"{where}/properties/{name}")
        elif key == "items":
            yield from _walk_schema(value, f"{where}/items")
        elif key == "$ref":
            if not isinstance(value, str) or "://" in value or value.startswith("/"):
                yield f"{where}: $ref {value!r} is not a relative path"
        elif key == "pattern":
            try:
                ecma_pattern(value)
            except HandoffError as exc:
                yield f"{where}: {exc.message}"


def check_restricted(name: str) -> None:
    """Raise :class:`HandoffError` unless schema ``name`` uses only the allowed subset."""
    problems = list(_walk_schema(own_schema(name), name))
    if problems:
        raise HandoffError("schema_invalid", "; ".join(problems))


def record_schema_names() -> tuple[str, ...]:
    """Return the names of the record schemas (everything but the vector schemas)."""
    return tuple(n for n in schema_names() if not n.startswith("vectors/"))


def check_schema(name: str, instance: Any, *, fast: bool = False) -> Any:
    """Validate ``instance`` against schema ``name`` and return ``instance``.

    An invalid instance raises :class:`~handoff.HandoffProtocolError` ``schema``
    (``schema_invalid``); a ``name`` that is no schema raises
    :class:`~handoff.HandoffUsageError` ``schema_unknown``. ``fast`` selects the compiled
    validator; otherwise the strict ``jsonschema`` one is used. Both accept exactly the
    same instances.
    """
    if not isinstance(name, str) or name not in schema_names():
        raise HandoffError("schema_unknown", f"no handoff schema is named {str(name)[:80]!r}")
    if fast:
        problem = compiled_validator(name)(instance)
    else:
        error = next(iter(boundary_validator(name).iter_errors(instance)), None)
        problem = None
        if error is not None:
            path = "".join(f"[{p!r}]" for p in error.absolute_path)
            problem = f"at {path or 'the top'}: {error.message}"
    if problem is not None:
        raise HandoffError("schema", f"{name}: {problem}", reason="schema_invalid")
    return instance
