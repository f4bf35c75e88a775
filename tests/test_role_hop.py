"""A question about a role's bearer ("the director of film X"): the bridge sentence, then the
bearer's sentence holding the kind asked (tgr.offline.role_hop)."""
from __future__ import annotations

from tgr.offline.answer_sentences import answer_sentences, asked_kind
from tgr.offline.role_hop import question_role

FILM = ("1", "Harbour of Glass is a 1961 Norwegian drama film starring Inga Vold and Per Rask. "
             "It was shot in the winter of 1960 near the harbour of Tromsø. "
             "The film is directed by Ansel Brook and is a drama as well as a romance.")
DIRECTOR = ("2", "Ansel Marten Brook (born May 2, 1931) is a retired Norwegian film director and producer. "
                 "He won the prize for Best Director at the Bergen film festival for two of his films.")
OTHER = ("3", "Lena Moss (date of birth unknown) was a film director who worked in Bergen.")


def _quoted(question: str, passages) -> list[str]:
    return [sentence for sentence, _ in answer_sentences(question, passages, linked=True)]


def test_date_and_place_of_birth_and_death_ask_a_date_and_a_place():
    assert asked_kind("What is the date of birth of the director of film Harbour of Glass?") == "year"
    assert asked_kind("What is the date of death of Ansel Brook?") == "year"
    assert asked_kind("What is the place of birth of the composer of Stillwater?") == "place"
    assert asked_kind("Where did the director of film Harbour of Glass die?") == "place"
    # a birthplace that is only a step on the way is not what is asked
    assert asked_kind("What kind of boat sank off Ansel Brook's birthplace?") is None


def test_the_bearers_sentence_with_the_date_asked_is_quoted_with_the_bridge():
    quoted = _quoted("What is the date of birth of the director of film Harbour of Glass?", [FILM, OTHER, DIRECTOR])
    birth = "Ansel Marten Brook (born May 2, 1931) is a retired Norwegian film director and producer."
    assert birth in quoted
    bridge = "The film is directed by Ansel Brook and is a drama as well as a romance."
    assert quoted.index(bridge) < quoted.index(birth)


def test_a_sentence_holding_the_asked_word_goes_before_the_opening():
    bearer = ("2", "Ansel Marten Brook (1931–1999) was a Norwegian film director. "
                   "Brook died in Oslo on 4 March 1999 after a long illness.")
    quoted = _quoted("When did the director of film Harbour of Glass die?", [FILM, bearer])
    assert "Brook died in Oslo on 4 March 1999 after a long illness." in quoted
    assert "The film is directed by Ansel Brook and is a drama as well as a romance." in quoted


def test_a_role_of_a_possessive_name():
    father = ("1", "Edla of Varnholm was a Swedish abbess. Her father was Karl Lind, a merchant of Visby.")
    lind = ("2", "Karl Johan Lind (1402 – 14 June 1461) was a Swedish merchant. He traded furs in Visby.")
    quoted = _quoted("When did Edla of Varnholm's father die?", [father, lind])
    assert "Her father was Karl Lind, a merchant of Visby." in quoted
    assert "Karl Johan Lind (1402 – 14 June 1461) was a Swedish merchant." in quoted


def test_without_the_bearers_passage_nothing_is_bridged():
    quoted = _quoted("What is the date of birth of the director of film Harbour of Glass?", [FILM, OTHER])
    assert quoted and all("Ansel Marten Brook" not in s for s in quoted)


def test_asking_for_the_bearer_alone_quotes_no_hop_to_their_passage():
    quoted = _quoted("Who is the director of film Harbour of Glass?", [FILM, DIRECTOR])
    assert quoted[0] == "The film is directed by Ansel Brook and is a drama as well as a romance."  # the answer leads
    assert question_role("Who is the director of film Harbour of Glass?") == ("Harbour of Glass", "director", "")


def test_the_innermost_role_and_the_rest_of_the_question():
    assert question_role("What is the date of birth of the director of film Best Pals (1982 Film)?") == (
        "Best Pals", "director", "date birth")
    assert question_role("Who is the spouse of Big Eye's main director?") == ("Big Eye", "director", "spouse")
    assert question_role("When did the performers of Stillwater split up?") == ("Stillwater", "performers", "split up")
    assert question_role("What is the date of birth of Ansel Brook?") is None  # asked of the name itself
    assert question_role("When did the country where the village of Clonmoor lies join the union?") is None
