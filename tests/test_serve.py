"""`tgr serve`: Datasette on a real store over real HTTP, sqlite-vec loaded, chunks searchable."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import tgr
from conftest import EN_CORPUS, ROOT, SMALL, ZH_CORPUS

SERVER_PATH = os.pathsep.join([str(ROOT)] + [p for p in sys.path if p])


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("serve") / "carol.db"
    with tgr.open(path) as kb:
        kb.index([str(EN_CORPUS)], **SMALL)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(store, port: int, tmpdir: Path) -> subprocess.Popen:
    """`tgr serve` in its own session, its temporary files in tmpdir."""
    return subprocess.Popen([sys.executable, "-m", "tgr.cli", "serve", str(store), "--port", str(port)],
                            env={**os.environ, "PYTHONPATH": SERVER_PATH, "TMPDIR": str(tmpdir)}, cwd=ROOT,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_until_listening(server: subprocess.Popen, port: int, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            return
        except OSError:
            assert server.poll() is None, server.stderr.read().decode()
            assert time.monotonic() < deadline, "Datasette did not start"
            time.sleep(0.3)


def children(pid: int) -> list[int]:
    """The processes pid started (Linux /proc)."""
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def running(pid: int) -> bool:
    """pid is a live process (not gone, not a zombie waiting for init to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_serve_answers_over_http(store, tmp_path):
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    port = free_port()
    server = start_server(store, port, tmp_path)
    base = f"http://127.0.0.1:{port}/carol"
    try:
        wait_until_listening(server, port)
        found = httpx.get(f"{base}/chunks.json", params={"_search": "marley", "_shape": "array"}, timeout=30)
        assert found.status_code == 200
        rows = found.json()
        assert rows and all("marley" in r["text"].lower() for r in rows)
        top = httpx.get(f"{base}/entity_overview.json", params={"_shape": "array", "_size": 10}, timeout=30).json()
        degrees = [row["degree"] for row in top]  # by degree; Scrooge among the hubs (one entity now:
        assert degrees == sorted(degrees, reverse=True) and "Scrooge" in [r["name"] for r in top]  # issue 16)
        vectors = httpx.get(f"{base}.json", params={"sql": "select count(*) as n from vec_chunks", "_shape": "array"},
                            timeout=30).json()
        assert vectors[0]["n"] == len(httpx.get(f"{base}/chunks.json", params={"_shape": "array", "_size": "max"},
                                                timeout=30).json()) > 0
        tables = {t["name"]: t for t in httpx.get(f"{base}.json", timeout=30).json()["tables"]}
        assert tables["vec_chunks_rowids"]["hidden"] and not tables["entities"]["hidden"]
        refused = httpx.get(f"{base}.json", params={"sql": "delete from entities"}, timeout=30)
        assert refused.status_code == 400
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # tgr serve and Datasette both get it
        server.wait(timeout=30)
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before
    assert not list(tmp_path.iterdir())  # the metadata folder went with the server


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds Datasette's pid in Linux /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_to_serve_stops_datasette_and_removes_the_temporary_folder(store, tmp_path, signum):
    """`tgr serve STORE & kill $!`: the signal reaches tgr alone, which must end Datasette (no
    orphan left listening) and remove its tgr-serve-* folder."""
    port = free_port()
    server = start_server(store, port, tmp_path)
    try:
        wait_until_listening(server, port)
        [datasette] = children(server.pid)
        assert running(datasette) and [p.name[:10] for p in tmp_path.iterdir()] == ["tgr-serve-"]
        server.send_signal(signum)
        assert server.wait(timeout=30) == 128 + signum
        assert not running(datasette)
        assert not list(tmp_path.iterdir())
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)  # whatever a failed test left in the session


def test_serve_without_datasette_names_the_extra(store):
    blocked = ("import sys; sys.modules['datasette'] = None; sys.argv = ['tgr', 'serve', sys.argv[1]]; "
               "from tgr.cli import run; run()")
    done = subprocess.run([sys.executable, "-c", blocked, str(store)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SERVER_PATH}, cwd=ROOT, timeout=60)
    assert done.returncode != 0 and "pip install 'tgr[serve]'" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_serve_search_finds_chinese_words_and_names_the_fts_table(tmp_path):
    """The external-content chunks_fts over chunks.terms: a Chinese word typed as is (no
    spaces, no bigrams) finds exactly the chunks that contain it."""
    path = tmp_path / "xiyou.db"
    with tgr.open(path) as kb:
        kb.index([str(ZH_CORPUS)], **SMALL)
        fts = kb.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()[0]
        counts = {w: kb.conn.execute("SELECT count(*) FROM chunks WHERE instr(text, ?) > 0", (w,)).fetchone()[0]
                  for w in ("花果山", "猴王")}
    assert "content='chunks'" in fts and "contentless_delete" not in fts
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for word, count in counts.items():
        done = subprocess.run([sys.executable, "-m", "tgr.cli", "serve", str(path), "--get",
                               f"/xiyou/chunks.json?_search={word}&_shape=array&_size=max"],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SERVER_PATH},
                              cwd=ROOT, timeout=120)
        assert done.returncode == 0, done.stderr
        rows = json.loads(done.stdout)
        assert count > 0 and len(rows) == count and all(word in r["text"] for r in rows)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
