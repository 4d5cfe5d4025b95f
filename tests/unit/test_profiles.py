import pytest

from pglimits_core import profiles
from pglimits_core.errors import PGLimitsError


@pytest.mark.parametrize("name", ["quick", "full", "test"])
def test_committed_profiles_validate_and_their_variants_exist(name):
    from pglimits_core.workloads.queue.points import variant

    profile = profiles.load_profile(name)
    labels = [variant(**spec).label for spec in profile.section("queue").variants]
    assert len(labels) == len(set(labels))
    for experiment in ("capacity", "harness_bench", "placement_check"):
        if (section := getattr(profile.section("queue"), experiment)) is not None:
            assert set(section.variants) <= set(labels), experiment


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(PGLimitsError, match="use one of: full, quick"):
        profiles.load_profile("fast")


def test_unknown_key_and_bad_value_name_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("PGLIMITS_PROFILES_DIR", str(tmp_path))
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
    from pglimits_core.workloads.queue.points import variant

    with pytest.raises(PGLimitsError, match="unknown queue system"):
        variant("kafka")
    with pytest.raises(PGLimitsError, match="batch"):
        variant("pg_delete", batch=0)


def test_full_profile_declares_the_source_study_datasets():
    datasets = profiles.load_profile("full").datasets
    assert (datasets.corpus.documents, datasets.corpus.vocabulary) == (200_000, 50_000)
    assert (datasets.vectors.count, datasets.vectors.dim) == (200_000, 384)


@pytest.mark.parametrize(("block", "named"), [
    ("{corpus: {documents: 1000, stemming: true}}", "datasets.corpus.stemming"),
    ("{vectors: {count: many}}", "datasets.vectors.count"),
    ("{corpus: {documents: 0}}", "CorpusSpec.documents"),
])
def test_bad_dataset_entries_name_the_key(tmp_path, monkeypatch, block, named):
    monkeypatch.setenv("PGLIMITS_PROFILES_DIR", str(tmp_path))
    (tmp_path / "bad.yaml").write_text("queue: {variants: [{system: pg_delete}],"
                                       " throughput: {consumers: [1], prefill: 1, duration_s: 1},"
                                       f" latency: {{rates: [1], duration_s: 1}}}}\ndatasets: {block}\n")
    with pytest.raises(PGLimitsError, match=named) as caught:
        profiles.load_profile("bad")
    assert "bad.yaml" in str(caught.value) and "\n" not in str(caught.value)


def test_the_report_plans_every_experiment_the_study_runs_and_only_those():
    """"What could not be run" lists planned points with no record: steady states and crash
    drills are planned too, and a variant limited to some experiments is not missing from others."""
    from pglimits_core.analysis.report import planned_points

    planned = planned_points("quick")
    assert ("queue", "pg_delete batch=1", "steady") in planned
    assert ("queue", "pgmq batch=1", "steady") not in planned  # quick limits steady to two variants
    assert ("queue", "sqlite_wal batch=1 synchronous=off", "recovery") in planned
    assert ("queue", "sqlite_wal batch=1 synchronous=off", "throughput") not in planned
    assert ("queue", "pg_delete batch=1", "capacity") in planned
    assert ("queue", "pgmq batch=1", "capacity") not in planned  # quick measures two designs' capacity


def test_an_experiment_filter_naming_no_variant_is_an_error_not_fewer_points():
    from pglimits_core.errors import PGLimitsError
    from pglimits_core.profiles import load_profile
    from pglimits_core.workloads.queue.plan import plan

    profile = load_profile("quick")
    queue = profile.section("queue")
    typo = queue.model_copy(update={"latency": queue.latency.model_copy(update={"variants": ["pg_delete batch=2"]})})
    with pytest.raises(PGLimitsError, match="pg_delete batch=2"):
        plan(typo, profile)


def test_what_could_not_be_run_lists_every_kind_of_planned_point_without_a_record(tmp_path):
    """A missing steady-state point or crash drill shows up, not only the sweeps; a point with a
    complete record does not."""
    from pglimits_core.analysis.report import not_run_table

    steady = {"manifest": {"study": "queue", "run_id": "r1", "status": "complete",
                           "params": {"experiment": "steady", "variant": "pg_delete batch=1"}}, "summary": None}
    missing = set(not_run_table([steady], tmp_path, "quick").what)
    assert "queue steady sqlite_wal batch=1" in missing and "queue steady pg_delete batch=1" not in missing
    assert "queue consumer_crash pg_skiplocked batch=1" in missing
    assert "queue recovery sqlite_wal batch=1 synchronous=off" in missing
    assert "queue capacity pg_delete batch=1" in missing


def test_a_profile_is_given_by_name_or_by_path_with_or_without_yaml(tmp_path, monkeypatch):
    """``quick``, ``quick.yaml``, ``configs/profiles/quick.yaml`` (from the repository, or from a
    notebook's working directory ``notebooks/``), an absolute path: the same profile, named by its
    file; a file elsewhere is read from its path."""
    from pglimits_core.config import PROFILES_DIR, PROJECT_ROOT

    forms = ["quick", "quick.yaml", "configs/profiles/quick", "configs/profiles/quick.yaml",
             str(PROFILES_DIR / "quick.yaml"), str(PROFILES_DIR / "quick")]
    for cwd in (PROJECT_ROOT, PROJECT_ROOT / "notebooks"):
        monkeypatch.chdir(cwd)
        for given in forms:
            assert profiles.profile_path(given) == PROFILES_DIR / "quick.yaml", given
            assert profiles.load_profile(given).name == "quick"
    (tmp_path / "mine.yml").write_text((PROFILES_DIR / "test.yaml").read_text())
    assert profiles.load_profile(str(tmp_path / "mine")).name == "mine"
    monkeypatch.chdir(tmp_path)
    assert profiles.load_profile("mine.yml").section("queue") is not None


def test_an_unknown_profile_says_what_forms_it_takes():
    with pytest.raises(PGLimitsError, match=r"unknown profile 'configs/quik.yaml' \(no file configs/quik.yaml\)"
                                            r" — fix: use one of: full, quick, test \(in configs/profiles\),"
                                            " or the path of a .yaml file"):
        profiles.load_profile("configs/quik.yaml")
    with pytest.raises(PGLimitsError, match="unknown profile ''"):
        profiles.load_profile("")


@pytest.mark.parametrize(("text", "named"), [
    ("queue:\n  colour: a: b\n", "YAML error at {path} line 2: mapping values are not allowed here"),
    ("queue:\n\tvariants: []\n", "YAML error at {path} line 2: found character '\\t' that cannot start any token"),
    ("description: x\nqueue: {variants: [1, 2}\n", "YAML error at {path} line 2: expected ',' or ']', but got '}}'"),
    ("description: x\nqueue: {variants: [1, 2]\n\n", "line 4: expected ',' or '}}', but got '<stream end>' "
                                                     "(while parsing a flow mapping at line 2)"),
    ('description: "x\n', "line 2: found unexpected end of stream (while scanning a quoted scalar at line 1)"),
    ("", "{path} is empty — fix: give it at least one workload section (queue, search, pubsub, vectors, interference)"),
    ("# only a comment\n", "{path} is empty"),
    ("{}\n", "{path} is empty"),
    ("- queue\n", "not a mapping of keys to values — fix: fix {path}"),
    ("name: other\nqueue: {variants: [{system: pg_delete}], throughput: {consumers: [1], prefill: 1, duration_s: 1},"
     " latency: {rates: [1], duration_s: 1}}\n", "name: not a profile key — fix: remove it from {path}"),
])
def test_a_bad_file_is_one_line_naming_the_file(tmp_path, monkeypatch, text, named):
    monkeypatch.setenv("PGLIMITS_PROFILES_DIR", str(tmp_path))
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(PGLimitsError) as caught:
        profiles.load_profile("bad")
    line = str(caught.value)
    assert "\n" not in line and line.startswith("profile bad: ") and " — fix: " in line, line
    assert named.format(path=tmp_path / "bad.yaml") in line, line
