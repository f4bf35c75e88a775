"""A "which country" question answered by a demonym leads with the country (tgr.offline.asked_country)."""
from __future__ import annotations

from tgr.offline.asked_country import country_lead
from tgr.offline.demonyms import country_of
from tgr.offline.providers import ExtractiveAnswerer


def test_the_country_of_a_demonym():
    assert country_of("German") == "Germany" and country_of("Italian") == "Italy"
    assert country_of("Nigerian") == "Nigeria"  # Nigeria + n, not Niger + ian
    assert country_of("Sri Lankan") == "Sri Lanka" and country_of("Dutch") == "Netherlands"
    assert country_of("Jewish") is None and country_of("Hindi") is None


def test_a_country_asked_is_led_by_the_demonym_of_what_the_answer_names():
    passages = [("1", "Vortex Drop is a steel roller coaster at Parc Nord. It was built by Stahlwerk Ride Systems."),
                ("2", "Stahlwerk Ride Systems is a German company that designs amusement rides.")]
    lines = ExtractiveAnswerer().answer("In what country was Vortex Drop built?", passages).split("\n")
    assert lines[0] == "Germany."


def test_no_lead_unless_the_demonym_says_where_the_named_thing_is_from():
    asked = "Which country was the novel Strandmoor set in?"
    assert country_lead(asked, ["Strandmoor is a novel by English writer Ada Penn."]) is None  # of the writer
    assert country_lead(asked, ["Ola Berg is a Norwegian actor."]) is None  # not what the question names
    assert country_lead(asked, ["Strandmoor is a French novel set in France."]) is None  # a country named
    assert country_lead("Which country is the American actor Ola Berg from?", ["Ola Berg is an American actor."]) is None
    assert country_lead("Are A and B in the same country?", ["A is a German town."]) is None
    assert country_lead(asked, ["Strandmoor is a Welsh novel."]) == "Wales"


def test_the_country_of_a_roles_bearer():
    passages = [("1", "Harbour of Glass is a 1961 Franco-Danish drama film directed by Ansel Brook."),
                ("2", "In 1950 Brook moved to France to work as an editor."),
                ("3", "Ansel Brook (1931 – 1999) was a Norwegian film director and producer.")]
    lines = ExtractiveAnswerer().answer("Which country is the director of film Harbour of Glass from?", passages)
    assert lines.split("\n")[0] == "Norway."
