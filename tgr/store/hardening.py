"""Open a store file as untrusted input: SQLite's "defense against the dark arts".

- `trusted_schema = OFF`: views, triggers, defaults and generated columns in the file cannot
  call functions with side effects or virtual tables not marked innocuous.
- SQLITE_DBCONFIG_DEFENSIVE: no writable_schema, no direct writes to shadow tables.
- Limits on string length, SQL length and expression depth.
- A watchdog (progress handler) that stops any statement running longer than a bound, so a
  view over an endless recursive CTE or a runaway trigger cannot hang tgr.

Python 3.12+ drivers expose `setconfig`/`setlimit`; on older ones the same C calls are made
through the driver's own exported SQLite (ctypes), after checking that the handle is right.
Where even that fails, an authorizer forbids `writable_schema`, the part of defensive mode
that matters for a store file.
"""
from __future__ import annotations

import ctypes
import importlib
import os
import sys
import time

import sqlean as sqlite3

from ..errors import StoreError

SQLITE_DBCONFIG_DEFENSIVE = 1010
SQLITE_OK, SQLITE_DENY, SQLITE_PRAGMA = 0, 1, 19
SQLITE_LIMIT_LENGTH = 0
SQLITE_LIMIT_SQL_LENGTH = 1
SQLITE_LIMIT_EXPR_DEPTH = 3
SQLITE_LIMIT_TRIGGER_DEPTH = 10
# A text value larger than this cannot be read or written (documents included).
MAX_VALUE_BYTES = 64 * 1024 * 1024
LIMITS = {
    SQLITE_LIMIT_LENGTH: MAX_VALUE_BYTES,
    SQLITE_LIMIT_SQL_LENGTH: 1_000_000,
    SQLITE_LIMIT_EXPR_DEPTH: 200,
    SQLITE_LIMIT_TRIGGER_DEPTH: 10,
}
# CPU seconds one statement may keep SQLite busy (time spent in Python between fetches is not
# counted). TGR_STATEMENT_SECONDS overrides it, e.g. for slow disks.
DEFAULT_STATEMENT_SECONDS = 30.0
_TICK_OPS = 10_000  # VM instructions between watchdog checks
_PAUSE = 0.25       # a gap longer than this between checks: the caller was busy elsewhere


def statement_seconds() -> float:
    raw = os.environ.get("TGR_STATEMENT_SECONDS")
    try:
        return float(raw) if raw else DEFAULT_STATEMENT_SECONDS
    except ValueError:
        return DEFAULT_STATEMENT_SECONDS


class _Watch:
    """Busy time of the current statement, in the thread's CPU seconds (a runaway statement
    burns CPU; one that waits for a loaded machine's cores does not run away: a 100 M build
    niced on a machine at load 8 tripped a wall-clock watch); reset whenever a new statement
    starts."""

    __slots__ = ("busy", "last", "limit", "tripped")

    def __init__(self, limit: float):
        self.busy, self.last, self.limit, self.tripped = 0.0, None, limit, False

    def reset(self) -> None:
        self.busy, self.last, self.tripped = 0.0, None, False

    def tick(self) -> bool:
        now = time.thread_time()  # ~1 us, every _TICK_OPS VM instructions
        if self.last is not None and now - self.last < _PAUSE:
            self.busy += now - self.last
        self.last = now
        if self.busy > self.limit:
            self.tripped = True
        return self.tripped


def _translate(watch: _Watch, exc: Exception, path: str):
    """What an SQLite 'interrupted' error really was: the watchdog, or a swallowed Ctrl-C;
    and a value over the length limit, said plainly."""
    if "string or blob too big" in str(exc):
        return StoreError(f"{path}: a value over tgr's {MAX_VALUE_BYTES >> 20} MB limit (a document "
                          "that large, or a hostile or damaged store)")
    if isinstance(exc, sqlite3.OperationalError) and str(exc) == "interrupted":
        if watch.tripped:
            return StoreError(f"{path}: store took too long (a statement ran over {watch.limit:g} s); "
                              "the file looks hostile or damaged (see `tgr check`)")
        # Ctrl-C inside the progress handler is swallowed by the driver and ends the
        # statement as 'interrupted': give the user's interrupt back.
        return KeyboardInterrupt()
    return None


class Cursor(sqlite3.Cursor):
    """A cursor whose statements are watched (see Connection)."""

    def _guard(self, call, *args):
        watch = self.connection._watch
        try:
            return call(*args)
        except (sqlite3.OperationalError, sqlite3.DataError) as exc:
            translated = _translate(watch, exc, self.connection._label)
            if translated is None:
                raise
            raise translated from None
        except UnicodeDecodeError:  # the driver decoding SQLite's message, which quotes damaged bytes
            raise sqlite3.DatabaseError("database disk image is malformed (an error that quotes bytes "
                                        "that are not UTF-8)") from None

    def execute(self, *args):
        self.connection._watch.reset()
        return self._guard(super().execute, *args)

    def executemany(self, sql, rows):
        # each row runs the statement once: the bound is a run's, not the whole batch's (an
        # INSERT of a 100 M-character corpus's millions of mentions is one executemany)
        return self._guard(super().executemany, sql, _each_a_run(rows, self.connection._watch))

    def executescript(self, *args):
        self.connection._watch.reset()
        return self._guard(super().executescript, *args)

    def fetchone(self):
        return self._guard(super().fetchone)

    def fetchmany(self, *args):
        return self._guard(super().fetchmany, *args)

    def fetchall(self):
        return self._guard(super().fetchall)

    def __next__(self):
        return self._guard(super().__next__)


def _each_a_run(rows, watch: _Watch):
    """rows, the watch started afresh before each."""
    reset = watch.reset
    for row in rows:
        reset()
        yield row


class Connection(sqlite3.Connection):
    """An SQLite connection whose statements cannot run unbounded."""

    _watch: _Watch
    _label: str

    def cursor(self, factory=Cursor):
        return super().cursor(factory)


def harden(conn: Connection, path: str, *, trusted: bool = False, seconds: float | None = None) -> None:
    """Apply every defence to a fresh connection (before the schema is read).

    trusted: a scratch database tgr made itself (no file), which gets the watchdog only.
    """
    conn._label = path
    conn._watch = _Watch(statement_seconds() if seconds is None else seconds)
    conn.set_progress_handler(conn._watch.tick, _TICK_OPS)
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.execute("PRAGMA recursive_triggers = OFF")
    if hasattr(conn, "setconfig") and hasattr(conn, "setlimit"):
        conn.setconfig(SQLITE_DBCONFIG_DEFENSIVE, True)
        for limit, value in LIMITS.items():
            conn.setlimit(limit, value)
        return
    if trusted:
        return
    native = _Native.get()
    handle = native.handle(conn, path) if native else None
    if handle is None or not native.defend(handle):
        # what defensive mode matters most for here: the schema cannot be rewritten
        conn.set_authorizer(_no_writable_schema)


def _no_writable_schema(action, arg1, arg2, db_name, trigger):
    if action == SQLITE_PRAGMA and (arg1 or "").lower() == "writable_schema":
        return SQLITE_DENY
    return SQLITE_OK


class _Native:
    """The C API of the driver's bundled SQLite, for drivers without setconfig/setlimit."""

    _instance: "_Native | None | bool" = False

    @classmethod
    def get(cls) -> "_Native | None":
        if cls._instance is False:
            try:
                cls._instance = cls()
            except (OSError, AttributeError, ImportError):
                cls._instance = None
        return cls._instance  # type: ignore[return-value]

    def __init__(self):
        lib = ctypes.CDLL(importlib.import_module("sqlean._sqlite3").__file__)
        self.filename = lib.sqlite3_db_filename
        self.filename.restype = ctypes.c_char_p
        self.filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self.limit = lib.sqlite3_limit
        self.limit.restype = ctypes.c_int
        self.limit.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        self.db_config = lib.sqlite3_db_config  # variadic: only the fixed arguments are typed
        self.db_config.restype = ctypes.c_int
        self.db_config.argtypes = [ctypes.c_void_p, ctypes.c_int]

    def handle(self, conn: Connection, path: str) -> int | None:
        """The sqlite3* of conn (the first field after the object header), if it checks out."""
        if sys.implementation.name != "cpython":
            return None
        handle = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value
        if not handle:
            return None
        name = self.filename(handle, b"main")
        try:
            if name and os.path.samefile(os.fsdecode(name), path):
                return handle
        except OSError:
            pass
        return None

    def defend(self, handle: int) -> bool:
        """Defensive mode and limits; False if the driver did not confirm defensive mode."""
        for limit, value in LIMITS.items():
            self.limit(handle, limit, value)
        state = ctypes.c_int(-1)
        self.db_config(handle, SQLITE_DBCONFIG_DEFENSIVE, ctypes.c_int(1), ctypes.byref(state))
        return state.value == 1
