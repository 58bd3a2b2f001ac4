"""The shared coded-error machinery: the table decides the class, unknown codes are refused.

Private imports: this file tests ``_ppcodes`` itself, the private package every package's
``errors`` module is built on; users reach it only through those modules.
"""

from __future__ import annotations

import pickle

import pytest

from _ppcodes import Code, CodedError, CodeTable, UnknownCodeError

CODES = CodeTable(
    "demo",
    [
        Code("bad_argument", "usage", "call", "An argument has the wrong type."),
        Code("not_json", "protocol", "parse", "The bytes are not JSON."),
    ],
    reasons={"depth": "Nested too deep."},
)


class DemoError(CodedError):
    """Root."""

    codes = CODES


class DemoUsageError(DemoError):
    """Usage."""

    kind = "usage"


class DemoProtocolError(DemoError):
    """Protocol."""

    kind = "protocol"


class DemoFrameError(DemoProtocolError):
    """A special protocol error with one more field."""

    def __init__(self, code: str, message: str, *, frame: int) -> None:
        super().__init__(code, message)
        self.frame = frame


def test_the_table_decides_the_class() -> None:
    error = DemoError("not_json", "the body is not JSON")
    assert type(error) is DemoProtocolError
    assert isinstance(error, ValueError)
    assert (error.code, error.stage, error.reason) == ("not_json", "parse", None)
    assert str(error) == "not_json: the body is not JSON"
    assert type(DemoError("bad_argument", "x")) is DemoUsageError
    assert str(DemoError("not_json", "m", reason="depth")) == "not_json/depth: m"


def test_a_special_subclass_keeps_its_class_and_fields() -> None:
    error = DemoFrameError("not_json", "frame 3 is not JSON", frame=3)
    assert type(error) is DemoFrameError
    assert error.frame == 3
    with pytest.raises(UnknownCodeError):
        DemoFrameError("bad_argument", "x", frame=1)


@pytest.mark.parametrize("code", ["no_such_code", "", None, 7, "NOT_JSON"])
def test_a_code_the_table_lacks_is_refused(code: object) -> None:
    with pytest.raises(UnknownCodeError) as caught:
        DemoError(code, "m")  # type: ignore[arg-type]
    assert not isinstance(caught.value, ValueError)


def test_a_kind_class_refuses_the_other_kind_and_reasons_are_closed() -> None:
    with pytest.raises(UnknownCodeError):
        DemoUsageError("not_json", "m")
    with pytest.raises(UnknownCodeError):
        DemoProtocolError("bad_argument", "m")
    with pytest.raises(UnknownCodeError):
        DemoError("not_json", "m", reason="invented")


def test_errors_survive_pickling() -> None:
    error = DemoError("not_json", "m", reason="depth")
    back = pickle.loads(pickle.dumps(error))  # noqa: S301 (our own bytes)
    assert type(back) is DemoProtocolError
    assert (back.code, back.reason, back.message) == ("not_json", "depth", "m")
    assert str(back) == str(error)
    special = pickle.loads(  # noqa: S301 (our own bytes)
        pickle.dumps(DemoFrameError("not_json", "m", frame=2))
    )
    assert type(special) is DemoFrameError
    assert special.frame == 2


def test_the_table_is_closed_and_renders_markdown() -> None:
    with pytest.raises(UnknownCodeError):
        CodeTable("demo", [Code("a", "usage", "s", "x."), Code("a", "usage", "s", "y.")])
    with pytest.raises(UnknownCodeError):
        Code("Bad-Name", "usage", "s", "x.")
    with pytest.raises(UnknownCodeError):
        Code("a", "peer", "s", "x.")  # type: ignore[arg-type]
    text = CODES.markdown()
    assert "| `not_json` | protocol | parse | The bytes are not JSON. |" in text
    assert "| `depth` | Nested too deep. |" in text
    assert list(CODES) == ["bad_argument", "not_json"]
    assert len(CODES) == 2
