"""Reading a chat answer as the model writes it: the two providers' streams.

An OpenAI-compatible endpoint streams Server-Sent Events (`data: {chat.completion.chunk}`
lines, then `data: [DONE]`); the zhipuai SDK parses the same events itself. Both readers
yield the text pieces as they arrive and end with the usage the API reported (None when it
did not). A failure before any text raises what the non-streamed call would (transient ones
are retried by the gateway); a failure later is a broken stream (tgr.models.streamed_calls).
"""
from __future__ import annotations

import json
from typing import Callable, Iterator

from ..errors import ModelError, TransientModelError

class StreamEnd:
    """The last item of a stream: the usage the API reported (None: it did not)."""

    def __init__(self, usage: dict | None):
        self.usage = usage


def openai_pieces(http, url: str, body: dict, describe: Callable[[Exception], Exception],
                  status_error: Callable[[object], Exception]) -> Iterator[str | StreamEnd]:
    """Text pieces of one streamed /chat/completions request, then a StreamEnd.

    describe(exc) turns an httpx error into tgr's (without secrets); status_error(response)
    turns an HTTP error answer into tgr's."""
    import httpx

    request = {**body, "stream": True, "stream_options": {"include_usage": True}}
    try:
        with http.stream("POST", url, json=request) as response:
            if response.status_code >= 400:
                response.read()
                raise status_error(response)
            usage = None
            for line in response.iter_lines():
                data = _event_data(line)
                if data is None:
                    continue
                if data == "[DONE]":
                    break
                piece, reported = _openai_chunk(data, url)
                usage = reported or usage
                if piece:
                    yield piece
            yield StreamEnd(usage)
    except httpx.TimeoutException:
        raise TransientModelError(f"{url}: the answer timed out") from None
    except httpx.HTTPError as exc:
        raise describe(exc) from None


def _event_data(line: str) -> str | None:
    """The data of one SSE line (None: a comment, an event name, a blank line)."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


def _openai_chunk(data: str, url: str) -> tuple[str, dict | None]:
    """(text piece, usage or None) of one chat.completion.chunk event."""
    try:
        chunk = json.loads(data)
    except ValueError:
        raise TransientModelError(f"{url}: a streamed piece is not JSON") from None
    if not isinstance(chunk, dict):
        raise TransientModelError(f"{url}: malformed streamed piece")
    if chunk.get("error"):
        error = chunk["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise ModelError(f"{url}: the model stopped with an error: {str(message)[:300]}")
    usage = chunk.get("usage") if isinstance(chunk.get("usage"), dict) else None
    choices = chunk.get("choices") or []
    delta = choices[0].get("delta") if choices and isinstance(choices[0], dict) else None
    content = delta.get("content") if isinstance(delta, dict) else None
    return (content if isinstance(content, str) else ""), usage


def zhipu_pieces(client, body: dict, translate: Callable[[Exception], Exception]) -> Iterator[str | StreamEnd]:
    """Text pieces of one streamed zhipuai chat request (the SDK's StreamResponse), then a StreamEnd."""
    try:
        stream = client.chat.completions.create(**body, stream=True)
    except Exception as exc:  # the SDK's errors are translated to tgr's
        raise translate(exc) from None
    usage = None
    try:
        for chunk in stream:
            if getattr(chunk, "usage", None) is not None:
                usage = {"prompt_tokens": chunk.usage.prompt_tokens,
                         "completion_tokens": chunk.usage.completion_tokens}
            choices = getattr(chunk, "choices", None) or []
            piece = getattr(getattr(choices[0], "delta", None), "content", None) if choices else None
            if piece:
                yield piece
        yield StreamEnd(usage)
    except GeneratorExit:
        raise
    except Exception as exc:
        raise translate(exc) from None
    finally:
        stream.response.close()
