"""Every committed figure, drawn from the committed run records as `make figures` draws it: stamped
with the machine and commit it came from, in the fixed engine colours, no line through a point
that was not sustained, no missing value drawn as 0."""

from __future__ import annotations

import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from pglimits_core.analysis.outputs import Outputs, build_outputs, stamp_text
from pglimits_core.config import StudyPaths
from pglimits_core.plotting.figures import ENGINE_COLOURS, GREY, sustained_line
from pglimits_core.record.export import committed_host, committed_hosts
from pglimits_core.registry import workloads
from pglimits_core.samplers.host_facts import host_id
from pglimits_core.workloads.queue.drills.backup_tables import backup_chart

ENGINE_RGB = {matplotlib.colors.to_hex(c) for c in ENGINE_COLOURS.values()}


@pytest.fixture(scope="module")
def committed() -> dict[str, Outputs]:
    """Each workload's outputs from its committed records (no file written)."""
    found = {}
    for workload in workloads():
        if committed_hosts("full", workload.name):
            host = committed_host("full", None, nearest=True, study=workload.name)
            found[workload.name] = build_outputs(workload, StudyPaths.committed("full", host).runs)
    if not found:
        pytest.skip("no committed runs under data/results/")
    return found


def all_figures(committed: dict[str, Outputs]):
    return [(name, outputs, figure) for outputs in committed.values() for name, figure in outputs.figures.items()]


def visible_lines(figure) -> list:
    """Lines that join points (not marker-only series, not whisker caps)."""
    return [line for ax in figure.axes for line in ax.lines if line.get_linestyle() not in ("None", "none", "", " ")]


def test_every_committed_chart_carries_its_machine_and_commit(committed):
    assert len(all_figures(committed)) >= 15
    for name, outputs, figure in all_figures(committed):
        newest = max((r["manifest"] for r in outputs.records), key=lambda m: m["run_id"])
        stamp = stamp_text(outputs.records)
        assert host_id(newest["host"]) in stamp and newest["host"]["cpu_model"] in stamp
        assert str(newest["git"]["sha"])[:10] in stamp
        assert stamp in [text.get_text() for text in figure.texts], name


def test_every_chart_draws_systems_in_their_engine_colours(committed):
    for name, _, figure in all_figures(committed):
        for ax in figure.axes:
            # a context series (gid "annotation": the server's WAL rate) is no system's line
            for line in (line for line in ax.lines if line.get_gid() != "annotation"):
                assert matplotlib.colors.to_hex(line.get_color()) != GREY, f"{name}: {line.get_label()} is grey"
            # a shaded span marking an event (gid "annotation": an autovacuum run) is not a system's bar
            bars = [p for p in ax.patches if isinstance(p, matplotlib.patches.Rectangle) and p.get_height() > 0
                    and p.get_gid() != "annotation"]
            for bar in bars:
                assert matplotlib.colors.to_hex(bar.get_facecolor(), keep_alpha=False) in ENGINE_RGB, name


def test_queue_latency_joins_only_sustained_points(committed):
    outputs = committed["queue"]
    latency = outputs.tables["latency"].dropna(subset=["send_to_claim_p99_ms"])
    per_rate = latency.assign(sustained=latency.sustained.astype(bool)).groupby(["variant", "offered_per_s"]).agg(
        p99=("send_to_claim_p99_ms", "median"), sustained=("sustained", "all")).reset_index()
    # the records may hold no unsustained rate (a fast box sustains every one): drawing one is
    # covered by test_a_line_never_joins_an_unsustained_point; here every sustained one is drawn
    assert per_rate.sustained.any()
    lines = {line.get_label().removesuffix(" p99"): line for line in visible_lines(outputs.figures["queue-latency"])}
    for variant, group in per_rate.groupby("variant"):
        x, y = (np.asarray(v, dtype=float) for v in lines[variant].get_data())
        drawn = y[np.isfinite(x) & np.isfinite(y)]
        assert sorted(drawn) == sorted(group.p99[group.sustained]), variant
        assert not set(drawn) & set(group.p99[~group.sustained]), variant


def test_a_line_never_joins_an_unsustained_point():
    figure, ax = plt.subplots()
    sustained_line(ax, [1, 2, 3, 4], [10, 20, 30, 40], [True, False, True, True], color="#c00000", label="x")
    x, y = ax.lines[0].get_data()
    assert list(np.isfinite(y)) == [True, False, True, True]  # broken at 2: 1 is not joined to 3
    hollow = ax.collections[0]
    assert hollow.get_offsets().tolist() == [[2.0, 20.0]]
    assert matplotlib.colors.to_hex(hollow.get_facecolor()[0]) == "#ffffff"
    plt.close(figure)


def test_the_recovery_chart_shows_each_drill_s_time_and_loss_and_no_replay_size_never_recorded(committed):
    outputs = committed["queue"]
    drills = outputs.tables["recovery_drills"]
    figure = outputs.figures["queue-recovery"]
    left, right = figure.axes[:2]

    def drawn(ax):
        xs = np.vstack([c.get_offsets() for c in ax.collections])[:, 0].astype(float)
        return sorted(xs[np.isfinite(xs)])

    assert drawn(left) == pytest.approx(sorted(pd.to_numeric(drills.recovery_s, errors="coerce").dropna()))
    lost = pd.to_numeric(drills.lost, errors="coerce").dropna()
    assert drawn(right) == sorted(lost) and lost.max() > 0  # the unlogged and unpersisted losses are on it
    sizes = pd.to_numeric(drills.wal_to_replay_mb, errors="coerce")
    assert sizes.isna().any()  # the committed drills include systems that record no replay size
    notes = [text.get_text() for text in left.texts if text.get_text().startswith("WAL ")]
    sized = drills[sizes.notna() & pd.to_numeric(drills.recovery_s, errors="coerce").notna()].variant.nunique()
    assert len(notes) == sized and not any(note.startswith("WAL 0 ") for note in notes)


def test_the_backup_chart_draws_no_bar_for_a_time_not_recorded():
    row = {"variant": "pgmq batch=1", "durability_class": "per_commit", "queue_messages": np.nan}
    for column in ("backup_s", "restore_to_first_claim_s"):
        row |= {column: 2.0, f"{column}_min": 1.5, f"{column}_max": 2.5}
    table = pd.DataFrame([row, {**row, "variant": "sqlite_wal batch=1", "backup_s": np.nan}])
    figure = backup_chart(table)
    ax = figure.axes[0]
    assert len([p for p in ax.patches if isinstance(p, matplotlib.patches.Rectangle)]) == 3
    assert all(p.get_height() == 2.0 for p in ax.patches)
    assert "not\nrecorded" in [text.get_text() for text in ax.texts]
    assert "queue size not recorded" in ax.get_xticklabels()[0].get_text()
    plt.close(figure)


def test_every_chart_has_a_caption_that_says_what_to_see():
    """The report and docs/RESULTS.md caption each figure with what to look for, never its file name."""
    for workload in workloads():
        for chart in workload.charts:
            assert chart.caption.endswith(".") and len(chart.caption.split()) >= 12, chart.name
            assert chart.name.replace("-", " ") not in chart.caption.lower(), chart.name


def test_every_committed_figure_file_is_a_registered_chart_or_a_scoreboard():
    """A figure left behind by a renamed chart would sit in the repository with no caption."""
    from pglimits_core.analysis.findings import CAPTIONS
    from pglimits_core.config import PROJECT_ROOT
    from pglimits_core.registry import figure_captions

    known = {**figure_captions(), **CAPTIONS}
    files = sorted((PROJECT_ROOT / "figures").glob("*/full/*.png"))
    assert files
    for path in files:
        assert path.stem in known, f"{path}: no registered chart draws it (stale? make figures)"


def data_lines(ax) -> list:
    """An axis's series: lines of 3 points or more (a target or event line has 2)."""
    return [line for line in ax.lines if len(line.get_ydata()) >= 3]


def test_no_axis_is_drawn_around_a_series_that_never_changes(committed):
    for name, _, figure in all_figures(committed):
        for ax in figure.axes:
            lines = data_lines(ax)
            values = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in lines]) if lines else []
            values = values[np.isfinite(values)] if len(values) else values
            if len(values) > 2 and not ax.patches and not ax.collections:
                assert np.ptp(values) > 0, f"{name}: the axis {ax.get_ylabel()!r} draws only the constant {values[0]:g}"


def test_series_on_one_axis_are_told_apart_by_colour_dash_or_marker(committed):
    for name, _, figure in all_figures(committed):
        for ax in figure.axes:
            styles: dict[tuple, str] = {}
            for line in ax.lines:
                label = line.get_label()
                if label.startswith("_"):
                    continue
                style = (matplotlib.colors.to_hex(line.get_color()), str(line.get_linestyle()), str(line.get_marker()))
                assert styles.setdefault(style, label) == label, \
                    f"{name}: {label!r} and {styles[style]!r} are drawn alike {style}"
