"""The tgr command line: parse arguments, call one library function, print the result."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time

import click

from .version import __version__
from .store.db import DatabaseError
from .errors import BatchPending, TgrError
from .prompts import load_prompts_file
from .export.writers import DEFAULT_TOP, export_format
from .build.new_store import RemovedIfUnused
from .query.modes import MODES
from .store.untrusted_text import terminal_safe
from .knowledge_base import KnowledgeBase

# One instance of each path type for all commands: click looks up a translation of the type's
# name for every instance it makes (a locale search, about 0.3 ms each, on every run).
_FILE = click.Path(dir_okay=False)
_EXISTING_FILE = click.Path(exists=True, dir_okay=False)


def _model_options(fn):
    options = [
        click.option("--chat-model", help="zhipuai:NAME, openai:NAME (with --base-url), ollama:NAME or 'offline' "
                                          "(default: the one the store records)."),
        click.option("--embed-model", help="zhipuai:embedding-3, openai:NAME, ollama:NAME, "
                                           "local:multilingual-e5-small or tgr:hash-384."),
        click.option("--base-url", envvar="TGR_BASE_URL",
                     help="OpenAI-compatible endpoint (vLLM, ...), or the Ollama server of ollama: models."),
        click.option("--offline", is_flag=True, help="No model calls: heuristic/extractive, the store's local embedder."),
        click.option("--concurrency", type=click.IntRange(1, 256), default=8, show_default=True,
                     help="Model calls in flight at once."),
        click.option("--rpm", type=float, help="Cap on model requests per minute."),
        click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds per model call."),
        click.option("--retries", type=click.IntRange(0, 20), default=6, show_default=True,
                     help="Retries of a failing model call (429, 5xx, timeouts), with backoff."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _context_option(fn):
    return click.option("--context-tokens", type=click.IntRange(512, 10_000_000),
                        help="The chat model's context window in tokens, where its server does not say "
                             "(llama.cpp's /props and Ollama's /api/show do); recorded in the store.")(fn)


def _prompt_options(fn):
    fn = click.option("--prompts", "prompts_file", type=_EXISTING_FILE,
                      help="JSON or TOML file of prompt templates (fields of tgr.Prompts); recorded in the store.")(fn)
    return click.option("--entity-types", help='Entity types to extract, e.g. "person,org,drug"; recorded.')(fn)


def _entity_types(value: str | None) -> str | None:
    if value is None:
        return None
    types = [t.strip() for t in value.split(",") if t.strip()]
    if not types:
        raise click.BadParameter("give at least one type, e.g. person,organization", param_hint="--entity-types")
    return ", ".join(types)


def _open(path: str, *, create: bool, readonly=False, **options) -> KnowledgeBase:
    return KnowledgeBase(path, create=create, readonly=readonly, **_store_options(**options))


def _store_options(*, chat_model=None, embed_model=None, base_url=None, offline=False, concurrency=8, rpm=None,
                   timeout=120.0, retries=6, prompts_file=None, context_tokens=None) -> dict:
    """KnowledgeBase options from the command line's model options."""
    if offline:  # no chat model, no network: extractive answers, the store's local embedder
        chat_model, embed_model = "offline", embed_model or "offline"
    prompts = load_prompts_file(prompts_file) if prompts_file else None
    return dict(chat=chat_model, embedder=embed_model, base_url=base_url, concurrency=concurrency, rpm=rpm,
                timeout=timeout, max_retries=retries, prompts=prompts, context_tokens=context_tokens)


def _open_stores(paths: tuple[str, ...], **options):
    """One store opened read-only for questions, or several asked together (tgr.multi_store)."""
    if len(paths) == 1:
        return _open(paths[0], create=False, readonly=True, **options)
    from .multi_store import open_many

    return open_many(list(paths), **_store_options(**options))


class _Pace:
    """How fast a stage goes: the model's generated tokens per second in it (when the run
    gives its usage: watch_usage) and the time left at the pace of the items done so far."""

    def __init__(self):
        self.usage = None
        self.tokens_at_start = 0
        self.done_at_start = 0

    def start(self, done: int) -> None:
        self.done_at_start = done
        self.tokens_at_start = self._tokens()

    def _tokens(self) -> int:
        return self.usage().completion_tokens if self.usage is not None else 0

    def tokens_per_second(self, elapsed: float) -> str:
        made = self._tokens() - self.tokens_at_start
        return f"{made / elapsed:.1f} tokens/s" if made > 0 and elapsed > 0 else ""

    def describe(self, done: int, total: int, elapsed: float) -> str:
        """" · 14.2 tokens/s · about 3 min left" (the parts known so far), or ""."""
        parts = [self.tokens_per_second(elapsed)]
        finished = done - self.done_at_start
        if 0 < finished and done < total and elapsed >= 1:
            left = elapsed / finished * (total - done)
            parts.append(f"about {left / 60:.0f} min left" if left >= 90 else f"about {left:.0f} s left")
        return "".join(f" · {part}" for part in parts if part)


class _Bars:
    """One progress bar per stage, drawn on stderr."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.stage = None
        self.bar = None
        self.done = 0
        self.pace = _Pace()
        self.started = 0.0

    def watch_usage(self, usage) -> None:
        """usage(): the run's model usage so far (tgr.models.gateway.Usage), for tokens per second."""
        self.pace.usage = usage

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.quiet:
            return
        if stage != self.stage:
            self.close()
            if total == 0:
                return
            self.stage, self.done, self.started = stage, 0, time.monotonic()
            self.pace.start(0)
            self.bar = click.progressbar(length=total, label=f"{stage:<17}", file=sys.stderr,
                                         show_pos=True, width=30, item_show_func=lambda _: self._rate())
            self.bar.__enter__()
        if self.bar is not None and done > self.done:
            self.bar.update(done - self.done)
            self.done = done

    def _rate(self) -> str | None:
        return self.pace.tokens_per_second(time.monotonic() - self.started) or None

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
        self.bar, self.stage = None, None


class _Lines:
    """Progress without a terminal (a log, CI, a pipe): one plain line on stderr when a stage
    starts, every `interval` seconds while it runs, and when it ends."""

    def __init__(self, interval: float = 5.0, clock=time.monotonic):
        self.interval, self.clock = interval, clock
        self.stage, self.started, self.last, self.state, self.shown = None, 0.0, 0.0, (0, 0), None
        self.pace = _Pace()

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self.clock()
        if stage != self.stage:
            if total == 0:  # nothing to do in that stage: not worth a line
                return
            self.close()
            self.stage, self.started = stage, now
            self.pace.start(done)
            self._line(done, total, now)
            return
        self.state = (done, total)
        if done >= total or now - self.last >= self.interval:
            self._line(done, total, now)

    def _line(self, done: int, total: int, now: float) -> None:
        self.state = self.shown = (done, total)
        self.last = now
        percent = 100 * done // total if total else 100
        click.echo(f"{self.stage:<17} {done}/{total} ({percent}%) {now - self.started:.1f} s"
                   f"{self.pace.describe(done, total, now - self.started)}", err=True)

    def watch_usage(self, usage) -> None:
        """usage(): the run's model usage so far (tgr.models.gateway.Usage), for tokens per second."""
        self.pace.usage = usage

    def close(self) -> None:
        if self.stage is not None and self.state != self.shown:
            self._line(*self.state, self.clock())
        self.stage, self.state, self.shown = None, (0, 0), None


@contextlib.contextmanager
def _progress(quiet: bool):
    """The progress of every command that reports it: bars on a terminal, plain lines every few
    seconds otherwise, nothing if quiet; the last state shown when the command ends."""
    shown = _Bars(quiet) if quiet or sys.stderr.isatty() else _Lines()
    try:
        yield shown
    finally:
        shown.close()


_NEW_STORE = "tgr.new_store"  # ctx.meta key: the RemovedIfUnused guard of the running command


_PARAMS = "tgr.params"  # ctx.meta key (shared with the group's context): the running command's params


class _Command(click.Command):
    """A command whose parameters the group can name in an error line (which store)."""

    def invoke(self, ctx):
        ctx.meta[_PARAMS] = ctx.params
        return super().invoke(ctx)


class _Group(click.Group):
    """Turns tgr's own errors and Ctrl-C into one line on stderr and a non-zero exit."""

    command_class = _Command

    def invoke(self, ctx):
        try:
            with _SafeStdout():
                return super().invoke(ctx)
        except KeyboardInterrupt:
            fresh = ctx.meta.get(_NEW_STORE)
            if fresh is not None and fresh.removed:
                click.echo(f"\ninterrupted before a document was stored: {fresh.path} was not kept", err=True)
            else:
                click.echo("\ninterrupted: everything finished so far is saved in the store; "
                           "run the same command again to resume", err=True)
            ctx.exit(130)
        except DatabaseError as exc:  # SQLite met damage (or a lock) reading the store
            raise click.ClickException(_one_line(_database_error(ctx, exc))) from None
        except (TgrError, ValueError, OSError) as exc:
            raise click.ClickException(_one_line(exc)) from None


_DAMAGE_WORDS = ("malformed", "corrupt", "not a database", "disk i/o", "read error", "iter error")


def _database_error(ctx, exc: Exception) -> str:
    """An SQLite error met while reading: the store it concerns and, for damage, what to run."""
    params = ctx.meta.get(_PARAMS, {})
    stores = [params["store"]] if params.get("store") else list(params.get("stores") or ())
    if params.get("stores_and_question"):  # (stores, question), as _stores_and_question gives it
        stores = list(params["stores_and_question"][0])
    label = stores[0] if len(stores) == 1 else "a store"
    if not any(word in str(exc).lower() for word in _DAMAGE_WORDS):
        return f"{label}: {exc}"
    where = f"`tgr check {stores[0]}`" if len(stores) == 1 else "`tgr check STORE` on each store"
    return f"{label} is damaged: SQLite reports {exc}; nothing was answered from it ({where} says what is wrong)"


def _warn(message: str) -> None:
    """One warning line on stderr (the message may quote the store)."""
    click.echo(f"warning: {_one_line(message)}", err=True)


def _one_line(text) -> str:
    """A message (which may quote the store) as one safe line."""
    return terminal_safe(" ".join(str(text).split()))


class _SafeStdout:
    """Everything printed on stdout passes terminal_safe: store text may hold escape sequences."""

    def __enter__(self):
        self.original = sys.stdout
        sys.stdout = _SafeStream(self.original)

    def __exit__(self, *exc):
        sys.stdout = self.original


class _SafeStream:
    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        return self._stream.write(terminal_safe(text) if isinstance(text, str) else text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tgr")
def main() -> None:
    """tgr: a GraphRAG knowledge store in one SQLite file."""


@main.command()
@click.argument("store", type=_FILE)
@click.argument("paths", nargs=-1)
@_model_options
@click.option("--chunk-size", type=click.IntRange(16), help="Tokens per chunk (new stores; default 1200).")
@click.option("--chunk-overlap", type=click.IntRange(0), help="Tokens shared by neighbouring chunks (default 100).")
@click.option("--two-step", is_flag=True, default=None, help="Seed-style extraction: entities, then triplets.")
@click.option("--gleanings", type=click.IntRange(0, 5), help="Extra extraction rounds per chunk (default 0).")
@click.option("--disambiguate", is_flag=True, default=None, help="Ask the LLM about same-name entities.")
@click.option("--max-cluster-size", type=click.IntRange(2), help="Split communities larger than this (default 10).")
@click.option("--seed", type=int, help="Leiden seed (default 42).")
@_context_option
@_prompt_options
@click.option("--portable", is_flag=True,
              help="Also keep the local embedder's vectors, for those who can't reach the store's own embedder.")
@click.option("--keep-boilerplate", is_flag=True,
              help="Keep plain text whole (by default a licence header or footer at the start or end "
                   "of a file, credits and contents lists are dropped, and said).")
@click.option("--estimate", is_flag=True, help="Print expected model calls and tokens, and stop.")
@click.option("--batch/--no-batch", default=None,
              help="Send each wave of prompts as a Batch API job: half the price, answers within hours "
                   "(default: only to collect jobs STORE holds open).")
@click.option("--no-wait", is_flag=True, help="With --batch: submit the jobs and exit (code 3); run "
                                              "`tgr index STORE` again to collect them.")
@click.option("--batch-fallback", is_flag=True, help="Answer batch requests that failed or expired "
                                                     "synchronously instead of in the next job.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
def index(store, paths, chat_model, embed_model, base_url, offline, concurrency, rpm, timeout, retries, chunk_size,
          chunk_overlap, two_step, gleanings, disambiguate, max_cluster_size, seed, context_tokens, entity_types,
          prompts_file, portable, keep_boilerplate, estimate, batch, no_wait, batch_fallback, as_json, quiet):
    """Index documents (files, directories, '-' for stdin) into STORE.

    With no PATHS, finish what STORE itself still holds: chunks an interrupted run did not
    extract, batch jobs it submitted, then the graph, communities, reports and embeddings.
    """
    settings = dict(chunk_size=chunk_size, chunk_overlap=chunk_overlap, two_step=two_step,
                    gleanings=gleanings, disambiguate=disambiguate, max_cluster_size=max_cluster_size, seed=seed,
                    entity_types=_entity_types(entity_types))
    if not paths and not os.path.exists(store):
        raise click.UsageError("nothing to index: give files or directories (with no PATHS, an existing "
                               "STORE's unfinished work is finished)")
    target = ":memory:" if estimate and not os.path.exists(store) else store  # estimating writes nothing
    fresh = click.get_current_context().meta[_NEW_STORE] = RemovedIfUnused(target)
    with fresh, \
            _open(target, create=True, chat_model=chat_model, embed_model=embed_model, base_url=base_url,
                  offline=offline, concurrency=concurrency, rpm=rpm, timeout=timeout, retries=retries,
                  prompts_file=prompts_file, context_tokens=context_tokens) as kb:  # a failed first index leaves no file
        if estimate:
            result = kb.estimate(paths, batch=bool(batch), **settings)
            _print_mapping(result, as_json)
            return
        try:
            with _progress(quiet) as progress:
                summary = kb.index(paths, progress=progress, warn=_warn, portable=portable,
                                   batch=_batch_options(batch, no_wait, batch_fallback),
                                   keep_boilerplate=keep_boilerplate, **settings)
        except BatchPending as pending:
            click.echo(f"{_one_line(pending)}; run `tgr index {store}` to collect the answers and go on", err=True)
            sys.exit(3)
        if as_json:
            click.echo(json.dumps(summary.to_dict(), indent=2, ensure_ascii=False))
            return
        levels = ", ".join(f"L{k}: {v}" for k, v in summary.communities.items()) or "none"
        click.echo(f"documents      {summary.documents} ({summary.documents_added} new)")
        if summary.boilerplate:
            dropped = sum(summary.boilerplate.values())
            where = (next(iter(summary.boilerplate)) if len(summary.boilerplate) == 1
                     else f"{len(summary.boilerplate)} files")
            click.echo(f"boilerplate    {dropped:,} characters dropped from {where} (--keep-boilerplate keeps them)")
        click.echo(f"chunks         {summary.chunks} ({summary.chunks_extracted} extracted now)")
        click.echo(f"entities       {summary.entities}")
        click.echo(f"relationships  {summary.relationships}")
        click.echo(f"communities    {levels}")
        click.echo(f"reports        {summary.reports}")
        local = f"; {summary.local_computations} local embedding batches" if summary.local_computations else ""
        if summary.model_calls or summary.cache_hits:
            by_stage = ", ".join(f"{k} {v}" for k, v in summary.calls_by_stage.items() if v) or "none"
            click.echo(f"model calls    {summary.model_calls} ({by_stage}); cache hits {summary.cache_hits}{local}")
            click.echo(f"tokens         {summary.prompt_tokens} prompt, {summary.completion_tokens} completion")
            if summary.retries or summary.answers_cut:
                click.echo(f"answers        {summary.answers_cut} stopped (looping or at max_tokens); "
                           f"{summary.retries} retries")
            if summary.extracted_by and "fallback" in summary.extracted_by:
                click.echo(f"extracted      {summary.extracted_by}")
            if summary.reports_by.get("fallback"):
                said = ", ".join(f"{n} by {g}" for g, n in summary.reports_by.items())
                click.echo(f"reports by     {said} (fallback: the model's answer was unusable)")
            if summary.batch_calls:
                click.echo(f"batch          {summary.batch_calls} calls at half price; billed as "
                           f"{summary.billed_tokens} tokens")
        else:  # offline: everything was computed here
            click.echo(f"model calls    none (computed locally{local})")
        if summary.portable_vectors:
            click.echo(f"portable       {summary.portable_vectors} vectors computed locally (no model calls)")
        click.echo(f"wall time      {summary.wall_s:.1f} s")


def _batch_options(batch: bool | None, no_wait: bool, fallback: bool):
    """--batch/--no-batch, --no-wait, --batch-fallback as the library's batch argument."""
    from .build.batch import BatchOptions

    if batch is False:
        return False
    # without --batch: only to collect the jobs the store holds open, if any
    return BatchOptions(wait=not no_wait, fallback=fallback, only_open=batch is None)


@main.command("merge")
@click.argument("out", type=_FILE)
@click.argument("stores", nargs=-1, required=True)
@_model_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
def merge_command(out, stores, chat_model, embed_model, base_url, offline, concurrency, rpm, timeout, retries,
                  as_json, quiet):
    """Unite STORES (built separately with the same settings) into OUT, new or existing, and
    build the graph, communities, reports and embeddings once on the union. No chunk is
    extracted again; summaries and reports new to the union may ask the chat model."""
    from . import merge_stores

    if offline:  # as for index: no chat model, no network, the stores' local embedder
        chat_model, embed_model = "offline", embed_model or "offline"
    with _progress(quiet) as progress:
        summary = merge_stores(out, stores, progress=progress, warn=_warn, chat=chat_model, embedder=embed_model,
                               base_url=base_url, concurrency=concurrency, rpm=rpm, timeout=timeout,
                               max_retries=retries)
    if as_json:
        click.echo(json.dumps(summary.to_dict(), indent=2, ensure_ascii=False))
        return
    for part in summary.inputs:
        click.echo(f"from {part['store']}: {part['documents']} documents, {part['chunks']} chunks, "
                   f"{part['chunk_vectors']} chunk vectors, {part['cached_answers']} cached answers, "
                   f"{part['runs']} runs")
    levels = ", ".join(f"L{k}: {v}" for k, v in summary.communities.items()) or "none"
    calls = ", ".join(f"{k} {v}" for k, v in summary.calls_by_stage.items() if v) or "none"
    click.echo(f"{out}: {summary.documents} documents, {summary.chunks} chunks, {summary.entities} entities, "
               f"{summary.relationships} relationships, communities {levels}, {summary.reports} reports")
    click.echo(f"model calls {summary.model_calls} ({calls}); cache hits {summary.cache_hits}; "
               f"wall time {summary.wall_s:.1f} s")


def _stores_and_question(ctx, param, values: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """STORE... QUESTION: the last argument is the question; one argument alone is missing it."""
    if len(values) < 2:
        given = values[0] if values else "STORE"
        if values and not os.path.exists(given):
            raise click.UsageError(f"missing the store: tgr ask STORE {_one_line(repr(given))}")
        raise click.UsageError(f"missing the question: tgr ask {_one_line(given)} \"QUESTION\"")
    return values[:-1], values[-1]


@main.command()
@click.argument("stores_and_question", nargs=-1, metavar="STORES... QUESTION", callback=_stores_and_question)
@click.option("--mode", type=click.Choice(MODES), default="local", show_default=True)
@click.option("--level", type=click.IntRange(0), default=0, show_default=True, help="Community level (global).")
@click.option("--top-k", type=click.IntRange(1, 4096), default=10, show_default=True, help="Entities / chunks retrieved.")
@click.option("--context-only", is_flag=True, help="Print the retrieved context; no LLM call.")
@click.option("--json", "as_json", is_flag=True, help="Print the structured result as JSON.")
@click.option("--stream/--no-stream", default=None,
              help="Print the answer as the model writes it (default: on a terminal, not with --json).")
@_model_options
def ask(stores_and_question, mode, level, top_k, context_only, as_json, stream, chat_model, embed_model, base_url,
        offline, concurrency, rpm, timeout, retries):
    """Answer QUESTION from STORE (or from several: STORE... QUESTION, one ranking fused by rank)."""
    stores, question = stores_and_question
    options = dict(chat_model=chat_model, embed_model=embed_model, base_url=base_url, offline=offline,
                   concurrency=concurrency, rpm=rpm, timeout=timeout, retries=retries)
    stream = _streaming(stream) and not (as_json or context_only)
    with _open_stores(stores, **options) as kb:
        if stream:
            from .query.citations import Renumbering
            renumbering = Renumbering()
            with _stops_cleanly():
                line = _OpenLine()
                result = _streamed(kb.ask_stream(question, mode, level=level, top_k=top_k, warn=line.warn),
                                   renumbering, line)
        else:
            result = kb.ask(question, mode, context_only=context_only, level=level, top_k=top_k, warn=_warn)
        if as_json:
            click.echo(result.to_json())
        elif context_only:
            click.echo(result.context)
        else:
            _print_answer(result, stores, getattr(kb, "conn", None), renumbering if stream else None, mode, level)


@main.command()
@click.argument("stores", nargs=-1, required=True, type=_FILE)
@click.option("--mode", type=click.Choice(MODES), default="local", show_default=True, help="Change it with /mode.")
@click.option("--level", type=click.IntRange(0), default=0, show_default=True,
              help="Community level (global); change it with /level.")
@click.option("--top-k", type=click.IntRange(1, 4096), default=10, show_default=True, help="Entities / chunks retrieved.")
@click.option("--stream/--no-stream", default=None,
              help="Print answers as the model writes them (default: on a terminal).")
@_model_options
def chat(stores, mode, level, top_k, stream, chat_model, embed_model, base_url, offline, concurrency, rpm,
         timeout, retries):
    """Talk with STORE (or several): each question is answered in the light of the ones before.

    On a terminal: line editing and history, and /mode, /level, /sources, /reset, /help, /exit.
    With stdin not a terminal: one question (or command) per line until the end of input."""
    from .adapters.terminal_chat import ChatLoop

    options = dict(chat_model=chat_model, embed_model=embed_model, base_url=base_url, offline=offline,
                   concurrency=concurrency, rpm=rpm, timeout=timeout, retries=retries)
    with _open_stores(stores, **options) as kb:
        shown = _Shown(stores, getattr(kb, "conn", None))
        loop = ChatLoop(kb.chat(mode, warn=shown.text_line.warn, level=level, top_k=top_k), stream=_streaming(stream),
                        interactive=sys.stdin.isatty(), show=shown,
                        stops=_stops_cleanly)
        failed = loop.run()
    if failed:
        sys.exit(1)


def _streaming(stream: bool | None) -> bool:
    """--stream/--no-stream, else on when stdout is a terminal."""
    return sys.stdout.isatty() if stream is None else stream


@contextlib.contextmanager
def _stops_cleanly():
    """Ctrl-C while an answer is written: one line on stderr and exit 130 (a question writes nothing)."""
    try:
        yield
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)


class _OpenLine:
    """Whether a streamed answer left its line open; warn ends it first, so that a warning
    said while the answer is written (tgr.query.modes.Searcher.note) has a line of its own."""

    def __init__(self):
        self.open = False
        self.ended = False  # by a warning, since the last text

    def printed(self, text: str) -> None:
        if text:
            self.open, self.ended = not text.endswith("\n"), False

    def warn(self, message: str) -> None:
        if self.open:
            click.echo("")
            self.open, self.ended = False, True
        _warn(message)


def _streamed(items, renumbering=None, line: _OpenLine | None = None) -> "Answer":
    """Print the answer's text pieces as they arrive (renumbering its citations, when given),
    then end the line; returns the Answer. A failure or Ctrl-C midway ends the line first, so
    its message starts on a line of its own."""
    from .query.modes import Answer

    printed = False
    line = line or _OpenLine()
    try:
        for item in items:
            if isinstance(item, Answer):
                rest = renumbering.end() if renumbering else ""
                if rest:
                    click.echo(rest, nl=False)
                    line.printed(rest)
                if (printed or rest) and not line.ended:
                    click.echo("")
                return item
            item = renumbering.feed(item) if renumbering else item
            click.echo(item, nl=False)
            sys.stdout.flush()
            line.printed(item)
            printed = printed or bool(item)
    except BaseException:
        if printed:
            click.echo("")
        raise
    raise TgrError("the answer ended before it was complete")


class _Shown:
    """How tgr chat prints, as tgr ask does (handed to tgr.adapters.terminal_chat)."""

    def __init__(self, stores: tuple[str, ...], conn):
        self.stores, self.conn, self._renumbering = stores, conn, None
        self.text_line = _OpenLine()  # a warning said while an answer streams gets a line of its own

    def streamed(self, items) -> "Answer":
        """Print an answer as it is written, its citations numbered as they arrive."""
        from .query.citations import Renumbering

        self._renumbering = Renumbering()
        self.text_line.open = self.text_line.ended = False
        return _streamed(items, self._renumbering, self.text_line)

    def answer(self, result, mode: str, level: int, streamed: bool) -> None:
        """The answer (unless streamed: printed already) and what its citations name."""
        _print_answer(result, self.stores, self.conn, self._renumbering if streamed else None, mode, level)
        self._renumbering = None

    @staticmethod
    def line(text: str = "", err: bool = False) -> None:
        click.echo(_one_line(text) if err else text, err=err)

    @staticmethod
    def source(source: dict) -> str:
        """One passage of the context, on one line: where it is (the chunk id for tgr show) and how it starts."""
        from .query.citations import source_label

        text = _one_line(source.get("text", ""))
        return f"{source_label(source)}: {text[:160] + '…' if len(text) > 160 else text}"


@main.command("eval")
@click.argument("stores", nargs=-1, required=True, type=_EXISTING_FILE)
@click.argument("questions", type=_EXISTING_FILE)
@click.option("--mode", "modes", type=click.Choice(MODES), multiple=True,
              help="Modes to measure (repeatable; default local and naive).")
@click.option("--limit", type=click.IntRange(1), help="Only the first N questions.")
@click.option("--json", "as_json", is_flag=True, help="Print the results with a row per question.")
@click.option("--strict", is_flag=True, help="Fail (exit 1) when an evidence id names no document of STORE.")
@click.option("--answers", is_flag=True, help="Also answer each question and score the answers against "
              "'answer' / 'answer_aliases': answer hit, context hit (top-5 sources), ask latency.")
def evaluate_store(stores, questions, modes, limit, as_json, strict, answers):
    """Measure retrieval: document recall@2/5/10 of STORE on QUESTIONS (JSONL with
    'question' and 'evidence_doc_ids'); of several stores asked together with STORE... QUESTIONS."""
    from .query.evaluate import KS, evaluate, load_questions, match_evidence

    rows = load_questions(questions)[:limit]
    with _open_stores(stores) as kb:
        matched = match_evidence(kb, rows)
        if matched.problem() and strict:
            raise click.ClickException(_one_line(matched.problem()))
        if matched.problem():
            _warn(matched.problem())
        results = evaluate(kb, rows, modes or ("local", "naive"), matched=matched, warn=_warn, answers=answers)
    store = stores[0] if len(stores) == 1 else " + ".join(stores)
    if as_json:
        click.echo(json.dumps({"store": stores[0] if len(stores) == 1 else list(stores), "questions": len(rows),
                               "evidence": matched.to_dict(), "results": [r.to_dict() for r in results]},
                              ensure_ascii=False, indent=2))
        return
    has_facts = any(r.facts for r in results)
    header = "".join(f"{f'R@{k}':>8}" for k in KS) + "".join(f"{f'all@{k}':>8}" for k in KS)
    header += "".join(f"{f'facts@{k}':>9}" for k in KS) if has_facts else ""
    click.echo(f"{len(rows)} questions, {store}")
    click.echo(f"{'mode':<8}{header}{'median ms':>11}{'p95 ms':>9}")
    for r in results:
        line = "".join(f"{r.recall[k]:>8.3f}" for k in KS) + "".join(f"{r.complete[k]:>8.2f}" for k in KS)
        line += "".join(f"{r.facts[k]:>9.3f}" for k in KS) if r.facts else ("" if not has_facts else " " * 27)
        click.echo(f"{r.mode:<8}{line}{r.latency_ms_median:>11.1f}{r.latency_ms_p95:>9.1f}")
    if answers:
        _print_answer_scores(results)


def _print_answer_scores(results) -> None:
    """The answers table of tgr eval --answers."""
    scored = [r for r in results if r.answers]
    if not scored:
        click.echo("\nanswers: no question has a gold 'answer' to score")
        return
    click.echo(f"\nanswers ({scored[0].answers['questions']} questions with a gold answer)")
    click.echo(f"{'mode':<8}{'answer hit':>11}{'context hit':>12}{'ratio':>7}{'median ms':>11}{'p95 ms':>9}")
    for r in scored:
        a = r.answers
        ratio = f"{a['answer_hit'] / a['context_hit']:>7.2f}" if a["context_hit"] else f"{'-':>7}"
        click.echo(f"{r.mode:<8}{a['answer_hit']:>11.3f}{a['context_hit']:>12.3f}{ratio}"
                   f"{a['ask_ms_median']:>11.1f}{a['ask_ms_p95']:>9.1f}")


@main.command()
@click.argument("store", type=_EXISTING_FILE)
@click.argument("documents", nargs=-1, required=True)
@_model_options
@click.option("--dry-run", is_flag=True, help="List the documents that would be deleted, and stop.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def delete(store, documents, chat_model, embed_model, base_url, offline, concurrency, rpm, timeout, retries,
           dry_run, as_json, quiet):
    """Delete DOCUMENTS (paths, titles or document ids) from STORE, and all that came only from them."""
    with _open(store, create=False, chat_model=chat_model, embed_model=embed_model, base_url=base_url,
               offline=offline, concurrency=concurrency, rpm=rpm, timeout=timeout, retries=retries,
               readonly=dry_run) as kb:
        with _progress(quiet) as progress:
            summary = kb.delete(documents, dry_run=dry_run, progress=progress)
    if as_json:
        click.echo(json.dumps(summary.to_dict(), indent=2, ensure_ascii=False))
        return
    verb = "would delete" if dry_run else "deleted"
    for source in summary.documents_removed:
        click.echo(f"{verb} {terminal_safe(source)}")
    if not dry_run:
        levels = ", ".join(f"L{k}: {v}" for k, v in summary.communities.items()) or "none"
        click.echo(f"left: {summary.documents} documents, {summary.chunks} chunks, {summary.entities} entities, "
                   f"{summary.relationships} relationships, communities {levels}, {summary.reports} reports; "
                   f"{summary.model_calls} model calls, {summary.wall_s:.1f} s")


@main.command()
@click.argument("store", type=_EXISTING_FILE)
@click.option("--json", "as_json", is_flag=True)
def info(store, as_json):
    """Counts, models, settings, levels and size of STORE."""
    with KnowledgeBase(store, create=False, readonly=True) as kb:
        _print_mapping(kb.info(), as_json)


@main.command()
@click.argument("store", type=_EXISTING_FILE)
@click.option("--json", "as_json", is_flag=True)
def stats(store, as_json):
    """The cost ledger: model calls and tokens per stage and per run."""
    with KnowledgeBase(store, create=False, readonly=True) as kb:
        data = kb.stats()
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"{'stage':<18}{'kind':<7}{'calls':>7}{'hits':>7}{'prompt tok':>12}{'compl tok':>11}{'model s':>9}"
               f"{'billed tok':>12}")
    for row in data["by_stage"]:
        click.echo(f"{row['stage']:<18}{row['kind']:<7}{row['calls']:>7}{row['cache_hits']:>7}"
                   f"{row['prompt_tokens']:>12}{row['completion_tokens']:>11}{row['model_seconds']:>9}"
                   f"{row['billed_tokens']:>12}")
    click.echo("")
    click.echo(f"{'run':<5}{'command':<22}{'status':<12}{'wall s':>8}{'calls':>7}{'hits':>7}{'prompt tok':>12}"
               f"{'billed tok':>12}")
    for run in data["runs"]:
        click.echo(f"{run['run']:<5}{run['command']:<22}{run['status']:<12}{(run['wall_s'] or 0):>8.1f}"
                   f"{run['calls']:>7}{run['cache_hits']:>7}{run['prompt_tokens']:>12}{run['billed_tokens']:>12}")
    click.echo("billed tok: prompt + completion tokens, each call at its price (a Batch API call: half)")


@main.command()
@click.argument("store", type=_EXISTING_FILE)
@click.argument("output", type=click.Path(dir_okay=False, writable=True))
@click.option("--level", type=click.IntRange(0), default=0, show_default=True,
              help="Community level the page colours entities by (.html).")
@click.option("--top", type=click.IntRange(1), default=DEFAULT_TOP, show_default=True,
              help="Hubs the page labels at most in its overview (.html); more names appear as you zoom.")
def export(store, output, level, top):
    """Write STORE's graph to OUTPUT: .graphml (Gephi, Cytoscape, networkx; the community
    hierarchy as node attributes), .json (nodes, edges, communities, reports) or .html
    (one self-contained page: graph, search, and each entity's report and sources)."""
    export_format(output)  # an unknown suffix fails before the store is read
    with KnowledgeBase(store, create=False, readonly=True) as kb:
        done = kb.export(output, level=level, top=top, title=os.path.basename(store))
    click.echo(f"wrote {done['entities']} entities, {done['relationships']} relationships, "
               f"{done['communities']} communities and {done['reports']} reports to {output} ({done['format']})")


@main.command("mcp")
@click.argument("stores", nargs=-1, required=True, type=_EXISTING_FILE)
@_model_options
def mcp_command(stores, chat_model, embed_model, base_url, offline, concurrency, rpm, timeout, retries):
    """Serve STORE (or several: one fused ranking) read-only to MCP clients (agents) over stdio:
    ask, retrieve, entity, communities, community_report. Needs the extra: pip install 'tgr[mcp]'."""
    from .adapters.mcp_server import serve

    serve(lambda: _open_stores(stores, chat_model=chat_model, embed_model=embed_model, base_url=base_url,
                               offline=offline, concurrency=concurrency, rpm=rpm, timeout=timeout, retries=retries))


@main.command()
@click.argument("store", type=_EXISTING_FILE)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=8001, show_default=True)
@click.option("--get", "get_path", metavar="PATH", help="Answer one request (e.g. /store/chunks.json?_search=x) and exit.")
def serve(store, host, port, get_path):
    """Browse STORE in Datasette (read-only, sqlite-vec loaded, chunks searchable).
    Needs the extra: pip install 'tgr[serve]'."""
    from .adapters.datasette import check_installed, run_datasette

    check_installed()
    with KnowledgeBase(store, create=False, readonly=True) as kb:
        meta = kb.datasette_metadata(store)
    sys.exit(run_datasette(store, meta, host=host, port=port, get=get_path))


@main.command()
@click.argument("store", type=_EXISTING_FILE)
@click.argument("stage", type=click.Choice(["graph", "embeddings", "communities", "reports"]))
@_model_options
@click.option("--max-cluster-size", type=click.IntRange(2))
@click.option("--add", "add", metavar="LOCAL_MODEL",
              help="With 'embeddings': keep portable vectors of this local embedder (local:multilingual-e5-small) "
                   "beside the store's own, for recipients who cannot reach its embedder.")
@_context_option
@_prompt_options
@click.option("-q", "--quiet", is_flag=True)
def rebuild(store, stage, chat_model, embed_model, base_url, offline, concurrency, rpm, timeout, retries,
            max_cluster_size, add, context_tokens, entity_types, prompts_file, quiet):
    """Rebuild one derived STAGE of STORE from what the file holds (with the prompts it records)."""
    if add is not None and (stage != "embeddings" or max_cluster_size or entity_types or embed_model):
        raise click.UsageError("--add goes with the embeddings stage alone (it adds portable vectors)")
    with _open(store, create=False, chat_model=chat_model, embed_model=embed_model, base_url=base_url,
               offline=offline, concurrency=concurrency, rpm=rpm, timeout=timeout, retries=retries,
               prompts_file=prompts_file, context_tokens=context_tokens) as kb:
        with _progress(quiet) as progress:
            if add is not None:
                summary = kb.rebuild(stage, progress=progress, add=add)
                click.echo(f"added portable {add} vectors: {summary.wall_s:.1f} s")
                return
            summary = kb.rebuild(stage, progress=progress, max_cluster_size=max_cluster_size,
                                 entity_types=_entity_types(entity_types))
    click.echo(f"rebuilt {stage}: {summary.entities} entities, {summary.relationships} relationships, "
               f"{sum(summary.communities.values())} communities, {summary.reports} reports, "
               f"{summary.model_calls} model calls, {summary.wall_s:.1f} s")


@main.command()
@click.argument("store", type=_EXISTING_FILE)
@click.argument("ident", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print it as JSON.")
def show(store, ident, as_json):
    """Print what an answer cites: a chunk (by id), a community's report (e.g. 0.3) or an entity
    (by id or name, with aliases, type and relationships). Exit 1 when STORE has no such thing."""
    from .query.citations import describe

    with _open(store, create=False, readonly=True) as kb:
        item = kb.show(ident)
    if as_json:
        click.echo(json.dumps(item, indent=2, ensure_ascii=False))
    else:
        click.echo("\n".join(describe(item)))
    if not item["found"]:
        sys.exit(1)


@main.command()
@click.argument("store", type=_EXISTING_FILE)
@click.option("--fix", is_flag=True, help="Fold a pending write-ahead log into the .db and remove -wal/-shm.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict and every finding as JSON.")
@click.option("--digest", "print_digest", is_flag=True,
              help="Print the verified content digest (to publish next to the file), like sha256sum.")
def check(store, fix, as_json, print_digest):
    """Explain what is wrong with STORE. Exit 0: a complete store; 1: unfinished (one line each on
    what `tgr index STORE` will do); 2: not a tgr store, hostile or damaged, or its content is not
    the content its last build recorded (content digest)."""
    from .build.check import EXIT_CODES, examine, fix as finish, verdict

    problems, digest = examine(store)
    done = []
    if fix and verdict(problems) != "refused":  # nothing in a refused file is touched
        done = finish(store)
        problems, digest = examine(store)
    status = verdict(problems)
    if as_json:
        click.echo(json.dumps({"store": store, "status": status, "exit_code": EXIT_CODES[status], "fixed": done,
                               "content_digest": digest if status == "complete" else None,
                               "problems": [{"severity": p.severity, "message": p.message} for p in problems]},
                              indent=2, ensure_ascii=False))
        sys.exit(EXIT_CODES[status])
    if print_digest and status == "complete":
        click.echo(f"{digest}  {store}")
        sys.exit(0)
    for line in done:
        click.echo(f"fixed      {line}")
    for problem in problems:
        click.echo(f"{problem.severity:<11}{_one_line(problem.message)}")
    if status == "complete":
        click.echo(f"ok         {store} is a complete tgr store; nothing in it is unexpected")
    sys.exit(EXIT_CODES[status])


def _print_answer(result, stores: tuple[str, ...], conn, streamed, mode: str, level: int) -> None:
    """An answer as tgr ask and tgr chat print it: its text and citations (see _print_cited),
    and in global mode how many reports were considered."""
    _print_cited(result, stores, conn, streamed)
    if result.reports and mode == "global":
        click.echo(f"\nReports considered: {len(result.reports)} at level {level}")


def _print_cited(result, stores: tuple[str, ...], conn=None, streamed=None) -> None:
    """The answer with its citations numbered 1..N (unless streamed: printed already by that
    Renumbering), and what each number names (tgr.query.citations); an answer that cites
    nothing lists its first sources."""
    from .query.citations import numbered, source_label

    if streamed is None:
        text, cited = numbered(result, conn)
        click.echo(text)
    else:
        cited = streamed.cited(result, conn)
    if result.answer.startswith("I don't know") or not (cited or result.sources):
        return
    # one heading whoever wrote the answer (a model or tgr offline), whether it cites or not
    click.echo("\nSources:" if cited else "\nSources: (the answer cites none; the passages it was given, best first)")
    for n, c in enumerate(cited, 1):
        click.echo(f"  [{n}] {c.label}")
    if not cited:
        for n, s in enumerate(result.sources[:5], 1):
            click.echo(f"  [{n}] {source_label(s)}")
    if len(stores) == 1:
        ids = [c.id for c in cited] or [s["chunk_id"] for s in result.sources[:1]]
        click.echo(f"  (tgr show {stores[0]} ID prints one, e.g. tgr show {stores[0]} {ids[0]}; "
                   f"{len(result.sources)} passages in the context, --json lists them all)")


def _print_mapping(data: dict, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    width = max((len(key) for key in data), default=0) + 2  # the values in one column
    for key, value in data.items():
        if key == "levels":
            value = "; ".join(f"L{level}: {v['communities']} communities, {v['reports']} reports"
                              for level, v in value.items()) or "none"
        elif key == "size_bytes":
            key, value = "size", f"{value / 1e6:.1f} MB"
        elif isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
        click.echo(f"{key:<{width}}{value}")


def run() -> None:
    """Console entry point: like main(), but quiet when the output pipe closes (| head)."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()


if __name__ == "__main__":
    run()
