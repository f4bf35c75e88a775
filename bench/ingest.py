"""How fast tgr reads documents, per format and encoding (reading only: no store, no models).

    python bench/ingest.py [--corpus PATH] [--repeat N]

Builds files from one text (default: the English fixture corpus, or --corpus) in a temp dir:
UTF-8 text, the same text in GB18030/Big5/CP1252 where it can be written and is not ASCII, JSONL and CSV rows (one
paragraph per row), an HTML page and a PDF (when pypdf is installed, written as a text-only
PDF by hand), then times tgr.ingest.sources.read_documents on each and prints MB/s.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tgr.ingest.sources import read_documents  # noqa: E402

sys.path.insert(0, str(ROOT / "fixtures"))
from handmade_pdf import make_pdf  # noqa: E402


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in text.split("\n\n") if p.strip()]


def pdf_bytes(pages: list[str]) -> bytes:
    """A text-only PDF, one page per string, lines of ~90 characters."""
    page_lines = []
    for page in pages:
        words, lines, line = page.encode("latin-1", "replace").decode("latin-1").split(), [], ""
        for word in words:
            if len(line) + len(word) > 90:
                lines.append(line)
                line = ""
            line += word + " "
        page_lines.append(lines + [line])
    return make_pdf(page_lines)


def build(text: str, out: Path) -> dict[str, Path]:
    paras = paragraphs(text)
    files = {"utf-8 .txt": out / "utf8.txt"}
    files["utf-8 .txt"].write_text(text, encoding="utf-8")
    for codec in ("gb18030", "big5", "cp1252"):
        try:
            raw = text.encode(codec)
        except UnicodeEncodeError:
            continue
        if raw != text.encode("utf-8"):  # pure ASCII is UTF-8 whatever it was saved as
            (out / f"{codec}.txt").write_bytes(raw)
            files[f"{codec} .txt"] = out / f"{codec}.txt"
    files["jsonl rows"] = out / "rows.jsonl"
    with files["jsonl rows"].open("w", encoding="utf-8") as f:
        for n, p in enumerate(paras):
            f.write(json.dumps({"id": f"p{n}", "title": p[:40], "text": p, "url": f"https://example.org/{n}"},
                               ensure_ascii=False) + "\n")
    files["csv rows"] = out / "rows.csv"
    with files["csv rows"].open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "title", "text", "url"])
        writer.writerows([f"p{n}", p[:40], p, f"https://example.org/{n}"] for n, p in enumerate(paras))
    files["html page"] = out / "page.html"
    body = "".join(f"<p>{p.replace('&', '&amp;').replace('<', '&lt;')}</p>\n" for p in paras)
    files["html page"].write_text(f"<html><head><title>bench</title><script>var x = 1;</script></head>"
                                  f"<body>{body}</body></html>", encoding="utf-8")
    try:
        import pypdf  # noqa: F401
        pages = ["\n".join(paras[i:i + 6]) for i in range(0, len(paras), 6)]
        files["pdf"] = out / "doc.pdf"
        files["pdf"].write_bytes(pdf_bytes(pages))
    except ImportError:
        print("pypdf not installed: no PDF row (pip install 'tgr[pdf]')")
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs")
    args = parser.parse_args()
    if args.corpus:
        text = args.corpus.read_text(encoding="utf-8")
    else:
        corpus = sorted((ROOT / "fixtures" / "corpus_en").glob("*.txt"))
        text = "\n\n".join(p.read_text(encoding="utf-8") for p in corpus)
    with tempfile.TemporaryDirectory() as tmp:
        files = build(text, Path(tmp))
        print(f"{'input':<14} {'bytes':>10} {'docs':>6} {'seconds':>9} {'MB/s':>8}")
        for name, path in files.items():
            best, docs = float("inf"), []
            for _ in range(args.repeat):
                started = time.perf_counter()
                docs = read_documents([str(path)])
                best = min(best, time.perf_counter() - started)
            size = path.stat().st_size
            print(f"{name:<14} {size:>10,} {len(docs):>6} {best:>9.3f} {size / best / 1e6:>8.1f}")


if __name__ == "__main__":
    main()
