"""``pglimits --help`` tells a newcomer how to run the study and where its results are read."""

from __future__ import annotations

import webbrowser

from typer.testing import CliRunner

from pglimits_core.cli import app
from pglimits_core.errors import PGLimitsError


def test_the_top_level_help_names_the_study_commands_and_the_report():
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for said in ("make study", "run_all.py", "--resume", "report.html", "make results", "pglimits results open"):
        assert said in text, said


def test_results_is_one_front_door_with_export_build_figures_and_open():
    result = CliRunner().invoke(app, ["results", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for command in ("export", "build", "figures", "open"):
        assert f" {command} " in result.output, command


def test_results_open_without_a_report_names_the_command_that_builds_one(tmp_path, monkeypatch):
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["results", "open"])
    assert isinstance(result.exception, PGLimitsError)
    assert "no committed full report" in str(result.exception)
    assert "pglimits results build --profile full" in str(result.exception)


def test_results_open_says_where_the_report_is_when_no_browser_opens_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PGLIMITS_DATA_DIR", str(tmp_path))
    report = tmp_path / "results" / "some-box" / "full" / "report.html"
    (report.parent / "runs").mkdir(parents=True)
    report.write_text("<html></html>")
    monkeypatch.setattr(webbrowser, "open", lambda url: False)
    result = CliRunner().invoke(app, ["results", "open"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "no browser here; open" in result.output and str(report.resolve()) in result.output
