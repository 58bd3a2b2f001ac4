"""The public surface of ppstore: at most 40 top-level names, each documented, one home each."""

from __future__ import annotations

import ppstore
from tests.public_surface import public_modules, two_homes, undocumented


def test_the_top_level_holds_at_most_40_names() -> None:
    assert len(ppstore.__all__) <= 40, len(ppstore.__all__)
    assert len(set(ppstore.__all__)) == len(ppstore.__all__)


def test_the_public_modules_are_the_ones_documented() -> None:
    names = [m.__name__ for m in public_modules("ppstore")]
    assert names == ["ppstore", "ppstore.errors"]
    for module in public_modules("ppstore"):
        assert (module.__doc__ or "").strip(), module.__name__


def test_every_public_name_has_a_docstring() -> None:
    missing = [n for m in public_modules("ppstore") for n in undocumented(m)]
    assert not missing, missing


def test_every_public_name_has_one_public_home() -> None:
    assert not two_homes("ppstore")


def test_the_package_docstring_starts_with_the_five_things_and_a_quick_start() -> None:
    paragraphs = (ppstore.__doc__ or "").split("\n\n")
    assert paragraphs[1] == "The five things you most likely want:"
    wanted = [line.split("`")[1] for line in paragraphs[2].splitlines() if line.startswith("- :")]
    assert len(wanted) == 5, wanted
    assert all(name in ppstore.__all__ for name in wanted), wanted
    assert paragraphs[3].startswith("Quick start")
    assert paragraphs[4].lstrip().startswith(">>> ")


def test_the_quick_start_runs() -> None:
    import doctest

    failures, tried = doctest.testmod(ppstore, verbose=False, report=True)
    assert tried >= 4
    assert failures == 0
