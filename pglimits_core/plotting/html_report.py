"""A self-contained HTML page: sections of prose, tables (pandas ``to_html``) and figures
embedded as base64 ``data:`` URIs, so the file can be mailed or opened offline with nothing
beside it (no CSS, JS, fonts or images fetched from anywhere)."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1440px; padding: 0 1rem;
       box-sizing: border-box; color: #222; overflow-wrap: break-word; }
h1 { border-bottom: 2px solid #1f4e79; } h2 { color: #1f4e79; margin-top: 2.5rem; }
table { border-collapse: collapse; font-size: 0.8rem; margin: 0.6rem 0 1.2rem; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #eef3f8; } tr:nth-child(even) td { background: #fafafa; }
td.long { overflow-wrap: anywhere; min-width: 5rem; }
code, pre { white-space: pre-wrap; overflow-wrap: anywhere; }
.flag { color: #a00000; font-weight: 600; }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption, .caption { font-size: 0.85rem; color: #555; }
.wide { overflow-x: auto; max-width: 100%; }
nav.contents { font-size: 0.85rem; line-height: 1.6; }
details { margin: 0.5rem 0; } .note { background: #fff8e1; padding: 0.5rem 0.8rem; }
"""
# Fitting a laptop screen (analysis/report_width.py checks it at 1280 px): the page is never wider
# than the window, a table wider than the page scrolls inside its own box (.wide), column names
# wrap after "_", and a long cell (prose, a setting, a variant label) may break inside a word
# (td.long) — a short one (a number) never does.

MIME = {".png": "image/png", ".svg": "image/svg+xml"}
FOLD_ROWS = 15  # a table longer than this folds under its caption
LONG_CELL = 30  # characters: a cell this long is text that may wrap anywhere (td.long)


@dataclass
class Section:
    """One heading with paragraphs, captioned tables and figures, in that order."""

    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)
    collapsed: bool = False  # long reference material (full settings) folds away
    tables_open: bool = False  # the findings (the decision matrix) never fold, however long


#: a PNG larger than this is embedded with a 256-colour palette (a chart's few colours survive it,
#: and the report stays under the repository's 5 MB a file: one machine's report carries four
#: workloads' charts and the findings' three pictures, the interference timeline alone 2.4 MB drawn)
PALETTE_ABOVE_BYTES = 100_000


def data_uri(path: Path) -> str:
    """The file's bytes as a ``data:`` URI (PNG or SVG); a large PNG re-encoded with a palette."""
    mime = MIME.get(path.suffix.lower())
    if mime is None:
        raise ValueError(f"cannot embed {path.name}: only {sorted(MIME)} are supported")
    data = path.read_bytes()
    if mime == "image/png" and len(data) > PALETTE_ABOVE_BYTES:
        data = paletted_png(data)
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def paletted_png(data: bytes) -> bytes:
    """The PNG with at most 256 colours, optimised (the file on disk stays as drawn)."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        out = io.BytesIO()
        image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, format="PNG", optimize=True)
    return out.getvalue() if out.tell() < len(data) else data


def table_html(caption: str, table: pd.DataFrame) -> str:
    if table is None or table.empty:
        return f"<p class='caption'>{html.escape(caption)}: no data.</p>"
    body = formatted_table(table)
    # wide tables scroll sideways inside their box instead of widening the whole page
    return f"{caption_html(caption)}\n<div class='wide'>{body}</div>"


def formatted_table(table: pd.DataFrame) -> str:
    """The table as the report shows it (a notebook too): yes / no, "—" for nothing, numbers
    rounded, column names that may wrap; the values themselves stay in the DataFrame."""
    if table is None or table.empty:
        return "<p>no data</p>"
    return breakable(readable(table).to_html(index=False, na_rep="—", border=0, escape=True, float_format=_number))


#: characters of a table caption shown before its method folds away (a sentence, not a page)
CAPTION_CHARS = 160


def caption_html(caption: str) -> str:
    """A short caption in bold; a long one's first sentence in bold and the rest (the method)
    folded under "how", so the table opens after a line, not after a paragraph."""
    first, sep, rest = caption.partition(". ")
    if len(caption) <= CAPTION_CHARS or not rest:
        return f"<p class='caption'><b>{html.escape(caption)}</b></p>"
    return (f"<p class='caption'><b>{html.escape(first + sep.strip())}</b></p>\n"
            f"<details class='caption'><summary>how</summary>{html.escape(rest)}</details>")


def readable(table: pd.DataFrame) -> pd.DataFrame:
    """Booleans as "yes" / "no" and None as "—": a reader's words, not Python's (NaN reads "—"
    through ``to_html``'s ``na_rep``, which leaves an object column's None as "None")."""
    def word(value):
        if value is None:
            return "—"
        return ("yes" if value else "no") if isinstance(value, bool | np.bool_) else value

    shown = table.copy()
    for index in range(shown.shape[1]):  # by position: a table may repeat a column name
        column = shown.iloc[:, index]
        if pd.api.types.is_bool_dtype(column) or pd.api.types.is_object_dtype(column):
            shown.isetitem(index, column.map(word))
    return shown


def breakable(table: str) -> str:
    """A pandas HTML table whose column names may wrap after "_" (``<wbr>``) and whose long cells
    are marked ``long``; the cells' text is unchanged (a search for it still finds it)."""
    table = re.sub(r"<th>([^<]*)</th>", lambda m: f"<th>{m.group(1).replace('_', '_<wbr>')}</th>", table)
    return re.sub(rf"<td>([^<]{{{LONG_CELL},}})</td>", r"<td class='long'>\1</td>", table)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def figure_html(path: Path, caption: str = "") -> str:
    """The image with its caption — what to see in it — and its file name (how the repository,
    the notebooks and docs/RESULTS.md name it)."""
    name = html.escape(path.stem)
    said = f"{html.escape(caption)} <code>{name}</code>" if caption else name
    return f"<figure><img alt='{name}' src='{data_uri(path)}'><figcaption>{said}</figcaption></figure>"


def folded_table_html(caption: str, table: pd.DataFrame) -> str:
    """A bulk table folds away under its caption: the figures above it are what a reader skims."""
    shown = table_html(caption, table)
    if table is None or len(table) <= FOLD_ROWS:
        return shown
    title = caption.partition(". ")[0].rstrip(".")  # its first sentence: the summary is one line
    return f"<details><summary>{html.escape(title)} ({len(table)} rows)</summary>\n{shown}\n</details>"


def anchor(title: str) -> str:
    return "s-" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def section_html(section: Section, captions: dict[str, str] | None = None) -> str:
    """Prose, then the figures (captioned from ``captions``, by file stem), then the tables (long
    ones folded, unless the section keeps them open)."""
    parts = [f"<p>{text}</p>" for text in section.paragraphs]  # paragraphs are trusted HTML we write
    parts += [figure_html(path, (captions or {}).get(path.stem, "")) for path in section.figures]
    shown = table_html if section.tables_open else folded_table_html
    parts += [shown(caption, table) for caption, table in section.tables]
    inner = "\n".join(parts)
    if section.collapsed:
        inner = f"<details><summary>show</summary>\n{inner}\n</details>"
    return f"<section id='{anchor(section.title)}'><h2>{html.escape(section.title)}</h2>\n{inner}\n</section>"


def contents_html(sections: list[Section]) -> str:
    """The sections as one paragraph of links: a few lines, so the findings open the first screen."""
    items = " · ".join(f"<a href='#{anchor(s.title)}'>{html.escape(s.title)}</a>" for s in sections)
    return f"<nav class='contents'><b>Contents:</b> {items}</nav>"


def render(title: str, intro: str, sections: list[Section], captions: dict[str, str] | None = None) -> str:
    body = "\n".join(section_html(s, captions) for s in sections)
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n"
            f"<body><h1>{html.escape(title)}</h1>\n<p>{intro}</p>\n{contents_html(sections)}\n{body}\n</body></html>\n")


def write(path: Path, title: str, intro: str, sections: list[Section],
          captions: dict[str, str] | None = None) -> Path:
    """Write the page atomically (a reader never sees half a report); returns ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(render(title, intro, sections, captions), encoding="utf-8")
    tmp.replace(path)
    return path
