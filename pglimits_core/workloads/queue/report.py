"""The queue study's part of the report: captions, how to read the flags, the seed ratios' rule."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pglimits_core.analysis.report import flag_points
from pglimits_core.plotting.html_report import Section
from pglimits_core.workloads.queue.drills.backup_tables import BACKUP_CAPTION
from pglimits_core.workloads.queue.drills.consumer_crash_tables import CONSUMER_CRASH_CAPTION
from pglimits_core.workloads.queue.latency_names import DEFINITION, FROM, NAME
from pglimits_core.workloads.queue.seed import AGREEMENT_SLACK
from pglimits_core.workloads.queue.tool_tables import HARNESS_BENCH_CAPTION

CLIENT_BOUND_NOTE = ("Every table carries each variant's <b>durability class</b> (fsync per commit / periodic / "
                     "none) and is grouped by it: compare variants within a class, since a class promises more "
                     "than the next. Flags: <span class='flag'>client-bound</span> = the load generator, not the "
                     "server, ran out of CPU (the point is a floor for the server); a blank (—) client-bound "
                     "cell means the verdict does not apply (SQLite: its engine runs inside the client) or was "
                     "not recorded; <span class='flag'>NOT SUSTAINED</span> = achieved/consumed below 95 % of "
                     "offered (its latency is not a claim at that rate); <span class='flag'>LOWER BOUND (≥)</span> "
                     "= every run of the point had its consumers wait on something else — a burn-down that "
                     "emptied its prefill inside the window (<span class='flag'>backlog ran out</span>) or a "
                     "steady-state point whose producers never reached the target depth (<span class='flag'>"
                     "depth not held</span>, producer-bound) — so the consumers can do at least that rate. "
                     "<code>runs</code> counts the runs behind the number, <code>runs_recorded</code> every run "
                     f"of the point. The {DEFINITION} (columns <code>send_to_claim_*</code>).")

HEAD_TO_HEAD = ("; server_cpu_us_per_job = the server's own CPU per job (µs; the exact counters of its CPU set "
                "over the window where they were read, else every server process the sampler "
                "saw, Postgres parallel and autovacuum workers included; in the throughput table over the "
                "runs whose CPU split can be trusted, counted in server_cpu_runs; shown, never deciding); "
                "limit = which side set the limit (server, load: the figure a floor, or neither); "
                "verdict_class = the one rule on rate (analysis/verdict.py) against `versus`, the best "
                "like-for-like design on the other side (Postgres / not Postgres): the same durability class, "
                "delivery guarantee and batch at the same point")
CAPTIONS = {"throughput": "Throughput per consumer count (closed-loop burn-down, median over repetitions)" + HEAD_TO_HEAD,
            "steady": "Steady state per consumer count (producers hold a target depth; ≥ = producer-bound)",
            "latency": "Latency at matched offered rates (open loop; enqueue from the intended start; "
                       f"{NAME}, {FROM} to the claim's return, the ack not in it)" + HEAD_TO_HEAD
                       + " (idle polls included in the CPU per job, so a latency row is never decided by it; "
                         "a design whose best burn-down run, with no producers, stays below the rate is not "
                         "comparable here; a rate its producers stayed below 95 % of is not decided by the "
                         "harness)",
            "matched": "The source studies' latency claims at their rates over steady windows (one row per run: "
                       "the compiled load's open loop, 30-s windows in full; "
                       f"{NAME}, {FROM} to the claim's return) — what a source row's latency is read from "
                       "before the latency sweep's short windows",
            "recovery": "Crash drill per variant: median and range over the drills. SIGKILL keeps the OS page "
                        "cache, so 0 lost does not separate durability classes (an OS crash would)",
            "consumer_crash": CONSUMER_CRASH_CAPTION,
            "backup": BACKUP_CAPTION,
            "harness_bench": HARNESS_BENCH_CAPTION,
            "soak": "The queue held for minutes at a share of its ceiling (the ceiling from the first backlog "
                    "depth, same window): send → claim p99 over the window, in its first and last minute (median "
                    "of the per-second p99s, by each message's intended send) and its worst second; the queue "
                    "table's most dead tuples, its size with indexes at the start and end (MiB), autovacuum runs "
                    "and checkpoints while it ran; Redis's memory. The open loop's producers at a fixed rate, "
                    "consumers closed loop, starting from an empty queue",
            "depth": "Ceiling against backlog depth: consumers flat out (pgbench running a Postgres design's "
                     "own statements, qload's burn-down for Redis) from a prefilled, settled backlog; "
                     "left_in_queue = the depth the window left (a burn-down empties what it claims)",
            "fairness": "Fairness: how evenly the consumers shared the acknowledged messages, per run (warm-up and "
                        "window): Jain's index (1 = equal shares, 1/n = one consumer did everything) and the "
                        "least / most a consumer did as a share of the mean; medians over the runs. Batched claims "
                        "(50 per claim) are said to cost fairness: compare with batch 1 of the same system"}
REFERENCE_CAPTIONS = {
    "resources": "Resources per latency run. Consumers back off 1 ms after each empty claim (an idle poll): "
                 "at low rates most consumer CPU is polling, so CPU µs per message includes it — read it "
                 "beside idle_polls_per_s and idle_polls_per_msg. SQLite busy waits are summed over the load "
                 "workers.",
    "recovery_drills": "Every crash drill (one row per drill)",
    "backup_drills": "Every backup/restore drill (one row per drill)",
    "soak_series": "The soak's time line: per design and 30-s bucket, the median and worst per-second p99, "
                   "claims/s, and the queue table's dead tuples and size at the bucket's end"}


SEED_NOTES = ["Queue: <b>both sides from one durability class</b> (one row per class measured on both sides; e.g. SQLite <code>synchronous=FULL</code> "
            "vs Postgres <code>synchronous_commit=on</code> at per-commit durability). The seed's own "
            "durability is quoted beside it. Verdict: <b>agree</b> when our ratio lies within the seed's "
            f"range widened ×{AGREEMENT_SLACK} each way; <b>same direction, different size</b> when the same "
            "system wins; <b>differ</b> when the other one does, or when one of ours did not sustain the rate "
            "the seed measured both at (the reason is stated); <b>not comparable here</b> when a design cannot "
            "reach that rate on this box at all (its best burn-down run, consumers alone, stays below it); "
            "<code>verdict class</code> = who set the limit (analysis/verdict.py); <b>not compared</b> when no durability class "
            "was measured on both sides (the ratio is then shown as context only). The seed's Redis "
            "baseline was pipelined, so ours is the pipelined variant. A peak-throughput claim reads the "
            "capacity experiment's ceilings (steady closed-loop windows, the server on its own core; a "
            "floor where its load set the limit) where both sides have one, else the burn-down sweep. "
            "Latency pairs are read from the steady matched rates (the compiled load, 3 × 30-s windows) "
            "where both sides ran there, else from the latency sweep's short windows, and say which. "
            "They use the seed's offered rate; where this box was not offered it, a claim that "
            "names its rate as a share of a peak (the seed's 5k jobs/s: ~11 % of its 46k) is judged at "
            "<b>its own terms</b> — a rate both sides were offered within ×1.5 of the same share of "
            "this box's ceiling of that design — and says so; otherwise a pair measured only at another "
            f"rate is shown for context and judged <b>not comparable</b>. Our latency side is {NAME} p99 "
            f"{FROM} to the claim's return (the ack not in it), beside the seed's own p99 as the seed names it."]


def queue_sections(tables: dict[str, pd.DataFrame], figures: dict[str, list[Path]]
                   ) -> tuple[list[Section], list[Section]]:
    """(the results: headline tables and figures; the reference material for the report's end)."""
    headline = [(CAPTIONS[k], flag_points(tables[k])) for k in CAPTIONS if k in tables]
    extra = [(REFERENCE_CAPTIONS.get(k, f"queue {k}"), flag_points(t)) for k, t in tables.items() if k not in CAPTIONS]
    pngs = [path for paths in figures.values() for path in paths if path.suffix == ".png"]
    return ([Section("Queue: headline tables", [CLIENT_BOUND_NOTE], headline),
             Section("Queue: figures", figures=pngs)],
            [Section("Queue: resources, Postgres health, every crash drill", tables=extra, collapsed=True)])


