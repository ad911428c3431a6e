"""All against all (issue 48): the first ``--records`` records of mmseqs2-examples' DB.fasta
searched against themselves as a user runs it, ``swdask search DB.fa DB.fa --all-vs-all
--top K -v`` in a new process, beside the plain search of the same file as its own queries
(``--top K+1``: every pair scored twice, the self hits kept), same machine, same run.

The record keeps each command's wall clock (process start to TSV written, taken outside the
process), the phases it printed, the cells each scores (all-vs-all: each unordered pair once;
the search: every ordered pair) and checks that the all-vs-all table equals the search's with
the self hits dropped.

    python3 benchmarks/bench_all_vs_all.py --db DB.fasta.gz --records 2000 --out DIR
"""
from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
from pathlib import Path

import pandas as pd

import bench_w5_long_gpu as w5
from _common import add_commit_argument, command_runs, stamp, write_result


def first_records(source: Path, count: int, target: Path) -> list[int]:
    """The first ``count`` records of a (gzip) FASTA written to ``target``; their lengths."""
    lengths, opener = [], gzip.open if source.suffix == ".gz" else open
    with opener(source, "rt") as handle, target.open("w") as out:
        for line in handle:
            if line[0] == ">":
                if len(lengths) == count:
                    break
                lengths.append(0)
            else:
                lengths[-1] += len(line.strip())
            out.write(line)
    return lengths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="DB.fasta(.gz) of mmseqs2-examples")
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--repeats", type=int, default=1, help="counted runs per command")
    parser.add_argument("--out", default=".")
    add_commit_argument(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "db.fa"
        lengths = first_records(Path(args.db), args.records, db)
        total = sum(lengths)
        ordered = total * total
        unordered = (ordered - sum(n * n for n in lengths)) // 2
        record = {"workload": "all-vs-all", **stamp(args.commit), "backend": args.backend,
                  "records": len(lengths), "residues": total, "top": args.top, "runs": {}}
        tables = {}
        for name, extra, cells in (("all_vs_all", ["--all-vs-all", "--top", str(args.top)],
                                    unordered),
                                   ("search", ["--top", str(args.top + 1)], ordered)):
            out = Path(folder) / f"{name}.tsv"
            command = [sys.executable, "-m", "swdask", "search", db, db, *extra,
                       "--backend", args.backend, "--no-progress", "-v", "-o", out]
            runs = command_runs(command, args.repeats, name, w5.command_phases)
            tables[name] = pd.read_csv(out, sep="\t")
            record["runs"][name] = {
                "runs": runs, "cells": cells,
                "wall_seconds_median": statistics.median(r["wall_seconds"] for r in runs)}
        want = tables["search"]
        want = want[want["query_id"] != want["target_id"]]
        want = want.assign(rank=want.groupby("query_id", sort=False).cumcount() + 1)
        want = want[want["rank"] <= args.top].reset_index(drop=True)
        pd.testing.assert_frame_equal(tables["all_vs_all"], want)
        record["hits"] = len(want)
        record["same_hits_as_search"] = True
        record["search_over_all_vs_all"] = round(
            record["runs"]["search"]["wall_seconds_median"]
            / record["runs"]["all_vs_all"]["wall_seconds_median"], 3)
    path = write_result(args.out, f"all-vs-all-{args.backend}", record)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
