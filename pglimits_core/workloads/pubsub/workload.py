"""The pub/sub study as a registry entry: LISTEN/NOTIFY vs Redis PUBLISH/SUBSCRIBE — fan-out,
delivery latency and accounting, the ceiling, and the failure modes users run into."""

from __future__ import annotations

from pglimits_core.registry import Chart, Workload
from pglimits_core.workloads.pubsub import report
from pglimits_core.workloads.pubsub.decision import decisions
from pglimits_core.workloads.pubsub.plan import plan
from pglimits_core.workloads.pubsub.profile import PubsubProfile
from pglimits_core.workloads.pubsub.tables import all_tables, pubsub_frame

WORKLOAD = Workload(
    name="pubsub",
    title="Pub/sub",
    notebook="40-pubsub",
    section=PubsubProfile,
    plan=plan,
    frame=pubsub_frame,
    tables=all_tables,
    charts=(Chart("fanout", "pubsub-fanout", report.fanout_chart, "delivery_p99_ms"),
            Chart("cliff_points", "pubsub-cliff", report.cliff_chart, "delivery_p99_ms", under="cliff"),
            Chart("commit_serialization", "pubsub-commit-serialization", report.commit_chart, "writer_tps")),
    report_sections=report.sections,
    readme_lines=report.readme_lines,
    seed_comparison=report.seed_comparison,
    seed_notes=report.SEED_NOTES,
    decisions=decisions,
)
