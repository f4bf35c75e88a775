"""What indexing some documents will cost, before anything is spent.

Extraction prompts are counted exactly (the real templates on the real chunks). Reports
depend on the graph, which does not exist yet, so their number is modelled per chunk from
its size and script, fitted on the scripted model of tests/conftest.py (fixtures/fakellm.py)
at 300, 600 and 1,200-token chunks on A Christmas Carol, Moby-Dick and Xiyouji (see
bench/README.md, "Estimates"): a 1,200-token English chunk yields about one community report,
a 300-token one about a third (the same entities recur, so smaller chunks add few new
communities), and Chinese text, dense with names, about twice as many. Measured, the
modelled report count is within a factor of 1.6 of the real one at every size tried.
"""
from __future__ import annotations

from ..ingest.chunking import chunk_text
from ..store.db import Connection
from ..models.gateway import cache_key
from ..ingest.sources import Document
from ..prompts import Prompts
from ..text import estimate_tokens

REFERENCE_CHUNK = 1200             # tokens; the rates below are per chunk of this size
REPORTS_PER_CHUNK = (1.0, 1.8)     # (English, Chinese) at the reference size
REPORT_SIZE_EXPONENT = (0.85, 0.4)  # how fast that falls with smaller chunks
FIRST_REPORTS = 4                  # the first chunks' entities are all new: a few more communities
REPORT_PROMPT_TOKENS = 800         # measured 590-840 per report call
REPORT_COMPLETION_TOKENS = 260     # measured 210-260
EXTRACTION_COMPLETION = ((150, 0.8), (1100, 0.3))  # (fixed, per chunk token), English / Chinese


def cjk_share(text: str, tokens: int) -> float:
    """The fraction of a text's estimated tokens that are CJK characters."""
    if tokens <= 0:
        return 0.0
    cjk = (4 * tokens - len(text)) / 3  # estimate_tokens: one per CJK char, one per 4 others
    return min(1.0, max(0.0, cjk / tokens))


def _blend(pair: tuple[float, float], share: float) -> float:
    return pair[0] + (pair[1] - pair[0]) * share


def expected_reports(tokens: int, share: float) -> float:
    """Community reports one chunk of this many tokens (and CJK share) is expected to add."""
    if tokens <= 0:
        return 0.0
    rate = _blend(REPORTS_PER_CHUNK, share)
    return rate * (tokens / REFERENCE_CHUNK) ** _blend(REPORT_SIZE_EXPONENT, share)


def expected_extraction_completion(tokens: int, share: float) -> float:
    """Completion tokens of one extraction answer for a chunk of this size."""
    english, chinese = ((f + per * tokens) for f, per in EXTRACTION_COMPLETION)
    return english + (chinese - english) * share


def estimate_index(conn: Connection, chat, prompts: Prompts, documents: list[Document], *,
                   chunk_size: int, chunk_overlap: int, two_step: bool, gleanings: int,
                   batch: bool = False) -> dict:
    """Expected model calls and tokens of indexing documents into the store on conn; billed
    tokens count each at its price (a Batch API call: half)."""
    from .batch import BATCH_PRICE

    known = {r[0] for r in conn.execute("SELECT c.id FROM chunks c JOIN extractions x ON x.chunk_id = c.id")}
    new_chunks = cached = prompt_tokens = 0
    reports = completion = 0.0
    for doc in documents:
        for chunk in chunk_text(doc.text, doc.id, chunk_size, chunk_overlap):
            if chunk.id in known:
                continue
            template = prompts.extract_entities if two_step else prompts.extract
            prompt = template.format(entity_types=prompts.entity_types, text=chunk.text)
            if chat and conn.execute("SELECT 1 FROM llm_cache WHERE key = ?",
                                     (cache_key(chat.name, prompt, {}),)).fetchone():
                cached += 1
                continue
            new_chunks += 1
            prompt_tokens += estimate_tokens(prompt)
            share = cjk_share(chunk.text, chunk.tokens)
            reports += expected_reports(chunk.tokens, share)
            completion += expected_extraction_completion(chunk.tokens, share)
    rounds = 1 + int(two_step) + gleanings
    extraction_calls = new_chunks * rounds if chat else 0
    report_calls = int(round(reports + FIRST_REPORTS * (new_chunks > 0))) if chat else 0
    extraction_completion = int(round(completion * rounds)) if chat else 0
    tokens = ((prompt_tokens * rounds if chat else 0) + report_calls * REPORT_PROMPT_TOKENS
              + extraction_completion + report_calls * REPORT_COMPLETION_TOKENS)
    return {
        "model": chat.name if chat else "offline (no model calls)",
        "documents": len(documents),
        "new_chunks": new_chunks,
        "cached_chunks": cached,
        "extraction_calls": extraction_calls,
        "report_calls_estimate": report_calls,
        "calls": extraction_calls + report_calls,
        "prompt_tokens": (prompt_tokens * rounds if chat else 0) + report_calls * REPORT_PROMPT_TOKENS,
        "completion_tokens": extraction_completion + report_calls * REPORT_COMPLETION_TOKENS,
        "price": "Batch API, half the synchronous price" if batch else "synchronous (--batch: half)",
        "billed_tokens": int(round(tokens * (BATCH_PRICE if batch else 1.0))),
    }
