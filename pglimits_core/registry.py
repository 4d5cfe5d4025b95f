"""The workload registry: every study the project runs, and everything the rest of the code needs
to know about it. ``run_all.py``, the profiles, the report, the README block and the notebooks
loop over ``workloads()``; none of them names a workload.

Adding a workload is one package (its profile section, ``plan``, tables, charts, report and
README text, in a ``Workload``), one line in ``WORKLOADS`` and one notebook. Outside the
repository (a plugin, or a test's toy workload) ``PGLIMITS_WORKLOADS="name=module:ATTR;..."``
adds entries after the built-in ones.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pglimits_core.errors import PGLimitsError

# name (= its profile section and `run_all.py --only` name) -> "module:attribute", in study order
WORKLOADS: dict[str, str] = {
    "queue": "pglimits_core.workloads.queue.workload:WORKLOAD",
    "search": "pglimits_core.workloads.search.workload:WORKLOAD",
    "pubsub": "pglimits_core.workloads.pubsub.workload:WORKLOAD",
    "vectors": "pglimits_core.workloads.vectors.workload:WORKLOAD",
    # last: its bystanders reuse the search and vector studies' data and the queue study's rate
    "interference": "pglimits_core.workloads.interference.workload:WORKLOAD",
}
EXTRA_ENV = "PGLIMITS_WORKLOADS"


@dataclass(frozen=True)
class Chart:
    """One figure of a workload: drawn from table ``table`` by ``draw`` when its column
    ``needs`` has data (an all-blank chart says nothing), saved as ``name``.png/.svg."""

    table: str
    name: str
    draw: Callable[[Any], Any]
    needs: str
    #: the table a notebook shows it under (default: the one it is drawn from)
    under: str = ""
    #: what to see in it, in a sentence or two (the report's and docs/RESULTS.md's caption): the
    #: reading, never a number — the numbers are the records'
    caption: str = ""


@dataclass(frozen=True)
class Workload:
    """A study: what its profile section looks like, what it measures, how it is shown.

    - ``section``: the pydantic model of its profile section (``configs/profiles/*.yaml``).
    - ``plan(section, profile) -> list[studies.study.Point]``: every point, in order; the same
      plan tells the report what was asked for.
    - ``frame(records) -> DataFrame``: one tidy row per run (and role/phase) of its run records.
    - ``tables(frame) -> dict[str, DataFrame]``: every table, by key.
    - ``charts``: which tables are drawn, and how.
    - ``report_sections(tables, figures) -> (results, reference)``: report sections; reference
      material goes to the end of the report.
    - ``readme_lines(tables) -> list[str]``: its part of the README results block.
    - ``seed_comparison(tables) -> DataFrame``: the source studies' ratios beside ours (optional),
      with ``seed_notes`` saying how to read them.
    - ``prepare(section, profile)``: checks (and builds) what the study needs before any server
      starts, e.g. its dataset; a ``PGLimitsError`` there stops the study as one line (optional).
    - ``server_options(section) -> {server: {option: value}}``: how its servers are started
      (e.g. a JVM heap); each server's description records them (optional).
    - ``require_servers``: a planned server that cannot start stops the study with its reason
      (exit != 0) instead of being listed as unavailable while the others run.
    - ``after_restart(server, run)``: restores what a server that died mid-study lost (optional;
      ``studies.watch`` restarts it on its own data directory first).
    - ``decisions(tables) -> list[analysis.decision.Cell]``: its cells of the decision matrix,
      the best Postgres design against the dedicated system per scale and target (optional).
    """

    name: str
    title: str
    notebook: str
    section: type
    plan: Callable[[Any, Any], list[Any]]
    frame: Callable[[list[dict[str, Any]]], Any]
    tables: Callable[[Any], dict[str, Any]]
    charts: tuple[Chart, ...] = ()
    report_sections: Callable[[dict[str, Any], dict[str, list[Any]]], tuple[list[Any], list[Any]]] | None = None
    readme_lines: Callable[[dict[str, Any]], list[str]] | None = None
    #: what its capacity counts per second ("jobs/s"): the results page's capacity block, first
    capacity_unit: str = "items/s"
    seed_comparison: Callable[[dict[str, Any]], Any] | None = None
    seed_notes: list[str] = field(default_factory=list)
    prepare: Callable[[Any, Any], None] | None = None
    server_options: Callable[[Any], dict[str, dict[str, Any]]] | None = None
    require_servers: bool = False
    #: ``after_restart(server, run)``: a server that died mid-study was restarted on its own
    #: data; bring back the state the next points need (reload, rebuild) — optional
    after_restart: Callable[[str, Any], None] | None = None
    #: ``decisions(tables)``: its cells of the decision matrix (``analysis.decision``) — optional
    decisions: Callable[[dict[str, Any]], list[Any]] | None = None
    #: ``extension_decisions(tables)``: the same cells with the Postgres extensions (PostgreSQL
    #: 17's designs) among Postgres's side — optional; ``analysis.extensions`` sets them beside
    extension_decisions: Callable[[dict[str, Any]], list[Any]] | None = None


def _entries() -> dict[str, str]:
    entries = dict(WORKLOADS)
    for item in filter(None, os.environ.get(EXTRA_ENV, "").split(";")):
        name, _, target = item.partition("=")
        if not name or ":" not in target:
            raise PGLimitsError(f"{EXTRA_ENV} entry {item!r} is not name=module:ATTR",
                                f"fix {EXTRA_ENV}, e.g. toy=my_package.workload:WORKLOAD")
        entries[name.strip()] = target.strip()
    return entries


def names() -> list[str]:
    return list(_entries())


def workload(name: str) -> Workload:
    """The workload registered as ``name``; a one-line error listing the known ones otherwise."""
    entries = _entries()
    if name not in entries:
        raise PGLimitsError(f"unknown workload {name!r}", f"use one of: {', '.join(entries)}")
    module_name, attribute = entries[name].split(":")
    found = getattr(importlib.import_module(module_name), attribute)
    if found.name != name:
        raise PGLimitsError(f"workload registered as {name!r} calls itself {found.name!r}",
                            "make the registry key and Workload.name agree")
    return found


def workloads() -> list[Workload]:
    """Every registered workload, in study order."""
    return [workload(name) for name in _entries()]


def figure_captions() -> dict[str, str]:
    """Every registered chart's caption, by figure name (the report and docs/RESULTS.md show it)."""
    return {chart.name: chart.caption for w in workloads() for chart in w.charts if chart.caption}


def with_capacity(capacity: Callable[[Any], list[Any]], others: Callable[..., list[Any]],
                  *always: Callable[[Any], list[Any]]) -> Callable[..., list[Any]]:
    """A workload's matrix cells: its capacity cells (the headline: capacity at each target and
    the ceilings, from steady windows) where its records have them; only without them, the cells
    of its older sweeps (short windows: indicative, never decided). The sweeps' tables stay, with
    their curves; a cell they would add beside the capacity cells could decide nothing. Then the
    cells of ``always``, which answer other questions (a filtered search's recall, a footprint)."""
    def decisions(tables: Any, *args: Any, **kwargs: Any) -> list[Any]:
        headline = capacity(tables) or others(tables, *args, **kwargs)
        return headline + [cell for extra in always for cell in extra(tables)]
    return decisions
