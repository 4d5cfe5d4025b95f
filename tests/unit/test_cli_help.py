"""``pglimits --help`` tells a newcomer how to run the study and where its results are read."""

from __future__ import annotations

from typer.testing import CliRunner

from pglimits_core.cli import app


def test_the_top_level_help_names_the_study_commands_and_the_report():
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for said in ("make study", "run_all.py", "--resume", "report.html", "make results"):
        assert said in text, said
