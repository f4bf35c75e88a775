"""tgr/parsing.py against hand-written good and malformed model answers."""
from __future__ import annotations

import json

import pytest

from tgr.parsing import (RawEntity, RawRelation, extraction_is_valid, parse_entities,
                         parse_json_object, parse_points, parse_relations, parse_report,
                         parse_transformation, says_none)

GOOD = """<entity><name>Ishmael</name><type>person</type><description>Ishmael signs on as a sailor.</description></entity>
<entity><name>Pequod</name><type>object</type><description>A whaling ship.</description></entity>
<entity><name>Captain Ahab</name><type>person</type><description>Ahab commands the Pequod.</description></entity>
<relation><source>Ishmael</source><predicate>signs on to</predicate><target>Pequod</target><description>Ishmael joins the crew.</description><strength>8</strength></relation>
<relation><source>Captain Ahab</source><predicate>commands</predicate><target>Pequod</target><description>Ahab is the captain.</description><strength>9</strength></relation>"""


def names(entities):
    return [e.name for e in entities]


def pairs(relations):
    return [(r.source, r.target) for r in relations]


# -- entities and relations ------------------------------------------------------------

def test_clean_answer():
    entities = parse_entities(GOOD)
    assert entities == [
        RawEntity("Ishmael", "person", "Ishmael signs on as a sailor."),
        RawEntity("Pequod", "object", "A whaling ship."),
        RawEntity("Captain Ahab", "person", "Ahab commands the Pequod."),
    ]
    relations = parse_relations(GOOD)
    assert relations == [
        RawRelation("Ishmael", "Pequod", "signs on to", "Ishmael joins the crew.", 8.0),
        RawRelation("Captain Ahab", "Pequod", "commands", "Ahab is the captain.", 9.0),
    ]


@pytest.mark.parametrize("wrap", [
    "```\n{}\n```",
    "```xml\n{}\n```",
    "Sure! Here are the entities and relationships:\n\n{}\n\nLet me know if you need more.",
    "Here you go:\n```xml\n{}\n```\nI hope this helps!",
], ids=["fence", "fence-xml", "chatter", "chatter-and-fence"])
def test_fences_and_chatter_are_ignored(wrap):
    text = wrap.format(GOOD)
    assert parse_entities(text) == parse_entities(GOOD)
    assert parse_relations(text) == parse_relations(GOOD)


def test_truncated_answer_keeps_the_complete_part_and_the_cut_block():
    cut = GOOD + "\n<entity><name>Moby Dick</name><type>animal</type><description>A white wha"
    entities = parse_entities(cut)
    assert names(entities) == ["Ishmael", "Pequod", "Captain Ahab", "Moby Dick"]
    assert entities[-1].description == "A white wha"
    assert entities[-1].type == "animal"
    assert len(parse_relations(cut)) == 2


def test_missing_closing_tags_between_blocks():
    text = ("<entity><name>Scrooge<type>person<description>A miser.\n"
            "<entity><name>Marley</name><type>person</type><description>His dead partner.\n"
            "<relation><source>Scrooge</source><target>Marley</target><predicate>partner of"
            "<description>They were partners.")
    entities = parse_entities(text)
    assert names(entities) == ["Scrooge", "Marley"]
    assert entities[1].description == "His dead partner."
    relations = parse_relations(text)
    assert pairs(relations) == [("Scrooge", "Marley")]
    assert relations[0].predicate == "partner of"


def test_extra_unknown_tags_are_ignored():
    text = ("<thinking>The text is about whales.</thinking>\n"
            "<entity><name>Pequod</name><confidence>0.9</confidence><type>object</type>"
            "<description>A ship.</description><source_id>3</source_id></entity>\n"
            "<note>done</note>")
    assert parse_entities(text) == [RawEntity("Pequod", "object", "A ship.")]
    assert parse_relations(text) == []


def test_uppercase_and_mixed_case_tags():
    text = ("<ENTITY><NAME>Scrooge</NAME><TYPE>PERSON</TYPE><DESCRIPTION>A miser.</DESCRIPTION></ENTITY>"
            "<Entity><Name>Marley</Name><Type>Person</Type><Description>Dead.</Description></Entity>"
            "<RELATION><SOURCE>Scrooge</SOURCE><PREDICATE>mourns</PREDICATE><TARGET>Marley</TARGET>"
            "<DESCRIPTION>Scrooge was his mourner.</DESCRIPTION><STRENGTH>6</STRENGTH></RELATION>")
    assert parse_entities(text) == [RawEntity("Scrooge", "person", "A miser."),
                                    RawEntity("Marley", "person", "Dead.")]
    assert parse_relations(text) == [RawRelation("Scrooge", "Marley", "mourns", "Scrooge was his mourner.", 6.0)]


def test_seed_concept_and_triplet_formats():
    text = ("<concept><name>孙悟空</name><type>人物</type><desc>一只石猴。</desc></concept>\n"
            "<concept><name>花果山</name><description>一座仙山。</description></concept>\n"
            "<triplet><subject>孙悟空</subject><predicate>住在</predicate><object>花果山</object>"
            "<description>孙悟空住在花果山。</description></triplet>\n"
            "<triplet><subject>孙悟空</subject><predicate>拜师</predicate><object>菩提祖师</object></triplet>")
    entities = parse_entities(text)
    assert entities == [RawEntity("孙悟空", "人物", "一只石猴。"), RawEntity("花果山", "concept", "一座仙山。")]
    relations = parse_relations(text)
    assert pairs(relations) == [("孙悟空", "花果山"), ("孙悟空", "菩提祖师")]
    assert relations[0].description == "孙悟空住在花果山。"
    assert relations[1].description == "拜师"  # no description: the predicate stands in
    assert all(r.strength == 1.0 for r in relations)


def test_relation_naming_an_unextracted_entity_is_kept():
    text = GOOD + ("<relation><source>Captain Ahab</source><predicate>hunts</predicate>"
                   "<target>Moby Dick</target><description>Ahab hunts the whale.</description></relation>")
    assert "Moby Dick" not in names(parse_entities(text))
    assert ("Captain Ahab", "Moby Dick") in pairs(parse_relations(text))


def test_self_relations_and_incomplete_relations_are_dropped():
    text = ("<relation><source>Scrooge</source><target>Scrooge</target><predicate>talks to</predicate></relation>"
            "<relation><source> Scrooge </source><target>Scrooge</target></relation>"
            "<relation><source>Scrooge</source><predicate>alone</predicate></relation>"
            "<relation><target>Marley</target></relation>"
            "<relation><source></source><target>Marley</target></relation>"
            "<relation><source>Scrooge</source><target>Marley</target></relation>")
    relations = parse_relations(text)
    assert pairs(relations) == [("Scrooge", "Marley")]
    assert relations[0].predicate == "related to"
    assert relations[0].description == "related to"


@pytest.mark.parametrize("strength, expected", [
    ("8", 8.0), ("8/10", 8.0), ("7.5", 7.5), (" 9 ", 9.0), ("strength: 6", 6.0),
    ("15", 10.0), ("-3", 0.0), ("high", 1.0), ("", 1.0), (None, 1.0),
])
def test_relation_strength(strength, expected):
    tag = "" if strength is None else f"<strength>{strength}</strength>"
    text = f"<relation><source>A</source><target>B</target>{tag}</relation>"
    (relation,) = parse_relations(text)
    assert relation.strength == expected


def test_entity_fields_are_cleaned():
    text = ('<entity><name>  "Jacob\n   Marley" </name><type>PERSON</type>'
            '<description>  Scrooge\'s   late\n partner.  </description></entity>'
            "<entity><name></name><type>person</type><description>nameless</description></entity>"
            f"<entity><name>{'x' * 201}</name></entity>"
            "<entity><name>Fred</name></entity>")
    entities = parse_entities(text)
    assert entities == [RawEntity("Jacob Marley", "person", "Scrooge's late partner."),
                        RawEntity("Fred", "concept", "")]


def test_garbage_gives_nothing():
    for text in ["", None, "Sorry, I cannot help with that.", "<entity></entity>", "{\"name\": \"x\"}"]:
        assert parse_entities(text) == []
        assert parse_relations(text) == []


# -- says_none / extraction_is_valid ----------------------------------------------------

@pytest.mark.parametrize("text", [
    "<none/>", "<none />", "<NONE/>", "<none>", "```\n<none/>\n```", "There is nothing here: <none/>",
    "None", "none.", "  NONE  ", "无", "没有", "N/A",
])
def test_says_none(text):
    assert says_none(text)
    assert extraction_is_valid(text)


@pytest.mark.parametrize("text", ["", "nothing", "No entities found", "none of them", GOOD,
                                  "Sorry, I cannot help with that."])
def test_does_not_say_none(text):
    assert not says_none(text)


def test_extraction_is_valid():
    assert extraction_is_valid(GOOD)
    assert extraction_is_valid("<entity><name>Scrooge</name></entity>")
    assert extraction_is_valid("<triplet><subject>A</subject><object>B</object></triplet>")
    assert not extraction_is_valid("")
    assert not extraction_is_valid("Sorry, I cannot help with that.")
    assert not extraction_is_valid("<entity><name></name></entity>")
    assert not extraction_is_valid("<relation><source>A</source><target>A</target></relation>")


# -- JSON objects and reports ----------------------------------------------------------

REPORT = {
    "title": "Scrooge and Marley",
    "summary": "Two partners in a counting-house.",
    "rating": 6.5,
    "rating_explanation": "Central to the story.",
    "findings": [{"summary": "Scrooge", "explanation": "A miser."},
                 {"summary": "Marley", "explanation": "Dead for seven years."}],
}
REPORT_JSON = json.dumps(REPORT)


def test_parse_json_object_plain_and_fenced():
    assert parse_json_object(REPORT_JSON) == REPORT
    assert parse_json_object(f"```json\n{REPORT_JSON}\n```") == REPORT
    assert parse_json_object(f"Here is the report:\n```\n{REPORT_JSON}\n```\nThanks!") == REPORT


def test_parse_json_object_repairs():
    assert parse_json_object('{"a": [1, 2,], "b": {"c": 3,},}') == {"a": [1, 2], "b": {"c": 3}}
    assert parse_json_object("{'a': 'x', 'b': None, 'c': True, 'd': False}") == \
        {"a": "x", "b": None, "c": True, "d": False}
    assert parse_json_object('{"a": None, "b": True,}') == {"a": None, "b": True}
    assert parse_json_object('{“a”: “x”}') == {"a": "x"}


def test_parse_json_object_truncated():
    assert parse_json_object('{"a": "cut mid-str') == {"a": "cut mid-str"}
    assert parse_json_object('{"a": [1, 2, ') == {"a": [1, 2]}
    assert parse_json_object('{"a": [{"b": "x"}, {"b": "y') == {"a": [{"b": "x"}, {"b": "y"}]}
    assert parse_json_object('{"a": "with \\"escaped\\" quo') == {"a": 'with "escaped" quo'}


@pytest.mark.parametrize("text", ["", None, "no json here", "[1, 2, 3]", "{not: valid: at all"])
def test_parse_json_object_hopeless(text):
    assert parse_json_object(text) is None


def test_parse_report_good_and_fenced():
    for text in (REPORT_JSON, f"```json\n{REPORT_JSON}\n```", f"Sure:\n{REPORT_JSON}\nDone."):
        assert parse_report(text) == REPORT


def test_parse_report_repairs_trailing_commas_and_python_literals():
    text = ("{'title': 'T', 'summary': 'S', 'rating': 8, 'rating_explanation': None, "
            "'findings': [{'summary': 'a', 'explanation': 'b'},],}")
    report = parse_report(text)
    assert report == {"title": "T", "summary": "S", "rating": 8.0, "rating_explanation": "",
                      "findings": [{"summary": "a", "explanation": "b"}]}


def test_parse_report_truncated_mid_string():
    cut = REPORT_JSON[:REPORT_JSON.index("Dead for") + 4]
    report = parse_report(cut)
    assert report["title"] == REPORT["title"] and report["rating"] == 6.5
    assert report["findings"] == [{"summary": "Scrooge", "explanation": "A miser."},
                                  {"summary": "Marley", "explanation": "Dead"}]


def test_parse_report_truncated_mid_list():
    cut = REPORT_JSON[:REPORT_JSON.index('{"summary": "Marley"')]
    report = parse_report(cut)
    assert report["findings"] == [{"summary": "Scrooge", "explanation": "A miser."}]
    assert report["rating_explanation"] == "Central to the story."


def test_parse_report_truncated_anywhere_after_the_summary_keeps_title_and_summary():
    # a token limit can cut the answer at any character; once title and summary are
    # complete, the report is usable wherever the cut falls (in a key, after a colon...)
    start = REPORT_JSON.index(REPORT["summary"]) + len(REPORT["summary"]) + 1
    lost = [REPORT_JSON[:cut][-30:] for cut in range(start, len(REPORT_JSON))
            if (parse_report(REPORT_JSON[:cut]) or {}).get("summary") != REPORT["summary"]]
    assert not lost, f"{len(lost)} cut points lose the report, e.g. {lost[:4]}"


@pytest.mark.parametrize("rating, expected", [
    (7, 7.0), (7.5, 7.5), ("7.5", 7.5), ("7/10", 7.0), ("8 out of 10", 8.0),
    (42, 10.0), (-3, 0.0), ("12", 10.0), ("high", 0.0), (None, 0.0),
])
def test_parse_report_rating(rating, expected):
    report = parse_report(json.dumps({"title": "T", "summary": "S", "rating": rating}))
    assert report["rating"] == expected
    assert isinstance(report["rating"], float)


def test_parse_report_missing_rating_is_zero():
    assert parse_report('{"title": "T", "summary": "S"}')["rating"] == 0.0


def test_parse_report_findings_as_strings_and_partial_dicts():
    report = parse_report(json.dumps({
        "title": "T", "summary": "S", "rating": 5,
        "findings": ["Scrooge is a miser.", {"summary": "Only a head"}, {"explanation": "Only a body"},
                     "", {}, "  spaced   out  "]}))
    assert report["findings"] == [
        {"summary": "Scrooge is a miser.", "explanation": ""},
        {"summary": "Only a head", "explanation": ""},
        {"summary": "", "explanation": "Only a body"},
        {"summary": "spaced out", "explanation": ""},
    ]


def test_parse_report_findings_as_one_string():
    report = parse_report(json.dumps({"title": "T", "summary": "S", "rating": 5,
                                      "findings": "Scrooge is a miser."}))
    assert report is not None
    # one finding (or none), never one per character
    assert report["findings"] in ([], [{"summary": "Scrooge is a miser.", "explanation": ""}])


def test_parse_report_with_braces_in_chatter_after_the_json():
    text = REPORT_JSON + "\n\nNote: I filled in the {findings} from the data."
    assert parse_report(text) == REPORT


@pytest.mark.parametrize("text", [
    '{{"title": "T", "summary": "S", "rating": 5}}',   # braces doubled as in a str.format template
    '{"title": "T", "summary": "S", "findings": {[]}}',
    "{{{",
    "{[1, 2]}",
])
def test_parse_report_never_raises_on_set_like_python_literals(text):
    # ast.literal_eval turns these into sets of unhashable items (TypeError); a parser of
    # model output must answer None (or a report) instead of raising, or the report
    # stage crashes (the gateway calls parse_report as the answer validator)
    result = parse_report(text)
    assert result is None or result["title"] == "T"
    assert parse_json_object(text) is None or isinstance(parse_json_object(text), dict)


@pytest.mark.parametrize("data", [
    {"summary": "S", "rating": 3},
    {"title": "", "summary": "S"},
    {"title": "   ", "summary": "S"},
    {"title": None, "summary": "S"},
    {"title": "T", "rating": 3},
    {"title": "T", "summary": ""},
])
def test_parse_report_without_title_or_summary_is_none(data):
    assert parse_report(json.dumps(data)) is None


def test_parse_report_cleans_text_fields():
    report = parse_report(json.dumps({"title": '  "Quoted  title" ', "summary": "Line one.\n\n  Line   two.",
                                      "rating_explanation": " Big\n  impact. "}))
    assert report["title"] == "Quoted title"
    assert report["summary"] == "Line one. Line two."
    assert report["rating_explanation"] == "Big impact."


@pytest.mark.parametrize("text", ["", "{", "The community is about Scrooge.", '{"title": "broken', "[]"])
def test_parse_report_garbage_is_none(text):
    assert parse_report(text) is None


# -- scored points ---------------------------------------------------------------------

def test_parse_points_scores():
    text = """```
<point><description>Scrooge is a miser [Reports: 1]</description><score>85</score></point>
<point><description>B</description><score>85/100</score></point>
<point><description>C</description><score>score: 85</score></point>
<point><description>D</description><score>150</score></point>
<point><description>E</description><score>-5</score></point>
<point><description>F</description></point>
<point><score>90</score></point>
<POINT><DESCRIPTION>G</DESCRIPTION><SCORE>42.6</SCORE></POINT>
<point><description>I don't know.</description><score>0</score></point>
```"""
    assert parse_points(text) == [
        ("Scrooge is a miser [Reports: 1]", 85), ("B", 85), ("C", 85), ("D", 100), ("E", 0),
        ("G", 43), ("I don't know.", 0)]


def test_parse_points_truncated_and_garbage():
    text = ("<point><description>First</description><score>70</score></point>\n"
            "<point><description>Second</description><score>6")
    assert parse_points(text) == [("First", 70), ("Second", 6)]
    assert parse_points("") == []
    assert parse_points("The answer is Scrooge.") == []


# -- disambiguation transformations ----------------------------------------------------

@pytest.mark.parametrize("text", [
    None, "", "garbage", "None", "none", "<transformation>None</transformation>",
    "<transformation> none </transformation>", "<transformation>{broken", "<transformation></transformation>",
    "<transformation>[1, 2]</transformation>",
], ids=repr)
def test_parse_transformation_nothing(text):
    assert parse_transformation(text) == {}


def test_parse_transformation_mappings():
    assert parse_transformation('<transformation>{"m2": "m1", "m3": "m1"}</transformation>') == \
        {"m2": "m1", "m3": "m1"}
    assert parse_transformation('```\n<transformation>{"m2": "m1",}</transformation>\n```') == {"m2": "m1"}
    assert parse_transformation('Answer: <transformation>{ " m2 " : " m1 " }</transformation> ok') == \
        {"m2": "m1"}
    assert parse_transformation('<transform>{"m3": "m2"}</transform>') == {"m3": "m2"}
    assert parse_transformation('{"m2": "m1"}') == {"m2": "m1"}
    assert parse_transformation("<TRANSFORMATION>{'m2': 'm1'}</TRANSFORMATION>") == {"m2": "m1"}


def test_parse_transformation_int_values_and_bad_values():
    assert parse_transformation('<transformation>{"2": 1, "m3": "m1"}</transformation>') == \
        {"2": "1", "m3": "m1"}
    assert parse_transformation('<transformation>{"m2": ["m1"], "m3": null, "m4": "m1"}</transformation>') == \
        {"m4": "m1"}
