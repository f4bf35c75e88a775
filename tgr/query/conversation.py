"""A question that follows others: the conversation it is asked in.

History is a list of role/content turns, oldest first, in the shape the OpenAI API uses
({"role": "user" | "assistant", "content": text}). It does two things to a follow-up:
- the chat model reads the latest turns that fit a token budget, oldest dropped first
  (recent_turns), as the messages before the question;
- retrieval resolves the follow-up against the last turn: a follow-up that names no entity
  of the store ("What is his family like?") is searched together with the entities the
  last question and answer named (search_text), with or without a model.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..text import estimate_tokens

ROLES = ("user", "assistant")
TURN_OVERHEAD = 4      # tokens a chat API spends on each message besides its text
CARRIED_NAMES = 4      # most entities a follow-up carries over from the last turn
ANSWER_CHARS = 1500    # how much of the last answer is read for the entities it names


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


def search_text(question: str, history: Sequence[dict], names_in: Callable[[str], list[str]]) -> str:
    """What retrieval searches for: the question, and when it names no entity (names_in(text):
    the store's entity names a text names, in order) the entities of the last turn after it."""
    if not history or names_in(question):
        return question
    asked, answered = last_turn(history)
    carried = list(dict.fromkeys(names_in(asked) + names_in(answered[:ANSWER_CHARS])))[:CARRIED_NAMES]
    return f"{question} {' '.join(carried)}" if carried else question
