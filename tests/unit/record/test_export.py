"""Exporting nothing never replaces the committed results."""

import pytest

from pglimits_core.errors import PGLimitsError
from pglimits_core.record.export import export_runs


def test_an_empty_source_is_an_error_and_the_committed_runs_stay(tmp_path, monkeypatch):
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path / "data"))
    from pglimits_core.record.export import committed_runs_root

    committed = committed_runs_root("full")
    committed.mkdir(parents=True)
    (committed / "keep.txt").write_text("committed")
    with pytest.raises(PGLimitsError, match="no finished full runs"):
        export_runs("full", source=tmp_path / "nothing-here")
    assert (committed / "keep.txt").read_text() == "committed"


def _run(root, name, summary="{}"):
    run = root / name
    run.mkdir(parents=True)
    (run / "manifest.json").write_text("{}")
    (run / "summary.json").write_text(summary)
    return run


def test_exporting_one_study_replaces_only_that_studys_records(tmp_path, monkeypatch):
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path / "data"))
    from pglimits_core.record.export import committed_runs_root

    committed = committed_runs_root("full")
    _run(committed, "20261201T000000Z-queue-redis-a-111111")
    _run(committed, "20261201T000000Z-pubsub-redis-a-222222")
    (committed / "queue.outcome.json").write_text("queue kept")
    (committed / "pubsub.outcome.json").write_text("old pubsub")
    sitting = tmp_path / "sitting"
    _run(sitting, "20261206T000000Z-pubsub-pg_notify-b-333333", summary='{"new": 1}')
    _run(sitting, "20261206T000000Z-queue-pgmq-c-444444")
    (sitting / "pubsub.outcome.json").write_text("new pubsub")
    export_runs("full", source=sitting, only=["pubsub"])
    assert sorted(p.name for p in committed.iterdir() if p.is_dir()) == [
        "20261201T000000Z-queue-redis-a-111111", "20261206T000000Z-pubsub-pg_notify-b-333333"]
    assert (committed / "queue.outcome.json").read_text() == "queue kept"
    assert (committed / "pubsub.outcome.json").read_text() == "new pubsub"


def test_exporting_a_study_with_no_runs_in_the_sitting_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path / "data"))
    sitting = tmp_path / "sitting"
    _run(sitting, "20261206T000000Z-queue-pgmq-c-444444")
    with pytest.raises(PGLimitsError, match="full runs of pubsub"):
        export_runs("full", source=sitting, only=["pubsub"])
