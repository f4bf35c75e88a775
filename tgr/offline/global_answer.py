"""The offline global answer: the themes of a store (or of several), each named, described and cited.

Without a chat model, a global question is answered from the community reports themselves
(see tgr.offline.community_reports). Each theme is a community: named by its leading members (most
central first), then the words that most set its passages apart, then a representative
sentence, with the chunks it comes from as numbered sources. One line first says what the
list is, in the question's language (a Chinese question gets a Chinese frame).

Which themes: a question about something ("What does the story say about the poor?") lists
the communities about it first: those whose report holds its words, or whose members' passages
match them (tgr.query.retrieve.Retriever.topic_evidence), by relevance and then importance. A
corpus-wide question ("What are the main themes?", "这个故事的主要主题是什么？") matches none,
and the most important communities are listed. Words that only say the question is corpus-wide
("main", "themes", "story", 主要, 主题) or what kind of answer it wants ("which guests") do
not count as its topic.

themes() gives the chosen themes of one store as picklable records, so that several stores'
themes can be ranked together (tgr.multi_store) and written out by render().
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..parsing import loads
from ..store.size_limits import MAX_CONTEXT_TEXT, cap
from ..text import CJK_RUN, has_cjk, match_terms, shorten, split_sentences
from .everywhere import everywhere_names, everywhere_words
from .providers import score_overlap

COMMUNITIES = 5          # themes an answer lists
SOURCES_PER_COMMUNITY = 3
PHRASES = 6              # words shown per theme
RELEVANT = 0.3           # a theme is about the question at this share of the best one's relevance
IMPORTANCE_WEIGHT = 0.3  # rating/10 against relevance (0-1) in the order of relevant communities
# a theme's relevance: the share of the question's topic words its report holds, at this weight,
# and the topic evidence of its members' passages (tgr.query.topic_evidence) at the rest. The
# report of a community named in one sentence is that sentence: its words say less than what
# the passages say of a community again and again (at 0.5, "What does the story say about the
# poor?" on the whole Carol listed the Cratchits third, after two one-sentence communities)
REPORT_WORDS = 0.25
EVIDENCE_PRIOR = 2       # chunks added to each community's count in that evidence (see topic_evidence)
# words of a question about the whole corpus rather than about something in it, or about the
# kind of answer it wants ("which guests", "what people")
CORPUS_WIDE = frozenset("""main major key central important principal overall general chief
    theme themes topic topics subject subjects idea ideas story stories book books text texts
    corpus store document documents summary summarise summarize summarized overview about
    discuss discusses discussed discussing covered cover covers describe describes described
    mentioned mention mentions talk talks talked tell tells say says said does do
    guest guests people person persons character characters speaker speakers author authors
    entities entity thing things kind kinds way ways""".split())
# Chinese words of the same two kinds, and function words a question is made of; cut out of a
# question's Chinese runs before their bigrams are taken
_CORPUS_WIDE_ZH = re.compile("|".join(sorted("""主要 主题 故事 小说 文本 文档 本书 全书 这本书 内容 概述 总结
    概括 讲述 讲了 讲的 讲 说了 说的 谈论 讨论 描写 描述 提到 有关 关于 哪些 什么 怎么 怎样 如何
    为什么 哪个 哪位 哪里 这个 那个 这些 那些 人物 角色 嘉宾 谁 是 的 了 吗 呢 吧 和 与 及 对 在 有
    中 里 都 也 又 还 之 其 请 问""".split(), key=len, reverse=True)))

_QUOTED_ZH = re.compile(r"[“「『《]([^“”「」『』《》]{2,30})[”」』》]")
# an English clitic: a possessive or contraction ending ("Scrooge's", "they'll", "doesn't") is
# grammar, not a word of the topic, and split off on its own it is a lone letter ("s", "t")
_CLITIC = re.compile(r"(?<=\w)(?:n['’]t|['’](?:s|d|ll|re|ve|m))\b", re.IGNORECASE)


@dataclass
class Theme:
    """One community as a theme of an answer: what is said of it, why it was chosen, and the
    chunks it cites (passages: filled where the store is in another process, tgr.multi_store)."""
    community: str
    names: list[str]
    phrases: list[str]
    sentence: str | None
    summary: str
    rating: float
    relevance: float = 0.0
    chunks: list[str] = field(default_factory=list)
    passages: list = field(default_factory=list)
    store: str | None = None

    def order(self) -> tuple:
        return (-(self.relevance + IMPORTANCE_WEIGHT * self.rating / 10), -self.rating, self.community)


@dataclass
class OfflineGlobal:
    """The answer text, the chunks it cites (in source order), the communities it lists and
    one key point per community (for the context shown with --context)."""
    text: str
    chunks: list[tuple[str, float]] = field(default_factory=list)
    communities: list[str] = field(default_factory=list)
    points: list[str] = field(default_factory=list)


def topic_terms(question: str) -> list[str]:
    """The question's terms that say what it is about (none for "What are the main themes?"
    nor for "这个故事的主要主题是什么？"): words, and the bigrams of Chinese topic words."""
    return [t for word in topic_words(question) for t in (
        [word[i:i + 2] for i in range(len(word) - 1)] if has_cjk(word) else [word])]


def topic_words(question: str) -> list[str]:
    """The question's words that say what it is about, as written ("孙悟空", "师父", "poor"),
    without possessive or contraction endings ("Scrooge's" is "scrooge") or particles (的).
    A Chinese term the question quotes (“乡里制”, 《西游记》) is one word, whole: cutting at
    function words would split it at any of their characters (乡 里 制)."""
    quoted = [q for q in _QUOTED_ZH.findall(question) if CJK_RUN.fullmatch(q)]
    rest = _QUOTED_ZH.sub(lambda m: " " if CJK_RUN.fullmatch(m.group(1)) else m.group(0), question)
    words = [t for t in match_terms(_CLITIC.sub("", CJK_RUN.sub(" ", rest))) if t not in CORPUS_WIDE] + quoted
    for run in CJK_RUN.findall(rest):
        words.extend(piece for piece in _CORPUS_WIDE_ZH.split(run) if len(piece) > 1)
    return words


def _read(conn, report_ids: list[str]) -> tuple[list[Theme], dict[str, list[tuple[str, str]]]]:
    """The candidate reports as themes, with their representative (sentence, chunk id)
    pairs, parsed defensively (a store from elsewhere may hold anything). A name that half the
    store's documents repeat (tgr.offline.everywhere) names no theme; a community with no other
    name is none."""
    themes, said, parsed = [], {}, []
    for cid in report_ids:
        row = conn.execute(f"SELECT title, substr(summary, 1, {MAX_CONTEXT_TEXT}), rating, findings "
                           "FROM reports WHERE community_id = ?", (cid,)).fetchone()
        if row is None:
            continue
        try:
            findings = loads(row[3], max_chars=MAX_CONTEXT_TEXT * 10)
        except ValueError:
            findings = []
        findings = [f for f in findings if isinstance(f, dict)] if isinstance(findings, list) else []
        listed = next((f for f in findings if isinstance(f.get("key_phrases"), list)), {})
        members = [cap(str(m)) for m in listed.get("members", []) if isinstance(m, str)] \
            if isinstance(listed.get("members"), list) else []
        parsed.append((cid, row, findings, listed, members))
    repeated = everywhere_names(conn, report_ids, [m for *_, members in parsed for m in members])
    for cid, row, findings, listed, members in parsed:
        phrases = [cap(str(p)) for p in listed.get("key_phrases", []) if isinstance(p, str)]
        title = cap(str(row[0]))
        names = [m for m in members if m not in repeated][:3] or [re.split(r"[:：]", title, maxsplit=1)[0]]
        if members and all(m in repeated for m in members):
            continue
        if not members and re.search(r"[:：]", title):  # an older offline title: "A and B: p1, p2"
            phrases = [p.strip() for p in re.split(r"[,、]", re.split(r"[:：]", title, 1)[1]) if p.strip()] + phrases
        sentences = [(cap(str(f.get("explanation", ""))), f["chunk_id"]) for f in findings
                     if isinstance(f.get("chunk_id"), str) and f.get("explanation")]
        rating = float(row[2]) if isinstance(row[2], (int, float)) else 0.0
        themes.append(Theme(cid, names, list(dict.fromkeys(phrases)), None, str(row[1]), rating))
        said[cid] = sentences
    return themes, said


def _choose(themes: list[Theme], sentences: dict, question: str,
            evidence: dict[str, float]) -> tuple[list[Theme], bool]:
    """The themes to list, best first, and whether they match the question."""
    terms = topic_terms(question)
    for t in themes:
        text = " ".join([*t.names, t.summary, *t.phrases, *(s for s, _ in sentences[t.community])])
        t.relevance = REPORT_WORDS * (score_overlap(terms, text) if terms else 0.0) + \
            (1 - REPORT_WORDS) * evidence.get(t.community, 0.0)
    best = max((t.relevance for t in themes), default=0.0)
    relevant = sorted((t for t in themes if t.relevance > 0 and t.relevance >= RELEVANT * best), key=Theme.order)
    if relevant:
        return relevant[:COMMUNITIES], True
    for t in themes:
        t.relevance = 0.0
    return sorted(themes, key=Theme.order)[:COMMUNITIES], False


def _best_sentence(sentences: list[tuple[str, str]], question: str, said: set[str]) -> tuple[str, str] | None:
    """The representative sentence that best matches the question (else the first), and
    not one an earlier theme already gave."""
    terms = topic_terms(question)
    scored = [(score_overlap(terms, s) if terms else 0.0, -n, (s, cid))
              for n, (s, cid) in enumerate(sentences) if s not in said]
    return max(scored)[2] if scored else None


def themes(conn, retriever, question: str, report_ids: list[str]) -> tuple[list[Theme], bool]:
    """The themes a global question lists from the candidate reports (best first, as
    tgr.query.retrieve ranks them), with the chunks each cites, and whether they match the
    question; retriever.report_chunks gives each community's chunks that best match it."""
    read, sentences = _read(conn, report_ids)
    evidence = retriever.topic_evidence(question, report_ids, prior=EVIDENCE_PRIOR)
    chosen, matched = _choose(read, sentences, question, evidence)
    repeated = everywhere_words(conn, [p for t in chosen for p in t.phrases[:PHRASES * 2]])
    for theme in chosen:
        theme.phrases = [p for p in theme.phrases[:PHRASES * 2] if p not in repeated]
    existing = {r[0] for r in conn.execute(
        "SELECT id FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps([cid for t in chosen for _, cid in sentences[t.community]]),))}
    said: set[str] = set()
    for theme in chosen:
        behind = retriever.report_chunks([theme.community], question, near=False)  # its answer's words, not its names
        found = sentences[theme.community]
        if matched:  # a sentence of its passages about the topic, before its representative ones
            found = _topic_sentences(retriever.passages(behind), theme.names, question) + found
        sentence = _best_sentence([(s, c) for s, c in found if c in existing or c in dict(behind)], question, said)
        said.add(sentence[0] if sentence else "")
        theme.sentence = sentence[0] if sentence else None
        mine = [sentence[1]] if sentence else []
        mine += [cid for cid, _ in behind]
        theme.chunks = list(dict.fromkeys(mine))[:SOURCES_PER_COMMUNITY]
    return chosen, matched


def _topic_sentences(passages, names: list[str], question: str) -> list[tuple[str, str]]:
    """(sentence, chunk id) of the passages that hold the question's topic terms, those that
    also name one of the theme's names first."""
    terms = topic_terms(question)
    found = []
    for passage in passages:
        for a, b in split_sentences(passage.text):
            sentence = " ".join(passage.text[a:b].split())
            if not 5 <= len(sentence) // (2 if has_cjk(sentence) else 6) <= 80:
                continue
            score = score_overlap(terms, sentence)
            if score > 0:
                named = any(n in sentence for n in names)
                found.append((score + 0.5 * named, -len(found), sentence, passage.chunk_id))
    found.sort(reverse=True)
    return [(s, c) for _, _, s, c in found[:3]]


def offline_global_answer(conn, retriever, question: str, report_ids: list[str]) -> OfflineGlobal:
    """The offline answer to a global question over one store's candidate reports."""
    chosen, matched = themes(conn, retriever, question, report_ids)
    return render(question, chosen, matched)


# --- writing the answer -------------------------------------------------------------------

_FRAME = {
    "en": {"main": "The main themes of this store, most important first.",
           "many": "The main themes of these stores, most important first.",
           "topic": "The themes about {terms}, most relevant first.",
           "none": "No theme mentions {terms}; the main themes instead, most important first.",
           "legend": " Each: the names it centres on, the words that set its passages apart, and a passage.",
           "words": "about", "and": " and ", "sep": ", ", "empty": "I don't know: this store has no community reports yet."},
    "zh": {"main": "本库的主要主题，按重要性排列。", "many": "这些库的主要主题，按重要性排列。",
           "topic": "与{terms}有关的主题，按相关性排列。",
           "none": "没有主题提到{terms}；以下为主要主题，按重要性排列。",
           "legend": "每条：主题围绕的名称、最能区分其段落的词语，以及一段原文。",
           "words": "关键词", "and": "与", "sep": "、", "empty": "不知道：本库还没有社区报告。"},
}


def _joined(names: list[str], frame: dict) -> str:
    return names[0] if len(names) == 1 else frame["sep"].join(names[:-1]) + frame["and"] + names[-1]


def heading(question: str, matched: bool, many: bool = False) -> str:
    """The line that says what the list is, in the question's language."""
    frame = _FRAME["zh" if has_cjk(question) else "en"]
    terms = list(dict.fromkeys(topic_words(question)))[:4]
    quoted = frame["sep"].join(f"“{t}”" if has_cjk(t) else f'"{t}"' for t in terms)
    if matched:
        line = frame["topic"].format(terms=quoted)
    elif terms:
        line = frame["none"].format(terms=quoted)
    else:
        line = frame["many" if many else "main"]
    return line + frame["legend"]


def theme_line(rank: int, theme: Theme, question: str, cited: list[int]) -> str:
    """One numbered theme: its names, its words, its passage, its report and sources."""
    frame = _FRAME["zh" if has_cjk(question) else "en"]
    zh = frame is _FRAME["zh"]
    names = _joined(theme.names, frame)
    shown = [p for p in theme.phrases if not any(p in n or n.lower() == p for n in theme.names)][:PHRASES]
    line = f"{rank}. {names}"
    if shown:
        line += ("——" if zh else " — ") + f"{frame['words']}{'：' if zh else ': '}{frame['sep'].join(shown)}"
    line += "。" if zh else "."
    if theme.sentence:
        line += f"「{shorten(theme.sentence, 300)}」" if zh else f' "{shorten(theme.sentence, 300)}"'
    elif theme.summary:
        line += " " + shorten(theme.summary, 300)
    store = f"{theme.store}: " if theme.store else ""
    line += f" [Reports: {store}{theme.community}]"
    if cited:
        line += f" [Sources: {', '.join(map(str, cited))}]"
    return line


def render(question: str, chosen: list[Theme], matched: bool, many: bool = False) -> OfflineGlobal:
    """The answer text of chosen themes; sources numbered in order of first citation (a
    chunk is told apart by its store too)."""
    if not chosen:
        return OfflineGlobal(_FRAME["zh" if has_cjk(question) else "en"]["empty"])
    lines = [heading(question, matched, many)]
    chunks: list[tuple[str, float]] = []
    ref: dict[tuple, int] = {}
    points = []
    for rank, theme in enumerate(chosen, 1):
        cited = []
        for chunk_id in theme.chunks:
            key = (theme.store, chunk_id)
            if key not in ref:
                chunks.append((chunk_id, 1.0 / rank))
                ref[key] = len(chunks)
            cited.append(ref[key])
        line = theme_line(rank, theme, question, cited)
        lines.append(line)
        points.append(f"{round(100 * theme.relevance)}|{line[len(str(rank)) + 2:]}")
    return OfflineGlobal("\n".join(lines), chunks, [t.community for t in chosen], points)
