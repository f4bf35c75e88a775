"""Offline entity types from what English text says a name is: definitions, asides, kinship,
other names, titles and a name's own words. The sentences are made up for these tests."""
from __future__ import annotations

import tgr
from tgr.offline.names_en import defining_type
from tgr.offline.providers import extract_heuristic


def types_of(text: str) -> dict[str, str]:
    return {e.name: e.type for e in extract_heuristic(text)[0]}


def test_a_life_span_aside_after_a_name_says_a_person():
    found = types_of("The mill passed to Orvel Quastin (3 May 1870 – 9 June 1931) and then to the town. "
                     "The war (1939–1945) ended it.")
    assert found["Orvel Quastin"] == "person"


def test_a_relative_of_someone_is_a_person_but_a_possession_is_not():
    found = types_of("She was the daughter of Brannoc Telvay and the granddaughter of Idris Wold. "
                     "He is the second son of Ventrel Air's chief executive.")
    assert found["Brannoc Telvay"] == found["Idris Wold"] == "person"
    assert found.get("Ventrel Air") != "person"


def test_another_name_of_a_person_is_a_person():
    found = types_of("Tessaly Marr (born Tessaly Ondrane; 1950) sang. Huo Lin, courtesy name Zhaoyu, led the army. "
                     "Pell Oranwick, known professionally as Tarrow Vane, is an American rapper. "
                     "Noah Quill (born Kestrow, Ohio) is a poet.")
    assert found["Tessaly Ondrane"] == found["Zhaoyu"] == found["Tarrow Vane"] == "person"
    assert found.get("Kestrow") != "person"  # a birthplace, not a birth name


def test_known_as_takes_the_type_of_the_definition_that_follows_it_only():
    found = types_of("Pharnel was a king of Kartav, an old kingdom known as Velmaria in antiquity.")
    assert found.get("Velmaria") != "person"


def test_a_whole_subject_right_before_a_definition_takes_its_type_a_part_of_one_does_not():
    found = types_of("They filmed in May. Broken Oar/Attack Of The Velds is a 1996 martial arts film. "
                     "Later, No Time for Lanterns is a 1952 film.")
    assert found["Attack Of The Velds"] == "work"
    assert found.get("Lanterns") != "work"


def test_a_definition_is_typed_by_its_head_the_last_noun_of_the_phrase():
    assert defining_type("Marta Rill is an American film director and screenwriter.") == "person"
    assert defining_type("Quell Pictures is a film production company based in Ohio.") == "organization"
    assert defining_type("Harro Dunst was a Welsh rugby union and rugby league footballer.") == "person"
    assert defining_type("Skell is an American country music duo.") == "organization"
    assert defining_type("Lumen Gate is the third studio album by Orrin Vale.") == "work"
    assert defining_type("Orrin Vale is a Canadian Studio/ Live Sound Engineer.") != "organization"
    assert defining_type("Tova Bright is the first EP by Orrin Vale.") == "work"


def test_a_store_types_a_relative_and_a_stage_name(tmp_path):
    corpus = tmp_path / "people.txt"
    corpus.write_text("Orrin Vale (12 March 1901 – 4 June 1977) was a Welsh rugby union and rugby league footballer. "
                      "He was the son of Brannoc Telvay and the brother of Idris Wold.\n\n"
                      "Pell Oranwick, known professionally as Tarrow Vane, is an American rapper.\n", encoding="utf-8")
    with tgr.open(tmp_path / "s.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(corpus)])
        types = dict(kb.conn.execute("SELECT name, type FROM entities").fetchall())
    assert types["Orrin Vale"] == types["Brannoc Telvay"] == types["Idris Wold"] == types["Tarrow Vane"] == "person"


def test_a_names_own_words_titles_and_territories():
    from tgr.offline.entity_types import type_by_words

    assert type_by_words("Archduke Orsin of Velmark") == type_by_words("Crown Prince Adel") == "person"
    assert type_by_words("Landgravine of Velmark") == type_by_words("Tarrin Khan") == "person"
    assert type_by_words("Duchy of Velmark") == type_by_words("Khanate of Velmark") == "location"
    assert type_by_words("Orsin Vale Prize") == type_by_words("Fifth Crusade") == "event"
    assert type_by_words("Velmark Relief Fund") == "organization"


def test_a_given_name_of_a_place_is_a_person_a_noun_of_a_place_is_not():
    from tgr.offline.entity_types import type_by_words

    assert type_by_words("Margaret of Velmark") == type_by_words("Anna Maria of Velmark") == "person"
    assert type_by_words("Dawn of Velmark") != "person" and type_by_words("Art of Velmark") != "person"


def test_a_place_west_of_another_a_monarchs_reign_and_a_name_then_its_rank():
    from tgr.offline.entity_types import type_by_words

    found = types_of("Orvale is a village. It lies two miles south-southwest of Tennick Ford. "
                     "The abbey was built during the reign of Wulfrand.")
    assert found["Tennick Ford"] == "location" and found["Wulfrand"] == "person"
    assert type_by_words("Orsin, Count of Velmark") == type_by_words("Orsin Vale, 3rd Baron Tennick") == "person"
    assert type_by_words("What's New, Mr. Velmark?") != "person"


def test_an_office_of_a_body_and_a_clergy_or_music_honorific_are_people():
    from tgr.offline.entity_types import type_by_words

    assert type_by_words("Leader of the Opposition") == type_by_words("Speaker of the Velmark Assembly") == "person"
    assert type_by_words("Rev. Orsin Vale") == type_by_words("Ustad Tarrin Ali") == "person"


def test_a_ruler_after_where_he_rules_or_comes_from_is_a_person():
    from tgr.offline.entity_types import type_by_words

    assert type_by_words("US President Orsin Vale") == type_by_words("Kansas Governor Tarrin Ali") == "person"
    assert type_by_words("Egyptian Pharaoh Amenhotep IX") == "person"
    assert type_by_words("GNU General Public License") != "person"
    assert type_by_words("American Major League Velmark") != "person"


def test_a_definition_reads_through_asides_and_quotes_but_not_a_relative_clause_about_someone_else():
    assert defining_type("Orvale was named for Tarrin Vale, who served in the Senate and was a county judge.") is None
    assert defining_type("Tarrin Vale, who resembled Orsin Quill, is an amateur detective.") == "person"
    assert defining_type("Velmark Gate is a rural gmina (administrative district) in Poland.") == "location"
    assert defining_type('Velm Nails is a "gong\'an" detective novel.') == "work"
    assert defining_type("Velm Chapel is the First Baptist Church of Velmark.") == "organization"


def test_a_capitalised_name_inside_a_definition_is_no_head_unless_it_ends_the_phrase():
    assert defining_type("Orsin Vale is a dual Austrian/United States citizen.") is None
    assert defining_type("Orsin Vale is a Studio Velmark film.") == "work"
