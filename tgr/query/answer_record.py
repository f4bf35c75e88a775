"""The structured result of every query: the Answer record (re-exported by tgr.query.modes)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass
class Answer:
    question: str
    mode: str
    answer: str
    context: str
    model: str
    sources: list[dict] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    timings: dict = field(default_factory=dict)
    # what was left out (models out of reach) or done instead (a model's unusable answer, Searcher.note)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)
