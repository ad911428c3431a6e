"""Peak memory of the ``swdask search`` job against the database's size (issue 12).

mmseqs2-examples' DB.fasta concatenated 10 and 100 times (about 114 MB and 1.1 GB; the
records keep their ids, so the copies are duplicates, which the search does not mind), one
query (the first of QUERY.fasta.gz), top 10, default partitions, the job as it runs by
default (in this process on every core, partitions of up to 64 MiB, two in flight; before
commit 76743c2's successors, a local cluster of the machine's cores). The resident memory of
the job's whole process tree (the command and its worker processes) is sampled every 50 ms;
the JSON holds the peak beside the database's size and the wall clock. It should not grow with the database beyond the partitions in flight.

    python benchmarks/bench_search_memory.py --copies 10 100 --out benchmarks/results/search-cpu
"""
from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from _common import add_commit_argument, stamp, write_result

MMSEQS = Path("/usr/share/doc/mmseqs2/example-data")


def _tree_rss(process: psutil.Process) -> int:
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:  # gone between the listing and the reading
            pass
    return total


def _peak_of(command, cwd) -> tuple[float, int, str]:
    """Run ``command``; its wall clock, the peak RSS of its process tree, and its stderr."""
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    watched = psutil.Process(child.pid)
    peak = [0]

    def sample():
        while child.poll() is None:
            try:
                peak[0] = max(peak[0], _tree_rss(watched))
            except psutil.Error:
                break
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = child.communicate()
    sampler.join()
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{err[-2000:]}")
    return time.perf_counter() - start, peak[0], err


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--out", default="benchmarks/results/search-cpu")
    add_commit_argument(parser)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="swdask-bench-memory-"))
    with gzip.open(MMSEQS / "DB.fasta.gz", "rb") as source:
        one = source.read()
    with gzip.open(MMSEQS / "QUERY.fasta.gz", "rt") as source:
        first = source.read().split(">")[1]
    (work / "query.fasta").write_text(">" + first)
    runs = []
    for copies in args.copies:
        database = work / f"DB-x{copies}.fasta"
        with open(database, "wb") as out:
            for _ in range(copies):
                out.write(one)
        size = database.stat().st_size
        wall, peak, err = _peak_of([sys.executable, "-m", "swdask", "search", "query.fasta",
                                    database.name, "-o", "hits.tsv", "--no-progress",
                                    "--verbose"], work)
        phases = next((ln for ln in err.splitlines() if "phases" in ln), "")
        runs.append({"copies": copies, "database_bytes": size, "wall_seconds": wall,
                     "peak_rss_bytes": peak, "peak_over_database": peak / size,
                     "phases": phases})
        print(f"x{copies}: {size / 1e6:.0f} MB database, peak RSS {peak / 1e6:.0f} MB "
              f"(process tree), {wall:.1f} s")
        database.unlink()
    record = {**stamp(args.commit), "workload": "memory-vs-database-size",
              "query": "first of mmseqs2-examples QUERY.fasta.gz",
              "database": "mmseqs2-examples DB.fasta, concatenated",
              "command": "swdask search query.fasta DB-xN.fasta -o hits.tsv (the default: in "
                         "this process, partitions of 64 MiB at most, two in flight)",
              "runs": runs}
    path = write_result(args.out, "memory", record)
    print(f"wrote {path}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
