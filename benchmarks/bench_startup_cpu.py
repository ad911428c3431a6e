#!/usr/bin/env python3
"""A new process's first search against its second, on the CPU (issue 45).

W3's set (the 144-, 464-, 1000- and 2504-residue queries of the CUDASW++ query set against
mmseqs2's DB.fasta.gz, BLOSUM62, gaps 11 + (k-1)) searched twice in one new process with
``Series.sw.search(queries, top=10, backend="cpu")`` (scores, positions, statistics), each
timed; the process run twice from the shell:

* ``cold``: numba's cache empty (``NUMBA_CACHE_DIR`` a new, empty folder): the first search
  compiles the kernels it calls, as on a fresh machine or container;
* ``warm``: the same folder, now filled: the first search loads the kernels from it.

Each record: ``workload`` (``startup-W3``), ``backend``, ``device`` (the CPU model),
``cpu_family``, ``cpu_model`` and ``cpu_flags`` (its SIMD flags), ``cores``, ``commit``,
``date``, ``cold``, ``wall_seconds`` (the whole process, from the shell), ``phases``
(``imports``, ``read``, ``first_search``, ``second_search``), ``first_over_second``, and
whether both searches gave the same hits.

    python benchmarks/bench_startup_cpu.py --out benchmarks/results/startup
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import (add_commit_argument, cpu_flags, cpu_model, nearest, read_sequences,
                     stamp, write_result)

DB_PATH = Path("/usr/share/doc/mmseqs2/example-data/DB.fasta.gz")
QUERIES_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "cudasw_queries.fasta"

#: What the new process runs: the imports, the database read, the search twice.
CHILD = r'''
import json, sys, time
start = time.perf_counter()
import swdask
phases = {"imports": time.perf_counter() - start}
mark = time.perf_counter()
database = swdask.read_fasta(sys.argv[1], blocksize=None).compute()
queries = json.loads(sys.argv[2])
phases["read"] = time.perf_counter() - mark
found = []
for name in ("first_search", "second_search"):
    mark = time.perf_counter()
    hits = database["sequence"].sw.search(queries, top=10, backend="cpu", matrix="BLOSUM62",
                                          gap_open=11, gap_extend=1)
    phases[name] = time.perf_counter() - mark
    found.append(hits)
print("startup " + json.dumps({"phases": phases, "same_hits": bool(found[0].equals(found[1])),
                               "hits": len(found[0])}))
'''


def run_child(queries: list[str], cache: Path) -> tuple[float, dict]:
    """One new process (the search twice) with numba's cache in ``cache``: its wall clock
    and what it printed."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, str(DB_PATH), json.dumps(queries)],
                          capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"the search process failed:\n{done.stderr[-3000:]}")
    line = next(line for line in done.stdout.splitlines() if line.startswith("startup "))
    return seconds, json.loads(line[len("startup "):])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="144,464,1000,2504")
    parser.add_argument("--out", default="benchmarks/results/startup")
    add_commit_argument(parser)
    args = parser.parse_args()

    _ids, pool = read_sequences(QUERIES_PATH)
    queries = [pool[nearest(pool, int(length))] for length in args.lengths.split(",")]
    header = {**stamp(args.commit, device=cpu_model()), "workload": "startup-W3",
              "backend": "cpu", **cpu_flags(), "cores": len(os.sched_getaffinity(0)),
              "queries": [len(q) for q in queries], "database": DB_PATH.name}
    runs = []
    with tempfile.TemporaryDirectory(prefix="swdask-numba-") as cache:
        for cold in (True, False):
            seconds, found = run_child(queries, Path(cache))
            phases = found["phases"]
            record = {**header, "cold": cold, "wall_seconds": seconds, "phases": phases,
                      "first_over_second": phases["first_search"] / phases["second_search"],
                      "same_hits": found["same_hits"], "hits": found["hits"]}
            runs.append(record)
            print(f"{'cold' if cold else 'warm'}: whole process {seconds:.2f} s; "
                  + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items())
                  + f"; first/second {record['first_over_second']:.2f}")
    path = write_result(args.out, "startup-cpu", {**header, "runs": runs})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
