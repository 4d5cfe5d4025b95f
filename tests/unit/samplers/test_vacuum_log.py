"""The vacuum evidence without a server: the log parser on real PG 16 log text, windows from the
samples and from the log on one time axis, and the sampler against a fake connection (PG 16 and
PG 17 checkpoint views)."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pandas as pd
import pytest

from pglimits_core.samplers.vacuum import (
    ServerLogTail,
    VacuumSampler,
    Window,
    format_wait_events,
    parse_autovacuum_log,
    parse_wait_events,
    server_log_path,
    vacuum_windows,
    windows_from_log,
)
from pglimits_core.samplers.vacuum_log import dead_tuple_counts, parse_stamp, removable_cutoff

LOG = """\
2026-12-01 21:43:13.554 UTC [26148] LOG:  automatic analyze of table "pglimits.public.jobs"
\tavg read rate: 0.000 MB/s, avg write rate: 0.000 MB/s
\tsystem usage: CPU: user: 0.00 s, system: 0.00 s, elapsed: 0.00 s
2026-12-01 21:43:13.568 UTC [26148] LOG:  automatic vacuum of table "pglimits.public.jobs": index scans: 1
\tpages: 19 removed, 0 remain, 19 scanned (100.00% of total)
\ttuples: 83 removed, 7 remain, 5 are dead but not yet removable
\tremovable cutoff: 4784, which was 1 XIDs old when operation ended
\tbuffer usage: 105 hits, 0 misses, 3 dirtied
\tsystem usage: CPU: user: 0.01 s, system: 0.00 s, elapsed: 2.50 s
2026-12-01 21:43:14.001 UTC [26150] LOG:  checkpoint starting: time
2026-12-01 21:43:16.914 UTC [26168] LOG:  automatic aggressive vacuum of table "pglimits.pg_toast.pg_toast_16612": index scans: 0
\ttuples: 0 removed, 0 remain, 0 are dead but not yet removable
\tsystem usage: CPU: user: 0.00 s, system: 0.00 s, elapsed: 0.00 s
2026-12-01 21:43:17.000 UTC [26170] LOG:  automatic vacuum to prevent wraparound of table "pglimits.public.search_docs": index scans: 0
\ttuples: 1 removed, 2 remain, 3 are dead but not yet removable
\tsystem usage: CPU: user: 0.00 s, system: 0.00 s, elapsed: 0.25 s
"""


def test_parser_reads_every_autovacuum_run_and_skips_analyze_and_other_lines():
    logged = parse_autovacuum_log(LOG)
    assert [v.table for v in logged] == ["jobs", "pg_toast_16612", "search_docs"]
    jobs = logged[0]
    assert jobs.end_time == datetime(2026, 12, 1, 21, 43, 13, 568000, tzinfo=UTC)
    assert jobs.elapsed_s == 2.5
    assert (jobs.tuples_removed, jobs.remain, jobs.not_yet_removable) == (83, 7, 5)
    assert (jobs.removable_cutoff, jobs.cutoff_age_xids) == (4784, 1)
    assert logged[1].removable_cutoff is None  # no cutoff line: not guessed
    assert jobs.qualified_name == "pglimits.public.jobs" and jobs.kind == "vacuum"
    assert jobs.start_epoch_s == pytest.approx(jobs.end_epoch_s - 2.5)
    assert logged[1].kind == "aggressive vacuum"
    assert logged[2].kind == "vacuum to prevent wraparound"


def test_the_auto_analyze_runs_are_read_apart_with_their_own_elapsed_time():
    analyzed = parse_autovacuum_log(LOG.replace("elapsed: 0.00 s\n2026-12-01 21:43:13.568",
                                                "elapsed: 0.31 s\n2026-12-01 21:43:13.568", 1), analyze=True)
    assert [(v.table, v.kind, v.elapsed_s) for v in analyzed] == [("jobs", "analyze", 0.31)]
    assert analyzed[0].end_time == datetime(2026, 12, 1, 21, 43, 13, 554000, tzinfo=UTC)


def test_parser_tolerates_garbage_and_an_empty_log():
    assert parse_autovacuum_log("") == []
    assert parse_autovacuum_log("no timestamp LOG:  automatic vacuum of table \"a.b.c\": x\n") == []


def test_timestamps_with_offsets_and_without_fraction():
    assert parse_stamp("2026-01-02 03:04:05", "+02").utcoffset() == timedelta(hours=2)
    assert parse_stamp("2026-01-02 03:04:05.5", "-0530").utcoffset() == -timedelta(hours=5, minutes=30)
    assert parse_stamp("2026-01-02 03:04:05", "GMT").tzinfo == UTC


def test_vacuum_verbose_report_gives_dead_tuple_counts():
    text = "finished vacuuming \"db.public.t\": index scans: 0\ntuples: 0 removed, 500 remain, 250 are dead but not yet removable"
    assert dead_tuple_counts(text) == (0, 500, 250)
    assert dead_tuple_counts("nothing here") == (None, None, None)


def frame_of(rows, origin=1_800_000_000.0):
    return pd.DataFrame([{"t": t, "sampler": "vacuum", "epoch_s": origin + t, **extra} for t, extra in rows])


def test_windows_from_samples_span_first_sight_to_one_interval_after_the_last():
    frame = frame_of([(0.0, {}), (1.0, {"vacuum_tables": "jobs", "autovacuum_tables": "jobs"}),
                      (2.0, {"vacuum_tables": "jobs,docs", "autovacuum_tables": "jobs"}),
                      (3.0, {"vacuum_tables": "docs"}), (4.0, {}),
                      (5.0, {"vacuum_tables": "jobs", "autovacuum_tables": "jobs"})])
    assert vacuum_windows(frame) == [Window("jobs", 1.0, 3.0), Window("docs", 2.0, 4.0),
                                     Window("jobs", 5.0, 6.0)]
    assert vacuum_windows(frame, tables=["docs"]) == [Window("docs", 2.0, 4.0)]
    assert vacuum_windows(frame, auto_only=True) == [Window("jobs", 1.0, 3.0), Window("jobs", 5.0, 6.0)]
    assert vacuum_windows(frame_of([(0.0, {}), (1.0, {})])) == []
    assert vacuum_windows(pd.DataFrame()) == []


def test_windows_from_a_postgres_sampler_frame_read_schema_qualified_names():
    frame = pd.DataFrame([{"t": 0.0, "sampler": "host"}, {"t": 0.0, "sampler": "postgres", "vacuum_tables": None},
                          {"t": 1.0, "sampler": "postgres", "vacuum_tables": "pgmq.q_jobs"},
                          {"t": 2.0, "sampler": "postgres", "vacuum_tables": None}])
    assert vacuum_windows(frame) == [Window("q_jobs", 1.0, 2.0)]


def test_log_windows_land_on_the_frame_axis():
    end = datetime(2026, 12, 1, 21, 43, 13, 568000, tzinfo=UTC).timestamp()
    frame = frame_of([(0.0, {}), (1.0, {})], origin=end - 10.0)
    windows = windows_from_log(parse_autovacuum_log(LOG), frame, tables=["jobs"])
    assert windows == [Window("jobs", pytest.approx(7.5), pytest.approx(10.0))]
    assert windows_from_log(parse_autovacuum_log(LOG), origin_epoch_s=end)[0].end_s == pytest.approx(0.0)
    with pytest.raises(ValueError, match="epoch_s"):
        windows_from_log([], pd.DataFrame({"t": [0.0]}))


def test_window_shift_moves_both_ends():
    assert Window("t", 1.0, 2.5).shifted(-1.0) == Window("t", 0.0, 1.5)
    assert Window("t", 1.0, 2.5).length_s == 1.5


def test_log_tail_reads_only_what_was_appended(tmp_path):
    log = tmp_path / "postgres.log"
    log.write_text("old line\n")
    tail = ServerLogTail(log)
    with open(log, "a") as handle:
        handle.write(LOG)
    assert tail.read() == LOG
    assert ServerLogTail(tmp_path / "absent.log").read() == ""


def test_server_log_path_from_an_endpoint_or_a_server(tmp_path):
    class Endpoint:
        extra = {"data_dir": str(tmp_path)}

    class Server:
        log_path = tmp_path / "x.log"

    assert server_log_path(Endpoint()) == tmp_path / "postgres.log"
    assert server_log_path(Server()) == tmp_path / "x.log"


def test_wait_events_round_trip():
    text = format_wait_events([("Lock:transactionid", 3), ("LWLock:WALWrite", 1)])
    assert text == "Lock:transactionid=3;LWLock:WALWrite=1"
    assert parse_wait_events(text) == {"Lock:transactionid": 3, "LWLock:WALWrite": 1}
    assert format_wait_events([]) is None and parse_wait_events(float("nan")) == {}


# --- the sampler against a fake connection ------------------------------------------------------

class FakeCursor:
    def __init__(self, connection):
        self.connection, self.rows = connection, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def execute(self, sql, params=None):
        self.connection.executed.append(sql)
        key = next(k for k in self.connection.answers if k in sql)
        self.rows = self.connection.answers[key]

    def fetchone(self):
        return self.rows[0] if self.rows else None

    def fetchall(self):
        return self.rows


class FakeConnection:
    def __init__(self, version, wal, autovacuums):
        self.executed = []
        self.answers = {
            "server_version_num": [(version,)],
            "pg_current_wal_lsn": [(Decimal(wal), 1_800_000_000.25)],
            "pg_stat_user_tables": [("jobs", 1000, 400, autovacuums, 1_799_999_990.0)],
            "pg_stat_progress_vacuum": [("jobs", "scanning heap", True, 100, 42, 0, 0, True),
                                        (None, "scanning heap", True, 5, 1, 0, 0, False)],
            "ORDER BY age(backend_xmin)": [(1234, 77, "idle in transaction", "client backend")],
            "GROUP BY 1": [("Lock:transactionid", 3), ("IO:DataFileRead", 1)],
            "FILTER (WHERE state": [(9, 4)],
            "pg_stat_bgwriter": [(5, 1, 300)],
            "pg_stat_checkpointer": [(5, 1, 300)],
            "pg_stat_database": [(1000, 10)],
        }

    def cursor(self):
        return FakeCursor(self)

    def close(self):
        pass


@pytest.mark.parametrize(("version", "view"), [(160002, "pg_stat_bgwriter"), (170000, "pg_stat_checkpointer")])
def test_sampler_reads_the_checkpoint_view_of_its_server_version(version, view):
    connections = []

    def connect(dsn):
        connections.append(FakeConnection(version, wal=1_000_000, autovacuums=2))
        return connections[-1]

    sampler = VacuumSampler("dbname=x", tables=["jobs", "docs"], connect=connect)
    first = sampler.sample(10.0)
    connections[0].answers["pg_current_wal_lsn"] = [(Decimal(3_000_000), 1_800_000_002.25)]
    connections[0].answers["pg_stat_user_tables"] = [("jobs", 1000, 10, 3, 1_800_000_001.0)]
    second = sampler.sample(12.0)
    assert any(view in sql for sql in connections[0].executed)
    assert first["wal_bytes_per_s"] is None and second["wal_bytes_per_s"] == 1_000_000
    assert second["epoch_s"] == 1_800_000_002.25
    assert second["jobs.autovacuum_count_delta"] == 1 and second["jobs.n_dead_tup"] == 10
    assert second["jobs.vacuum_phase"] == "scanning heap" and second["jobs.heap_blks_scanned"] == 42
    assert second["docs.vacuum_phase"] is None
    assert second["vacuums_running"] == 2 and second["vacuum_tables"] == "jobs"
    assert second["autovacuum_tables"] == "jobs"
    assert second["oldest_xmin_age_xacts"] == 1234 and second["oldest_xmin_state"] == "idle in transaction"
    assert second["wait_events"] == "Lock:transactionid=3;IO:DataFileRead=1"
    assert (second["active_backends"], second["waiting_backends"]) == (9, 4)
    assert second["checkpoints_req_delta"] == 0 and second["blks_hit_per_s"] == 0


def test_a_utc_offset_zone_is_kept_when_comparing_epochs():
    plus_two = parse_stamp("2026-01-02 05:04:05", "+02")
    assert plus_two.timestamp() == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()


def test_the_removable_cutoff_is_read_from_a_vacuum_verbose_report_too():
    report = ("tuples: 0 removed, 2000 remain, 1000 are dead but not yet removable\n"
              "removable cutoff: 812, which was 1003 XIDs old when operation ended")
    assert removable_cutoff(report) == (812, 1003)
    assert removable_cutoff("tuples: 1 removed, 2 remain, 0 are dead but not yet removable") == (None, None)
