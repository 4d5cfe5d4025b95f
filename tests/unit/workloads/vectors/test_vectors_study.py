"""The vector study's arithmetic on small synthetic data with known answers: recall with ties,
the difficulty measures, the latent-dimension generator and the matched-recall tables."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pglimits_core.datasets.vectors import (
    VectorSpec,
    exact_top_k,
    generate_vectors,
    recall_with_ties,
)
from pglimits_core.errors import PGLimitsError
from pglimits_core.workloads.vectors.difficulty import difficulty, lid_mle, relative_contrast
from pglimits_core.workloads.vectors.points import check_ef, recall_outcome, score_filtered
from pglimits_core.workloads.vectors.systems.base import filter_mask
from pglimits_core.workloads.vectors.systems.pgvector import query_sql
from pglimits_core.workloads.vectors.tables import all_tables, matched_table, sweep_table


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def tiny():
    """One query at (1, 0); base vectors at known angles, two of them tied for 2nd place."""
    angles = np.array([0.0, 0.3, 0.3, 0.5, 0.9, 1.2])
    base = np.stack([np.cos(angles), np.sin(angles) * np.array([1, 1, -1, 1, 1, 1])], axis=1).astype(np.float32)
    queries = np.array([[1.0, 0.0]], dtype=np.float32)
    ids, scores = exact_top_k(base, queries, 2)
    return base, queries, ids, scores


def test_the_truth_scores_one_and_a_tied_neighbour_counts(tiny):
    base, queries, ids, scores = tiny
    assert ids.tolist() == [[0, 1]]  # the tie (1 and 2) goes to the smaller id
    assert recall_with_ties([[0, 1]], base, queries, scores, 2, 1e-6).tolist() == [1.0]
    # id 2 is exactly as close as id 1: a correct answer, though not the truth's id
    assert recall_with_ties([[0, 2]], base, queries, scores, 2, 1e-6).tolist() == [1.0]
    assert recall_at_k_strict([[0, 2]], ids) == 0.5  # what recall without ties would say


def recall_at_k_strict(found, ids):
    from pglimits_core.datasets.vectors import recall_at_k

    return recall_at_k(found, ids, ids.shape[1])


def test_a_farther_id_short_answers_and_duplicates_count_nothing(tiny):
    base, queries, _, scores = tiny
    assert recall_with_ties([[0, 3]], base, queries, scores, 2, 1e-6).tolist() == [0.5]
    assert recall_with_ties([[0]], base, queries, scores, 2, 1e-6).tolist() == [0.5]  # fewer than k rows
    assert recall_with_ties([[0, 0]], base, queries, scores, 2, 1e-6).tolist() == [0.5]
    assert recall_with_ties([[]], base, queries, scores, 2, 1e-6).tolist() == [0.0]
    # epsilon decides ties: 3 is within 0.2 of the 2nd best inner product
    assert recall_with_ties([[0, 3]], base, queries, scores, 2, 0.2).tolist() == [1.0]


def test_recall_outcome_gives_the_mean_and_the_worst_five_percent():
    rng = np.random.default_rng(3)
    base = _unit(rng.standard_normal((300, 8)))
    queries = _unit(rng.standard_normal((40, 8)))
    ids, scores = exact_top_k(base, queries, 10)

    class Data:
        pass

    data = Data()
    data.base, data.queries, data.truth_scores = base, queries, scores
    found = [list(row) for row in ids]
    found[0] = found[0][:5]  # one query answered with 5 of its 10
    found[1] = found[1][:5] + [int(i) for i in np.argsort(base @ queries[1])[:5]]  # 5 right, 5 farthest
    out = recall_outcome(data, found, 1e-6)
    assert out["recall_mean"] == pytest.approx((38 + 0.5 + 0.5) / 40)
    assert out["recall_worst5_mean"] == pytest.approx(0.5)  # ceil(5 % of 40) = 2 worst queries
    assert out["rows_min"] == 5 and out["recall_queries"] == 40


def test_lid_of_uniform_data_is_its_dimension():
    rng = np.random.default_rng(11)
    for d in (2, 5):
        base = rng.uniform(-1, 1, size=(40_000, d))
        queries = rng.uniform(-0.2, 0.2, size=(50, d))  # well inside: no boundary effect
        dist = np.sort(np.linalg.norm(base[None, :, :] - queries[:, None, :], axis=2), axis=1)[:, :100]
        assert np.median(lid_mle(dist)) == pytest.approx(d, rel=0.2)


def test_lid_of_known_distances_and_relative_contrast():
    # r_i = (i/k)^(1/d): the expected order statistics of uniform data in d dimensions
    k, d = 1000, 7
    r = (np.arange(1, k + 1) / k) ** (1 / d)
    assert lid_mle(r[None, :])[0] == pytest.approx(d, rel=0.02)
    assert relative_contrast(np.array([3.0]), np.array([1.5])).tolist() == [2.0]
    with pytest.raises(ValueError):
        lid_mle(np.array([[0.0, 1.0]]))


def test_latent_dimension_shows_in_the_difficulty_and_spec_fields_are_checked():
    flat = generate_vectors(VectorSpec(count=4000, dim=64, clusters=5, queries=40))
    low = generate_vectors(VectorSpec(count=4000, dim=64, clusters=5, queries=40, latent_dim=4))
    hard, easy = difficulty(flat.base, flat.queries, lid_k=50), difficulty(low.base, low.queries, lid_k=50)
    assert easy["lid"]["median"] < 6 < 15 < hard["lid"]["median"]
    assert easy["rc"]["median"] > hard["rc"]["median"]
    assert easy["gap_ip"]["median"] > 0 and 0 <= easy["share_gap_below_epsilon"] <= 1
    assert np.allclose(np.linalg.norm(low.base, axis=1), 1, atol=1e-5)
    assert np.linalg.matrix_rank(low.base[:200].astype(np.float64), tol=1e-4) == 4
    with pytest.raises(PGLimitsError, match="latent_dim"):
        VectorSpec(count=100, dim=8, latent_dim=9)
    with pytest.raises(PGLimitsError, match="latent_dim"):
        VectorSpec(count=100, dim=8, latent_dim=1)


def test_an_ef_below_k_is_refused():
    with pytest.raises(PGLimitsError, match="below k"):
        check_ef([10, 8])
    check_ef([10, 400])


def sweep_rows(variant: str, points: list[tuple]) -> list[dict]:
    """(ef, clients, qps, recall or None) -> frame rows as the study records them."""
    return [{"experiment": "sweep", "status": "complete", "variant": variant, "ef": ef, "clients": c,
             "ops_per_s": qps, "recall_mean": recall, "recall_worst5_mean": None if recall is None else recall - 0.1,
             "recall_p5": recall, "rows_min": 10, "client_bound": False,
             "service_time_p50_ms": 1.0, "service_time_p99_ms": 2.0} for ef, c, qps, recall in points]


def test_matched_recall_interpolates_between_the_bracketing_ef_and_says_not_reached():
    frame = pd.DataFrame(
        sweep_rows("pgvector hnsw", [(10, 1, 5000, 0.80), (40, 1, 3000, 0.93), (200, 1, 1000, 0.96),
                                     (10, 4, 9000, None), (40, 4, 6000, None), (200, 4, 2000, None)])
        + sweep_rows("qdrant hnsw", [(10, 1, 4000, 0.85), (40, 1, 3500, 0.95), (200, 1, 2000, 0.995),
                                     (40, 1, 3300, 0.95)])  # a second repetition
        + sweep_rows("pgvector exact", [(None, 1, 100, 1.0)]))
    sweep = sweep_table(frame)
    rep = sweep[(sweep.variant == "qdrant hnsw") & (sweep.ef == 40)].iloc[0]
    assert (rep.qps, rep.qps_min, rep.qps_max, rep.runs) == (3400, 3300, 3500, 2)
    at4 = sweep[(sweep.variant == "pgvector hnsw") & (sweep.clients == 4)]
    assert at4.recall_mean.tolist() == [0.80, 0.93, 0.96]  # recall joins by (variant, ef)
    matched = matched_table(sweep).set_index(["target_recall", "clients", "variant"])
    pg90 = matched.loc[(0.9, 1, "pgvector hnsw")]
    # linear in recall between ef 10 (0.80, 5000 QPS) and ef 40 (0.93, 3000 QPS)
    assert (pg90.ef_low, pg90.ef) == (10, 40) and pg90.qps == pytest.approx(5000 - 2000 * 0.10 / 0.13)
    assert pg90.qps_is == "interpolated between ef=10 and ef=40" and pg90.recall_mean == 0.9
    assert matched.loc[(0.95, 1, "qdrant hnsw"), "qps"] == pytest.approx(3400)  # the target is the point's recall
    assert matched.loc[(0.95, 1, "qdrant hnsw"), "qps_min"] == pytest.approx(3300)
    pg95 = 3000 - 2000 * 0.02 / 0.03
    assert matched.loc[(0.95, 1, "qdrant hnsw"), "qdrant_over_pgvector"] == pytest.approx(3400 / pg95, abs=1e-3)
    assert matched.loc[(0.99, 1, "pgvector hnsw"), "qps_text"] == "not reached (best 0.960)"
    assert pd.isna(matched.loc[(0.99, 1, "pgvector hnsw"), "qps"])
    assert matched.loc[(0.99, 1, "pgvector exact"), "qps"] == 100
    assert matched.loc[(0.99, 1, "pgvector exact"), "qps_is"] == "measured (exact scan, no ef)"


def _sweep_runs(variant, ef, qps, recall, client_bound=False, box=100.0, server_ms=1.0):
    """A point's three repetitions: QPS at 0.9/1/1.1 of ``qps``, server CPU per query at 1.1/1/0.9 of
    ``server_ms``, client + server CPU ``box`` % in each (8 clients, 2 cores)."""
    return [{"experiment": "sweep", "status": "complete", "variant": variant, "ef": ef, "clients": 8, "repetition": r,
             "ops_per_s": qps * f, "recall_mean": recall, "recall_worst5_mean": recall - 0.1, "recall_p5": recall,
             "rows_min": 10, "client_bound": client_bound, "server_cpu_pct": server_ms * g * qps * f / 10,
             "client_cpu_pct": box - server_ms * g * qps * f / 10, "cores": 2,
             "service_time_p50_ms": 1.0, "service_time_p99_ms": 2.0}
            for r, (f, g) in enumerate(((0.9, 1.1), (1.0, 1.0), (1.1, 0.9)))]


def test_matched_rows_carry_flags_server_cpu_and_the_verdict_class():
    from pglimits_core.analysis.verdict import BY_RATE, LOAD_LIMITED, sweep_class

    frame = pd.DataFrame(_sweep_runs("pgvector hnsw", 10, 200, 0.92, server_ms=2.0)
                         + _sweep_runs("pgvector hnsw", 40, 100, 0.97, box=190.0, server_ms=4.0)
                         + _sweep_runs("qdrant hnsw", 10, 300, 0.80, client_bound=True, box=190.0)
                         + _sweep_runs("qdrant hnsw", 20, 250, 0.93, box=190.0)
                         + _sweep_runs("qdrant hnsw", 40, 200, 0.96, box=190.0))
    matched = matched_table(sweep_table(frame), frame).set_index(["target_recall", "variant"])
    pg = matched.loc[(0.9, "pgvector hnsw")]  # the smallest ef already reaches 0.90: measured there
    assert pg.qps == 200 and pg.qps_is == "measured at ef=10 (the smallest ef swept)" and pd.isna(pg.ef_low)
    assert pg.server_cpu_us_per_query == pytest.approx(2000) and pg.box_saturated is False and pg.qps_text == "200"
    qd = matched.loc[(0.9, "qdrant hnsw")]  # between ef 10 (client-bound) and ef 20: flagged, box saturated
    assert qd.client_bound is True and qd.box_saturated is True and qd.qps_text == "262 ᶜ ᵇ"
    # a client-bound side is a floor: Qdrant's 262 QPS, its load the limit, against pgvector's 200
    # cannot clear the band, and server CPU per query never decides
    assert qd.limit == "load" and qd.verdict == LOAD_LIMITED and pd.isna(pg.verdict)
    pg95 = matched.loc[(0.95, "pgvector hnsw")]
    assert pg95.qps == pytest.approx(140) and pg95.server_cpu_us_per_query == pytest.approx(3200)
    qd95 = matched.loc[(0.95, "qdrant hnsw")]  # ef 20-40 and 10-40: neither client-bound, but the box saturated
    assert qd95.client_bound is False and qd95.box_saturated is True
    # the box saturated, but neither side was client-bound: the rates decide (the box's
    # saturation is a marker, not which side set the limit)
    assert qd95.limit == "neither" and qd95.verdict == sweep_class(BY_RATE)


def test_tables_of_no_records_are_empty_not_an_error():
    tables = all_tables(pd.DataFrame())
    assert set(tables) == {"difficulty", "build", "sweep", "matched", "filtered", "latency"}
    assert all(t.empty for t in tables.values())


def test_a_filtered_answer_is_scored_against_the_filtered_truth_and_short_answers_are_counted():
    rng = np.random.default_rng(5)
    data = SimpleNamespace(base=_unit(rng.standard_normal((1000, 8))), queries=_unit(rng.standard_normal((20, 8))))
    mask = filter_mask(1000, 10)
    assert mask.sum() == 100 and mask[:10].tolist() == [True] * 10 and not mask[10]
    kept = np.flatnonzero(mask)
    local, _ = exact_top_k(data.base[kept], data.queries, 10)
    truth = [list(kept[row]) for row in local]
    out = score_filtered(data, truth, mask, 1e-6)
    assert out["recall_mean"] == 1.0 and out["short_answers"] == 0 and out["filter_violations"] == 0
    short = [row[:4] for row in truth]  # what a post-filtered HNSW scan returns: fewer rows
    out = score_filtered(data, short, mask, 1e-6)
    assert out["recall_mean"] == pytest.approx(0.4) and out["short_answers"] == 20 and out["rows_min"] == 4
    # an id outside the filter never counts, however close it is
    unfiltered, _ = exact_top_k(data.base, data.queries, 10)
    outside = [[int(i) for i in row if not mask[i]][:1] + truth[q][:9] for q, row in enumerate(unfiltered)]
    out = score_filtered(data, outside, mask, 1e-6)
    assert out["recall_mean"] == pytest.approx(0.9) and out["filter_violations"] == 20


def test_the_pgvector_filter_is_a_where_clause_on_the_tag_column():
    assert query_sql(10) == "SELECT id FROM vectors_items ORDER BY embedding <#> %b LIMIT 10"
    assert "WHERE tag < 5 ORDER BY embedding <#> %b LIMIT 10" in query_sql(10, 5)


def test_a_damaged_dataset_is_refused_with_the_fix(tmp_path, monkeypatch):
    from pglimits_core.datasets.store import ensure_dataset
    from pglimits_core.workloads.vectors.points import Setup, dataset

    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path))
    setup = Setup(VectorSpec(count=200, dim=8, clusters=2, queries=5, latent_dim=3), 16, 64, 1e-5)
    path = ensure_dataset(setup.spec)
    raw = bytearray((path / "truth_scores.npy").read_bytes())
    raw[-1] ^= 0xFF  # one flipped byte, same size: only the checksum can tell
    (path / "truth_scores.npy").write_bytes(bytes(raw))
    with pytest.raises(PGLimitsError, match="fails verification") as caught:
        dataset(setup)
    assert "rebuild" in caught.value.fix


def test_the_plan_builds_first_sweeps_in_rounds_and_filters_last():
    from pglimits_core.workloads.vectors.plan import plan
    from pglimits_core.workloads.vectors.profile import VectorsProfile

    section = VectorsProfile(ef=[10, 40], clients=[1, 8], repetitions=2, duration_s=1,
                             filtered={"selectivity_pct": [1, 50], "ef": [40], "duration_s": 1})
    profile = SimpleNamespace(name="t", datasets=SimpleNamespace(vectors=VectorSpec(count=100, dim=8)))
    points = plan(section, profile)
    kinds = [p.experiment for p in points]
    assert kinds[:3] == ["difficulty", "build", "build"] and kinds[-5:] == ["build_tagged"] + ["filtered"] * 4
    sweep = [p for p in points if p.experiment == "sweep"]
    assert len(sweep) == 2 * (2 * 2 * 2 + 2)  # repetitions x (ef x hnsw engines x clients + exact x clients)
    exact = [p for p in sweep if p.label == "pgvector exact"]
    assert [p.params["ef"] for p in exact] == [None] * 4
    with pytest.raises(PGLimitsError, match="below k"):
        plan(VectorsProfile(ef=[4], clients=[1], duration_s=1), profile)
    with pytest.raises(PGLimitsError, match="datasets.vectors"):
        plan(section, SimpleNamespace(name="t", datasets=SimpleNamespace(vectors=None)))


def _matched_row(variant, clients, qps, box_cpu_pct, client_ms, server_ms):
    return {"target_recall": 0.95, "clients": clients, "variant": variant, "ef": 64, "qps": qps,
            "qps_min": qps * 0.9, "qps_max": qps * 1.1, "box_cpu_pct": box_cpu_pct, "cores": 2,
            "client_cpu_ms_per_query": client_ms, "server_cpu_ms_per_query": server_ms, "qps_text": f"{qps:,.0f}"}


def test_a_rate_on_a_saturated_box_is_no_verdict_and_server_cpu_per_query_is_compared_instead():
    from pglimits_core.workloads.vectors.report import seed_comparison

    matched = pd.DataFrame([_matched_row("qdrant hnsw", 1, 640, 100.0, 0.45, 1.1),
                            _matched_row("pgvector hnsw", 1, 360, 100.0, 0.3, 2.5),
                            _matched_row("qdrant hnsw", 8, 946, 181.0, 0.74, 1.15),
                            _matched_row("pgvector hnsw", 8, 763, 190.0, 0.3, 2.15)])
    sweep = pd.DataFrame({"variant": ["qdrant hnsw", "pgvector hnsw"], "recall_mean": [0.995, 0.992]})
    rows = seed_comparison({"matched": matched, "sweep": sweep}).set_index("figure")
    eight = rows[rows.index.str.contains("8 clients")].iloc[0]
    assert eight.verdict.startswith("inconclusive: the 2-core box was saturated")
    one = rows[rows.index.str.contains("QPS at recall ≥ 0.95 \\(1 client")].iloc[0]
    # a sweep's seconds-long windows never judge a seed figure (the capacity experiment's do)
    assert one.verdict.startswith("inconclusive: the sweep's short windows") and "ratio over the repetitions" in one.verdict
    server = rows[rows.index.str.startswith("queries per server CPU-second")].iloc[0]
    assert server["our ratio A/B"] == pytest.approx(2.5 / 1.1, abs=0.01)


def test_runs_with_cpu_the_split_does_not_explain_give_no_cpu_figures_and_no_verdict():
    from pglimits_core.workloads.vectors.tables import cpu_per_query

    runs = pd.DataFrame({"ops_per_s": [10.0, 10.0], "client_cpu_pct": [5.0, 5.0], "server_cpu_pct": [90.0, 90.0],
                         "other_cpu_pct": [100.0, 110.0], "client_bound": [False, False]})
    assert cpu_per_query(runs)["server_cpu_ms_per_query"] is None
    runs["other_cpu_pct"] = [0.0, 100.0]
    assert cpu_per_query(runs)["server_cpu_ms_per_query"] == pytest.approx(90.0)


def test_the_ceiling_tools_send_the_harness_query():
    import json

    from pglimits_core.workloads.vectors.ceiling_tools import (
        EfPgbenchLoad,
        pgbench_script,
        search_body,
    )

    script = pgbench_script(10, 1000)
    assert script.startswith("\\set i random(1, 1000)\n")
    assert ("SELECT id FROM vectors_items ORDER BY embedding <#> (SELECT v FROM vector_ceiling_queries WHERE id = :i) "
            "LIMIT 10;") in script  # the harness's statement and operator, the vector stored
    body = json.loads(search_body(np.array([0.5, -0.25], dtype=np.float32), 64, 10))
    assert body == {"vector": [0.5, -0.25], "limit": 10, "params": {"hnsw_ef": 64, "exact": False}, "with_payload": False}
    load = EfPgbenchLoad("postgresql://u:secret@127.0.0.1:5432/db", script, 2, 3, 1, options="-c hnsw.ef_search=64",
                         binary="/bin/echo")
    (command,) = load.commands()
    assert command.env == {"PGPASSWORD": "secret", "PGOPTIONS": "-c hnsw.ef_search=64"}
    assert "secret" not in " ".join(command.argv) and load.describe()["tool_env"] == {"PGOPTIONS": "-c hnsw.ef_search=64"}
