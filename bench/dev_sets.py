"""Build further dev sets, outside /work/shared/eval, from public data (issue 39 item 1).

    python bench/dev_sets.py DRCD_dev.json OUT_DIR        # writes OUT_DIR/drcd_dev/{corpus,questions}.jsonl
    python bench/dev_sets.py musique_train.json OUT_DIR   # writes OUT_DIR/musique/{corpus,questions}.jsonl
    python bench/dev_sets.py hotpotqa_train.json OUT_DIR  # writes OUT_DIR/hotpotqa_train/{corpus,questions}.jsonl
    python bench/dev_sets.py PROMPT.txt OUT_DIR NAME      # an IRCoT demonstration file: OUT_DIR/NAME/...
    python bench/dev_sets.py L-CITEEVAL.json OUT_DIR NAME # an L-CiteEval multi-hop file: OUT_DIR/NAME/...

The source is told by the file's shape (SQuAD-style {"data": [...]}: DRCD; a list of questions
with "question_decomposition": MuSiQue; one with "supporting_facts" and "context": HotpotQA; a text file of "# METADATA:" blocks: IRCoT). The rows are never copied into the project: rebuild them
with this script, in the format of the shared dev sets (corpus.jsonl, questions.jsonl with
evidence_doc_ids and evidence_texts; see the shared eval README). Standard library only,
deterministic: the same file gives byte-identical output. Both builders draw their questions with
random.Random(7) (at most 100) and take evidence_texts as the sentence(s) holding the answer.

drcd_dev (Chinese, single hop). Source: DRCD (Delta Reading Comprehension Dataset,
traditional-Chinese Wikipedia, Shao et al. 2018), https://github.com/DRCKnowledgeTeam/DRCD,
commit b944790de5af02c5fbb7cd9cb1473d27d169eebf, file DRCD_dev.json; licence CC BY-SA 3.0.
Built: each paragraph is a document (title = its article's). A paragraph is a candidate when
one of its questions has a first answer of at most 40 characters found in the paragraph; 100
candidates drawn, one question each (the first that qualifies). The corpus is every paragraph of
the drawn paragraphs' articles: the distractors are on the same topics. evidence_texts is the
sentence holding the answer (sentences end at 。！？!? or a line break).

musique (English, multi hop: 2 to 4 hops). Source: MuSiQue-Ans (Trivedi et al., TACL 2022;
English Wikipedia paragraphs; licence CC BY 4.0), the 100-question train subset HippoRAG ships:
https://github.com/OSU-NLP-Group/HippoRAG, commit b144c46df14cabe5f5822d8caded4bec5f709461 (the
commit the shared hotpotqa set comes from; repository MIT), file data/musique_train.json.
Built: a question is a candidate when it is answerable; 100 drawn (the file holds exactly 100,
so all of them), written in the file's order. Each question comes with 20 paragraphs, its
supporting ones and distractors MuSiQue retrieved for it (same topics); the corpus is the drawn
questions' paragraphs, deduplicated by (title, text), numbered in order of first appearance
(1,890 documents). evidence_doc_ids are the paragraphs of the question's hops
(question_decomposition's paragraph_support_idx), in hop order; evidence_texts[i] is the sentence
of that paragraph holding its hop's answer (first occurrence; from the first to the last such
sentence when one paragraph serves two hops). English sentences end at . ! ? (closing quotes
after it) before a space and a capital, digit or opening quote, except after an initial or
a common abbreviation. meta.supporting_facts holds those sentences (F@k of `tgr eval`),
meta.hops each hop's question, answer and document, meta.candidate_doc_ids the 20 paragraphs.

hotpotqa_train (English, multi hop: bridge and comparison, 9 of the 22 comparisons yes/no). Source:
HotpotQA (Yang et al., EMNLP 2018; English Wikipedia; licence CC BY-SA 4.0), the 100-question
train subset HippoRAG ships (distractor setting), same repository and commit as musique, file
data/hotpotqa_train.json. NB: these are the very questions of the shared hotpotqa set (same
HotpotQA ids; /work/shared/eval/build.py reads the same file), rebuilt here in musique's format;
HippoRAG's dev file (data/hotpotqa.json) is not in the mirror. Built: the file holds exactly 100
questions, all drawn, in the file's order. Each comes with its 10 context paragraphs (2 gold, 8
distractors; one question has 4); a paragraph's text is its sentences joined as HotpotQA writes
them (each but the first opens with its space); the corpus is the drawn questions' paragraphs,
deduplicated by (title, text), numbered in order of first appearance (994 documents).
evidence_doc_ids are the paragraphs HotpotQA's supporting facts name, in the order they first
appear there; evidence_texts[i] is the span of that paragraph from its first to its last
supporting sentence; meta.supporting_facts holds each supporting sentence ({doc_id, text}, F@k
of `tgr eval`), meta.candidate_doc_ids the question's paragraphs. Answers are HotpotQA's (no
aliases); question_type is multi_hop:bridge or multi_hop:comparison.

ircot_hotpotqa, ircot_2wiki (English, multi hop; small sets no dev question is in, for an unseen
check of answers). Source: the IRCoT demonstrations HippoRAG ships (same repository and commit;
from github.com/stonybrooknlp/ircot, Apache 2.0), data/ircot_prompts/{hotpotqa,2wikimultihopqa}/
gold_with_3_distractors_context_cot_qa_codex.txt: 29 HotpotQA train questions (CC BY-SA 4.0) and
20 2WikiMultihopQA questions (Apache 2.0), each with its gold paragraphs and up to 3 distractors.
Built: every question, in the file's order; the corpus is their paragraphs deduplicated by
(title, text); the answer is what the worked answer ends with ("So the answer is: X.").
The file does not say which paragraphs are gold: evidence_doc_ids and evidence_texts are empty
(no recall), meta.candidate_doc_ids lists the question's paragraphs.

lcite_2wiki, lcite_hotpotqa (English, multi hop; answers only, a larger haystack). Source: L-CiteEval
(Tang et al. 2024), https://github.com/ZetangForward/L-CITEEVAL, commit
97a2200f3bfa1351b30b5a0e0c12bf11c6e3752b, files dataset/{2wikimultihopqa,hotpotqa}.json (their
rows come from 2WikiMultihopQA, Apache 2.0, and HotpotQA, CC BY-SA 4.0): 6 questions each, every
question with about 225 Wikipedia paragraphs (its gold ones among them, not marked). Built: every
question in the file's order; a paragraph's text is the file's without its first line (the
title, kept as the title); the corpus is the questions' paragraphs deduplicated by (title, text).
evidence_doc_ids and evidence_texts are empty (no recall); only answers and context hits count.
"""
from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

SEED = 7
QUESTIONS = 100
MAX_ANSWER = 40
SENTENCE_END = "。！？!?\n"
EN_SENTENCE_END = re.compile(r"""[.!?]["'”’)\]]*(?=\s+["'“‘(\[]?[A-Z0-9])""")
EN_NOT_END = re.compile(r"(?:\b[A-Z]|\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Gen|Col|Lt|Sgt|Capt|Rev|Mt|No|vs|etc|"
                        r"Inc|Co|Ltd|Corp|Bros|U\.S|e\.g|i\.e))\.$")  # an initial or an abbreviation


def _cuts_zh(text: str) -> list[int]:
    """Sentence cuts (offsets a sentence starts at) after each of SENTENCE_END."""
    return [i + 1 for i, c in enumerate(text) if c in SENTENCE_END]


def _cuts_en(text: str) -> list[int]:
    """Sentence cuts of English text (see the module notes)."""
    return [m.end() for m in EN_SENTENCE_END.finditer(text) if not EN_NOT_END.search(text, 0, m.start() + 1)]


def _sentence(text: str, start: int, answer: str, cuts=_cuts_zh) -> str:
    """The sentence(s) of text that hold the answer at start (else its first occurrence)."""
    if text[start:start + len(answer)] != answer:
        start = text.find(answer)
    end = start + len(answer)
    marks = cuts(text)
    lo = max((c for c in marks if c <= start), default=0)
    hi = min((c for c in marks if c > end), default=len(text))
    return text[lo:hi].strip()


def _draw(candidates: list) -> list:
    """The deterministic draw of at most QUESTIONS candidates."""
    return random.Random(SEED).sample(candidates, min(QUESTIONS, len(candidates)))


def _write(out: Path, name: str, corpus: list[dict], questions: list[dict]) -> None:
    """Check the shared sets' invariants and write OUT/name/{corpus,questions}.jsonl."""
    texts = {d["doc_id"]: d["text"] for d in corpus}
    assert len(texts) == len(corpus) and all(t.strip() for t in texts.values())
    for q in questions:
        assert len(q["evidence_doc_ids"]) == len(q["evidence_texts"])
        assert all(e in texts and t and t in texts[e] for e, t in zip(q["evidence_doc_ids"], q["evidence_texts"]))
    assert len({q["qid"] for q in questions}) == len(questions)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    for file, rows in (("corpus.jsonl", corpus), ("questions.jsonl", questions)):
        (folder / file).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{name}: {len(questions)} questions, {len(corpus)} documents "
          f"({sum(len(d['text']) for d in corpus)} chars) in {folder}")


def _question(paragraph: dict) -> tuple[dict, str] | None:
    """The DRCD paragraph's first question with a short answer found in it."""
    for qa in paragraph["qas"]:
        answer = qa["answers"][0]["text"].strip() if qa["answers"] else ""
        if answer and len(answer) <= MAX_ANSWER and answer in paragraph["context"]:
            return qa, answer
    return None


def build_drcd(raw: dict, out: Path, name: str = "drcd_dev") -> None:
    articles = raw["data"]
    paragraphs = [(a, p) for a in articles for p in a["paragraphs"] if p["context"].strip()]
    candidates = [(a, p) for a, p in paragraphs if _question(p)]
    drawn = _draw(candidates)
    topics = {a["id"] for a, _ in drawn}
    corpus = [{"doc_id": f"{name}-{p['id']}", "title": a["title"], "text": p["context"],
               "meta": {"source": "DRCD_dev", "source_id": p["id"]}}
              for a, p in paragraphs if a["id"] in topics]
    questions = []
    for a, p in sorted(drawn, key=lambda ap: ap[1]["id"]):
        qa, answer = _question(p)
        questions.append({
            "qid": f"{name}-{qa['id']}", "question": qa["question"], "answer": answer,
            "answer_aliases": [], "question_type": "single_hop:paragraph",
            "evidence_doc_ids": [f"{name}-{p['id']}"],
            "evidence_texts": [_sentence(p["context"], qa["answers"][0].get("answer_start", -1), answer)],
            "meta": {"source_id": qa["id"], "title": a["title"]}})
    _write(out, name, corpus, questions)


def build_musique(raw: list[dict], out: Path, name: str = "musique") -> None:
    order = {id(r): i for i, r in enumerate(raw)}
    drawn = sorted(_draw([r for r in raw if r.get("answerable", True)]), key=lambda r: order[id(r)])
    ids: dict[tuple[str, str], str] = {}
    for r in drawn:
        for p in r["paragraphs"]:
            ids.setdefault((p["title"], p["paragraph_text"]), f"{name}-{len(ids):04d}")
    corpus = [{"doc_id": doc_id, "title": title, "text": text, "meta": {"source": "MuSiQue"}}
              for (title, text), doc_id in ids.items()]
    texts = {d["doc_id"]: d["text"] for d in corpus}
    questions = []
    for r in drawn:
        docs = [ids[(p["title"], p["paragraph_text"])] for p in r["paragraphs"]]
        hops, facts, spans = [], [], {}
        for hop in r["question_decomposition"]:
            p = r["paragraphs"][hop["paragraph_support_idx"]]
            doc_id = docs[hop["paragraph_support_idx"]]
            text, answer = p["paragraph_text"], hop["answer"]
            sentence = _sentence(text, -1, answer, _cuts_en)
            lo = text.find(sentence)
            was = spans.get(doc_id, (lo, lo + len(sentence)))
            spans[doc_id] = (min(lo, was[0]), max(lo + len(sentence), was[1]))
            hops.append({"question": hop["question"], "answer": answer, "doc_id": doc_id})
            facts.append({"doc_id": doc_id, "text": sentence})
        questions.append({
            "qid": f"{name}-{r['id']}", "question": r["question"], "answer": r["answer"],
            "answer_aliases": r.get("answer_aliases", []), "question_type": f"multi_hop:{r['id'].split('__')[0]}",
            "evidence_doc_ids": list(spans), "evidence_texts": [texts[d][lo:hi] for d, (lo, hi) in spans.items()],
            "meta": {"source_id": r["id"], "supporting_facts": facts, "hops": hops,
                     "candidate_doc_ids": list(dict.fromkeys(docs))}})
    _write(out, name, corpus, questions)


def build_hotpotqa(raw: list[dict], out: Path, name: str = "hotpotqa_train") -> None:
    order = {id(r): i for i, r in enumerate(raw)}
    drawn = sorted(_draw(raw), key=lambda r: order[id(r)])
    ids: dict[tuple[str, str], str] = {}
    for r in drawn:
        for title, sentences in r["context"]:
            ids.setdefault((title, "".join(sentences)), f"{name}-{len(ids):04d}")
    corpus = [{"doc_id": doc_id, "title": title, "text": text, "meta": {"source": "HotpotQA"}}
              for (title, text), doc_id in ids.items()]
    questions = []
    for r in drawn:
        paragraphs = {title: sentences for title, sentences in r["context"]}
        docs = {title: ids[(title, "".join(sentences))] for title, sentences in r["context"]}
        facts, spans = [], {}
        for title, index in r["supporting_facts"]:
            sentences = paragraphs[title]
            lo = len("".join(sentences[:index]))
            hi = lo + len(sentences[index])
            was = spans.get(docs[title], (lo, hi))
            spans[docs[title]] = (min(lo, was[0]), max(hi, was[1]))
            facts.append({"doc_id": docs[title], "text": sentences[index].strip()})
        texts = {docs[t]: "".join(s) for t, s in paragraphs.items()}
        questions.append({
            "qid": f"{name}-{r['_id']}", "question": r["question"], "answer": r["answer"],
            "answer_aliases": [], "question_type": f"multi_hop:{r['type']}",
            "evidence_doc_ids": list(spans),
            "evidence_texts": [texts[d][lo:hi].strip() for d, (lo, hi) in spans.items()],
            "meta": {"source_id": r["_id"], "level": r["level"], "supporting_facts": facts,
                     "candidate_doc_ids": list(dict.fromkeys(docs.values()))}})
    _write(out, name, corpus, questions)


def build_ircot(text: str, out: Path, name: str) -> None:
    ids: dict[tuple[str, str], str] = {}
    questions = []
    for block in text.split("# METADATA: ")[1:]:
        meta, _, body = block.partition("\n")
        qid = json.loads(meta)["qid"]
        docs = []
        for title, paragraph in re.findall(r"Wikipedia Title: (.*)\n(.*)\n", body):
            docs.append(ids.setdefault((title.strip(), paragraph.strip()), f"{name}-{len(ids):04d}"))
        question = re.search(r"^Q: (.*)$", body, re.M).group(1).strip()
        answer = re.search(r"So the answer is: (.*)$", body, re.M).group(1).strip()
        questions.append({
            "qid": f"{name}-{qid}", "question": question, "answer": answer[:-1] if answer.endswith(".") else answer,
            "answer_aliases": [], "question_type": "multi_hop:ircot_demo", "evidence_doc_ids": [],
            "evidence_texts": [], "meta": {"source_id": qid, "candidate_doc_ids": list(dict.fromkeys(docs))}})
    corpus = [{"doc_id": doc_id, "title": title, "text": text, "meta": {"source": "IRCoT demonstrations"}}
              for (title, text), doc_id in ids.items()]
    _write(out, name, corpus, questions)


def build_lcite(raw: list[dict], out: Path, name: str) -> None:
    ids: dict[tuple[str, str], str] = {}
    questions = []
    for row in raw:
        docs = []
        for doc in row["docs"]:
            title = doc["title"].strip()
            first, _, rest = doc["text"].partition("\n")
            text = (rest if first.strip() == title else doc["text"]).strip()
            docs.append(ids.setdefault((title, text), f"{name}-{len(ids):04d}"))
        questions.append({
            "qid": f"{name}-{row['id']}", "question": row["question"].strip(), "answer": str(row["answer"]).strip(),
            "answer_aliases": [], "question_type": "multi_hop:lcite", "evidence_doc_ids": [],
            "evidence_texts": [], "meta": {"source_id": row["id"], "candidate_doc_ids": list(dict.fromkeys(docs))}})
    corpus = [{"doc_id": doc_id, "title": title, "text": text, "meta": {"source": "L-CiteEval"}}
              for (title, text), doc_id in ids.items()]
    _write(out, name, corpus, questions)


def build(raw: Path, out: Path, name: str | None = None) -> None:
    if raw.suffix == ".txt":
        build_ircot(raw.read_text(encoding="utf-8"), out, name or "ircot")
        return
    data = json.loads(raw.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "data" in data:
        build_drcd(data, out)
    elif isinstance(data, list) and data and "question_decomposition" in data[0]:
        build_musique(data, out)
    elif isinstance(data, list) and data and {"supporting_facts", "context"} <= set(data[0]):
        build_hotpotqa(data, out)
    elif isinstance(data, list) and data and {"docs", "answer"} <= set(data[0]):
        build_lcite(data, out, name or "lcite")
    else:
        sys.exit(f"{raw}: neither DRCD (SQuAD-style), MuSiQue, HotpotQA nor L-CiteEval")


if __name__ == "__main__":
    build(Path(sys.argv[1]), Path(sys.argv[2]), *sys.argv[3:4])
