"""Whether a child process is the one listening on a loopback port (Linux ``/proc``).

A test that hands a child server a port it probed free can find that port taken by the
time the child binds it (another test's process took it: likelier under pytest -n). A
plain ``connect`` would then succeed against the other process; this asks the kernel
which process holds the listening socket instead. Without ``/proc`` it falls back to
``connect``.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

_LISTEN = "0A"


def listening(pid: int, port: int) -> bool:
    """True when process ``pid`` has a socket listening on TCP ``port`` (IPv4)."""
    table = Path("/proc/net/tcp")
    fds = Path(f"/proc/{pid}/fd")
    if not table.exists() or not fds.exists():
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0
    try:
        owned = {os.readlink(fd) for fd in fds.iterdir()}
    except OSError:  # the process ended, or an fd closed while we looked
        return False
    for line in table.read_text(encoding="ascii").splitlines()[1:]:
        fields = line.split()
        local, state, inode = fields[1], fields[3], fields[9]
        mine = f"socket:[{inode}]" in owned
        if mine and state == _LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
            return True
    return False
