"""The providers' Batch APIs through their official SDKs (openai, zhipuai).

One shape for both: upload a JSONL file of chat requests (purpose "batch"), create a batch
over it, read its status, download its output and error files. Errors become tgr's own:
TransientModelError for what is worth trying again (429, 5xx, timeouts, connections),
ModelError otherwise, each one line with the key removed.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..errors import ModelError, TransientModelError
from .clients import Completion, OpenAIChat, ZhipuChat, _is_transient_status, _usage, redact

# provider ids go into URL paths: anything else in a store (which may come from anyone) is refused
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


class BatchNotFound(ModelError):
    """The provider does not know this batch (another account or endpoint, or deleted)."""


@dataclass
class JobStatus:
    """A batch as the provider reports it."""

    status: str             # validating | in_progress | finalizing | completed | failed | expired | ...
    total: int = 0
    completed: int = 0
    failed: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: str = ""        # why the whole batch failed (e.g. its input was refused)

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


def safe_id(value) -> str:
    """A provider id fit to put in a URL path, or ModelError."""
    if not isinstance(value, str) or not _SAFE_ID.match(value):
        raise ModelError(f"unusable batch or file id {str(value)[:40]!r}")
    return value


class SDKBatchAPI:
    """files + batches of an OpenAI-style SDK client (openai.OpenAI or zhipuai.ZhipuAI)."""

    def __init__(self, client, name: str, endpoint: str, secret: str | None, create_extra: dict | None = None,
                 owned: bool = False):
        self.client, self.name, self.endpoint = client, name, endpoint
        self._secret, self._extra, self._owned = secret, create_extra or {}, owned

    def submit(self, data: bytes, metadata: dict) -> tuple[str, str]:
        """Upload a JSONL file and create a batch over it; returns (batch id, input file id)."""
        uploaded = self._call("upload", self.client.files.create, file=("tgr-batch.jsonl", data), purpose="batch")
        file_id = safe_id(uploaded.id)
        batch = self._call("create batch", self.client.batches.create, input_file_id=file_id,
                           endpoint=self.endpoint, completion_window="24h", metadata=metadata, **self._extra)
        return safe_id(batch.id), file_id

    def status(self, batch_id: str) -> JobStatus:
        batch = self._call("status", self.client.batches.retrieve, safe_id(batch_id))
        counts = getattr(batch, "request_counts", None)
        errors = getattr(getattr(batch, "errors", None), "data", None) or []
        return JobStatus(
            status=str(batch.status), total=int(getattr(counts, "total", 0) or 0),
            completed=int(getattr(counts, "completed", 0) or 0), failed=int(getattr(counts, "failed", 0) or 0),
            output_file_id=batch.output_file_id and safe_id(batch.output_file_id),
            error_file_id=batch.error_file_id and safe_id(batch.error_file_id),
            errors="; ".join(str(getattr(e, "message", e)) for e in errors[:3]))

    def download(self, file_id: str) -> str:
        response = self._call("download", self.client.files.content, safe_id(file_id))
        return response.content.decode("utf-8", "replace")

    def close(self) -> None:
        if self._owned:
            self.client.close()

    def _call(self, what: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # the SDKs' errors become tgr's, without the key
            raise self._translate(what, exc) from None

    def _translate(self, what: str, exc: Exception) -> Exception:
        message = redact(f"{self.name} Batch API ({what}): {exc}", self._secret)
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status == 404 and what == "status":
            return BatchNotFound(message)
        if status is not None:
            if status == 404:
                message += " (does this endpoint offer the Batch API? index without --batch)"
            return TransientModelError(message) if _is_transient_status(status) else ModelError(message)
        if type(exc).__name__ in ("APIConnectionError", "APITimeoutError", "ConnectError", "ReadTimeout"):
            return TransientModelError(message)
        return ModelError(message)


def batch_api_for(chat) -> "SDKBatchAPI | None":
    """The Batch API of a chat model's provider (files + batches), or None if it has none."""
    if isinstance(chat, ZhipuChat):
        return zhipu_batch_api(chat.name, chat._client, chat._key)
    if isinstance(chat, OpenAIChat):
        return openai_batch_api(chat.name, chat.base_url, chat._key, chat.timeout)
    return None


def openai_batch_api(name: str, base_url: str, api_key: str | None, timeout: float) -> SDKBatchAPI:
    """The Batch API of an OpenAI-compatible endpoint, through the openai SDK (extra 'batch')."""
    try:
        from openai import OpenAI
    except ImportError:
        raise ModelError("--batch with an OpenAI-compatible endpoint needs the openai SDK: "
                         "pip install 'tgr[batch]'") from None
    client = OpenAI(api_key=api_key or "none", base_url=base_url, timeout=timeout, max_retries=2)
    return SDKBatchAPI(client, name, "/v1/chat/completions", api_key, owned=True)


def zhipu_batch_api(name: str, client, api_key: str | None) -> SDKBatchAPI:
    """zhipuai's Batch API, through the client the chat model already has."""
    return SDKBatchAPI(client, name, "/v4/chat/completions", api_key,
                       create_extra={"auto_delete_input_file": True})


def request_line(custom_id: str, url: str, body: dict) -> bytes:
    """One line of a batch input file."""
    line = {"custom_id": custom_id, "method": "POST", "url": url, "body": body}
    return (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")


def read_results(text: str) -> dict[str, tuple[dict | None, str]]:
    """custom_id -> (chat completion body or None, error message) from output/error file text."""
    results: dict[str, tuple[dict | None, str]] = {}
    for raw in text.splitlines():
        try:
            line = json.loads(raw)
            custom_id = line["custom_id"]
        except (ValueError, KeyError, TypeError):
            continue  # not ours to understand; its request stays unanswered and is retried
        response, error = line.get("response") or {}, line.get("error") or {}
        body = response.get("body") if isinstance(response, dict) else None
        if isinstance(response, dict) and response.get("status_code") == 200 and isinstance(body, dict):
            results[str(custom_id)] = (body, "")
            continue
        detail = error.get("message") if isinstance(error, dict) else None
        if not detail and isinstance(body, dict):
            detail = (body.get("error") or {}).get("message") if isinstance(body.get("error"), dict) else None
        status = response.get("status_code") if isinstance(response, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        results[str(custom_id)] = (None, " ".join(str(p) for p in (code or status, detail) if p)[:300] or "failed")
    return results


def completion_from_body(body: dict, prompt: str) -> Completion:
    """The Completion in a chat.completion body (ValueError if it has no answer)."""
    try:
        text = body["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        raise ValueError("malformed chat completion") from None
    return Completion(text, *_usage(prompt, text, body.get("usage")))
