"""Entry point for ``python -m ppcheck``."""

from ._cli import main

raise SystemExit(main())
