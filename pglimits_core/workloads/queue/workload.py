"""The queue study as a registry entry: Postgres SKIP LOCKED and pgmq vs a Redis reliable queue
vs a SQLite WAL queue — capacity, throughput, steady state, latency at matched rates, the
consumer and server crash drills, and the backup/restore drill."""

from __future__ import annotations

from pglimits_core.plotting.capacity import capacity_chart
from pglimits_core.registry import Chart, Workload, with_capacity
from pglimits_core.workloads.queue import charts as figures
from pglimits_core.workloads.queue.capacity_cells import capacity_decisions
from pglimits_core.workloads.queue.decision import decisions
from pglimits_core.workloads.queue.drills.backup_tables import backup_chart, backup_tables
from pglimits_core.workloads.queue.latency_names import P99
from pglimits_core.workloads.queue.plan import plan
from pglimits_core.workloads.queue.profile import QueueProfile
from pglimits_core.workloads.queue.readme import readme_lines
from pglimits_core.workloads.queue.report import SEED_NOTES, queue_sections
from pglimits_core.workloads.queue.seed import comparison_table
from pglimits_core.workloads.queue.soak_charts import depth_chart, soak_chart
from pglimits_core.workloads.queue.soak_tables import soak_tables
from pglimits_core.workloads.queue.tables import all_tables, queue_frame


def steady_chart(table):
    return figures.consumer_sweep_chart(
        table, "Queue steady state: producers hold ~target depth, consumers swept\n"
               "(▲: the producers could not hold the depth — producer-bound, a lower bound)")


def queue_capacity_chart(table):
    return capacity_chart(table, unit="jobs/s", what="send → claim p99 from the intended send")


def queue_tables(frame):
    """Every queue table, the backup/restore drill's and the soak's included."""
    return {**all_tables(frame), **backup_tables(frame), **soak_tables(frame)}


WORKLOAD = Workload(
    name="queue",
    title="Queue",
    notebook="10-queue",
    section=QueueProfile,
    plan=plan,
    frame=queue_frame,
    tables=queue_tables,
    charts=(Chart("capacity", "queue-capacity", queue_capacity_chart, "curve",
                  caption="Send → claim p99, from each job's intended send, against the offered rate, one line per design, a panel per target: the starred rate is the highest whose three steady windows held the dotted target — the design's capacity; compare designs within one durability class only."),
            Chart("throughput", "queue-consumer-sweep", figures.consumer_sweep_chart, "jobs_per_s",
                  caption="Jobs per second as consumers are added, closed loop, a panel per durability class: a line that flattens has met its limit; ringed points were limited by the load generator and ▲ points are lower bounds, not the server's ceiling."),
            Chart("steady", "queue-steady-state", steady_chart, "jobs_per_s",
                  caption="The same sweep with the producers holding the queue near a target depth, so consumers never find it empty: ▲ marks points where the producers could not hold the depth (a lower bound)."),
            Chart("latency", "queue-latency", figures.latency_chart, P99,
                  caption="Send → claim latency at fixed offered rates, open loop, from each job's scheduled send: p99 with its spread over repetitions and p50 beside it; a hollow marker is a rate not sustained (a stall, not a latency)."),
            Chart("dead_tuples", "queue-dead-tuples", figures.dead_tuples_chart, "dead_tuples", under="queue_health",
                  caption="Dead tuples in the queue table second by second while it churns: a line that climbs and does not come back down is vacuum falling behind the deletes."),
            Chart("recovery_drills", "queue-recovery", figures.recovery_chart, "recovery_s",
                  caption="After a SIGKILL of the server: seconds from the restart call to the first answered claim against the WAL it had to replay, one point per drill; colour is the engine, marker the durability class."),
            Chart("soak_series", "queue-soak", soak_chart, "p99_ms", under="soak",
                  caption="Each design held at a share of its ceiling for minutes, on one time line: send → claim p99 (the median of each 30 s's per-second p99s; faint, the worst second), and for the Postgres designs the queue table's dead tuples and size — a p99 or a size that climbs and stays up is the queue decaying, a saw-tooth is autovacuum keeping up."),
            Chart("depth", "queue-depth", depth_chart, "jobs_per_s",
                  caption="Each design's ceiling, consumers flat out, against the backlog its window started from: a line that falls as the backlog grows means a deep table costs claims; a flat one means depth does not matter at these sizes."),
            Chart("backup", "queue-backup", backup_chart, "backup_s",
                  caption="Backup and restore drills per design: the time to back up and the time from the restore to the first claim, median with the spread over drills; a time not recorded is named, not drawn as zero.")),
    report_sections=queue_sections,
    readme_lines=readme_lines,
    capacity_unit="jobs/s",
    seed_comparison=comparison_table,
    seed_notes=SEED_NOTES,
    decisions=with_capacity(capacity_decisions, decisions),
)
