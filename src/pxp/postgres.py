"""PXP rooms, ledgers, seat tokens and link digests on PostgreSQL, shared by server replicas.

Needs the optional extra ``principal-protocols[postgres]`` (psycopg 3). Importing this
module loads no database driver: psycopg is imported when a store opens its first
connection, so ``import pxp`` and ``import pxp.postgres`` stay light. Most users get these
stores from :func:`pxp.server.service_for_url` (``pxp serve --state postgresql://…``);
the rules they keep are in ``docs/spec/pxp.md`` §8::

    from pxp.postgres import PostgresLinkStore, PostgresRoomStore
    from pxp.server import RoomService

    url = "postgresql://pxp@db.internal/rooms"
    service = RoomService(PostgresRoomStore(url), PostgresLinkStore(url))
"""

from __future__ import annotations

from ._postgres import CHANNEL, MIGRATIONS, PostgresLinkStore, PostgresRoomStore

__all__ = ["CHANNEL", "MIGRATIONS", "PostgresLinkStore", "PostgresRoomStore"]
