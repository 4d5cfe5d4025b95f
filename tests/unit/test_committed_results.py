"""The committed results: every run record under data/results/ validates against the schema,
and the README's results block is what those records give (generated, never typed)."""

import subprocess
import sys
from pathlib import Path

import pytest

from pglimits_core.analysis import queue as queue_tables
from pglimits_core.analysis import readme_results
from pglimits_core.config import PROJECT_ROOT

RESULTS = PROJECT_ROOT / "data" / "results"


def test_committed_results_validate():
    assert list(RESULTS.glob("*/full/runs/*/manifest.json")), "no committed full-profile run records"
    result = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate", str(RESULTS)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_headline_table_is_generated_from_the_committed_records(tmp_path: Path):
    host = readme_results.committed_host("full")
    runs = RESULTS / host / "full" / "runs"
    tables = queue_tables.queue_report("full", str(runs), str(tmp_path / "figures"), str(tmp_path / "tables"))
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert readme_results.headline_table(tables).to_markdown(index=False) in readme, (
        "README's results block is stale: python -m pglimits_core.analysis.readme_results --profile full")
    assert f"machine `{host}`" in readme


def test_an_unknown_host_is_a_one_line_error():
    with pytest.raises(Exception, match="no committed runs"):
        readme_results.results_block("full", host="no-such-machine")
