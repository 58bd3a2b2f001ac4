"""Entry point for ``python -m pxp``."""

from ._cli import main

raise SystemExit(main())
