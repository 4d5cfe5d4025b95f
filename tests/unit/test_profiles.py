import pytest

from pglimits_core import profiles
from pglimits_core.errors import PGLimitsError


@pytest.mark.parametrize("name", ["quick", "full", "test"])
def test_committed_profiles_validate_and_their_variants_exist(name):
    from pglimits_core.studies.queue import variant

    profile = profiles.load_profile(name)
    labels = [variant(**spec).label for spec in profile.queue.variants]
    assert len(labels) == len(set(labels))
    assert set(profile.queue.cliff.variants) <= set(labels)


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(PGLimitsError, match="use one of: full, quick"):
        profiles.load_profile("fast")


def test_unknown_key_and_bad_value_name_the_key(tmp_path, monkeypatch):
    monkeypatch.setattr(profiles, "PROFILES_DIR", tmp_path)
    (tmp_path / "bad.yaml").write_text("queue: {variants: [{system: pg_delete}], colour: red,"
                                       " throughput: {consumers: [1], prefill: 1, duration_s: 1},"
                                       " latency: {rates: [1], duration_s: 1}}\n")
    with pytest.raises(PGLimitsError, match="queue.colour"):
        profiles.load_profile("bad")
    (tmp_path / "neg.yaml").write_text("queue: {variants: [{system: pg_delete}],"
                                       " throughput: {consumers: [0], prefill: 1, duration_s: 1},"
                                       " latency: {rates: [1], duration_s: 1}}\n")
    with pytest.raises(PGLimitsError, match="queue.throughput.consumers.0"):
        profiles.load_profile("neg")


def test_unknown_queue_system_and_bad_batch_are_one_line_errors():
    from pglimits_core.studies.queue import variant

    with pytest.raises(PGLimitsError, match="unknown queue system"):
        variant("kafka")
    with pytest.raises(PGLimitsError, match="batch"):
        variant("pg_delete", batch=0)
