"""Every run record committed under data/results/ validates against the schema (CI runs this)."""

import subprocess
import sys

from pglimits_core.config import PROJECT_ROOT


def test_committed_results_validate():
    result = subprocess.run([sys.executable, "-m", "pglimits_core.record.validate",
                             str(PROJECT_ROOT / "data" / "results")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
