"""JSON Schemas of :mod:`handoff`, loaded from the installed wheel or from a checkout.

The wheel carries ``schemas/handoff/`` as ``handoff/_schemas/`` (hatchling ``force-include``);
an editable install or a plain checkout has no such folder, so the repository's
``schemas/handoff/`` is used instead. The shared loader :mod:`_ppschema` finds, reads and
compiles them (:func:`load_schema` hands out a fresh copy, :func:`validator` is built once
per schema); this module gives it handoff's own errors.
"""

from __future__ import annotations

from typing import Any

from _ppschema import SchemaSet

from .errors import HandoffError

__all__ = ["load_schema", "own_schema", "schema_names", "validator"]

_SET = SchemaSet(
    "handoff",
    missing=lambda: HandoffError(
        "schemas_missing", "the handoff JSON Schemas are neither installed nor in a checkout"
    ),
    unknown=lambda name: HandoffError("schema_unknown", f"no handoff schema is named {name!r}"),
)

schema_names = _SET.names
load_schema = _SET.load
own_schema = _SET.own


def validator(name: object) -> Any:
    """Return the strict JSON Schema 2020-12 validator (``jsonschema``) for schema ``name``.

    Relative ``$ref`` values resolve against the other schemas of this package by name.
    It is strict where plain ``jsonschema`` is lenient: ``1.0`` is not an integer and
    ``pattern`` follows ECMA-262 (``$`` matches only at the end); see
    :func:`handoff._validate.boundary_validator`.
    """
    from ._validate import boundary_validator

    return boundary_validator(_SET.check(name))
