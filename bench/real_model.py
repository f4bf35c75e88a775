"""A real (small, local) LLM builds and asks the demo corpus: what it costs and what it keeps.

    python bench/real_model.py                      # starts ../shared/real-llm/serve.sh (SmolLM2-135M)
    python bench/real_model.py --base-url http://127.0.0.1:8800/v1 --chat-model openai:smollm2
    python bench/real_model.py --corpus fixtures/corpus_en --question "Who is Jacob Marley?"
    python bench/real_model.py --base-url http://127.0.0.1:8800/v1 --forms   # JSON under a schema vs tags

Indexes the corpus into a new store in a temporary folder with the chat model (embeddings:
tgr:hash-384, so that only the chat model is measured), then asks one local and one global
question through the same model, each in a new `tgr` process as a user would. Prints wall
time, model calls, tokens, retries, answers cut (looping or at max_tokens), chunks extracted
by the model and by the offline fallback, reports by generator, generated tokens per second,
and both answers. CI never runs it (tests replay recorded answers of the same server).

--forms instead asks the model to extract each chunk of the corpus twice, with the tag prompt
and with the JSON prompt under the extraction schema (json_object+schema, as llama-cpp-python
takes it), and prints per form: seconds, tokens, answers cut or looping, chunks with entities
the text names, and those entities.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVE = ROOT.parent / "shared" / "real-llm" / "serve.sh"


def wait_for(url: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                return response.status == 200
        except OSError:
            time.sleep(1)
    return False


def tgr(*args: str, env: dict) -> tuple[int, str, str, float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tgr", *args], capture_output=True, text=True, env=env)
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: start serve.sh)")
    parser.add_argument("--chat-model", default="openai:smollm2")
    parser.add_argument("--corpus", default=str(ROOT / "fixtures" / "corpus_en"))
    parser.add_argument("--question", default="Who is Jacob Marley?")
    parser.add_argument("--global-question", default="What are the main themes of the story?")
    parser.add_argument("--port", type=int, default=8800)
    parser.add_argument("--keep", help="copy the built store here")
    parser.add_argument("--extra", nargs="*", default=[], help="more `tgr index` options")
    parser.add_argument("--forms", action="store_true", help="compare the tag and JSON extraction forms")
    args = parser.parse_args()

    server = None
    url = args.base_url
    if url is None:
        url = f"http://127.0.0.1:{args.port}/v1"
        if not wait_for(url, 1):
            server = subprocess.Popen(["bash", str(SERVE), str(args.port)], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        if not wait_for(url, 600):
            print(f"no server at {url}", file=sys.stderr)
            return 1
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        if args.forms:
            return compare_forms(url, args.chat_model.split(":", 1)[-1], Path(args.corpus))
        with tempfile.TemporaryDirectory() as tmp:
            store = str(Path(tmp) / "demo.db")
            code, out, err, wall = tgr("index", store, args.corpus, "--base-url", url, "--chat-model", args.chat_model,
                                       "--embed-model", "tgr:hash-384", "--json", "-q", *args.extra, env=env)
            if code != 0:
                print(err, file=sys.stderr)
                return code
            summary = json.loads(out)
            _, info_out, _, _ = tgr("info", store, "--json", env=env)
            info = json.loads(info_out)
            _, stats_out, _, _ = tgr("stats", store, "--json", env=env)
            model_seconds = sum(row["model_seconds"] or 0 for row in json.loads(stats_out)["by_stage"]
                                if row["kind"] == "chat")
            print(f"index: wall {wall:.0f} s, {summary['model_calls']} calls "
                  f"({', '.join(f'{k} {v}' for k, v in summary['calls_by_stage'].items())}), "
                  f"{summary['prompt_tokens']} prompt + {summary['completion_tokens']} completion tokens, "
                  f"{summary['retries']} retries, {summary['answers_cut']} answers stopped (looping or at "
                  f"max_tokens), {summary['completion_tokens'] / wall:.1f} generated tokens/s of wall "
                  f"({model_seconds:.0f} s in chat calls, counted from each call's start: calls wait their turn)")
            print(f"chunks: {info['extracted_by']}")
            print(f"entities {info['entities']}, relationships {info['relationships']}, "
                  f"reports by generator: {info['reports_by']}, output form: {info['chat_output_form']}")
            for warning in summary.get("warnings", []):
                print(f"warning: {warning}")
            for mode, question in (("local", args.question), ("global", args.global_question)):
                code, out, err, wall = tgr("ask", store, question, "--mode", mode, "--base-url", url, env=env)
                print(f"\n--- ask --mode {mode} {question!r}: exit {code}, {wall:.0f} s")
                print(out.strip())
                if err.strip():
                    print(f"(stderr) {err.strip()}")
            if args.keep:
                shutil.copy(store, args.keep)
    finally:
        if server is not None:
            server.terminate()
    return 0


def compare_forms(url: str, model: str, corpus: Path) -> int:
    """Each chunk extracted with the tag prompt and with JSON under the schema: what each keeps."""
    sys.path.insert(0, str(ROOT))
    from tgr.build.extract import extraction_budget
    from tgr.ingest.chunking import chunk_text
    from tgr.models.clients import OpenAIChat
    from tgr.models.output_forms import JSON_OBJECT_SCHEMA, NONE, extraction_schema
    from tgr.offline.entity_types import common_words
    from tgr.parsing import grounded, parse_extraction
    from tgr.prompts import DEFAULT_ENTITY_TYPES, Prompts
    from tgr.text import estimate_tokens

    chunks = [c.text for path in sorted(corpus.glob("*.txt"))
              for c in chunk_text(path.read_text(encoding="utf-8"), path.stem)]
    types = [t.strip() for t in DEFAULT_ENTITY_TYPES.split(",")]
    chat = OpenAIChat(model, url, api_key="none", timeout=300)
    for form in (JSON_OBJECT_SCHEMA, NONE):
        chat.output_form = form
        started, tokens, cut, with_entities, names = time.perf_counter(), 0, 0, 0, []
        for text in chunks:
            budget, items = extraction_budget(estimate_tokens(text))
            if form == NONE:
                answer = chat.complete(Prompts().extract.format(entity_types=DEFAULT_ENTITY_TYPES, text=text),
                                       max_tokens=budget)
            else:
                answer = chat.complete(Prompts().extract_json.format(entity_types=", ".join(types), text=text),
                                       max_tokens=budget,
                                       schema={"name": "knowledge_graph", "schema": extraction_schema(types, items)})
            tokens += answer.completion_tokens
            cut += answer.cut
            entities, _ = grounded(*parse_extraction(answer.text), text, common_words())
            with_entities += bool(entities)
            names.extend(e.name for e in entities)
        print(f"{form:<20} {time.perf_counter() - started:6.0f} s  {tokens:6d} tokens  {cut} cut or looping  "
              f"{with_entities}/{len(chunks)} chunks with entities the text names: {sorted(set(names))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
