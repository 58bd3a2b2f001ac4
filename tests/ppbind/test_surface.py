"""The public surface of ppbind: at most 40 top-level names, each documented, one home each."""

from __future__ import annotations

import ppbind
from tests.public_surface import check_five_things, check_surface


def test_the_surface_follows_the_conventions() -> None:
    check_surface("ppbind", ["ppbind", "ppbind.demo", "ppbind.errors"])


def test_the_package_docstring_starts_with_the_five_things_and_a_quick_start() -> None:
    check_five_things(ppbind)
