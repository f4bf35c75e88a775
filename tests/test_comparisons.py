"""Offline verdicts on comparison questions (tgr.offline.comparisons), through the extractive answerer."""
from tgr.offline.comparisons import comparison_verdict
from tgr.offline.providers import ExtractiveAnswerer

PASSAGES = [
    ("1", "Mara Ostrand (born 3 May 1950) is an American film director and screenwriter. She directed twelve films."),
    ("2", "Tomas Verlane Kell (12 June 1941 – 2001) was a Hungarian film director. He is known for comedies."),
    ("3", "Jonathan Ostrand is a British actor. The Ostrand Institute is a Hungarian film school."),
    ("4", "The Pelican Rays were an American rock band from Ohio, formed in 1994. They split in 2001."),
    ("5", "Glassfield is a British indie band formed in early 2006 in Leeds."),
    ("6", "Dunmore (or the Town of Dun) is a prefecture-level city in Kelvan province, Arland."),
    ("7", "Harlow is a city in northern Selvan province, Arland."),
    ("8", "Ilse Verlane Hart is an American film director, producer and actress."),
    ("9", "Corvin is a town in Kelvan province, Arland, on the river Dun."),
    ("10", "Edda Pilgrim is a British painter and sculptor. She taught at an art school in Leeds."),
]


def answer(question: str) -> list[str]:
    return ExtractiveAnswerer().answer(question, PASSAGES).split("\n")


def lead(question: str) -> str | None:
    verdict = comparison_verdict(question, PASSAGES)
    return verdict and verdict.lead


def test_both_x_yes_leads_with_the_verdict_and_both_definitions():
    lines = answer("Are Mara Ostrand and Ilse Verlane Hart both film directors?")
    assert lines[0] == "Yes."
    assert lines[1].startswith("Mara Ostrand (born 3 May 1950) is an American film director") and lines[1].endswith("[Sources: 1]")
    assert lines[2] == "Ilse Verlane Hart is an American film director, producer and actress. [Sources: 8]"
    assert len(lines) == len(set(lines))  # the sentences after them are not repeated


def test_both_x_no_when_one_names_another_nationality():
    assert lead("Are Mara Ostrand and Tomas Kell both American directors?") == "No"
    assert lead("Are Mara Ostrand and Tomas Kell both film directors?") == "Yes"  # Tomas Verlane Kell


def test_both_x_no_when_ones_text_never_says_the_kind():
    assert lead("Are Mara Ostrand and Edda Pilgrim both directors?") == "No"
    assert lead("Are Edda Pilgrim and Mara Ostrand both sculptors?") == "No"


def test_no_verdict_when_unsure():
    assert lead("Are Mara Ostrand and Edda Pilgrim both teachers?") is None  # neither definition says it
    assert lead("Are Mara Ostrand and Nobody Else both film directors?") is None  # one side undefined
    assert lead("Who directed Glassfield?") is None
    lines = answer("Are Mara Ostrand and Nobody Else both film directors?")
    assert lines[0] not in {"Yes.", "No."} and lines[0].endswith("]")


def test_a_side_is_defined_by_its_whole_name_only():
    # "Jonathan Ostrand is ..." and "The Ostrand Institute is ..." define no Ostrand but Mara
    assert lead("Are Mara Ostrand and Jonathan Ostrand both directors?") == "No"
    assert lead("Are Tomas Ostrand and Glassfield both bands?") is None
    assert lead("Are Ostrand and Glassfield both bands?") is None  # a one-word name is that word alone
    assert lead("Are Ostrand Institute and Glassfield both bands?") == "No"  # "The Ostrand Institute is a ... school"


def test_same_place_of_a_kind():
    assert lead("Are Dunmore and Harlow situated in the same province?") == "No"
    assert lead("Are Dunmore and Corvin located in the same province?") == "Yes"
    assert lead("Are Mara Ostrand and Tomas Kell from the same country?") == "No"


def test_which_first_names_the_earlier_side():
    assert lead("Which band was formed first, The Pelican Rays or Glassfield?") == "The Pelican Rays"
    assert lead("Which band was formed more recently, The Pelican Rays or Glassfield?") == "Glassfield"
    assert lead("Who was born first, Mara Ostrand or Tomas Kell?") == "Tomas Kell"
    assert lead("Who is younger, Mara Ostrand or Tomas Kell?") == "Mara Ostrand"
    lines = answer("Who is the oldest, Mara Ostrand or Tomas Kell?")
    assert lines[0] == "Tomas Kell." and "[Sources: 1]" in lines[1] and "[Sources: 2]" in lines[2]


def test_which_is_x_names_the_side_that_holds_it():
    assert lead("Which director is Hungarian, Mara Ostrand or Tomas Kell?") == "Tomas Kell"
    assert lead("Which director is more famous, Mara Ostrand or Tomas Kell?") is None


def test_dates_are_read_after_the_event_asked():
    passages = [("1", "Kestrel Lane is a Welsh band. Its former singer left in 1990. Kestrel Lane was formed in 1996."),
                ("2", "The Oddwicks are a Welsh band formed in Cardiff in 1993.")]
    verdict = comparison_verdict("Which band was formed first, Kestrel Lane or The Oddwicks?", passages)
    assert verdict.lead == "The Oddwicks"  # "former singer ... 1990" dates no forming
    assert verdict.support[0] == ("Kestrel Lane was formed in 1996.", "1")


def test_which_is_x_by_a_kind_the_other_text_never_says():
    assert lead("Which artist is a sculptor, Mara Ostrand or Edda Pilgrim?") == "Edda Pilgrim"


def test_same_country_by_the_countries_named():
    passages = [("1", "Dolno Brest is a village in the municipality of Vask, Bulgaria."),
                ("2", "Kelmor is a small village near the river Ost, which is part of a district of Pakistan."),
                ("3", "Tarnica is a mountain of the Brenna range, Bulgaria.")]
    assert comparison_verdict("Are both Dolno Brest and Kelmor located in the same country?", passages).lead == "No"
    assert comparison_verdict("Are Dolno Brest and Tarnica in the same country?", passages).lead == "Yes"


def test_titles_and_their_small_words_and_a_works_year():
    passages = [("1", "If We Had to Stay Home is the debut album by Lona Vay, released in 1990 on Arc Records."),
                ("2", "What's Left Behind is an album by the Marrow Set, released in 1999."),
                ("3", "The Oak Nights (Italian: Le notti) is a 1939 Italian comedy film."),
                ("4", "Red Hollow is a 1979 Korean drama film directed by Im Sora.")]
    assert comparison_verdict("Which album was released more recently, If We Had to Stay Home or What'S Left Behind?",
                              passages).lead == "What'S Left Behind"
    assert comparison_verdict("Which film came out first, The Oak Nights or Red Hollow?", passages).lead == "The Oak Nights"


def test_a_phrase_before_the_subject_names_no_side():
    passages = [("1", "Directed by Lena Moor from a novel, Dark Harbor is a film in which two stars meet."),
                ("2", "Lena Moor (born 12 May 1931) was a Dutch film director."),
                ("3", "Piet Lanse (born 2 March 1940) is a Dutch actor.")]
    verdict = comparison_verdict("Who was born first? Lena Moor or Piet Lanse?", passages)
    assert verdict.lead == "Lena Moor" and verdict.support[0][1] == "2"


def test_a_longer_title_names_another_thing():
    passages = [("1", "Field Notes for Students is an online magazine published by the Ardent Society."),
                ("2", "Field Notes is an American science magazine. It has been published since 1922 by the Ardent Society."),
                ("3", "Loop World is a monthly music magazine, published since July 1980.")]
    verdict = comparison_verdict("Which magazine was published first, Loop World or Field Notes?", passages)
    assert verdict.lead == "Field Notes" and verdict.support[1][1] == "2"


def test_a_nationality_left_unsaid_excludes_nothing():
    passages = [("1", "Rosa Lind is an American singer and songwriter."),
                ("2", "Dale Ormsby is a country singer from Austin, Texas.")]
    assert comparison_verdict("Which singer is American, Rosa Lind or Dale Ormsby?", passages) is None
    assert comparison_verdict("Are Rosa Lind and Dale Ormsby both American?", passages) is None


def test_who_died_first_by_the_dates_of_death():
    people = [("1", "Mara Ostrand (3 May 1890 – 1 June 1960) was an American film director."),
              ("2", "Tomas Kell (12 June 1901 – 1955) was a Hungarian film director."),
              ("3", "Ilse Hart (born 1880) is an American actress.")]
    assert comparison_verdict("Who died first, Mara Ostrand or Tomas Kell?", people).lead == "Tomas Kell"
    assert comparison_verdict("Who died later, Mara Ostrand or Tomas Kell?", people).lead == "Mara Ostrand"
    assert comparison_verdict("Who was born first, Mara Ostrand or Tomas Kell?", people).lead == "Mara Ostrand"
    assert comparison_verdict("Who died first, Mara Ostrand or Ilse Hart?", people) is None  # no date of death
    assert comparison_verdict("Which came first, the death of Tomas Kell or the birth of Ilse Hart?", people).lead == "Ilse Hart"
