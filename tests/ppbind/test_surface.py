"""The public surface of ppbind: at most 40 top-level names, each documented, one home each."""

from __future__ import annotations

import ppbind
from tests.public_surface import public_modules, two_homes, undocumented


def test_the_top_level_holds_at_most_40_names() -> None:
    assert len(ppbind.__all__) <= 40, len(ppbind.__all__)
    assert len(set(ppbind.__all__)) == len(ppbind.__all__)


def test_the_public_modules_are_the_ones_documented() -> None:
    names = [m.__name__ for m in public_modules("ppbind")]
    assert names == ["ppbind", "ppbind.demo", "ppbind.errors"]
    for module in public_modules("ppbind"):
        assert (module.__doc__ or "").strip(), module.__name__
        assert module.__all__, module.__name__


def test_every_public_name_has_a_docstring() -> None:
    missing = [n for m in public_modules("ppbind") for n in undocumented(m)]
    assert not missing, missing


def test_every_public_name_has_one_public_home() -> None:
    assert not two_homes("ppbind")


def test_the_package_docstring_starts_with_the_five_things_and_a_quick_start() -> None:
    paragraphs = (ppbind.__doc__ or "").split("\n\n")
    assert paragraphs[1] == "The five things you most likely want:"
    wanted = [line.split("`")[1] for line in paragraphs[2].splitlines() if line.startswith("- :")]
    assert len(wanted) == 5, wanted
    assert all(name in ppbind.__all__ for name in wanted), wanted
    assert paragraphs[3].startswith("Quick start")
    assert paragraphs[4].lstrip().startswith(">>> ")


def test_the_quick_start_runs() -> None:
    import doctest

    failures, tried = doctest.testmod(ppbind, verbose=False, report=True)
    assert tried >= 4
    assert failures == 0
