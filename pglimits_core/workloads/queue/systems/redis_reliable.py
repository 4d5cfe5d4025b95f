"""Redis reliable queue: LPUSH, LMOVE into a per-consumer processing list, LREM on ack.

Ids are the payloads' own ids (Redis lists have none); the adapter keeps its in-flight
payloads so ack/nack can LREM the exact value. ``pipeline`` = how many commands go in one
round trip: 1 is the unpipelined variant (every LMOVE/LREM its own round trip), e.g. 16 the
pipelined one. Enqueue is always one LPUSH with all values.

Nack: LREM from the processing list + ZADD into a delayed zset scored by the due time; a
consumer promotes due messages back to the queue with one Lua script (atomic ZRANGEBYSCORE +
LPUSH + ZREM) at most every ``PROMOTE_EVERY_S`` — a bounded extra command rate, not one per
claim.

Reaper: a consumer's connection carries its worker id as the client name, so a processing list
whose owner has no connection left belongs to a dead consumer (a SIGKILLed process's socket is
closed by its kernel at once); ``reap()`` moves such lists back to the queue with one Lua
script each and forgets them. It judges liveness by the connection, not by age: a live but hung
consumer keeps its list (a heartbeat would catch that, at a command per claim).

Persistence is a variant option, ``appendfsync``: ``none`` (the default: no AOF, in memory),
``everysec`` or ``always`` (AOF, fsynced every second / before every reply). The variants of a
study share one server and run one after another, so ``setup()`` sets it every time (CONFIG
SET), also back to ``none``, and waits for the AOF rewrite that enabling the AOF starts (or a
compacting one), so no measurement runs beside a rewrite and every point starts from a small
AOF. ``describe()`` reads the persistence back from the server.
"""

from __future__ import annotations

import time
from typing import Any

import redis
import redis.utils

from pglimits_core.datasets.messages import message_id
from pglimits_core.workloads.queue.systems.base import Message, QueueAdapter
from pglimits_core.workloads.queue.systems.durability import NONE, PER_COMMIT, PERIODIC, Promise

DEFAULT_KEY = "pglimits:queue"
PROMOTE_EVERY_S = 0.05
REWRITE_LIMIT_S = 60.0  # an AOF rewrite of a reset (near-empty) queue takes milliseconds
REWRITE_POLL_S = 0.01
BULK_CHUNK, BULK_PIPELINE = 1000, 20  # a prefill's values per LPUSH, LPUSHes per round trip

# appendfsync option -> the CONFIG SET values that realise it, in this order (appendfsync
# first, so the AOF never runs a moment under the wrong policy).
PERSISTENCE = {"none": {"appendonly": "no"},
               "everysec": {"appendfsync": "everysec", "appendonly": "yes"},
               "always": {"appendfsync": "always", "appendonly": "yes"}}
PERSISTENCE_SETTINGS = ("appendonly", "appendfsync", "save", "auto-aof-rewrite-percentage",
                        "auto-aof-rewrite-min-size")
# Redis appends each write to the AOF with write() before it replies, at every appendfsync.
PROMISES: dict[str, Promise] = {
    "none": Promise(NONE, False, "in memory only (appendonly no, no RDB snapshots): a process "
                                 "kill loses every acknowledged message"),
    "rdb": Promise(PERIODIC, False, "RDB snapshots only (save): everything since the last "
                                    "snapshot is lost, even by a process kill"),
    "no": Promise(NONE, True, "AOF written before the reply, never fsynced by Redis (the OS "
                              "flushes it)"),
    "everysec": Promise(PERIODIC, True, "AOF written before the reply (unless a slow fsync makes "
                                        "Redis postpone writes, up to 2 s), fsynced once a second"),
    "always": Promise(PER_COMMIT, True, "AOF written and fsynced before the reply (one fsync "
                                        "per event-loop iteration)"),
}
PROMOTE_SCRIPT = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 100)
if #due > 0 then
  redis.call('RPUSH', KEYS[2], unpack(due))
  redis.call('ZREM', KEYS[1], unpack(due))
end
return #due
"""
# Oldest claim (the processing list's right end) goes back to the queue's right end: claimed next.
REAP_SCRIPT = """
local moved = 0
while redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT') do moved = moved + 1 end
redis.call('SREM', KEYS[3], KEYS[1])
return moved
"""
COMMANDS = {"enqueue": "LPUSH queue v1 .. vN",
            "claim": "LMOVE queue processing:<worker> RIGHT LEFT (x n, `pipeline` per round trip)",
            "ack": "LREM processing:<worker> 1 payload (x n, `pipeline` per round trip)",
            "nack": "LREM processing:<worker> 1 payload + ZADD delayed <due> payload; "
                    "promote: EVAL ZRANGEBYSCORE/RPUSH/ZREM",
            "depth": "LLEN queue + LLEN each processing list + ZCARD delayed",
            "prefill": "LPUSH queue v1 .. v1000, 20 per round trip (untimed)",
            "drain": "RPOP queue n (untimed, after the window)",
            "reaper": "CLIENT LIST; per processing list without a live owner: EVAL LMOVE* + SREM"}


class RedisReliableQueue(QueueAdapter):
    system = "redis_reliable"
    durability_option = "appendfsync"
    durability_default = "none"
    promises = PROMISES
    recovery = ("reap(): processing lists of consumers whose connection is gone go back to the "
                "queue (liveness by connection, not age)")

    def __init__(self, url: str, **options: Any):
        super().__init__(url, **options)
        self.key = options.get("key", DEFAULT_KEY)
        self.appendfsync = options.get("appendfsync", self.durability_default)
        self.depth_per_trip = int(options.get("pipeline", 1))
        self.delayed_key = f"{self.key}:delayed"
        self.consumers_key = f"{self.key}:consumers"
        self.client: redis.Redis | None = None

    def _connect(self) -> None:
        # the client name is the owner's liveness for reap(): set once per connection
        self.client = redis.Redis.from_url(self.url, client_name=self.worker_id)
        self.processing_key = f"{self.key}:processing:{self.worker_id}"
        self.in_flight: dict[str, bytes] = {}
        self._promote = self.client.register_script(PROMOTE_SCRIPT)
        self._reap = self.client.register_script(REAP_SCRIPT)
        self._next_promote = 0.0
        # Registered so depth() and reset() find this consumer's processing list.
        self.client.sadd(self.consumers_key, self.processing_key)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def setup(self) -> None:
        """Lists need no schema: the variant's persistence is applied and this consumer's
        processing list registered."""
        apply_persistence(self.client, self.appendfsync)
        self.client.sadd(self.consumers_key, self.processing_key)

    def settle(self) -> dict[str, Any]:
        """With the AOF on, the prefill's own writes can start an automatic rewrite (past 64 MB
        and twice the last rewrite's size): wait for it, then compact the AOF once more, so no
        rewrite forks Redis inside a measured window (one did in an earlier full run, unseen)."""
        if persistence_settings(self.client)["appendonly"] != "yes":
            return {"aof": "off"}
        wait_for_rewrite(self.client)
        self.client.bgrewriteaof()
        wait_for_rewrite(self.client)
        return {"aof": "compacted after the prefill", **aof_state(self.client)}

    def reset(self) -> None:
        keys = list(self.client.scan_iter(match=f"{self.key}*", count=1000))
        if keys:
            self.client.delete(*keys)
        self.setup()

    def fresh(self) -> None:
        """reset() alone: it empties the keys, then sets the persistence up (setup() first would
        compact the AOF of the previous point's leftovers, only to empty it again)."""
        self.reset()

    def enqueue(self, payloads: list[bytes]) -> list[str]:
        if payloads:
            self.client.lpush(self.key, *payloads)
        return [message_id(p) for p in payloads]

    def claim(self, n: int) -> list[Message]:
        self._promote_due()
        # Unpipelined, a batch stops at the first empty LMOVE; pipelined, empties come back as None.
        claimed = []
        for chunk in _chunks(n, self.depth_per_trip):
            got = [p for p in self._lmove(chunk) if p is not None]
            claimed += got
            if len(got) < chunk:
                break
        messages = [Message(message_id(p), p) for p in claimed]
        self.in_flight.update((m.id, m.payload) for m in messages)
        return messages

    def ack(self, ids: list[str]) -> None:
        self._send([("lrem", (self.processing_key, 1, self.in_flight.pop(i))) for i in ids
                    if i in self.in_flight])

    def nack(self, ids: list[str], delay_s: float | None = None) -> None:
        due = time.time() + (1.0 if delay_s is None else float(delay_s))
        payloads = [self.in_flight.pop(i) for i in ids if i in self.in_flight]
        if not payloads:
            return
        self.client.zadd(self.delayed_key, dict.fromkeys(payloads, due))
        self._send([("lrem", (self.processing_key, 1, p)) for p in payloads])

    def reap(self, older_than_s: float) -> int:
        """Move back the processing lists whose consumer has no connection (``older_than_s``
        is not used: liveness is the connection, see the module doc); how many messages."""
        alive = {f"{self.key}:processing:{c['name']}" for c in self.client.client_list() if c.get("name")}
        dead = [k for k in self.client.smembers(self.consumers_key) if k.decode() not in alive]
        return sum(self._reap(keys=[k, self.key, self.consumers_key]) for k in dead)

    def bulk_load(self, payloads: list[bytes]) -> None:
        """LPUSH in chunks, ``BULK_PIPELINE`` commands per round trip: the rows ``enqueue`` makes."""
        pipe = self.client.pipeline(transaction=False)
        for start in range(0, len(payloads), BULK_CHUNK):
            pipe.lpush(self.key, *payloads[start:start + BULK_CHUNK])
            if len(pipe) >= BULK_PIPELINE:
                pipe.execute()
        pipe.execute()

    def pending(self) -> list[bytes]:
        """The queue list (processing lists and the delayed set hold claimed / not yet visible
        messages: they are what depth() counts beyond these)."""
        return list(self.client.lrange(self.key, 0, -1))

    def take(self, n: int) -> list[Message]:
        """The untimed drain: RPOP with a count (claim and ack in one command, the pending list
        only: a message left in a processing list is not taken, so it still shows in depth())."""
        self._promote_due()
        return [Message(message_id(p), p) for p in self.client.rpop(self.key, n) or []]

    def depth(self) -> int:
        processing = self.client.smembers(self.consumers_key)
        pipe = self.client.pipeline(transaction=False)
        pipe.llen(self.key)
        pipe.zcard(self.delayed_key)
        for key in processing:
            pipe.llen(key)
        return sum(pipe.execute())

    def queue_bytes(self) -> int:
        """The dataset's memory (the server holds nothing but the queue's keys in a run)."""
        with redis.Redis.from_url(self.url) as client:
            return int(client.info("memory")["used_memory_dataset"])

    def durability_setting(self) -> str:
        settings = persistence_settings(self.client)
        if settings["appendonly"] == "yes":
            return settings["appendfsync"]
        return "rdb" if settings["save"] else "none"

    def describe(self) -> dict[str, Any]:
        return self.base_description(
            variant="pipelined" if self.depth_per_trip > 1 else "unpipelined",
            pipeline_depth=self.depth_per_trip,
            client=f"redis-py {redis.__version__}",
            hiredis=self._assert_hiredis(),
            server_settings={**persistence_settings(self.client), **aof_state(self.client)},
            delivery="at-least-once (processing list holds claimed messages until LREM)",
            recovery=self.recovery,
            commands=COMMANDS)

    # --- helpers -----------------------------------------------------------------------
    def _lmove(self, count: int) -> list[bytes | None]:
        if count == 1:
            return [self.client.lmove(self.key, self.processing_key, "RIGHT", "LEFT")]
        pipe = self.client.pipeline(transaction=False)
        for _ in range(count):
            pipe.lmove(self.key, self.processing_key, "RIGHT", "LEFT")
        return pipe.execute()

    def _send(self, commands: list[tuple[str, tuple]]) -> None:
        """Run commands, ``pipeline`` of them per round trip."""
        for start in range(0, len(commands), self.depth_per_trip):
            chunk = commands[start:start + self.depth_per_trip]
            if len(chunk) == 1:
                getattr(self.client, chunk[0][0])(*chunk[0][1])
                continue
            pipe = self.client.pipeline(transaction=False)
            for name, args in chunk:
                getattr(pipe, name)(*args)
            pipe.execute()

    def _promote_due(self) -> None:
        now = time.monotonic()
        if now >= self._next_promote:
            self._next_promote = now + PROMOTE_EVERY_S
            self._promote(keys=[self.delayed_key, self.key], args=[time.time()])

    @staticmethod
    def _assert_hiredis() -> bool:
        # Without hiredis redis-py's pure-Python parser is the bottleneck, not Redis.
        if not redis.utils.HIREDIS_AVAILABLE:
            raise RuntimeError("hiredis is not installed: redis-py would measure its own parser")
        return True


# --- persistence ---------------------------------------------------------------------------
def persistence_settings(client: redis.Redis) -> dict[str, str]:
    settings = {_text(k): _text(v) for k, v in client.config_get(*PERSISTENCE_SETTINGS).items()}
    return {key: settings.get(key, "") for key in PERSISTENCE_SETTINGS}


def aof_state(client: redis.Redis) -> dict[str, Any]:
    info = client.info("persistence")
    return {"aof_enabled": info.get("aof_enabled"),
            "aof_rewrite_in_progress": info.get("aof_rewrite_in_progress"),
            "aof_rewrite_scheduled": info.get("aof_rewrite_scheduled"),
            "aof_last_bgrewrite_status": _text(info.get("aof_last_bgrewrite_status"))}


def apply_persistence(client: redis.Redis, appendfsync: str) -> None:
    """The variant's persistence on the shared server; with the AOF on, a finished rewrite."""
    wanted = PERSISTENCE[appendfsync]
    current = persistence_settings(client)
    for key, value in wanted.items():
        if current[key] != value:
            client.config_set(key, value)
    if wanted["appendonly"] == "no":
        return
    wait_for_rewrite(client)  # enabling the AOF started one; a compaction must not collide
    if current["appendonly"] == "yes":
        client.bgrewriteaof()  # already on: compact it, so every point starts from a small AOF
        wait_for_rewrite(client)


def wait_for_rewrite(client: redis.Redis, limit_s: float = REWRITE_LIMIT_S) -> None:
    deadline = time.monotonic() + limit_s
    while True:
        state = aof_state(client)
        if not state["aof_rewrite_in_progress"] and not state["aof_rewrite_scheduled"]:
            if state["aof_last_bgrewrite_status"] != "ok":
                raise RuntimeError(f"Redis AOF rewrite failed ({state}): see the server log")
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"Redis AOF rewrite still running after {limit_s:.0f}s: {state}")
        time.sleep(REWRITE_POLL_S)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value if value is not None else "")


def _chunks(total: int, size: int) -> list[int]:
    return [min(size, total - start) for start in range(0, total, size)]
