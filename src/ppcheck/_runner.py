"""Running suites against an implementation and reporting the results.

The implementation is this library in process (the default) or an adapter executable
(``--impl``). Suites run in parallel, one adapter process each; cases of one suite run in
order. A case has one of five outcomes: ``passed``, ``failed``, ``unsupported``,
``known`` (listed as a known failure and still failing) and ``fixed`` (listed as a known
failure but passing, which counts as a failure so the list is kept honest).
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from ._harness import Adapter, Answer, printable
from ._vectors import SuiteFile, check_result

__all__ = [
    "CaseOutcome",
    "RunnerError",
    "StoppedError",
    "SuiteReport",
    "failure_count",
    "junit_xml",
    "run_suites",
    "summary_line",
    "table",
]


@dataclass(frozen=True)
class CaseOutcome:
    """The outcome of one vector."""

    id: str
    """The vector's id."""
    status: str
    """``"passed"``, ``"failed"``, ``"unsupported"``, ``"known"`` (a listed known failure)
    or ``"fixed"`` (listed as known but passing: a failure of the run)."""
    detail: str | None = None
    """Why it did not pass (the first difference, or the fault), or None."""
    seconds: float = 0.0
    """How long the case took, wall clock."""

    def __bool__(self) -> bool:
        """Refused: an outcome is a report (``if outcome:`` would pass a failed case).
        Read :attr:`status`."""
        raise TypeError("a CaseOutcome is a report; read .status")


@dataclass(frozen=True)
class SuiteReport:
    """The outcomes of one suite, and the adapter's own fault if it had one."""

    suite: str
    """The suite name, ``<package>.<operation>``."""
    path: str
    """The suite file, relative to ``vectors/``."""
    cases: tuple[CaseOutcome, ...]
    """One outcome per vector, in file order."""
    fault: str | None = None
    """The adapter's own fault that stopped the suite, or None."""
    seconds: float = 0.0
    """How long the suite took, wall clock."""

    def count(self, status: str) -> int:
        """Return how many cases ended with ``status``."""
        return sum(1 for c in self.cases if c.status == status)

    def __bool__(self) -> bool:
        """Refused: a suite report is a report (``if report:`` would pass a failed suite).
        Read :meth:`count` or :attr:`fault`, or ``ppcheck.failure_count``."""
        raise TypeError("a SuiteReport is a report; read .count('failed') and .fault")


def _judge(known: bool, problem: str | None, unsupported: bool) -> tuple[str, str | None]:
    problem = None if problem is None else printable(problem)
    if unsupported:
        return "unsupported", None
    if known:
        if problem is None:
            return "fixed", "listed as a known failure but passes: remove it from the list"
        return "known", problem
    return ("passed", None) if problem is None else ("failed", problem)


DEAD_STARTS = 3
"""Adapter processes ending before their first answer, with no answer yet, that stop a run."""


class _Stop:
    """A run's stop switch and the adapters it must kill when the switch is thrown."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._lock = threading.Lock()
        self._adapters: set[Adapter] = set()
        self._answered = False
        self._ended: list[str] = []

    def note(self, answer: Answer) -> None:
        """Raise :class:`RunnerError` once the adapter has ended before answering
        ``DEAD_STARTS`` requests in a row and has never answered one in this run: a
        program that cannot work (a missing script, a syntax error) is one error, not a
        failure per case."""
        with self._lock:
            if answer.response is not None or not answer.ended:
                self._answered = True
                return
            if self._answered:
                return
            self._ended.append(answer.fault or "")
            if len(self._ended) >= DEAD_STARTS:
                raise RunnerError(
                    f"the adapter never answered: it ended before answering each of its "
                    f"first {len(self._ended)} requests; the first time: {self._ended[0]}"
                )

    def enter(self, adapter: Adapter) -> None:
        with self._lock:
            self._adapters.add(adapter)

    def leave(self, adapter: Adapter) -> None:
        with self._lock:
            self._adapters.discard(adapter)

    def throw(self) -> None:
        """Stop every suite: no new case starts and every running adapter is killed."""
        self.event.set()
        with self._lock:
            adapters = list(self._adapters)
        for adapter in adapters:
            adapter.abort()


class StoppedError(Exception):
    """A suite was stopped before its last case because the run was interrupted."""


class RunnerError(Exception):
    """The runner cannot run as asked (the message says why); a fault of ppcheck's own."""


def _library_runner() -> Callable[[str, dict[str, Any]], Any]:
    # Imported on first use: driving an adapter needs none of the four protocol packages
    # (ppcheck.pyz ships without them).
    try:
        from ._registry import run
    except ImportError as exc:
        raise RunnerError(
            "this ppcheck runs a port's adapter only (the protocol packages are not "
            "installed): give --impl COMMAND"
        ) from exc
    return run


def run_suite(
    suite: SuiteFile,
    impl: Sequence[str] | None,
    *,
    timeout: float,
    known: Collection[str] = (),
    stderr_dir: Path | None = None,
    _stop: _Stop | None = None,
) -> SuiteReport:
    """Run every case of ``suite`` against ``impl`` (``None``: this library in process).

    With ``stderr_dir``, the adapter's standard error is kept there, one file per adapter
    process (``<suite>.<n>.stderr``), and every fault names its file.
    """
    started = time.perf_counter()
    outcomes: list[CaseOutcome] = []
    adapter = (
        Adapter(impl, timeout=timeout, stderr_dir=stderr_dir, label=suite.suite)
        if impl is not None
        else None
    )
    run = _library_runner() if adapter is None else None
    if adapter is not None and _stop is not None:
        _stop.enter(adapter)
    try:
        for case in suite.tests:
            if _stop is not None and _stop.event.is_set():
                raise StoppedError(f"{suite.suite}: stopped")
            t0 = time.perf_counter()
            is_known = f"{suite.suite}::{case['id']}" in known
            if run is not None:
                try:
                    result = run(suite.suite, case["input"]).as_json()
                except Exception as exc:  # a library bug fails this case only
                    raised = f"the library raised {type(exc).__name__}: {exc}"
                    status, detail = _judge(is_known, raised, False)
                    outcomes.append(
                        CaseOutcome(case["id"], status, detail, time.perf_counter() - t0)
                    )
                    continue
            else:
                assert adapter is not None
                request = {"suite": suite.suite, "id": case["id"], "input": case["input"]}
                answer = adapter.ask(request)
                if _stop is not None:
                    _stop.note(answer)
                if answer.response is None:
                    status, detail = _judge(is_known, f"adapter fault: {answer.fault}", False)
                    outcomes.append(
                        CaseOutcome(case["id"], status, detail, time.perf_counter() - t0)
                    )
                    continue
                result = answer.response
            unsupported = result.get("unsupported") is True
            problem = None if unsupported else check_result(case, result)
            status, detail = _judge(is_known, problem, unsupported)
            outcomes.append(CaseOutcome(case["id"], status, detail, time.perf_counter() - t0))
    except BaseException:
        if adapter is not None:  # interrupted: leave no adapter process behind
            adapter.abort()
        raise
    finally:
        if adapter is not None and _stop is not None:
            _stop.leave(adapter)
    fault: str | None = None
    if adapter is not None:
        adapter.close()
        if adapter.faults:
            fault = "the adapter " + "; then it ".join(adapter.faults)
    return SuiteReport(
        suite.suite, suite.path, tuple(outcomes), fault, time.perf_counter() - started
    )


def run_suites(
    suites: Sequence[SuiteFile],
    impl: str | Sequence[str] | None = None,
    *,
    jobs: int = 2,
    timeout: float = 30.0,
    known: Collection[str] = (),
    stderr_dir: Path | None = None,
    progress: Callable[[SuiteReport], None] | None = None,
) -> list[SuiteReport]:
    """Run ``suites`` in parallel (``jobs`` at a time); reports come back in suite order.

    ``progress`` is called with each suite's report as that suite finishes (from a worker
    thread). On ``KeyboardInterrupt`` every running adapter is killed at once, no further
    case starts, and the interrupt is raised again without waiting for the suites.
    """
    argv = shlex.split(impl) if isinstance(impl, str) else impl
    if argv is None:
        _library_runner()  # say now, not once per suite, that there is no library
    stop = _Stop()
    frozen = frozenset(known)

    def one(suite: SuiteFile) -> SuiteReport:
        report = run_suite(
            suite, argv, timeout=timeout, known=frozen, stderr_dir=stderr_dir, _stop=stop
        )
        if progress is not None:
            progress(report)
        return report

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        futures = [pool.submit(one, s) for s in suites]
        reports = [f.result() for f in futures]
    except BaseException:
        stop.throw()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return reports


def _totals(reports: Sequence[SuiteReport]) -> dict[str, int]:
    totals = {"passed": 0, "failed": 0, "unsupported": 0, "known": 0}
    for report in reports:
        for case in report.cases:
            key = "failed" if case.status == "fixed" else case.status
            totals[key] += 1
    return totals


def table(reports: Sequence[SuiteReport]) -> str:
    """Return the per-suite table followed by the first difference of each failing case."""
    width = max([len(r.suite) for r in reports] + [5])
    lines = [f"{'suite':<{width}}  passed  failed  unsupported  known"]
    for r in reports:
        failed = r.count("failed") + r.count("fixed")
        lines.append(
            f"{r.suite:<{width}}  {r.count('passed'):>6}  {failed:>6}  "
            f"{r.count('unsupported'):>11}  {r.count('known'):>5}"
        )
    problems = [
        f"FAIL {r.suite} {c.id}: {c.detail}"
        for r in reports
        for c in r.cases
        if c.status in {"failed", "fixed"}
    ]
    faults = [f"FAULT {r.suite}: {r.fault}" for r in reports if r.fault]
    if problems or faults:
        lines.append("")
        lines.extend(problems + faults)
    return "\n".join(lines)


def failure_count(reports: Sequence[SuiteReport]) -> int:
    """Return the failed cases (including fixed known failures) plus adapter faults."""
    return _totals(reports)["failed"] + sum(1 for r in reports if r.fault)


def summary_line(reports: Sequence[SuiteReport]) -> str:
    """Return the closing ``N passed, N failed`` line (unsupported and known follow)."""
    t = _totals(reports)
    return (
        f"{t['passed']} passed, {failure_count(reports)} failed, {t['unsupported']} unsupported, "
        f"{t['known']} known failures"
    )


def _xml(text: str) -> str:
    """Return ``text`` holding only characters XML 1.0 allows (others become escapes)."""
    return printable(text)


def junit_xml(reports: Sequence[SuiteReport]) -> str:
    """Return a JUnit XML report: one testsuite per suite, one testcase per vector.

    An adapter fault of a suite is one more testcase, ``(adapter)``, with an ``error``.

    Every text is reduced to the characters XML 1.0 allows, so a report stays parseable
    whatever an adapter wrote.
    """
    root = ET.Element("testsuites", name="ppcheck")
    for r in reports:
        failed = r.count("failed") + r.count("fixed")
        suite_el = ET.SubElement(
            root,
            "testsuite",
            name=_xml(r.suite),
            tests=str(len(r.cases) + (1 if r.fault else 0)),
            failures=str(failed),
            errors="1" if r.fault else "0",
            skipped=str(r.count("unsupported") + r.count("known")),
            time=f"{r.seconds:.3f}",
        )
        for c in r.cases:
            case_el = ET.SubElement(
                suite_el,
                "testcase",
                classname=_xml(r.suite),
                name=_xml(c.id),
                time=f"{c.seconds:.3f}",
            )
            if c.status in {"failed", "fixed"}:
                ET.SubElement(case_el, "failure", message=_xml(c.detail or ""))
            elif c.status == "unsupported":
                ET.SubElement(case_el, "skipped", message="unsupported by the implementation")
            elif c.status == "known":
                ET.SubElement(case_el, "skipped", message=_xml(f"known failure: {c.detail}"))
        if r.fault:
            # JUnit has no suite-level error: the adapter's own fault is one more testcase
            # (its name cannot clash with a vector id, which is kebab-case).
            fault_el = ET.SubElement(
                suite_el, "testcase", classname=_xml(r.suite), name="(adapter)", time="0.000"
            )
            ET.SubElement(fault_el, "error", message=_xml(r.fault))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
