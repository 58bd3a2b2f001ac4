"""JSON Schemas of :mod:`parley`, loaded from the installed wheel or from a checkout.

The wheel carries ``schemas/parley/`` as ``parley/_schemas/`` (hatchling ``force-include``);
an editable install or a plain checkout has no such folder, so the repository's
``schemas/parley/`` is used instead. The shared loader :mod:`_ppschema` finds, reads and
compiles them (:func:`load_schema` hands out a fresh copy, :func:`validator` is built once
per schema); this module gives it parley's own errors.
"""

from __future__ import annotations

from _ppschema import SchemaSet

from .errors import ParleyError

__all__ = ["load_schema", "schema_names", "validator"]

_SET = SchemaSet(
    "parley",
    missing=lambda: ParleyError(
        "schemas_missing", "the parley JSON Schemas are neither installed nor in a checkout"
    ),
    unknown=lambda name: ParleyError("schema_unknown", f"no parley schema is named {name!r}"),
)

schema_names = _SET.names
load_schema = _SET.load
first_error = _SET.first_error
validator = _SET.validator
