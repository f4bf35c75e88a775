"""`tgr check`: explain what is wrong with a store file, and finish an incomplete one.

Reading is done the defended way (tgr/store/hardening.py) without refusing, so that a hostile or
damaged file can be described; nothing in the file runs and nothing is written unless fix.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..ingest import corpus
from ..store import db, integrity, schema_check as schemacheck, opening as storefile
from ..errors import StoreError
from ..store.size_limits import meta_problems
from ..store.untrusted_text import terminal_safe as safe_text
from ..settings import IndexSettings


@dataclass(frozen=True)
class Problem:
    severity: str   # 'refused' (tgr will not use it), 'unfinished' (`tgr index STORE` or --fix
    message: str    # completes it), 'note' (worth knowing; the store is complete)


EXIT_CODES = {"complete": 0, "unfinished": 1, "refused": 2}


def verdict(problems: list[Problem]) -> str:
    """'refused' (not a store, hostile or damaged: exit 2), 'unfinished' (exit 1) or 'complete' (0)."""
    severities = {p.severity for p in problems}
    return "refused" if "refused" in severities else "unfinished" if "unfinished" in severities else "complete"


def diagnose(path: str | os.PathLike) -> list[Problem]:
    """Everything tgr notices about the file at path, worst first; [] means healthy."""
    return examine(path)[0]


def examine(path: str | os.PathLike) -> tuple[list[Problem], str | None]:
    """diagnose()'s problems, and the content digest of a file SQLite finds intact (else None)."""
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"{path}: no such file")
    problems: list[Problem] = []
    digest: list[str] = []
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        problems.append(Problem("unfinished", f"a write-ahead log ({wal.name}, {wal.stat().st_size} bytes) "
                                              "is not folded into the .db; a copy of the .db alone would "
                                              "miss it (`tgr check --fix` folds it in)"))
    elif db.pending_wal(path):
        problems.append(Problem("unfinished", "leftover -wal/-shm files next to the store "
                                              "(`tgr check --fix` removes them)"))
    conn = db.open_file(path, readonly=True)
    reading = "its schema"  # what was being read, for an SQLite error's line
    try:
        findings = schemacheck.inspect(conn)
        problems += [Problem("refused" if f.fatal else "note", f.message) for f in findings]
        if any(f.fatal for f in findings):
            return _ordered(problems), None  # reading anything else could run the planted objects
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > db.SCHEMA_VERSION:
            problems.append(Problem("refused", f"written by a newer tgr (schema {version})"))
        elif 0 < version < db.SCHEMA_VERSION:
            problems.append(Problem("note", f"schema {version}; the next index or rebuild upgrades it "
                                            f"to {db.SCHEMA_VERSION}"))
        reading = "its meta table"
        if not db.has_table(conn, "meta") or db.get_meta(conn).get("format") != db.FORMAT_TAG:
            problems.append(Problem("refused", "not a tgr store (no tgr meta table)"))
            return _ordered(problems), None
        unsafe = meta_problems(db.get_meta(conn))
        problems += [Problem("refused", m) for m in unsafe]
        if not unsafe:
            try:
                IndexSettings.from_meta(db.get_meta(conn))
            except StoreError as exc:
                problems.append(Problem("refused", str(exc)))
        reading = "its chunks"
        unindexed = corpus.pending_count(conn)
        if unindexed:
            problems.append(Problem("unfinished", f"{unindexed} chunks are not in the full-text index yet (an "
                                                  "interrupted `tgr index`; `tgr check --fix` or the next index "
                                                  "adds them)"))
        reading = "its pages"
        damage = integrity.page_damage(conn)
        reading = "its full-text index"
        damage = damage or integrity.fts_damage(conn)
        reading = "its vector tables"
        damage = damage or _vector_damage(conn)
        if damage:
            problems.append(Problem("refused", "damaged: " + "; ".join(damage)))
        elif not unsafe:
            reading = "its rows"
            left = [Problem("unfinished", m) for m in _work_left(conn, path)]
            actual, sums_wrong = integrity.verify(conn)
            digest.append(actual)
            problems += left
            problems += _digest_problems(conn, path, digest[0],
                                         work_left=any(p.severity == "unfinished" for p in problems))
            if sums_wrong:  # a next run would build its digest on them
                problems.append(Problem("refused", f"content changed since it was built: {sums_wrong}"))
    except db.DatabaseError as exc:
        problems.append(Problem("refused", f"damaged: SQLite stopped reading {reading} ({exc})"))
    finally:
        conn.close()
    return _ordered(problems), (digest[0] if digest else None)


def _vector_damage(conn: db.Connection) -> list[str]:
    """sqlite-vec tables out of step with the rows they index: a vector the vec0 table cannot
    read back, or a row marked embedded (embed_hash) whose vector is missing."""
    from ..store.vector_rows import TARGETS
    from ..models.clients import embeds

    model = db.get_meta(conn).get("embed_model", "")
    found = []
    for vec_table in (*db.VEC_TABLES, *db.PORTABLE_TABLES.values()):
        if db.has_table(conn, vec_table):
            listed = conn.execute(f"SELECT count(*) FROM {vec_table}_rowids").fetchone()[0]
            readable = conn.execute(f"SELECT count(vec_length(embedding)) FROM {vec_table}").fetchone()[0]
            if readable != listed:
                found.append(f"{vec_table} lists {listed} vectors and reads back {readable}")
    for kind, (vec_table, table, key, _) in TARGETS.items():
        if db.has_table(conn, vec_table) and embeds(kind, model):
            missing = conn.execute(f"SELECT count(*) FROM {table} t WHERE embed_hash IS NOT NULL AND NOT EXISTS "
                                   f"(SELECT 1 FROM {vec_table}_rowids v WHERE v.id = t.{key})").fetchone()[0]
            if missing:
                found.append(f"{missing} {kind} are marked embedded and have no vector in {vec_table}")
    return found


def _digest_problems(conn: db.Connection, path: Path, actual: str, work_left: bool) -> list[Problem]:
    """The recorded content digest against the content's (the file itself passed every check).
    A build removes the digest when it starts and records it when it ends: no digest is an
    unfinished build (said already when work_left) or a store from a tgr before digests."""
    recorded = integrity.recorded_digest(conn)
    if recorded is None and conn.execute("PRAGMA user_version").fetchone()[0] < db.SCHEMA_VERSION:
        return []  # an older tgr's store, said in a note; the next index or rebuild records one
    if recorded is None:
        return [] if work_left else [Problem(
            "unfinished", "no content digest recorded (a build did not finish, or a tgr before digests "
                          f"built it); `tgr index {path}` or `tgr check --fix {path}` records one")]
    if actual != recorded:
        return [Problem("refused", f"content changed since it was built: the file is intact (SQLite's "
                                   f"integrity checks pass) but its content digest is {actual}, "
                                   f"not the recorded {safe_text(recorded)}")]
    return []


def _work_left(conn: db.Connection, path: Path) -> list[str]:
    """What an interrupted run left undone, each as what `tgr index STORE` will do about it
    (answers are still right, from what is there)."""
    count = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    chunks = count("SELECT count(*) FROM chunks")
    pending = count("SELECT count(*) FROM chunks c WHERE NOT EXISTS "
                    "(SELECT 1 FROM extractions x WHERE x.chunk_id = c.id)")
    left = []
    if pending:
        left.append(f"{pending} of {chunks} chunks are not extracted yet (an interrupted index); "
                    f"`tgr index {path}` finishes them")
    changed = count("SELECT count(*) FROM merge_pending") if db.has_table(conn, "merge_pending") else 0
    if changed:
        left.append(f"{changed} entity names changed since the graph was last merged; "
                    f"`tgr index {path}` brings the graph, communities and reports up to date")
    jobs = count("SELECT count(*) FROM batch_jobs WHERE outcome IS NULL") if db.has_table(conn, "batch_jobs") else 0
    if jobs:
        left.append(f"{jobs} Batch API jobs are submitted and not collected yet; `tgr index {path}` waits "
                    "for them and goes on")
    left += _stale_stages(conn, path, chunks, bool(changed))
    unembedded = {table: count(f"SELECT count(*) FROM {table} WHERE embed_hash IS NULL")
                  for table in ("chunks", "entities", "reports")}
    if any(unembedded.values()):
        rows = ", ".join(f"{n} {table}" for table, n in unembedded.items() if n)
        left.append(f"no vector yet for {rows}; `tgr index {path}` computes them")
    left += _portable_left(conn, path)
    return left


def _stale_stages(conn: db.Connection, path: Path, chunks: int, merge_pending: bool) -> list[str]:
    """Derived stages whose recorded inputs are not the store's current ones."""
    from . import stage_inputs as freshness

    if not chunks or merge_pending:  # nothing built yet, or said above already
        return []
    merge, cluster, reports = (freshness.recorded(conn, stage) for stage in ("merge", "cluster", "reports"))
    entities = conn.execute("SELECT count(*) FROM entities").fetchone()[0]
    if entities and (merge is None or cluster is None):
        return [f"the graph has no communities yet; `tgr index {path}` clusters it and writes the reports"]
    if entities and not (reports or "").endswith(f":{merge}:{cluster}"):
        return [f"the community reports are not up to date with the graph; `tgr index {path}` rewrites "
                "those whose communities changed"]
    return []


def _portable_left(conn: db.Connection, path: Path) -> list[str]:
    """Rows with no portable vector in a store that keeps them (tgr.portable)."""
    from ..store.vector_rows import TARGETS
    from ..models.clients import embeds

    model = db.get_meta(conn).get(db.PORTABLE_MODEL_KEY)
    if not model:
        return []
    missing = {}
    for kind, table in db.PORTABLE_TABLES.items():
        if not embeds(kind, model):
            continue
        key = TARGETS[kind][2]
        have = (f"EXISTS (SELECT 1 FROM {table} v WHERE v.id = t.{key})" if db.has_table(conn, table) else "0")
        missing[kind] = conn.execute(f"SELECT count(*) FROM {kind} t WHERE NOT {have}").fetchone()[0]
    if not any(missing.values()):
        return []
    rows = ", ".join(f"{n} {kind}" for kind, n in missing.items() if n)
    return [f"no portable {safe_text(model)} vector yet for {rows}; `tgr index {path}` computes them"]


def _ordered(problems: list[Problem]) -> list[Problem]:
    rank = {"refused": 0, "unfinished": 1, "note": 2}
    return sorted(problems, key=lambda p: rank[p.severity])


def fix(path: str | os.PathLike) -> list[str]:
    """Finish an incomplete store (add chunks missing from the full-text index, fold in its WAL,
    remove leftover -wal/-shm); returns what was done.

    Refuses a store that tgr would refuse anyway: nothing in a hostile file is touched.
    """
    path = Path(path)
    problems = diagnose(path)
    refused = [p for p in problems if p.severity == "refused"]
    if refused:
        raise StoreError(f"{path}: not fixing a store tgr refuses: {refused[0].message}")
    leftovers = db.pending_wal(path)
    if not leftovers and not any(p.severity == "unfinished" for p in problems):
        return []
    if not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK):
        raise StoreError(f"{path}: cannot finish a read-only store")
    done = []
    conn = storefile.connect(path, create=False, upgrade=False)
    try:
        indexed = corpus.index_pending(conn)
        if indexed:
            done.append(f"added {indexed} chunks to the full-text index")
        if indexed or integrity.recorded_digest(conn) is None:
            done.append(f"recorded the content digest {integrity.record_digest(conn)}")
        if not db.settle(conn):
            raise StoreError(f"{path}: another process is still reading the store; run "
                             f"`tgr check --fix {path}` again once it is done")
    finally:
        conn.close()
    for leftover in db.pending_wal(path):  # the file is in rollback-journal mode now: unused
        leftover.unlink()
    if leftovers:
        done.append(f"folded {', '.join(p.name for p in leftovers)} into {path.name}")
    return done
