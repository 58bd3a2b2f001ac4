"""Store throughput: Parley commits/s and VXP log appends/s, memory vs SQLite vs PostgreSQL.

One run measures, in interleaved rounds (best and median of each), a Parley spend commit
(``begin_commit`` reserving against one spend cap, then ``finish_commit``) and a VXP Merkle
log append, on: memory (the baseline), SQLite (one process; two processes on one file) and
PostgreSQL (one replica; two replicas on one database). "Replicas" are separate processes
with their own connections, all working on the same cap or the same log at once, so the
figures include the contention the locks create. Ratios are to memory.

PostgreSQL: ``PP_BENCH_POSTGRES=postgresql://…`` names a database (its tables are
created; use a scratch database); otherwise a throwaway cluster is started with durable
settings (fsync on, like SQLite's ``synchronous = FULL``) from the server binaries
``tests/pgcluster.py`` finds. Without PostgreSQL the PostgreSQL rows are skipped.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import parley  # noqa: E402
import vxp  # noqa: E402
from parley.grants import SpendCap  # noqa: E402

COMMITS = 200  # per measurement and process
APPENDS = 200
ROUNDS = 3
NOW = 1_790_000_000


def _store(url: str) -> Any:
    return parley.open_store(url)


def _commits(url: str, count: int, tag: str, store: Any = None) -> float:
    """Run ``count`` spend commits; return the seconds they took."""
    own = store is None
    store = store if store is not None else _store(url)
    cap = [SpendCap("bench-block", 2**62, "USD")]
    start = time.perf_counter()
    for n in range(count):
        pid = f"p-{tag}-{n}"
        store.begin_commit(pid, cap, 1, "USD", now=NOW)
        receipt = {"id": f"r-{pid}", "proposal": pid, "at": NOW, "undo": None}
        store.finish_commit(parley.stores.ReceiptRecord(receipt, "k", None, "h"), now=NOW)
    took = time.perf_counter() - start
    if own and hasattr(store, "close"):
        store.close()
    return took


def _appends(url: str, count: int, tag: str, log: Any = None) -> float:
    """Run ``count`` log appends (retrying after another writer's); return the seconds."""
    own = log is None
    log = (
        log if log is not None else vxp.MerkleLog("bench/log", vxp.open_log_store(url, "bench/log"))
    )
    start = time.perf_counter()
    for n in range(count):
        while True:
            try:
                log.append(f"{tag}-{n}".encode())
                break
            except vxp.VxpError as exc:
                if exc.code != "log_conflict":
                    raise
    took = time.perf_counter() - start
    if own:
        log.close()
    return took


def _worker(job: tuple[str, str, int, str, Any]) -> float:
    kind, url, count, tag, gate = job
    gate.wait()
    return (_commits if kind == "commit" else _appends)(url, count, tag)


def _parallel(kind: str, url: str, replicas: int, count: int) -> float:
    """Operations per second of ``replicas`` processes working at once on one store."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        gate = manager.Barrier(replicas + 1)
        with ctx.Pool(replicas) as pool:
            tag = uuid.uuid4().hex[:8]
            jobs = [(kind, url, count, f"{tag}{i}", gate) for i in range(replicas)]
            pending = pool.map_async(_worker, jobs)
            gate.wait()
            start = time.perf_counter()
            pending.get(timeout=600)
            took = time.perf_counter() - start
    return replicas * count / took


def _postgres() -> tuple[str | None, Any]:
    given = os.environ.get("PP_BENCH_POSTGRES")
    if given:
        return given, None
    from tests.pgcluster import start_cluster

    cluster = start_cluster(durable=True)
    if isinstance(cluster, str):
        print(f"PostgreSQL rows skipped: {cluster}")
        return None, None
    return cluster.create_database(), cluster


def _configs(folder: Path, kind: str, pg: str | None) -> list[tuple[str, str, int]]:
    configs = [  # one file per store kind: a SQLite file holds one store
        ("memory", ":memory:", 1),
        ("sqlite, 1 process", f"sqlite:{folder / (kind + '-one.sqlite')}", 1),
        ("sqlite, 2 processes", f"sqlite:{folder / (kind + '-two.sqlite')}", 2),
    ]
    if pg is not None:
        configs += [("postgresql, 1 replica", pg, 1), ("postgresql, 2 replicas", pg, 2)]
    return configs


def _measure(kind: str, name: str, url: str, replicas: int, held: dict[str, Any]) -> float:
    count = COMMITS if kind == "commit" else APPENDS
    if replicas > 1:
        return _parallel(kind, url, replicas, count)
    tag = uuid.uuid4().hex[:8]
    if url == ":memory:":  # memory lives in this process: one object across the rounds
        if kind == "commit":
            store = held.setdefault("store", parley.stores.MemoryStore(max_receipts=10**7))
            return count / _commits(url, count, tag, store)
        log = held.setdefault("log", vxp.MerkleLog("bench/log"))
        return count / _appends(url, count, tag, log)
    fn = _commits if kind == "commit" else _appends
    return count / fn(url, count, tag)


def main() -> int:
    pg, cluster = _postgres()
    try:
        with tempfile.TemporaryDirectory(prefix="pp-bench-") as folder:
            for kind, unit in (("commit", "commits/s"), ("append", "appends/s")):
                configs = _configs(Path(folder), kind, pg)
                held: dict[str, Any] = {}
                seen: dict[str, list[float]] = {name: [] for name, _, _ in configs}
                for _ in range(ROUNDS):  # interleaved: every config once per round
                    for name, url, replicas in configs:
                        seen[name].append(_measure(kind, name, url, replicas, held))
                base = statistics.median(seen["memory"])
                what = "Parley spend commits" if kind == "commit" else "VXP log appends"
                print(f"{what} ({unit}; best / median of {ROUNDS} rounds; ratio of medians)")
                for name, _, _ in configs:
                    best, median = max(seen[name]), statistics.median(seen[name])
                    print(f"  {name:24} {best:10.0f} {median:10.0f}   {median / base:8.4f}x")
    finally:
        if cluster is not None:
            cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
