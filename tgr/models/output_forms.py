"""Structured output: the ways an endpoint can hold an answer to a JSON schema, and how to ask.

A small local model asked for tags in free text often writes none and repeats itself until its
token limit; the same model held to a JSON schema (the server turns it into a grammar) stops
after the object. Endpoints spell the request differently, so a chat client tries the forms
below in order, keeps the first one its endpoint accepts (learnt from a probe, or from the
first refusal) and the store records it (meta `chat_output_form`):

- json_schema: `response_format: {"type": "json_schema", ...}`: OpenAI's structured outputs,
  vLLM's guided decoding, llama.cpp's own server, LM Studio, Ollama's /v1.
- json_object+schema: `{"type": "json_object", "schema": ...}`: llama-cpp-python's server.
- json_object: JSON mode without a schema (Zhipu's GLM, DeepSeek): the prompt carries the shape.
- ollama: Ollama's own API, `format: <schema>` (tgr.models.ollama).
- none: the endpoint takes none of these; the portable tag prompts are used.
"""
from __future__ import annotations

import re

JSON_SCHEMA = "json_schema"
JSON_OBJECT_SCHEMA = "json_object+schema"
JSON_OBJECT = "json_object"
OLLAMA = "ollama"
NONE = "none"

OPENAI_FORMS = (JSON_SCHEMA, JSON_OBJECT_SCHEMA, JSON_OBJECT, NONE)
ALL_FORMS = (*OPENAI_FORMS, OLLAMA)

# what an endpoint says when it does not take a response_format (400/422, or llama-cpp-python's
# 500 "Input should be 'text' or 'json_object'")
_REFUSAL = re.compile(r"response_format|json_schema|json_object|guided|grammar|\bschema\b", re.IGNORECASE)


def response_format(form: str, schema: dict, name: str = "answer") -> dict | None:
    """The request's `response_format` for this form and schema (None: ask in plain text)."""
    if form == JSON_SCHEMA:
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
    if form == JSON_OBJECT_SCHEMA:
        return {"type": "json_object", "schema": schema}
    if form == JSON_OBJECT:
        return {"type": "json_object"}
    return None


def refuses_form(status: int, body: str) -> bool:
    """Whether an HTTP error answer to a request with a response_format refuses that format
    (rather than failing for another reason, which is retried or reported as usual)."""
    return status in (400, 404, 415, 422, 500, 501) and bool(_REFUSAL.search(body or ""))


def next_form(form: str, forms: tuple[str, ...] = OPENAI_FORMS) -> str:
    """The form to try after this one was refused (none is the last)."""
    if form not in forms:
        return NONE
    return forms[min(forms.index(form) + 1, len(forms) - 1)]


def wants_json(form: str | None) -> bool:
    """Whether prompts in this form ask for JSON (else the portable tag prompts). None: a client
    that takes forms but has not learnt its endpoint's yet (it starts with the first)."""
    return form != NONE


def output_form(chat) -> str:
    """The chat model's output form; NONE for a model that takes no response_format (a
    ChatModel of your own, without an `output_form` attribute)."""
    return getattr(chat, "output_form", NONE) if chat is not None else NONE


# --- the schemas tgr asks for ------------------------------------------------------------

def extraction_schema(entity_types: list[str], max_items: int) -> dict:
    """Entities and relations of one chunk, bounded so that a looping model cannot write more
    than max_items of each (a grammar ends the list). Strings have no maxLength: a grammar
    spells one as that many nested optional characters, which made llama.cpp's sampler crawl;
    max_tokens and the repetition watch bound them instead."""
    entity = {"type": "object", "properties": {
        "name": {"type": "string"},
        "type": {"type": "string", **({"enum": entity_types} if entity_types else {})},
        "description": {"type": "string"}},
        "required": ["name", "type", "description"]}
    relation = {"type": "object", "properties": {
        "source": {"type": "string"},
        "predicate": {"type": "string"},
        "target": {"type": "string"},
        "description": {"type": "string"},
        "strength": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["source", "predicate", "target", "description", "strength"]}
    return {"type": "object", "properties": {
        "entities": {"type": "array", "items": entity, "maxItems": max_items},
        "relations": {"type": "array", "items": relation, "maxItems": max_items}},
        "required": ["entities", "relations"]}


def report_schema(max_findings: int = 6) -> dict:
    """A community report as COMMUNITY_REPORT describes it."""
    finding = {"type": "object", "properties": {
        "summary": {"type": "string"},
        "explanation": {"type": "string"}},
        "required": ["summary", "explanation"]}
    return {"type": "object", "properties": {
        "title": {"type": "string"},
        "summary": {"type": "string"},
        "rating": {"type": "number", "minimum": 0, "maximum": 10},
        "rating_explanation": {"type": "string"},
        "findings": {"type": "array", "items": finding, "minItems": 1, "maxItems": max_findings}},
        "required": ["title", "summary", "rating", "rating_explanation", "findings"]}
