"""The search study's load points: each system's index dropped and rebuilt from the corpus,
timed step by step (bulk load, index build, settle), with the documents, sizes on disk, server
memory and the CPU spent by server and client. The system does the steps; this module times
them. A point that reuses its record (a resumed study starts from fresh servers) still makes
sure the index holds the corpus (``ensure_loaded``, untimed)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from pglimits_core.errors import PGLimitsError
from pglimits_core.samplers.memory import process_trees, server_memory
from pglimits_core.studies.runner import Context, RecordedRun
from pglimits_core.studies.study import StudyRun
from pglimits_core.workloads.search.prepared import Setup, prepared
from pglimits_core.workloads.search.records import STUDY, recorded
from pglimits_core.workloads.search.systems.base import SearchSystem
from pglimits_core.workloads.search.systems.registry import make_system
from pglimits_core.workloads.search.variant import SearchVariant

CLIENT = "study process, one connection, payloads encoded before timing"


def load_point(run: StudyRun, v: SearchVariant, setup: Setup, repetition: int) -> RecordedRun:
    """Drop and rebuild ``v.system``'s index from the corpus, timed (``v`` is its load variant)."""
    ctx = run.ctx
    params = {"experiment": "load", "variant": v.label, **setup.params(),
              "batch_docs": setup.batch_docs, "repetition": repetition}
    name = f"load:{v.label}"
    if reused := ctx.reuse(STUDY, v.system, name, params):
        ensure_loaded(ctx, setup, v)
        return reused
    return recorded(ctx, v.system, v.server, name, params, run.seed, lambda: measure_load(ctx, setup, v))


def measure_load(ctx: Context, setup: Setup, v: SearchVariant) -> dict[str, Any]:
    """The load's outcome: seconds per step, rates, CPU, sizes, memory and the index as built."""
    data = prepared(setup)
    endpoint = ctx.endpoints[v.server]
    engine = make_system(v.system)  # the defaults: a load does not depend on a variant's options
    engine.check_product(endpoint.url)
    chunks = data.chunks(engine)
    with engine.open(endpoint.url):
        timing = timed_load(engine, chunks, setup.dataset, data.corpus.num_documents, endpoint.pids)
        documents = engine.documents()
        if documents != data.corpus.num_documents:
            raise PGLimitsError(f"{v.system} holds {documents} documents after the load, "
                                f"the corpus has {data.corpus.num_documents}", "check the server log")
        times = timing.pop("times")
        return {**{k: round(s, 4) for k, s in times.items()}, "total_s": round(timing["total_s"], 4),
                "documents": documents, "bulk_requests": len(chunks), "bulk_bytes": sum(len(c) for c in chunks),
                "docs_per_s_bulk": documents / times["bulk_load_s"],
                "docs_per_s_total": documents / (times["bulk_load_s"] + times["index_build_s"]),
                "server_cpu_s": round(timing["server_cpu_s"], 3), "client_cpu_s": round(timing["client_cpu_s"], 3),
                **engine.sizes(), **server_memory_facts(endpoint.pids), "index": engine.describe(), "client": CLIENT}


def timed_load(engine: SearchSystem, chunks: list[bytes], dataset: str, documents: int,
               pids: Any) -> dict[str, Any]:
    """``load_index`` with its wall time and the CPU the server's processes and this one spent."""
    server_before, client_before = _cpu_seconds(pids), time.process_time()
    started = time.perf_counter()
    times = load_index(engine, chunks, dataset, documents)
    total_s = time.perf_counter() - started
    return {"times": times, "total_s": total_s, "server_cpu_s": _cpu_seconds(pids) - server_before,
            "client_cpu_s": time.process_time() - client_before}


def load_index(engine: SearchSystem, chunks: list[bytes], dataset: str, documents: int) -> dict[str, float]:
    """Drop and create the index, load every chunk, run the system's build steps, mark it
    loaded: seconds of the bulk load and of each build step, by record key."""
    engine.reset(dataset, documents)
    times = {"bulk_load_s": _timed(lambda: _bulk_all(engine, chunks))}
    for key, step in engine.build_steps():
        times[key] = _timed(step)
    engine.mark_loaded(dataset, documents)
    return times


def _bulk_all(engine: SearchSystem, chunks: list[bytes]) -> None:
    for chunk in chunks:
        engine.bulk(chunk)


def _timed(step: Callable[[], Any]) -> float:
    started = time.perf_counter()
    step()
    return time.perf_counter() - started


def ensure_loaded(ctx: Context, setup: Setup, v: SearchVariant) -> None:
    """The index ``v`` queries holds the study's corpus (a resumed study starts from fresh
    servers): if not, load it now, untimed."""
    data = prepared(setup)
    engine = make_system(v.system)
    with engine.open(ctx.endpoints[v.server].url):
        if not engine.loaded(setup.dataset, data.corpus.num_documents):
            print(f"search: loading {v.system} (untimed: its load record exists)", file=sys.stderr)
            load_index(engine, data.chunks(engine), setup.dataset, data.corpus.num_documents)


# --- the server's processes ------------------------------------------------------------------------
def _cpu_seconds(pids) -> float:
    import psutil

    total = 0.0
    for process in process_trees(pids):
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            continue
    return total


def server_memory_facts(pids) -> dict[str, Any]:
    """Resident memory of the server's processes: RSS summed, the largest one, and PSS summed
    (shared pages split between the processes sharing them: Postgres backends all map
    shared_buffers, so their RSS sum overstates it)."""
    readings = server_memory(pids, with_pss=True)
    rss, pss = [r.rss_bytes for r in readings], [r.pss_bytes or 0 for r in readings]
    return {"server_rss_bytes": sum(rss) or None, "server_rss_max_bytes": max(rss, default=0) or None,
            "server_pss_bytes": sum(pss) or None, "server_processes": len(rss)}
