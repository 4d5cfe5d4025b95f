"""The pub/sub study's charts, report sections, README lines and seed comparison."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pglimits_core.analysis.report import flag_points
from pglimits_core.analysis.seed import verdict_short
from pglimits_core.plotting.figures import MARKERS, line_style_for, sustained_line
from pglimits_core.plotting.figures import colour_for as system_colour
from pglimits_core.plotting.figures import finish as _finish
from pglimits_core.plotting.html_report import Section
from pglimits_core.workloads.pubsub.systems.registry import SERVER_FOR
from pglimits_core.workloads.pubsub.terms import terms_note


def colour_for(variant: str) -> str:
    """A variant's system colour: the colour of its server (the queue study's Postgres and Redis)."""
    return system_colour(variant, SERVER_FOR.get(variant.split()[0]))

HOW_TO_READ = ("Pub/sub: LISTEN/NOTIFY (`pg_notify` in autocommit: one publish = one transaction, or `batch=n` "
               "notifications per transaction) vs Redis PUBLISH/SUBSCRIBE (`batch=n` = a pipeline of n), each server "
               "on a CPU of its own and every load on the other. The capacity table comes first: psload (Go; pgx and "
               "go-redis) runs 4 synchronous publisher connections sending 64-byte messages on one channel and "
               "every subscriber, all on the load's CPU; its ceiling is the publishers flat out (3 × 30 s), its "
               "capacity the highest offered rate whose delivery p99 from each message's *intended* publish held "
               "10 ms with every message delivered, over three 30-s windows. psload's own limits: its publishers "
               "start late (their schedule lag, actual − intended publish, is in every p99 on both sides: about 1 ms "
               "at low rates from Go's timers, more where 4 synchronous publishers wait on their round trips), "
               "and no second load checks it at these rates (the Python harness, on the same CPU, reaches a "
               "fraction of psload's ceilings: the ceiling column gives it, and its checks say \"no check\"). The "
               "fan-out sweep and the failure modes below run the harness's Python publishers and subscribers "
               "(psycopg 3 `notifies()`, redis-py) in the short windows each table's caption gives: indicative, "
               "never deciding. Subscribers listen before the "
               "first publish; every delivery is accounted per publisher and sequence number (lost, duplicated, "
               "reordered). ᶜ = load-limited (the load's CPU, not the server's, saturated: a floor for the server); "
               "ˡ = lag-dominated (the publishers' own schedule lag is at least half the delivery p99: with "
               "synchronous publishers a slow server shows there too); not sustained = the publishers fell below "
               "95 % of the offered rate; (backlog) after deliveries/s = the subscribers were still receiving ≥ 1 % "
               "of the messages after the publishers stopped — a growing backlog, not a delivery rate. Open-loop "
               "rows count what the publishers achieved in the window. Server CPU per message (or per 1,000 "
               "deliveries) is the server's processes over the exact window, shown, never deciding. The two make "
               "different promises: a NOTIFY is transactional — delivered only if and after its transaction commits "
               "(a transaction that only notifies does not wait for its commit record's flush, whatever "
               "`synchronous_commit` says; one that also writes does) — and held for listeners that fall behind "
               "in one queue shared by every listener (8 GB in PostgreSQL's documentation, not measured here: one "
               "stuck listener pins it for all, and when it is full NOTIFY fails at commit); a PUBLISH is "
               "fire-and-forget — no transaction, nothing persisted, a subscriber that is not connected (or is "
               "dropped at its output-buffer limit) misses the message for good. Neither keeps a message for a "
               "listener that was not listening, nor across a server crash, and neither waits for a disk before a "
               "bare publish returns.")

CAPTIONS = {
    "fanout": "Fan-out: published/s, deliveries/s and delivery latency per subscriber count; open-loop rates and "
              "flat out (closed loop). Medians over repetitions; delivered/expected over every run",
    "fanout_head_to_head": "Fan-out head to head, at each point both systems measured: deliveries/s, the server's own "
                           "CPU µs per delivery (median, runs' range; from the server's processes in the run's samples) "
                           "and the verdict class of analysis/verdict.py, on rate only — decided by rate (neither "
                           "side's load the limit: the rates' runs compare against the tie band), by a floor above a "
                           "ceiling (a load-limited side whose worst run beat the other's best beyond the band), or "
                           "not decided (both load-limited, a floor below the other side, the limit not recorded, or "
                           "an offered rate both delivered); the server CPU per delivery is shown, never decides",
    "commit_serialization": "Commit serialization (Postgres): single-row writers alone; in an explicit "
                            "transaction that also selects a message-sized value (the control: the same round "
                            "trips); notifying in that transaction; and beside a separate NOTIFY publisher. What "
                            "NOTIFY costs is notify_in_txn against txn_without_notify (both with the writers on the load's CPU: "
                            "where that CPU saturated, ᶜ, the rates are the writers' floors). NOTIFY's commit lock would cap notifying commits "
                            "near one per WAL flush; the rates here stay below that, so the lock is not shown to bind",
    "idle_listeners": ("Flat-out publishing (one Python publisher, one subscriber, 5-s windows) with idle listeners "
                       "on other channels — in PostgreSQL 16 every NOTIFY signals every listening backend of the "
                       "database, whatever its channel; where the publisher is the limit (client_bound; Redis "
                       "throughout) the rate is its round-trip floor, not the server's. deliveries_per_run: a window "
                       "under 100 holds no p99 (—), its median and slowest are shown; server_pss_mib: the server's "
                       "memory (PSS, all its processes) once the listeners are connected, before the load (page "
                       "tables, kernel stacks and socket buffers are not in PSS: for Postgres's one backend per "
                       "listener a lower bound); pss_per_listener_kib: that against no listeners, per listener"),
    "stuck_subscriber": "A stuck subscriber (subscriber 0 stops reading; Postgres: inside an open transaction). "
                        "queue_full_in_s_extrapolated: when the Postgres notification queue would be full at the "
                        "growth measured during the stall (a straight-line extrapolation, not observed). stall_s 0 is the control: the "
                        "same load with nobody stuck. When others_p99_lag_dominated, the others' p99 is the single "
                        "publisher's own schedule lag (its lateness in sending, not delivery), and says nothing about the stall",
    "payload_limit": "The largest payload each accepts among the sizes tried (the exact error of the first size "
                     "refused; with none refused the limit is only bounded below)",
}
NOTE = ("Every point is one recorded run on a fresh channel. <code>delivered_ratio</code> = deliveries counted by the "
        "subscribers / messages the publishers confirmed × subscribers; <code>sustained</code> = publishers kept "
        "≥ 95 % of the offered rate; <span class='flag'>client-bound</span> = the load workers (publishers and "
        "subscribers, on the load's CPU) ran out of CPU.")


def fanout_chart(table: pd.DataFrame) -> plt.Figure:
    """Deliveries/s and delivery p99 vs publish rate (open loop), one marker per fan-out; a rate
    the publishers did not sustain is a hollow marker the line does not join."""
    rows = table[table.rate != "flat out"].copy()
    rows["rate"] = rows.rate.astype(float)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    fanouts = sorted(rows.subscribers.unique())
    for (label, n, publishers), group in rows.groupby(["variant", "subscribers", "publishers"]):
        # where both deliver every message their points coincide: Redis's drawn larger underneath,
        # Postgres's smaller on top, so neither hides the other
        postgres = label.startswith("pg")
        style = {"color": colour_for(label), "linestyle": line_style_for(label, rows.variant),
                 "marker": MARKERS[fanouts.index(n) % len(MARKERS)], "markersize": 5 if postgres else 9,
                 "zorder": 4 if postgres else 2, "label": f"{label} ×{int(n)}, {int(publishers)} pub."}
        group = group.sort_values("rate")
        held = group.sustained.eq(True).to_numpy(dtype=bool)  # not recorded (None) counts as not sustained
        sustained_line(left, group.rate, group.deliveries_per_s, held, **style)
        sustained_line(right, group.rate, group.delivery_p99_ms, held, **style)
    left.set(xlabel="offered publish rate (msg/s, log)", ylabel="deliveries/s", yscale="log",
             title="Deliveries per second (×n = subscribers)")
    right.set(xlabel="offered publish rate (msg/s, log)", ylabel="delivery p99 (ms)", yscale="log",
              title="Delivery p99 (from intended publish)\nhollow, not joined: publishers did not sustain the rate")
    rates = sorted(rows.rate.unique())
    for ax in (left, right):  # the rates offered, not powers of ten
        ax.set_xscale("log")
        ax.set_xticks(rates, [f"{rate:,.0f}" for rate in rates])
        ax.minorticks_off()
    _finish(right)
    left.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def commit_chart(table: pd.DataFrame) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [f"{r.variant}\n{r.mode}" for r in table.itertuples()]
    ax.bar(labels, table.writer_tps, color=[colour_for(v) for v in table.variant])
    ax.set(ylabel="writer transactions/s", title="Unrelated writers with and without NOTIFY")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def idle_chart(table: pd.DataFrame) -> plt.Figure:
    """One publisher flat out while N listeners wait on other channels: published/s against N
    (left) and the server's memory once they are connected (right), one line per variant. N is
    drawn at even steps (0, 100, 1,000, ...), so the axis is labelled with the counts, not scaled."""
    counts = sorted(table.idle_listeners.unique())
    position = {n: i for i, n in enumerate(counts)}
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for variant, group in table.groupby("variant", sort=True):
        group = group.sort_values("idle_listeners")
        x = group.idle_listeners.map(position)
        style = {"color": colour_for(variant), "linestyle": line_style_for(variant, table.variant), "label": variant}
        spread = [group.published_per_s - group.published_per_s_min, group.published_per_s_max - group.published_per_s] \
            if "published_per_s_min" in group else None  # the runs' range (older tables have none)
        left.errorbar(x, group.published_per_s, yerr=spread, marker=MARKERS[0], capsize=3, **style)
        memory = pd.to_numeric(group.server_pss_mib, errors="coerce")
        if memory.notna().any():
            right.plot(x[memory.notna()], memory.dropna(), marker=MARKERS[1], **style)
    for ax in (left, right):
        ax.set_xticks(range(len(counts)), [f"{n:,.0f}" for n in counts])
        ax.set_xlabel("idle listeners on other channels")
    left.set(ylabel="published messages/s (median, runs' range)", yscale="log",
             title="One Python publisher flat out, one subscriber")
    right.set(ylabel="server PSS, all processes (MiB)", yscale="log",  # Redis's MiB beside Postgres's GiB
              title="Server memory once the listeners are connected")
    left.grid(alpha=0.3)
    right.grid(alpha=0.3)
    _finish(right if right.get_lines() else left)  # the legend beside the last panel drawn
    fig.tight_layout()
    return fig


def captions(tables: dict[str, pd.DataFrame]) -> dict[str, str]:
    """The captions, the head to head's with the terms the fan-out runs recorded (``terms``)."""
    terms = terms_note(tables.get("fanout"))
    return {**CAPTIONS, "fanout_head_to_head": f"{CAPTIONS['fanout_head_to_head']}. {terms}"}


def sections(tables: dict[str, pd.DataFrame], figures: dict[str, list[Path]]) -> tuple[list[Section], list[Section]]:
    headline = [(caption, flag_points(tables[key])) for key, caption in captions(tables).items()
                if key in tables and not tables[key].empty]
    pngs = [path for paths in figures.values() for path in paths if path.suffix == ".png"]
    return ([Section("Pub/sub: tables", [NOTE], headline), Section("Pub/sub: figures", figures=pngs)], [])


def headline(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Flat out and the highest open-loop rate per variant × fan-out: the README's table."""
    fanout = tables.get("fanout", pd.DataFrame())
    if fanout.empty:
        return fanout
    rows = []
    for row in fanout.itertuples():
        mark = " ᶜ" if row.client_bound else ""
        rate = row.rate if row.rate == "flat out" else f"{float(row.rate):,.0f}"
        rate += " (not sustained)" if row.sustained is False else ""
        lag = "" if row.publisher_lag_p99_ms is None or pd.isna(row.publisher_lag_p99_ms) \
            else f"{row.publisher_lag_p99_ms:.2f}"
        runs = f"{row.runs}" + (f" (+{row.failed_runs} failed)" if row.failed_runs else "") \
            + (f", {row.busy_neighbour_runs} with CPU unexplained" if row.busy_neighbour_runs else "")
        rows.append({"variant": row.variant, "subscribers": row.subscribers, "publishers": row.publishers,
                     "offered msg/s": rate, "published/s": row.published_per_s_range,
                     "deliveries/s": f"{row.deliveries_per_s_range}{mark}" + (BACKLOG if _behind(row) else ""),
                     "server CPU µs / delivery": "" if pd.isna(row.server_cpu_ms_per_1k) else f"{row.server_cpu_ms_per_1k:.1f}",
                     "delivery p99 ms": row.delivery_p99_range_ms + (" ˡ" if row.lag_dominated else ""),
                     "publisher lag p99 ms": lag, "delivered/expected": _count_pair(row.delivered, row.expected),
                     "runs": runs})
    return pd.DataFrame(rows)


def _count_pair(delivered, expected) -> str:
    """"148,400/148,400"; "—" where a count was not recorded (a publisher that sent nothing)."""
    counts = [None if v is None or pd.isna(v) else f"{int(v):,}" for v in (delivered, expected)]
    return "—" if None in counts else "/".join(counts)


#: after a row's deliveries/s: its subscribers were still receiving after the window (a word, not
#: a letter: ᵇ means a saturated box in the vector study and the decision matrix)
BACKLOG = " (backlog)"


def _behind(row) -> bool:
    from pglimits_core.workloads.pubsub.tables import BEHIND_PCT

    return row.behind_at_end_pct is not None and not pd.isna(row.behind_at_end_pct) and row.behind_at_end_pct >= BEHIND_PCT


def readme_lines(tables: dict[str, pd.DataFrame], links: str) -> list[str]:
    lines = [f"{HOW_TO_READ} {links}", "", headline(tables).to_markdown(index=False), ""]
    shown = captions(tables)
    for key in ("fanout_head_to_head", "commit_serialization", "idle_listeners", "stuck_subscriber", "payload_limit"):
        table = tables.get(key)
        if table is not None and not table.empty:
            lines += [f"{shown[key]}:", "", table.to_markdown(index=False), ""]
    return lines


SEED = {"published_per_s": (11_700, 14_200), "delivery_p99_ms": (2.0, 1.7)}
SEED_NOTES = ["Pub/sub: the source measured fan-out ×10 on 7 vCPU: Postgres ~11.7k messages/s published (117k "
              "deliveries/s), p99 2.0 ms; Redis ~14.2k/142k, p99 1.7 ms, each p99 beside its published rate "
              "(the load it was taken at, its payload and publisher count are not stated): Redis ahead by ×1.21, "
              "inside this study's ±25 % band. Ours, where the records hold the capacity experiment: the ceiling "
              "at fan-out 10, one 64-byte message per publish, psload's 4 publishers flat out (3 × 30 s; the "
              "lower of published/s and the subscribers' received/s) with each server on one core of its own — "
              "not the source's setup: on 7 vCPU Postgres's publisher and listener backends spread over cores, "
              "here they share one, which weighs against Postgres; Redis runs one thread either way. Our "
              "delivery p99 at the ceiling is a closed loop's, the source's from the intended send: shown, never "
              "judged. In older records: the fan-out sweep's flat-out rows, on 2 cores shared by publishers, 10 "
              "Python subscribers and the server — client-bound, so no ratio is judged there."]


def seed_comparison(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The source's Postgres/Redis ratios beside ours (fan-out 10, flat out, one message per
    publish): the capacity experiment's ceilings where it measured both at fan-out 10, else the
    fan-out sweep's flat-out rows."""
    rows = capacity_seed_rows(tables.get("capacity"))
    return pd.DataFrame(rows) if rows else sweep_seed_comparison(tables)


SEED_FANOUT = 10
SEED_SOURCE = "pub/sub fan-out ×10 (7 vCPU)"


def capacity_seed_rows(capacity: pd.DataFrame | None) -> list[dict]:
    """Published/s and delivery p99 at the ceiling (publishers flat out, 3 steady windows) of
    pg_notify and redis_publish at fan-out 10, judged by the one rule on their Sides; [] without
    both. The delivery p99 is shown beside the source's, never judged: ours is a closed loop's at
    its ceiling, the source's from each message's intended send."""
    from pglimits_core.analysis.seed import bounded_ratio, judge_sides
    from pglimits_core.analysis.verdict import NOT_COMPARABLE, NOT_RECORDED
    from pglimits_core.experiments.capacity_cells import ceiling_side

    if capacity is None or capacity.empty or "subscribers" not in capacity:
        return []
    at = capacity[pd.to_numeric(capacity.subscribers, errors="coerce") == SEED_FANOUT].drop_duplicates("variant")
    pg, redis = (at[at.variant.str.startswith(f"{name} batch=1 ")] for name in ("pg_notify", "redis_publish"))
    if pg.empty or redis.empty:
        return []
    pg, redis = pg.iloc[0], redis.iloc[0]
    a, b = ceiling_side(pg), ceiling_side(redis)
    seed_rate = SEED["published_per_s"][0] / SEED["published_per_s"][1]
    ratio, judged, klass = judge_sides(a, b, seed_rate, seed_rate)
    rows = [_seed_row("published per s (the ceiling: publishers flat out)", "published_per_s",
                      _ceiling_text(a, pg), _ceiling_text(b, redis), bounded_ratio(ratio, a, b), judged, klass)]
    p99s = [_number(row.get("ceiling_delivery_p99_ms")) for row in (pg, redis)]
    # ours is a closed loop's p99 at the ceiling (delivery from the publish), the source's from
    # each message's intended send at a stated rate: shown side by side, never judged
    p99_judged, p99_class = ("not comparable: ours is a closed loop's p99 at its ceiling, the source's is measured "
                             "from the intended send"), NOT_COMPARABLE
    if None in p99s:
        p99_judged, p99_class = "not measured on both sides", NOT_RECORDED
    rows.append(_seed_row("delivery p99 ms (at the ceiling: publishers flat out)", "delivery_p99_ms",
                          None if p99s[0] is None else round(p99s[0], 2), None if p99s[1] is None else round(p99s[1], 2),
                          None, p99_judged, p99_class))
    return rows


def _seed_row(figure: str, metric: str, ours_a, ours_b, ratio: float | str | None, judged: str, klass: str) -> dict:
    seed_pg, seed_redis = SEED[metric]
    return {"source": SEED_SOURCE, "figure": figure, "A / B": "pg_notify batch=1 / redis_publish batch=1",
            "seed A": seed_pg, "seed B": seed_redis, "seed ratio A/B": round(seed_pg / seed_redis, 2),
            "ours A": ours_a, "ours B": ours_b, "our ratio A/B": round(ratio, 2) if isinstance(ratio, float) else ratio,
            "verdict": judged, "verdict class": klass}


def _ceiling_text(side, row: pd.Series) -> str | None:
    """"≥ 12,345 messages/s (12,000–12,600 over 3 × 30-s windows, psload; 10 subscribers)"."""
    if side is None:
        return None
    low, high = side.value_range
    tool = row.get("ceiling_by") if isinstance(row.get("ceiling_by"), str) else "the harness"
    return (f"{'≥ ' if side.floor else ''}{side.value:,.0f} messages/s ({low:,.0f}–{high:,.0f} over "
            f"{int(row.ceiling_runs)} × {float(row.ceiling_s):g}-s windows, {tool}; limit: {side.limit})")


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def sweep_seed_comparison(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Records without the capacity experiment: the fan-out sweep's flat-out rows at fan-out 10."""
    fanout = tables.get("fanout", pd.DataFrame())
    if fanout.empty:
        return pd.DataFrame()
    flat = fanout[(fanout.subscribers == 10) & (fanout.rate == "flat out")]
    flat = flat[flat.publishers == flat.publishers.max()].set_index("variant") if len(flat) else flat
    pg, redis = "pg_notify batch=1", "redis_publish batch=1"
    rows = []
    for metric, (seed_pg, seed_redis) in SEED.items():
        a = flat[metric].get(pg) if metric in flat else None
        b = flat[metric].get(redis) if metric in flat else None
        ours = a / b if a is not None and b and not pd.isna(a) and not pd.isna(b) else None
        bound = any(v is True or v is np.True_ for v in flat.client_bound) if len(flat) else False
        busy = int(flat.busy_neighbour_runs.sum()) if "busy_neighbour_runs" in flat else 0
        rows.append({"source": SEED_SOURCE, "figure": metric.replace("_", " "),
                     "A / B": f"{pg} / {redis}", "seed A": seed_pg, "seed B": seed_redis,
                     "seed ratio A/B": round(seed_pg / seed_redis, 2),
                     "ours A": None if a is None else round(float(a), 2), "ours B": None if b is None else round(float(b), 2),
                     "our ratio A/B": None if ours is None else round(ours, 2),
                     "verdict": verdict(seed_pg / seed_redis, ours, bound, busy)})
    return pd.DataFrame(rows)


def verdict(seed: float, ours: float | None, client_bound: bool, busy_runs: int = 0) -> str:
    """Not judged where our clients set the rate or CPU went unexplained; otherwise the one
    agreement rule every workload uses (``analysis.seed``)."""
    if ours is None:
        return "not measured on both sides"
    if client_bound:
        return "inconclusive: client-bound (our Python subscribers set the rate, not the servers)"
    if busy_runs:
        return f"inconclusive: CPU outside client and server in {busy_runs} of the runs compared"
    # the source gives one ratio, not a range; this table has always said plain "differ"
    return verdict_short(ours, seed)
