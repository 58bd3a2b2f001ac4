"""ppcheck: the conformance runner of principal-protocols.

It runs the common-format vector suites (``vectors/<protocol>/*.json``) against this
library in process, or, through the harness protocol of ``docs/conformance.md``, against
an adapter executable of a port in another language. The protocol packages never import
it.

Quick start::

    >>> import ppcheck
    >>> suites = ppcheck.load_suites()
    >>> all(s.suite.split(".")[0] in ppcheck.PROTOCOLS for s in suites)
    True
    >>> reports = ppcheck.run_suites(suites)   # this library, in process
    >>> ppcheck.failure_count(reports)
    0

Against a port: ``ppcheck --impl './my-adapter --flag'`` (docs/conformance.md).
"""

from __future__ import annotations

from ._harness import Adapter, Answer
from ._registry import Handler, Result, handler, handlers, run
from ._runner import (
    CaseOutcome,
    RunnerError,
    StoppedError,
    SuiteReport,
    failure_count,
    junit_xml,
    run_suites,
    summary_line,
    table,
)
from ._vectors import (
    PROTOCOLS,
    SuiteFile,
    check_result,
    data_root,
    first_difference,
    load_suites,
    operation_schema,
    vectors_schema,
)

__all__ = [
    "PROTOCOLS",
    "Adapter",
    "Answer",
    "CaseOutcome",
    "Handler",
    "Result",
    "RunnerError",
    "StoppedError",
    "SuiteFile",
    "SuiteReport",
    "check_result",
    "data_root",
    "failure_count",
    "first_difference",
    "handler",
    "handlers",
    "junit_xml",
    "load_suites",
    "operation_schema",
    "run",
    "run_suites",
    "summary_line",
    "table",
    "vectors_schema",
]

# The library logs through `logging` and never configures it: without a handler of the
# application's, nothing is printed (docs/cli.md, "Logging").
import logging as _logging

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
