"""Build a further dev set, outside /work/shared/eval, from public data (issue 39 item 1).

    python bench/dev_sets.py DRCD_dev.json OUT_DIR      # writes OUT_DIR/drcd_dev/{corpus,questions}.jsonl

Source: DRCD (Delta Reading Comprehension Dataset, traditional-Chinese Wikipedia, Shao et al.
2018), https://github.com/DRCKnowledgeTeam/DRCD, commit b944790de5af02c5fbb7cd9cb1473d27d169eebf,
file DRCD_dev.json; licence CC BY-SA 3.0. The rows are never copied into the project: rebuild
them with this script, in the format of the shared dev sets (corpus.jsonl, questions.jsonl with
evidence_doc_ids and evidence_texts; see the shared eval README).

Built: each paragraph is a document (title = its article's). A paragraph is a candidate when
one of its questions has a first answer of at most 40 characters found in the paragraph; 100
candidates drawn with random.Random(7), one question each (the first that qualifies). The
corpus is every paragraph of the drawn paragraphs' articles: the distractors are on the same
topics. evidence_texts is the sentence holding the answer. Standard library only, deterministic.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

NAME = "drcd_dev"
SEED = 7
QUESTIONS = 100
MAX_ANSWER = 40
SENTENCE_END = "。！？!?\n"


def _question(paragraph: dict) -> tuple[dict, str] | None:
    """The paragraph's first question with a short answer found in it."""
    for qa in paragraph["qas"]:
        answer = qa["answers"][0]["text"].strip() if qa["answers"] else ""
        if answer and len(answer) <= MAX_ANSWER and answer in paragraph["context"]:
            return qa, answer
    return None


def _sentence(text: str, start: int, answer: str) -> str:
    """The sentence of text that holds the answer at start (else its first occurrence)."""
    if text[start:start + len(answer)] != answer:
        start = text.find(answer)
    lo, hi = start, start + len(answer)
    while lo > 0 and text[lo - 1] not in SENTENCE_END:
        lo -= 1
    while hi < len(text) and text[hi] not in SENTENCE_END:
        hi += 1
    return text[lo:min(hi + 1, len(text))].strip()


def build(raw: Path, out: Path) -> None:
    articles = json.loads(raw.read_text(encoding="utf-8"))["data"]
    paragraphs = [(a, p) for a in articles for p in a["paragraphs"] if p["context"].strip()]
    candidates = [(a, p) for a, p in paragraphs if _question(p)]
    drawn = random.Random(SEED).sample(candidates, QUESTIONS)
    topics = {a["id"] for a, _ in drawn}
    corpus = [{"doc_id": f"{NAME}-{p['id']}", "title": a["title"], "text": p["context"],
               "meta": {"source": "DRCD_dev", "source_id": p["id"]}}
              for a, p in paragraphs if a["id"] in topics]
    questions = []
    for a, p in sorted(drawn, key=lambda ap: ap[1]["id"]):
        qa, answer = _question(p)
        questions.append({
            "qid": f"{NAME}-{qa['id']}", "question": qa["question"], "answer": answer,
            "answer_aliases": [], "question_type": "single_hop:paragraph",
            "evidence_doc_ids": [f"{NAME}-{p['id']}"],
            "evidence_texts": [_sentence(p["context"], qa["answers"][0].get("answer_start", -1), answer)],
            "meta": {"source_id": qa["id"], "title": a["title"]}})
    ids = {d["doc_id"] for d in corpus}
    assert len(ids) == len(corpus) and all(q["evidence_doc_ids"][0] in ids for q in questions)
    folder = out / NAME
    folder.mkdir(parents=True, exist_ok=True)
    for file, rows in (("corpus.jsonl", corpus), ("questions.jsonl", questions)):
        (folder / file).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{NAME}: {len(questions)} questions, {len(corpus)} documents "
          f"({sum(len(d['text']) for d in corpus)} chars) in {folder}")


if __name__ == "__main__":
    build(Path(sys.argv[1]), Path(sys.argv[2]))
