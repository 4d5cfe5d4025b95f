"""Engine colours and line styles fixed across every figure, the look charts share, and
``save_figure`` (PNG + SVG). Each workload draws its own charts (``workloads/<w>/charts.py``)."""

from __future__ import annotations

from pathlib import Path

# No backend is forced here: matplotlib picks Agg where there is no display (papermill, CI) and
# the inline backend in JupyterLab; MPLBACKEND overrides both.
import matplotlib
import matplotlib.pyplot as plt

from pglimits_core.config import figures_dir

# One colour per system family, the same in every figure (variants differ by line style).
ENGINE_COLOURS = {
    "pg_skiplocked": "#1f4e79", "pg_delete": "#2e75b6", "pgmq": "#5b9bd5", "postgres": "#2e75b6",
    "redis_reliable": "#c00000", "redis": "#c00000", "sqlite_wal": "#548235", "sqlite": "#548235",
    "opensearch": "#bf9000", "qdrant": "#7030a0",
}
LINE_STYLES = ["-", "--", "-.", ":"]


def colour_for(variant: str) -> str:
    return ENGINE_COLOURS.get(variant.split()[0], "#595959")


def line_style_for(variant: str, variants) -> str:
    """Variants of one system share its colour and differ by line style, in a stable order."""
    family = variant.split()[0]
    siblings = sorted(v for v in set(variants) if v.split()[0] == family)
    return LINE_STYLES[siblings.index(variant) % len(LINE_STYLES)]


def finish(ax) -> None:
    """The look every chart shares: light grid, small legend beside the plot (ten variants'
    lines would hide under a legend drawn inside it)."""
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def save_figure(fig: plt.Figure, name: str, directory: Path | None = None) -> list[Path]:
    """Write ``name``.png (150 dpi) and ``name``.svg; returns both paths."""
    directory = Path(directory or figures_dir())
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{name}.png", directory / f"{name}.svg"]
    fig.savefig(paths[0], dpi=150, bbox_inches="tight")
    # no date and fixed element ids: the same records give the same SVG bytes, so a regenerated
    # figure shows up in git only when its data changed
    with matplotlib.rc_context({"svg.hashsalt": "pglimits"}):
        fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None})
    return paths
