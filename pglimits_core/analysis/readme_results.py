"""The README's results block, generated from committed run records — never typed by hand.

``python -m pglimits_core.record.export --profile reference`` copies the runs into
``data/results/reference/runs``; ``python -m pglimits_core.analysis.readme_results --profile
reference`` then rewrites the text
between the two markers in README.md: the hardware line, a headline table per queue variant
(median over repetitions with min–max), the figures, and links to the full tables and report.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from pglimits_core.analysis import queue as queue_tables
from pglimits_core.analysis.runs import load_records
from pglimits_core.config import PROJECT_ROOT
from pglimits_core.record.export import committed_runs_root

START, END = "<!-- results:start -->", "<!-- results:end -->"
FIGURES = ["queue-consumer-sweep", "queue-steady-state", "queue-latency", "queue-cliff", "queue-dead-tuples"]


def hardware_line(records: list[dict]) -> str:
    manifest = max((r["manifest"] for r in records), key=lambda m: m["run_id"])
    host = manifest.get("host", {})
    fsync = host.get("fsync_8k", {})
    return (f"{host.get('cpu_model', '?')}, {host.get('logical_cores', '?')} vCPU shared by clients and "
            f"servers, {host.get('ram_total_bytes', 0) / 2**30:.0f} GiB RAM, fsync of 8 kB median "
            f"{fsync.get('median_us', float('nan')):.0f} µs; git {str(manifest.get('git', {}).get('sha'))[:10]}")


def _spread(table: pd.DataFrame, consumers: int) -> pd.Series:
    rows = table[table.consumers == consumers].set_index("variant")
    text = rows.apply(lambda r: "ran out of backlog" if pd.isna(r.jobs_per_s) else
                      f"{r.jobs_per_s:,.0f} ({r.min_jobs_per_s:,.0f}–{r.max_jobs_per_s:,.0f})"
                      + (" ᶜ" if r.client_bound else ""), axis=1)
    return text


def headline_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per variant: burn-down and steady-state jobs/s at the largest consumer count, e2e p99 at
    each offered rate (or 'not sustained'), the cliff, and the crash drill."""
    top = int(tables["throughput"].consumers.max())
    head = pd.DataFrame({f"burn-down jobs/s, {top} consumers": _spread(tables["throughput"], top)})
    if not tables["steady"].empty:
        head[f"steady-state jobs/s, {top} consumers"] = _spread(tables["steady"], top)
    for rate, group in tables["latency"].groupby("offered_per_s"):
        med = group.groupby("variant").agg(p99=("e2e_p99_ms", "median"), ok=("sustained", "all"))
        head[f"e2e p99 ms at {rate:,.0f}/s"] = med.apply(lambda r: f"{r.p99:.2f}" if r.ok else "not sustained", axis=1)
    if not tables["cliff"].empty:
        head["highest sustained rate (cliff), msg/s"] = tables["cliff"].set_index("variant").sustainable_per_s.map(
            lambda rate: f"{rate:,.0f}")
    return head.reset_index().rename(columns={"index": "variant"}).fillna("—")


def results_block(profile: str) -> str:
    """From the *committed* records (``data/results/<profile>/runs``), so a fresh clone can
    regenerate exactly this block."""
    root = committed_runs_root(profile)
    records = load_records("queue", root)
    tables = queue_tables.queue_report(profile, str(root))
    lines = [START, f"### Queue results (profile `{profile}`, generated from its run records)", "",
             f"Hardware: {hardware_line(records)}.", "",
             "Median over repetitions (min–max); ᶜ = client-bound (the Python harness, not the server, "
             "was the limit — see `pglimits bench harness`). Full tables: `data/results/tables/`; "
             "report: `data/results/report.html`.", "",
             headline_table(tables).to_markdown(index=False), ""]
    recovery = tables.get("recovery")
    if recovery is not None and not recovery.empty:
        lines += ["Crash drill (SIGKILL mid-load, restart, time to the first successful claim):", "",
                  recovery[["variant", "kill_target", "confirmed", "lost", "recovery_s", "wal_to_replay_mb", "durable"]]
                  .round({"recovery_s": 3}).to_markdown(index=False), "",
                  "Postgres restart time is WAL replay: `wal_to_replay_mb` is the WAL written since the last "
                  "checkpoint when the server was killed (bounded by `checkpoint_timeout`/`max_wal_size`).", ""]
    lines += [f"![{name}](figures/{name}.png)" for name in FIGURES if (PROJECT_ROOT / "figures" / f"{name}.png").exists()]
    return "\n".join([*lines, END])


def update_readme(block: str, readme: Path = PROJECT_ROOT / "README.md") -> None:
    text = readme.read_text()
    if START in text:
        before, rest = text.split(START, 1)
        text = before + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip() + "\n\n## Results\n\n" + block + "\n"
    readme.write_text(text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="regenerate README.md's results block")
    parser.add_argument("--profile", default="reference")
    update_readme(results_block(parser.parse_args().profile))
