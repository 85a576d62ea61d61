"""Benchmark the "Stress-test your own ranks file" example (docs/howto/ranks.md; first in the README), whole process (issue 29 target: <= 10 s CPU serial).

The example's 3-row ranks file (N = 20,720; 2 recommenders, 3 users),
``repeats = 100``, schemes binomial / hypergeometric / adaptive, n = 100,
every default estimator, run as the README says: ``simrec stress
my-models.toml --out DIR [--jobs 2]`` in a fresh Python process (figures
included; ``-q``), so the interpreter's start-up, every import, the tables and
the figures are counted. Rows:

* ``simrec stress`` with ``--jobs 1`` and ``--jobs 2`` (process workers);
* the reference line, measured in the same run: the same command with the
  repeat memo off (:mod:`simrec.stress.memo`), i.e. one set of fits per
  repeat as before issue 29;
* ``import simrec.cli``: the start-up floor of any ``simrec`` process
  (interpreter and imports; ``main`` not called).

Wall seconds and CPU seconds (user + system) of the process *and all its
descendants*: the larger of ``RUSAGE_CHILDREN`` (children that were waited
for) and the sum over every descendant seen by polling ``/proc`` twice a
second (the last value per process), since ``/usr/bin/time`` and
``RUSAGE_CHILDREN`` miss workers that are not reaped by their parent (the
forkserver's). The memo's hits and misses are printed for the serial run
(distinct histograms = misses). The load (``os.getloadavg``, as ``uptime``
prints it) is printed before and after each row.

Bytecode: simrec's modules are byte-compiled first (``python -m
compileall``, into the ``__pycache__`` folders git ignores), as a pip install
does and as Python does on the first import, so every row measures a
command whose imports read bytecode. Where ``PYTHONDONTWRITEBYTECODE`` is
set (as on the shared development machine) Python would otherwise compile
simrec's ~130 modules again in every process (about 0.2 s CPU each time);
``--no-compile`` measures that.

Usage::

    python bench/bench_stress_readme.py                 # 100 repeats: jobs 1, jobs 2, reference, start-up
    python bench/bench_stress_readme.py --repeats 20 --skip jobs2
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
RANKS = "user,recommender,rank,n_candidates\nu1,MyModel,12,20720\nu2,MyModel,3,20720\nu1,Baseline,40,20720\n"
SCENARIO = """kind = "stress"
name = "my-models"
seed = 1
repeats = {repeats}

[source]
type = "file"
path = "my_ranks.csv"

[sampling]
schemes = ["binomial", "hypergeometric", "adaptive"]
sizes = [100]
"""
_TICK = os.sysconf("SC_CLK_TCK")


class DescendantCPU:
    """Polls /proc twice a second: utime + stime of ``root`` and every descendant of it (last value per pid)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _poll(self) -> None:
        parent, cpu = {}, {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as fh:
                        fields = fh.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                parent[int(d)] = int(fields[1])
                cpu[int(d)] = (int(fields[11]) + int(fields[12])) / _TICK
        frontier, tree = [self.root], [self.root] if self.root in cpu else []
        while frontier:
            frontier = [p for p, pp in parent.items() if pp in frontier]
            tree += frontier
        for p in tree:
            self.seen[p] = max(self.seen.get(p, 0.0), cpu[p])

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self._poll()

    def __enter__(self) -> DescendantCPU:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def whole_process(args: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of ``python args`` and its descendants, and its stdout's last line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    with DescendantCPU(proc.pid) as kids:
        out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}):\n{err}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    reaped = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = out.strip().splitlines()
    return wall, max(reaped, sum(kids.seen.values())), lines[-1] if lines else ""


def child(argv: list[str], memo: bool) -> None:
    """``simrec`` as its console script runs it, with the repeat memo on or off; prints the memo's counts."""
    from simrec.cli import main
    from simrec.stress.memo import REPEAT_MEMO

    REPEAT_MEMO.enabled = memo
    try:
        main(argv)
    except SystemExit as exc:
        if exc.code:
            raise
    print(json.dumps({"hits": REPEAT_MEMO.hits, "misses": REPEAT_MEMO.misses}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--skip", nargs="*", default=[], choices=["jobs2", "reference", "startup"])
    ap.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    ap.add_argument("--no-memo", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-compile", action="store_true", help="do not byte-compile simrec first (see the docstring)")
    args = ap.parse_args()
    if args.child is not None:
        child(args.child, memo=not args.no_memo)
        return
    if not args.no_compile:
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(ROOT / "simrec")], check=False, env=ENV
        )  # best effort
    print(
        f"bytecode: {'not compiled first' if args.no_compile else 'simrec compiled first'}; "
        f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}"
    )
    print(f"README ranks-file example (3 rows, N = 20,720, 3 schemes, n = 100), {args.repeats} repeats, whole process")
    print(f"load average {load()} (start)")
    head = f"{'run':<34} {'wall s':>7} {'CPU s':>7} {'CPU/rep ms':>10} {'memo hits/misses':>17}  load after"
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "my_ranks.csv").write_text(RANKS)
        toml = folder / "my-models.toml"
        toml.write_text(SCENARIO.format(repeats=args.repeats))
        runs = [("simrec stress --jobs 1", "jobs1", 1, True), ("simrec stress --jobs 2", "jobs2", 2, True)]
        runs.append(("reference: --jobs 1, memo off", "reference", 1, False))
        for i, (label, key, jobs, memo) in enumerate(runs):
            if key in args.skip:
                continue
            cmd = [__file__, *([] if memo else ["--no-memo"]), "--child", "stress", str(toml)]
            cmd += ["--out", str(folder / f"out{i}"), "--jobs", str(jobs), "-q"]
            wall, cpu, last = whole_process(cmd)
            counts = json.loads(last)
            memo_s = f"{counts['hits']}/{counts['misses']}" if memo and jobs == 1 else "-"
            print(
                f"{label:<34} {wall:>7.1f} {cpu:>7.1f} {1000 * cpu / args.repeats:>10.0f} {memo_s:>17}  {load()}",
                flush=True,
            )
        if "startup" not in args.skip:
            wall, cpu, _ = whole_process(["-c", "import simrec.cli"])
            print(f"{'start-up floor: import simrec.cli':<34} {wall:>7.1f} {cpu:>7.1f} {'-':>10} {'-':>17}  {load()}")


if __name__ == "__main__":
    main()
