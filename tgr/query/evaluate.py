"""Retrieval evaluation: document-level recall@k of a store against questions with gold evidence.

Questions are JSONL, one object per line, with `question` and `evidence_doc_ids` (the ids the
documents were indexed under: `doc_id`/`id` of a .jsonl/.csv row, else the source path as typed
to `tgr index`); `qid` is optional. An evidence id that is no document's id still names a file
when exactly one document's source is the same file from here, or ends with the same path
components (so `a.txt` or `docs/a.txt` finds `../project/docs/a.txt`, however the folder was
typed), or has it as its title; otherwise it counts as missed, and match_evidence says so.

For each mode the ranked passages of `retrieve()` are turned into a ranking of distinct
documents, and recall@k is the share of a question's evidence documents among the
first k, averaged over the questions; `complete@k` is the share of questions with all of their
evidence in the first k. Where questions name their facts (`meta.supporting_facts[].text`, or
`meta.answer_items`, each item a string or a list of alternatives), `facts@k` is the share of
those facts found verbatim in the passages of the first k documents. Latency is the in-process
time of one retrieval.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

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


@dataclass
class EvidenceMatch:
    """How the questions' evidence ids name the store's documents."""
    keys: dict[str, str]  # evidence id -> the key retrieval ranks that document by
    exact: int            # evidence ids that are a document's id
    by_name: int          # ... that name one by its path or title instead
    missing: list[str]    # ... that name no document (or several)
    example: str | None   # one document id of the store, to show how ids look

    @property
    def total(self) -> int:
        return self.exact + self.by_name + len(self.missing)

    def to_dict(self) -> dict:
        return {"ids": self.total, "exact": self.exact, "by_path_or_title": self.by_name, "missing": self.missing}

    def problem(self) -> str | None:
        """One line when some evidence ids name no document (None when all do)."""
        if not self.missing:
            return None
        how = ("a document's id is its row's doc_id or id (JSONL, CSV), else its file's path as typed to "
               "tgr index, also found by a path ending the same way or a unique title")
        example = f"; e.g. {self.example!r}" if self.example is not None else "; the store has no documents"
        if len(self.missing) == self.total:
            return f"none of the {self.total} evidence ids names a document of the store: {how}{example}"
        return (f"{self.total - len(self.missing)} of {self.total} evidence ids name a document of the store "
                f"({self.by_name} by path or title); not {self.missing[0]!r}"
                f"{f' and {len(self.missing) - 1} more' if len(self.missing) > 1 else ''}: {how}{example}")


def match_evidence(kb, questions: list[dict]) -> EvidenceMatch:
    """Match every evidence id of the questions to a stored document (see the module notes)."""
    stored = kb.document_names()
    keys = {key for key, _, _ in stored}
    names = None  # built only when an evidence id is not a document's id
    found, exact, by_name, missing = {}, 0, 0, []
    for evidence in dict.fromkeys(e for q in questions for e in q["evidence_doc_ids"]):
        if evidence in keys:
            found[evidence], exact = evidence, exact + 1
            continue
        names = names or _NameIndex(stored)
        if (key := names.find(evidence)) is not None:
            found[evidence], by_name = key, by_name + 1
        else:
            missing.append(evidence)
    return EvidenceMatch(found, exact, by_name, missing, stored[0][0] if stored else None)


class _NameIndex:
    """Documents by source file and title, for evidence ids that are not a document's id."""

    def __init__(self, stored: list[tuple[str, str, str]]):
        self.by_basename: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self.by_real: dict[str, set[str]] = {}
        self.by_title: dict[str, set[str]] = {}
        paths: dict[str, tuple[tuple[str, ...], str]] = {}  # source -> (its parts, its real path)
        for key, source, title in stored:
            if source != "<stdin>":
                parts, real = paths.get(source) or paths.setdefault(source, (_parts(source), _real(source)))
                if parts:
                    self.by_basename.setdefault(parts[-1], []).append((key, parts))
                self.by_real.setdefault(real, set()).add(key)
            if title:
                self.by_title.setdefault(title, set()).add(key)

    def find(self, evidence: str) -> str | None:
        """The one document the evidence names: same file from here, same trailing path
        components, or same title; None when none or several do."""
        parts = _parts(evidence)
        suffix = {key for key, source in self.by_basename.get(parts[-1], [])
                  if _ends_with(source, parts) or _ends_with(parts, source)} if parts else set()
        for candidates in (self.by_real.get(_real(evidence), set()), suffix, self.by_title.get(evidence, set())):
            if len(candidates) == 1:
                return next(iter(candidates))
        return None


def _parts(path: str) -> tuple[str, ...]:
    return tuple(p for p in os.path.normpath(path).replace("\\", "/").split("/") if p not in ("", "."))


def _ends_with(parts: tuple[str, ...], tail: tuple[str, ...]) -> bool:
    return 0 < len(tail) <= len(parts) and parts[-len(tail):] == tail


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


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
            row["evidence_doc_ids"] = [str(e) for e in row["evidence_doc_ids"]]  # a row id may be a number
            questions.append(row)
    if not questions:
        raise InputError(f"{path}: no questions")
    return questions


def evaluate(kb, questions: list[dict], modes=("local", "naive"), ks=KS,
             matched: EvidenceMatch | None = None, warn=None) -> list[ModeResult]:
    """Recall@k, complete@k and latency of each mode over the questions (evidence ids matched
    to documents by match_evidence, unless given); warn hears (once) what the store's
    retrieval leaves out here (vectors out of reach)."""
    depth = max(ks)
    keys = (matched or match_evidence(kb, questions)).keys
    results = []
    for mode in modes:
        rows, latencies = [], []
        for q in questions:
            started = time.perf_counter()
            passages = kb.retrieve(q["question"], mode=mode, k=depth * PASSAGES_PER_DOCUMENT, warn=warn)
            latencies.append((time.perf_counter() - started) * 1000)
            ranked = list(dict.fromkeys(_document_key(p) for p in passages))
            gold = {keys.get(e, e) for e in q["evidence_doc_ids"]}
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
