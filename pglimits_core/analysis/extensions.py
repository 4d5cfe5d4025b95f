"""Do the Postgres extensions change the answer? The decision matrix compares stock PostgreSQL 16;
each workload with extensions on PostgreSQL 17 (pg_search, pgvector 0.8, DiskANN) also gives its
cells with them among Postgres's side (``Workload.extension_decisions``), judged by the same rule.
This sets the two verdicts of every cell side by side and says, per workload, how many change —
generated from the records, never typed."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pglimits_core.analysis.decision import committed_cells, indicative, matrix_table

NAME = "decision-matrix-extensions"
KEY = ["workload", "scale", "target"]


def compared(stock: pd.DataFrame, extended: pd.DataFrame) -> pd.DataFrame:
    """One row per cell of a workload with extensions: both verdicts, the Postgres side of each,
    both margins, and whether the verdict changed."""
    if stock.empty or extended.empty:
        return pd.DataFrame(columns=[*KEY, "stock_verdict", "with_extensions_verdict", "changed"])
    columns = ["verdict", "postgres", "margin"]
    both = stock[KEY + columns].merge(extended[KEY + columns], on=KEY, suffixes=("_stock", "_ext"))
    table = both.rename(columns={"verdict_stock": "stock_verdict", "verdict_ext": "with_extensions_verdict",
                                 "postgres_stock": "stock_postgres", "postgres_ext": "with_extensions_postgres",
                                 "margin_stock": "stock_margin", "margin_ext": "with_extensions_margin"})
    return table.assign(changed=table.stock_verdict.map(verdict_key) != table.with_extensions_verdict.map(verdict_key))


def verdict_key(text: str) -> str:
    """A verdict as one value: its words before the reason ("not decided here: why" is one
    verdict, whatever why), and for a cell only its windows kept undecided, what they indicate
    ("indicative: dedicated wins"), so a change the short windows hide still counts as one."""
    text = str(text)
    if (found := indicative(text)) is not None:
        return f"indicative: {found.split(':')[0]}"
    return text.split(":")[0]


def sentence(table: pd.DataFrame) -> str:
    """"With the PostgreSQL 17 extensions on Postgres's side: search 0 of 6 verdicts change;
    vectors 2 of 6 (1 client, recall ≥ 0.90: ... → ...)." ("" without such workloads)."""
    if table.empty:
        return ""
    parts = []
    for workload, rows in table.groupby("workload", sort=False):
        changed = rows[rows.changed]
        said = f"{workload} {len(changed)} of {len(rows)} verdicts change"
        if not changed.empty:
            said += " (" + "; ".join(f"{r.scale}, {r.target}: {verdict_key(r.stock_verdict)} → "
                                     f"{verdict_key(r.with_extensions_verdict)}, {r.with_extensions_postgres}"
                                     for r in changed.itertuples()) + ")"
        parts.append(said)
    return f"With the PostgreSQL 17 extensions among Postgres's designs: {'; '.join(parts)}."


def write(table: pd.DataFrame, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    table.to_csv(directory / f"{NAME}.csv", index=False)
    text = (f"# The decision matrix with the Postgres extensions\n\nGenerated from the committed run records "
            f"by `pglimits results build`: every cell of the workloads with "
            f"PostgreSQL 17 extensions, judged by the same rule with them among Postgres's designs.\n\n"
            f"{sentence(table)}\n\n{table.to_markdown(index=False) if not table.empty else ''}\n")
    (directory / f"{NAME}.md").write_text(text)


def committed_comparison(profile: str, host: str | None = None) -> pd.DataFrame:
    return compared(matrix_table(committed_cells(profile, host)),
                    matrix_table(committed_cells(profile, host, extensions=True)))
