"""Finding, loading and checking the vector suites (the common format of docs/vectors.md).

The suites ship in the wheel as ``ppcheck/_data/vectors``; in a checkout (or an editable
install) the repository's ``vectors/`` folder is used. A suite is one JSON file directly
under ``vectors/<protocol>/``; sub-folders (``third_party/``, ``parley/upstream-format/``)
hold other formats with their own runners.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from _ppcli.rules import read_input

__all__ = [
    "PROTOCOLS",
    "SuiteFile",
    "check_result",
    "data_root",
    "first_difference",
    "load_suites",
    "operation_schema",
    "vectors_schema",
]

PROTOCOLS = ("pxp", "handoff", "vxp", "parley", "ppbind")
"""The protocols whose suites live under ``vectors/<protocol>/``."""


def data_root() -> tuple[Traversable, Traversable]:
    """Return ``(vectors folder, schemas folder)``, packaged or from the checkout."""
    packaged = resources.files("ppcheck") / "_data"
    if (packaged / "vectors").is_dir():
        return packaged / "vectors", packaged / "schemas"
    top = Path(__file__).resolve().parents[2]
    return top / "vectors", top / "schemas"


@dataclass(frozen=True)
class SuiteFile:
    """One suite file: its path relative to ``vectors/`` and its parsed content."""

    path: str
    """The file's path relative to ``vectors/`` (``<package>/<name>.json``)."""
    data: dict[str, Any]
    """The parsed file: ``suite``, ``version``, ``description``, ``notes``, ``tests``."""

    @property
    def suite(self) -> str:
        """The suite name, ``<package>.<operation>``."""
        return str(self.data["suite"])

    @property
    def tests(self) -> list[dict[str, Any]]:
        """The test cases of the suite, in file order."""
        tests: list[dict[str, Any]] = self.data["tests"]
        return tests


def _suite_problem(root: Traversable | None) -> Callable[[Any], str | None] | None:
    """Return a function naming the first schema problem of a suite file, or ``None``.

    ``jsonschema`` is imported here, on use: where it is missing (``ppcheck.pyz`` runs
    with the standard library alone) the shipped vectors, checked when the bundle was
    built, load unchecked, while a folder given by the user is refused.
    """
    try:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import best_match
    except ImportError:
        if root is None:
            return None
        raise ValueError(
            "checking a vectors folder needs the jsonschema package; the vectors shipped "
            "with ppcheck need nothing"
        ) from None
    validator = Draft202012Validator(vectors_schema())

    def problem(data: Any) -> str | None:
        error = best_match(validator.iter_errors(data))
        if error is None:
            return None
        where = "".join(f"[{p!r}]" for p in error.absolute_path)
        return f"at ${where}: {error.message[:200]}"

    return problem


def load_suites(root: Traversable | None = None) -> list[SuiteFile]:
    """Load every suite file under ``root`` (default: :func:`data_root`), sorted by path.

    Each file is checked against :func:`vectors_schema`; a folder that does not exist or
    holds no protocol folder, or a file that is not JSON or not a suite, raises
    ``ValueError`` naming it.
    """
    vectors = data_root()[0] if root is None else root
    if not vectors.is_dir():
        raise ValueError(f"vectors folder {vectors} does not exist or is not a folder")
    if not any((vectors / protocol).is_dir() for protocol in PROTOCOLS):
        raise ValueError(
            f"vectors folder {vectors} holds none of the protocol folders "
            + ", ".join(f"{p}/" for p in PROTOCOLS)
        )
    check = _suite_problem(root)
    found: list[SuiteFile] = []
    for protocol in PROTOCOLS:
        folder = vectors / protocol
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            if entry.is_file() and entry.name.endswith(".json"):
                path = f"{protocol}/{entry.name}"
                try:
                    data = json.loads(_suite_text(entry))
                except ValueError as exc:
                    raise ValueError(f"vectors/{path}: not a JSON file: {exc}") from exc
                problem = None if check is None else check(data)
                if problem is not None:
                    raise ValueError(f"vectors/{path}: not a suite file ({problem})")
                if not data["suite"].startswith(f"{protocol}."):
                    raise ValueError(
                        f"vectors/{path}: suite {data['suite']!r} is in another folder"
                    )
                found.append(SuiteFile(path, data))
    return sorted(found, key=lambda s: s.path)


def _suite_text(entry: Traversable) -> str:
    """A suite file's text; a file on disk is read at most ``MAX_INPUT_BYTES`` (64 MiB):
    more raises :class:`_ppcli.rules.InputTooLargeError` (``ppcheck``: ``error:
    input_too_large: …``, status 2), never a whole 2 GiB file into memory (review cli #1).
    The shipped suites (inside the wheel or ``ppcheck.pyz``) are read as they are."""
    if isinstance(entry, Path):
        return read_input(entry).decode("utf-8")
    return entry.read_text(encoding="utf-8")


def vectors_schema() -> dict[str, Any]:
    """Return the schema every suite file validates against (``schemas/vectors.schema.json``)."""
    loaded: dict[str, Any] = json.loads(
        (data_root()[1] / "vectors.schema.json").read_text(encoding="utf-8")
    )
    return loaded


def operation_schema(suite: str, part: str) -> dict[str, Any] | None:
    """Return the schema of ``part`` (``input`` or ``output``) of operation ``suite``.

    Operation schemas live at ``schemas/<package>/vectors/<operation>.<part>.json`` in the
    repository and inside each package in the wheel; ``None`` when there is none.
    """
    package, _, operation = suite.partition(".")
    name = f"vectors/{operation}.{part}.json"
    import importlib

    # each package's private schema module (src/_ppschema), whatever its top level exports
    module = importlib.import_module(f"{package}._schemas")
    if name not in module.schema_names():
        return None
    loaded: dict[str, Any] = module.load_schema(name)
    return loaded


def first_difference(expected: Any, actual: Any, path: str = "$") -> str | None:
    """Describe the first place where ``actual`` differs from ``expected``, or ``None``."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                return f"{path}.{key}: missing (expected {_short(expected[key])})"
            if key not in expected:
                return f"{path}.{key}: unexpected member {_short(actual[key])}"
            diff = first_difference(expected[key], actual[key], f"{path}.{key}")
            if diff is not None:
                return diff
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for index, (left, right) in enumerate(zip(expected, actual, strict=False)):
            diff = first_difference(left, right, f"{path}[{index}]")
            if diff is not None:
                return diff
        if len(expected) != len(actual):
            return f"{path}: expected {len(expected)} items, got {len(actual)}"
        return None
    if _is_number(expected) and _is_number(actual):
        # JSON has one number type: 2 and 2.0 are the same value (a JavaScript port
        # cannot tell them apart), while a boolean is never a number.
        if expected != actual and not _same_double(expected, actual):
            return f"{path}: expected {_short(expected)}, got {_short(actual)}"
        return None
    if type(expected) is not type(actual) or expected != actual:
        return f"{path}: expected {_short(expected)}, got {_short(actual)}"
    return None


MAX_SAFE_INTEGER = 2**53 - 1
"""Beyond it an integer in an expected output is compared as its nearest double."""


def _same_double(expected: int | float, actual: int | float) -> bool:
    """An expected integer beyond ±(2^53−1) is also matched by what a port without big
    integers writes for it (docs/conformance.md): its nearest IEEE-754 double as a float
    (``9.223372036854776e18``), or as the integer ``JSON.stringify`` spells that double
    with (the shortest round-trip digits, ``9223372036854776000``). Any other integer is
    another amount, even one with the same nearest double (``9223372036854775807``, what a
    port that saturates at int64 writes: review i24 #7). Within the safe range numbers
    compare exactly."""
    if not isinstance(expected, int) or abs(expected) <= MAX_SAFE_INTEGER:
        return False
    try:
        nearest = float(expected)
    except OverflowError:
        return False
    if isinstance(actual, float):
        return actual == nearest
    return actual == int(Decimal(repr(nearest)))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_result(case: dict[str, Any], result: dict[str, Any]) -> str | None:
    """Compare a harness result (``output`` | ``error`` | ``unsupported``) with a vector case.

    Returns ``None`` when it conforms, else one readable sentence: the first difference.
    An expected error matches on ``code``, and on ``reason`` when the vector gives one.
    """
    if result.get("unsupported") is True:
        return "unsupported by the implementation"
    if "output" in case:
        if "output" not in result:
            return f"expected an output, got error {_short(result.get('error'))}"
        return first_difference(case["output"], result["output"])
    expected = case["error"]
    if "error" not in result:
        return f"expected error {_short(expected)}, got output {_short(result.get('output'))}"
    got = result["error"]
    if not isinstance(got, dict) or got.get("code") != expected["code"]:
        return f"expected error code {expected['code']!r}, got {_short(got)}"
    if "reason" in expected and got.get("reason") != expected["reason"]:
        return f"expected error reason {expected['reason']!r}, got {_short(got.get('reason'))}"
    return None
