"""The ``parley lens`` subcommand: render a reply or any JSON value as Lens."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from _ppcli.rules import read_input

from ._estimate import estimate
from ._fit import fit
from ._frames import well_formed
from ._handles import new_handle
from ._lean import lean
from ._lens import lens
from .errors import ParleyError

__all__ = ["register"]

_REPLY_KINDS = frozenset({"BRIEF", "ANSWER", "PROPOSALS", "CLARIFY", "RECEIPT", "ERROR", "EVENT"})


def _read(source: str) -> Any:
    try:
        text = read_input(source).decode("utf-8")  # "-": standard input
    except OSError as exc:
        raise ParleyError(
            "bad_frame", f"cannot read {source}: {exc.strerror}", reason="io"
        ) from exc
    except UnicodeDecodeError as exc:
        raise ParleyError("bad_frame", f"{source} is not UTF-8 text", reason="not_json") from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ParleyError("bad_frame", f"{source} is not JSON ({exc})", reason="not_json") from exc
    except RecursionError:
        raise ParleyError(
            "bad_frame", f"{source} is nested too deeply to read", reason="too_deep"
        ) from None


def _lens_command(args: argparse.Namespace) -> int:
    value = _read(args.file)
    is_reply = not args.value and isinstance(value, dict) and value.get("kind") in _REPLY_KINDS
    if args.budget is not None:
        reply = value if is_reply else {"kind": "ANSWER", "data": value}
        fitted, _parked = fit(reply, args.budget, handles=new_handle)
        text = lens(fitted)
    else:
        text = lens(value) if is_reply else lean(value)
    # A lone surrogate (a fitting cut through an emoji) has no UTF-8 form: U+FFFD, as
    # JavaScript's TextEncoder writes it.
    print(well_formed(text))
    if args.estimate:
        print(f"est: {estimate(text)}", file=sys.stderr)
    return 0


def register(sub: Any) -> None:
    """Add the Lens subcommands to the ``parley`` subparsers object ``sub``."""
    cmd = sub.add_parser(
        "lens",
        help="render a reply (or any JSON value) as Lens text",
        description=(
            "Render a Parley reply frame as Lens (SPEC.md section 9.2), or any other JSON "
            "value in lean notation. With --budget the reply is fitted first (a plain value "
            "is treated as ANSWER data) and the `more` lines show what was elided."
        ),
    )
    cmd.add_argument("file", help="a JSON file, or - for standard input")
    cmd.add_argument("--budget", type=int, help="fit to this many estimated tokens first")
    cmd.add_argument("--value", action="store_true", help="treat the input as a plain value")
    cmd.add_argument(
        "--estimate", action="store_true", help="print the token estimate on standard error"
    )
    cmd.set_defaults(handler=_lens_command)
