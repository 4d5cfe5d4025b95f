"""Queue charts from synthetic tables: one panel per durability class, lower bounds drawn, every
figure written through save_figure (PNG + SVG)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pglimits_core.analysis.outputs import draw_charts, save_figures
from pglimits_core.plotting.figures import ENGINE_COLOURS
from pglimits_core.registry import workload
from pglimits_core.workloads.queue.charts import consumer_sweep_chart
from pglimits_core.workloads.queue.durability_tables import label


def sweep_table() -> pd.DataFrame:
    rows = []
    for variant, cls, rate in (("pgmq batch=1", "per_commit", 2000.0), ("sqlite_wal batch=1", "periodic", 9000.0),
                               ("redis_reliable batch=1", "none", 15000.0)):
        for consumers, floor in ((1, False), (4, True)):
            rows.append({"variant": variant, "durability_class": cls, "consumers": consumers,
                         "jobs_per_s": rate * consumers, "min_jobs_per_s": rate, "max_jobs_per_s": rate * 5,
                         "client_bound": None if variant.startswith("sqlite") else floor, "lower_bound": floor})
    return pd.DataFrame(rows)


def test_the_sweep_has_one_panel_per_class_in_reading_order():
    figure = consumer_sweep_chart(sweep_table())
    titles = [ax.get_title() for ax in figure.axes]
    assert len(titles) == 3
    assert [t.splitlines()[-1] for t in titles] == [f"durability class: {label(name)}"
                                                   for name in ("per_commit", "periodic", "none")]
    colours = {line.get_color() for line in figure.axes[1].get_lines()}
    assert ENGINE_COLOURS["sqlite_wal"] in colours  # engine colours stay fixed inside a panel
    plt.close(figure)


def test_every_queue_figure_is_saved_as_png_and_svg(tmp_path: Path):
    latency = pd.DataFrame({"variant": ["pgmq batch=1", "redis_reliable batch=1"],
                            "durability_class": ["per_commit", "none"], "offered_per_s": [1000.0, 1000.0],
                            "send_to_claim_p99_ms": [3.0, 1.0], "send_to_claim_p50_ms": [1.0, 0.5], "sustained": [True, False]})
    paths = saved_charts({"throughput": sweep_table(), "steady": sweep_table(), "latency": latency,
                                "dead_tuples": pd.DataFrame()}, tmp_path)
    names = {p.name for p in paths}
    for stem in ("queue-consumer-sweep", "queue-steady-state", "queue-latency"):
        assert {f"{stem}.png", f"{stem}.svg"} <= names
    assert "queue-dead-tuples.png" not in names  # no data, no chart


def saved_charts(tables, directory) -> list[Path]:
    """The queue workload's charts of ``tables``, saved as the study saves them."""
    saved = save_figures(draw_charts(workload("queue"), tables), directory)
    return [path for paths in saved.values() for path in paths]
