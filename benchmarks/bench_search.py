"""The whole ``swdask search`` job, timed as a user sees it: a new process from the shell to
the hits file written, with the phases the job reports (``--verbose``), beside the peer's
whole program on the same data in the same run.

CPU sets (issue 10): the first N queries of mmseqs2-examples' QUERY.fasta.gz against its
DB.fasta (decompressed once), top 10, BLOSUM62, gaps 11 + (k-1); the peer is
``ssearch36 -T <cores> -f -11 -g -1 -s BL62 -m 8 -b 10 -d 0`` (Debian package fasta3), which
also computes alignments and E-values. Writes ``search-<device>-<date>.json`` with a list
``runs``: ``workload``, ``backend``, ``device``, ``gpus``, ``date``, ``commit``, ``queries``,
``wall_seconds`` (each repeat, and the best), ``phases`` (seconds by phase, of the best
run), ``effective_tcups`` (cells / best wall / 1e12; cells = sum of query lengths x database
residues), ``ssearch36_wall_seconds``, and in the same run the engine alone
(``engine_seconds``, ``engine_gcups``: ``swdask.lowlevel`` search of the encoded database in
this process, no cluster, no reading or writing; best of the repeats).

    python benchmarks/bench_search.py --sets 10 100 --out benchmarks/results
"""
from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import add_commit_argument, read_fasta, stamp, write_result


def _engine_seconds(queries, database, repeats: int) -> float:
    """The search engine alone: every query against the encoded database, top 10, all
    positions, in this process (best of ``repeats``)."""
    import swdask
    from swdask.lowlevel import encode, search_many, prepare_query

    scoring = swdask.make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    encoded = encode(database["sequence"], scoring)
    prepared = [prepare_query(q, scoring) for q in queries["sequence"]]
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        search_many(prepared, encoded, 10, "full", backend="cpu")
        best = min(best, time.perf_counter() - start)
    return best

MMSEQS = Path("/usr/share/doc/mmseqs2/example-data")


def _write_fasta(path: Path, frame) -> None:
    with open(path, "w") as out:
        for name, sequence in zip(frame["id"], frame["sequence"]):
            out.write(f">{name}\n{sequence}\n")


def _run(command: list[str], stdout=None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, stdout=stdout or subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return seconds, done.stderr


def _phases(stderr: str) -> dict[str, float]:
    line = next((ln for ln in stderr.splitlines() if ln.startswith("swdask: phases:")), "")
    return {name: float(value) for name, value in
            re.findall(r"(\w+) ([0-9.]+) s", line.partition(":")[2].partition(":")[2])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, nargs="+", default=[10, 100],
                        help="numbers of queries (the first N of the query file)")
    parser.add_argument("--queries", default=str(MMSEQS / "QUERY.fasta.gz"))
    parser.add_argument("--db", default=str(MMSEQS / "DB.fasta.gz"))
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default="benchmarks/results")
    add_commit_argument(parser)
    args = parser.parse_args()
    ssearch = shutil.which("ssearch36")
    cores = len(os.sched_getaffinity(0))
    queries = read_fasta(args.queries)
    work = Path(tempfile.mkdtemp(prefix="swdask-bench-search-"))
    database = work / "DB.fasta"
    opener = gzip.open if args.db.endswith(".gz") else open
    with opener(args.db, "rb") as source, open(database, "wb") as target:
        shutil.copyfileobj(source, target)
    db_frame = read_fasta(database)
    residues = int(db_frame["sequence"].str.len().sum())
    runs = []
    header = stamp(args.commit)
    for count in args.sets:
        subset = queries.iloc[:count]
        query_file = work / f"queries-{count}.fasta"
        _write_fasta(query_file, subset)
        cells = int(subset["sequence"].str.len().sum()) * residues
        walls, phases = [], {}
        for _ in range(args.repeats):
            seconds, stderr = _run([sys.executable, "-m", "swdask", "search", str(query_file),
                                    str(database), "--top", "10", "-o", str(work / "hits.tsv"),
                                    "--backend", args.backend, "--no-progress", "--verbose"])
            if not walls or seconds < min(walls):
                phases = _phases(stderr)
            walls.append(seconds)
        peer = []
        if ssearch:
            for _ in range(args.repeats):
                with open(work / "ssearch.m8", "w") as out:
                    peer.append(_run([ssearch, "-T", str(cores), "-f", "-11", "-g", "-1", "-s",
                                      "BL62", "-m", "8", "-b", "10", "-d", "0",
                                      str(query_file), str(database)], stdout=out)[0])
        engine = _engine_seconds(subset, db_frame, args.repeats)
        workload = f"search-{args.backend}-{count}"
        record = {"workload": workload, **header, "backend": args.backend, "gpus": 0,
                  "cores": cores,
                  "queries": count, "database_residues": residues, "cells": cells,
                  "wall_seconds": min(walls), "wall_seconds_all": walls, "phases": phases,
                  "effective_tcups": cells / min(walls) / 1e12,
                  "engine_seconds": engine, "engine_gcups": cells / engine / 1e9,
                  "ssearch36_wall_seconds": min(peer) if peer else None,
                  "ssearch36_wall_seconds_all": peer,
                  "ssearch36_command": "ssearch36 -T {cores} -f -11 -g -1 -s BL62 -m 8 -b 10 -d 0"}
        print(f"{workload}: swdask {min(walls):.2f} s (phases {phases}; engine alone "
              f"{engine:.2f} s, {cells / engine / 1e9:.1f} GCUPS), "
              f"ssearch36 {min(peer) if peer else float('nan'):.2f} s")
        runs.append(record)
    path = write_result(args.out, "search", {**header, "runs": runs})
    print(f"wrote {path}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
