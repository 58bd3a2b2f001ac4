"""Keep a lease alive while the commit or undo callable runs (**ours**, review F2).

A lease runs out ``commit_lease`` seconds after it was taken; a callable slower than that
would look stale to another process, which would take the claim over and ask the
reconciler while the effect is still under way. :class:`Heartbeat` renews the lease from
a thread, every third of the lease, by compare-and-swap: the owner keeps it for as long
as its callable runs. If the swap fails the claim was taken over (the lease ran out while
this process was paused, or an operator resolved it): the heartbeat stops and says so
(:attr:`Heartbeat.lost`), and the finish that follows is a late one (see ``Store``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import replace
from types import TracebackType
from typing import Literal

from ._state import Lease, Store

__all__ = ["Heartbeat"]

_LOG = logging.getLogger("parley")


class Heartbeat:
    """Renew ``lease`` on ``subject`` every ``length / 3`` seconds until the block ends.

    ``length`` is the lease length in seconds; the renewed lease runs out ``length``
    seconds after the renewal (the service's clock at the start plus the real time
    elapsed since, so a service run with a fixed ``now`` keeps a consistent clock).
    """

    def __init__(
        self, store: Store, kind: Literal["commit", "undo"], subject: str, lease: Lease, length: int
    ) -> None:
        self.store, self.kind, self.subject = store, kind, subject
        self.lease = lease
        self.length = max(1, length)
        self.lost = False
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="parley-lease", daemon=True)

    def _run(self) -> None:
        period = self.length / 3
        while not self._stop.wait(period):
            elapsed = math.ceil(time.monotonic() - self._start)
            renewed = replace(self.lease, until=self.lease.began + elapsed + self.length)
            try:
                ok = self.store.take_over(self.kind, self.subject, self.lease, renewed)
            except Exception:  # a store that fails now (busy, locked): try at the next beat
                _LOG.debug("parley: could not renew a lease", exc_info=True)
                continue
            if not ok:
                self.lost = True
                return
            self.lease = renewed

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
