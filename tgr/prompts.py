"""Every prompt tgr sends, as str.format templates in one place.

The shapes follow the TinyGraphRAG seed (XML-tagged entity/triplet extraction, same-name
disambiguation, scored map points) and Microsoft GraphRAG (JSON community reports,
map-reduce global search), written anew and kept short: prompt characters are cost.
To adapt tgr to a domain, pass a Prompts object with your own templates; the
placeholders of each template must stay the same.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

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
