"""JSON Schemas of :mod:`pxp`, loaded from the installed wheel or from a checkout.

The wheel carries ``schemas/pxp/`` as ``pxp/_schemas/`` (hatchling ``force-include``);
an editable install or a plain checkout has no such folder, so the repository's
``schemas/pxp/`` is used instead. The shared loader :mod:`_ppschema` finds, reads and
compiles them (:func:`load_schema` hands out a fresh copy, :func:`validator` is built once
per schema); this module gives it pxp's own errors.
"""

from __future__ import annotations

from _ppschema import SchemaSet

from .errors import PxpError

__all__ = ["load_schema", "schema_names", "validator"]

_SET = SchemaSet(
    "pxp",
    missing=lambda: PxpError(
        "schemas_missing", "the pxp JSON Schemas are neither installed nor in a checkout"
    ),
    unknown=lambda name: PxpError("schema_unknown", f"no pxp schema is named {name!r}"),
)

schema_names = _SET.names
load_schema = _SET.load
first_error = _SET.first_error
validator = _SET.validator
