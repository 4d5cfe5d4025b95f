"""The exact window CPU counts each process once, and the limit side reads the sets right."""

from __future__ import annotations

from pglimits_core.analysis.verdict import limit_from_record
from pglimits_core.samplers.exact_cpu import ProcessCounters, Snapshot, side_ticks, window_figures
from pglimits_core.samplers.limit import EMBEDDED_NOT_READ, limit_side, side_of_record

SPLIT = {"mode": "split", "server_cpus": [0], "load_cpus": [1], "client_and_server_share_cores": False}


def proc(pid, own, reaped=0, parent=1, start=100):
    return ProcessCounters((pid, start), parent, own, reaped)


def by_key(*processes):
    return {p.key: p for p in processes}


def test_a_process_alive_at_both_reads_counts_its_difference():
    assert side_ticks(by_key(proc(10, 50)), by_key(proc(10, 80))) == (30, 0)


def test_a_process_born_in_the_window_counts_whole():
    assert side_ticks(by_key(proc(10, 50)), by_key(proc(10, 60), proc(11, 25, start=200))) == (35, 0)


def test_an_exited_child_counts_through_its_parents_reaped_time_less_what_it_had_before():
    # backend 11 had 40 ticks at the start, exited with 70: the postmaster (10) reaped 70
    start = by_key(proc(10, 5), proc(11, 40, parent=10))
    end = by_key(proc(10, 6, reaped=70))
    assert side_ticks(start, end) == (1 + 30, 0)


def test_a_reused_pid_is_a_new_process():
    start = by_key(proc(10, 5), proc(11, 40, parent=10, start=100))
    end = by_key(proc(10, 5, reaped=45), proc(11, 3, parent=10, start=900))  # 11 exited (45), a new 11 started
    assert side_ticks(start, end) == (5 + 3, 0)


def test_an_exit_nobody_on_the_side_reaped_is_counted_as_lost_not_guessed():
    start = by_key(proc(20, 40, parent=999))
    assert side_ticks(start, {}) == (0, 1)


def snapshot(taken, server_ticks, cpus):
    return Snapshot(taken, {"server": by_key(proc(10, server_ticks))}, cpus)


def test_window_figures_give_cores_used_and_each_sets_busy_fraction():
    start = snapshot(0.0, 0, {0: (0, 0), 1: (0, 0)})
    end = snapshot(10.0, 900, {0: (950, 1000), 1: (300, 1000)})
    figures = window_figures(start, end, SPLIT)
    assert figures["server_cpu_s"] == 9.0 and figures["server_cores_used"] == 0.9
    assert figures["server_set_busy"] == 0.95 and figures["load_set_busy"] == 0.3


def exact(server_busy, load_busy, server_used, set_cores=1, load_used=None):
    return {"server_set_busy": server_busy, "load_set_busy": load_busy, "server_cores_used": server_used,
            "server_set_cores": set_cores, "load_set_cores": 1,
            "load_cores_used": load_busy if load_used is None else load_used, "harness_cores_used": 0.0}


def test_a_saturated_server_set_is_the_servers_limit():
    assert limit_side(exact(0.95, 0.5, 0.93), SPLIT)["side"] == "server"


def test_a_single_threaded_server_is_full_at_one_core_of_a_larger_set():
    assert limit_side(exact(0.5, 0.4, 0.97, set_cores=2), SPLIT, server_ceiling_cores=1)["side"] == "server"


def test_a_saturated_load_set_beside_an_idle_server_is_a_floor():
    side = limit_side(exact(0.3, 0.97, 0.28), SPLIT)
    assert side["side"] == "load" and "floor" in side["reason"]


def test_a_load_set_saturated_by_a_neighbour_is_not_a_floor():
    side = limit_side(exact(0.3, 0.97, 0.28, load_used=0.2), SPLIT)
    assert side["side"] is None and "other processes" in side["reason"]


def test_neither_set_saturated_is_neither():
    assert limit_side(exact(0.5, 0.5, 0.48), SPLIT)["side"] == "neither"


def test_a_server_set_saturated_by_someone_else_cannot_be_told():
    side = limit_side(exact(0.95, 0.5, 0.2), SPLIT)
    assert side["side"] is None and "other processes" in side["reason"]


def test_shared_cores_and_an_unread_window_are_not_judged():
    shared = {**SPLIT, "client_and_server_share_cores": True}
    assert limit_side(exact(0.95, 0.95, 0.9), shared)["side"] is None
    assert limit_side(exact(0.95, 0.95, 0.9), shared, engine_in_client=True)["side"] is None
    assert limit_side({"error": "the load ended before it"}, SPLIT)["side"] is None


def test_an_embedded_engine_saturating_its_shared_set_is_a_floor_never_a_ceiling():
    # SQLite's engine runs in the harness's processes: their CPU cannot be told apart, and the
    # harness's share of the core is one the engine did not get
    assert limit_side(exact(0.0, 0.97, 0.0), SPLIT, engine_in_client=True)["side"] == "load"
    assert limit_side(exact(0.0, 0.60, 0.0), SPLIT, engine_in_client=True)["side"] == "neither"
    crowded = limit_side(exact(0.0, 0.97, 0.0, load_used=0.2), SPLIT, engine_in_client=True)
    assert crowded["side"] is None and "other processes" in crowded["reason"]


def test_an_embedded_engines_record_from_before_the_rule_is_read_from_its_own_figures():
    old = {"side": None, "reason": EMBEDDED_NOT_READ}
    assert side_of_record(old, exact(0.0, 0.97, 0.0)) == "load"
    assert side_of_record(old, exact(0.0, 0.40, 0.0)) == "neither"
    assert side_of_record(old, None) is None
    assert side_of_record({"side": None, "reason": "cannot tell: the window CPU was not read"}, exact(0.0, 0.97, 0.0)) is None
    assert side_of_record({"side": "load", "reason": "load-limited"}, exact(0.0, 0.97, 0.0)) == "load"
    manifest = {"limit": old, "cpu": {"exact": exact(0.0, 0.97, 0.0)}, "placement": SPLIT}
    assert limit_from_record(manifest) == "load"


def test_an_embedded_engine_in_a_compiled_program_saturating_its_set_is_the_engines_ceiling():
    # qload running SQLite is the program the engine runs in (as the source study's Go program):
    # its set saturated by it is the engine's limit; by something else, nothing can be told
    compiled = limit_side(exact(0.0, 0.97, 0.0), SPLIT, engine_in_client=True, compiled_load=True)
    assert compiled["side"] == "server" and "compiled program" in compiled["reason"]
    idle = limit_side(exact(0.0, 0.50, 0.0), SPLIT, engine_in_client=True, compiled_load=True)
    assert idle["side"] == "neither"
    crowded = limit_side(exact(0.0, 0.97, 0.0, load_used=0.2), SPLIT, engine_in_client=True, compiled_load=True)
    assert crowded["side"] is None and "other processes" in crowded["reason"]
    # a compiled load of a server's design still reads the server's set
    assert limit_side(exact(0.95, 0.5, 0.93), SPLIT, compiled_load=True)["side"] == "server"
