"""Questions through kin ("When did X's mother die?", "Who is the grandchild of X?"): each step's
sentence, then what is asked of the last person (tgr.offline.kin_chain, tgr.offline.kin_facts)."""
from __future__ import annotations

from tgr.offline.kin_chain import kin_answer, kin_question
from tgr.offline.providers import ExtractiveAnswerer

ODO = ("1", "Odo of Varnholm (812 – 869) was a Frankish count. He was the second son of Count Arnulf of "
            "Brask and his wife Ermelind of Tours. He ruled the march for thirty years.")
ERMELIND = ("2", "Ermelind of Tours (790 – 2 March 851) was a Frankish noblewoman. "
                 "She spent her last years in a convent at Laon. She died of pneumonia in the winter of 851.")
ARNULF = ("3", "Arnulf of Brask (770 – 840) was a Frankish count. He was a son of Bero the Elder. "
               "He died in Metz on 4 May 840.")
TAMSIN = ("4", "Tamsin Holl (born 1950) is a Welsh painter. She married the sculptor Rowan Pike in 1975. "
               "They had three children: Ada Pike, Bram Pike and Cole Pike.")
ROWAN = ("5", "Rowan Pike (1941 – 2010) was a German nobleman and sculptor. He was the son of Elias Pike.")
BRAM = ("6", "Bram Pike (born 1978) is a Welsh actor. He is the father of the singer Ivy Pike.")
OTHER = ("7", "Mara Lind (born 1950) is a Welsh potter. Her father was the painter Olaf Lind.")
PASSAGES = [ODO, ERMELIND, ARNULF, TAMSIN, ROWAN, BRAM, OTHER]


def _answer(question: str, passages=PASSAGES) -> list[str]:
    return [line.rsplit(" [Sources", 1)[0] for line in ExtractiveAnswerer().answer(question, passages).split("\n")]


def test_the_kin_words_of_a_question_as_steps():
    assert kin_question("When did Odo of Varnholm's mother die?")[:2] == ("Odo of Varnholm", ["mother"])
    assert kin_question("Who is the maternal grandfather of Odo of Varnholm?")[:2] == ("Odo of Varnholm", ["mother", "father"])
    assert kin_question("Who is the paternal grandfather of Odo?")[:2] == ("Odo", ["father", "father"])
    assert kin_question("Who is Tamsin Holl's father-in-law?")[:2] == ("Tamsin Holl", ["spouse", "father"])
    assert kin_question("Who is the grandchild of Tamsin Holl (Painter)?")[:2] == ("Tamsin Holl (Painter)", ["child", "child"])
    assert kin_question("Who is the director of Harbour of Glass?") is None


def test_the_mother_of_both_parents_named_is_the_second_and_her_cause_of_death_is_quoted():
    lines = _answer("What is the cause of death of Odo of Varnholm's mother?")
    bridge = "He was the second son of Count Arnulf of Brask and his wife Ermelind of Tours."
    assert lines[1] == bridge and lines[0].startswith("Odo of Varnholm (812 – 869)")  # who "He" is, first
    assert lines[2] == "She died of pneumonia in the winter of 851."


def test_the_fathers_date_of_death():
    chain = kin_answer("When did Odo of Varnholm's father die?", PASSAGES)
    assert chain[-1] == ("He died in Metz on 4 May 840.", "3")


def test_a_grandchild_is_a_childs_child():
    lines = _answer("Who is the grandchild of Tamsin Holl?")
    assert "They had three children: Ada Pike, Bram Pike and Cole Pike." in lines[:3]
    assert "He is the father of the singer Ivy Pike." in lines[:4]


def test_a_father_in_law_is_the_spouses_father():
    chain = [s for s, _ in kin_answer("Who is Tamsin Holl's father-in-law?", PASSAGES)]
    assert chain == ["Tamsin Holl (born 1950) is a Welsh painter.", "She married the sculptor Rowan Pike in 1975.",
                     "Rowan Pike (1941 – 2010) was a German nobleman and sculptor.", "He was the son of Elias Pike."]


def test_a_mother_must_be_said_to_be_a_woman():
    only_father = ("8", "Ivo Brand (born 1960) is a Welsh farmer. He is a son of Ulf Brand.")
    assert kin_answer("Who is Ivo Brand's mother?", [only_father]) == []
    assert kin_answer("Who is Ivo Brand's father?", [only_father])[-1][0] == "He is a son of Ulf Brand."


def test_no_chain_without_a_step_the_passages_say():
    assert kin_answer("Who is the grandchild of Mara Lind?", PASSAGES) == []
    before = ExtractiveAnswerer().answer("Who is the grandchild of Mara Lind?", PASSAGES)
    assert before.split("\n")[0].endswith("]")  # the sentences as without the chain, no lead


def test_which_country_a_person_is_from_by_the_demonym():
    lines = _answer("Which country is Tamsin Holl's husband from?")
    assert lines[0] == "Germany."
    assert "Rowan Pike (1941 – 2010) was a German nobleman and sculptor." in lines[1:4]


def test_the_place_of_birth_of_a_mother():
    mother = ("9", "Ermelind of Tours (790 – 851) was a Frankish noblewoman. She was born in Tours to a family of counts.")
    chain = kin_answer("Where was Odo of Varnholm's mother born?", [ODO, mother])
    assert chain[-1] == ("She was born in Tours to a family of counts.", "9")


def test_kin_of_a_roles_bearer():
    film = ("10", "Harbour of Glass is a 1961 Norwegian drama film directed by Rowan Pike.")
    assert kin_question("Who is the spouse of the director of Jump for Glory?")[:2] == ("director of Jump for Glory", ["spouse"])
    chain = [s for s, _ in kin_answer("Who is the father of the director of film Harbour of Glass?", [film] + PASSAGES)]
    assert chain == [film[1], "Rowan Pike (1941 – 2010) was a German nobleman and sculptor.", "He was the son of Elias Pike."]
    assert kin_answer("Who is the father of the director of film Unknown Harbour?", [film] + PASSAGES) == []


def test_where_a_father_died_is_the_sentence_naming_the_place():
    father = ("11", "Bero Lind (1770 – 1840) was a Frankish count. He died of a fever in the spring of 1840. "
                    "He died in Metz after a long illness.")
    son = ("12", "Arno Lind (1801 – 1860) was a Frankish count. He was a son of Bero Lind.")
    assert kin_answer("Where did Arno Lind's father die?", [son, father])[-1][0] == "He died in Metz after a long illness."
    assert kin_answer("When did Arno Lind's father die?", [son, father])[-1][0] == "He died of a fever in the spring of 1840."
    assert kin_question("Who is the sister-in-law of Arno Lind?")[1] == ["spouse", "sister"]


def test_a_name_written_after_its_titles_is_the_same_person():
    son = ("13", "Arno Lind (born 1981) is a son of former Frankish Supreme Count Bero Lind.")
    father = ("14", "Bero Lind (1770 – 1840) was a Frankish count. He died in Metz on 4 May 1840.")
    assert kin_answer("When did Arno Lind's father die?", [son, father])[-1][0] == "He died in Metz on 4 May 1840."


FAMILY = [("21", "Carl Moe (1900 – 1970) was a Danish baker. He married Ida Holm in 1925. "
                 "They had three children: Ebba Moe, Finn Moe and Gert Moe."),
          ("22", "Gert Moe (1930 – 1999) was a Danish painter. He was the son of Carl Moe and his first wife Ida Holm."),
          ("23", "Carl Moe later married the singer Lise Dahl in 1950."),
          ("24", "Lise Dahl (1920 – 1990) was a Danish singer. She married Carl Moe in 1950."),
          ("25", "Ebba Moe (1926 – 2001) was a Danish teacher. She was the mother of Hans Berg.")]


def test_a_stepmother_is_the_fathers_wife_who_is_not_the_mother():
    chain = [s for s, _ in kin_answer("Who is the stepmother of Gert Moe?", FAMILY)]
    assert "Lise Dahl" in chain[-1] and "Ida Holm" not in chain[-1]  # not his mother, Ida Holm


def test_a_sibling_is_a_parents_other_child_and_an_uncle_a_parents_brother():
    chain = [s for s, _ in kin_answer("Who is Gert Moe's sister?", FAMILY)]
    assert "They had three children: Ebba Moe, Finn Moe and Gert Moe." in chain
    uncle = [s for s, _ in kin_answer("Who is the uncle of Hans Berg?", FAMILY)]
    assert uncle[:2] == ["Ebba Moe (1926 – 2001) was a Danish teacher.", "She was the mother of Hans Berg."]
    assert "They had three children: Ebba Moe, Finn Moe and Gert Moe." in uncle


def test_a_parent_named_after_a_possessive_description():
    son = ("26", "Arno Lind (born 1944) is the first son of Denmark's former Paramount leader Bero Lind.")
    father = ("27", "Bero Lind (1904 – 1997) was a Danish statesman. He died in Aarhus on 19 February 1997.")
    assert kin_answer("When did Arno Lind's father die?", [son, father])[-1][0] == "He died in Aarhus on 19 February 1997."
