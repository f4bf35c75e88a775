"""Is the offline graph one a person recognises? Prints issue 16's graph targets.

    python bench/graph_quality.py                       # everything (~10 min on 2 loaded cores)
    python bench/graph_quality.py --only titles --only carol
    python bench/graph_quality.py --only characters     # 西游记's pilgrims and the words that name no one

- titles: title-entity recall on ../shared/eval/hotpotqa and cmrc2018_trial, each indexed as
  its corpus.jsonl rows and as one .txt file per row (title on the first line; written under
  --work, never into the project): the share of titles (parenthesised part dropped) that are an
  entity's name or one of its aliases (normalised). Also, on hotpotqa's .jsonl store, the share
  of entities typed `concept` and whether "U.S." and "United States" are one entity.
- carol: *A Christmas Carol* (../shared/corpora): the entities named with "Scrooge" (target
  <= 2, counting the firm "Scrooge and Marley") and Marley's type (target person).
  Also issue 25's measures: entities, islands (no relationship), untyped (`concept`) share,
  the types of Christmas, Mansion House, London and Martha, and which of the common words
  Poor, Porch, Gain, Doom, Want, Truth are entities (target none).
- boilerplate: entities that are Project Gutenberg / proofreading / licence / contents /
  illustration-list boilerplate or chapter headings, on the three corpora and on the Carol
  flattened onto one line (target 0), with each book's offline index wall time.
- characters: on 西游记, the pilgrims as the offline graph has them (each one's type and the
  chunks that mention it; target: all typed person), the ten most mentioned entities, and which
  of the words jieba's dictionary tags as names but that name no one and nowhere in the book
  (哥哥 "elder brother", 云头 "cloud", 上马 "mount a horse", 且莫 "do not", 宝贝 "treasure", 拜佛
  "worship", 化斋 "beg for food", 施礼 "salute", 王道 of 国王道：, 古人云 "the ancients said") are
  entities (target none).

Every store is built offline (`--offline --embed-model tgr:hash-384`) in --work (default a
temporary directory) with the tgr of this checkout.
"""
from __future__ import annotations

import argparse
import json
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))

from tgr.text import normalise_name  # noqa: E402

BOILERPLATE = re.compile(r"gutenberg|proofread|licen[cs]e|\bebook|e-?text|illustration|tailpiece|frontispiece|"
                         r"^contents$|\bisbn\b|copyright|pgdp|transcriber|"
                         r"^(?:stave|chapter|book|part)\s+(?:[ivxlc]+|\d+|one|two|three|four|five)$", re.I)
PARENTHESISED = re.compile(r"\s*[(（][^()（）]*[)）]")


def index(store: Path, inputs: list[Path]) -> float:
    """Build store offline from inputs; the wall time in seconds."""
    for old in store.parent.glob(store.name + "*"):
        old.unlink()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tgr.cli", "index", str(store), *map(str, inputs), "--offline",
                    "--embed-model", "tgr:hash-384", "-q"], check=True, cwd=ROOT,
                   env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def known_names(store: Path) -> set[str]:
    conn = sqlite3.connect(store)
    names = {normalise_name(n) for (n,) in conn.execute("SELECT name FROM entities")}
    names |= {normalise_name(a) for (a,) in conn.execute("SELECT alias FROM entity_aliases")}
    conn.close()
    return names


def title_recall(work: Path, dataset: str) -> dict[str, float]:
    rows = [json.loads(line) for line in (SHARED / "eval" / dataset / "corpus.jsonl").open(encoding="utf-8")]
    titles = [PARENTHESISED.sub("", r["title"]).strip() for r in rows if r.get("title")]
    result = {}
    jsonl = work / f"{dataset}-jsonl.db"
    index(jsonl, [SHARED / "eval" / dataset / "corpus.jsonl"])
    txt_dir = work / f"{dataset}-txt"
    txt_dir.mkdir(exist_ok=True)
    for i, row in enumerate(rows):
        (txt_dir / f"{i:05d}.txt").write_text(f"{row['title']}\n\n{row['text']}\n", encoding="utf-8")
    txt = work / f"{dataset}-txt.db"
    index(txt, [txt_dir])
    for label, store in (("jsonl", jsonl), ("txt", txt)):
        names = known_names(store)
        result[label] = sum(normalise_name(t) in names for t in titles) / len(titles)
    return result


def types_and_us(store: Path) -> tuple[float, int, bool]:
    conn = sqlite3.connect(store)
    total, concept = conn.execute("SELECT count(*), sum(type = 'concept') FROM entities").fetchone()
    ids = lambda key: {r[0] for r in conn.execute(
        "SELECT id FROM entities WHERE id = ?1 UNION SELECT entity_id FROM entity_aliases WHERE key = ?1", (key,))}
    one = ids("u.s.") | ids("united states")
    conn.close()
    return concept / max(1, total), total, len(one) == 1


def carol(work: Path) -> tuple[list[str], str]:
    store = work / "carol.db"
    index(store, [SHARED / "corpora" / "en_christmas_carol.txt"])
    conn = sqlite3.connect(store)
    scrooge = sorted({n for (n,) in conn.execute(
        "SELECT e.name FROM entities e WHERE e.name LIKE '%scrooge%' OR e.id IN "
        "(SELECT entity_id FROM entity_aliases WHERE alias LIKE '%scrooge%')")})
    marley = conn.execute("SELECT e.type FROM entities e JOIN entity_aliases a ON a.entity_id = e.id "
                          "WHERE a.key = 'marley' ORDER BY e.mentions DESC LIMIT 1").fetchone()
    total, islands, untyped = conn.execute(
        "SELECT count(*), sum(degree = 0), sum(type = 'concept') FROM entities").fetchone()
    types = dict(conn.execute("SELECT name, type FROM entities WHERE name IN "
                              "('Christmas', 'Mansion House', 'London', 'Martha')").fetchall())
    common = [n for (n,) in conn.execute("SELECT name FROM entities WHERE name IN "
                                         "('Poor', 'Porch', 'Gain', 'Doom', 'Want', 'Truth') ORDER BY name")]
    print(f"A Christmas Carol: {total} entities, {islands} islands ({islands / max(1, total):.0%}), "
          f"untyped {untyped / max(1, total):.0%}; types {types}; common words as entities {common} (target [])")
    conn.close()
    return scrooge, marley[0] if marley else "(none)"


def boilerplate(work: Path) -> None:
    flat = work / "en_christmas_carol_flat.txt"  # the book flattened onto one line
    flat.write_text(" ".join((SHARED / "corpora" / "en_christmas_carol.txt").read_text(encoding="utf-8").split()),
                    encoding="utf-8")
    for name in ("en_christmas_carol", "en_christmas_carol_flat", "en_moby_dick", "zh_xiyouji"):
        store = work / f"{name}.db"
        seconds = index(store, [flat if name.endswith("_flat") else SHARED / "corpora" / f"{name}.txt"])
        conn = sqlite3.connect(store)
        found = sorted(n for (n,) in conn.execute("SELECT name FROM entities") if BOILERPLATE.search(n))
        total = conn.execute("SELECT count(*) FROM entities").fetchone()[0]
        conn.close()
        print(f"{name:24s} boilerplate entities {len(found)} {found[:8]}  "
              f"(of {total}; offline index {seconds:.1f} s)")


PILGRIMS = ("行者", "孙悟空", "八戒", "沙僧", "唐僧", "三藏", "观音菩萨", "白马")
NOT_NAMES = ("哥哥", "云头", "上马", "且莫", "宝贝", "拜佛", "化斋", "施礼", "王道", "古人云")


def characters(work: Path) -> None:
    store = work / "zh_xiyouji.db"
    if not store.exists():
        index(store, [SHARED / "corpora" / "zh_xiyouji.txt"])
    conn = sqlite3.connect(store)
    typed = {n: (t, m) for n, t, m in conn.execute("SELECT name, type, mentions FROM entities")}
    top = conn.execute("SELECT name, type, mentions FROM entities ORDER BY mentions DESC, name LIMIT 10").fetchall()
    conn.close()
    pilgrims = ", ".join(f"{n} {typed[n][0]} {typed[n][1]}" if n in typed else f"{n} (none)" for n in PILGRIMS)
    print(f"西游记 pilgrims (type, chunks): {pilgrims}  (target: each a person)")
    print("西游记 most mentioned: " + ", ".join(f"{n} {t} {m}" for n, t, m in top))
    present = [f"{n} {typed[n][0]} {typed[n][1]}" for n in NOT_NAMES if n in typed]
    print(f"西游记 words that name no one as entities: {len(present)} of {len(NOT_NAMES)} {present}  (target 0)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", choices=["titles", "carol", "boilerplate", "characters"])
    parser.add_argument("--work", type=Path, help="where to build the stores (default: a temporary directory)")
    args = parser.parse_args()
    parts = args.only or ["titles", "carol", "boilerplate", "characters"]
    with tempfile.TemporaryDirectory() as temporary:
        work = args.work or Path(temporary)
        work.mkdir(parents=True, exist_ok=True)
        if "titles" in parts:
            for dataset in ("hotpotqa", "cmrc2018_trial"):
                recall = title_recall(work, dataset)
                print(f"{dataset:15s} title-entity recall: jsonl {recall['jsonl']:.3f}  txt {recall['txt']:.3f}"
                      "  (target >= 0.90)")
            share, total, one = types_and_us(work / "hotpotqa-jsonl.db")
            print(f"hotpotqa        concept share {share:.1%} of {total} entities (target <= 30%); "
                  f"U.S./United States one entity: {one}")
        if "carol" in parts:
            scrooge, marley = carol(work)
            print(f"A Christmas Carol: entities named with Scrooge {len(scrooge)} {scrooge} (target <= 2); "
                  f"Marley typed {marley} (target person)")
        if "boilerplate" in parts:
            boilerplate(work)
        if "characters" in parts:  # (the boilerplate part's 西游记 store, when it ran)
            characters(work)


if __name__ == "__main__":
    main()
