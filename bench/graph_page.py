"""Check the exported graph page in a real headless Chromium, time its first frame, keep a screenshot.

    python bench/graph_page.py                          # fixtures/corpus_en -> ./graph-page.png
    python bench/graph_page.py --synthetic 10000        # a 10,000-entity store: the < 2 s target
    python bench/graph_page.py --store fixtures/demo_carol.db --overview --screenshot docs/graph-carol.png
    python bench/graph_page.py --docs ../shared/corpora/en_moby_dick.txt --screenshot /tmp/moby.png

Builds a store offline from the documents (default: the English fixtures, 300-token chunks), or
from a synthetic corpus of about N invented names in groups of 40 (--synthetic N; sentences
pair names of one group, a few pair neighbouring groups), or takes an existing one (--store);
exports it with `tgr export STORE graph.html`, then runs Chromium on
`graph.html#node=<the entity of highest degree>` (the page opens that entity's panel on load),
or on the overview (--overview): once with --dump-dom, to check that the canvas was drawn with
every entity and the node panel shows the entity's name, relationships, community report and
source passages, and to read the time from navigation start to the first drawn frame that the
page records (`data-first-frame-ms`, `data-painted-ms` on <body>, from performance.now());
then with --screenshot; then at `#search=<its name with a letter dropped>`, to check that the
search box finds it anyway. Prints sizes and timings and exits non-zero when a check fails.

Needs Chromium from the system packages (Debian: apt-get install chromium). Every step is
bounded by --timeout. The page itself fetches nothing: its Content-Security-Policy forbids it.
"""
from __future__ import annotations

import argparse
import json
import random
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
from tgr.export.writers import DEFAULT_TOP  # noqa: E402

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
               f"--user-data-dir={profile}", "--window-size=1400,900", *extra, url]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"chromium failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout, seconds


SYLLABLES = ["ar", "bel", "cor", "dan", "el", "fen", "gal", "hor", "is", "jun", "kel", "lor", "mar", "nor", "ol",
             "pel", "quin", "ros", "sal", "tor", "ul", "vel", "wen", "xan", "yor", "zel", "bri", "cas", "dru", "fal"]
VERBS = ["met", "wrote to", "travelled with", "argued with", "worked beside", "sailed with", "visited", "praised"]
GROUP = 40


def synthetic_corpus(entities: int, folder: Path, seed: int = 7) -> list[str]:
    """Text files naming about `entities` invented people in groups of GROUP: each sentence
    pairs two of a group (a few favourites much more often), 8 % pair a neighbouring group."""
    rng = random.Random(seed)

    def word() -> str:
        return "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 2, 3)))).capitalize()

    names: set[str] = set()
    while len(names) < entities:
        names.add(word() + " " + word())
    ordered = sorted(names)
    rng.shuffle(ordered)
    groups = [ordered[i:i + GROUP] for i in range(0, len(ordered), GROUP)]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for g, members in enumerate(groups):
        weights = [1 / (k + 1) for k in range(len(members))]
        near = groups[(g + 1) % len(groups)] + groups[(g * 7 + 3) % len(groups)]
        pairs = [(members[k], members[(k + 1) % len(members)]) for k in range(len(members))]  # everyone once
        pairs += [tuple(rng.choices(members, weights, k=2)) for _ in range(len(members) * 2)]
        lines = []
        for a, b in pairs:
            if a == b or rng.random() < 0.08:
                b = rng.choice(near)
            lines.append(f"{a} {rng.choice(VERBS)} {b} in the morning.")
        for d in range(0, len(lines), 6):
            path = folder / f"group{g:04d}_{d // 6:03d}.txt"
            path.write_text(" ".join(lines[d:d + 6]) + "\n", encoding="utf-8")
            paths.append(str(path))
    return paths


def build_store(args, work: Path) -> tuple[Path, float]:
    """The store to export: --store as given, else indexed offline into work (kept there: a
    second run with the same --out reuses it)."""
    if args.store:
        return Path(args.store), 0.0
    store = work / "store.db"
    if store.exists() and args.out:
        return store, 0.0
    store.unlink(missing_ok=True)
    docs = synthetic_corpus(args.synthetic, work / "synthetic") if args.synthetic else args.docs
    started = time.perf_counter()
    # hashed vectors: the page does not read them, and the local model's would take most of the time
    with tgr.open(store, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index(docs, chunk_size=args.chunk_size, chunk_overlap=min(40, args.chunk_size // 4))
    return store, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", nargs="+", default=[str(ROOT / "fixtures" / "corpus_en")],
                        help="documents to index (default: fixtures/corpus_en)")
    parser.add_argument("--synthetic", type=int, metavar="N", help="index a synthetic corpus of about N entities")
    parser.add_argument("--store", help="export this existing store instead of building one")
    parser.add_argument("--chunk-size", type=int, default=300)
    parser.add_argument("--level", type=int, default=0, help="community level the page colours by")
    parser.add_argument("--top", type=int, default=DEFAULT_TOP, help="hubs the overview labels at most")
    parser.add_argument("--overview", action="store_true", help="open the overview, not the top entity's panel")
    parser.add_argument("--screenshot", default="graph-page.png", help="where the screenshot goes")
    parser.add_argument("--out", help="keep the store and the page in this directory")
    parser.add_argument("--browser", help="Chromium executable (default: found on PATH)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per Chromium run")
    args = parser.parse_args()
    browser = find_browser(args.browser)

    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="tgr-graph-page-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        store, index_s = build_store(args, work)
        page = work / "graph.html"
        started = time.perf_counter()
        with tgr.open(store, create=False, readonly=True) as kb:
            written = kb.export(page, level=args.level, top=args.top, title=store.name)
        export_s = time.perf_counter() - started
        return check_page(args, browser, work, page, written, index_s, export_s)
    finally:
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)


def check_page(args, browser: str, work: Path, page: Path, written: dict, index_s: float, export_s: float) -> int:
    """Open the page in Chromium, check what it drew, print the timings."""
    text_of_page = page.read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="tgr-data">(.*?)</script>', text_of_page, re.S).group(1))
    details = json.loads(re.search(r'id="tgr-details">(.*?)</script>', text_of_page, re.S).group(1))
    if not data["nodes"]:
        sys.exit("the store has no entities to draw")
    top = data["nodes"][0]
    url = page.resolve().as_uri() + ("" if args.overview else "#node=" + quote(top["id"], safe=""))
    profile = work / "chromium-profile"
    dom, dom_s = chromium(browser, profile, url, "--dump-dom", timeout=args.timeout)
    Path(args.screenshot).parent.mkdir(parents=True, exist_ok=True)
    _, shot_s = chromium(browser, profile, url, "--virtual-time-budget=3000",
                         f"--screenshot={Path(args.screenshot).resolve()}", timeout=args.timeout)
    typo = top["name"][0] + top["name"][2:] if len(top["name"]) >= 5 else top["name"]
    found_dom, _ = chromium(browser, profile, page.resolve().as_uri() + "#search=" + quote(typo, safe=""),
                            "--dump-dom", "--virtual-time-budget=2000", timeout=args.timeout)
    matches = re.search(r'<span id="matches"[^>]*>(.*?)</span>', found_dom, re.S)
    first_match = re.sub(r"<[^>]+>", "", (matches.group(1) if matches else "").split("</button>")[0])
    parsed = Page()
    parsed.feed(dom)
    text = " ".join(" ".join(parsed.panel_text).split())
    drawn = int(parsed.status.get("data-drawn", "0") or 0)
    first = int(parsed.body.get("data-first-frame-ms", "-1"))
    painted = int(parsed.body.get("data-painted-ms", "-1"))
    checks = {
        "page script ran (body data-ready)": parsed.body.get("data-ready") == "1",
        "drew on a canvas": parsed.canvases >= 1,
        f"drew all {len(data['nodes'])} entities": drawn == len(data["nodes"]),
        "first frame within 2 s of navigation start": 0 <= first < 2000,
        "screenshot written": Path(args.screenshot).exists() and Path(args.screenshot).stat().st_size > 10_000,
        f"search for {typo!r} (a letter dropped) finds {top['name']!r} first": first_match.startswith(top["name"] + " "),
    }
    if not args.overview:
        own = top["c"][0] if top["c"] else None
        checks.update({
            "panel opened for the entity in the URL": parsed.panel.get("data-node") == top["id"],
            "panel shows the entity's name": top["name"] in text,
            "panel lists relationships": any(h.startswith("Relationships") for h in parsed.headings),
            "panel shows the community report": any(h.startswith("Community report") for h in parsed.headings)
            and (not own or (data["communities"][own]["title"] or "") in text),
            "panel shows source passages with their document": parsed.passages == len(details["passages"][0]) > 0,
        })
    print(f"store           {written['entities']} entities, {written['relationships']} relationships, "
          f"{written['communities']} communities, {written['reports']} reports"
          + (f" (indexed in {index_s:.1f} s)" if index_s else ""))
    print(f"page            {page.stat().st_size / 1e6:.2f} MB, exported in {export_s:.2f} s")
    print(f"chromium        first frame {first} ms, painted {painted} ms after navigation start; "
          f"whole --dump-dom run {dom_s:.1f} s (browser start included), screenshot run {shot_s:.1f} s")
    print(f"screenshot      {args.screenshot}")
    for name, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'}  {name}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
