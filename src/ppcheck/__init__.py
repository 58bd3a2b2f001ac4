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
"""

from __future__ import annotations

from ._registry import Handler, Result, handler, handlers, run
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
    "Handler",
    "Result",
    "SuiteFile",
    "check_result",
    "data_root",
    "first_difference",
    "handler",
    "handlers",
    "load_suites",
    "operation_schema",
    "run",
    "vectors_schema",
]
