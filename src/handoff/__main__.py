"""Entry point for ``python -m handoff``."""

from ._cli import main

raise SystemExit(main())
