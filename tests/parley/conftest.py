"""Fixtures shared by the Parley tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .serve_process import ServeProcess


@pytest.fixture
def servers() -> Iterator[list[ServeProcess]]:
    """The servers a test starts (append each); every one is SIGKILLed and reaped at the end."""
    started: list[ServeProcess] = []
    yield started
    for server in started:
        server.stop()
