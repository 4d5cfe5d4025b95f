from pathlib import Path

import pytest

from pglimits_core.config import SERVER_CONFIGS_DIR
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers.settings_file import as_dict, ledger, parse_settings


def test_committed_postgres_settings_hold_the_source_study_tuning():
    settings = as_dict(parse_settings(SERVER_CONFIGS_DIR / "postgres.conf"))
    assert settings["shared_buffers"] == "4GB"
    assert settings["jit"] == "off"
    assert settings["autovacuum_naptime"] == "10s"
    assert settings["autovacuum_vacuum_cost_limit"] == "2000"
    assert settings["wal_compression"] == "lz4"


@pytest.mark.parametrize("name", ["postgres.conf", "redis.conf", "sqlite.pragmas"])
def test_every_committed_setting_says_why(name):
    for entry in ledger(parse_settings(SERVER_CONFIGS_DIR / name)):
        assert len(entry["why"]) > 10, f"{name}: {entry['key']} has no why-comment"


def test_redis_style_and_quoted_empty_values(tmp_path: Path):
    path = tmp_path / "r.conf"
    path.write_text('save ""   # no snapshots\nappendonly no # off\n\n# comment only\n')
    assert as_dict(parse_settings(path)) == {"save": "", "appendonly": "no"}


def test_malformed_line_names_file_and_line(tmp_path: Path):
    path = tmp_path / "bad.conf"
    path.write_text("jit = off  # fine\nshared_buffers =   # nothing\n")
    with pytest.raises(PGLimitsError, match=r"bad.conf:2"):
        parse_settings(path)
