"""Global search (DESIGN.md §4): community reports ranked for the question, then the offline
answer (tgr.offline.global_answer) or a chat model's map calls over batches of reports and one
reduce call over their best key points.

over_reports() runs the same map and reduce over reports given from outside: several stores'
reports ranked together (tgr.multi_store), each under a label the model cites ("2-0.3": the
second store's community 0.3) that is written back as "store: community" in the answer.
"""
from __future__ import annotations

import re
import time
from functools import partial
from typing import Generator

from .answer_record import Answer
from .answerers import ReportText
from .retrieve import Passage
from ..offline.global_answer import OfflineGlobal, offline_global_answer
from ..text import estimate_tokens

Report = tuple[str, str, str, float]  # (community id or label, title, full text, rating)


def global_answer(searcher, question: str, context_only: bool) -> Generator[str, None, object]:
    """One store's global answer (its pieces as the reduce call writes them, with stream)."""
    s = searcher.settings
    t0 = time.perf_counter()
    searched = searcher.searched(question)
    reports = searcher.candidate_reports(searched, s.level)
    sources = lambda ids: report_sources(searcher, ids, searched)  # noqa: E731
    result = Answer(question, "global", "", _context(batches(reports, s.map_tokens)),
                    searcher._model_name(context_only), reports=[r[0] for r in reports],
                    timings={"retrieve_s": round(time.perf_counter() - t0, 4)})
    if context_only:
        result.sources = searcher._sources(sources([r[0] for r in reports[:5]]))
        return result
    t1 = time.perf_counter()
    offline = searcher.answerer.whole_global(searcher.conn, searcher.retriever, searched, [r[0] for r in reports])
    if offline is not None:  # the extractive answerer: the main communities, named and cited
        return _offline_themes(searcher, result, offline, t1)
    cited = yield from _map_reduce(searcher, question, searched, reports, result, unusable=_themes_instead)
    if cited is None:  # no usable key point: the store's themes, as it answers offline, said in a note
        return _offline_themes(searcher, result, offline_global_answer(
            searcher.conn, searcher.retriever, searched, [r[0] for r in reports]), t1)
    result.sources = searcher._sources(sources(cited))
    return result


def _offline_themes(searcher, result, offline: OfflineGlobal, t1: float):
    """The result answered with the offline global answer (the store's main communities, named
    and cited), its sources the passages it cites."""
    result.answer = offline.text
    result.sources = searcher._sources(searcher.retriever.passages(offline.chunks))
    result.context += "\n\n-----Key points-----\n" + "\n".join(offline.points)
    result.timings["reduce_s"] = round(time.perf_counter() - t1, 4)
    return result


def _themes_instead(searcher, result, answers: int, points: list[tuple[int, str]], reports: int,
                    whose: str = "the store's") -> None:
    """Say (in the answer's notes and through the warn callback) that the model's map answers
    gave no usable key point and the store's (whose) themes answer instead."""
    them = "it" if answers == 1 else "them"
    why = (f"{len(points)} point{'s' if len(points) != 1 else ''} in {them}, each scored 0 or saying nothing"
           if points else f"no scored <point> in {them}")
    searcher.note(result, f"{searcher.answerer.name} gave no usable key points for the {reports} community "
                          f"reports ({answers} map answer{'s' if answers != 1 else ''}: {why}): the answer lists "
                          f"{whose} main themes instead, as tgr answers offline")


def over_reports(searcher, question: str, reports: list[Report],
                 names: dict[str, str]) -> Generator[str, None, object]:
    """A chat model's global answer over given reports, best first, whose ids are labels
    (names: label -> how the answer cites it, e.g. "b.db: 0.3"); the Answer's reports are the
    cited labels in rank order (its sources are left to the caller: the reports' stores). When
    no map answer gave a usable key point, its answer is empty and a note says so: the caller
    answers with the stores' themes (tgr.multi_store)."""
    s = searcher.settings
    result = Answer(question, "global", "", _context(batches(reports, s.map_tokens)),
                    searcher._model_name(False), reports=[], timings={})
    cited = yield from _map_reduce(searcher, question, searcher.searched(question), reports, result, names,
                                   unusable=partial(_themes_instead, whose="the stores'"))
    result.reports = cited or []  # None: no usable key point, the answer left empty (the caller's themes answer)
    return result


def _map_reduce(searcher, question: str, searched: str, reports: list[Report], result,
                names: dict[str, str] | None = None, unusable=None) -> Generator[str, None, list[str] | None]:
    """Map calls over the reports in batches, one reduce call over the best key points; fills
    the result's answer, context and timings. Returns the cited report ids in rank order.
    unusable: when no map answer gave a usable point (one scored above 0 that says something),
    called with (searcher, result, map answers, their points, reports) and None is returned,
    no reduce call made (else the answer is "I don't know")."""
    s = searcher.settings
    t1 = time.perf_counter()
    found = batches(reports, s.map_tokens)
    given = searcher.answerer.key_points(searched, found)
    result.timings["map_s"] = round(time.perf_counter() - t1, 4)
    kept = best_points([p for p in given if usable_point(p[1])], s.reduce_tokens)
    if not kept and unusable is not None:
        unusable(searcher, result, len(found), given, len(reports))
        return None
    t2 = time.perf_counter()
    if kept:
        written = searcher._written("reduce", searcher.resolved(question), kept)
        result.answer = yield from (_relabelled(written, names) if names else written)
    else:
        kept, result.answer = searcher.answerer.no_key_points(question, reports, s.level)
    cited = cited_reports(" ".join(text for _, text in kept) + " " + result.answer)
    if names:
        result.answer = relabel(result.answer, names)
        kept = [(score, relabel(text, names)) for score, text in kept]
    result.context += "\n\n-----Key points-----\n" + "\n".join(f"{sc}|{tx}" for sc, tx in kept)
    result.timings["reduce_s"] = round(time.perf_counter() - t2, 4)
    return [r[0] for r in reports if r[0] in cited]


def batches(reports: list[Report], map_tokens: int) -> list[list[ReportText]]:
    """The reports in map batches of at most map_tokens each (a larger report alone)."""
    found: list[list[ReportText]] = [[]]
    used = 0
    for cid, _, full, _ in reports:
        report = ReportText(cid, f"----- Report {cid} -----\n{full}")
        cost = estimate_tokens(report.block)
        if found[-1] and used + cost > map_tokens:
            found.append([])
            used = 0
        found[-1].append(report)
        used += cost
    return [b for b in found if b]


def _context(found: list[list[ReportText]]) -> str:
    return "\n\n".join(report.block for batch in found for report in batch)


def report_sources(searcher, community_ids: list[str], question: str) -> list[Passage]:
    """The passages behind reports, best first (tgr.query.retrieve.Retriever.report_chunks)."""
    return searcher.retriever.passages(searcher.retriever.report_chunks(community_ids, question))


def best_points(points: list[tuple[int, str]], budget: int) -> list[tuple[int, str]]:
    """The scored points, best first, that fit the reduce budget."""
    points = sorted((p for p in points if p[0] > 0), key=lambda p: (-p[0], p[1]))
    kept, used = [], 0
    for score, text in points:
        cost = estimate_tokens(text) + 4
        if used + cost > budget:
            break
        kept.append((score, text))
        used += cost
    return kept


# a point a map answer copied from the prompt, or one that says nothing ("I don't know.")
_NO_POINT = re.compile(r"(?is)^\W*(?:i don'?t know|i do not know|unknown|none|n/?a|the point, citing reports as"
                       r"|不知道|无)\W*(?:\[reports?:[^\]]*\]\W*)?$")


def usable_point(text: str) -> bool:
    """Whether a map answer's point says something: not empty, not "I don't know", not the
    prompt's own placeholder ("the point, citing reports as [Reports: id, id]")."""
    return bool(text and text.strip()) and not _NO_POINT.match(text.strip())


_CITED = re.compile(r"Reports?\s*[:(]\s*([^\]\)]+)")
_GROUP = re.compile(r"\[(Reports?\s*:\s*)([^\]]*)\]")


def cited_reports(text: str) -> set[str]:
    """The report ids a text cites ("[Reports: 0.1, 0.4]")."""
    cited = set()
    for group in _CITED.findall(text):
        cited.update(part.strip() for part in group.split(","))
    return cited


def relabel(text: str, names: dict[str, str]) -> str:
    """The text with each label in its [Reports: ...] citations written as its name."""
    def named(match: re.Match) -> str:
        parts = [part.strip() for part in match.group(2).split(",")]
        if not any(part in names for part in parts):
            return match.group(0)
        return f"[{match.group(1)}{'; '.join(names.get(part, part) for part in parts)}]"

    return _GROUP.sub(named, text)


def _relabelled(pieces: Generator[str, None, str], names: dict[str, str]) -> Generator[str, None, str]:
    """Streamed pieces with their citations relabelled: text from an open "[" is held back
    until its "]" comes (or the text ends). Returns the whole text as written."""
    held = ""
    while True:
        try:
            held += next(pieces)
        except StopIteration as end:
            if held:
                yield relabel(held, names)
            return end.value
        cut = held.rfind("[")
        out, held = (held, "") if cut == -1 or "]" in held[cut:] else (held[:cut], held[cut:])
        if out:
            yield relabel(out, names)
