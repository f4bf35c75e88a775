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

With answers=True (`tgr eval --answers`) each mode also answers every question as `tgr ask`
does (with the store's chat model, or the offline extractive answerer) and scores what a person
reads: answer hit = the gold answer, or one of its aliases, occurs in the answer text; context
hit = it occurs in the answer's first CONTEXT_PASSAGES sources (the passages it was written
from, best first). Both compare normalised text (NFKC, lower case, punctuation and English
articles dropped, words whole; Chinese with no spaces at all). A question with
`meta.answer_items` (items, each a string or a list of alternatives) is hit when every item is.
The ask latency is the in-process time of the whole answer.
"""
from __future__ import annotations

import json
import os
import re
import statistics
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

KS = (2, 5, 10)
CONTEXT_PASSAGES = 5  # the answer's sources a context hit looks in
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
    answers: dict | None = None  # answer_hit, context_hit, ask_ms_median, ask_ms_p95 (answers=True)

    def to_dict(self) -> dict:
        return {"mode": self.mode, "recall": self.recall, "complete": self.complete, "facts": self.facts,
                "latency_ms_median": self.latency_ms_median, "latency_ms_p95": self.latency_ms_p95,
                "answers": self.answers, "rows": self.rows}


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
             matched: EvidenceMatch | None = None, warn=None, answers: bool = False) -> list[ModeResult]:
    """Recall@k, complete@k and latency of each mode over the questions (evidence ids matched
    to documents by match_evidence, unless given); with answers, also the answer and context
    hits of `ask` (see the module notes). warn hears (once) what the store's retrieval leaves
    out here (vectors out of reach)."""
    keys = (matched or match_evidence(kb, questions)).keys
    results = []
    for mode in modes:
        rows = [_recall_row(kb, q, mode, ks, keys, warn) for q in questions]
        n = len(rows)
        recall = {k: sum(r[f"recall@{k}"] for r in rows) / n for k in ks}
        complete = {k: sum(r[f"recall@{k}"] == 1.0 for r in rows) / n for k in ks}
        with_facts = [r for r in rows if f"facts@{ks[0]}" in r]
        facts = {k: sum(r[f"facts@{k}"] for r in with_facts) / len(with_facts) for k in ks} if with_facts else None
        median, p95 = _spread([r["ms"] for r in rows])
        result = ModeResult(mode, recall, complete, median, p95, facts, rows)
        if answers:
            result.answers = _score_answers(kb, questions, rows, mode, warn)
        results.append(result)
    return results


def _recall_row(kb, q: dict, mode: str, ks, keys: dict[str, str], warn) -> dict:
    """One question's retrieval in one mode: its ranked documents, recall@k and facts@k."""
    depth = max(ks)
    started = time.perf_counter()
    passages = kb.retrieve(q["question"], mode=mode, k=depth * PASSAGES_PER_DOCUMENT, warn=warn)
    ms = (time.perf_counter() - started) * 1000
    ranked = list(dict.fromkeys(_document_key(p) for p in passages))
    gold = {keys.get(e, e) for e in q["evidence_doc_ids"]}
    facts = _facts(q)
    row = {"qid": q["qid"], "mode": mode, "retrieved": ranked[:depth], "evidence": sorted(gold), "ms": round(ms, 2)}
    for k in ks:
        row[f"recall@{k}"] = len(gold & set(ranked[:k])) / len(gold) if gold else 0.0
        if facts:
            top = set(ranked[:k])
            text = "\n".join(p.text for p in passages if _document_key(p) in top)
            row[f"facts@{k}"] = sum(any(a in text for a in alternatives) for alternatives in facts) / len(facts)
    return row


def _score_answers(kb, questions: list[dict], rows: list[dict], mode: str, warn) -> dict | None:
    """Ask every question in this mode; each row gains its answer, answer_hit, context_hit and
    ask_ms; the totals over the questions that have a gold answer (None: none has)."""
    scored = []
    for q, row in zip(questions, rows):
        gold = gold_answers(q)
        if not gold:
            continue
        started = time.perf_counter()
        result = kb.ask(q["question"], mode, warn=warn)
        row["ask_ms"] = round((time.perf_counter() - started) * 1000, 2)
        context = "\n".join(s.get("text", "") for s in result.sources[:CONTEXT_PASSAGES])
        row["answer"] = result.answer
        row["answer_hit"] = answer_found(gold, _CITATION.sub(" ", result.answer))
        row["context_hit"] = answer_found(gold, context)
        scored.append(row)
    if not scored:
        return None
    median, p95 = _spread([r["ask_ms"] for r in scored])
    return {"questions": len(scored), "answer_hit": sum(r["answer_hit"] for r in scored) / len(scored),
            "context_hit": sum(r["context_hit"] for r in scored) / len(scored),
            "ask_ms_median": median, "ask_ms_p95": p95}


def _spread(latencies: list[float]) -> tuple[float, float]:
    """Median and 95th percentile, in ms to two places."""
    ordered = sorted(latencies)
    return round(statistics.median(ordered), 2), round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2)


def gold_answers(question: dict) -> list[list[str]]:
    """The question's gold answer as items, each with its accepted wordings: every item of
    `meta.answer_items` where given, else one item, `answer` or any of `answer_aliases`."""
    meta = question.get("meta") if isinstance(question.get("meta"), dict) else {}
    items = meta.get("answer_items")
    if isinstance(items, list) and items:
        found = [[i] if isinstance(i, str) else [a for a in i if isinstance(a, str)]
                 for i in items if isinstance(i, (str, list))]
        found = [[a for a in f if normalise_answer(a)] for f in found]
        if found and all(found):
            return found
    aliases = question.get("answer_aliases") if isinstance(question.get("answer_aliases"), list) else []
    wordings = [a for a in [question.get("answer"), *aliases] if isinstance(a, str) and normalise_answer(a)]
    return [wordings] if wordings else []


def answer_found(gold: list[list[str]], text: str) -> bool:
    """True when every gold item occurs in the text in one of its wordings (normalised)."""
    plain = normalise_answer(text)
    joined = plain.replace(" ", "")
    spaced = f" {_CJK.sub(lambda c: f' {c.group()} ', plain)} "  # "50" stands apart in 突破50%大关 too
    for wordings in gold:
        if not any((w.replace(" ", "") in joined) if _CJK.search(w) else (f" {w} " in spaced)
                   for w in map(normalise_answer, wordings)):
            return False
    return True


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CITATION = re.compile(r"\[(?:Data|Sources?|Entities|Relationships|Reports?)\b[^\]]*\]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalise_answer(text: str) -> str:
    """NFKC, lower case, punctuation and symbols as spaces, English articles dropped, spaces collapsed."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if unicodedata.category(c)[0] in "PSZC" else c for c in text)
    return " ".join(_ARTICLES.sub(" ", text).split())


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
