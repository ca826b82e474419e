"""Check the built book's pages at 1280 px in headless Chromium: nothing scrolls, no number wraps.

For each page, a copy of its HTML with a measuring script is loaded with ``chromium --dump-dom``;
the script reports every table whose box is wider than the space it is given (it would scroll
horizontally), every printed output that would scroll, and every table cell holding a number whose text breaks over more than one line.
Cells of prose (examples, questions) may wrap and are counted, not reported.

Usage: python tools/check_layout.py _build/html/book/*.html   (exit 1 when a page fails)
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = r"""
<script>
window.addEventListener('load', () => {
  const out = {overflow: [], wrapped: [], prose_wrapped: 0, tables: 0, pre: []};
  document.querySelectorAll('.cell_output pre').forEach(p => {
    if (p.scrollWidth > p.clientWidth + 1) out.pre.push({need: p.scrollWidth, have: p.clientWidth, head: p.innerText.slice(0, 60)});
  });
  document.querySelectorAll('table').forEach((t, i) => {
    out.tables += 1;
    let el = t.parentElement;
    while (el && el !== document.body) {
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible') {
        out.overflow.push({table: i, head: (t.innerText || '').slice(0, 60),
                           need: el.scrollWidth, have: el.clientWidth});
        break;
      }
      el = el.parentElement;
    }
    t.querySelectorAll('td, th').forEach(c => {
      const r = document.createRange(); r.selectNodeContents(c);
      const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
      if (tops.size > 1) {
        const text = c.innerText.trim();
        if (/^[-+\u2212]?[\d.,]+%?(\s*(\u00b1|\[)|$)/.test(text) || /^\[/.test(text)) {
          out.wrapped.push({table: i, cell: text.slice(0, 40)});
        } else { out.prose_wrapped += 1; }
      }
    });
  });
  const pre = document.createElement('pre'); pre.id = 'layout-check';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
</script>
"""


def check(page: Path) -> dict[str, object]:
    """Measure one built page; return the script's report."""
    text = page.read_text(encoding="utf-8").replace("</body>", SCRIPT + "</body>")
    probe = page.with_name(f".layout-{page.name}")
    probe.write_text(text, encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory() as profile:
            dom = subprocess.run(
                [
                    "chromium",
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-first-run",
                    f"--user-data-dir={profile}",
                    "--window-size=1280,1000",
                    "--dump-dom",
                    probe.resolve().as_uri(),
                ],
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            ).stdout
    finally:
        probe.unlink(missing_ok=True)
    found = re.search(r'<pre id="layout-check"[^>]*>(.*?)</pre>', dom, re.S)
    if not found:
        raise SystemExit(f"{page}: the measuring script did not run (is chromium installed?)")
    return json.loads(html.unescape(found.group(1)))


def main(pages: list[str]) -> int:
    failed = False
    for name in pages:
        report = check(Path(name))
        bad = report["overflow"] or report["wrapped"] or report["pre"]
        failed |= bool(bad)
        print(
            f"{'FAIL' if bad else 'ok  '} {Path(name).stem}: {report['tables']} tables, "
            f"{len(report['overflow'])} scroll, {len(report['wrapped'])} numbers wrapped, "
            f"{len(report['pre'])} text outputs scroll, "
            f"{report['prose_wrapped']} prose cells wrapped"
        )
        for item in report["overflow"]:
            print(
                f"       scrolls: table {item['table']} needs {item['need']} px of {item['have']}: "
                f"{item['head']!r}"
            )
        for item in report["pre"]:
            print(f"       output scrolls: needs {item['need']} px of {item['have']}: {item['head']!r}")
        for item in report["wrapped"]:
            print(f"       wraps: table {item['table']}: {item['cell']!r}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
