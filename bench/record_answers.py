"""Record a real chat model's answers to tgr's questions, as raw HTTP response bodies.

A loopback proxy sits between `tgr ask` and an OpenAI-compatible endpoint (by default the
SmolLM2-135M server of ../shared/real-llm/serve.sh); every /chat/completions request it
forwards is kept as two files in --out: NN-KIND.request.json (the request body tgr sent) and
NN-KIND.body (the endpoint's response body, byte for byte: JSON, or the SSE stream of a
streamed request). KIND is what the prompt asks: map (global search's key points), reduce,
answer (local and naive), other. The proxy relays a stream as it arrives, so tgr sees the
model write; nothing is asked twice.

    python bench/record_answers.py --store fixtures/demo_carol.db --out tests/fixtures/smollm2 \\
        --ask local "Who is Jacob Marley?" --ask global "What are the main themes?"

tests/test_weak_model_answers.py replays the bodies recorded here (tests/fixtures/smollm2/README.md
says what was recorded from what). The server answers one request at a time: keep the questions few.
"""
from __future__ import annotations

import argparse
import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def kind_of(request: dict) -> str:
    """Which of tgr's query prompts a chat request carries (tgr/prompts.py)."""
    text = " ".join(str(m.get("content", "")) for m in request.get("messages", []))
    if "-Reports-" in text and "<point>" in text:
        return "map"
    if "-Key points-" in text:
        return "reduce"
    if "-Data tables-" in text:
        return "answer"
    return "other"


class Recorder(http.server.ThreadingHTTPServer):
    def __init__(self, upstream: str, out: Path):
        super().__init__(("127.0.0.1", 0), Relay)
        self.upstream = upstream.rstrip("/")
        self.out = out
        self.count = 0
        self.lock = threading.Lock()

    def next_name(self, kind: str) -> str:
        with self.lock:
            self.count += 1
            existing = len(list(self.out.glob("*.request.json")))
            return f"{existing + 1:02d}-{kind}"


class Relay(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002
        pass

    def do_GET(self):
        response = httpx.get(self.server.upstream + self.path.removeprefix("/v1"), headers=self._headers(),
                             timeout=600)
        self._reply(response.status_code, response.content, response.headers.get("content-type", ""))

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.removeprefix("/v1")
        if not path.endswith("/chat/completions"):
            response = httpx.post(self.server.upstream + path, content=body, headers=self._headers(), timeout=600)
            self._reply(response.status_code, response.content, response.headers.get("content-type", ""))
            return
        request = json.loads(body)
        name = self.server.next_name(kind_of(request))
        (self.server.out / f"{name}.request.json").write_text(
            json.dumps(request, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        kept = bytearray()
        self.close_connection = True
        try:
            with httpx.stream("POST", self.server.upstream + path, content=body, headers=self._headers(),
                              timeout=None) as response:
                self.send_response(response.status_code)
                self.send_header("Content-Type", response.headers.get("content-type", "application/json"))
                self.send_header("Transfer-Encoding", "chunked")  # so that a cut body stays cut for tgr
                self.end_headers()
                for piece in response.iter_raw():
                    kept += piece
                    self.wfile.write(f"{len(piece):X}\r\n".encode("ascii") + piece + b"\r\n")
                    self.wfile.flush()
        except httpx.HTTPError as exc:  # the endpoint broke off: so does the proxy, and what came is kept apart
            (self.server.out / f"{name}.body.partial").write_bytes(bytes(kept))
            print(f"{name}: the endpoint broke off after {len(kept)} bytes ({exc})", file=sys.stderr)
            return
        self.wfile.write(b"0\r\n\r\n")
        (self.server.out / f"{name}.body").write_bytes(bytes(kept))
        print(f"recorded {name}: {len(kept)} bytes", file=sys.stderr)

    def _headers(self) -> dict:
        """The request's headers the endpoint reads (its key, if any, passes through unrecorded)."""
        headers = {"Content-Type": "application/json"}
        if self.headers.get("Authorization"):
            headers["Authorization"] = self.headers["Authorization"]
        return headers

    def _reply(self, status: int, content: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type or "application/json")
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8800/v1")
    parser.add_argument("--chat-model", default="openai:smollm2")
    parser.add_argument("--store", default=str(ROOT / "fixtures" / "demo_carol.db"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ask", nargs=2, action="append", metavar=("MODE", "QUESTION"), required=True)
    parser.add_argument("--stream", action="store_true", help="Ask with --stream (the answer's request streamed).")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(args.base_url, args.out)
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    proxy = f"http://127.0.0.1:{recorder.server_address[1]}/v1"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for mode, question in args.ask:
        command = [sys.executable, "-m", "tgr", "ask", args.store, question, "--mode", mode,
                   "--base-url", proxy, "--chat-model", args.chat_model, "--retries", "0", "--timeout", "600",
                   "--stream" if args.stream else "--no-stream"]
        print(f"$ tgr ask {args.store} {question!r} --mode {mode} --chat-model {args.chat_model}", flush=True)
        subprocess.run(command, env=env, check=False)
    recorder.shutdown()


if __name__ == "__main__":
    main()
