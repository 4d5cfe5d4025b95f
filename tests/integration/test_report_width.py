"""The study report, built from the committed records the way ``90-report`` builds it, fits a
laptop screen: loaded in headless Chromium at a 1280-px-wide window with every fold opened,
nothing sticks out past the right edge (a wide table scrolls inside its own box), and the seed
table — whose verdict column an earlier review found cut off — fits without scrolling at all.

Cost: no server is started, but the report reads every committed run of the machine with the
most records (~900 runs, their per-second samplers included): ~30 s of one core. The charts are
not drawn (~20 s more); a wide figure is covered by ``tests/unit/analysis/test_report_width.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pglimits_core.analysis import outputs, report
from pglimits_core.analysis.report_width import CHROMIUM_MISSING, check_report, find_chromium
from pglimits_core.config import StudyPaths
from pglimits_core.record.export import committed_hosts

pytestmark = pytest.mark.integration

PROFILE = "full"
SEED_TABLE = "Seed headline figures vs this study"


def host_with_most_runs() -> str:
    hosts = committed_hosts(PROFILE)
    assert hosts, f"no committed {PROFILE} records under data/results/*/{PROFILE}/runs"
    return max(hosts, key=lambda host: sum(1 for _ in StudyPaths.committed(PROFILE, host).runs.iterdir()))


def test_the_report_from_the_committed_records_fits_a_1280_px_window(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch):
    if find_chromium() is None:
        pytest.skip(CHROMIUM_MISSING)
    committed = StudyPaths.committed(PROFILE, host_with_most_runs())
    # the committed records are finished by definition (only finished runs are exported); this
    # machine's own study status (maybe mid-run) has nothing to say about them
    monkeypatch.setattr(report, "require_complete", lambda profile: None)
    monkeypatch.setattr(outputs, "draw_charts", lambda *args, **kwargs: {})
    sections = report.build_sections(PROFILE, str(committed.runs), str(tmp_path / "figures"),
                                     str(tmp_path / "tables"))
    page = report.write_report(sections, PROFILE, str(tmp_path / "report.html"))
    assert page == tmp_path / "report.html" and f"<b>{SEED_TABLE}</b>" in page.read_text()

    check = check_report(page)
    assert check.measured, check.reason
    assert check.lines() == [], "\n".join(check.lines())
    assert SEED_TABLE not in [b.caption for b in check.boxed], "\n".join(check.boxed_lines())
