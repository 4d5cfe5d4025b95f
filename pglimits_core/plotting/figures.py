"""Engine colours and line styles fixed across every figure, the look charts share, the rule for
drawing a point that was not sustained, the machine/commit stamp, and ``save_figure`` (PNG +
SVG). Each workload draws its own charts (``workloads/<w>/charts.py``)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

# No backend is forced here: matplotlib picks Agg where there is no display (papermill, CI) and
# the inline backend in JupyterLab; MPLBACKEND overrides both.
import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from pglimits_core.config import figures_dir

GREY = "#595959"
#: what a figure is written as unless a profile says otherwise (``figure_formats``)
FIGURE_FORMATS = ("png", "svg")
POSTGRES, REDIS = "#2e75b6", "#c00000"
# One colour per system family, the same in every figure (variants differ by line style or
# hatch). Keyed by the first word of a variant label; a workload whose labels name a client
# (pub/sub's pg_notify) passes the server instead (``colour_for(label, server)``).
ENGINE_COLOURS = {
    "pg_skiplocked": "#1f4e79", "pg_delete": POSTGRES, "pgmq": "#5b9bd5", "postgres": POSTGRES,
    "pgvector": POSTGRES, "pg_gin": POSTGRES,
    # Postgres with extensions (PG 17): Postgres's blue family, told apart from stock PG 16
    "pg_search": "#9dc3e6", "pg_textsearch": "#9dc3e6", "pgvectorscale": "#9dc3e6",
    "redis_reliable": REDIS, "redis": REDIS, "sqlite_wal": "#548235", "sqlite": "#548235",
    # pub/sub: the colour of its server (the capacity chart draws by design label alone)
    "pg_notify": POSTGRES, "redis_publish": REDIS,
    "opensearch": "#bf9000", "elasticsearch": "#00897b", "qdrant": "#7030a0",
}
LINE_STYLES = ["-", "--", "-.", ":"]
HATCHES = ["", "//", "..", "xx"]
MARKERS = ["o", "s", "^", "D", "v"]


def colour_for(variant: str, server: str | None = None) -> str:
    """The system's colour: the first word of ``variant``, else ``server``'s; grey only for a
    system no table knows (add it to ENGINE_COLOURS)."""
    return ENGINE_COLOURS.get(variant.split()[0]) or ENGINE_COLOURS.get(server or "", GREY)


def _sibling_index(variant: str, variants) -> int:
    family = variant.split()[0]
    return sorted(v for v in set(variants) if v.split()[0] == family).index(variant)


def line_style_for(variant: str, variants) -> str:
    """Variants of one system share its colour and differ by line style, in a stable order."""
    return LINE_STYLES[_sibling_index(variant, variants) % len(LINE_STYLES)]


def marker_for(variant: str, variants) -> str:
    """A line chart's second cue beside the line style: variants of one system, distinct markers."""
    return MARKERS[_sibling_index(variant, variants) % len(MARKERS)]


def hatch_for(variant: str, variants) -> str:
    """A bar chart's line style: the first variant of a system plain, its siblings hatched."""
    return HATCHES[_sibling_index(variant, variants) % len(HATCHES)]


def wrap_label(text: str, width: int = 20) -> str:
    """A tick label on lines of at most ``width`` characters (at spaces), so neighbours don't overlap."""
    return "\n".join(textwrap.wrap(text, width, break_long_words=False)) or text


def sustained_line(ax, x, y, sustained, marker: str = "o", **style) -> None:
    """A line through the sustained points only, broken at the others, which are drawn hollow:
    a rate the system did not hold is a stall, not a point on its curve. ``style`` needs
    ``color``; it may carry ``linestyle`` and ``label``."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    held = np.asarray(sustained, dtype=bool)
    ax.plot(x, np.where(held, y, np.nan), marker=marker, **style)
    ax.scatter(x[~held], y[~held], marker=marker, s=45, facecolors="white", edgecolors=style["color"],
               linewidths=1.3, zorder=3)


def finish(ax) -> None:
    """The look every chart shares: light grid, small legend beside the plot (ten variants'
    lines would hide under a legend drawn inside it)."""
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def stamp_figure(fig: plt.Figure, text: str) -> None:
    """Write ``text`` (the machine and commit the records came from) under the figure's lowest
    element, right-aligned, in small grey type; stamping again replaces it."""
    previous = getattr(fig, "_pglimits_stamp", None)
    if previous is not None:
        previous.remove()
    box = fig.get_tightbbox()  # inches, every element drawn so far
    width, height = fig.get_size_inches()
    fig._pglimits_stamp = fig.text(box.x1 / width, (box.y0 - 0.1) / height, text, ha="right", va="top",
                                   fontsize=7, color=GREY)


def save_figure(fig: plt.Figure, name: str, directory: Path | None = None, stamp: str | None = None,
                formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Write ``name``.png (150 dpi) and/or ``name``.svg (``formats``), stamped with ``stamp``
    when given; returns the paths written."""
    if stamp:
        stamp_figure(fig, stamp)
    directory = Path(directory or figures_dir())
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    if "png" in formats:
        paths.append(directory / f"{name}.png")
        fig.savefig(paths[-1], dpi=150, bbox_inches="tight")
    if "svg" in formats:
        paths.append(directory / f"{name}.svg")
        # no date and fixed element ids: the same records give the same SVG bytes, so a regenerated
        # figure shows up in git only when its data changed
        with matplotlib.rc_context({"svg.hashsalt": "pglimits"}):
            fig.savefig(paths[-1], bbox_inches="tight", metadata={"Date": None})
    return paths
