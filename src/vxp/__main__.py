"""Entry point for ``python -m vxp``."""

from ._cli import main

raise SystemExit(main())
