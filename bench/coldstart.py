"""Cold `tgr ask`: wall and CPU time of a question asked in a fresh process.

    python bench/coldstart.py [--runs 10] [--script PATH] [--tree DIR --tree DIR2 ...]

Asks an English question of fixtures/demo_carol.db and a Chinese one of a small store built
offline from fixtures/corpus_zh (in a temporary directory), each --runs times, with
`python -m tgr.cli` and with the `tgr` console script (--script; default: the one beside this
Python, if any), and prints the median and least wall and CPU (user + system) seconds. The
floor comes first: Python alone, and Python importing the driver and click.

Commands run from the temporary directory, so they load the tgr this Python imports from
anywhere, or with --tree the checkout DIR (as PYTHONPATH). Several --tree options compare
checkouts run by run, in turn, so that a busy machine slows each of them alike. Children
may write bytecode caches (PYTHONDONTWRITEBYTECODE is dropped; warm-up runs come first):
an installed package has them. Only the standard library and tgr are needed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EN_QUESTION = "Who is Marley?"
ZH_QUESTION = "石猴是谁？"


def run_child(command: list[str], cwd: str | Path, env: dict, nice: int = 0) -> tuple[float, float, float, str]:
    """Wall and CPU seconds (user + system, the child's threads included), peak RSS (MB) and
    output (stdout and stderr) of one run of command at the given niceness; a failure stops.
    The output goes to a file, not a pipe: a chatty child must never block on a full pipe."""
    with tempfile.TemporaryFile(dir=cwd) as log:
        start = time.perf_counter()
        child = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                 preexec_fn=(lambda: os.nice(nice)) if nice else None)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        log.seek(0)
        output = log.read().decode(errors="replace")
    if status != 0:
        sys.exit(f"failed: {' '.join(map(str, command))}\n{output}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, output


def run_once(command: list[str], cwd: str | Path, env: dict) -> tuple[float, float, float]:
    """Wall and CPU seconds and peak RSS (MB) of one run of command (output discarded; a failure stops)."""
    return run_child(command, cwd, env)[:3]


def measure(command: list[str], runs: int, cwd: str, envs: dict[str, dict]) -> dict[str, tuple[list, list]]:
    """Per environment: the wall and CPU seconds of each run, environments taking turns."""
    results = {name: ([], []) for name in envs}
    for _ in range(runs):
        for name, env in envs.items():
            wall, cpu, _ = run_once(command, cwd, env)
            results[name][0].append(wall)
            results[name][1].append(cpu)
    return results


def report(label: str, walls: list[float], cpus: list[float]) -> None:
    print(f"{label:<56} wall median {statistics.median(walls):.3f} s (least {min(walls):.3f}) | "
          f"CPU median {statistics.median(cpus):.3f} s (least {min(cpus):.3f})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--script", help="the tgr console script (default: beside this Python)")
    parser.add_argument("--tree", action="append", default=[], help="a checkout to measure (repeatable)")
    args = parser.parse_args()
    script = args.script or shutil.which("tgr", path=str(Path(sys.executable).parent))
    python = sys.executable
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    envs = {tree: dict(base, PYTHONPATH=str(Path(tree).resolve())) for tree in args.tree} or {"": base}
    with tempfile.TemporaryDirectory() as work:
        en_store = str(Path(work) / "carol.db")
        shutil.copy(ROOT / "fixtures" / "demo_carol.db", en_store)
        zh_store = str(Path(work) / "zh.db")
        subprocess.run([python, "-m", "tgr.cli", "index", zh_store, str(ROOT / "fixtures" / "corpus_zh"),
                        "--offline", "--embed-model", "tgr:hash-384", "-q"], cwd=work, check=True,
                       stdout=subprocess.DEVNULL, env=next(iter(envs.values())))
        for question in ([en_store, EN_QUESTION], [zh_store, ZH_QUESTION]):  # caches: files, bytecode
            measure([python, "-m", "tgr.cli", "ask", *question], 2, work, envs)
        print(f"{args.runs} runs each, {python}")
        rows = [("python -c pass", [python, "-c", "pass"]),
                ("python -c 'import sqlean, click'", [python, "-c", "import sqlean, click"]),
                ("python -m tgr.cli ask (English)", [python, "-m", "tgr.cli", "ask", en_store, EN_QUESTION]),
                ("python -m tgr.cli ask (Chinese)", [python, "-m", "tgr.cli", "ask", zh_store, ZH_QUESTION])]
        if script:
            rows += [("tgr ask (English)", [script, "ask", en_store, EN_QUESTION]),
                     ("tgr ask (Chinese)", [script, "ask", zh_store, ZH_QUESTION])]
        for label, command in rows:
            for tree, (walls, cpus) in measure(command, args.runs, work, envs).items():
                report(f"{label} {tree}".rstrip(), walls, cpus)


if __name__ == "__main__":
    main()
