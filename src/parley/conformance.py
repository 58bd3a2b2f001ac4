"""Run conformance files in the Parley reference's format: ``python -m parley.conformance DIR``.

Every known file found directly in ``DIR`` is run against this implementation:

==================  =====================================================================
``canonical.json``  ``[{name, input, canonical}]``: :func:`parley.canonical`
``estimate.json``   ``[{text, est}]``: :func:`parley.lens.estimate`
``hash.json``       ``[{name, proposal, hash}]``: :func:`parley.proposal_hash`
``keys.json``       ``[{seed, public}]``: :meth:`parley.Key.from_seed`
``proof.json``      ``[{seed, aud, verb, target, ts, key, sig}]``: :func:`parley.sign_proof`
                    (byte-equal) and :func:`parley.verify_proof`
``grants.json``     ``{seeds, rootSpendBlockId, cases: [{name, token, trusted, proofKey, ctx,
                    expect: {ok, code?}}]}``: :func:`parley.verify_grant`
``lens*.json``      ``[{name, type: "value"|"reply", input, lens}]``: ``parley.lens.lean`` and
                    ``parley.lens.lens``
==================  =====================================================================

One line is printed per failing case, then ``N passed, N failed``. The exit status is 0
when every case passed, 1 when one failed, 2 when ``DIR`` holds no such file or a file
cannot be read (a fault of the run, not of a case).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._b64 import b64url_decode
from ._canonical import canonical, proposal_hash
from ._estimate import estimate
from ._grants import GrantContext, verify_grant
from ._keys import Key
from ._proof import sign_proof, verify_proof
from ._report import Report as _Report
from .errors import ParleyError

__all__ = ["Failure", "Report", "main", "run_directory", "run_file"]


@dataclass(frozen=True)
class Failure:
    """One failing case: the file, the case's name and what differed."""

    file: str
    case: str
    detail: str

    def __str__(self) -> str:
        return f"FAIL {self.file} {self.case}: {self.detail}"


@dataclass
class Report(_Report):
    """The outcome of a run: how many cases passed and every failure."""

    passed: int = 0
    failures: list[Failure] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    @property
    def failed(self) -> int:
        """The number of failing cases."""
        return len(self.failures)

    @property
    def ok(self) -> bool:
        """Whether at least one file ran and no case failed."""
        return bool(self.files) and not self.failures


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def _compare(got: Any, want: Any) -> str | None:
    if got == want and type(got) is type(want):
        return None
    return f"expected {_short(want)}, got {_short(got)}"


def _canonical(case: dict[str, Any]) -> str | None:
    return _compare(canonical(case["input"]), case["canonical"])


def _estimate(case: dict[str, Any]) -> str | None:
    return _compare(estimate(case["text"]), case["est"])


def _hash(case: dict[str, Any]) -> str | None:
    return _compare(proposal_hash(case["proposal"]), case["hash"])


def _keys(case: dict[str, Any]) -> str | None:
    return _compare(Key.from_seed(b64url_decode(case["seed"], what="seed")).public, case["public"])


def _proof(case: dict[str, Any]) -> str | None:
    key = Key.from_seed(b64url_decode(case["seed"], what="seed"))
    made = sign_proof(key, aud=case["aud"], verb=case["verb"], target=case["target"], ts=case["ts"])
    problem = _compare(made, {"key": case["key"], "ts": case["ts"], "sig": case["sig"]})
    if problem is not None:
        return problem
    given = {"key": case["key"], "ts": case["ts"], "sig": case["sig"]}
    verify_proof(given, aud=case["aud"], verb=case["verb"], target=case["target"], now=case["ts"])
    return None


def _context(raw: Any) -> GrantContext:
    """The case's ``ctx``, where a proposal that lacks a member still runs.

    The reference's format lists ``proposal: {hash, cost, risk}``; a case written without
    one of them is not a fault of this harness: no ``hash`` matches no ``only`` caveat, no
    ``cost`` is free, and no ``risk`` is taken as ``high``, the level that passes the
    fewest ``risk`` caveats.
    """
    if isinstance(raw, dict) and isinstance(raw.get("proposal"), dict):
        proposal = {"hash": "", "cost": None, "risk": "high"} | raw["proposal"]
        raw = {**raw, "proposal": proposal}
    return GrantContext.from_json(raw)


def _grant(case: dict[str, Any]) -> str | None:
    token = case["token"]
    tokens = token if isinstance(token, list) else [token]
    result = verify_grant(
        tokens,
        trusted=case["trusted"],
        proof_key=case.get("proofKey"),
        ctx=_context(case["ctx"]),
    )
    expect = case["expect"]
    if result.ok != expect["ok"]:
        got = "ok" if result.ok else f"{result.code} ({result.reason}: {result.message})"
        return f"expected ok={str(expect['ok']).lower()}, got {got}"
    if "code" in expect and result.code != expect["code"]:
        return f"expected code {expect['code']}, got {result.code} ({result.reason})"
    return None


def _lens(case: dict[str, Any]) -> str | None:
    from . import lens  # parley.lens: lean for values, lens for replies

    kind = case.get("type", "value")
    if kind not in ("value", "reply"):
        return f"unknown case type {kind!r}"
    render: Callable[[Any], str] = lens.lean if kind == "value" else lens.lens
    return _compare(render(case["input"]), case["lens"])


_LIST_RUNNERS: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "canonical.json": _canonical,
    "estimate.json": _estimate,
    "hash.json": _hash,
    "keys.json": _keys,
    "proof.json": _proof,
}


def _runner_for(name: str) -> Callable[[dict[str, Any]], str | None] | None:
    if name in _LIST_RUNNERS:
        return _LIST_RUNNERS[name]
    if name == "grants.json":
        return _grant
    if name.startswith("lens") and name.endswith(".json"):
        return _lens
    return None


def _case_name(case: Any, index: int) -> str:
    if isinstance(case, dict):
        for key in ("name", "text", "seed"):
            if isinstance(case.get(key), str) and case[key]:
                return repr(case[key]) if key == "text" else str(case[key])
    return f"#{index}"


def run_file(path: Path, report: Report | None = None) -> Report:
    """Run one conformance file (chosen by its name) and add its results to ``report``."""
    out = Report() if report is None else report
    runner = _runner_for(path.name)
    if runner is None:
        raise ParleyError(
            "bad_argument", f"{path.name} is not a known conformance file", reason="unknown_file"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ParleyError(
            "bad_argument", f"{path} cannot be read as JSON: {exc}", reason="bad_file"
        ) from None
    cases = data.get("cases") if path.name == "grants.json" and isinstance(data, dict) else data
    if not isinstance(cases, list):
        raise ParleyError(
            "bad_argument", f"{path.name} does not hold a list of cases", reason="bad_file"
        )
    out.files.append(path.name)
    for index, case in enumerate(cases):
        name = _case_name(case, index)
        try:
            problem = runner(case)
        except ParleyError as exc:
            problem = f"raised {exc}"
        except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
            problem = f"malformed case or crash: {type(exc).__name__}: {exc}"
        if problem is None:
            out.passed += 1
        else:
            out.failures.append(Failure(path.name, name, problem))
    return out


def run_directory(directory: Path | str) -> Report:
    """Run every known conformance file directly in ``directory`` (sorted by name)."""
    folder = Path(directory)
    if not folder.is_dir():
        raise ParleyError("bad_argument", f"{folder} is not a directory", reason="bad_file")
    report = Report()
    for path in sorted(folder.glob("*.json")):
        if _runner_for(path.name) is not None:
            run_file(path, report)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m parley.conformance DIR``; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m parley.conformance",
        description="Run Parley reference-format conformance files against this library.",
    )
    parser.add_argument("directory", type=Path, help="folder holding the conformance files")
    args = parser.parse_args(argv)
    try:
        report = run_directory(args.directory)
    except ParleyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not report.files:
        print(f"error: no conformance file found in {args.directory}", file=sys.stderr)
        return 2
    for failure in report.failures:
        print(failure)
    print(f"{report.passed} passed, {report.failed} failed")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
