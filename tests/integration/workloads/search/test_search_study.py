"""The search study on the test profile through ``run_workload``, against a real Postgres,
Elasticsearch 8.13.4 and OpenSearch 2.19 (JVM heaps of 512 MB): every system gives the exact
match count for every query (0 disagreements), every point lands as a valid run record, and
nothing is left running. Beside it, the check catches a ``match`` query with OR semantics on a
real engine, and a server that is not up stops the study with one line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pglimits_core.datasets.corpus import generate_corpus
from pglimits_core.errors import PGLimitsError
from pglimits_core.profiles import load_profile
from pglimits_core.record.rundir import finished_runs
from pglimits_core.registry import workload
from pglimits_core.studies.study import run_workload
from pglimits_core.workloads.search.correctness import check_all
from pglimits_core.workloads.search.loading import load_index
from pglimits_core.workloads.search.prepared import Prepared, Setup
from pglimits_core.workloads.search.queries import build_query_set
from pglimits_core.workloads.search.systems.registry import make_system
from pglimits_core.workloads.search.variant import variant
from tests.conftest import TEST_ROOT, ExecutedNotebook, processes_using

pytestmark = pytest.mark.integration


def test_the_test_profile_measures_every_system_with_exact_answers(search_notebook: ExecutedNotebook):
    """The records the search notebook's own test reads (the test profile, measured once a session)."""
    runs = search_notebook.runs
    outcome = search_notebook.outcome("search")
    assert outcome["unavailable"] == {} and outcome["failures"] == [], outcome["failures"]
    manifests = [json.loads((path / "manifest.json").read_text()) for path in finished_runs(runs)]
    assert all(m["status"] == "complete" for m in manifests), [m["error"] for m in manifests]
    by_experiment: dict[str, list[dict]] = {}
    for manifest in manifests:
        by_experiment.setdefault(manifest["params"]["experiment"], []).append(manifest)
    assert set(by_experiment) == {"load", "correctness", "throughput", "crossover", "latency", "writes"}
    assert {m["system"] for m in by_experiment["load"]} == {"pg_gin", "elasticsearch", "opensearch"}

    # correctness first: every query of the study, on every variant, agrees with the exact answer
    corpus = load_profile("test").datasets.corpus
    planned = 3 * corpus.queries_per_class + 4 * load_profile("test").section("search").crossover.per_decade
    checks = {m["variant"]: m["params"]["outcome"] for m in by_experiment["correctness"]}
    assert set(checks) == {"correctness:pg_gin ranked", "correctness:pg_gin unranked",
                           "correctness:elasticsearch", "correctness:opensearch"}
    for name, check in checks.items():
        assert (check["checked"], check["disagreed"]) == (planned, 0), (name, check["examples"])

    for load in by_experiment["load"]:
        facts = load["params"]["outcome"]
        assert facts["documents"] == corpus.documents and facts["index_bytes"] > 0
        assert facts["segments"] == (None if load["system"] == "pg_gin" else 1)
    # a throughput point and a latency point, as the load driver recorded them
    for experiment, loop in (("throughput", "closed"), ("latency", "open")):
        for manifest in by_experiment[experiment]:
            run = runs / manifest["run_id"]
            entry = json.loads((run / "summary.json").read_text())["entries"][0]
            assert entry["loop"] == loop and entry["errors"] == 0 and entry["items"] > 0, manifest["run_id"]
            assert manifest["servers"] and manifest["params"]["query"]
    latency = by_experiment["latency"]
    assert len({m["params"]["rate"] for m in latency}) == 1  # the same offered rate for every system
    # every timed record carries its server's warm-up, which ran once per server (not per variant)
    timed = [m for e in ("throughput", "crossover", "latency") for m in by_experiment[e]]
    warm = [(next(iter(m["servers"])), m["params"]["outcome"]["warmup_before"]) for m in timed]
    assert all(w["slices_qps"] and w["queries"] > 0 and w["stopped"] for _, w in warm)
    ran = sorted(server for server, w in warm if w["ran_before_this_point"])
    assert ran == sorted({server for server, _ in warm}), ran
    check_writes(runs, by_experiment["writes"])
    validate = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate", str(runs)],
                              capture_output=True, text=True)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert search_notebook.leaked == []


def check_writes(runs: Path, manifests: list[dict]) -> None:
    """Writes while querying on GIN and OpenSearch, each from a fresh load: two records a point
    (the writes run, the cleanup run), one offered rate for both; the writers wrote with no
    error while every timed answer still had its exact hit count (a wrong one fails the run); GIN's
    answers cannot move (ts_rank uses no corpus statistics); Postgres's VACUUM, timed under the
    queries, left no dead version; OpenSearch says what its segments still hold after its merge."""
    from pglimits_core.analysis.outputs import build_outputs

    assert sorted((m["params"]["variant"], m["params"]["stage"]) for m in manifests) == [
        ("opensearch", "cleanup"), ("opensearch", "writes"), ("pg_gin ranked", "cleanup"), ("pg_gin ranked", "writes")]
    assert len({m["params"]["rate"] for m in manifests}) == 1
    writes = build_outputs(workload("search"), runs).tables["writes"].set_index("variant")
    # whether the writers kept their rate is the box's speed (a busy CI box's OpenSearch kept 77 of
    # 100/s): the test checks the flag says what its numbers say, and that writes were done
    assert (writes.write_errors == 0).all() and (writes.write_per_s_done > 0).all(), writes
    assert (writes.writes_sustained == (writes.write_per_s_done >= 0.95 * writes.write_per_s_offered)).all()
    phases = ["p99_ms_before", "p99_ms_writing", "p99_ms_after", "p99_ms_cleanup", "write_p99_ms", "cleanup_s"]
    assert writes[phases].notna().all().all(), writes[phases]
    assert (writes.agreement_mean_before == 1.0).all() and (writes.agreement_mean_after_cleanup >= 0.9).all()
    gin = writes.loc["pg_gin ranked"]
    assert gin.agreement_mean_after_writes == 1.0 and gin.versions_made_dead >= 100
    assert gin.dead_versions_after_cleanup == 0 and gin.cleanup_kind.startswith("VACUUM")
    engine = writes.loc["opensearch"]
    assert engine.dead_versions_after_writes is not None and engine.dead_versions_after_cleanup is not None


@pytest.fixture(scope="module")
def opensearch_index():
    from pglimits_core.servers.opensearch import OpenSearchServer

    data_dir = TEST_ROOT / f"search-or-{uuid.uuid4().hex[:10]}"
    server = OpenSearchServer(data_dir=data_dir, heap="512m", pretouch=False)
    corpus = generate_corpus(load_profile("test").datasets.corpus)
    try:
        server.start()
        with make_system("opensearch").open(server.endpoint.url) as index:
            texts = (corpus.text(d) for d in range(corpus.num_documents))
            load_index(index, index.encode_chunks(texts, 500), "test", corpus.num_documents)
        yield server.endpoint.url, corpus
    finally:
        server.stop()
        leaked = processes_using(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)
        assert leaked == [], f"JVM left running: {leaked}"


def test_a_match_query_with_or_semantics_is_caught(opensearch_index):
    url, corpus = opensearch_index
    queries = build_query_set(corpus, per_decade=3, top_fraction=0.2, seed=7)
    data = Prepared(Setup(load_profile("test").datasets.corpus, "test", 7), Path("."), corpus, queries)
    with variant("opensearch").engine().open(url) as engine:
        right = check_all(engine, data)
    with variant("opensearch", operator="or").engine().open(url) as engine:
        wrong = check_all(engine, data)
    assert right["disagreed"] == 0 and right["checked"] == len(queries.queries)
    # OR matches every document holding either term: every query whose terms are not always
    # together matches more documents, and the check catches each one
    words = [set(corpus.text(d).split()) for d in range(corpus.num_documents)]
    wider = sum(sum(1 for w in words if {q.term_a, q.term_b} & w) > q.matches for q in queries.queries)
    assert wider > len(queries.queries) // 2
    assert wrong["disagreed"] == wider and wrong["checked"] == len(queries.queries)
    assert "count" in wrong["examples"][0]["problem"]


def test_a_server_that_is_not_up_stops_the_study_with_one_line(tmp_path: Path, isolated_state: Path,
                                                                monkeypatch: pytest.MonkeyPatch):
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "deadnode.yaml").write_text(
        "external: {opensearch: 'http://127.0.0.1:9'}\n"
        "search:\n  variants: [{system: opensearch}]\n  warmup_s: 0\n"
        "  throughput: [{clients: [1], streams: [rare], duration_s: 0.5, warmup_s: 0.2}]\n"
        "datasets:\n  corpus: {documents: 2000, vocabulary: 2000, words_per_doc: 30, queries_per_class: 10}\n")
    monkeypatch.setenv("PGLIMITS_PROFILES_DIR", str(profiles))
    with pytest.raises(PGLimitsError, match="server opensearch is not up") as caught:
        run_workload(workload("search"), "deadnode", runs_root=tmp_path / "runs", progress=False)
    assert "\n" not in str(caught.value) and "fix:" in str(caught.value)
    assert processes_using(isolated_state) == []
