"""Schema validation the way Handoff does it: the allowed subset and ECMA-262 patterns.

:func:`check_schema` validates an instance against one of the package's schemas (named by
:func:`handoff.schema_names`, read with :func:`handoff.load_schema`); :func:`ecma_pattern`
translates an ECMA-262 pattern to Python; :data:`ALLOWED_KEYWORDS` is the subset of JSON
Schema the schemas use, so that a port's validator agrees (docs/spec/handoff.md §4).
"""

from __future__ import annotations

from ._validate import ALLOWED_KEYWORDS, check_schema, ecma_pattern

__all__ = ["ALLOWED_KEYWORDS", "check_schema", "ecma_pattern"]
