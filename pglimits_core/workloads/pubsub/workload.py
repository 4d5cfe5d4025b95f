"""The pub/sub study as a registry entry: LISTEN/NOTIFY vs Redis PUBLISH/SUBSCRIBE — fan-out,
delivery latency and accounting, capacity (the ceiling and the rate holding a delivery p99 target),
and the failure modes users run into."""

from __future__ import annotations

from pglimits_core.plotting.capacity import capacity_chart
from pglimits_core.registry import Chart, Workload, with_capacity
from pglimits_core.workloads.pubsub import report
from pglimits_core.workloads.pubsub.capacity import capacity_decisions, capacity_table_of
from pglimits_core.workloads.pubsub.decision import decisions
from pglimits_core.workloads.pubsub.plan import plan
from pglimits_core.workloads.pubsub.profile import PubsubProfile
from pglimits_core.workloads.pubsub.tables import all_tables, pubsub_frame


def pubsub_capacity_chart(table):
    return capacity_chart(table, unit="messages/s", what="delivery p99 from the intended publish")


def server_options(section: PubsubProfile) -> dict[str, dict]:
    """Postgres with the connections the idle-listener points need, for the whole study: a raised
    limit reserves shared memory for the slots, while NOTIFY signals only backends that LISTEN
    (PostgreSQL 16 keeps them in a list of their own) and snapshots scan only running backends."""
    if section.postgres_max_connections is None:
        return {}
    return {"postgres": {"settings": {"max_connections": str(section.postgres_max_connections)}}}


def pubsub_tables(frame):
    """Every pub/sub table, the capacity table where the capacity experiment was run."""
    capacity = capacity_table_of(frame)
    return {**all_tables(frame), **({"capacity": capacity} if not capacity.empty else {})}


WORKLOAD = Workload(
    name="pubsub",
    title="Pub/sub",
    notebook="40-pubsub",
    section=PubsubProfile,
    plan=plan,
    server_options=server_options,
    frame=pubsub_frame,
    tables=pubsub_tables,
    charts=(Chart("capacity", "pubsub-capacity", pubsub_capacity_chart, "curve",
                  caption="Delivery p99, from each message's intended publish to its arrival at each subscriber, against the offered publish rate, a panel per fan-out: the starred rate is the highest whose steady windows held the dotted target."),
            Chart("fanout", "pubsub-fanout", report.fanout_chart, "delivery_p99_ms",
                  caption="Deliveries per second and delivery p99 against the publish rate, open loop, a marker per fan-out: where a line bends upward the broker stopped keeping up; a hollow marker is a rate the publishers did not sustain."),
            Chart("commit_serialization", "pubsub-commit-serialization", report.commit_chart, "writer_tps",
                  caption="Unrelated writers' transactions per second with and without a NOTIFY in their transactions: the gap is what the notify queue's lock at commit costs writers who never listen."),
            Chart("idle_listeners", "pubsub-idle-listeners", report.idle_chart, "published_per_s",
                  caption="One publisher flat out while N listeners wait on other channels: its publish rate against N (left) and the server's memory once they are connected (right); N is drawn at even steps, labelled with the counts.")),
    report_sections=report.sections,
    readme_lines=report.readme_lines,
    capacity_unit="messages/s",
    seed_comparison=report.seed_comparison,
    seed_notes=report.SEED_NOTES,
    decisions=with_capacity(capacity_decisions, decisions),
)
