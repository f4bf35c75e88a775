"""The tgr command line: parse arguments, call one library function, print the result."""
from __future__ import annotations

import json
import os
import re
import signal
import sys

import click

from . import __version__
from .db import DatabaseError
from .errors import TgrError
from .query import MODES
from .safe import terminal_safe
from .store import KnowledgeBase


def _model_options(fn):
    options = [
        click.option("--chat-model", help="zhipuai:NAME, openai:NAME (with --base-url) or 'offline'."),
        click.option("--embed-model", help="zhipuai:embedding-3, openai:NAME or tgr:hash-384."),
        click.option("--base-url", envvar="TGR_BASE_URL", help="OpenAI-compatible endpoint (Ollama, vLLM, ...)."),
        click.option("--offline", is_flag=True, help="Ignore any API key: heuristic/extractive default."),
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


def _open(path: str, *, create: bool, chat_model=None, embed_model=None, base_url=None, offline=False,
          concurrency=8, rpm=None, timeout=120.0, retries=6, readonly=False) -> KnowledgeBase:
    if offline:  # no model at all: extractive answers and the offline embedder
        chat_model, embed_model = "offline", embed_model or "tgr:hash-384"
    return KnowledgeBase(path, chat=chat_model, embedder=embed_model, base_url=base_url,
                         concurrency=concurrency, rpm=rpm, timeout=timeout, max_retries=retries,
                         create=create, readonly=readonly)


class _Bars:
    """One progress bar per stage, drawn on stderr."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.stage = None
        self.bar = None
        self.done = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.quiet:
            return
        if stage != self.stage:
            self.close()
            if total == 0:
                return
            self.stage, self.done = stage, 0
            self.bar = click.progressbar(length=total, label=f"{stage:<16}", file=sys.stderr,
                                         show_pos=True, width=30)
            self.bar.__enter__()
        if self.bar is not None and done > self.done:
            self.bar.update(done - self.done)
            self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
        self.bar, self.stage = None, None


class _Group(click.Group):
    """Turns tgr's own errors and Ctrl-C into one line on stderr and a non-zero exit."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\ninterrupted: everything finished so far is saved in the store; "
                       "run the same command again to resume", err=True)
            ctx.exit(130)
        except (TgrError, ValueError, OSError, DatabaseError) as exc:
            raise click.ClickException(str(exc)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tgr")
def main() -> None:
    """tgr: a GraphRAG knowledge store in one SQLite file."""


@main.command()
@click.argument("store", type=click.Path(dir_okay=False))
@click.argument("paths", nargs=-1, required=True)
@_model_options
@click.option("--chunk-size", type=click.IntRange(16), help="Tokens per chunk (new stores; default 1200).")
@click.option("--chunk-overlap", type=click.IntRange(0), help="Tokens shared by neighbouring chunks (default 100).")
@click.option("--two-step", is_flag=True, default=None, help="Seed-style extraction: entities, then triplets.")
@click.option("--gleanings", type=click.IntRange(0, 5), help="Extra extraction rounds per chunk (default 0).")
@click.option("--disambiguate", is_flag=True, default=None, help="Ask the LLM about same-name entities.")
@click.option("--max-cluster-size", type=click.IntRange(2), help="Split communities larger than this (default 10).")
@click.option("--seed", type=int, help="Leiden seed (default 42).")
@click.option("--estimate", is_flag=True, help="Print expected model calls and tokens, and stop.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def index(store, paths, chat_model, embed_model, base_url, offline, concurrency, rpm, timeout, retries, chunk_size,
          chunk_overlap, two_step, gleanings, disambiguate, max_cluster_size, seed, estimate, as_json, quiet):
    """Index documents (files, directories, '-' for stdin) into STORE."""
    settings = dict(chunk_size=chunk_size, chunk_overlap=chunk_overlap, two_step=two_step,
                    gleanings=gleanings, disambiguate=disambiguate, max_cluster_size=max_cluster_size, seed=seed)
    target = ":memory:" if estimate and not os.path.exists(store) else store  # estimating writes nothing
    with _open(target, create=True, chat_model=chat_model, embed_model=embed_model, base_url=base_url,
               offline=offline, concurrency=concurrency, rpm=rpm, timeout=timeout, retries=retries) as kb:
        if estimate:
            result = kb.estimate(paths, **settings)
            _print_mapping(result, as_json)
            return
        bars = _Bars(quiet)
        try:
            summary = kb.index(paths, progress=bars, warn=lambda m: click.echo(f"warning: {m}", err=True),
                               **settings)
        finally:
            bars.close()
        if as_json:
            click.echo(json.dumps(summary.to_dict(), indent=2, ensure_ascii=False))
            return
        levels = ", ".join(f"L{k}: {v}" for k, v in summary.communities.items()) or "none"
        click.echo(f"documents      {summary.documents} ({summary.documents_added} new)")
        click.echo(f"chunks         {summary.chunks} ({summary.chunks_extracted} extracted now)")
        click.echo(f"entities       {summary.entities}")
        click.echo(f"relationships  {summary.relationships}")
        click.echo(f"communities    {levels}")
        click.echo(f"reports        {summary.reports}")
        by_stage = ", ".join(f"{k} {v}" for k, v in summary.calls_by_stage.items() if v) or "none"
        click.echo(f"model calls    {summary.model_calls} ({by_stage}); cache hits {summary.cache_hits}")
        click.echo(f"tokens         {summary.prompt_tokens} prompt, {summary.completion_tokens} completion")
        click.echo(f"wall time      {summary.wall_s:.1f} s")


@main.command()
@click.argument("store", type=click.Path(dir_okay=False))
@click.argument("question")
@click.option("--mode", type=click.Choice(MODES), default="local", show_default=True)
@click.option("--level", type=click.IntRange(0), default=0, show_default=True, help="Community level (global).")
@click.option("--top-k", type=click.IntRange(1, 4096), default=10, show_default=True, help="Entities / chunks retrieved.")
@click.option("--context-only", is_flag=True, help="Print the retrieved context; no LLM call.")
@click.option("--json", "as_json", is_flag=True, help="Print the structured result as JSON.")
@_model_options
def ask(store, question, mode, level, top_k, context_only, as_json, chat_model, embed_model, base_url,
        offline, concurrency, rpm, timeout, retries):
    """Answer QUESTION from STORE."""
    with _open(store, create=False, chat_model=chat_model, embed_model=embed_model, base_url=base_url,
               offline=offline, concurrency=concurrency, rpm=rpm, timeout=timeout, retries=retries,
               readonly=True) as kb:
        result = kb.ask(question, mode, context_only=context_only, level=level, top_k=top_k)
    if as_json:
        click.echo(result.to_json())
    elif context_only:
        click.echo(result.context)
    else:
        click.echo(result.answer)
        if result.sources and not result.answer.startswith("I don't know"):
            cited = _cited_sources(result.answer)
            shown = [s for s in result.sources if s["ref"] in cited] or result.sources[:5]
            click.echo("\nSources:")
            for s in shown:
                click.echo(f"  [{s['ref']}] {_document_name(s)} (chunk {s['ordinal']}, {s['chunk_id']})")
            if len(shown) < len(result.sources):
                click.echo(f"  ({len(result.sources)} passages in the context; --json lists them all)")
        if result.reports and mode == "global":
            click.echo(f"\nReports considered: {len(result.reports)} at level {level}")


@main.command()
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True)
def info(store, as_json):
    """Counts, models, settings, levels and size of STORE."""
    with KnowledgeBase(store, create=False, readonly=True) as kb:
        _print_mapping(kb.info(), as_json)


@main.command()
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True)
def stats(store, as_json):
    """The cost ledger: model calls and tokens per stage and per run."""
    with KnowledgeBase(store, create=False, readonly=True) as kb:
        data = kb.stats()
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"{'stage':<18}{'kind':<7}{'calls':>7}{'hits':>7}{'prompt tok':>12}{'compl tok':>11}{'model s':>9}")
    for row in data["by_stage"]:
        click.echo(f"{row['stage']:<18}{row['kind']:<7}{row['calls']:>7}{row['cache_hits']:>7}"
                   f"{row['prompt_tokens']:>12}{row['completion_tokens']:>11}{row['model_seconds']:>9}")
    click.echo("")
    click.echo(f"{'run':<5}{'command':<22}{'status':<12}{'wall s':>8}{'calls':>7}{'hits':>7}{'prompt tok':>12}")
    for run in data["runs"]:
        click.echo(f"{run['run']:<5}{run['command']:<22}{run['status']:<12}{(run['wall_s'] or 0):>8.1f}"
                   f"{run['calls']:>7}{run['cache_hits']:>7}{run['prompt_tokens']:>12}")


@main.command()
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.argument("output", type=click.Path(dir_okay=False, writable=True))
def export(store, output):
    """Write STORE's entity graph to OUTPUT as GraphML (for Gephi, Cytoscape, networkx)."""
    import networkx as nx

    with KnowledgeBase(store, create=False, readonly=True) as kb:
        graph = kb.graph()
    nx.write_graphml(graph, output)
    click.echo(f"wrote {graph.number_of_nodes()} entities and {graph.number_of_edges()} relationships to {output}")


@main.command()
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.argument("stage", type=click.Choice(["graph", "embeddings", "communities", "reports"]))
@_model_options
@click.option("--max-cluster-size", type=click.IntRange(2))
@click.option("-q", "--quiet", is_flag=True)
def rebuild(store, stage, chat_model, embed_model, base_url, offline, concurrency, rpm, timeout, retries,
            max_cluster_size, quiet):
    """Rebuild one derived STAGE of STORE from what the file holds."""
    with _open(store, create=False, chat_model=chat_model, embed_model=embed_model, base_url=base_url,
               offline=offline, concurrency=concurrency, rpm=rpm, timeout=timeout, retries=retries) as kb:
        bars = _Bars(quiet)
        try:
            summary = kb.rebuild(stage, progress=bars, max_cluster_size=max_cluster_size)
        finally:
            bars.close()
    click.echo(f"rebuilt {stage}: {summary.entities} entities, {summary.relationships} relationships, "
               f"{sum(summary.communities.values())} communities, {summary.reports} reports, "
               f"{summary.model_calls} model calls, {summary.wall_s:.1f} s")


def _document_name(source: dict) -> str:
    """The file, and the document's own id or the PDF page where a passage has one."""
    name = source["source"]
    if source.get("external_id"):
        name += f" id {source['external_id']}"
    if source.get("page"):
        name += f" p. {source['page']}"
    return terminal_safe(name)  # the store may come from anyone


def _cited_sources(answer: str) -> set[int]:
    """The source refs an answer cites as [Sources: 1, 3] (or [Data: Sources (1, 3)])."""
    cited = set()
    for group in re.findall(r"Sources?\s*[:(]\s*([\d,\s+]+)", answer):
        cited.update(int(n) for n in re.findall(r"\d+", group))
    return cited


def _print_mapping(data: dict, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    for key, value in data.items():
        if key == "levels":
            value = "; ".join(f"L{level}: {v['communities']} communities, {v['reports']} reports"
                              for level, v in value.items()) or "none"
        elif key == "size_bytes":
            key, value = "size", f"{value / 1e6:.1f} MB"
        elif isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        click.echo(f"{key:<18}{value}")


def run() -> None:
    """Console entry point: like main(), but quiet when the output pipe closes (| head)."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()


if __name__ == "__main__":
    run()
