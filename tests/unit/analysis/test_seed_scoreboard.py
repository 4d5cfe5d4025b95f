"""The source studies' scoreboard: a row per seed claim in its agreement class's colour (the
classes the one seed rule, ``analysis.seed.verdict``, produces), both ratios written on the row
when they exist, the machine-and-commit stamp, and one README line counting the classes."""

from __future__ import annotations

import matplotlib.colors
import matplotlib.pyplot as plt
import pandas as pd

from pglimits_core.analysis import seed
from pglimits_core.analysis.answer import SCOREBOARD_LINK, SEED_LINK, answer_markdown
from pglimits_core.analysis.seed_scoreboard import (
    CLASSES,
    NOT_DECIDED,
    agreement,
    count_sentence,
    counts,
    draw,
    ratio_text,
    write_seed_scoreboard,
)

STAMP = "machine box-a (AMD EPYC) · git 0d78e47aaa"


def claim(verdict, seed_ratio=None, ours=None, source="seed 003", figure="queue throughput") -> dict:
    return {"source": source, "figure": figure, "A / B": "Postgres / Redis", "seed ratio A/B": seed_ratio,
            "our ratio A/B": ours, "verdict": verdict}


def synthetic() -> pd.DataFrame:
    return pd.DataFrame([claim("agree", 1.31, 1.34),
                         claim("same direction, different size", "4.09–5.88×", 1.06, figure="delete mode"),
                         claim("differ (opposite direction)", 0.18, 4.4, source="seed 000"),
                         claim("inconclusive: client-bound", 0.82, None, source="pub/sub"),
                         claim("differ", None, None, source="vectors", figure="reaches recall 0.97")])


def tile_colours(figure) -> list[str]:
    return [matplotlib.colors.to_hex(p.get_facecolor(), keep_alpha=False) for p in figure.axes[0].patches]


def test_every_word_of_the_seed_rule_falls_in_its_class():
    assert agreement(seed.verdict(1.0, 0.9, 1.1))[0] == "agree"
    assert agreement(seed.verdict(3.0, 1.0, 1.1))[0] == "same direction, different size"
    assert agreement(seed.verdict(0.5, 1.0, 1.1))[0] == "differ"
    assert agreement(seed.verdict(None, 1.0, 1.1))[0] == NOT_DECIDED
    assert agreement(seed.verdict_short(0.5, 1.5))[0] == "differ"
    for other in ("inconclusive: client-bound", "not comparable here: cannot reach", "not compared: ...", None,
                  float("nan")):
        assert agreement(other)[0] == NOT_DECIDED


def test_every_class_is_drawn_in_its_colour_one_tile_per_claim():
    table = synthetic()
    figure = draw(table)
    try:
        assert tile_colours(figure) == [agreement(v)[1] for v in table.verdict]
        assert {colour for _, _, colour in CLASSES} <= set(tile_colours(figure))
        texts = [t.get_text() for t in figure.axes[0].texts]
        assert "seed 1.31× · ours 1.34×" in texts and "seed 4.09–5.88× · ours 1.06×" in texts
        assert "seed 0.82× · ours —" in texts  # one side missing: said, not dropped
        assert {"seed 003", "seed 000", "pub/sub", "vectors"} <= set(texts)  # each source heads its claims
    finally:
        plt.close(figure)


def test_a_claim_without_ratios_still_draws_its_row():
    row = pd.Series(claim("differ", None, float("nan"), figure="reaches recall 0.99"))
    assert ratio_text(row) == ""
    figure = draw(pd.DataFrame([row]))
    try:
        assert tile_colours(figure) == [agreement("differ")[1]]
        assert "reaches recall 0.99" in [t.get_text() for t in figure.axes[0].texts]
    finally:
        plt.close(figure)


def test_the_figure_is_written_with_its_machine_and_commit_stamp(tmp_path, monkeypatch):
    drawn = []
    from pglimits_core.analysis import scoreboard

    save = scoreboard.save_figure  # the one writer both scoreboards go through
    monkeypatch.setattr(scoreboard, "save_figure", lambda fig, *a, **k: drawn.append(fig) or save(fig, *a, **k))
    paths = write_seed_scoreboard(synthetic(), tmp_path, stamp=STAMP)
    assert [p.name for p in paths] == ["seed-scoreboard.png", "seed-scoreboard.svg"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert STAMP in [t.get_text() for t in drawn[0].texts]
    assert write_seed_scoreboard(pd.DataFrame(), tmp_path / "empty", stamp=STAMP) == []


def test_the_readme_counts_the_classes_under_both_scoreboards():
    table = synthetic()
    assert counts(table) == {"agree": 1, "same direction, different size": 1, "differ": 2, NOT_DECIDED: 1}
    sentence = count_sentence(table)
    assert sentence == ("Against the source studies (5 headline figures): 1 agree, "
                        "1 same direction but different size, 2 differ, 1 not decided here.")
    assert count_sentence(pd.DataFrame()) == ""
    matrix = pd.DataFrame([{"workload": "queue", "machine": "box-a", "scale": "1k/s", "target": "p99 ≤ 50 ms",
                            "verdict": "Postgres suffices", "postgres": "pg", "dedicated": "redis",
                            "postgres_figure": "9 ms", "dedicated_figure": "3 ms", "margin": "×3",
                            "class": "decided by rate", "postgres_server_cpu_us_per_op": "—",
                            "dedicated_server_cpu_us_per_op": "—"}])
    lines = answer_markdown(matrix, table).splitlines()
    at = next(i for i, line in enumerate(lines) if SCOREBOARD_LINK in line)
    assert lines[at + 1] == f"{sentence[:-1]} ([each claim, both ratios]({SEED_LINK}))."
    assert lines[at + 2] == ""
    assert SEED_LINK not in answer_markdown(matrix)  # no claims compared: no figure linked


def test_the_stamp_names_each_machine_once_with_every_commit_of_its_records():
    from pglimits_core.analysis.outputs import merged_stamp

    stamps = ["machine box-a (AMD EPYC) · git 0d78e47aaa", "machine box-a (AMD EPYC) · git 0d78e47aaa",
              "machine box-a (AMD EPYC) · git 506dc2eaaa + uncommitted changes", "machine box-b (Intel) · git 1234567aaa"]
    assert merged_stamp(stamps) == ("machine box-a (AMD EPYC) · git 0d78e47aaa, 506dc2eaaa + uncommitted changes; "
                                    "machine box-b (Intel) · git 1234567aaa")


def test_a_row_whose_ratio_measures_no_system_is_not_decided_whatever_its_direction():
    from pglimits_core.analysis.seed_scoreboard import agreement, counts

    assert agreement("same direction, different size", "not decided: load-limited")[0] == NOT_DECIDED
    assert agreement("same direction, different size", "not decided: limit not recorded")[0] == NOT_DECIDED
    assert agreement("differ (opposite direction)", "not comparable here")[0] == NOT_DECIDED
    assert agreement("agree", "decided by rate")[0] == "agree"
    assert agreement("agree", "decided by a floor above a ceiling")[0] == "agree"
    # inside the tie band the ratio is still one the two systems set: the seed's own band judges it
    assert agreement("agree", "not decided: inside the tie band")[0] == "agree"
    table = pd.DataFrame({"verdict": ["agree", "differ (opposite direction)", "agree"],
                          "verdict class": ["decided by rate", "not decided: load-limited", None]})
    assert counts(table)["agree"] == 2 and counts(table)[NOT_DECIDED] == 1
