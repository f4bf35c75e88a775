"""Comparisons through each side's bearer of a role: "Which film has the director who died first,
A or B?", "Are the directors of films A and B from the same country?" (tgr.offline.comparison_bridges)."""
from __future__ import annotations

from tgr.offline.comparison_bridges import bridge_role, pair_works
from tgr.offline.comparisons import comparison_verdict
from tgr.offline.providers import ExtractiveAnswerer

GLASS = ("1", "Harbour of Glass is a 1961 Norwegian drama film directed by Ansel Brook and starring Inga Vold.")
STONE = ("2", "The Stone Orchard (1974 film) is an American western film directed by Carla de Wint.")
RAIN = ("3", "Rain and Salt is a 1958 Hungarian comedy film directed by Lajos Berke.")
BROOK = ("4", "Ansel Marten Brook (May 2, 1931 – 4 June 1999) was a Norwegian film director and producer.")
WINT = ("5", "Carla de Wint (born 12 March 1929) is an American film director. She died in Reno on 3 May 2001.")
BERKE = ("6", "Lajos Berke (1920 – 1988) was a Hungarian film director.")
OAK = ("7", "Oak Hill is a 1961 Norwegian drama film directed by Hedda Moe.")
MOE = ("8", "Hedda Moe (born 1930) was a Norwegian film director.")
PASSAGES = [GLASS, STONE, RAIN, BROOK, WINT, BERKE, OAK, MOE]


def lead(question: str, passages=PASSAGES) -> str | None:
    verdict = comparison_verdict(question, passages)
    return verdict and verdict.lead


def test_the_role_a_comparison_goes_through():
    assert bridge_role("Which film has the director who died first, Harbour of Glass or Rain and Salt?") == "director"
    assert bridge_role("Which film whose director was born later, A or B?") == "director"
    assert bridge_role("Are the directors of films A and B both from the same country?") == "director"
    assert bridge_role("Do director of film A and director of film B have the same nationality?") == "director"
    assert bridge_role("Which film came out first, A or B?") is None
    assert bridge_role("Are A and B both film directors?") is None


def test_the_two_works_of_a_yes_no_comparison_each_open_a_passage():
    assert pair_works("Are the directors of films Rain and Salt and Harbour of Glass both from the same country?",
                      PASSAGES) == ("Rain and Salt", "Harbour of Glass")
    assert pair_works("Do director of film The Stone Orchard (1974 film) and director of film Oak Hill have the "
                      "same nationality?", PASSAGES) == ("The Stone Orchard (1974 film)", "Oak Hill")


def test_which_film_by_its_directors_dates():
    assert lead("Which film has the director who died first, Harbour of Glass or Rain and Salt?") == "Rain and Salt"
    assert lead("Which film has the director died later, Harbour of Glass or The Stone Orchard?") == "The Stone Orchard"
    assert lead("Which film has the director born first, The Stone Orchard or Rain and Salt?") == "Rain and Salt"
    assert lead("Which film whose director is younger, Rain and Salt or Harbour of Glass?") == "Harbour of Glass"


def test_the_verdict_leads_each_sides_bridge_and_date():
    lines = ExtractiveAnswerer().answer("Which film has the director who died first, Harbour of Glass or Rain and Salt?",
                                        PASSAGES).split("\n")
    assert lines[0] == "Rain and Salt."
    assert [line.rsplit(" [Sources", 1)[0] for line in lines[1:5]] == [GLASS[1], BROOK[1], RAIN[1], BERKE[1]]


def test_same_country_of_the_directors():
    assert lead("Are the directors of films Harbour of Glass and Oak Hill both from the same country?") == "Yes"
    assert lead("Do director of film Rain and Salt and director of film Oak Hill have the same nationality?") == "No"
    assert lead("Do both films The Stone Orchard and Rain and Salt have the directors from the same country?") == "No"


def test_no_verdict_when_a_side_is_unsure():
    assert lead("Which film has the director born first, Harbour of Glass or Oak Hill?") == "Oak Hill"  # 1930, 1931
    twin = [("9", "Moss Lane is a 1970 Danish film directed by Tove Lund."), ("10", "Tove Lund (born 1931) is a Danish director.")]
    assert lead("Which film has the director born first, Harbour of Glass or Moss Lane?", PASSAGES + twin) is None  # one year
    without = [p for p in PASSAGES if p is not BERKE]
    assert lead("Which film has the director who died first, Harbour of Glass or Rain and Salt?", without) is None
    assert lead("Which film has the director who died first, Oak Hill or Rain and Salt?") is None  # no death date
    # the films' own years are never compared as their directors' births
    assert lead("Which film has the director born first, Harbour of Glass or Unknown Film?") is None


def test_the_works_are_the_one_cut_whose_sides_open_passages():
    rain = ("11", "Rain is a 1932 American film directed by Lewis Milestone.")
    asked = "Do both films Rain and Salt and Oak Hill have the directors that share the same nationality?"
    assert pair_works(asked, PASSAGES + [rain]) == ("Rain and Salt", "Oak Hill")  # never "Rain" and "Salt and Oak Hill"
    assert pair_works("Are the directors of both films Rain and Salt and Oak Hill from the same country?",
                      PASSAGES) == ("Rain and Salt", "Oak Hill")


def test_a_works_year_picks_its_passage():
    older = ("12", "Oak Hill is a 1935 Danish film directed by Tove Lund.")
    tove = ("13", "Tove Lund (1940 – 1990) was a Danish film director.")
    assert lead("Which film has the director born first, Oak Hill (1961 film) or Harbour of Glass?",
                [older, tove] + PASSAGES) == "Oak Hill (1961 film)"  # Hedda Moe (1930), not Tove Lund
    assert lead("Which film has the director born first, Oak Hill (1935 film) or Harbour of Glass?",
                [older, tove] + PASSAGES) == "Harbour of Glass"  # Tove Lund (1940)


def test_an_art_director_directs_no_film():
    film = ("14", "Moss Lane is a 1970 Danish film. The art director Tove Lund designed its sets. It was directed by Ivo Brand.")
    people = [("15", "Tove Lund (1900 – 1950) was a Danish designer."), ("16", "Ivo Brand (1940 – 1990) was a Danish director.")]
    assert lead("Which film has the director born first, Moss Lane or Harbour of Glass?", [film] + people + PASSAGES) == "Harbour of Glass"


def test_a_songs_performer_named_after_a_demonym():
    song = ("17", "Glass Heart is a song by American singer Ada Penn, released in 1990.")
    penn = ("18", "Ada Penn (born 1960) is an American singer.")
    other = ("19", "Dark Water is a song recorded by Ola Berg in 1985.")
    berg = ("20", "Ola Berg (born 1950) is a Norwegian singer.")
    assert lead("Which song has the performer born first, Glass Heart or Dark Water?", [song, penn, other, berg]) == "Dark Water"


def test_a_title_with_or_without_its_leading_the():
    assert lead("Which film has the director who died later, Harbour of Glass or Stone Orchard?") == "Stone Orchard"
