"""Offline cost per million characters at 1, 4 and 13 M chars: is the curve flat? (issue 27, part 4)

    python bench/flat_cost.py [--sizes 1,4,13] [--langs en,zh,mixed] [--corpora distinct|shuffled]
                              [--out DIR] [--nice 10] [--stages] [--runs 3]

For each language and size: about that many million characters of the books' paragraphs, every
pass over them in a new seeded order and (--corpora distinct, the default) with every proper name
renamed in each pass after the first (bench/distinct_corpus.py: the entity graph grows with the
text, as on a real corpus); --corpora shuffled repeats the names (bench/run.py's
`shuffled_corpus`: no chunk repeats, but the graph stops growing after the first pass). Then a fresh `python -m tgr.cli index STORE CORPUS --offline --embed-model
tgr:hash-384 -q` in its own process (PYTHONPATH=this checkout), timed by the kernel (wait4:
user + system CPU and peak RSS of the process and its threads) and by the wall clock.
Languages: en (Moby-Dick + the Carol), zh (西游记), mixed (all three). Prints wall, CPU and
peak RSS with each per M chars (--stages: each stage's wall too, from tgr's progress lines),
and per language the largest CPU per M chars ÷ the smallest (target: ≤ 1.3 from 1 to 13 M). --out keeps the corpora and stores (else a temporary directory).
--runs N builds every size N times, in rounds (each round every language and size in turn, so
a machine whose speed drifts over minutes slows one round's builds alike: this one's CPU
seconds for one build vary by a third within minutes), and prints each round's ratio and the
median of the rounds' ratios, which is the figure to compare with the target.
Only the standard library and tgr are needed.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from distinct_corpus import distinct_corpus  # noqa: E402
from run import CORPORA, CORPORA_DIR, shuffled_corpus  # noqa: E402
from index_cpu import command_for  # noqa: E402
from coldstart import run_child  # noqa: E402

BOOKS = {"en": ("en", "carol"), "zh": ("zh",), "mixed": ("en", "zh", "carol")}
TARGET_RATIO = 1.3


MAKERS = {"distinct": distinct_corpus, "shuffled": shuffled_corpus}


def write_corpus(lang: str, millions: float, out: Path, kind: str = "distinct") -> tuple[Path, int]:
    """The corpus file for lang at about millions M chars (kept if already written) and its length."""
    path = out / f"flat-{lang}-{millions:g}m-{kind}.txt"
    if not path.is_file():
        books = [CORPORA_DIR / CORPORA[name] for name in BOOKS[lang]]
        missing = [str(b) for b in books if not b.is_file()]
        if missing:
            raise SystemExit(f"corpus not found: {', '.join(missing)} (set TGR_CORPORA)")
        path.write_text(MAKERS[kind](books, int(millions * 1e6)), encoding="utf-8")
    return path, len(path.read_text(encoding="utf-8"))


def written_corpora(langs: list[str], sizes: list[float], out: Path, kind: str) -> dict:
    """{(lang, millions): write_corpus(...)} for every corpus, written (or found) in a spawned
    child process: a parent that had held the texts would hand its memory to every build it
    starts (a forked child counts its parent's pages in its peak RSS until it execs: 239 MB
    for a 1 M build that peaks at 110 MB)."""
    jobs = [(lang, millions, out, kind) for lang in langs for millions in sizes]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return dict(zip(((lang, millions) for lang, millions, _, _ in jobs), pool.starmap(write_corpus, jobs)))


PROGRESS = re.compile(r"^(\S+)\s+\d+/\d+ \(\d+%\) ([\d.]+) s$")


def index_once(corpus: Path, store: Path, cwd: Path, nice: int, stages: bool) -> tuple[float, float, float, dict]:
    """Wall and CPU seconds, peak RSS (MB) and (with stages) each stage's last progress seconds
    of one offline `tgr index` (a failure stops)."""
    command = command_for(corpus, store, False)
    if stages:
        command.remove("-q")
    if store.exists():
        store.unlink()
    wall, cpu, rss, output = run_child(command, cwd, dict(os.environ, PYTHONPATH=str(ROOT)), nice)
    seconds = {m[1]: float(m[2]) for m in map(PROGRESS.match, output.splitlines()) if m}
    return wall, cpu, rss, seconds


def print_row(row: dict) -> None:
    m = row["millions"]
    print(f"| {row['lang']} | {m:.2f} | {row['wall']:.1f} | {row['cpu']:.1f} | {row['rss']:.0f} | "
          f"{row['wall'] / m:.2f} | {row['cpu'] / m:.2f} | {row['rss'] / m:.0f} | {row['load']:.1f} |", flush=True)


def print_ratios(rows: list[dict]) -> bool:
    """Per language: the largest CPU (and wall) per M chars over the smallest; True if all ≤ target."""
    flat = True
    for lang in dict.fromkeys(r["lang"] for r in rows):
        mine = [r for r in rows if r["lang"] == lang]
        if len(mine) < 2:
            continue
        cpu = [r["cpu"] / r["millions"] for r in mine]
        wall = [r["wall"] / r["millions"] for r in mine]
        ratio = max(cpu) / min(cpu)
        flat &= ratio <= TARGET_RATIO
        print(f"{lang}: CPU per M chars largest ÷ smallest {ratio:.2f} "
              f"({'flat' if ratio <= TARGET_RATIO else 'NOT flat'} within {TARGET_RATIO}), "
              f"wall per M chars {max(wall) / min(wall):.2f}", flush=True)
    return flat


def print_median_ratios(rounds: list[list[dict]]) -> bool:
    """Per language: each size's median CPU per M chars, and the median over rounds of each
    round's largest ÷ smallest CPU per M chars; True if every median ratio is ≤ target."""
    flat = True
    print("medians over the rounds:", flush=True)
    for lang in dict.fromkeys(r["lang"] for r in rounds[0]):
        per_round = [[r["cpu"] / r["millions"] for r in rows if r["lang"] == lang] for rows in rounds]
        sizes = [f"{r['millions']:.2f} M {statistics.median(cpu):.2f}"
                 for r, cpu in zip((r for r in rounds[0] if r["lang"] == lang), zip(*per_round))]
        ratios = [max(cpu) / min(cpu) for cpu in per_round if len(cpu) > 1]
        if not ratios:
            continue
        ratio = statistics.median(ratios)
        flat &= ratio <= TARGET_RATIO
        print(f"{lang}: CPU s per M chars {', '.join(sizes)}; largest ÷ smallest, median of {len(ratios)} rounds "
              f"{ratio:.2f} (rounds {', '.join(f'{r:.2f}' for r in ratios)}): "
              f"{'flat' if ratio <= TARGET_RATIO else 'NOT flat'} within {TARGET_RATIO}", flush=True)
    return flat


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,4,13", help="million chars, comma-separated (default 1,4,13)")
    parser.add_argument("--langs", default="en,zh,mixed", help="of en, zh, mixed (default all three)")
    parser.add_argument("--corpora", choices=sorted(MAKERS), default="distinct",
                        help="distinct (names renamed pass by pass, the default) or shuffled (names repeat)")
    parser.add_argument("--out", type=Path, help="keep corpora and stores here (default: a temporary directory)")
    parser.add_argument("--nice", type=int, default=0, help="run each build at this niceness increment")
    parser.add_argument("--stages", action="store_true",
                        help="also print each stage's wall seconds (from tgr's progress lines) per M chars")
    parser.add_argument("--runs", type=int, default=1,
                        help="rounds of builds (every language and size each round); prints the median ratio")
    args = parser.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",") if s]
    langs = [lang for lang in args.langs.split(",") if lang]
    unknown = [lang for lang in langs if lang not in BOOKS]
    if unknown or not sizes or min(sizes) <= 0 or args.runs < 1:
        parser.error(f"--langs takes {', '.join(BOOKS)}; --sizes positive numbers; --runs at least 1")
    with tempfile.TemporaryDirectory(prefix="tgr-flat-cost-") as temp:
        out = args.out or Path(temp)
        out.mkdir(parents=True, exist_ok=True)
        print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores", flush=True)
        print("| corpus | M chars | wall s | CPU s | peak RSS MB | wall s / M | CPU s / M | RSS MB / M | load |")
        print("|---|---|---|---|---|---|---|---|---|", flush=True)
        corpora = written_corpora(langs, sizes, out, args.corpora)
        rounds = []
        for run in range(args.runs):
            if args.runs > 1:
                print(f"round {run + 1} of {args.runs}", flush=True)
            rows = []
            for lang in langs:
                for millions in sizes:
                    corpus, chars = corpora[lang, millions]
                    load = os.getloadavg()[0]
                    wall, cpu, rss, stages = index_once(corpus.resolve(), (out / f"{corpus.stem}.db").resolve(), out,
                                                        args.nice, args.stages)
                    rows.append({"lang": lang, "millions": chars / 1e6, "wall": wall, "cpu": cpu, "rss": rss,
                                 "load": (load + os.getloadavg()[0]) / 2})
                    print_row(rows[-1])
                    if stages:
                        print("  stage wall s per M chars: " + ", ".join(
                            f"{name} {s / rows[-1]['millions']:.2f}" for name, s in stages.items()), flush=True)
                    if not args.out:
                        (out / f"{corpus.stem}.db").unlink()
            rounds.append(rows)
            flat = print_ratios(rows)
        if args.runs > 1:
            flat = print_median_ratios(rounds)
        print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
