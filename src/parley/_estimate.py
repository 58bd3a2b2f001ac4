"""The shared token estimate of SPEC.md section 8."""

from __future__ import annotations

import re

from .errors import ParleyError

__all__ = ["estimate"]

# Letter runs, digit groups of up to three, indentation runs, and every other visible
# character. Python's ``re`` walks code points, as the specification requires.
_TOKEN = re.compile(r"[A-Za-z]+|[0-9]{1,3}|\n {2,}|[^ \t\n\r\f\vA-Za-z0-9]")


def estimate(text: str) -> int:
    """Return the estimated token count of ``text`` (SPEC.md section 8).

    The count is the number of leftmost, non-overlapping matches of
    ``[A-Za-z]+|[0-9]{1,3}|\\n {2,}|[^ \\t\\n\\r\\f\\vA-Za-z0-9]`` over the text's code
    points. Raises :class:`ParleyError` (``bad_frame``/``not_text``) for a non-string.

    >>> estimate("hello world")
    2
    >>> estimate("x: 12345\\n  - y")
    7
    """
    if not isinstance(text, str):
        raise ParleyError(
            "bad_frame",
            f"the token estimate takes a string, got {type(text).__name__}",
            reason="not_text",
        )
    return len(_TOKEN.findall(text))
