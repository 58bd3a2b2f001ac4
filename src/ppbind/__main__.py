"""``python -m ppbind``: the ``errand`` command."""

from ._cli import main

raise SystemExit(main(prog="ppbind"))
