"""The queue's capacity cells (``experiments.capacity_cells``): per durability class, the best
dedicated design that has a Postgres design on its terms (the same delivery guarantee and batch:
``like_for_like.same_terms``), and that Postgres design."""

from __future__ import annotations

import pandas as pd

from pglimits_core.analysis.decision import Cell
from pglimits_core.experiments.capacity_cells import capacity_cells as cells_of
from pglimits_core.workloads.queue.like_for_like import same_terms


def capacity_cells(table: pd.DataFrame | None) -> list[Cell]:
    """One scale per durability class and process-kill promise: a periodic fsync that keeps an
    acknowledged job through a process kill (Redis's AOF everysec) is not the promise of one that
    loses it (Postgres's ``synchronous_commit=off``)."""
    if table is not None and not table.empty and "target_p99_ms" in table:
        # a design measured by its ceiling alone (``capacity.ceilings_only``) is there for the
        # source studies' peak figures: no latency target, no delivery peer — no cell of its own
        table = table[table.target_p99_ms.notna()]
    if table is not None and not table.empty:
        survives = table["survives_process_kill"] if "survives_process_kill" in table else pd.Series(None, index=table.index)
        table = table.assign(survives_process_kill=survives.map(_kill_words))
    return cells_of("queue", table, "jobs/s", ["durability_class", "survives_process_kill"],
                    lambda key: f"durability {key[0]}, {key[1]}", "send → claim", peers=same_terms)


def _kill_words(survives) -> str:
    if survives is None or pd.isna(survives):
        return "process kill not recorded"
    return "survives a process kill" if survives else "a process kill loses acknowledged jobs"


def capacity_decisions(tables: dict[str, pd.DataFrame]) -> list[Cell]:
    return capacity_cells(tables.get("capacity"))
