"""A plain BM25 baseline for `tgr eval`: document recall@k of the store's own full-text index.

    python bench/bm25_baseline.py STORE.db QUESTIONS.jsonl [--mode local ...]

Ranks each question's chunks by FTS5 bm25() over the store's `chunks_fts` with every term of
the question OR-ed (tgr.text.query_terms: words, and for Chinese bigrams and 3-6 character
substrings; nothing left out), turns them into a ranking of documents as `tgr eval` does, and
prints R@2/5/10 next to `tgr eval`'s figures for the modes asked (default local): issue 25's
"local never below BM25" compares these. Where the questions name their facts
(`meta.supporting_facts` or `meta.answer_items`, as `tgr eval` reads them), F@2/5/10 too: the
share of facts found verbatim in the passages of the first k documents, BM25's passages scored
as `tgr eval` scores a mode's (issue 39's "local F@5 ≥ BM25's"). The store's embedder is the
one it records.

`--pairs` asks two-fact questions instead, made from the set as it is read (as RGB's
information-integration questions are made from two of its questions): questions 1 and 2
joined by "，" (their trailing stops dropped), then 3 and 4, and so on, each pair's evidence
the union of both. Nothing of them is written anywhere.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tgr  # noqa: E402
from tgr.query import evaluate as ev  # noqa: E402
from tgr.query.modes import QuerySettings  # noqa: E402
from tgr.text import query_terms  # noqa: E402


def bm25_passages(kb, question: str, limit: int) -> list:
    """The question's best passages by plain BM25, best first."""
    terms = query_terms(question)
    if not terms:
        return []
    match = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
    conn = kb.conn
    rows = conn.execute(
        "SELECT c.id, f.s FROM (SELECT rowid, bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ? "
        "ORDER BY s, rowid LIMIT ?) f JOIN chunks c ON c.seq = f.rowid ORDER BY f.s, f.rowid",
        (match, limit)).fetchall()
    searcher = kb._searcher(question, QuerySettings())
    return searcher.retriever.passages([(cid, -s) for cid, s in rows])


def facts_found(question: dict, passages: list, ranked: list[str], k: int) -> float:
    """Share of the question's facts found verbatim in the passages of its first k documents."""
    top = set(ranked[:k])
    text = "\n".join(p.text for p in passages if ev._document_key(p) in top)
    facts = ev._facts(question)
    return sum(any(a in text for a in alternatives) for alternatives in facts) / len(facts)


def two_fact_questions(questions: list[dict]) -> list[dict]:
    """Consecutive questions joined two by two into one that asks both (see the module notes)."""
    pairs = []
    for first, second in zip(questions[0::2], questions[1::2]):
        pairs.append({"qid": f"{first['qid']}+{second['qid']}",
                      "question": re.sub(r"[？?。.!！\s]+$", "", first["question"]) + "，" + second["question"],
                      "evidence_doc_ids": list(dict.fromkeys(first["evidence_doc_ids"] + second["evidence_doc_ids"]))})
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store")
    parser.add_argument("questions")
    parser.add_argument("--mode", action="append", dest="modes")
    parser.add_argument("--pairs", action="store_true", help="two-fact questions made of consecutive pairs")
    args = parser.parse_args()
    questions = ev.load_questions(args.questions)
    if args.pairs:
        questions = two_fact_questions(questions)
    with tgr.open(args.store, readonly=True) as kb:
        keys = ev.match_evidence(kb, questions).keys
        recall = {k: 0.0 for k in ev.KS}
        with_facts = [q for q in questions if ev._facts(q)]
        facts = {k: 0.0 for k in ev.KS}
        for q in questions:
            passages = bm25_passages(kb, q["question"], max(ev.KS) * ev.PASSAGES_PER_DOCUMENT)
            ranked = list(dict.fromkeys(ev._document_key(p) for p in passages))
            gold = {keys.get(e, e) for e in q["evidence_doc_ids"]}
            for k in ev.KS:
                recall[k] += len(gold & set(ranked[:k])) / len(gold) / len(questions)
                if ev._facts(q):
                    facts[k] += facts_found(q, passages, ranked, k) / len(with_facts)
        results = ev.evaluate(kb, questions, args.modes or ["local"])
    print(f"{len(questions)} {'two-fact ' if args.pairs else ''}questions, {args.store}"
          + (f"; {len(with_facts)} name their facts" if with_facts else ""))
    columns = [f"R@{k}" for k in ev.KS] + ([f"F@{k}" for k in ev.KS] if with_facts else [])
    print(f"{'ranking':<8}" + "".join(f"{c:>8}" for c in columns))
    print(f"{'bm25':<8}" + "".join(f"{recall[k]:>8.3f}" for k in ev.KS)
          + ("".join(f"{facts[k]:>8.3f}" for k in ev.KS) if with_facts else ""))
    for r in results:
        print(f"{r.mode:<8}" + "".join(f"{r.recall[k]:>8.3f}" for k in ev.KS)
              + ("".join(f"{r.facts[k]:>8.3f}" for k in ev.KS) if with_facts and r.facts else "")
              + f"   latency median {r.latency_ms_median:.1f} ms")


if __name__ == "__main__":
    main()
