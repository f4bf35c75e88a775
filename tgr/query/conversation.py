"""A question that follows others: the conversation it is asked in.

History is a list of role/content turns, oldest first, in the shape the OpenAI API uses
({"role": "user" | "assistant", "content": text}). It does two things to a follow-up:
- the chat model reads the latest turns that fit a token budget, oldest dropped first
  (recent_turns), as the messages before the question;
- a pronoun of the follow-up (he, she, it, they, his, their ..., 他, 她, 它, 他们) is read as
  the last answer's leading entity (resolved): "Who is Scrooge's nephew?" -> "Fred, Scrooge's
  nephew." makes "What does he invite Scrooge to?" "What does Fred invite Scrooge to?", which
  retrieval searches, the offline answer is written for and a chat model is asked;
- retrieval resolves the follow-up against the last turn: a follow-up that names no entity
  of the store and has no pronoun ("And the family?") is searched together with the entities
  the last question and answer named (search_text), with or without a model.
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

from ..text import estimate_tokens

ROLES = ("user", "assistant")
TURN_OVERHEAD = 4      # tokens a chat API spends on each message besides its text
CARRIED_NAMES = 4      # most entities a follow-up carries over from the last turn
ANSWER_CHARS = 1500    # how much of the last answer is read for the entities it names
# a pronoun for someone or something just named; Chinese 他/她/它 are pronouns on their own,
# not inside a word (其他, 吉他, 他人, 他乡). A possessive one is read as "Name's".
_PRONOUN = re.compile(r"\b(?:he|she|it|they|him|her|them|his|hers|its|their|theirs)\b"
                      r"|(?<![其吉])(?:他|她|它)们?(?![人乡国])", re.IGNORECASE)
_POSSESSIVE = {"his", "hers", "its", "their", "theirs"}
_PERSONAL = {"he", "she", "him", "her", "his", "hers", "他", "她", "他们", "她们"}  # a person (or untyped)
_THING = {"it", "its", "它", "它们"}                                                   # not a person
_UNTYPED = {"", "concept"}


def checked_history(history) -> list[dict]:
    """The history as a list of {"role", "content"} dicts; ValueError (one line) when it is not
    a list of user/assistant turns with text."""
    if history is None:
        return []
    if isinstance(history, (str, bytes, dict)) or not isinstance(history, Sequence):
        raise ValueError("history must be a list of {role, content} turns")
    turns = []
    for n, turn in enumerate(history, 1):
        role = turn.get("role") if isinstance(turn, dict) else None
        content = turn.get("content") if isinstance(turn, dict) else None
        if role not in ROLES or not isinstance(content, str):
            raise ValueError(f"history turn {n} must be {{\"role\": \"user\" or \"assistant\", \"content\": text}}")
        turns.append({"role": role, "content": content})
    return turns


def recent_turns(history: Sequence[dict], budget: int) -> list[dict]:
    """The latest turns whose tokens fit the budget, oldest dropped first; the kept part starts
    with a user turn (an answer without its question is dropped too)."""
    kept, used = [], 0
    for turn in reversed(history):
        cost = estimate_tokens(turn["content"]) + TURN_OVERHEAD
        if used + cost > budget:
            break
        kept.append(turn)
        used += cost
    kept.reverse()
    while kept and kept[0]["role"] != "user":
        kept.pop(0)
    return kept


def last_turn(history: Sequence[dict]) -> tuple[str, str]:
    """(question, answer) of the last exchange ("" where there is none)."""
    question = answer = ""
    for turn in reversed(history):
        if turn["role"] == "assistant" and not answer and not question:
            answer = turn["content"]
        elif turn["role"] == "user":
            question = turn["content"]
            break
    return question, answer


def leading_entity(asked: str, answered: str, names_in: Callable[[str], list[str]],
                   fits: Callable[[str], bool] = lambda name: True) -> str | None:
    """The last answer's leading entity: the first entity of the store the answer names (in
    the order it names them), preferring one that fits the pronoun (fits(name)), then one the
    question it answered did not name as an owner ("Who is Scrooge's nephew?" -> "Scrooge's
    nephew is Fred." leads with Fred; "Who was Marley?" -> "Jacob Marley was Scrooge's
    partner." with Marley, the question's own subject)."""
    answered = answered[:ANSWER_CHARS]
    lowered = answered.lower()

    def first_at(name: str) -> int:  # a name found through an alias only: after those written out
        at = lowered.find(name.lower())
        return at if at >= 0 else len(lowered)

    named = sorted(names_in(answered), key=first_at)
    owners = _owners(asked)
    ranked = sorted(named, key=lambda n: (not fits(n), _owned_by(n, owners)))  # stable: in answer order
    return ranked[0] if ranked else None


_OWNER = re.compile(r"([\w·]+)(?:'s|’s|')(?=\s)|([\u4e00-\u9fff·]{1,4})的")


def _owners(asked: str) -> list[str]:
    """The words a question names as owners: Scrooge of "Scrooge's nephew", 孙悟空 of 孙悟空的师父."""
    return [(a or b).lower() for a, b in _OWNER.findall(asked or "")]


def _owned_by(name: str, owners: list[str]) -> bool:
    name = name.lower()
    return any(owner in name or (len(name) > 1 and name in owner) for owner in owners)


def resolved(question: str, history: Sequence[dict], names_in: Callable[[str], list[str]],
             kind_of: Callable[[str], str] = lambda name: "") -> str:
    """The follow-up with its pronouns read as the last answer's leading entity ("his" as
    "Fred's"): for he/she/他/她 a person (or an untyped entity), for it/它 anything else
    (kind_of(name): an entity's type); the question as asked when it has no pronoun or the
    last answer names no entity."""
    if not history or not _PRONOUN.search(question):
        return question
    asked, answered = last_turn(history)
    chosen: dict[str, str | None] = {}

    def read(match: re.Match) -> str:
        pronoun = match.group(0).lower()
        group = "person" if pronoun in _PERSONAL else "thing" if pronoun in _THING else "any"
        if group not in chosen:
            fits = {"person": lambda n: kind_of(n) in _UNTYPED | {"person"},
                    "thing": lambda n: kind_of(n) != "person"}.get(group, lambda n: True)
            chosen[group] = leading_entity(asked, answered, names_in, fits)
        name = chosen[group]
        return match.group(0) if not name else f"{name}'s" if pronoun in _POSSESSIVE else name

    return _PRONOUN.sub(read, question)


def search_text(question: str, history: Sequence[dict], names_in: Callable[[str], list[str]],
                kind_of: Callable[[str], str] = lambda name: "") -> str:
    """What retrieval searches for: the question with its pronouns resolved, and when it names
    no entity (names_in(text): the store's entity names a text names, most specific first) the
    entities of the last turn after it."""
    if not history:
        return question
    read = resolved(question, history, names_in, kind_of)
    if read != question or names_in(question):
        return read
    asked, answered = last_turn(history)
    carried = list(dict.fromkeys(names_in(asked) + names_in(answered[:ANSWER_CHARS])))[:CARRIED_NAMES]
    return f"{question} {' '.join(carried)}" if carried else question
