"""The ``pglimits`` command: servers up/status/down/install, doctor, smoke.

Every user-fixable problem surfaces as one line on stderr and exit code 2 (see errors.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import typer
from rich.console import Console
from rich.table import Table

from pglimits_core.config import repo_relative
from pglimits_core.errors import PGLimitsError
from pglimits_core.servers import fleet as fleet_mod
from pglimits_core.servers import ownership
from pglimits_core.servers.base import Server
from pglimits_core.servers.registry import SERVERS, server_class, validate_names

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="PGLimits: how far one tuned PostgreSQL 16 replaces dedicated systems.\n\n"
                       "Run the study: `make study` (the quick profile end to end: servers, datasets, every "
                       "notebook, figures and the report), `make study PROFILE=full ONLY=queue`, or "
                       "`python run_all.py --profile full --only queue [--resume]`. Read the results: "
                       "README.md, docs/RESULTS.md and the report, data/results/<machine>/<profile>/report.html "
                       "(`pglimits results open`; `make results` exports a sitting and rebuilds them from the "
                       "committed records: `pglimits results`). The commands below manage the servers, "
                       "datasets, benchmarks and results one at a time.")
servers_app = typer.Typer(no_args_is_help=True, help="Start, inspect and stop the real servers.")
app.add_typer(servers_app, name="servers")
console = Console()
CORE_SERVERS = ["postgres", "redis", "sqlite"]
# what --profile accepts (profiles.profile_path; not imported here, so `pglimits` starts fast)
PROFILE_FORMS = "a name (quick, quick.yaml) or a path (configs/profiles/quick.yaml, /abs/path/x.yaml)"


def _parse_external(items: list[str]) -> dict[str, str]:
    external = {}
    for item in items:
        name, sep, url = item.partition("=")
        if not sep or not url:
            raise PGLimitsError(f"--external {item!r} is not NAME=URL",
                                "e.g. --external postgres='host=db port=5432 user=postgres dbname=pglimits'")
        external[name] = url
    return external


def _parse_ports(items: list[str]) -> dict[str, dict[str, int]]:
    options = {}
    for item in items:
        name, _, port = item.partition("=")
        if not port.isdigit():
            raise PGLimitsError(f"--port {item!r} is not NAME=PORT", "e.g. --port postgres=5433")
        options[name] = {"port": int(port)}
    return options


def _versions_table(fleet: fleet_mod.Fleet) -> Table:
    table = Table("server", "version", "endpoint", "pids")
    for name, server in fleet.servers.items():
        endpoint = fleet.endpoints[name]
        table.add_row(name, str(server.describe().get("version")), endpoint.url,
                      " ".join(map(str, endpoint.pids)) or "-")
    for name, reason in fleet.unavailable.items():
        table.add_row(name, "[red]unavailable[/red]", reason, "-")
    return table


@servers_app.command("up")
def servers_up(
    names: list[str] = typer.Argument(None, help=f"servers to start (default: {' '.join(CORE_SERVERS)}); known: {', '.join(SERVERS)}"),
    detach: bool = typer.Option(False, help="leave them running for notebooks; stop with `servers down`"),
    external: list[str] = typer.Option([], help="NAME=URL: use a server you run instead of starting one"),
    port: list[str] = typer.Option([], help="NAME=PORT: bind that server to this port (default: a free one)"),
) -> None:
    """Start servers on 127.0.0.1. Without --detach they run until Ctrl-C, then all stop."""
    if fleet_mod.read_state():
        raise PGLimitsError("servers from an earlier `servers up --detach` are recorded",
                            "run `pglimits servers down` first")
    ownership.claim_ownership(take_over=True)
    fleet = fleet_mod.Fleet(names or CORE_SERVERS, external=_parse_external(external),
                            options=_parse_ports(port), record_state=True)
    with fleet:
        console.print(_versions_table(fleet))
        if detach:
            fleet.servers.clear()  # hand them over to `servers down`; nothing is stopped here
            fleet.record_state = False
            console.print("running detached; stop them with: pglimits servers down")
            return
        console.print("servers up; press Ctrl-C to stop them all")
        fleet.wait_while_running()


@servers_app.command("status")
def servers_status() -> None:
    """Show servers recorded by `servers up --detach` and whether they answer, and any process
    of this checkout left running by a killed run (an orphan)."""
    _print_orphans(ownership.orphans())
    recorded = fleet_mod.read_state()
    if not recorded:
        console.print("no servers recorded as running")
        return
    table = Table("server", "version", "endpoint", "pids", "answers")
    alive = fleet_mod.running_endpoints()
    for name, endpoint in recorded.items():
        table.add_row(name, _answered_version(name, endpoint.url) if name in alive else "-", endpoint.url,
                      " ".join(map(str, endpoint.pids)) or "-",
                      "[green]yes[/green]" if name in alive else "[red]no[/red]")
    console.print(table)


def _answered_version(name: str, url: str) -> str:
    """The version the running server reports about itself (not the one we meant to install)."""
    try:
        return str(server_class(name).describe_url(url).get("version") or "?")
    except Exception as exc:  # a server that answers health but not describe: say so, do not fail
        return f"? ({type(exc).__name__})"


@servers_app.command("down")
def servers_down() -> None:
    """Stop every server recorded by `servers up --detach`, and every orphan of this checkout."""
    stopped = fleet_mod.stop_recorded()
    found = ownership.stop_orphans()
    if found:
        console.print(ownership.summary(found))
    console.print(f"stopped: {', '.join(stopped)}" if stopped else "no recorded servers were running")


def _print_orphans(found: list[ownership.Tracked]) -> None:
    if not found:
        return
    table = Table("orphan pid", "process", "its run (owner pid, gone)")
    for tracked in found:
        table.add_row(str(tracked.pid), tracked.name, str(ownership.owner_pid(tracked.owner)))
    console.print("[red]processes of this checkout left by a killed run[/red] (stop them: pglimits servers down)")
    console.print(table)


@servers_app.command("install")
def servers_install(names: list[str] = typer.Argument(None, help="default: all")) -> None:
    """Obtain the server binaries (pinned, checksummed); idempotent."""
    for name in validate_names(names or list(SERVERS)):
        kind = server_class(name)
        if kind.install.__func__ is Server.install.__func__:  # comes with the system (apt, stdlib)
            problems = kind.missing()
            console.print(f"{name}: nothing to install" + (f" — {problems[0][0]}" if problems else ""))
            continue
        # install() is idempotent and also finishes what missing() does not look at (Postgres'
        # extension and OS user), so it always runs; the line only says which case this is
        console.print(f"installing {name} ..." if kind.missing() else f"{name}: installed; checking")
        kind.install()


@app.command()
def doctor() -> None:
    """What is installed, what is missing, and the command that installs it."""
    table = Table("server", "status", "fix")
    missing_any = False
    for name in SERVERS:
        try:
            cls = server_class(name)
            problems = cls.missing()
        except Exception as exc:  # a broken adapter import is itself a diagnosis
            cls, problems = None, [(f"cannot load: {exc}", "make setup")]
        missing_any |= bool(problems)
        status = "; ".join(p for p, _ in problems) or "[green]ok[/green]"
        table.add_row(name, status, "; ".join(f for _, f in problems) or "-")
    console.print(table)
    raise typer.Exit(1 if missing_any else 0)


@app.command()
def smoke(names: list[str] = typer.Argument(None, help=f"default: {' '.join(CORE_SERVERS)}")) -> None:
    """Start servers, run one real statement on each, print versions, stop them."""
    with fleet_mod.Fleet(names or CORE_SERVERS) as fleet:
        console.print(_versions_table(fleet))
        for name, server in fleet.servers.items():
            console.print(f"{name}: {server.smoke()}")
    console.print("all servers stopped")


bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks (print measured figures; not tests).")
app.add_typer(bench_app, name="bench")


@bench_app.command("harness")
def bench_harness(
    clients: int = typer.Option(8, min=1, help="concurrent clients on both sides"),
    duration: int = typer.Option(10, min=1, help="seconds per side"),
    batch: list[int] = typer.Option([1, 10], help="delete-mode claim batch sizes"),
) -> None:
    """Harness vs pgbench (SKIP LOCKED delete-mode) and vs redis-benchmark (LMOVE)."""
    from pglimits_core.workloads.queue import harness_bench as hb

    table = Table("operation", "clients", "harness /s", "C tool", "C tool /s", "harness / C tool")
    with fleet_mod.Fleet(["postgres", "redis"]) as fleet:
        rows = [hb.compare_postgres(fleet.endpoints["postgres"], clients, duration, b) for b in batch]
        rows.append(hb.compare_redis(fleet.endpoints["redis"], clients, duration))
    for row in rows:
        table.add_row(row.what, str(row.clients), f"{row.harness_per_s:,.0f}", row.tool,
                      f"{row.tool_per_s:,.0f}", f"{row.ratio:.2f}")
    console.print(table)
    for row in rows:
        console.print(f"- {row.what}: {row.note}")


datasets_app = typer.Typer(no_args_is_help=True, help="The seeded datasets of a profile (built once, checksummed).")
app.add_typer(datasets_app, name="datasets")


def _profile_datasets(profile: str) -> dict:
    from pglimits_core.profiles import load_profile

    declared = load_profile(profile).datasets
    specs = {kind: spec for kind, spec in (("corpus", declared.corpus), ("vectors", declared.vectors)) if spec}
    if not specs:
        raise PGLimitsError(f"profile {profile} declares no datasets", "add a `datasets:` section to it")
    return specs


@datasets_app.command("build")
def datasets_build(profile: str = typer.Option("quick", help=f"the profile whose datasets to build: {PROFILE_FORMS}")) -> None:
    """Generate the profile's corpus and vectors with exact ground truth; reuses complete ones."""
    from pglimits_core.datasets import store

    for kind, spec in _profile_datasets(profile).items():
        was_built = store.is_built(spec)
        path = store.ensure_dataset(spec, progress=lambda message: console.print(f"  {message}"))
        manifest = json.loads((path / store.MANIFEST).read_text())
        size = sum(entry["bytes"] for entry in manifest["files"].values())
        state = "reused" if was_built else f"built in {manifest['build_seconds']:.1f} s"
        # one line per dataset, unwrapped: a table folds the paths on an 80-column pipe
        console.print(f"{kind}: {repo_relative(path)} — {_contents(manifest['counts'])}; "
                      f"{size / 2**20:,.1f} MiB; {state}", soft_wrap=True)


def _contents(counts: dict) -> str:
    if "documents" in counts:  # a corpus
        per_class = "/".join(str(n) for n in counts["queries"].values())
        return (f"{counts['documents']:,} documents, {counts['tokens']:,} tokens, {counts['vocabulary']:,} words; "
                f"{per_class} AND queries ({'/'.join(counts['queries'])}) with exact matches")
    return f"{counts['count']:,} × {counts['dim']} vectors; {counts['queries']:,} queries with exact top-{counts['k']}"


@datasets_app.command("verify")
def datasets_verify(profile: str = typer.Option("quick", help=f"the profile whose datasets to check: {PROFILE_FORMS}")) -> None:
    """Re-hash every file of the profile's datasets against its manifest."""
    from pglimits_core.datasets import store

    problems, damaged = [], []
    for kind, spec in _profile_datasets(profile).items():
        if not store.is_built(spec):
            problems.append(f"{kind}: not built")
        elif found := store.verify_dataset(store.dataset_dir(spec)):
            problems += [f"{kind}: {problem}" for problem in found]
            damaged.append(repo_relative(store.dataset_dir(spec)))
    if problems:
        remove = f"rm -rf {' '.join(damaged)} && " if damaged else ""
        raise PGLimitsError(f"datasets of profile {profile}: {'; '.join(problems)}",
                            f"{remove}pglimits datasets build --profile {profile}")
    console.print(f"datasets of profile {profile}: every file matches its manifest")


results_app = typer.Typer(no_args_is_help=True, help="The committed results: export a sitting, rebuild, open the report.")
app.add_typer(results_app, name="results")
RESULTS_PROFILE = typer.Option("full", help="the profile whose committed results (data/results/<machine>/<profile>/)")
RESULTS_HOST = typer.Option(None, help="a machine id under data/results/ (default: each workload's own)")


@results_app.command("export")
def results_export(
    profile: str = RESULTS_PROFILE,
    only: list[str] = typer.Option([], help="replace only this study's records and notebook (repeatable)"),
    runs: Path = typer.Option(None, help="run records to export (default data/runs/<profile>)"),
    executed: Path = typer.Option(None, help="executed notebooks to export (default data/executed/<profile>)"),
) -> None:
    """After `make study PROFILE=full`: copy its run summaries and executed notebooks into
    data/results/<this machine>/<profile>/, then rebuild everything generated from them."""
    from pglimits_core.analysis import publish

    for line in publish.export(profile, only, runs, executed):
        console.print(line, soft_wrap=True)
    _print_reports(publish.publish(profile))


@results_app.command("build")
def results_build(profile: str = RESULTS_PROFILE, host: str = RESULTS_HOST) -> None:
    """Regenerate every table, figure, the decision matrix, README.md's and docs/'s generated
    blocks and the report from the committed records (a fresh clone gets no diff)."""
    from pglimits_core.analysis import publish

    _print_reports(publish.publish(profile, host))


@results_app.command("figures")
def results_figures(profile: str = RESULTS_PROFILE, host: str = RESULTS_HOST) -> None:
    """Regenerate each workload's committed tables and figures only (README.md and docs/ untouched)."""
    from pglimits_core.analysis import publish

    publish.tables_and_figures(profile, host)
    console.print(f"tables and figures of profile {profile} regenerated from the committed records")


@results_app.command("open")
def results_open(profile: str = RESULTS_PROFILE, host: str = RESULTS_HOST) -> None:
    """Open the committed report (one self-contained HTML page per machine) in a browser, or
    print where it is when there is none to open it."""
    import webbrowser

    from pglimits_core.analysis import publish

    reports = publish.report_paths(profile, host)
    if not reports:
        raise PGLimitsError(f"no committed {profile} report under data/results/",
                            f"build it: pglimits results build --profile {profile}")
    for report in reports:
        opened = webbrowser.open(report.resolve().as_uri())
        console.print(f"{'opened' if opened else 'no browser here; open'} {repo_relative(report)}", soft_wrap=True)


def _print_reports(reports: list[Path]) -> None:
    console.print("rebuilt from the committed records; report(s): "
                  + ", ".join(repo_relative(path) for path in reports), soft_wrap=True)


def main() -> None:
    try:
        sys.exit(app(standalone_mode=False) or 0)  # click returns the code of typer.Exit here
    except PGLimitsError as exc:
        print(f"pglimits: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("pglimits: interrupted; servers stopped", file=sys.stderr)
        sys.exit(130)
    except click.ClickException as exc:  # usage errors: unknown option, missing argument
        exc.show()
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
