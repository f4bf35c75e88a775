"""What the English and Chinese name finders (and tgr.build.resolve) share: word lists and the
Chinese short-form rule, kept once so the finders cannot drift apart."""
from __future__ import annotations

import re

CJK_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # for a character class: Han ideographs

MONTHS = frozenset("january february march april may june july august september october november december".split())
MONTH_ABBREVIATIONS = frozenset("jan feb mar apr may jun jul aug sep sept oct nov dec".split())
DAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())


def chinese_short_forms(names, *, min_length: int = 2) -> dict[str, str]:
    """香港特区 -> 香港特别行政区: a short form and the one longer name with the same first and
    last character and the rest in order. Only when exactly one longer name fits, so an
    ambiguous short form stays itself; names under min_length characters are left alone."""
    han = re.compile(f"[{CJK_CHARS}]+")
    cjk = [n for n in names if han.fullmatch(n)]
    joined = {}
    for short in cjk:
        if len(short) < min_length:
            continue
        longer = [n for n in cjk if len(n) > len(short) and n[0] == short[0] and n[-1] == short[-1]
                  and _in_order(short, n)]
        if len(longer) == 1:
            joined[short] = longer[0]
    return joined


def _in_order(short: str, long: str) -> bool:
    rest = iter(long)
    return all(char in rest for char in short)
