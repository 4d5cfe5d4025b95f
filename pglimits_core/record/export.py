"""Copy a profile's finished run records into ``data/results/<host-id>/<profile>/runs/`` for committing.

Only what the tables, figures and report are computed from travels: manifest, summary, the
per-second series and sampler series (tens of kB per run), and any other JSON file a workload
wrote beside them as evidence to re-audit (e.g. the parsed server log lines of a window). The HDR
histograms stay behind with the raw runs (``data/runs/``, git-ignored). ``.partial`` runs are
never exported.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from pglimits_core.config import current_host_id, profile_results_dir, results_dir, runs_dir
from pglimits_core.errors import PGLimitsError
from pglimits_core.record.rundir import finished_runs

EXPORTED_FILES = ("manifest.json", "summary.json", "timeseries.parquet", "samplers.parquet")


def committed_hosts(profile: str, study: str | None = None) -> list[str]:
    """Machines with committed ``profile`` results (``data/results/<host-id>/<profile>/runs``);
    with ``study``, only those holding records of that study."""
    return sorted(p.parent.parent.name for p in results_dir().glob(f"*/{profile}/runs")
                  if p.is_dir() and (study is None or _newest_run(p, study)))


def _newest_run(runs: Path, study: str) -> str:
    """The newest run directory name of ``study`` under ``runs`` ("" when none): run ids start
    with their UTC time stamp, so names sort by time."""
    return max((p.name for p in runs.glob(f"*-{study}-*")), default="")


def committed_host(profile: str, host: str | None = None, nearest: bool = False, study: str | None = None) -> str:
    """The machine whose committed ``profile`` results to show: ``host`` if given, else this
    machine if it has some, else the only one committed; with ``nearest``, else the one whose
    results are newest (the caller says whose results it shows). With ``study``, only machines
    holding that study's records count: each workload may come from its own machine, and its
    block says which (records of two machines are never mixed in one table)."""
    hosts = committed_hosts(profile, study)
    if host:
        return host
    if current_host_id() in hosts:
        return current_host_id()
    if len(hosts) == 1 or (nearest and hosts):
        return max(hosts, key=lambda h: _newest_run(results_dir() / h / profile / "runs", study or ""))
    raise PGLimitsError(f"no single machine with committed {profile!r} results (found {hosts or 'none'})",
                        f"run `make study PROFILE={profile}` and `make results`, or pass --host NAME")


def committed_runs_root(profile: str, host: str | None = None) -> Path:
    return profile_results_dir(profile, host) / "runs"


def export_runs(profile: str, source: Path | None = None, only: Sequence[str] = ()) -> Path:
    """Replace ``data/results/<host-id>/<profile>/runs`` (this machine) with the profile's
    finished runs; returns it. With ``only``, just those studies' records and outcomes are
    replaced and every other study's committed block stays: a section of ``full`` is sat and
    committed on its own (``run_all.py --only``)."""
    source = source or runs_dir() / profile
    runs = [run for run in finished_runs(source) if not only or study_of(run.name) in only]
    if not runs:  # never replace committed results with nothing (e.g. `make results` on a fresh clone)
        what = f"{profile} runs of {', '.join(only)}" if only else f"{profile} runs"
        raise PGLimitsError(f"no finished {what} in {source} to export",
                            f"run `make study PROFILE={profile}` first; the committed results are kept as they are")
    target = committed_runs_root(profile)
    _remove_committed(target, only)
    for run in runs:
        (target / run.name).mkdir(parents=True)
        for path in exported_files(run):
            shutil.copy2(path, target / run.name / path.name)
    for outcome in source.glob("*.outcome.json"):  # what each study could not measure, and its timings
        if not only or outcome.name.split(".")[0] in only:
            shutil.copy2(outcome, target / outcome.name)
    return target


def study_of(run_name: str) -> str:
    """The study a run directory belongs to: ids are ``<UTC stamp>-<study>-<system>-...``."""
    return run_name.split("-")[1]


def _remove_committed(target: Path, only: Sequence[str]) -> None:
    """Move the committed records aside before an export: all of them, or ``only`` those studies'."""
    if not only:
        shutil.rmtree(target, ignore_errors=True)
        return
    for path in target.glob("*") if target.exists() else []:
        study = path.name.split(".")[0] if path.name.endswith(".outcome.json") else study_of(path.name)
        if study in only and path.is_dir():
            shutil.rmtree(path)
        elif study in only:
            path.unlink()


def exported_files(run: Path) -> list[Path]:
    """The files of one run directory that travel: ``EXPORTED_FILES`` and every JSON sidecar."""
    named = [run / name for name in EXPORTED_FILES if (run / name).exists()]
    return named + sorted(p for p in run.glob("*.json") if p.name not in EXPORTED_FILES)


#: an executed notebook larger than this is not committed (the repository's per-file limit)
NOTEBOOK_LIMIT_BYTES = 5 * 2**20


def export_notebooks(profile: str, source: Path | None = None, only: Sequence[str] = ()) -> list[str]:
    """Copy the profile's executed notebooks (with their outputs: tables and figures a reader
    browsing the repository sees) next to its runs, their progress bars folded to the last line;
    one too large to commit is named, not copied. With ``only``, just those studies' notebooks
    (``NN-<study>.ipynb``) are replaced."""
    from pglimits_core.studies.status import executed_dir

    target = profile_results_dir(profile) / "notebooks"
    if not only:
        shutil.rmtree(target, ignore_errors=True)
    copied = []
    for notebook in sorted((source or executed_dir(profile)).glob("*.ipynb")):
        if only and notebook.stem.split("-", 1)[-1] not in only:
            continue
        text = notebook_text(without_progress(json.loads(notebook.read_text())))
        if len(text.encode()) > NOTEBOOK_LIMIT_BYTES:
            print(f"export: {notebook.name} is {len(text.encode()) / 2**20:.1f} MiB, over the "
                  f"{NOTEBOOK_LIMIT_BYTES / 2**20:.0f} MiB a committed file may be: not exported")
            continue
        target.mkdir(parents=True, exist_ok=True)
        (target / notebook.name).write_text(text)
        copied.append(notebook.name)
    return copied


#: one line of the study's progress bar (tqdm on stderr): ``queue study:  41%|####  | 76/184 [...]``
PROGRESS_LINE = re.compile(r"^[^|]*:\s+\d+%\|.*\|\s*\d+/\d+ \[")


def without_progress(notebook: dict) -> dict:
    """``notebook`` with each cell's progress-bar outputs (a hundred stderr lines streamed while
    it measured, read live in the run's log) folded into their last line, where the first stood:
    a reader opening the committed copy meets the tables, and still sees how long it took."""
    for cell in notebook.get("cells", []):
        outputs = cell.get("outputs", [])
        progress = [i for i, output in enumerate(outputs) if _is_progress(output)]
        drawn = [line for i in progress for line in _lines(outputs[i])]
        if not drawn:  # blank stderr alone is no progress bar
            continue
        last = drawn[-1]
        folded = {"name": "stderr", "output_type": "stream", "text": [last + "\n"]}
        cell["outputs"] = [folded if i == progress[0] else output
                           for i, output in enumerate(outputs) if i == progress[0] or i not in progress]
    return notebook


def _is_progress(output: dict) -> bool:
    if output.get("output_type") != "stream" or output.get("name") != "stderr":
        return False
    return all(PROGRESS_LINE.match(line) for line in _lines(output))  # blank: the bar's last newline


def _lines(output: dict) -> list[str]:
    """The non-blank lines of a stream output (tqdm redraws with carriage returns)."""
    text = output.get("text", "")
    text = "".join(text) if isinstance(text, list) else text
    return [line.strip() for line in re.split(r"[\r\n]+", text) if line.strip()]


def notebook_text(notebook: dict) -> str:
    """A notebook as Jupyter writes it (sorted keys, one-space indent, UTF-8 kept), so a committed copy
    opened and saved again does not change for that reason alone."""
    return json.dumps(notebook, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
