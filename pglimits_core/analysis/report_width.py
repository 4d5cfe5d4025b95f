"""Does the HTML report fit a laptop screen? The page is loaded in the machine's headless Chromium
at a 1280-px-wide window with every ``<details>`` opened (a reader unfolds them), and a small
script lists every element whose right edge passes the viewport outside a box that scrolls
sideways (``overflow-x: auto|scroll``): a table cut off at the right edge, or one that makes the
whole page scroll.

The script writes its findings as JSON into ``<pre id="width-check">``; Chromium's ``--dump-dom``
prints the page after it ran, and ``parse_findings`` reads them back. Usage::

    python -m pglimits_core.analysis.report_width data/results/<host>/full/report.html

prints one line per overflow and exits 1 if there is any (2 if the check could not run).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_MISSING = "unavailable: chromium not found — install the Debian package chromium"
WINDOW = (1280, 900)  # a laptop screen
MARKER = "width-check"
TIMEOUT_S = 120  # a 4 MB report takes ~5 s on an idle box; a hung browser must not hang a test
CHROMIUM_FLAGS = ["--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-quic",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--virtual-time-budget=5000"]

# Runs once the page (and its data: images) has loaded. Only where an overflow *starts* is listed:
# a cell of a table that sticks out is not listed again beside its table.
MEASURE_JS = """
window.addEventListener('load', function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var root = document.documentElement, limit = root.clientWidth;
  function right(el) { return el.getBoundingClientRect().right; }
  function sticksOut(el) { return right(el) > limit + 0.5; }
  function scrolls(el) { var o = getComputedStyle(el).overflowX; return o === 'auto' || o === 'scroll'; }
  function insideScroller(el) {
    for (var a = el.parentElement; a && a !== document.body; a = a.parentElement) if (scrolls(a)) return true;
    return false;
  }
  function describe(el) {
    var classes = (el.getAttribute('class') || '').trim();  // an <svg>'s className is not a string
    var name = el.tagName.toLowerCase() + (classes ? '.' + classes.split(/\\s+/).join('.') : '');
    var section = el.closest('section'), h2 = section && section.querySelector('h2');
    var where = (h2 ? h2.textContent.trim() : (section ? section.id : 'page'));
    var text = el.textContent.replace(/\\s+/g, ' ').trim().slice(0, 60);
    return {element: name, section: where, caption: captionOf(el), text: text};
  }
  function captionOf(el) {  // the <p class='caption'> just before the table (or its box)
    for (var a = el; a && a !== document.body && a.tagName !== 'SECTION'; a = a.parentElement) {
      var p = a.previousElementSibling;
      if (p && p.classList.contains('caption')) return p.textContent.trim();
    }
    return '';
  }
  var found = [];
  document.body.querySelectorAll('*').forEach(function (el) {
    if (el.id === '""" + MARKER + """' || !sticksOut(el) || insideScroller(el)) return;
    var parent = el.parentElement;
    if (parent && parent !== document.body && sticksOut(parent)) return;
    var item = describe(el); item.right = Math.round(right(el)); found.push(item);
  });
  var boxed = [];  // tables that fit only by scrolling inside their own box: fine, but worth knowing
  document.body.querySelectorAll('*').forEach(function (el) {
    if (scrolls(el) && el.scrollWidth > el.clientWidth + 1) {
      var item = describe(el.firstElementChild || el); item.right = el.scrollWidth; item.box = el.clientWidth; boxed.push(item);
    }
  });
  var pre = document.createElement('pre'); pre.id = '""" + MARKER + """';
  pre.textContent = JSON.stringify({scroll_width: root.scrollWidth, client_width: limit, overflows: found, boxed: boxed});
  document.body.appendChild(pre);
});
"""


@dataclass(frozen=True)
class Overflow:
    """One element sticking out past the right edge of the window."""

    element: str
    section: str
    caption: str
    text: str
    right: int
    viewport: int

    def line(self) -> str:
        where = f"{self.section} / {self.caption}" if self.caption else self.section
        return (f"overflow: {self.element} in '{where}' reaches {self.right} px > {self.viewport} px "
                f"(\"{self.text}\")")


@dataclass
class WidthCheck:
    """What the check found; ``reason`` is set (and nothing measured) when it could not run."""

    reason: str = ""
    scroll_width: int = 0
    client_width: int = 0
    overflows: list[Overflow] = field(default_factory=list)
    #: tables wider than their box, read by scrolling inside it (allowed; listed with --boxed)
    boxed: list[Overflow] = field(default_factory=list)

    @property
    def measured(self) -> bool:
        return not self.reason

    def lines(self) -> list[str]:
        """One line per overflow, the page-wide one first; empty when the page fits."""
        page = ([f"overflow: the page is {self.scroll_width} px wide in a {self.client_width} px window "
                 "(the whole page scrolls sideways)"] if self.scroll_width > self.client_width else [])
        return page + [o.line() for o in self.overflows]

    def boxed_lines(self) -> list[str]:
        return [f"scrolls inside its box: {b.element} in '{b.section} / {b.caption}' is {b.right} px wide "
                f"in a {b.viewport} px box" for b in self.boxed]


def find_chromium() -> str | None:
    """The machine's Chromium (Debian names it ``chromium``), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def instrumented(page: str) -> str:
    """``page`` with the measuring script added just before ``</body>`` (or at its end)."""
    script = f"<script>{MEASURE_JS}</script>"
    at = page.lower().rfind("</body>")
    return page + script if at < 0 else page[:at] + script + page[at:]


def parse_findings(dom: str) -> WidthCheck:
    """The findings the script left in the dumped DOM; a DOM without them is an error (the
    script did not run: a broken page, or a browser that stopped before ``load``)."""
    match = re.search(rf"<pre id=\"{MARKER}\">(.*?)</pre>", dom, re.S)
    if match is None:
        raise RuntimeError(f"the page has no <pre id='{MARKER}'>: the width script did not run")
    found = json.loads(html.unescape(match.group(1)))
    viewport = int(found["client_width"])
    return WidthCheck(scroll_width=int(found["scroll_width"]), client_width=viewport,
                      overflows=[_overflow(o, viewport) for o in found["overflows"]],
                      boxed=[_overflow(b, int(b["box"])) for b in found.get("boxed", [])])


def _overflow(found: dict, viewport: int) -> Overflow:
    return Overflow(found["element"], found["section"], found["caption"], found["text"], int(found["right"]),
                    viewport)


def dump_dom(chromium: str, page: Path, window: tuple[int, int] = WINDOW, timeout_s: float = TIMEOUT_S) -> str:
    """The DOM of ``page`` after its scripts ran, as Chromium prints it (a private profile dir,
    so two checks at once never share one)."""
    with tempfile.TemporaryDirectory(prefix="pglimits-width-") as profile:
        command = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                   f"--window-size={window[0]},{window[1]}", "--dump-dom", page.resolve().as_uri()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"chromium exited {done.returncode} on {page.name}: {tail}")
    return done.stdout


def check_report(report: Path, window: tuple[int, int] = WINDOW, timeout_s: float = TIMEOUT_S) -> WidthCheck:
    """Load a copy of ``report`` with the script added and return what sticks out."""
    chromium = find_chromium()
    if chromium is None:
        return WidthCheck(reason=CHROMIUM_MISSING)
    with tempfile.TemporaryDirectory(prefix="pglimits-width-page-") as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(instrumented(Path(report).read_text(encoding="utf-8")), encoding="utf-8")
        return parse_findings(dump_dom(chromium, page, window, timeout_s))


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="list what sticks out of the report in a 1280-px window")
    parser.add_argument("report", type=Path)
    parser.add_argument("--width", type=int, default=WINDOW[0])
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds Chromium may take")
    parser.add_argument("--boxed", action="store_true", help="also list tables that scroll inside their box")
    args = parser.parse_args(argv)
    if not args.report.is_file():
        print(f"report_width: error: no report at {args.report}", file=sys.stderr)
        return 2
    try:
        check = check_report(args.report, (args.width, WINDOW[1]), args.timeout)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"report_width: error: {exc}", file=sys.stderr)
        return 2
    if not check.measured:
        print(f"report_width: {check.reason}", file=sys.stderr)
        return 2
    for line in check.lines() + (check.boxed_lines() if args.boxed else []):
        print(line)
    print(f"report_width: {len(check.lines())} overflow(s) at {args.width} px: {args.report}", file=sys.stderr)
    return 1 if check.lines() else 0


if __name__ == "__main__":
    sys.exit(main())
