"""The interference study as a registry entry: a churning queue, search and vector bystanders on
one Postgres — does autovacuum line up with the bystanders' p99 spikes? — and the same tenants on
dedicated engines on the same box: does splitting the systems remove the tail or move it?"""

from __future__ import annotations

from typing import Any

from pglimits_core.registry import Chart, Workload
from pglimits_core.workloads.interference import report
from pglimits_core.workloads.interference.charts import timeline_chart
from pglimits_core.workloads.interference.decision import decisions
from pglimits_core.workloads.interference.plan import data_of, plan, server_options
from pglimits_core.workloads.interference.profile import InterferenceProfile
from pglimits_core.workloads.interference.tables import all_tables, interference_frame


def prepare(section: Any, profile: Any) -> None:
    """Both datasets built (and verified) before any server starts."""
    from pglimits_core.workloads.interference.tenants import verified

    data = data_of(profile)
    verified(data.corpus)
    verified(data.vectors)


WORKLOAD = Workload(
    name="interference",
    title="Interference",
    notebook="50-interference",
    section=InterferenceProfile,
    plan=plan,
    frame=interference_frame,
    tables=all_tables,
    charts=(Chart("timeline", "interference-timeline", timeline_chart, "fts_p99_ms",
                  caption="Bystander p99 second by second beside the churning queue, a panel per act and mitigation at the highest churn level, with the queue table's dead tuples and WAL rate: gold spans are autovacuum runs on the queue table, so a spike inside one points at vacuum, a spike outside at something else."),),
    report_sections=report.sections,
    decisions=decisions,
    readme_lines=report.readme_lines,
    prepare=prepare,
    server_options=server_options,
    # False: a dedicated server that cannot start fails its own points (named, with the reason);
    # the Postgres side still runs
    require_servers=False,
)
