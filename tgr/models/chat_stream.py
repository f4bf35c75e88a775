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

from ..errors import ModelError, StreamBroken, TransientModelError

class StreamEnd:
    """The last item of a stream: the usage the API reported (None: it did not) and why the
    model stopped (finish_reason: "stop", "length", ...; None: not said)."""

    def __init__(self, usage: dict | None, finish_reason: str | None = None):
        self.usage = usage
        self.finish_reason = finish_reason


def openai_pieces(http, url: str, body: dict, describe: Callable[[Exception], Exception],
                  status_error: Callable[[object], Exception],
                  opened: Callable[[object], None] | None = None,
                  read_timeout: float | None = None) -> Iterator[str | StreamEnd]:
    """Text pieces of one streamed /chat/completions request, then a StreamEnd.

    describe(exc) turns an httpx error into tgr's (without secrets); status_error(response)
    turns an HTTP error answer into tgr's; opened(response), if given, is told the response
    as soon as it starts (so that another thread can close it); read_timeout, if given, is the
    longest wait for the next piece of the stream (else the client's)."""
    import httpx

    request = {**body, "stream": True, "stream_options": {"include_usage": True}}
    try:
        timeout = http.timeout
        if read_timeout is not None:
            timeout = httpx.Timeout(connect=timeout.connect, read=read_timeout, write=timeout.write, pool=timeout.pool)
        with http.stream("POST", url, json=request, timeout=timeout) as response:
            if opened is not None:
                opened(response)
            if response.status_code >= 400:
                response.read()
                raise status_error(response)
            usage = finish = None
            events, other, done = 0, [], False
            for line in response.iter_lines():
                data = _event_data(line)
                if data is None:
                    if not events and len(other) < 10_000:
                        other.append(line)
                    continue
                events += 1
                if data == "[DONE]":
                    done = True
                    break
                piece, reported, finished = _openai_chunk(data, url)
                usage, finish = reported or usage, finished or finish
                if piece:
                    yield piece
            if not events:  # a server that ignored "stream": one whole answer, or not JSON at all
                yield from _whole_answer("\n".join(other), url)
                return
            if not done and finish is None:  # the body closed mid-answer (a server restarted)
                raise StreamBroken(f"{url}: the stream ended before the answer did")
            yield StreamEnd(usage, finish)
    except httpx.TimeoutException:
        raise TransientModelError(f"{url}: timed out: no answer, or no token of it, for {_read_timeout(http)}") from None
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.StreamClosed) as exc:
        raise StreamBroken(str(describe(exc))) from None
    except httpx.HTTPError as exc:
        raise describe(exc) from None


def _whole_answer(body: str, url: str) -> Iterator[str | StreamEnd]:
    """The text and end of a chat.completion sent whole where a stream was asked for."""
    try:
        data = json.loads(body)
    except ValueError:
        raise TransientModelError(f"{url}: response is not JSON nor an event stream") from None
    text, usage, finish = completion_parts(data, url)
    if text:
        yield text
    yield StreamEnd(usage, finish)


def completion_parts(data, where: str) -> tuple[str, dict | None, str | None]:
    """(text, usage or None, finish_reason or None) of a whole chat.completion's JSON."""
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        raise TransientModelError(f"{where}: malformed chat response") from None
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    return text, usage, finish if isinstance(finish, str) else None


def _read_timeout(http) -> str:
    """The client's read timeout, as the time a streamed answer may go without a token."""
    read = getattr(getattr(http, "timeout", None), "read", None)
    return f"{read:g} s" if isinstance(read, (int, float)) else "the read timeout"


def _event_data(line: str) -> str | None:
    """The data of one SSE line (None: a comment, an event name, a blank line)."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


def _openai_chunk(data: str, url: str) -> tuple[str, dict | None, str | None]:
    """(text piece, usage or None, finish_reason or None) of one chat.completion.chunk event."""
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
    finish = choices[0].get("finish_reason") if choices and isinstance(choices[0], dict) else None
    return (content if isinstance(content, str) else ""), usage, (finish if isinstance(finish, str) else None)


def zhipu_pieces(client, body: dict, translate: Callable[[Exception], Exception]) -> Iterator[str | StreamEnd]:
    """Text pieces of one streamed zhipuai chat request (the SDK's StreamResponse), then a StreamEnd."""
    try:
        stream = client.chat.completions.create(**body, stream=True)
    except Exception as exc:  # the SDK's errors are translated to tgr's
        raise translate(exc) from None
    usage = finish = None
    try:
        for chunk in stream:
            if getattr(chunk, "usage", None) is not None:
                usage = {"prompt_tokens": chunk.usage.prompt_tokens,
                         "completion_tokens": chunk.usage.completion_tokens}
            choices = getattr(chunk, "choices", None) or []
            piece = getattr(getattr(choices[0], "delta", None), "content", None) if choices else None
            finish = (getattr(choices[0], "finish_reason", None) if choices else None) or finish
            if piece:
                yield piece
        yield StreamEnd(usage, finish)
    except GeneratorExit:
        raise
    except Exception as exc:
        raise translate(exc) from None
    finally:
        stream.response.close()
