"""No module-level memory of a caller's input (DESIGN.md, "Speed without hidden state").

Caches of the package's own files (its schemas, by name) are allowed; nothing derived from
what a caller passes (a pattern, a record, a key) is remembered by the package.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import handoff

SRC = Path(handoff.__file__).resolve().parent
OWN_FILES_ONLY = {"handoff.schema_names"}  # no argument: the shipped schema names


def test_no_public_call_keeps_a_cache() -> None:
    names = [m.name for m in pkgutil.iter_modules([str(SRC)]) if not m.name.startswith("_")]
    modules = [handoff, *(importlib.import_module(f"handoff.{n}") for n in names)]
    cached = [
        f"{module.__name__}.{name}"
        for module in modules
        for name in module.__all__
        if hasattr(getattr(module, name), "cache_info")
    ]
    assert set(cached) <= OWN_FILES_ONLY, cached


def test_a_loaded_schema_is_the_callers_copy() -> None:
    first = handoff.load_schema("record.schema.json")
    first["required"] = []
    first["properties"].clear()
    again = handoff.load_schema("record.schema.json")
    assert again["required"]
    assert again["properties"]
    # and the package's own validation is untouched by what the caller did to its copy
    with pytest.raises(handoff.HandoffProtocolError) as caught:
        handoff.schemas.check_schema("record.schema.json", {"ph": "0.3"})
    assert caught.value.code == "schema"
