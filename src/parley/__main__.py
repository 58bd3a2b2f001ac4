"""Entry point for ``python -m parley``."""

from ._cli import main

raise SystemExit(main())
