#!/usr/bin/env python3
"""Profile (PSSM) queries (issue 48): the W1 kernel with each W1 query as its PSI-BLAST
PSSM beside the same query with BLOSUM62, same targets, same run; then the whole `swdask
search --pssm` command beside the FASTA queries' search.

* kernel (``--backend gpu``): ``swdask.lowlevel.search`` (scores and end cells) of one
  query against the database laid out once on the GPU, the plain query's codes and the
  profile's positions with its columns (``PreparedQuery.scan_terms``), alternating,
  ``--reps`` each; the best of each. With ``--backend cpu``: ``align_many(..., "end",
  backend="cpu")`` on the encoded column, the CPU's kernels on every core. TCUPS = query
  letters x database residues / seconds.
* exactness: every query's profile scores and end cells on ``--sample`` random rows against
  the CPU engine's (``align_many(..., backend="cpu")``) on the same rows.
* job: ``swdask search --pssm w*.pssm DB --top 10 --backend B -v`` and ``swdask search
  queries.fasta DB ...`` in new processes (process start to blast6 written), with the
  phases each printed.

The PSSMs: ``psiblast -query Q -db DB -num_iterations 2 -out_ascii_pssm wNN.pssm``, one per
W1 query (in file order, numbered from 00), DB mmseqs2-examples' DB.fasta; made where
psiblast is installed (it is not on the GPU machine) and carried.

    python3 benchmarks/bench_pssm.py --backend gpu --db sp500k.fa --queries cudasw_queries.fasta \\
        --pssms DIR --out OUT
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

import bench_w5_long_gpu as w5
import swdask
from _common import (add_commit_argument, command_runs, gpu_properties, read_fasta,
                     read_sequences, short_name, stamp, timed, write_result)
from swdask.lowlevel import align_many, encode, prepare_query, prepare_targets, search


def _inclusive(columns: dict) -> dict:
    """API columns (end-exclusive ends) as the GPU's kernel cells (inclusive, -1 for none)."""
    return {"score": np.asarray(columns["score"]),
            **{name: np.where(np.asarray(columns[name]) > 0, np.asarray(columns[name]) - 1, -1)
               for name in ("query_end", "target_end")}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="sp500k FASTA (W1's), or any protein FASTA")
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="gpu")
    parser.add_argument("--queries", required=True, help="cudasw_queries.fasta (W1)")
    parser.add_argument("--pssms", required=True, help="folder of w00.pssm, w01.pssm, ...")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--sample", type=int, default=3000)
    parser.add_argument("--job-repeats", type=int, default=1)
    parser.add_argument("--out", default=".")
    add_commit_argument(parser)
    args = parser.parse_args()

    gpu = args.backend == "gpu"
    props = gpu_properties() if gpu else {"name": None}
    if props is None:
        raise SystemExit("--backend gpu needs CuPy and a CUDA GPU")
    scoring = swdask.make_scoring("BLOSUM62", gap_open=11, gap_extend=1)
    names, sequences = read_sequences(args.queries)
    pssms = [Path(args.pssms) / f"w{k:02d}.pssm" for k in range(len(names))]
    chosen = [k for k, path in enumerate(pssms) if path.exists()]
    series = read_fasta(args.db)["sequence"]
    encoded = encode(series, scoring)
    residues = int(encoded.offsets[-1])
    if gpu:
        import cupy

        device = (cupy.asarray(encoded.residues), cupy.asarray(encoded.offsets))
        targets = prepare_targets(device[0], device[1], encoded.valid,
                                  alphabet_size=len(scoring.alphabet))
    record = {"workload": "pssm-W1", **stamp(args.commit, device=props["name"]),
              "backend": args.backend, "gpus": 1 if gpu else 0,
              "database": {"file": Path(args.db).name, "rows": len(series),
                           "residues": residues},
              "scoring": "BLOSUM62 / PSI-BLAST PSSM, a gap of length k scores -(11 + (k-1))",
              "per_query": []}
    rng = np.random.default_rng(48)
    sample = np.sort(rng.choice(len(series), size=min(args.sample, len(series)),
                                replace=False))
    sample_column = encoded.take(sample)
    totals = {"plain": 0.0, "profile": 0.0}
    letters = 0
    mismatches = 0
    for k in chosen:
        profile = swdask.Profile.read_pssm(pssms[k])
        plain = prepare_query(sequences[k], scoring)
        prepared = prepare_query(profile, scoring)
        codes, columns = prepared.scan_terms
        if gpu:
            runs = {"plain": lambda: search(targets, plain.codes, scoring, "end"),
                    "profile": lambda: search(targets, codes, prepared.scoring, "end",
                                              matrix=columns)}
        else:  # end cells kernel-inclusive, as the GPU's (the check below reads them so)
            runs = {name: (lambda query: lambda: _inclusive(align_many(
                        query, encoded, "end", backend="cpu").columns))(query)
                    for name, query in (("plain", plain), ("profile", prepared))}
        for run in runs.values():  # compile, lay out the profile's tables
            run()
        times = {name: [] for name in runs}
        found = None
        for _ in range(args.reps):
            for name, run in runs.items():
                seconds, result = timed(run)
                times[name].append(seconds)
                if name == "profile":
                    found = result
        got = {name: np.asarray(cupy.asnumpy(found[name]) if gpu else found[name],
                                dtype=np.int64)[sample]
               for name in ("score", "query_end", "target_end")}
        want = align_many(prepared, sample_column, "end", backend="cpu").to_host().columns
        bad = int(((got["score"] != np.asarray(want["score"]))
                   | (np.where(got["query_end"] >= 0, got["query_end"] + 1, -1)
                      != np.asarray(want["query_end"]))
                   | (np.where(got["target_end"] >= 0, got["target_end"] + 1, -1)
                      != np.asarray(want["target_end"]))).sum())
        mismatches += bad
        cells = len(sequences[k]) * residues
        best = {name: min(values) for name, values in times.items()}
        letters += len(sequences[k])
        for name in totals:
            totals[name] += best[name]
        entry = {"name": short_name(names[k]), "length": len(sequences[k]),
                 "consensus_equals_query": profile.consensus == sequences[k].upper(),
                 "seconds": best, "all_seconds": times,
                 "tcups": {name: cells / best[name] / 1e12 for name in best},
                 "profile_over_plain": best["plain"] / best["profile"],
                 "checked_rows": int(sample.size), "mismatches": bad}
        record["per_query"].append(entry)
        print(f"{entry['name']:>12s} {entry['length']:5d}  plain {best['plain']:.4f} s "
              f"profile {best['profile']:.4f} s  ratio {entry['profile_over_plain']:.3f}  "
              f"mismatches {bad}", flush=True)
        del found
    cells = letters * residues
    record["total"] = {"seconds": totals,
                       "tcups": {name: cells / s / 1e12 for name, s in totals.items()},
                       "profile_over_plain": totals["plain"] / totals["profile"]}
    record["checked"] = len(chosen) * int(sample.size)
    record["mismatches"] = mismatches
    print(f"total: plain {totals['plain']:.3f} s, profile {totals['profile']:.3f} s, "
          f"ratio {record['total']['profile_over_plain']:.3f}, mismatches {mismatches}",
          flush=True)
    with tempfile.TemporaryDirectory() as folder:
        query_file = Path(folder) / "queries.fasta"
        query_file.write_text("".join(f">w{k:02d}\n{sequences[k]}\n" for k in chosen))
        record["job"] = {}
        for name, given in (("pssm", [arg for k in chosen for arg in ("--pssm", pssms[k])]),
                            ("fasta", [query_file])):
            out = Path(folder) / f"{name}.b6"
            command = [sys.executable, "-m", "swdask", "search", *given, args.db, "--top",
                       "10", "--format", "blast6", "--backend", args.backend,
                       "--no-progress", "-v", "-o", out]
            record["job"][name] = {"runs": command_runs(command, args.job_repeats, name,
                                                        w5.command_phases),
                                   "hits": len(out.read_text().splitlines())}
    path = write_result(args.out, "pssm-W1", record)
    print(f"wrote {path}")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
