"""swdask's E-values beside ssearch36's, on the same hits (issue 11).

The first N queries of mmseqs2-examples' QUERY.fasta.gz against its DB.fasta, top 10,
BLOSUM62 with BLAST's default gap cost: ``swdask search --format blast6 --gap-open 12
--gap-extend 1`` (swdask's gap of length k costs gap_open + (k-1) * gap_extend) and
``ssearch36 -T <cores> -f -11 -g -1 -s BL62 -m 8 -b 10 -d 0`` (FASTA's gap costs f + k * g:
the same scoring). swdask runs three times: ``--statistics blast`` (NCBI BLAST's published
parameters with BLAST's length adjustment), ``--statistics search`` (lambda and K fitted to
each query's own scores) and ``--statistics composition`` (issue 48: blastp's
``-comp_based_stats 1``); ssearch36 fits its own from the search's score distribution. For
the hits both report (same query, same target), the JSON holds the rank correlation of the
two E-values (Spearman: Pearson's on the ranks), the fraction within a factor of 10, the same
for bit scores, and each program's whole wall clock (a new process to the file written).
Where NCBI BLAST+ is installed, also blastp ``-comp_based_stats 0`` against ``--statistics
blast`` and ``-comp_based_stats 1`` against ``--statistics composition``, on the hits both
report with blastp E-values in 1e-30..10 (issue 48's bounds).

    python benchmarks/bench_evalue.py --queries 50 --out benchmarks/results/evalue
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from _common import add_commit_argument, read_fasta, run_process, stamp, write_result

MMSEQS = Path("/usr/share/doc/mmseqs2/example-data")
BLAST6 = ["qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart", "qend",
          "sstart", "send", "evalue", "bitscore"]


def _read_m8(path) -> pd.DataFrame:
    table = pd.read_csv(path, sep="\t", header=None, names=BLAST6, comment="#")
    return table.drop_duplicates(["qseqid", "sseqid"])  # the best HSP of each pair


def _spearman(a, b) -> float:
    ranks_a, ranks_b = pd.Series(a).rank().to_numpy(), pd.Series(b).rank().to_numpy()
    return float(np.corrcoef(ranks_a, ranks_b)[0, 1])


def _agreement(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """How swdask's hits ``a`` agree with ssearch36's ``b`` on the pairs both report."""
    both = a.merge(b, on=["qseqid", "sseqid"], suffixes=("_swdask", "_ssearch"))
    positive = (both["evalue_swdask"] > 0) & (both["evalue_ssearch"] > 0)
    ratio = np.log10(both.loc[positive, "evalue_swdask"] / both.loc[positive, "evalue_ssearch"])
    same_coordinates = ((both["qstart_swdask"] == both["qstart_ssearch"])
                        & (both["qend_swdask"] == both["qend_ssearch"])
                        & (both["sstart_swdask"] == both["sstart_ssearch"])
                        & (both["send_swdask"] == both["send_ssearch"]))
    return {
        "hits_swdask": len(a), "hits_in_both": len(both),
        "evalue_spearman": _spearman(both["evalue_swdask"], both["evalue_ssearch"]),
        "evalue_both_positive": int(positive.sum()),
        "evalue_within_factor_10": float((ratio.abs() <= 1).mean()) if len(ratio) else None,
        "evalue_log10_ratio_median": float(ratio.median()) if len(ratio) else None,
        "bitscore_spearman": _spearman(both["bitscore_swdask"], both["bitscore_ssearch"]),
        "bitscore_median_difference": float((both["bitscore_swdask"]
                                             - both["bitscore_ssearch"]).median()),
        "same_coordinates_fraction": float(same_coordinates.mean()) if len(both) else None,
    }


def _in_range(a: pd.DataFrame, b: pd.DataFrame, low: float = 1e-30, high: float = 10.0) -> dict:
    """How swdask's E-values ``a`` agree with blastp's ``b`` on the pairs both report whose
    blastp E-value is in ``[low, high]`` (issue 48's bounds)."""
    both = a.merge(b, on=["qseqid", "sseqid"], suffixes=("_swdask", "_blastp"))
    kept = both[(both["evalue_blastp"] >= low) & (both["evalue_blastp"] <= high)
                & (both["evalue_swdask"] > 0)]
    ratio = np.log10(kept["evalue_swdask"] / kept["evalue_blastp"])
    return {"hits_in_both": len(both), "in_range": len(kept),
            "evalue_spearman": _spearman(kept["evalue_swdask"], kept["evalue_blastp"]),
            "evalue_abs_log10_ratio_median": float(ratio.abs().median()),
            "evalue_log10_ratio_median": float(ratio.median())}


def blastp_comparison(work: Path, query_file: Path, database: Path, ours: dict) -> dict:
    """blastp (BLAST+, 11/1, top 10) with ``-comp_based_stats 0`` against swdask's
    ``--statistics blast`` and with ``-comp_based_stats 1`` against ``--statistics
    composition`` (``ours``: swdask's m8 files by statistics), each program's wall clock."""
    run_process(["makeblastdb", "-in", str(database), "-dbtype", "prot", "-out",
                    str(work / "db")])
    compared = {}
    for mode, source in (("0", "blast"), ("1", "composition")):
        theirs = work / f"blastp-{mode}.m8"
        seconds, _ = run_process(["blastp", "-query", str(query_file), "-db",
                                  str(work / "db"), "-comp_based_stats", mode,
                                  "-max_target_seqs", "10", "-outfmt", "6", "-out",
                                  str(theirs)])
        compared[f"comp_based_stats_{mode}_vs_{source}"] = {
            "blastp_wall_seconds": seconds, **_in_range(_read_m8(ours[source]),
                                                        _read_m8(theirs))}
    return compared


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--query-file", default=str(MMSEQS / "QUERY.fasta.gz"))
    parser.add_argument("--db", default=str(MMSEQS / "DB.fasta.gz"))
    parser.add_argument("--out", default="benchmarks/results/evalue")
    add_commit_argument(parser)
    args = parser.parse_args()
    ssearch = shutil.which("ssearch36")
    if ssearch is None:
        sys.exit("ssearch36 not found (Debian package fasta3)")
    cores = len(os.sched_getaffinity(0))
    work = Path(tempfile.mkdtemp(prefix="swdask-bench-evalue-"))
    database = work / "DB.fasta"
    opener = gzip.open if args.db.endswith(".gz") else open
    with opener(args.db, "rb") as source, open(database, "wb") as target:
        shutil.copyfileobj(source, target)
    queries = read_fasta(args.query_file).iloc[:args.queries]
    query_file = work / "queries.fasta"
    with open(query_file, "w") as out:
        for name, sequence in zip(queries["id"], queries["sequence"]):
            out.write(f">{name}\n{sequence}\n")
    theirs = work / "ssearch.m8"
    with open(theirs, "w") as out:
        ssearch_seconds, _ = run_process([ssearch, "-T", str(cores), "-f", "-11", "-g", "-1", "-s",
                                  "BL62", "-m", "8", "-b", "10", "-d", "0", str(query_file),
                                  str(database)], out)
    b = _read_m8(theirs)
    compared = {}
    files = {}
    for source in ("blast", "search", "composition"):
        ours = work / f"swdask-{source}.m8"
        seconds, _ = run_process([sys.executable, "-m", "swdask", "search", str(query_file),
                          str(database), "--top", "10", "--format", "blast6", "-o", str(ours),
                          "--gap-open", "12", "--gap-extend", "1", "--statistics", source,
                          "--no-progress"])
        files[source] = ours
        compared[source] = {"swdask_wall_seconds": seconds,
                            **_agreement(_read_m8(ours), b)}
    blastp = (blastp_comparison(work, query_file, database, files)
              if shutil.which("blastp") and shutil.which("makeblastdb") else None)
    record = {
        **stamp(args.commit), "workload": f"evalue-vs-ssearch36-{args.queries}",
        "queries": len(queries), "database": "mmseqs2-examples DB.fasta",
        "scoring": "BLOSUM62, gap of length k costs 11 + k (swdask --gap-open 12 "
                   "--gap-extend 1; ssearch36 -f -11 -g -1)",
        "swdask_command": "swdask search --top 10 --format blast6 --gap-open 12 "
                          "--gap-extend 1",
        "ssearch36_command": f"ssearch36 -T {cores} -f -11 -g -1 -s BL62 -m 8 -b 10 -d 0",
        "statistics": "swdask --statistics blast: NCBI BLAST's gapped parameters (lambda "
                      "0.267, K 0.041) with BLAST's length adjustment; --statistics search: "
                      "lambda and K fitted to each query's scores; ssearch36: its own fit to "
                      "the search's scores",
        "hits_ssearch36": len(b), "ssearch36_wall_seconds": ssearch_seconds,
        "swdask_statistics_blast": compared["blast"],
        "swdask_statistics_search": compared["search"],
        "swdask_statistics_composition": compared["composition"],
        "blastp": blastp, "cores": cores,
    }
    for key, value in record.items():
        print(f"{key}: {value}")
    path = write_result(args.out, "evalue", record)
    print(f"wrote {path}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
