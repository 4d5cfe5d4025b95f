"""QPS at matched recall: where each engine's recall curve crosses each target recall.

Both engines can reach a target at the same swept ef, so "the smallest ef reaching it" compares
the grid, not the engines. Each engine's figures are interpolated linearly in recall between the
two swept ef values that bracket the target: the last ef below it and the first at or above it.
Where the smallest ef swept already reaches the target there is nothing below to interpolate
from: that point's figures are shown as measured, and said so (``qps_is``). The exact scan has
no ef: measured.

The figures that vary from run to run (QPS, the server's and the client's CPU per query, the
box's CPU) are interpolated per repetition: repetition r at the lower ef with repetition r at the
upper one (the plan sweeps in rounds, one per repetition, so the two ran in the same round),
giving one value per repetition at the target. The row shows their median, as the sweep shows
the median over repetitions, and their lowest and highest (``qps_min``/``qps_max``): the spread
of runs that happened, which is what the verdict's worst case reads. Interpolating the bracketing
points' extremes instead (min with min, max with max) pairs runs of different rounds, a spread
no run pairing had. A repetition missing at either bracket is dropped; ``runs`` counts the
repetitions used (records without a recorded repetition number their point's runs in time).

Every row carries its own verdicts: ``client_bound`` (recorded per run; set if any run of either
bracketing point was client-bound), ``limit`` (which side set the limit: both bracketing points'
runs together, ``analysis.verdict.combined_limit``) and ``box_saturated`` (client + server CPU
at or above ``SATURATED_SHARE`` of the box's cores). ``MARKS`` defines the two markers
``qps_text`` carries for the first and the last. The verdict class of Qdrant against pgvector at
each (target, clients) comes from ``analysis.verdict.decide`` on the ``side`` of each row — the
one place a vectors row becomes a ``Side`` (``decision.py`` too).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pglimits_core.analysis.runs import SATURATED_SHARE, trusted
from pglimits_core.analysis.verdict import (
    Side,
    combined_limit,
    decide,
    limit_from_record,
    sweep_class,
)

TARGETS = (0.90, 0.95, 0.99)
PAIR = ("qdrant hnsw", "pgvector hnsw")  # the head-to-head: A / B of the ratio and the verdict
POINT = ["variant", "ef", "clients"]
#: each run's figures, read at the target repetition by repetition (median, lowest, highest shown)
PER_RUN = ("qps", "server_cpu_ms", "client_cpu_ms", "box_cpu_pct")
SPREAD = ("qps", "server_cpu_ms")  # their lowest and highest: the runs' range the verdict reads
#: the same figures as the sweep's points give them (median over the runs): used only where no
#: repetition was measured at both bracketing ef values (then no spread is claimed)
POINT_MEDIANS = {"qps": "qps", "server_cpu_ms": "server_cpu_ms_per_query", "client_cpu_ms": "client_cpu_ms_per_query",
                 "box_cpu_pct": "box_cpu_pct"}
CLIENT_BOUND_MARK, SATURATED_MARK = "ᶜ", "ᵇ"
#: what the two markers of ``qps_text`` mean: every caption that shows them uses this text
MARKS = (f"{CLIENT_BOUND_MARK} = client-bound (the Python client, not the server, was the limit in a run of "
         f"either bracketing point); {SATURATED_MARK} = the box was saturated (client + server CPU, median over "
         f"the runs, at least {SATURATED_SHARE * 100:.0f} % of its cores: the rate measures the box, not the server)")


def matched_table(sweep: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per target recall, client count and variant: the figures where the variant's recall curve
    crosses the target (see the module), from the sweep's points and (``runs``: the sweep's run
    rows) their runs, repetition by repetition; "not reached" is a result. Without ``runs`` the
    points' medians are interpolated and no spread is claimed."""
    if sweep.empty:
        return pd.DataFrame()
    figures = run_figures(runs)
    out = []
    for clients in sorted(sweep.clients.unique()):
        at = sweep[sweep.clients == clients]
        for target in TARGETS:
            for variant, group in at.groupby("variant", sort=False):
                row = {"target_recall": target, "clients": int(clients), "variant": variant}
                out.append({**row, **(crossing(group, target, figures) or _not_reached(group))})
    return with_verdicts(pd.DataFrame(out))


def crossing(group: pd.DataFrame, target: float, figures: pd.DataFrame | None = None) -> dict[str, Any] | None:
    """One variant's figures at ``target`` recall from its points at one client count and their
    runs' ``figures`` (``run_figures``; None: the points' medians only). None: no point reaches it.

    The interpolation weight comes from each point's recall as the sweep gives it (the median over
    the repetitions that scored it), one weight for every repetition: recall is scored at the
    first client count only (the other counts query the same graph and have none of their own),
    and every repetition queries the same graph, so the repetitions' recalls agree
    (``recall_spread`` 0) and one crossing reads each repetition at the same recall."""
    ordered = group.sort_values("ef", na_position="first").reset_index(drop=True)
    reached = ordered[ordered.recall_mean >= target]
    if reached.empty:
        return None
    at = reached.index[0]
    hi = ordered.loc[at]
    below = ordered.loc[:at - 1].dropna(subset=["recall_mean", "ef"]) if at else ordered.iloc[0:0]
    if pd.isna(hi.ef) or below.empty:
        how = "measured (exact scan, no ef)" if pd.isna(hi.ef) else f"measured at ef={hi.ef:.0f} (the smallest ef swept)"
        values = {**_over_runs(per_repetition(figures, hi), hi, hi, 1.0), "recall_worst5_mean": hi.get("recall_worst5_mean")}
        return _figures(hi, [hi], values, hi.recall_mean, None, how + _paired(values, hi))
    lo = below.iloc[-1]
    weight = (target - lo.recall_mean) / (hi.recall_mean - lo.recall_mean)
    values = {**_over_runs(per_repetition(figures, hi, lo, weight), lo, hi, weight),
              "recall_worst5_mean": _between(lo.get("recall_worst5_mean"), hi.get("recall_worst5_mean"), weight)}
    how = f"interpolated between ef={lo.ef:.0f} and ef={hi.ef:.0f}"
    return _figures(hi, [lo, hi], values, target, lo.ef, how + _paired(values, lo, hi))


def _paired(values: dict[str, Any], *points: pd.Series) -> str:
    """What ``qps_is`` adds when fewer repetitions were read than a bracketing point measured."""
    used, measured = values.get("runs"), max((_count(p.get("runs")) for p in points), default=0)
    if used == 0:
        return " (no repetition measured at both ef: the points' medians, no spread over the runs)"
    return f" ({used} of {measured} repetitions: a repetition missing at either ef is dropped)" if used and used < measured else ""


def _count(value: Any) -> int:
    return 0 if value is None or pd.isna(value) else int(value)


def run_figures(runs: pd.DataFrame | None) -> pd.DataFrame | None:
    """One row per sweep run: its point, its repetition, its QPS and (where its CPU split is
    trusted) the server's and client's CPU ms per query and the box's CPU (None: no runs)."""
    if runs is None or runs.empty or not {*POINT, "ops_per_s"} <= set(runs.columns):
        return None
    rows = runs.dropna(subset=["ops_per_s"])
    rows = rows.assign(ef=pd.to_numeric(rows.ef, errors="coerce").astype(float), repetition=repetitions(rows))
    figures = pd.concat([rows[[*POINT, "repetition"]], per_run_cpu(rows)], axis=1)
    figures = figures.assign(qps=pd.to_numeric(rows.ops_per_s, errors="coerce"))
    # a repetition recorded twice at one point (a re-run): the later run stands
    return figures.drop_duplicates([*POINT, "repetition"], keep="last")


def repetitions(rows: pd.DataFrame) -> pd.Series:
    """Each run's repetition as recorded (every sweep run the study has written records it);
    runs without one are numbered in time within their point (run ids start with their start
    time), which pairs the k-th run at each ef — right while no run of a point is missing."""
    if "repetition" in rows and rows.repetition.notna().all():
        return pd.to_numeric(rows.repetition)
    in_time = rows.sort_values("run_id", kind="stable") if "run_id" in rows else rows
    return in_time.groupby(POINT, dropna=False, sort=False).cumcount().reindex(rows.index)


def per_run_cpu(runs: pd.DataFrame) -> pd.DataFrame:
    """Each run's server and client CPU per query (ms: its median CPU over its QPS) and the CPU
    the two took together (% of one core); NaN where the run's CPU split is not trusted (a busy
    neighbour, or the run's own "cannot tell")."""
    believed = pd.Series(runs.index.isin(trusted(runs).index), index=runs.index)
    qps = pd.to_numeric(runs.ops_per_s, errors="coerce").where(lambda q: q > 0)

    def pct(column: str) -> pd.Series:
        values = pd.to_numeric(runs[column], errors="coerce") if column in runs else pd.Series(float("nan"), index=runs.index)
        return values.where(believed)

    server, client = pct("server_cpu_pct"), pct("client_cpu_pct")
    return pd.DataFrame({"server_cpu_ms": server / 100 * 1000 / qps, "client_cpu_ms": client / 100 * 1000 / qps,
                         "box_cpu_pct": server + client}, index=runs.index)


def per_repetition(figures: pd.DataFrame | None, hi: pd.Series, lo: pd.Series | None = None,
                   weight: float = 1.0) -> pd.DataFrame | None:
    """One row per repetition measured at both bracketing points: each per-run figure read at the
    target, repetition r at ``lo`` with repetition r at ``hi``. Where ``hi``'s recall is the target
    itself (weight 1), ``lo`` weighs nothing and need not have been measured. None: no runs."""
    if figures is None:
        return None
    upper = _runs_at(figures, hi)
    if lo is None or weight >= 1:
        return upper
    both = _runs_at(figures, lo).join(upper, how="inner", lsuffix="_lo", rsuffix="_hi")
    return pd.DataFrame({name: both[f"{name}_lo"] + weight * (both[f"{name}_hi"] - both[f"{name}_lo"])
                         for name in PER_RUN}, index=both.index)


def _runs_at(figures: pd.DataFrame, point: pd.Series) -> pd.DataFrame:
    ef = figures.ef.isna() if pd.isna(point.ef) else figures.ef == float(point.ef)
    rows = figures[(figures.variant == point.variant) & (figures.clients == point.clients) & ef]
    return rows.set_index("repetition")[list(PER_RUN)]


def _over_runs(runs: pd.DataFrame | None, lo: pd.Series, hi: pd.Series, weight: float) -> dict[str, Any]:
    """The per-run figures' median over the repetitions, and the lowest and highest of those the
    verdict reads (``SPREAD``); ``runs`` counts the repetitions. With none paired: the points'."""
    qps = runs.qps.dropna() if runs is not None else pd.Series(dtype=float)
    if qps.empty:
        return _point_medians(lo, hi, weight, None if runs is None else 0)
    out: dict[str, Any] = {"runs": len(qps), "cpu_runs": int(runs["server_cpu_ms"].notna().sum())}
    for name in PER_RUN:
        values = runs[name].dropna()
        out[name] = float(values.median()) if len(values) else None
        if name in SPREAD:
            out |= {f"{name}_min": float(values.min()) if len(values) else None,
                    f"{name}_max": float(values.max()) if len(values) else None}
    return out


def _point_medians(lo: pd.Series, hi: pd.Series, weight: float, runs: int | None) -> dict[str, Any]:
    """The points' medians interpolated, no spread: no runs to pair (or none paired). Where the
    upper point alone gives the figures (weight 1), its runs' own extremes are runs that happened."""
    values: dict[str, Any] = {name: _between(lo.get(column), hi.get(column), weight)
                              for name, column in POINT_MEDIANS.items()}
    if weight < 1:
        return {**values, "runs": runs}
    own = {"qps_min": "qps_min", "qps_max": "qps_max", "server_cpu_ms_min": "server_cpu_ms_min",
           "server_cpu_ms_max": "server_cpu_ms_max", "runs": "runs"}
    return {**values, **{name: hi.get(column) for name, column in own.items()}}


def _between(low: Any, high: Any, weight: float) -> float | None:
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return None
    return float(low) + weight * (float(high) - float(low))


def _figures(hi: pd.Series, points: list[pd.Series], values: dict[str, Any], recall: float, ef_low: Any,
             how: str) -> dict[str, Any]:
    bounds = [p.get("client_bound") for p in points if p.get("client_bound") is not None
              and not pd.isna(p.get("client_bound"))]
    client_bound = any(bool(b) for b in bounds) if bounds else None
    cores = hi.get("cores")
    box = values.get("box_cpu_pct")
    saturated = None if box is None or cores is None or pd.isna(cores) else bool(box >= SATURATED_SHARE * 100 * cores)
    us = {f"server_cpu_us_{key}": None if values.get(name) is None else values[name] * 1000
          for key, name in (("per_query", "server_cpu_ms"), ("min", "server_cpu_ms_min"), ("max", "server_cpu_ms_max"))}
    qps, low, high = values["qps"], values.get("qps_min"), values.get("qps_max")
    return {"ef": hi.ef, "ef_low": ef_low, "qps_is": how, "recall_mean": recall, "qps": qps,
            "qps_min": low, "qps_max": high, "qps_spread": high / low if low and high else None,
            "runs": values.get("runs"), "server_cpu_runs": values.get("cpu_runs"), "recall_worst5_mean": values.get("recall_worst5_mean"), **us,
            "client_cpu_ms_per_query": values.get("client_cpu_ms"), "box_cpu_pct": box, "cores": cores,
            "client_bound": client_bound, "limit": combined_limit(limit_from_record(p) for p in points),
            "box_saturated": saturated, "qps_text": qps_text(qps, client_bound, saturated)}


def qps_text(qps: float, client_bound: bool | None, saturated: bool | None) -> str:
    """"2,615 ᶜ ᵇ": the QPS with the markers ``MARKS`` defines."""
    return (f"{qps:,.0f}" + (f" {CLIENT_BOUND_MARK}" if client_bound else "")
            + (f" {SATURATED_MARK}" if saturated else ""))


def _not_reached(group: pd.DataFrame) -> dict[str, Any]:
    best = group.recall_mean.max()
    return {"ef": None, "ef_low": None, "qps_is": None, "recall_mean": None, "qps": None,
            "qps_text": f"not reached (best {best:.3f})" if pd.notna(best) else "not scored"}


def server_us(row: pd.Series, key: str = "per_query") -> float | None:
    """Server CPU µs per query of a matched row (older tables gave ms)."""
    for column, scale in ((f"server_cpu_us_{key}", 1.0), (f"server_cpu_ms_{key}", 1000.0)):
        value = row.get(column)
        if value is not None and not pd.isna(value):
            return float(value) * scale
    return None


def side(row: pd.Series | None) -> Side | None:
    """A matched row as one side of ``analysis.verdict.decide``: its QPS and the runs' range,
    which side set the limit, and its server CPU per query (printed beside the cell only)."""
    if row is None:
        return None
    qps_min, qps_max = row.get("qps_min"), row.get("qps_max")
    return Side(str(row["variant"]), float(row["qps"]), limit=limit_from_record(row),
                server_cpu_us_per_op=server_us(row),
                value_range=None if qps_min is None or pd.isna(qps_min) else (float(qps_min), float(qps_max)))


def _reached(rows: pd.DataFrame) -> pd.Series | None:
    return rows.iloc[0] if len(rows) and pd.notna(rows.qps.iloc[0]) else None


def with_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """Qdrant's QPS over pgvector's at each (target, clients) where both reached the target, and
    the verdict class of that comparison (on Qdrant's row, as the ratio)."""
    ratios, classes = [], []
    for _, row in table.iterrows():
        same = table[(table.target_recall == row.target_recall) & (table.clients == row.clients)]
        a, b = (_reached(same[same.variant == v]) for v in PAIR)
        paired = row.variant == PAIR[0] and a is not None and b is not None
        ratios.append(round(a.qps / b.qps, 3) if paired and b.qps else None)
        classes.append(sweep_class(decide(side(a), side(b)).klass) if paired else None)
    return table.assign(ef=table.ef.astype("Int64"), ef_low=table.ef_low.astype("Int64"),
                        qdrant_over_pgvector=ratios, verdict=classes, qdrant_over_this=gaps_to_qdrant(table))


def gaps_to_qdrant(table: pd.DataFrame) -> list[float | None]:
    """Each other row's gap: Qdrant's QPS over its own at the same (target, clients), where both
    reached the target — how far each Postgres index (PG 16's, PG 17's pgvector 0.8, DiskANN) is."""
    gaps = []
    for _, row in table.iterrows():
        same = table[(table.target_recall == row.target_recall) & (table.clients == row.clients)]
        qdrant = _reached(same[same.variant == PAIR[0]])
        mine = row.qps if row.variant != PAIR[0] and row.qps is not None and not pd.isna(row.qps) else None
        gaps.append(round(qdrant.qps / mine, 3) if qdrant is not None and mine else None)
    return gaps
