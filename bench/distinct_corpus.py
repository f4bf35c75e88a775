"""Many million characters of *distinct* text from a few books: each pass over the books'
paragraphs (in a new seeded order) renames every proper name, so the entity graph grows with
the text as it would on a real corpus instead of saturating on the same names.

    python bench/distinct_corpus.py OUT.txt MILLIONS BOOK...   # write one (to look at it)

Pass 0 is the books as written. In pass k >= 1:
- English: a capitalised word of 3+ letters the books never write in lower case (Ahab,
  Queequeg, Nantucket) gets the pass's suffix (Ahab -> Ahabel, Ahabis, ...): still a capitalised
  name, new in every pass.
- Chinese: a word rjieba tags as a person (nr, nrt, nrfg) or a place (ns) becomes another word
  jieba's dictionary tags the same way, of the same length where the dictionary has enough,
  never used by the books or an earlier pass (孙悟空 -> 章学诚 in one pass, -> 李泰清 in the next;
  once the dictionary's places are used up, places get person names, and once those are,
  two two-character person names joined): names the offline name finder finds.
Everything else (sentences, their order within a paragraph, the common words) is the books'.
Used by flat_cost.py (issue 27 item 4). Standard library, rjieba and jieba's dict.txt only.
"""
from __future__ import annotations

import os
import random
import re
import sys
from collections import defaultdict
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from run import _body  # noqa: E402  (a book's text without its Gutenberg boilerplate)

SYLLABLES = ("el", "is", "or", "un", "ar", "en", "ir", "os", "um", "ad", "et", "ik")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
_LOWER = re.compile(r"\b[a-z]{3,}\b")
_CJK = re.compile(r"[\u4e00-\u9fff]")
PERSON, PLACE = "person", "place"


def _kind(flag: str) -> str | None:
    return PERSON if flag.startswith("nr") else PLACE if flag == "ns" else None


def suffix(k: int) -> str:
    """Pass k's English suffix: el, is, ... then two syllables (k >= 1)."""
    k -= 1
    tail = SYLLABLES[k % len(SYLLABLES)]
    return tail if k < len(SYLLABLES) else SYLLABLES[k // len(SYLLABLES) - 1] + tail


@lru_cache(maxsize=1)
def dictionary_names() -> dict[tuple[str, int], list[str]]:
    """(kind, length) -> jieba's dictionary words of that kind and length, most frequent first."""
    path = os.path.join(find_spec("jieba").submodule_search_locations[0], "dict.txt")
    pools: dict[tuple[str, int], list[tuple[int, str]]] = defaultdict(list)
    with open(path, encoding="utf-8") as file:
        for line in file:
            word, count, flag = line.split()
            kind = _kind(flag)
            if kind and 2 <= len(word) <= 4 and all(_CJK.match(c) for c in word):
                pools[(kind, len(word))].append((-int(count), word))
    return {key: [w for _, w in sorted(words)] for key, words in pools.items()}


class Renamer:
    """Pass k's new name for each name of the books (module docstring)."""

    def __init__(self, english: set[str], chinese: dict[str, str], seed: int):
        self.english = english
        self.chinese = chinese  # name -> kind
        self.used = set(chinese)
        rng = random.Random(seed)
        self.pools = {key: words[:] for key, words in dictionary_names().items()}
        for words in self.pools.values():
            rng.shuffle(words)
        self.passes: dict[int, dict[str, str]] = {}
        self.two, self.joined = dictionary_names()[(PERSON, 2)], 0  # most frequent first

    def _fresh(self, kind: str, length: int) -> str:
        # the same kind and length first, then the largest pools; places run out first
        # (~17,000 in the dictionary), then become person names, still names to the finder
        for pool_kind in (kind, PERSON):
            for size in (length, 3, 2, 4):
                pool = self.pools.get((pool_kind, size), [])
                while pool:
                    word = pool.pop()
                    if word not in self.used:
                        self.used.add(word)
                        return word
        # then two two-character person words joined (宋江 + 林冲): names the finder still finds
        while True:
            first, second = divmod(self.joined, len(self.two))
            self.joined += 1
            word = self.two[first % len(self.two)] + self.two[second]
            if word not in self.used:
                self.used.add(word)
                return word

    def mapping(self, k: int) -> dict[str, str]:
        if k not in self.passes:
            tail = suffix(k)
            names = {name: name + tail for name in self.english}
            names.update((name, self._fresh(kind, len(name))) for name, kind in sorted(self.chinese.items()))
            self.passes[k] = names
        return self.passes[k]


def _pieces(paragraph: str) -> list[tuple[str, str | None]]:
    """The paragraph as (text, the kind of Chinese name it is or None) pieces (rjieba's tags;
    a paragraph without Chinese is one piece)."""
    if not _CJK.search(paragraph):
        return [(paragraph, None)]
    import rjieba

    return [(word, _kind(flag) if len(word) >= 2 and all(map(_CJK.match, word)) else None)
            for word, flag in rjieba.tag(paragraph)]


def distinct_corpus(books: list[Path], chars: int, seed: int = 17) -> str:
    """About chars characters of the books' paragraphs, pass after pass, each pass in a new
    seeded order with every proper name renamed (module docstring)."""
    texts = [_body(book) for book in books]
    paragraphs = [p.strip() for text in texts for p in text.split("\n\n") if p.strip()]
    whole = "\n".join(texts)
    lower = set(_LOWER.findall(whole))
    english = {w for w in _CAPITALISED.findall(whole) if w.lower() not in lower}
    pieces = [_pieces(p) for p in paragraphs]
    chinese = {word: kind for paragraph in pieces for word, kind in paragraph if kind}
    renamer = Renamer(english, chinese, seed)
    rng, parts, total, k = random.Random(seed), [], 0, 0
    while total < chars:
        order = list(range(len(paragraphs)))
        rng.shuffle(order)
        names = renamer.mapping(k) if k else {}
        for i in order:
            if k:
                text = "".join(names.get(w, w) if kind else w for w, kind in pieces[i])
                text = _CAPITALISED.sub(lambda m: names.get(m.group(), m.group()), text)
            else:
                text = paragraphs[i]
            parts.append(text)
            total += len(text) + 2
            if total >= chars:
                break
        k += 1
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__.splitlines()[3].strip())
    Path(sys.argv[1]).write_text(
        distinct_corpus([Path(b) for b in sys.argv[3:]], int(float(sys.argv[2]) * 1e6)), encoding="utf-8")
