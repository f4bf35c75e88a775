"""`tgr serve`: browse a store in Datasette (extra tgr[serve]), with sqlite-vec loaded and
metadata that names the full-text index, the entity labels and the vec0 internals to hide.

Datasette runs in its own process: it uses pysqlite3 (a SQLite that can load extensions and
reads every table of a tgr store), which must not share a process with tgr's sqlean driver.
Datasette opens the file read-only.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import sqlite_vec

from ..store.db import Connection
from ..errors import TgrError

INSTALL = "pip install 'tgr[serve]'"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_installed() -> None:
    """TgrError naming the extra when Datasette or pysqlite3 is missing."""
    missing = [m for m in ("datasette", "pysqlite3") if not _installed(m)]
    if missing:
        raise TgrError(f"tgr serve needs {' and '.join(missing)} (Datasette, and a SQLite that can load "
                       f"sqlite-vec): {INSTALL}")


def metadata(conn: Connection, store: str | Path) -> dict:
    """Datasette metadata for the store: full-text search on chunks, labels, hidden vec0 shadows."""
    name = Path(store).stem
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    # vec0 keeps each table's data in shadow tables named <table>_chunks, _rowids, _info, ...
    vec = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                      "AND sql LIKE 'CREATE VIRTUAL TABLE%USING vec0%' ORDER BY name")]
    config: dict[str, dict] = {}
    if "chunks_fts" in tables:
        config["chunks"] = {"fts_table": "chunks_fts", "fts_pk": "seq", "label_column": "id",
                            "description": "Search matches tgr's index terms: lower-cased words, and "
                                           "for Chinese character bigrams plus jieba words, so a word "
                                           "is typed as is (花果山, not 花 果 山)."}
    config["entities"] = {"label_column": "name", "sort_desc": "degree"}
    config["documents"] = {"label_column": "title"}
    for table in tables:
        if any(table.startswith(v + "_") for v in vec):
            config[table] = {"hidden": True}
    return {"title": f"tgr store {name}",
            "description": "A tgr GraphRAG store: start with entity_overview, relationship_overview "
                           "and report_overview, or search chunks.",
            "databases": {name: {"tables": config}}}


def datasette_command(store: str | Path, metadata_path: str | Path, *, host: str = "127.0.0.1",
                      port: int = 8001, get: str | None = None) -> list[str]:
    """The command line that starts Datasette on the store (or, with get, answers one request)."""
    command = [sys.executable, "-m", "datasette", "serve", str(store),
               "--load-extension", sqlite_vec.loadable_path(), "--metadata", str(metadata_path)]
    if get:
        return command + ["--get", get]
    return command + ["--host", host, "--port", str(port)]


def run_datasette(store: str | Path, meta: dict, *, host: str = "127.0.0.1", port: int = 8001,
                  get: str | None = None) -> int:
    """Run Datasette on the store until it exits; returns its exit status. Ctrl-C, SIGTERM or
    SIGHUP to tgr stops Datasette too (status 128 + the signal), and the temporary metadata
    folder is removed."""
    with tempfile.TemporaryDirectory(prefix="tgr-serve-") as tmp:
        path = Path(tmp) / "metadata.json"
        path.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
        process = None
        with _signals_raise(STOP_SIGNALS):
            try:
                process = subprocess.Popen(datasette_command(store, path, host=host, port=port, get=get))
                return process.wait()
            except _Stopped as stopped:
                return _stop(process, stopped.signum)


# The signals that end `tgr serve` and, through it, Datasette (SIGHUP: the terminal closed).
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class _Stopped(Exception):
    """tgr serve received a signal asking it to end."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _signals_raise(signums):
    """Within the block, the first of these signals raises _Stopped (later ones are ignored while
    Datasette stops), instead of ending tgr at once: that would leave Datasette running with its
    parent gone, and the temporary folder behind."""
    def stopped(signum, frame):
        for s in signums:
            signal.signal(s, signal.SIG_IGN)
        raise _Stopped(signum)

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = {s: signal.signal(s, stopped) for s in signums}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stop(process: subprocess.Popen | None, signum: int, grace: float = 10.0) -> int:
    """End Datasette (politely, then for good after `grace` seconds); the shell's 128 + signal."""
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return 128 + signum
