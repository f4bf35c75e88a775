"""Check the exported graph page in a real headless Chromium, and keep a screenshot.

    python bench/graph_page.py                          # fixtures/corpus_en -> docs/graph-page.png
    python bench/graph_page.py --docs ../shared/corpora/en_moby_dick.txt --screenshot /tmp/moby.png

Builds a store offline from the documents (default: the English fixtures, 300-token chunks),
exports it with `tgr export STORE graph.html`, then runs Chromium twice on
`graph.html#node=<the entity of highest degree>` (the page opens that entity's panel on load):
once with --dump-dom, to check that Cytoscape drew the graph (canvas elements, the count of
drawn entities the page reports) and that the node panel shows the entity's name,
relationships, community report and source passages; once with --screenshot. Prints the
sizes and timings it measured and exits non-zero when a check fails.

Needs Chromium from the system packages (Debian: apt-get install chromium). Every step is
bounded by --timeout. The page itself fetches nothing: its Content-Security-Policy forbids it.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tgr  # noqa: E402
from tgr.export import DEFAULT_TOP, export_store  # noqa: E402

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class Page(HTMLParser):
    """The parts of the dumped DOM the checks look at."""

    def __init__(self):
        super().__init__()
        self.stack: list[tuple[str, dict]] = []
        self.canvases = 0
        self.body: dict = {}
        self.status: dict = {}
        self.panel: dict = {}
        self.panel_text: list[str] = []
        self.headings: list[str] = []
        self.passages = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "body":
            self.body = attrs
        if tag == "canvas" and any(a.get("id") == "graph" for _, a in self.stack):
            self.canvases += 1
        if attrs.get("id") == "status":
            self.status = attrs
        if attrs.get("id") == "panel":
            self.panel = attrs
        if attrs.get("class") == "passage" and self._in_panel():
            self.passages += 1
        if tag not in ("br", "img", "input", "meta", "link", "hr", "option"):
            self.stack.append((tag, attrs))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if self._in_panel():
            self.panel_text.append(data)
            if self.stack and self.stack[-1][0] == "h3":
                self.headings.append(data.strip())

    def _in_panel(self) -> bool:
        return any(a.get("id") == "panel" for _, a in self.stack)


def find_browser(given: str | None) -> str:
    for name in ((given,) if given else BROWSERS):
        path = shutil.which(name) if name else None
        if path:
            return path
    sys.exit("no Chromium found: install it (Debian: apt-get install chromium) or pass --browser PATH")


def chromium(browser: str, profile: Path, url: str, *extra: str, timeout: float) -> tuple[str, float]:
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run", "--hide-scrollbars",
               f"--user-data-dir={profile}", "--window-size=1400,900", "--virtual-time-budget=3000",
               *extra, url]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"chromium failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", nargs="+", default=[str(ROOT / "fixtures" / "corpus_en")],
                        help="documents to index (default: fixtures/corpus_en)")
    parser.add_argument("--chunk-size", type=int, default=300)
    parser.add_argument("--level", type=int, default=0, help="community level the page colours by")
    parser.add_argument("--top", type=int, default=DEFAULT_TOP, help="entities drawn at first")
    parser.add_argument("--screenshot", default=str(ROOT / "docs" / "graph-page.png"))
    parser.add_argument("--out", help="keep the store and the page in this directory")
    parser.add_argument("--browser", help="Chromium executable (default: found on PATH)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per Chromium run")
    args = parser.parse_args()
    browser = find_browser(args.browser)

    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="tgr-graph-page-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        store, page = work / "store.db", work / "graph.html"
        store.unlink(missing_ok=True)
        started = time.perf_counter()
        with tgr.open(store) as kb:
            kb.index(args.docs, chunk_size=args.chunk_size, chunk_overlap=min(40, args.chunk_size // 4))
        index_s = time.perf_counter() - started
        started = time.perf_counter()
        with tgr.open(store, create=False, readonly=True) as kb:
            written = export_store(kb.conn, page, level=args.level, top=args.top, title=store.name)
        export_s = time.perf_counter() - started

        data = json.loads(re.search(r'id="tgr-data">(.*?)</script>', page.read_text(encoding="utf-8"),
                                    re.S).group(1))
        if not data["nodes"]:
            sys.exit("the store has no entities to draw")
        top = data["nodes"][0]
        url = page.resolve().as_uri() + "#node=" + quote(top["id"], safe="")
        profile = work / "chromium-profile"
        dom, dom_s = chromium(browser, profile, url, "--dump-dom", timeout=args.timeout)
        Path(args.screenshot).parent.mkdir(parents=True, exist_ok=True)
        _, shot_s = chromium(browser, profile, url, f"--screenshot={Path(args.screenshot).resolve()}",
                             timeout=args.timeout)

        parsed = Page()
        parsed.feed(dom)
        text = " ".join(" ".join(parsed.panel_text).split())
        expected_drawn = min(len(data["nodes"]), max(args.top, 1))
        drawn = int(parsed.status.get("data-drawn", "0") or 0)
        checks = {
            "page script ran (body data-ready)": parsed.body.get("data-ready") == "1",
            "Cytoscape drew on canvas elements": parsed.canvases >= 1,
            f"drew at least the top {expected_drawn} entities": drawn >= expected_drawn,
            "panel opened for the entity in the URL": parsed.panel.get("data-node") == top["id"],
            "panel shows the entity's name": top["name"] in text,
            "panel lists relationships": any(h.startswith("Relationships") for h in parsed.headings),
            "panel shows the community report": any(h.startswith("Community report") for h in parsed.headings)
            and (not top["c"][0] or (data["communities"][top["c"][0]]["title"] or "") in text),
            "panel shows source passages with their document": parsed.passages == len(top["p"]) > 0,
            "screenshot written": Path(args.screenshot).exists() and Path(args.screenshot).stat().st_size > 10_000,
        }
        print(f"store           {written['entities']} entities, {written['relationships']} relationships, "
              f"{written['communities']} communities, {written['reports']} reports (indexed in {index_s:.1f} s)")
        print(f"page            {page.stat().st_size / 1e6:.2f} MB, exported in {export_s:.2f} s")
        print(f"chromium        dump-dom {dom_s:.1f} s, screenshot {shot_s:.1f} s; drew {drawn} entities, "
              f"{parsed.canvases} canvases; panel for {top['name']!r}")
        print(f"screenshot      {args.screenshot}")
        for name, ok in checks.items():
            print(f"{'ok  ' if ok else 'FAIL'}  {name}")
        return 0 if all(checks.values()) else 1
    finally:
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
