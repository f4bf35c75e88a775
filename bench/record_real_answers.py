"""Record a real model server's answers to tgr's requests, for the tests that replay them.

    python bench/record_real_answers.py --base-url http://127.0.0.1:8800/v1 [--only NAME ...]

Start the server first (../shared/real-llm/serve.sh: SmolLM2-135M on llama-cpp-python). Each
case below sends one request, built as tgr builds it (its prompts, schema and max_tokens),
streamed, and writes tests/fixtures/real_model/NAME.json (.json.gz when long): what was sent, the server's version,
and what came back (an HTTP error's status and body, or every Server-Sent Event's data, as
received). fixtures/replay_llm.py serves them back. The server answers one request at a time:
run this alone.
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tgr.build.extract import extraction_budget  # noqa: E402
from tgr.ingest.chunking import chunk_text  # noqa: E402
from tgr.models.clients import OpenAIChat  # noqa: E402
from tgr.models.output_forms import JSON_OBJECT, JSON_OBJECT_SCHEMA, JSON_SCHEMA, NONE, extraction_schema  # noqa: E402
from tgr.prompts import DEFAULT_ENTITY_TYPES, Prompts  # noqa: E402
from tgr.text import estimate_tokens  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "real_model"
SERVER = "SmolLM2-135M-Instruct (Q4_1) on llama-cpp-python 0.3.36's OpenAI-compatible server, 2 threads"


def carol_chunks(part: int = 1) -> list[str]:
    text = (ROOT / "fixtures" / "corpus_en" / f"carol_stave1_part{part}.txt").read_text(encoding="utf-8")
    return [c.text for c in chunk_text(text, "carol")]


def chunk_with(words: str) -> str:
    """The chunk of the Carol's first stave that holds these words."""
    return next(c for part in (1, 2) for c in carol_chunks(part) if words in c)


def extraction_request(chat: OpenAIChat, chunk: str, form: str, max_tokens: int | None = None) -> dict:
    """The body tgr sends to extract a chunk in this output form (none: the tag prompt)."""
    prompts, types = Prompts(), [t.strip() for t in DEFAULT_ENTITY_TYPES.split(",")]
    budget, items = extraction_budget(estimate_tokens(chunk))
    chat.output_form = form
    if form == NONE:
        prompt = prompts.extract.format(entity_types=DEFAULT_ENTITY_TYPES, text=chunk)
        return chat.request_body(prompt, max_tokens=max_tokens or budget)
    prompt = prompts.extract_json.format(entity_types=", ".join(types), text=chunk)
    return chat.request_body(prompt, max_tokens=max_tokens or budget,
                             schema={"name": "knowledge_graph", "schema": extraction_schema(types, items)})


def cases(chat: OpenAIChat) -> dict[str, tuple[str, dict]]:
    chunks = carol_chunks()
    report_context = ("-Entities-\nid,entity,description\n1,Scrooge,a squeezing, wrenching, grasping old sinner\n"
                      "2,Marley,Scrooge's partner, dead seven years\n-Relationships-\nid,source,target,description\n"
                      "1,Scrooge,Marley,were partners for many years")
    return {
        # the chunk ../shared/real-llm/extract-smollm2-135m.json saw loop for 4,096 tokens
        "extract_tags_loops": ("tgr's tag prompt (the portable form) for the chunk of Marley's ghost",
                               extraction_request(chat, chunk_with("'I don't know,' said Scrooge."), NONE,
                                                  max_tokens=500)),
        "extract_json_schema_refused": ("response_format json_schema, which this server does not take",
                                        extraction_request(chat, chunks[0], JSON_SCHEMA)),
        "extract_json_object_schema": ("the JSON prompt under the extraction schema (json_object+schema)",
                                       extraction_request(chat, chunks[0], JSON_OBJECT_SCHEMA)),
        "extract_json_truncated": ("the JSON prompt under the schema, max_tokens 40: cut",
                                   extraction_request(chat, chunks[1], JSON_OBJECT_SCHEMA, max_tokens=40)),
        "extract_json_mode_fields": ("the JSON prompt in JSON mode without a schema (json_object)",
                                     extraction_request(chat, chunks[1], JSON_OBJECT)),
        "extract_tags_prose": ("tgr's tag prompt for the second Carol chunk",
                               extraction_request(chat, chunks[1], NONE, max_tokens=300)),
        "report_refusal": ("a community report prompt",
                           chat.request_body(Prompts().community_report.format(context=report_context),
                                             max_tokens=300)),
    }


def record(url: str, body: dict) -> dict:
    """What the server answers a streamed request with this body (asked again, up to five
    times, when another client's request ends the stream early)."""
    for _ in range(5):
        try:
            answer = record_once(url, body)
        except httpx.RemoteProtocolError:
            continue
        if "status" in answer or any('"finish_reason": "' in e or '"finish_reason":"' in e for e in answer["events"]):
            return answer
    raise SystemExit("the server kept ending the stream early: is another client using it?")


def record_once(url: str, body: dict) -> dict:
    """What the server answers a streamed request with this body."""
    request = {**body, "stream": True, "stream_options": {"include_usage": True}}
    started = time.perf_counter()
    with httpx.Client(timeout=600) as http, http.stream("POST", f"{url}/chat/completions", json=request) as response:
        if response.status_code >= 400:
            return {"status": response.status_code, "body": response.read().decode("utf-8"),
                    "seconds": round(time.perf_counter() - started, 1)}
        events = [line[5:].strip() for line in response.iter_lines() if line.startswith("data:")]
    return {"events": events, "seconds": round(time.perf_counter() - started, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8800/v1")
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    chat = OpenAIChat("smollm2", args.base_url, api_key="none")
    for name, (what, body) in cases(chat).items():
        if args.only and name not in args.only:
            continue
        answer = record(args.base_url, body)
        text = json.dumps({"what": what, "recorded_from": SERVER, "request": body, **answer},
                          ensure_ascii=False, indent=1) + "\n"
        for old in (OUT / f"{name}.json", OUT / f"{name}.json.gz"):
            old.unlink(missing_ok=True)
        if len(text) > 64_000:  # a long answer (hundreds of events) is kept gzipped
            (OUT / f"{name}.json.gz").write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
        else:
            (OUT / f"{name}.json").write_text(text, encoding="utf-8")
        got = answer.get("status") or whole_text(answer["events"])[:160].replace("\n", " ")
        print(f"{name}: {answer['seconds']} s: {got}")
    return 0


def whole_text(events: list[str]) -> str:
    text = []
    for data in events:
        if data != "[DONE]":
            for choice in json.loads(data).get("choices") or []:
                text.append((choice.get("delta") or {}).get("content") or "")
    return "".join(text)


if __name__ == "__main__":
    sys.exit(main())
