"""Retrieval evaluation: document-level recall@k of a store against questions with gold evidence.

Questions are JSONL, one object per line, with `question` and `evidence_doc_ids` (the ids the
documents were indexed under: `doc_id`/`id` of a .jsonl/.csv row, else the source path); `qid`
is optional. For each mode the ranked passages of `retrieve()` are turned into a ranking of
distinct documents, and recall@k is the share of a question's evidence documents among the
first k, averaged over the questions; `complete@k` is the share of questions with all of their
evidence in the first k. Where questions name their facts (`meta.supporting_facts[].text`, or
`meta.answer_items`, each item a string or a list of alternatives), `facts@k` is the share of
those facts found verbatim in the passages of the first k documents. Latency is the in-process
time of one retrieval.
"""
from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError

KS = (2, 5, 10)
PASSAGES_PER_DOCUMENT = 4  # passages asked for per document wanted (documents span chunks)


@dataclass
class ModeResult:
    mode: str
    recall: dict[int, float]
    complete: dict[int, float]
    latency_ms_median: float
    latency_ms_p95: float
    facts: dict[int, float] | None = None
    rows: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"mode": self.mode, "recall": self.recall, "complete": self.complete, "facts": self.facts,
                "latency_ms_median": self.latency_ms_median, "latency_ms_p95": self.latency_ms_p95,
                "rows": self.rows}


def load_questions(path: str | Path) -> list[dict]:
    """Questions with their gold evidence ids; a clear error for anything else."""
    questions = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise InputError(f"{path}:{number}: not a JSON object") from None
            if not isinstance(row, dict) or not isinstance(row.get("question"), str) \
                    or not isinstance(row.get("evidence_doc_ids"), list):
                raise InputError(f"{path}:{number}: needs 'question' and 'evidence_doc_ids'")
            row.setdefault("qid", f"q{number}")
            questions.append(row)
    if not questions:
        raise InputError(f"{path}: no questions")
    return questions


def evaluate(kb, questions: list[dict], modes=("local", "naive"), ks=KS, warn=None) -> list[ModeResult]:
    """Recall@k, complete@k and latency of each mode over the questions; warn hears (once)
    what the store's retrieval leaves out here (vectors out of reach)."""
    depth = max(ks)
    results = []
    for mode in modes:
        rows, latencies = [], []
        for q in questions:
            started = time.perf_counter()
            passages = kb.retrieve(q["question"], mode=mode, k=depth * PASSAGES_PER_DOCUMENT, warn=warn)
            latencies.append((time.perf_counter() - started) * 1000)
            ranked = list(dict.fromkeys(_document_key(p) for p in passages))
            gold = set(q["evidence_doc_ids"])
            facts = _facts(q)
            row = {"qid": q["qid"], "mode": mode, "retrieved": ranked[:depth],
                   "evidence": sorted(gold), "ms": round(latencies[-1], 2)}
            for k in ks:
                found = len(gold & set(ranked[:k]))
                row[f"recall@{k}"] = found / len(gold) if gold else 0.0
                if facts:
                    top = set(ranked[:k])
                    text = "\n".join(p.text for p in passages if _document_key(p) in top)
                    row[f"facts@{k}"] = sum(any(a in text for a in alternatives)
                                            for alternatives in facts) / len(facts)
            rows.append(row)
        n = len(rows)
        recall = {k: sum(r[f"recall@{k}"] for r in rows) / n for k in ks}
        complete = {k: sum(r[f"recall@{k}"] == 1.0 for r in rows) / n for k in ks}
        with_facts = [r for r in rows if f"facts@{ks[0]}" in r]
        facts = {k: sum(r[f"facts@{k}"] for r in with_facts) / len(with_facts) for k in ks} if with_facts else None
        ordered = sorted(latencies)
        results.append(ModeResult(mode, recall, complete, round(statistics.median(ordered), 2),
                                  round(ordered[min(n - 1, int(0.95 * n))], 2), facts, rows))
    return results


def _facts(question: dict) -> list[list[str]]:
    """The question's facts, each as its accepted wordings."""
    meta = question.get("meta") if isinstance(question.get("meta"), dict) else {}
    supporting = meta.get("supporting_facts")
    if isinstance(supporting, list):
        texts = [f.get("text") for f in supporting if isinstance(f, dict)]
        return [[t] for t in texts if isinstance(t, str) and t]
    items = meta.get("answer_items")
    if isinstance(items, list):
        facts = [[i] if isinstance(i, str) else [a for a in i if isinstance(a, str) and a]
                 for i in items if isinstance(i, (str, list))]
        return [f for f in facts if f and all(f)]
    return []


def _document_key(passage) -> str:
    return passage.external_id or passage.source
