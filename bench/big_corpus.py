"""100 M characters on one machine (issue 41 item 1): build, ask, add, merge, measured.

    python bench/big_corpus.py [--sizes 10,30,100] [--langs en,mixed] [--out /tmp/big/run]
                               [--shards 0] [--shard-size 10] [--nice 0]

For each language and size: a distinct corpus (bench/distinct_corpus.py: seeded recombination
of the books' paragraphs, names renamed pass by pass) indexed offline in one fresh process
(bench/flat_cost.py's index_once: kernel CPU and peak RSS, each stage's wall from the progress
lines). Then on that store, each in a fresh process: a cold `tgr ask --offline` in local,
naive and global mode, and adding one small document (`tgr index STORE DOC --offline`). Prints
CPU-s per M chars, peak RSS, store MB per M chars, each stage's share of the stages' wall, the
asks' and the addition's wall / CPU / RSS. --shards N (N > 0): N distinct English corpora of
--shard-size M chars each are built as shards and united by `tgr merge OUT SHARD...` in one
process (wall, CPU, peak RSS), and the union's rows are compared with one build of the N files
together (bench/merge.py's same_rows: documents, chunks, entities, relationships, communities,
reports; the content digest also covers run records, which differ). Runs outside CI; --out keeps corpora and
stores (default: a temporary directory). Standard library and tgr only.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from coldstart import run_child  # noqa: E402
from flat_cost import BOOKS, index_once, written_corpora  # noqa: E402

QUESTIONS = {"en": "Who is Scrooge?", "mixed": "Who is Scrooge?"}
MODES = ("local", "naive", "global")
ADDED = ("Marley's clerk walked to Nantucket in the winter of that year. He met Captain Ahab at the "
         "harbour, and the two spoke of the white whale and of Scrooge's counting-house.\n")


def env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT))


def tgr(*args) -> list[str]:
    return [sys.executable, "-m", "tgr.cli", *map(str, args)]


def timed(command: list[str], cwd: Path, nice: int = 0) -> tuple[float, float, float, str]:
    return run_child(command, cwd, env(), nice)


def asks(store: Path, lang: str, cwd: Path) -> dict:
    """{mode: (wall, cpu, rss)} of one cold offline question per mode (after one warm-up run
    so that bytecode caches and the page cache are as an installed, used store has them)."""
    timed(tgr("ask", store, QUESTIONS[lang], "--offline", "--mode", "local"), cwd)
    return {mode: timed(tgr("ask", store, QUESTIONS[lang], "--offline", "--mode", mode), cwd)[:3]
            for mode in MODES}


def add_one(store: Path, cwd: Path) -> tuple[float, float, float]:
    """Wall, CPU and peak RSS of adding one small document to the built store."""
    doc = cwd / f"{store.stem}-added.txt"
    doc.write_text(ADDED, encoding="utf-8")
    return timed(tgr("index", store, doc, "--offline", "--embed-model", "tgr:hash-384", "-q"), cwd)[:3]


def build_row(lang: str, corpus: Path, chars: int, out: Path, nice: int) -> dict:
    store = (out / f"{corpus.stem}.db").resolve()
    load = os.getloadavg()[0]
    wall, cpu, rss, stages = index_once(corpus.resolve(), store, out, nice, True)
    m = chars / 1e6
    row = {"lang": lang, "m": m, "wall": wall, "cpu": cpu, "rss": rss, "stages": stages,
           "mb": store.stat().st_size / 1e6, "load": (load + os.getloadavg()[0]) / 2}
    print(f"| {lang} | {m:.1f} | {wall:.0f} | {cpu:.0f} | {cpu / m:.2f} | {rss:.0f} | "
          f"{row['mb'] / m:.1f} | {row['load']:.1f} |", flush=True)
    total = sum(stages.values()) or 1.0
    print("  stage share of wall: " + ", ".join(f"{k} {v / total:.0%} ({v:.0f} s)" for k, v in stages.items()),
          flush=True)
    for mode, (w, c, r) in asks(store, lang, out).items():
        print(f"  cold ask {mode}: wall {w:.2f} s, CPU {c:.2f} s, peak RSS {r:.0f} MB", flush=True)
    w, c, r = add_one(store, out)
    print(f"  add one document: wall {w:.2f} s, CPU {c:.2f} s, peak RSS {r:.0f} MB", flush=True)
    return row


def merge_shards(count: int, size: float, out: Path, nice: int) -> None:
    """count distinct shards of size M chars: build each, merge them, compare with one build."""
    shard_dir = out / "shards"
    shard_dir.mkdir(parents=True, exist_ok=True)
    whole = written_corpora(["en"], [size * count], shard_dir, "distinct")[("en", size * count)][0]
    text = whole.read_text(encoding="utf-8").split("\n\n")
    per = -(-len(text) // count)
    files = []
    for i in range(count):
        f = shard_dir / f"shard-{i:02d}.txt"
        f.write_text("\n\n".join(text[i * per:(i + 1) * per]), encoding="utf-8")
        files.append(f.resolve())
    del text
    stores = []
    for f in files:
        store = (shard_dir / f"{f.stem}.db").resolve()
        wall, cpu, rss, _ = index_once(f, store, shard_dir, nice, False)
        print(f"  shard {f.stem}: wall {wall:.0f} s, CPU {cpu:.0f} s, peak RSS {rss:.0f} MB", flush=True)
        stores.append(store)
    merged = (shard_dir / "merged.db").resolve()
    merged.unlink(missing_ok=True)
    wall, cpu, rss, _ = timed(tgr("merge", merged, *stores, "--offline", "-q"), shard_dir, nice)
    print(f"merge of {count} shards of {size:g} M: wall {wall:.0f} s, CPU {cpu:.0f} s, peak RSS {rss:.0f} MB",
          flush=True)
    single = (shard_dir / "single.db").resolve()
    single.unlink(missing_ok=True)
    wall, cpu, rss, _ = timed(tgr("index", single, *files, "--offline", "--embed-model", "tgr:hash-384", "-q"),
                              shard_dir, nice)
    print(f"single build of the {count} files: wall {wall:.0f} s, CPU {cpu:.0f} s, peak RSS {rss:.0f} MB",
          flush=True)
    from merge import same_rows  # bench/merge.py: documents, chunks, graph, communities, reports
    same = same_rows(merged, single)
    print(f"merged = single build: {same} ({'EQUAL' if all(same.values()) else 'DIFFERENT'})", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,30,100", help="million chars, comma-separated")
    parser.add_argument("--langs", default="en,mixed", help="of en, mixed")
    parser.add_argument("--out", type=Path, help="keep corpora and stores here (default: a temporary directory)")
    parser.add_argument("--shards", type=int, default=0, help="also merge this many English shards (0: no)")
    parser.add_argument("--shard-size", type=float, default=10.0, help="million chars per shard")
    parser.add_argument("--nice", type=int, default=0)
    args = parser.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",") if s]
    langs = [lang for lang in args.langs.split(",") if lang]
    if any(lang not in BOOKS for lang in langs):
        parser.error(f"--langs takes {', '.join(BOOKS)}")
    with tempfile.TemporaryDirectory(prefix="tgr-big-") as temp:
        out = (args.out or Path(temp)).resolve()
        out.mkdir(parents=True, exist_ok=True)
        print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores", flush=True)
        print("| corpus | M chars | wall s | CPU s | CPU s / M | peak RSS MB | store MB / M | load |")
        print("|---|---|---|---|---|---|---|---|", flush=True)
        if sizes and langs:
            corpora = written_corpora(langs, sizes, out, "distinct")
            for lang in langs:
                for millions in sizes:
                    corpus, chars = corpora[lang, millions]
                    build_row(lang, corpus, chars, out, args.nice)
        if args.shards:
            merge_shards(args.shards, args.shard_size, out, args.nice)
        print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
