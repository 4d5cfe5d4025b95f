"""The report notebook over real run records (the tiny test profile, real servers), and the HTML
it writes looked at as a person would: rendered in headless Chromium, screenshot checked."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from pglimits_core.config import NOTEBOOKS_DIR
from tests.conftest import ExecutedNotebook

pytestmark = [pytest.mark.integration, pytest.mark.notebook]

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SQLITE_GREEN = (0x54, 0x82, 0x35)  # ENGINE_COLOURS["sqlite_wal"]: only the figures draw with it


@pytest.fixture(scope="module")
def test_runs(queue_notebook: ExecutedNotebook, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Real run records of the test profile's queue study: a copy of the ones the queue notebook's
    test measured this session (the report writes beside them)."""
    runs = tmp_path_factory.mktemp("report") / "runs"
    shutil.copytree(queue_notebook.runs, runs)
    yield runs


@pytest.fixture(scope="module")
def report(test_runs: Path) -> dict[str, Path]:
    import papermill

    out = test_runs.parent
    paths = {"runs_root": test_runs, "figures_dir": out / "figures", "tables_dir": out / "tables",
             "report_path": out / "report.html"}
    papermill.execute_notebook(str(NOTEBOOKS_DIR / "90-report.ipynb"), str(out / "90-report.ipynb"),
                               parameters={"profile": "test", **{k: str(v) for k, v in paths.items()}},
                               cwd=str(NOTEBOOKS_DIR), progress_bar=False)
    return paths


def test_report_html_is_self_contained_with_tables_and_figures(report: dict[str, Path]):
    page = report["report_path"].read_text()
    for title in ("Hardware", "Versions", "Tuning ledger", "Queue: headline tables", "Queue: figures",
                  "Beside the source documents", "What could not be run, and why"):
        assert f"<h2>{title}" in page, title
    assert page.count("<table") >= 8
    assert "pg_delete batch=1" in page and "redis_reliable batch=1" in page
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(images) >= 2 and all(base64.b64decode(i)[:4] == b"\x89PNG" for i in images)
    # nothing fetched from elsewhere: no external scripts, stylesheets or images
    assert not re.search(r"(src|href)=['\"](https?:|file:|/)", page)
    assert "<link" not in page and "<script" not in page


def test_seed_ratios_are_judged_only_within_a_durability_class(report: dict[str, Path]):
    table = pd.read_csv(report["tables_dir"] / "report-seed-comparison.csv")
    delete_vs_redis = table[table["A / B"].str.startswith("Postgres delete-mode")].iloc[0]
    # the seed's Redis was pipelined; the test profile runs only unpipelined Redis
    assert pd.isna(delete_vs_redis["our ratio A/B"]) and delete_vs_redis["verdict"] == "not measured here"
    # SQLite synchronous=NORMAL (periodic) vs pg_delete (per commit): shown, never judged
    sqlite = table[table["figure"] == "queue p99 end-to-end at 1k msg/s"].iloc[0]
    assert sqlite["our ratio A/B"] > 0 and sqlite["verdict"].startswith("not compared")


def chromium_screenshot(page: Path, shot: Path) -> None:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail("chromium is not installed — fix: sudo apt-get install -y chromium (or `make setup`)")
    profile_dir = shot.parent / f"chromium-profile-{uuid.uuid4().hex[:6]}"  # a new, empty profile
    runtime_dir = profile_dir.with_name(profile_dir.name + "-runtime")
    runtime_dir.mkdir(mode=0o700)
    # its own XDG runtime dir: the package may have pointed this process's at a server state dir
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir)}
    done = subprocess.run([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}", f"--screenshot={shot}",
                           "--window-size=1280,9000", page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]


def test_report_renders_in_headless_chromium(report: dict[str, Path]):
    from PIL import Image

    shot = report["report_path"].with_name("report-screenshot.png")
    chromium_screenshot(report["report_path"], shot)
    assert shot.stat().st_size > 50_000
    pixels = Image.open(shot).convert("RGB")
    assert pixels.size == (1280, 9000)
    colours = pixels.getcolors(maxcolors=1 << 20)
    assert len(colours) > 200, "the page rendered (nearly) flat"
    green = sum(n for n, rgb in colours if all(abs(a - b) <= 12 for a, b in zip(rgb, SQLITE_GREEN, strict=True)))
    assert green > 200, "no SQLite-green pixels: the embedded figures did not render"
