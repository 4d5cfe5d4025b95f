"""The queue adapter contract: verbs only, no timing (the driver in ``load/`` owns the clock).

Lifecycle, as the driver uses it: the adapter object is built in the parent (``__init__`` only
stores configuration, so it pickles), then in each worker process ``open()`` connects,
the verbs run, and ``close()`` disconnects. ``setup()``/``reset()`` run once per run from the
parent (open first). Delivery is at-least-once with ack for every system except the
Postgres delete-mode variant, which is at-most-once by design; ``describe()`` says which,
and names the variant's durability class (``durability.py``) from settings read back from the
running server, not from what the options asked for.
"""

from __future__ import annotations

import abc
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pglimits_core.workloads.queue.systems.durability import Promise, promise_for

BULK_BATCH = 500  # messages per enqueue in the default bulk_load


@dataclass(frozen=True)
class Message:
    """A claimed message: the system's own id (what ``ack``/``nack`` take) and the payload."""

    id: Any
    payload: bytes


def default_worker_id() -> str:
    """Unique per opened adapter: made in ``open()`` so workers forked from one template differ."""
    return f"w{os.getpid()}-{uuid.uuid4().hex[:6]}"


class QueueAdapter(abc.ABC):
    """One system (and variant) behind the queue verbs.

    ``url`` is the endpoint's url (libpq DSN, ``redis://`` URL, SQLite file path); ``options``
    are the variant options the registry validated (``batch`` is the claim size a driver uses).
    """

    system: str = ""
    #: the variant option that chooses the durability (validated in the registry) and the
    #: setting that holds when a variant does not give it
    durability_option: str = ""
    durability_default: str = ""
    #: read-back setting -> what it promises (every value the option accepts must be a key)
    promises: dict[str, Promise] = {}
    #: what a consumer crash costs: "at-least-once" (its claims come back) or "at-most-once"
    delivery_guarantee: str = "at-least-once"
    #: how a dead consumer's claims come back, as the design's users run it (said in records)
    recovery: str = "reap(): claims older than the visibility timeout are requeued"
    #: the variant option that sets the system's own visibility timeout (seconds), if any
    visibility_option: str | None = None

    def __init__(self, url: str, **options: Any):
        self.url = url
        self.options = options
        self.batch = int(options.get("batch", 1))
        self.worker_id = options.get("worker_id")

    # --- connection -------------------------------------------------------------------
    def open(self) -> None:
        """Connect; runs inside the worker process."""
        if not self.worker_id:
            self.worker_id = default_worker_id()
        self._connect()

    @abc.abstractmethod
    def _connect(self) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> QueueAdapter:
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- schema -------------------------------------------------------------------------
    @abc.abstractmethod
    def setup(self) -> None:
        """Create the queue (tables, indexes, extension queue); safe to call twice."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Empty the queue: pending, claimed and delayed messages all gone."""

    def fresh(self) -> None:
        """Create the queue if needed and empty it: the state every point starts from."""
        self.setup()
        self.reset()

    def bulk_load(self, payloads: list[bytes]) -> None:
        """Load a prefill (untimed, before a point's window) as fast as the system allows, into
        the same rows ``enqueue`` makes. Default: ``enqueue`` in batches of ``BULK_BATCH`` (a
        sharded system spreads them round-robin, so the batches stay small)."""
        for start in range(0, len(payloads), BULK_BATCH):
            self.enqueue(payloads[start:start + BULK_BATCH])

    def pending(self) -> list[bytes] | None:
        """The payloads of every message still pending (visible and unclaimed), read without
        taking them: the sweeps' accounting after the window, which the next point's reset then
        empties at once. None: the system cannot read them back (then the study drains)."""
        return None

    def take(self, n: int) -> list[Message]:
        """Claim and acknowledge up to ``n`` messages in one go: the untimed drain after a
        measured point. Nothing timed depends on it, so a system may use its fastest path here
        (e.g. Redis pipelines it whatever the variant's round-trip shape)."""
        messages = self.claim(n)
        if messages:
            self.ack([m.id for m in messages])
        return messages

    def settle(self) -> dict[str, Any]:
        """Bring a freshly filled queue to the state every measured point starts from (e.g.
        Postgres: VACUUM ANALYZE, so no point inherits dead tuples or stale statistics from its
        prefill); returns what it did, for the run record. Nothing to do by default."""
        return {}

    # --- verbs --------------------------------------------------------------------------
    @abc.abstractmethod
    def enqueue(self, payloads: list[bytes]) -> list[Any]:
        """Send a batch (one statement/command/transaction where the system allows); their ids."""

    @abc.abstractmethod
    def claim(self, n: int) -> list[Message]:
        """Claim up to ``n`` visible messages; [] when none is visible."""

    @abc.abstractmethod
    def ack(self, ids: list[Any]) -> None:
        """Mark claimed messages done (deleted/archived); they never come back."""

    @abc.abstractmethod
    def nack(self, ids: list[Any], delay_s: float | None = None) -> None:
        """Release claimed messages; visible again after ``delay_s`` (None = the system's policy)."""

    def reap(self, older_than_s: float) -> int:
        """Requeue what dead consumers left claimed for longer than ``older_than_s`` (the
        visibility timeout); how many came back. Run periodically by the design's users (a cron
        job, a reaper thread); in this study only by the consumer-crash drill and its drain, so
        no throughput or latency point pays for it. Default: nothing to reap."""
        return 0

    @abc.abstractmethod
    def depth(self) -> int:
        """Messages not yet acknowledged: pending + claimed (+ delayed)."""

    # --- a backup drill's questions ------------------------------------------------------
    def database_files(self) -> list[Path] | None:
        """The files that hold this queue when its engine is embedded (a hot backup copies
        those); None when a server holds it (a server's hot backup covers all of it)."""
        return None

    @abc.abstractmethod
    def queue_bytes(self) -> int:
        """Bytes the queue occupies now, read over a connection of its own: asked with the
        adapter closed (SQLite folds its WAL into the file when the last connection closes)."""

    def release_held_claims(self) -> int:
        """Make every claim visible again now, as if every consumer were dead (on a restored
        copy they are); how many came back. Default: the design's reaper with no grace."""
        return self.reap(0.0)

    # --- reporting ----------------------------------------------------------------------
    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """Variant, batch size, durability and delivery semantics, the exact SQL/commands."""

    def stats(self) -> dict[str, Any]:
        """Counters the adapter keeps itself (e.g. SQLite busy waits); {} when none."""
        return {}

    @abc.abstractmethod
    def durability_setting(self) -> str:
        """The durability setting as the server runs it now (read back), a key of ``promises``."""

    def durability_description(self) -> dict[str, Any]:
        setting = self.durability_setting()
        promise = promise_for(self.system, self.promises, setting)
        return promise.describe(f"{self.durability_option}={setting}")

    def base_description(self, **extra: Any) -> dict[str, Any]:
        return {"system": self.system, "batch": self.batch, "options": dict(self.options),
                **self.durability_description(), **extra}
