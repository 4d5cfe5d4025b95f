"""A second PostgreSQL 16 instance for the queue alone: the interference study's split side.

Why it exists: to separate what sharing one Postgres costs the bystanders (the queue's dead
tuples, its vacuums, a horizon held in the same instance) from what sharing one machine costs
them (the server core, the disk's fsyncs). On the split side the queue churns on this instance
while the search, vector and OLTP tenants read from the project's own ``postgres``: the same
binaries, the same tuned settings, its own data directory, port and process tree — on the same
server CPU set, so only the MVCC coupling is gone.
"""

from __future__ import annotations

from pglimits_core.servers.postgres import PostgresServer


class PostgresQueueServer(PostgresServer):
    """PostgreSQL 16.2 with the tuned settings, a queue's own instance."""

    name = "postgres_queue"
