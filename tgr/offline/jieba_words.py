"""Word sets of jieba's dictionary that rjieba does not tell (it has the same dictionary, but no
word's count): its person words, the rare ones among them and its everyday words.

They come from jieba's dict.txt ("word count tag" a line; rjieba's own dictionary), read without
loading jieba. Parsing its 5 MB costs ~0.1-0.3 s of CPU a process, so the three sets are shipped in
JIEBA_WORDS_FILE (~350 KB), written by write_jieba_words() from the installed dict.txt and used only
while that file's size and CRC-32 match what it was written from (else dict.txt is parsed).
"""
from __future__ import annotations

import os
import re
import zlib
from functools import lru_cache
from pathlib import Path

RARE = 10  # jieba's dictionary counts; its rarest person names are often segmentation debris
EVERYDAY = 5000  # jieba's dictionary counts: 地方 52,641, 利用 13,559; 南海 2,087, 观音 763, 菩提 185
JIEBA_WORDS_FILE = Path(__file__).with_name("data") / "jieba_words.txt.gz"

Words = tuple[frozenset[str], frozenset[str], frozenset[str]]  # person words, rare ones, everyday words


def dictionary_person_words() -> frozenset[str]:
    """The words jieba's dictionary tags as person names (nr, nrt, nrfg ...), common nouns
    among them (和尚, 小姐): tgr.build.zh_common_nouns tells those apart by the text."""
    return _dictionary_words()[0]


def rare_person_names() -> frozenset[str]:
    """The person names (nr...) jieba's dictionary counts fewer than RARE times (63,018 of
    its 349,046 words)."""
    return _dictionary_words()[1]


def everyday_words() -> frozenset[str]:
    """Words jieba's dictionary counts at least EVERYDAY times: so common that before a title
    they are the sentence's words, not its bearer's name (利用地方长老, not a person 地方长老)."""
    return _dictionary_words()[2]


@lru_cache(maxsize=1)
def _dictionary_words() -> Words:
    data = jieba_dictionary()
    return shipped_words(data) or parsed_words(data)


def jieba_dictionary() -> bytes:
    """The bytes of jieba's dict.txt."""
    from importlib.util import find_spec

    folder = find_spec("jieba").submodule_search_locations[0]
    with open(os.path.join(folder, "dict.txt"), "rb") as file:
        return file.read()


def _source(data: bytes) -> str:
    """What JIEBA_WORDS_FILE's first line says of the dict.txt it was written from."""
    return f"jieba dict.txt {len(data)} bytes, CRC-32 {zlib.crc32(data):08x}"


def shipped_words(data: bytes) -> Words | None:
    """The word sets of JIEBA_WORDS_FILE; None when it is missing or was written from another
    dictionary than data (dict.txt's bytes)."""
    import gzip

    try:
        lines = gzip.decompress(JIEBA_WORDS_FILE.read_bytes()).decode("utf-8").split("\n")
    except (OSError, EOFError, ValueError):
        return None
    if len(lines) != 5 or lines[0] != _source(data) or lines[4]:
        return None
    rare, other, everyday = ([] if not line else line.split(" ") for line in lines[1:4])
    return frozenset(rare + other), frozenset(rare), frozenset(everyday)


def write_jieba_words(path: Path = JIEBA_WORDS_FILE) -> None:
    """Write JIEBA_WORDS_FILE from the installed jieba's dict.txt (rerun after upgrading jieba):
    `python -c "from tgr.offline.jieba_words import write_jieba_words; write_jieba_words()"`.
    A line saying which dict.txt, then the rare person names, the other person words and the
    everyday words, each line's sorted and joined by spaces (a word has none)."""
    import gzip

    data = jieba_dictionary()
    people, rare, everyday = parsed_words(data)
    lines = [_source(data), *(" ".join(sorted(words)) for words in (rare, people - rare, everyday)), ""]
    path.write_bytes(gzip.compress("\n".join(lines).encode("utf-8"), mtime=0))


def parsed_words(data: bytes) -> Words:
    """The word sets of a dictionary's bytes, by regular expressions (the slow way)."""
    text = data.decode("utf-8")
    return (frozenset(re.findall(r"^(\S+) \d+ nr\w*[ \t]*$", text, re.M)),
            frozenset(re.findall(rf"^(\S+) [1-{RARE - 1}] nr\w*[ \t]*$", text, re.M)),
            frozenset(re.findall(r"^(\S+) (?:[1-9]\d{4,}|[5-9]\d{3}) ", text, re.M)))
