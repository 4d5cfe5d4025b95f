"""HostSampler arithmetic against a fake process reader; host facts on the real machine."""

import os

import pytest

from pglimits_core.samplers.host import (
    HostSampler,
    ProcessReader,
    ProcessSnapshot,
    SystemSnapshot,
    describe_host,
    measure_fsync_latency,
)
from pglimits_core.samplers.host_facts import percentile


class FakeReader:
    """Processes as ``pid -> (cpu_seconds, rss, write_bytes)``; children as ``pid -> [pids]``."""

    def __init__(self):
        self.processes = {}
        self.children = {}
        self.system = SystemSnapshot(0.0, 0.0, 0, 0)

    def with_children(self, pids):
        found = set()
        for pid in pids:
            if pid in self.processes:
                found |= {pid, *self.children.get(pid, [])}
        return found

    def read_process(self, pid):
        if pid not in self.processes:
            return None
        cpu, rss, written = self.processes[pid]
        chars = None if written is None else written // 4  # the kernel charges more than write()
        return ProcessSnapshot((pid, 1.0), cpu, rss, written, chars)

    def read_system(self):
        return self.system


@pytest.fixture
def reader():
    fake = FakeReader()
    fake.processes = {
        10: (1.0, 100, None),
        11: (2.0, 100, None),  # clients
        20: (5.0, 1000, 0),
        21: (1.0, 500, 0),
    }  # postmaster, backend
    fake.children = {20: [21]}
    fake.system = SystemSnapshot(
        busy_cpu_seconds=100.0, total_cpu_seconds=400.0, disk_write_bytes=1_000, disk_read_bytes=0
    )
    return fake


def sampler_for(reader):
    return HostSampler(lambda: [10, 11], lambda: [20], reader=reader)


def test_two_samples_separate_client_and_server_cpu(reader):
    sampler = sampler_for(reader)
    first = sampler.sample(0.0)
    assert first["client_cpu_pct"] is None and first["system_cpu_pct"] is None
    assert first["server_processes"] == 2  # the backend came in as a child
    assert first["server_rss_bytes"] == 1500 and first["server_rss_max_bytes"] == 1000

    reader.processes.update(
        {
            10: (1.9, 100, None),
            11: (2.9, 100, None),  # 0.9 s each
            20: (5.1, 1000, 4096),
            21: (1.3, 500, 4096),
        }
    )  # 0.4 s together
    reader.system = SystemSnapshot(101.5, 402.0, 9_000, 0)
    second = sampler.sample(1.0)
    assert second["client_cpu_pct"] == pytest.approx(180.0)  # % of one core: 1.8 cores
    assert second["server_cpu_pct"] == pytest.approx(40.0)
    assert second["system_cpu_pct"] == pytest.approx(75.0)  # % of all cores
    assert second["disk_write_bytes_per_s"] == 8_000.0
    assert second["server_write_bytes_per_s"] == 8192.0
    assert second["server_write_chars_per_s"] == 2048.0


def test_new_and_vanished_processes_do_not_distort_cpu(reader):
    client_pids = [10, 11]
    sampler = HostSampler(lambda: client_pids, lambda: [20], reader=reader)
    sampler.sample(0.0)
    del reader.processes[11]  # a worker exited; the pid source may still list it
    reader.processes[12] = (50.0, 100, None)  # a new worker with a long history
    client_pids.append(12)
    reader.processes[10] = (1.5, 100, None)
    row = sampler.sample(2.0)
    assert row["client_processes"] == 2
    assert row["client_cpu_pct"] == pytest.approx(25.0)  # only worker 10's 0.5 s over 2 s


def test_counter_reset_gives_none_not_negative(reader):
    sampler = sampler_for(reader)
    sampler.sample(0.0)
    reader.system = SystemSnapshot(101.0, 402.0, 10, 0)  # disk counters wrapped/reset
    assert sampler.sample(1.0)["disk_write_bytes_per_s"] is None


def test_psutil_reader_sees_this_process():
    reader = ProcessReader()
    snap = reader.read_process(os.getpid())
    assert snap.cpu_seconds > 0 and snap.rss_bytes > 0
    assert reader.read_process(2**22 + 12345) is None  # no such pid
    assert os.getpid() in reader.with_children([os.getpid()])
    assert reader.read_system().total_cpu_seconds > 0


def test_describe_host_reports_the_checklist(tmp_path):
    facts = describe_host(tmp_path / "not-yet-created")
    assert facts["logical_cores"] >= 1 and facts["ram_total_bytes"] > 0
    assert facts["client_server_share_cores"] is True
    assert facts["filesystem"]["total_bytes"] > 0 and facts["filesystem"]["fstype"]
    assert facts["python"].count(".") == 2


def test_fsync_latency_is_bounded_and_cleans_up(tmp_path):
    result = measure_fsync_latency(tmp_path, n=20, max_seconds=2.0)
    assert 1 <= result["n"] <= 20
    assert 0 < result["median_us"] <= result["p99_us"] <= result["max_us"]
    assert list(tmp_path.iterdir()) == []


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 201)]
    assert percentile(values, 0.5) == 100.0 and percentile(values, 0.99) == 198.0
    assert percentile([7.0], 0.99) == 7.0


@pytest.mark.parametrize(("model", "cores", "gib", "expected"), [
    ("AMD EPYC", 2, 23.6, "amd-epyc-2vcpu-24gib"),
    ("Intel(R) Xeon(R) CPU @ 2.20GHz", 4, 16, "intel-xeon-4vcpu-16gib"),
    ("", 8, 32, "unknown-cpu-8vcpu-32gib"),
])
def test_host_id_names_the_machine_for_its_results_directory(model, cores, gib, expected):
    from pglimits_core.samplers.host_facts import host_id

    assert host_id({"cpu_model": model, "logical_cores": cores, "ram_total_bytes": int(gib * 2**30)}) == expected


class ReapingReader(FakeReader):
    """Processes as ``pid -> (cpu_seconds, parent, reaped_children_cpu_seconds, create_time)``."""

    def read_process(self, pid):
        if pid not in self.processes:
            return None
        cpu, parent, reaped, created = self.processes[pid]
        return ProcessSnapshot((pid, created), cpu, 100, None, None, parent_pid=parent,
                               reaped_children_cpu_seconds=reaped)


def test_server_processes_that_exit_between_samples_are_counted_through_their_parent():
    # a postmaster (20) with a long backend (21); a parallel worker lives and dies between samples
    reader = ReapingReader()
    reader.processes = {20: (1.0, 1, 0.0, 1.0), 21: (2.0, 20, None, 1.0)}
    reader.children = {20: [21]}
    sampler = HostSampler(lambda: [], lambda: [20], reader=reader)
    sampler.sample(0.0)
    # the backend used 0.2 s; a worker never seen used 0.5 s and was reaped: the counter grew by it
    reader.processes = {20: (1.0, 1, 0.5, 1.0), 21: (2.2, 20, None, 1.0)}
    assert sampler.sample(1.0)["server_cpu_pct"] == pytest.approx(70.0)
    # the backend exits having used 0.1 s more (2.3 in all): only that tail is new
    reader.processes = {20: (1.0, 1, 0.5 + 2.3, 1.0)}
    reader.children = {}
    assert sampler.sample(2.0)["server_cpu_pct"] == pytest.approx(10.0)


def test_a_server_process_born_inside_the_interval_counts_from_its_start():
    import time

    reader = ReapingReader()
    reader.processes = {20: (1.0, 1, 0.0, 1.0)}
    sampler = HostSampler(lambda: [], lambda: [20], reader=reader)
    sampler.sample(0.0)
    reader.processes[22] = (0.3, 20, None, time.time() + 0.001)  # forked after the first sample
    reader.children = {20: [22]}
    assert sampler.sample(1.0)["server_cpu_pct"] == pytest.approx(30.0)


def test_the_machines_cpu_time_comes_from_the_exact_cgroup_counter_when_there_is_one(tmp_path):
    from pglimits_core.samplers.host import cgroup_cpu_seconds

    v1, v2 = tmp_path / "cpuacct.usage", tmp_path / "cpu.stat"
    v1.write_text("2500000000\n")
    v2.write_text("usage_usec 1500000\nuser_usec 1000000\n")
    assert cgroup_cpu_seconds(((str(tmp_path / "missing"), None, 1e-9), (str(v1), None, 1e-9))) == 2.5
    assert cgroup_cpu_seconds(((str(v2), "usage_usec", 1e-6),)) == 1.5
    assert cgroup_cpu_seconds(((str(tmp_path / "missing"), None, 1e-9),)) is None  # /proc/stat then


def test_a_backend_gone_before_its_own_reading_is_paid_back_not_counted_twice():
    # the postmaster (20) is read before its backend (21); the backend exits in between: this row
    # subtracts it (it vanished) before the reaped counter shows it, the next row adds its lifetime
    reader = ReapingReader()
    reader.processes = {20: (1.0, 1, 0.0, 1.0), 21: (2.0, 20, None, 1.0)}
    reader.children = {20: [21]}
    sampler = HostSampler(lambda: [], lambda: [20], reader=reader)
    sampler.sample(0.0)
    reader.processes = {20: (1.0, 1, 0.0, 1.0)}  # 21 gone, not reaped yet
    reader.children = {}
    assert sampler.sample(1.0)["server_cpu_pct"] == pytest.approx(0.0)
    reader.processes = {20: (1.0, 1, 2.3, 1.0)}  # reaped: its 2.3 s lifetime, 0.3 s of it unseen
    assert sampler.sample(2.0)["server_cpu_pct"] == pytest.approx(30.0)  # not 230 %


def test_a_backend_gone_before_its_own_reading_moves_no_cpu_between_rows_beside_a_busy_one():
    # as above, with a second backend (22) busy all along: the row where 21 vanishes still shows
    # 22's second (100 %), and the next row 22's second plus 21's unseen 0.3 s — not 21's whole
    # counted 2.0 s moved from the first row into the second
    reader = ReapingReader()
    reader.processes = {20: (1.0, 1, 0.0, 1.0), 21: (2.0, 20, None, 1.0), 22: (5.0, 20, None, 1.0)}
    reader.children = {20: [21, 22]}
    sampler = HostSampler(lambda: [], lambda: [20], reader=reader)
    sampler.sample(0.0)
    reader.processes = {20: (1.0, 1, 0.0, 1.0), 22: (6.0, 20, None, 1.0)}  # 21 gone, not reaped yet
    reader.children = {20: [22]}
    assert sampler.sample(1.0)["server_cpu_pct"] == pytest.approx(100.0)
    reader.processes = {20: (1.0, 1, 2.3, 1.0), 22: (7.0, 20, None, 1.0)}  # 21 reaped: 2.3 s in all
    assert sampler.sample(2.0)["server_cpu_pct"] == pytest.approx(130.0)


def test_a_process_whose_start_time_reads_early_still_counts_from_its_start():
    import time

    from pglimits_core.samplers.host import START_TIME_SLACK_S

    reader = ReapingReader()
    reader.processes = {20: (1.0, 1, 0.0, 1.0)}
    sampler = HostSampler(lambda: [], lambda: [20], reader=reader)
    sampler.sample(0.0)
    # forked just after the first sample, but psutil's whole-second boot time puts it before it
    reader.processes[22] = (0.3, 20, None, time.time() - START_TIME_SLACK_S / 2)
    reader.children = {20: [22]}
    assert sampler.sample(1.0)["server_cpu_pct"] == pytest.approx(30.0)


def test_every_row_says_how_long_its_readings_took(reader):
    sampler = sampler_for(reader)
    row = sampler.sample(0.0)
    assert 0.0 <= row["cpu_read_s"] < 1.0
