"""Every prompt tgr sends, as str.format templates in one place.

The shapes follow the TinyGraphRAG seed (XML-tagged entity/triplet extraction, same-name
disambiguation, scored map points) and Microsoft GraphRAG (JSON community reports,
map-reduce global search), written anew and kept short: prompt characters are cost.
To adapt tgr to a domain, pass a Prompts object with your own templates; the
placeholders of each template must stay the same.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path

DEFAULT_ENTITY_TYPES = "person, organization, location, event, object, concept"

EXTRACT = """-Goal-
Build a knowledge graph from the text below.
1. List the entities the text says something about (types: {entity_types}):
<entity><name>NAME</name><type>TYPE</type><description>what the text says about it, one or two sentences</description></entity>
2. List the relationships between those entities that the text states or clearly implies:
<relation><source>NAME</source><predicate>short verb phrase</predicate><target>NAME</target><description>how they are related, from the text</description><strength>1-10</strength></relation>
Use the names from step 1 exactly. Write in the language of the text. Output only tags; if there is no entity, output <none/>.
-Example-
Text: Ishmael signed on to the Pequod, a whaler commanded by Captain Ahab.
Output:
<entity><name>Ishmael</name><type>person</type><description>Ishmael signs on as a sailor aboard the Pequod.</description></entity>
<entity><name>Pequod</name><type>object</type><description>The Pequod is a whaling ship commanded by Captain Ahab.</description></entity>
<entity><name>Captain Ahab</name><type>person</type><description>Captain Ahab commands the whaler Pequod.</description></entity>
<relation><source>Ishmael</source><predicate>signs on to</predicate><target>Pequod</target><description>Ishmael joins the crew of the Pequod.</description><strength>8</strength></relation>
<relation><source>Captain Ahab</source><predicate>commands</predicate><target>Pequod</target><description>Ahab is the captain of the Pequod.</description><strength>9</strength></relation>
-Text-
{text}
-Output-
"""

# The same task for an endpoint that holds its answer to a JSON schema (tgr.models.output_forms):
# the text comes first and the task after it, where a small model still reads it.
EXTRACT_JSON = """-Goal-
Build a knowledge graph from the text below.
-Text-
{text}
-Goal-
Return one JSON object with two lists about the text above.
"entities": the people, places, organizations, events and things the text says something about, each {{"name": the name exactly as the text writes it, "type": one of {entity_types}, "description": what the text says about it, one sentence}}.
"relations": how those entities are related in the text, each {{"source": a name from entities, "predicate": a short verb phrase, "target": a name from entities, "description": one sentence from the text's facts, "strength": 1 to 10}}.
Use only names written in the text. Write in the language of the text. If it names nothing, return {{"entities": [], "relations": []}}.
-Output-
"""

EXTRACT_ENTITIES = """-Goal-
List the entities (types: {entity_types}) that the text below says something about.
For each one output:
<entity><name>NAME</name><type>TYPE</type><description>what the text says about it, one or two sentences</description></entity>
Write in the language of the text. Output only tags; if there is no entity, output <none/>.
-Text-
{text}
-Output-
"""

EXTRACT_TRIPLETS = """-Goal-
Find the relationships between the given entities that the text states or clearly implies.
For each one output:
<triplet><subject>ENTITY</subject><predicate>short verb phrase</predicate><object>ENTITY</object><description>how they are related, from the text</description></triplet>
Subject and object must be names from the given entities, copied exactly. Output only tags; if there is no relationship, output <none/>.
-Given entities-
{entities}
-Text-
{text}
-Output-
"""

GLEAN = """-Goal-
An earlier answer (below) extracted entities and relationships from the text but missed some.
Output ONLY the missing ones, in the same tag format. If nothing is missing, output <none/>.
-Text-
{text}
-Earlier answer-
{previous}
-Output-
"""

SUMMARIZE_DESCRIPTIONS = """-Goal-
Write one description of the entity "{name}" ({type}) that combines all the descriptions
below and resolves contradictions. At most {max_words} words, in the language of the
descriptions, third person. Output only the description.
-Descriptions-
{descriptions}
-Output-
"""

DISAMBIGUATE = """-Goal-
The entries below were extracted from different passages and share the name "{name}".
Decide which entries refer to the same real-world thing. Answer with a JSON object inside
<transformation> tags that maps an entry id to the id of an entry it is the same as, for
example <transformation>{{"m2": "m1", "m3": "m1"}}</transformation>. Entries that are not
mapped stay separate. If no entries can be merged, answer <transformation>None</transformation>.
-Entries-
{entries}
-Output-
"""

COMMUNITY_REPORT = """-Goal-
Write a report about a community of entities in a knowledge graph, for an analyst who
has not read the source documents. Use only the data below; do not invent facts.
Return one JSON object and nothing else:
{{"title": "short, specific title naming the key entities",
 "summary": "executive summary of the community: who or what is in it and how they relate",
 "rating": impact rating from 0 to 10 (a number),
 "rating_explanation": "one sentence explaining the rating",
 "findings": [{{"summary": "one-line insight", "explanation": "a paragraph grounded in the data"}}]}}
Give 3 to 6 findings. Write in the language of the data.
-Data-
{context}
-Output-
"""

MAP_POINTS = """-Goal-
Using only the community reports below, list the key points that help answer the question.
For each point output:
<point><description>the point, citing reports as [Reports: id, id]</description><score>0-100</score></point>
The score is how important the point is for answering the question. If the reports do not
help, output <point><description>I don't know.</description><score>0</score></point>.
-Question-
{question}
-Reports-
{context}
-Output-
"""

REDUCE_ANSWER = """-Goal-
Answer the question using the analysts' key points below, most important first. Merge
duplicates, keep the [Reports: ...] citations of the points you use, and do not add facts
that are not in the points. If the points do not answer the question, say you don't know.
Answer as: {response_type}.
-Question-
{question}
-Key points-
{context}
-Answer-
"""

ANSWER = """-Goal-
Answer the question using only the data tables below. Cite the rows you use, e.g.
[Sources: 3, 7] or [Entities: 2] or [Reports: 1]. If the tables do not contain the answer,
say you don't know. Answer as: {response_type}.
-Question-
{question}
-Data tables-
{context}
-Answer-
"""


@dataclass(frozen=True)
class Prompts:
    """The template set used by a store; override fields to customise a domain."""

    extract: str = EXTRACT
    extract_json: str = EXTRACT_JSON
    extract_entities: str = EXTRACT_ENTITIES
    extract_triplets: str = EXTRACT_TRIPLETS
    glean: str = GLEAN
    summarize_descriptions: str = SUMMARIZE_DESCRIPTIONS
    disambiguate: str = DISAMBIGUATE
    community_report: str = COMMUNITY_REPORT
    map_points: str = MAP_POINTS
    reduce_answer: str = REDUCE_ANSWER
    answer: str = ANSWER
    entity_types: str = DEFAULT_ENTITY_TYPES

    def names(self) -> list[str]:
        return [f.name for f in fields(self)]

    def overrides(self) -> dict[str, str]:
        """The templates that differ from tgr's defaults (entity types are a setting of their own)."""
        default = Prompts()
        return {name: getattr(self, name) for name in TEMPLATES if getattr(self, name) != getattr(default, name)}

    def with_overrides(self, templates: dict[str, str]) -> "Prompts":
        """A copy with these templates replaced (checked first)."""
        return replace(self, **check_templates(templates)) if templates else self


TEMPLATES = [f.name for f in fields(Prompts) if f.name != "entity_types"]
OPTIONAL_PLACEHOLDERS = {"entity_types"}  # a domain prompt may list its types in the text


def _placeholders(template: str) -> set[str]:
    import string  # only custom prompts are checked: a question with the defaults never loads it

    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def check_templates(templates: dict) -> dict[str, str]:
    """The templates, if each names a Prompts template and keeps its placeholders; else ValueError."""
    default = Prompts()
    for name, template in templates.items():
        if name not in TEMPLATES:
            raise ValueError(f"unknown prompt {name!r}; the prompts are {', '.join(TEMPLATES)} (and entity_types)")
        if not isinstance(template, str):
            raise ValueError(f"prompt {name!r} must be text")
        try:
            found = _placeholders(template)
        except ValueError as exc:
            raise ValueError(f"prompt {name!r}: {exc} (write literal braces as {{{{ and }}}})") from None
        wanted = _placeholders(getattr(default, name))
        unknown, missing = found - wanted, wanted - found - OPTIONAL_PLACEHOLDERS
        if unknown or missing:
            show = lambda names: ", ".join("{" + n + "}" for n in sorted(names))
            problem = f"has no {show(missing)}" if missing else f"has unknown {show(unknown)}"
            raise ValueError(f"prompt {name!r} {problem}; its placeholders are {show(wanted)} "
                             f"(write literal braces as {{{{ and }}}})")
    return dict(templates)


def load_prompts_file(path: str | Path) -> dict:
    """Prompt templates (and optionally entity_types) from a JSON or TOML file, checked."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read prompts ({exc})") from None
    try:
        if path.suffix.lower() == ".toml":
            import tomllib

            data = tomllib.loads(raw)
        else:
            data = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError and TOMLDecodeError both are
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        raise ValueError(f"{path}: not valid {kind}: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a table of prompt names to templates")
    types = data.pop("entity_types", None)
    if types is not None and not isinstance(types, str):
        raise ValueError(f"{path}: entity_types must be text, e.g. \"person, organization\"")
    try:
        templates = check_templates(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return {**templates, **({"entity_types": types} if types is not None else {})}
