"""Bad input, before anything runs: ``run_all.py`` given a profile with a YAML syntax error, an
empty profile, or a typo in a system or variant name exits 2 with one line on stderr naming the
problem and the fix — before any server starts: every server start records itself under the
state directory and every notebook run writes its status under the data directory, so neither
may exist afterwards.

The command-line cases run ``python run_all.py`` as a subprocess, all at once (each imports
every workload: seconds apiece on a shared box); the other typos go through the same up-front
check in-process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import run_all
from pglimits_core.config import PROFILES_DIR, PROJECT_ROOT
from pglimits_core.errors import PGLimitsError

TEST_PROFILE = (PROFILES_DIR / "test.yaml").read_text()


def edited(old: str, new: str) -> str:
    """The test profile with one edit (which must apply)."""
    assert old in TEST_PROFILE, old
    return TEST_PROFILE.replace(old, new, 1)


# a value holding ": " unquoted, on line 12 of the test profile
BROKEN = edited("  latency: {rates: [300]", "  latency: rates: [300]")
assert BROKEN.splitlines()[11].startswith("  latency: rates:")
QUEUE_TYPO = edited("{system: pg_delete, batch: 1}", "{system: pg_dlete, batch: 1}")
SEARCH_TYPO = edited("{system: elasticsearch}", "{system: elasticsaerch}")

# case -> (file name -> text under the case's profiles dir, or "elsewhere/<name>" beside it;
#          run_all arguments, with {dir} the case's directory; working directory: "" = repository)
CASES: dict[str, tuple[dict[str, str], list[str], str]] = {
    "yaml": ({"broken.yaml": BROKEN}, ["--profile", "broken"], ""),
    "empty": ({"empty.yaml": ""}, ["--profile", "empty"], ""),
    "queue_typo": ({"typo.yaml": QUEUE_TYPO}, ["--profile", "typo"], ""),
    "search_typo": ({"typo.yaml": SEARCH_TYPO}, ["--profile", "typo.yaml", "--only", "search"], ""),
    "abs_path": ({"elsewhere/own.yaml": SEARCH_TYPO}, ["--profile", "{dir}/elsewhere/own.yaml"], ""),
    "rel_path": ({"elsewhere/own.yaml": QUEUE_TYPO}, ["--profile", "elsewhere/own.yaml"], "{dir}"),
}


def case_env(root: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PGLIMITS_")}
    return {**env, "PGLIMITS_PROFILES_DIR": str(root / "profiles"), "PGLIMITS_DATA_DIR": str(root / "data"),
            "PGLIMITS_STATE_DIR": str(root / "state"), "PGLIMITS_FIGURES_DIR": str(root / "figures")}


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """Every case's ``run_all.py``, started together; its result and its directory."""
    running = {}
    for case, (files, args, cwd) in CASES.items():
        root = tmp_path_factory.mktemp(case)
        (root / "profiles").mkdir()
        for name, text in files.items():
            path = root / name if name.startswith("elsewhere/") else root / "profiles" / name
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
        command = [sys.executable, str(PROJECT_ROOT / "run_all.py"), *(a.format(dir=root) for a in args)]
        running[case] = (subprocess.Popen(command, cwd=cwd.format(dir=root) or PROJECT_ROOT, env=case_env(root),
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), root, args)
    results = {}
    for case, (proc, root, args) in running.items():
        out, err = proc.communicate(timeout=180)
        results[case] = (subprocess.CompletedProcess(args, proc.returncode, out, err), root)
    return results


def refused(cli, case: str, *named: str) -> str:
    """Exit 2, one line on stderr naming the problem (``named``) and the fix, no traceback, and
    nothing started: no state directory (server records and data), no notebook status, no figures."""
    result, root = cli[case]
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("run_all: error: ") and " — fix: " in line, line
    assert "Traceback" not in result.stderr + result.stdout
    for text in named:
        assert text.format(dir=root) in line, (text, line)
    assert not (root / "state").exists(), f"a server-like state dir appeared: {list((root / 'state').rglob('*'))}"
    assert not (root / "data").exists() and not (root / "figures").exists()
    assert "running with profile" not in result.stdout
    return line


def test_a_yaml_syntax_error_is_one_line_naming_the_file_and_the_line(cli):
    line = refused(cli, "yaml", "profile broken: YAML error at {dir}/profiles/broken.yaml line 12: "
                                "mapping values are not allowed here")
    assert "correct the YAML at {dir}/profiles/broken.yaml line 12".format(dir=cli["yaml"][1]) in line


def test_an_empty_profile_is_refused_naming_the_file_and_the_fix(cli):
    line = refused(cli, "empty", "profile empty: {dir}/profiles/empty.yaml is empty")
    assert "give it at least one workload section (queue, search, pubsub, vectors, interference)" in line


def test_a_queue_system_typo_names_it_and_the_valid_names(cli):
    line = refused(cli, "queue_typo", "profile typo: queue: unknown queue system 'pg_dlete'",
                   "use one of: pg_skiplocked, pg_delete, pgmq, redis_reliable, sqlite_wal")
    assert "in {dir}/profiles/typo.yaml".format(dir=cli["queue_typo"][1]) in line


def test_a_search_system_typo_stops_run_all_before_the_queue_notebook_would_start(cli):
    """It used to pass run_all's check and fail only when the search notebook started."""
    refused(cli, "search_typo", "profile typo: search: unknown search system 'elasticsaerch'",
            "use one of: pg_gin, elasticsearch, opensearch")


def test_profile_given_as_a_path_with_yaml_is_read_and_checked(cli):
    """A file outside the profiles folder, by absolute and by relative path (a typo in it proves
    it was read and checked); ``--profile typo.yaml`` above is a name with ``.yaml``."""
    refused(cli, "abs_path", "profile own: search: unknown search system 'elasticsaerch'",
            "in {dir}/elsewhere/own.yaml")
    refused(cli, "rel_path", "profile own: queue: unknown queue system 'pg_dlete'", "in {dir}/elsewhere/own.yaml")


# the same up-front check, in-process: every section's system, option and variant names

@pytest.fixture
def profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PGLIMITS_PROFILES_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(("old", "new", "named"), [
    ("consumer_crash: {consumers: 2", 'consumer_crash: {variants: ["sqlite_wall batch=1"], consumers: 2',
     ["queue.consumer_crash.variants names 'sqlite_wall batch=1'", "sqlite_wal batch=1"]),
    ('recovery: {variants: ["pg_delete batch=1"', 'recovery: {variants: ["pg_delet batch=1"', ["unknown queue system 'pg_delet'", "pg_delete"]),
    ("{system: sqlite_wal}", "{system: sqlite_wal, synchronus: off}", ["synchronus"]),
    ('crossover: {variants: ["pg_gin ranked", "opensearch"]', 'crossover: {variants: ["pg_gin ranked", "opensaerch"]',
     ["search.crossover.variants names 'opensaerch'", "opensearch"]),
    ("{system: pg_gin, ranked: false}", "{system: pg_gin, rankd: false}", ["search: pg_gin has no option 'rankd'"]),
    ("{system: redis_publish}", "{system: redis_pubish}", ["'redis_pubish'", "redis_publish"]),
    ('idle_listeners: {variants: ["pg_notify batch=1"]', 'idle_listeners: {variants: ["pg_notfy batch=1"]',
     ["pubsub: a variants filter names 'pg_notfy batch=1'", "pg_notify batch=1"]),
    ("  ef: [10, 40, 200]", '  variants: ["pgvectr hnsw"]\n  ef: [10, 40, 200]',
     ["vectors.variants names 'pgvectr hnsw'", "pgvector hnsw"]),
], ids=["queue-filter", "queue-drill", "queue-option", "search-filter", "search-option", "pubsub-system",
        "pubsub-filter", "vectors-variant"])
def test_a_typo_in_any_section_fails_the_up_front_check(profiles, old, new, named):
    (profiles / "typo.yaml").write_text(edited(old, new))
    with pytest.raises(PGLimitsError) as caught:
        run_all.planned_notebooks("typo", None)
    line = str(caught.value)
    assert line.startswith("profile typo: ") and "\n" not in line and str(profiles / "typo.yaml") in line, line
    for text in named:
        assert text in line, (text, line)


def test_the_up_front_check_plans_every_committed_profile_quickly_and_starts_nothing(tmp_path, monkeypatch):
    """``plan()`` builds variants only: no server, no dataset, no state; the full profile in well
    under a second once the workloads are imported."""
    monkeypatch.setenv("PGLIMITS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path / "data"))
    run_all.planned_notebooks("test", None)  # the imports
    for name in ("full", "quick", "test"):
        started = time.monotonic()
        assert run_all.planned_notebooks(name, None)[-1] == run_all.REPORT
        assert time.monotonic() - started < 10, name
    assert not (tmp_path / "state").exists() and not (tmp_path / "data").exists()


def test_a_profile_file_outside_the_profiles_folder_becomes_this_runs_folder(tmp_path, monkeypatch):
    """Its name keys the results; the notebooks it runs find it by that name."""
    monkeypatch.setenv("PGLIMITS_PROFILES_DIR", str(PROFILES_DIR))
    assert run_all.profile_name("configs/profiles/quick.yaml") == "quick"
    assert os.environ["PGLIMITS_PROFILES_DIR"] == str(PROFILES_DIR)
    (tmp_path / "mine.yaml").write_text(TEST_PROFILE)
    assert run_all.profile_name(str(tmp_path / "mine")) == "mine"
    assert os.environ["PGLIMITS_PROFILES_DIR"] == str(tmp_path.resolve())
    assert run_all.planned_notebooks("mine", ["queue"]) == ["10-queue", run_all.REPORT]


def test_only_a_workload_the_profile_lacks_is_refused(profiles):
    (profiles / "queue_only.yaml").write_text(TEST_PROFILE.split("\nsearch:")[0] + "\n")
    with pytest.raises(PGLimitsError, match="profile queue_only has no 'pubsub' section — fix: add one to .*/queue_only.yaml"):
        run_all.planned_notebooks("queue_only", ["pubsub"])


def test_help_says_profile_takes_a_name_or_a_path(capsys):
    with pytest.raises(SystemExit):
        run_all.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "configs/profiles/quick.yaml" in text and "/abs/path/x.yaml" in text and "with or without .yaml" in text
