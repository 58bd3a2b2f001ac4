"""Every command and subcommand of every console script answers --help."""

from __future__ import annotations

import argparse
import importlib

import pytest

PACKAGES = ("pxp", "handoff", "vxp", "parley", "ppcheck")


def _subcommands(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = [prefix]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.extend(_subcommands(sub, (*prefix, name)))
    return found


CASES = [
    (package, path)
    for package in PACKAGES
    for path in _subcommands(importlib.import_module(f"{package}._cli").build_parser())
]


@pytest.mark.parametrize(("package", "path"), CASES, ids=[" ".join((p, *c)) for p, c in CASES])
def test_help(package: str, path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    cli = importlib.import_module(f"{package}._cli")
    with pytest.raises(SystemExit) as stop:
        cli.main([*path, "--help"])
    assert stop.value.code == 0
    assert "usage:" in capsys.readouterr().out


@pytest.mark.parametrize("package", PACKAGES)
def test_version(package: str, capsys: pytest.CaptureFixture[str]) -> None:
    cli = importlib.import_module(f"{package}._cli")
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(package + " ")
