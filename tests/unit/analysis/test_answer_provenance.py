"""The README's answer names the machine and commit its cells come from, read from the committed
manifests, and says so when records of more than one machine or commit are mixed."""

from __future__ import annotations

import json

from pglimits_core.analysis.answer import provenance_line


def write_run(runs, run_id: str, sha: str, dirty: bool = False, status: str = "complete") -> None:
    (runs / run_id).mkdir(parents=True)
    (runs / run_id / "manifest.json").write_text(json.dumps({"run_id": run_id, "git": {"sha": sha, "dirty": dirty},
                                                             "status": status}))


def test_one_machine_and_one_commit_are_named_once_with_the_run_s_span(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "20261202T031324Z-queue-a", "0d78e47aaaa")
    write_run(runs, "20261202T053724Z-interference-b", "0d78e47aaaa")
    line = provenance_line({"box-a": runs})
    assert line == ("Every cell below comes from machine `box-a`, commit `0d78e47`: 2 run records (2 complete) "
                    "from 2026-12-02 03:13 to 05:37 UTC (144 min from the first record's start to the last's).")


def test_failed_records_and_points_that_never_ran_are_named(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "20261202T031324Z-search-a", "0d78e47aaaa")
    write_run(runs, "20261202T041324Z-search-b", "0d78e47aaaa", status="failed")
    refused = {"experiment": "idle_listeners", "variant": "pg_notify batch=1",
               "error": "PGLimitsError: postgres max_connections=200 leaves no room — fix: raise it"}
    ran = {"experiment": "run", "variant": "20261202T041324Z-search-b", "error": "sampler check failed"}
    (runs / "pubsub.outcome.json").write_text(json.dumps({"failures": [refused, refused, refused]}))
    (runs / "search.outcome.json").write_text(json.dumps({"failures": [ran]}))
    line = provenance_line({"box-a": runs})
    assert "2 run records (1 complete, 1 failed)" in line
    assert line.endswith("; not run: 3 pubsub idle_listeners pg_notify batch=1 points "
                         "(postgres max_connections=200 leaves no room).")


def test_a_second_commit_a_dirty_tree_or_a_second_machine_is_said(tmp_path):
    runs, other = tmp_path / "runs", tmp_path / "other"
    write_run(runs, "20261202T031324Z-queue-a", "0d78e47aaaa")
    write_run(runs, "20261202T041324Z-queue-b", "1234567bbbb", dirty=True)
    line = provenance_line({"box-a": runs})
    assert "commits `0d78e47`, `1234567` (uncommitted changes)" in line
    assert line.endswith("compare cells only within one.")
    write_run(other, "20261202T031324Z-queue-a", "0d78e47aaaa")
    two = provenance_line({"box-b": other, "box-c": other})
    assert "machine `box-b`" in two and "machine `box-c`" in two and two.endswith("only within one.")


def test_no_records_no_line(tmp_path):
    assert provenance_line({"box-a": tmp_path / "none"}) == ""


def test_workloads_from_different_sittings_are_named_block_by_block(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "20261204T230451Z-queue-old", "357aa8faaaa")
    write_run(runs, "20261204T233000Z-search-a", "357aa8faaaa")
    write_run(runs, "20261205T000000Z-pubsub-a", "357aa8faaaa")
    write_run(runs, "20261205T160412Z-queue-a", "b7e1079bbbb")
    write_run(runs, "20261205T174012Z-queue-b", "b7e1079bbbb")
    (runs / "20261204T230451Z-queue-old" / "manifest.json").unlink()  # the queue's old records went
    (runs / "20261204T230451Z-queue-old").rmdir()
    line = provenance_line({"box-a": runs})
    assert line.startswith("Every cell below comes from machine `box-a`: search and pubsub at commit `357aa8f`: "
                           "2 run records (2 complete) from 2026-12-04 23:30 to 2026-12-05 00:00 UTC (30 min")
    assert "; queue at commit `b7e1079`: 2 run records (2 complete) from 2026-12-05 16:04 to 17:40 UTC (96 min" in line
    assert line.endswith("compare cells only within one.")


def test_the_brief_shows_a_workload_s_first_cells_and_counts_the_rest():
    import pandas as pd

    from pglimits_core.analysis.answer import BRIEF_ROWS, MATRIX_LINK, answer_markdown

    row = {"workload": "interference", "machine": "box-a", "target": "p99 within ×1.25", "verdict": "not decided here",
           "postgres": "pg", "dedicated": "engines", "postgres_figure": "—", "dedicated_figure": "—", "margin": "—",
           "class": "—", "postgres_server_cpu_us_per_op": "—", "dedicated_server_cpu_us_per_op": "—"}
    matrix = pd.DataFrame([{**row, "scale": f"cell {i}"} for i in range(BRIEF_ROWS + 3)])
    text = answer_markdown(matrix)
    assert f"cell {BRIEF_ROWS - 1} " in text and f"cell {BRIEF_ROWS} " not in text
    assert f"**interference** (measured on `box-a`; 3 more interference cells, in the order the matrix gives them: " \
           f"[`{MATRIX_LINK}`]({MATRIX_LINK}))" in text
    assert "more queue cells" not in answer_markdown(matrix.assign(workload="queue").head(BRIEF_ROWS))


def test_each_workload_links_the_executed_notebook_its_records_came_with(tmp_path, monkeypatch):
    import pandas as pd

    from pglimits_core.analysis.answer import answer_markdown, notebook_links

    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path))
    for host, name in (("box-a", "20-search"), ("box-b", "10-queue"), ("box-b", "90-report")):
        notebooks = tmp_path / "results" / host / "full" / "notebooks"
        (notebooks.parent / "runs").mkdir(parents=True, exist_ok=True)
        notebooks.mkdir(exist_ok=True)
        (notebooks / f"{name}.ipynb").write_text("{}")
    links = notebook_links("full")
    assert set(links) == {("search", "box-a"), ("queue", "box-b"), ("report", "box-b")}
    assert links[("queue", "box-b")].endswith("results/box-b/full/notebooks/10-queue.ipynb")
    row = {"scale": "s", "target": "t", "verdict": "dedicated wins", "postgres": "pg", "dedicated": "d",
           "postgres_figure": "1 jobs/s", "dedicated_figure": "2 jobs/s", "margin": "—"}
    matrix = pd.DataFrame([{**row, "workload": "queue", "machine": "box-b"},
                           {**row, "workload": "search", "machine": "box-c"}])
    text = answer_markdown(matrix, notebooks=links)
    assert f"**queue** (measured on `box-b`; [its executed notebook]({links[('queue', 'box-b')]}))" in text
    assert "**search** (measured on `box-c`)" in text  # its notebook is another machine's: not linked
