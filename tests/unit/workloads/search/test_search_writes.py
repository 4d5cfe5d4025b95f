"""Search's writes while querying: the answers' agreement with the system's own before the run
(overlap@10 query by query, over the longer of the two lists; identical = the same ids in the same
order), and the plan's rule that the matched rate needs each variant's throughput in the stream."""

from __future__ import annotations

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.profiles import load_profile
from pglimits_core.workloads.search.plan import setup_of, variants_of, writes_points
from pglimits_core.workloads.search.writes import agreement


def test_agreement_is_the_mean_overlap_and_the_share_answered_identically():
    reference = [[1, 2, 3, 4], [5, 6], [7, 8, 9]]
    answers = [[1, 2, 3, 4], [6, 5], [7, 8]]  # same; reordered; one short
    found = agreement(reference, answers)
    assert found["agreement_mean"] == pytest.approx((1.0 + 1.0 + 2 / 3) / 3)
    assert found["identical_share"] == pytest.approx(1 / 3) and found["queries"] == 3


def test_answers_identical_to_the_reference_agree_fully():
    assert agreement([[3, 1], [2]], [[3, 1], [2]]) == {"agreement_mean": 1.0, "identical_share": 1.0, "queries": 2}


def test_a_writes_variant_without_throughput_in_its_stream_is_a_one_line_error():
    profile = load_profile("test")
    section = profile.section("search")
    section = section.model_copy(update={"writes": section.writes.model_copy(update={"stream": "rare"})})
    with pytest.raises(PGLimitsError, match="search.writes needs pg_gin ranked's throughput in stream 'rare'"):
        writes_points(section, setup_of(section, profile), variants_of(section))


def test_the_test_profile_plans_one_writes_run_per_variant_and_rate():
    profile = load_profile("test")
    section = profile.section("search")
    points = writes_points(section, setup_of(section, profile), variants_of(section))
    assert [(p.experiment, p.label) for p in points] == [("writes", "pg_gin ranked"), ("writes", "opensearch")]
