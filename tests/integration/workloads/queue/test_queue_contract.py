"""Every queue system and variant passes the same contract against its real server.

Exactly-once accounting with concurrent producers and consumers (ids come from the payloads,
not from the systems), nack visibility after the backoff and not before, the SQLite reaper,
and the registry's refusals. Threads, one adapter (= one connection) each: the libraries
release the GIL while waiting on the server, so claims really do race.
"""

from __future__ import annotations

import pickle
import threading
import time
from collections import Counter

import pytest

from pglimits_core.datasets.messages import MessageGenerator, decode, stamp_batch
from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.queue.systems.registry import (
    QUEUE_SYSTEMS,
    adapter_class,
    make_adapter,
    server_for,
    validate_options,
)

MESSAGES_PER_PRODUCER = 300
PRODUCERS, CONSUMERS = 2, 4
PRODUCE_BATCH = 7  # odd on purpose: batches straddle claim batch boundaries
DRAIN_DEADLINE_S = 60

CASES = [
    ("pg_skiplocked", {"batch": 1}),
    ("pg_skiplocked", {"batch": 10}),
    ("pg_delete", {"batch": 1}),
    ("pg_delete", {"batch": 10}),
    ("pg_delete", {"batch": 50}),
    ("pg_delete", {"batch": 1, "synchronous_commit": "off"}),
    ("pgmq", {"batch": 1}),
    ("pgmq", {"batch": 10, "mode": "archive"}),
    ("redis_reliable", {"batch": 1, "pipeline": 1}),
    ("redis_reliable", {"batch": 10, "pipeline": 16}),
    ("redis_reliable", {"batch": 1, "appendfsync": "always"}),
    ("redis_reliable", {"batch": 10, "pipeline": 16, "appendfsync": "everysec"}),
    ("sqlite_wal", {"synchronous": "normal"}),
    ("sqlite_wal", {"synchronous": "full"}),
    ("sqlite_wal", {"synchronous": "off", "batch": 50}),
    ("sqlite_wal", {"shards": 4, "batch": 10}),
]
IDS = [f"{system}-" + "-".join(f"{k}{v}" for k, v in opts.items()) for system, opts in CASES]


@pytest.fixture
def queue_url(request, server_dir):
    def url_for(system: str) -> str:
        server = server_for(system)
        if server == "sqlite":
            from pglimits_core.servers.sqlite import SQLiteServer
            return SQLiteServer(data_dir=server_dir).start().url
        return request.getfixturevalue(f"{server}_endpoint").url
    return url_for


def opened(system, url, **options):
    adapter = make_adapter(system, url, **options)
    adapter.open()
    return adapter


@pytest.fixture
def fresh_queue(queue_url):
    """An opened admin adapter on an empty queue, plus a factory for more (closed at the end)."""
    made = []

    def factory(system, **options):
        adapter = opened(system, queue_url(system) if not made else made[0].url, **options)
        made.append(adapter)
        return adapter

    yield factory
    for adapter in made:
        adapter.close()


def produce(adapter, producer: str, errors: list) -> None:
    try:
        templates = MessageGenerator(seed=11, producer=producer).templates(MESSAGES_PER_PRODUCER)
        for start in range(0, len(templates), PRODUCE_BATCH):
            batch = stamp_batch(templates[start:start + PRODUCE_BATCH])
            assert len(adapter.enqueue(batch)) == len(batch)
    except Exception as exc:  # surfaced by the test thread
        errors.append(exc)


def consume(adapter, seen: list, done: threading.Event, errors: list) -> None:
    deadline = time.monotonic() + DRAIN_DEADLINE_S
    try:
        while time.monotonic() < deadline:
            messages = adapter.claim(adapter.batch)
            if messages:
                seen.extend(decode(m.payload)[0] for m in messages)
                adapter.ack([m.id for m in messages])
            elif done.is_set() and len(seen) >= PRODUCERS * MESSAGES_PER_PRODUCER:
                return
            else:
                time.sleep(0.001)
    except Exception as exc:
        errors.append(exc)


def run_threads(targets) -> None:
    threads = [threading.Thread(target=t, args=a, daemon=True) for t, a in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DRAIN_DEADLINE_S + 30)


@pytest.mark.integration
@pytest.mark.parametrize(("system", "options"), CASES, ids=IDS)
def test_concurrent_producers_and_consumers_lose_and_duplicate_nothing(fresh_queue, system, options):
    admin = fresh_queue(system, **options)
    admin.setup()
    admin.setup()  # idempotent
    admin.reset()
    producers = [fresh_queue(system, **options) for _ in range(PRODUCERS)]
    consumers = [fresh_queue(system, worker_index=i, **options) for i in range(CONSUMERS)]
    seen, errors, produced = [], [], threading.Event()

    def all_producers():
        run_threads([(produce, (p, f"p{i}", errors)) for i, p in enumerate(producers)])
        produced.set()

    run_threads([(all_producers, ()), *[(consume, (c, seen, produced, errors)) for c in consumers]])

    assert errors == []
    expected = {f"p{p}-{s}" for p in range(PRODUCERS) for s in range(1, MESSAGES_PER_PRODUCER + 1)}
    duplicated = {i: n for i, n in Counter(seen).items() if n > 1}
    assert duplicated == {}
    assert expected - set(seen) == set(), "lost messages"
    assert set(seen) == expected
    assert admin.claim(10) == []
    assert admin.depth() == 0


# one variant per adapter class and claim shape: the untimed paths are per system
BULK_CASES = [CASES[0], CASES[3], CASES[7], CASES[9], CASES[15]]


@pytest.mark.integration
@pytest.mark.parametrize(("system", "options"), BULK_CASES, ids=[IDS[CASES.index(c)] for c in BULK_CASES])
def test_the_untimed_paths_load_read_back_and_take_only_what_a_claim_could(fresh_queue, system, options):
    """bulk_load (a point's prefill), pending (the read-back after its window) and take (the
    drain): the messages enqueue makes, every one read back, and a claimed, unacknowledged one
    neither read back as pending nor taken, so it still shows in depth() (none with at-most-once
    delivery: its claim deleted it)."""
    queue = fresh_queue(system, **options)
    queue.fresh()
    payloads = stamp_batch(MessageGenerator(seed=5, producer="bulk").templates(1200))
    ids = sorted(decode(p)[0] for p in payloads)
    queue.bulk_load(payloads)
    assert queue.depth() == 1200
    assert sorted(decode(p)[0] for p in queue.pending()) == ids
    held = [decode(m.payload)[0] for m in queue.claim(3)]
    pending = [decode(p)[0] for p in queue.pending()]
    assert len(held) == 3 and len(pending) == 1197 and not set(pending) & set(held)
    taken = []
    while messages := queue.take(500):
        taken += [decode(m.payload)[0] for m in messages]
    assert sorted(taken + held) == ids
    assert queue.depth() == (0 if queue.delivery_guarantee == "at-most-once" else 3)
    assert queue.pending() == []


@pytest.mark.integration
@pytest.mark.parametrize(("system", "options"), CASES, ids=IDS)
def test_nack_reappears_after_its_backoff_and_not_before(fresh_queue, system, options):
    # SQLite uses the seed's policy (base * 2^attempts, attempts = 1 after the first claim).
    is_sqlite = system == "sqlite_wal"
    options = {**options, "backoff_base_s": 0.25} if is_sqlite else options
    delay_s = 0.5
    queue = fresh_queue(system, **options)
    queue.setup()
    queue.reset()
    payload = stamp_batch(MessageGenerator(seed=2, producer="n").templates(1))
    queue.enqueue(payload)
    [message] = queue.claim(queue.batch)
    released = time.monotonic()  # before the nack: the message is due no earlier than this + delay
    queue.nack([message.id], None if is_sqlite else delay_s)

    assert queue.claim(queue.batch) == [], "visible right after the nack"
    assert queue.depth() == 1
    again, seen_at = poll_claim(queue, deadline_s=delay_s + 3)
    # seen_at is taken after the claim returned, so a noisy machine can only make this pass later,
    # never make a correct system fail; 20 ms covers client/server clock differences.
    assert seen_at - released >= delay_s - 0.02, "visible before its backoff"
    assert [decode(m.payload)[0] for m in again] == ["n-1"]
    queue.ack([m.id for m in again])
    assert queue.depth() == 0


def poll_claim(queue, deadline_s: float):
    """The first non-empty claim and the monotonic time it returned."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        messages = queue.claim(queue.batch)
        if messages:
            return messages, time.monotonic()
        time.sleep(0.005)
    pytest.fail("nacked message never reappeared")


@pytest.mark.integration
@pytest.mark.parametrize("shards", [1, 4])
def test_sqlite_reaper_reclaims_a_dead_consumers_message(fresh_queue, shards):
    dead = fresh_queue("sqlite_wal", shards=shards, worker_id="dead-worker")
    dead.setup()
    dead.reset()
    dead.enqueue(stamp_batch(MessageGenerator(seed=3, producer="r").templates(1)))
    [claimed] = dead.claim(1)  # ... and the consumer "dies" without acking
    alive = fresh_queue("sqlite_wal", shards=shards, worker_id="alive-worker")

    assert alive.claim(1) == []
    assert alive.reap(older_than_s=30) == 0  # a fresh claim is not reaped
    time.sleep(0.3)
    assert alive.reap(older_than_s=0.2) == 1
    [reclaimed] = alive.claim(1)
    assert decode(reclaimed.payload)[0] == decode(claimed.payload)[0] == "r-1"
    dead.ack([claimed.id])  # too late: the row now belongs to alive-worker
    assert dead.stats()["stale_acks"] == 1
    assert alive.depth() == 1
    alive.ack([reclaimed.id])
    assert alive.depth() == 0


@pytest.mark.integration
@pytest.mark.parametrize(("system", "options"), CASES, ids=IDS)
def test_describe_names_variant_batch_and_statements(fresh_queue, system, options):
    queue = fresh_queue(system, **options)
    queue.setup()
    described = queue.describe()
    assert described["system"] == system
    assert described["batch"] == options.get("batch", 1)
    assert described.get("sql") or described.get("commands")
    assert "delivery" in described and "durability" in described
    # the class comes from what the server runs, read back, and matches what the variant asked for
    cls = adapter_class(system)
    asked = options.get(cls.durability_option, cls.durability_default)
    assert described["durability_class"] == cls.promises[asked].durability_class.key
    assert described["durability_setting"] == f"{cls.durability_option}={asked}"
    if system == "redis_reliable":
        assert described["hiredis"] is True
    if server_for(system) == "postgres":  # the pg_stat sampler watches these relations
        assert described["tables"]


@pytest.mark.integration
def test_sqlite_counts_busy_waits_under_write_contention(fresh_queue):
    writers = [fresh_queue("sqlite_wal", worker_index=i) for i in range(3)]
    writers[0].setup()
    errors = []
    run_threads([(produce, (w, f"b{i}", errors)) for i, w in enumerate(writers)])
    assert errors == []
    assert writers[0].depth() == 3 * MESSAGES_PER_PRODUCER
    stats = [w.stats() for w in writers]
    assert all(s["busy_timeouts"] == 0 for s in stats)
    assert all(s["busy_waits"] >= s["busy_events"] for s in stats)


@pytest.mark.integration
def test_redis_variant_without_the_option_after_an_aof_one_runs_without_persistence(fresh_queue):
    """Variants share one Redis and run one after another: each sets its persistence."""
    aof = fresh_queue("redis_reliable", appendfsync="always")
    aof.setup()
    assert aof.client.config_get("appendonly")["appendonly"] == "yes"
    assert aof.client.config_get("appendfsync")["appendfsync"] == "always"
    state = aof.client.info("persistence")
    assert state["aof_rewrite_in_progress"] == 0 and state["aof_rewrite_scheduled"] == 0
    assert aof.describe()["durability_class"] == "per_commit"

    plain = fresh_queue("redis_reliable")
    plain.setup()
    plain.reset()
    assert plain.client.config_get("appendonly")["appendonly"] == "no"
    described = plain.describe()
    assert described["durability_class"] == "none" and described["survives_process_kill"] is False
    assert described["server_settings"]["appendonly"] == "no"


@pytest.mark.integration
def test_redis_settles_its_prefill_with_no_aof_rewrite_left_to_fork_inside_a_window(fresh_queue):
    """A prefill past the AOF's auto-rewrite size starts a rewrite; settle() waits for it and
    compacts the AOF, so the measured window that follows starts with none running."""
    aof = fresh_queue("redis_reliable", appendfsync="always")
    aof.setup()
    aof.client.config_set("auto-aof-rewrite-min-size", str(1 << 20))  # a small prefill triggers one
    try:
        aof.bulk_load([b"x" * 200] * 20_000)
        settled = aof.settle()
        state = aof.client.info("persistence")
        assert settled["aof"] == "compacted after the prefill" and settled["aof_last_bgrewrite_status"] == "ok"
        assert state["aof_rewrite_in_progress"] == 0 and state["aof_rewrite_scheduled"] == 0
        assert aof.depth() == 20_000
    finally:
        aof.client.config_set("auto-aof-rewrite-min-size", str(64 << 20))
    plain = fresh_queue("redis_reliable")
    plain.setup()
    assert plain.settle() == {"aof": "off"}


@pytest.mark.integration
def test_postgres_synchronous_commit_is_per_session(fresh_queue):
    relaxed = fresh_queue("pg_delete", synchronous_commit="off")
    strict = fresh_queue("pg_delete")
    assert relaxed.server_settings()["synchronous_commit"] == "off"
    assert strict.server_settings()["synchronous_commit"] == "on"  # the other session is untouched
    assert (relaxed.describe()["durability_class"], strict.describe()["durability_class"]) == \
        ("periodic", "per_commit")


@pytest.mark.integration
def test_sqlite_records_the_busy_handling_that_runs(fresh_queue):
    described = fresh_queue("sqlite_wal").describe()
    assert described["pragmas"]["busy_timeout"] == 0
    assert described["busy_handler"].startswith("busy_timeout: 0 (adapter override) + Python retry loop, "
                                                "budget 5000 ms, first wait 0.1 ms")


# --- registry refusals (no server needed) -------------------------------------------------
def test_every_system_names_its_server_and_accepts_batch():
    for system in QUEUE_SYSTEMS:
        assert server_for(system) in {"postgres", "redis", "sqlite"}
        assert validate_options(system, {"batch": "10"}) == {"batch": 10}


@pytest.mark.parametrize(("system", "options"), [
    ("kafka", {}), ("pg_delete", {"batch": 0}), ("pg_delete", {"batch": -3}),
    ("pg_delete", {"batch": 2.5}), ("pgmq", {"mode": "shred"}), ("redis_reliable", {"shards": 4}),
    ("sqlite_wal", {"synchronous": "extra"}), ("sqlite_wal", {"shards": 0}),
])
def test_unknown_system_variant_or_bad_batch_is_a_one_line_error(system, options):
    with pytest.raises(PGLimitsError) as caught:
        make_adapter(system, "unused", **options)
    assert "\n" not in str(caught.value) and caught.value.fix


def test_unopened_adapters_pickle_for_worker_processes():
    """The driver pickles the adapter template to each worker, which then calls open()."""
    for system in QUEUE_SYSTEMS:
        adapter = pickle.loads(pickle.dumps(make_adapter(system, "unused", batch=10)))
        assert adapter.batch == 10 and adapter.worker_id is None
