"""Interference's cells of the decision matrix, on synthetic ``sides`` rows: every outcome of the
rule (only Postgres inflates, only the dedicated side, neither, both, straddling, a rate not kept)."""

from __future__ import annotations

import pandas as pd
import pytest

from pglimits_core.analysis.decision import (
    DEDICATED_WINS,
    NEITHER_MEETS,
    POSTGRES_AHEAD,
    POSTGRES_MEETS,
    matrix_table,
)
from pglimits_core.workloads.interference.decision import decisions


def sides_row(tenant: str, postgres: tuple[float, float], dedicated: tuple[float, float], **extra) -> dict:
    """One ``sides`` row: each side's paired ratios' lowest and highest."""
    row = {"level": 1.0, "churn_rate": 300.0, "tenant": tenant}
    for side, (low, high) in (("postgres", postgres), ("dedicated", dedicated)):
        row.update({f"{side}_p99_ms": "20.00 (18.00–22.00)", f"{side}_baseline_p99_ms": 15.0,
                    f"{side}_ratio": (low + high) / 2, f"{side}_ratio_min": low, f"{side}_ratio_max": high,
                    f"{side}_paired_ratios": f"{low:.2f} / {high:.2f}", f"{side}_kept_up": True,
                    f"{side}_churn_sustained": True, f"{side}_seconds_higher": "20/34 · 21/34 · 19/34"})
    return {**row, **extra}


def test_a_cell_carries_its_windows_measured_seconds():
    cell = decisions({"sides": pd.DataFrame([sides_row("fts", (1.0, 1.1), (1.0, 1.1))])})[0]
    assert cell.window_s == 34.0


def verdict_of(row: dict) -> str:
    cells = decisions({"sides": pd.DataFrame([row])})
    assert len(cells) == 1
    return matrix_table(cells).iloc[0]["verdict"]


@pytest.mark.parametrize(("postgres", "dedicated", "expected"), [
    ((1.4, 1.9), (0.9, 1.1), DEDICATED_WINS),       # splitting removes the tail
    ((0.9, 1.1), (1.3, 1.6), POSTGRES_AHEAD),       # only the dedicated side inflates
    ((0.95, 1.2), (0.9, 1.25), POSTGRES_MEETS),     # neither leaves the band (its edge included)
    ((1.3, 1.5), (1.4, 2.0), NEITHER_MEETS),        # both inflate: splitting moves the tail
])
def test_each_reading_of_the_two_sides_gives_its_verdict(postgres, dedicated, expected):
    assert verdict_of(sides_row("fts", postgres, dedicated)) == expected


def test_repetitions_on_both_sides_of_the_band_decide_nothing_and_say_which_side():
    said = verdict_of(sides_row("vector", (1.06, 1.31), (0.9, 1.1)))
    assert said.startswith("not decided here: Postgres's paired ratios straddle ×1.25")


def test_a_rate_not_kept_decides_nothing_and_says_so():
    said = verdict_of(sides_row("fts", (1.4, 1.9), (0.9, 1.1), dedicated_churn_sustained=False))
    assert said == "not decided here: dedicated churn not sustained: not comparable"


def test_a_cell_names_both_p99s_and_the_churn_and_only_tenants_get_cells():
    rows = [sides_row("fts", (1.4, 1.9), (0.9, 1.1)), sides_row("churn", (1.0, 1.0), (1.0, 1.0))]
    table = matrix_table(decisions({"sides": pd.DataFrame(rows)}))
    assert len(table) == 1
    cell = table.iloc[0]
    assert cell["scale"] == "full-text search beside a queue churning 300 jobs/s"
    assert cell["postgres_figure"] == "p99 20.00 (18.00–22.00) ms vs 15.0 ms alone (paired ×1.40 / 1.90)"
    assert cell["postgres_server_cpu_us_per_op"] == "—"


def test_no_sides_table_gives_no_cells():
    assert decisions({}) == [] and decisions({"sides": pd.DataFrame([{"side": "postgres", "status": "x"}])}) == []


def test_a_window_whose_server_cpu_is_out_of_line_decides_nothing_and_names_it():
    # the first dedicated baseline of the committed run: 58 % server CPU against its siblings'
    # 36-38 % for the same offered load (a cold engine), which made one paired ratio look small
    unlike = "baseline window of repetition 0 ran at 58 % server CPU against 36–38 % for the same offered load"
    said = verdict_of(sides_row("fts", (0.95, 1.2), (1.09, 1.48), dedicated_unlike_windows=unlike))
    assert said == f"not decided here: windows not comparable: dedicated's {unlike}"


def test_a_bystander_much_faster_beside_the_churn_than_alone_decides_nothing():
    said = verdict_of(sides_row("vector", (0.77, 1.56), (1.37, 1.43)))
    assert said == ("not decided here: windows not comparable: a repetition ran faster beside the churn than "
                    "alone (Postgres ×0.77)")


@pytest.mark.parametrize(("cpu", "expected"), [
    ((58.0, 38.0, 36.0), "baseline window of repetition 0 ran at 58 % server CPU against 36–38 % for the same offered load"),
    ((113.0, 102.0, 71.0), "baseline window of repetition 2 ran at 71 % server CPU against 102–113 % for the same offered load"),
    ((106.0, 97.0, 106.0), ""),   # within ×1.25 of the median
    ((58.0, 38.0), ""),           # two windows cannot single one out
])
def test_a_repetition_is_out_of_line_when_its_server_cpu_leaves_the_band_around_its_groups_median(cpu, expected):
    from pglimits_core.workloads.interference.tables import unlike_windows

    group = pd.DataFrame({"server_cpu_pct": cpu, "mechanism": "baseline", "repetition": range(len(cpu))})
    assert unlike_windows(group) == expected
